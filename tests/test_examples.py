"""The scripts in examples/ run as scripts (``--tiny``, in a subprocess) and answer ``--help``.

Each tiny run imports torch, PennyLane and Opacus afresh (most of its time); the two slower ones
(default.mixed, and several audits) run with ``pytest -m slow``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# Examples with their own launcher (torchrun) and test (tests/pennylane_qshiftdp/...).
NOT_TINY = {"distributed_training.py"}

#: example -> text its --tiny output must contain.
TINY = {
    "hybrid_opacus.py": ["test accuracy", "certified clips that bound", "Privacy statement"],
    "csv_dataset.py": ["NOT protected", "Preprocessing (NOT protected)", "test accuracy"],
    "noisy_device_credit.py": ["proven single-shot variance floor", "credit='depolarizing'",
                               "Credited Q-ShiftDP guarantee (an APPROXIMATION"],
    "private_selection.py": ["2 runs at ε = ", "chosen: lr = ", "Private selection: ("],
    "audit_one_step.py": ["| none |", "| adaptive |", "custom two-qubit model",
                          "not refuted"],
}
SLOW = {"noisy_device_credit.py", "audit_one_step.py"}


def _run(script: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_every_example_is_covered():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts - NOT_TINY == set(TINY)


@pytest.mark.parametrize("script", sorted(TINY))
def test_example_has_main_and_tiny(script):
    tree = ast.parse((EXAMPLES / script).read_text(encoding="utf-8"))
    mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert mains and [a.arg for a in mains[0].args.args] == ["argv"]
    assert mains[0].args.defaults, "main(argv=None)"
    assert "--tiny" in (EXAMPLES / script).read_text(encoding="utf-8")


@pytest.mark.parametrize("script", sorted(TINY))
def test_example_answers_help(script):
    """``--help`` answers (the heavy imports come after argument parsing)."""
    out = _run(script, "--help", timeout=600)
    assert out.returncode == 0, out.stderr
    assert "--tiny" in out.stdout


@pytest.mark.parametrize("script", [
    pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in sorted(TINY)])
def test_example_runs_tiny(script):
    out = _run(script, "--tiny", timeout=600)
    assert out.returncode == 0, f"stdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}"
    for needle in TINY[script]:
        assert needle in out.stdout, (needle, out.stdout[-3000:])
    assert "Traceback" not in out.stderr
