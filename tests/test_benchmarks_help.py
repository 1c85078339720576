"""Every benchmark script answers ``--help`` without importing the heavy libraries.

Each script is run as a user runs it (``python benchmarks/X.py --help``) with ``-X importtime``,
which logs every imported module on stderr; none of torch, PennyLane, Opacus, SciPy, matplotlib,
scikit-learn or the two packages (which import them) may appear. No timing is asserted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_"))
HEAVY = ("torch", "pennylane", "opacus", "scipy", "matplotlib", "sklearn", "pennylane_qshiftdp",
         "qprldp_core", "pennylane_lightning")


def test_every_script_is_covered():
    assert {"bench_utility.py", "bench_qprldp.py", "run_all.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_without_heavy_imports(script):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", str(BENCH / script), "--help"],
        capture_output=True, text=True, timeout=600, cwd=BENCH.parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage: ")
    assert "--out" in proc.stdout
    # importtime lines: "import time: <self us> | <cumulative us> | <indent><module>"
    imported = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and re.search(r"\|\s*\S", line)
    }
    assert imported, "no -X importtime output"
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))
