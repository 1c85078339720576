r"""How soon the hardware user's commands say something, and how long they take (issue 45).

Each command runs in its own interpreter; the script records the wall time of every line it
prints on stderr (progress: tqdm bars are split on carriage returns, only their first and last
frames kept) and the total wall time:

* ``dry_run``: ``qshiftdp train --dataset iris --device qiskit.aer --shot-sampling device
  --shots 100 --epochs 1 --dry-run`` (needs pennylane-qiskit): the count line, then the probe
  of a 4-row synthetic batch;
* ``audit``: ``qshiftdp audit`` at its defaults (two configurations of 2000 trials);
* ``certify``: ``qshiftdp certify --noise-model FakeManilaV2 --epsilon 1``.

Usage::

    python benchmarks/bench_cli_feedback.py [--only dry_run audit certify] [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import write_result  # noqa: E402

COMMANDS = {
    "dry_run": ["train", "--dataset", "iris", "--device", "qiskit.aer", "--shot-sampling",
                "device", "--shots", "100", "--epochs", "1", "--dry-run"],
    "audit": ["audit"],
    "certify": ["certify", "--noise-model", "FakeManilaV2", "--epsilon", "1"],
}


def _timed(argv: list[str], cwd: str) -> dict:
    """Run ``qshiftdp argv``; the seconds of each stderr line and of the exit."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pennylane_qshiftdp.app.cli", *argv],
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    assert proc.stderr is not None
    buffer = ""
    while True:
        ch = proc.stderr.read(1)
        if not ch:
            break
        if ch in "\r\n":
            if buffer.strip():
                lines.append((round(time.perf_counter() - start, 2), buffer.strip()))
            buffer = ""
        else:
            buffer += ch
    out = proc.stdout.read() if proc.stdout is not None else ""
    code = proc.wait()
    total = time.perf_counter() - start
    def bar(i: int) -> bool:
        return 0 <= i < len(lines) and "trials:" in lines[i][1]

    # a bar's frames: only the first and the last of each run of them
    kept = [ln for i, ln in enumerate(lines) if not (bar(i) and bar(i - 1) and bar(i + 1))]
    return {"argv": argv, "exit": code, "seconds": round(total, 2),
            "first_stderr_seconds": lines[0][0] if lines else None,
            "stderr_lines": kept, "stdout_chars": len(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(COMMANDS), default=sorted(COMMANDS))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.only:
            results[name] = _timed(COMMANDS[name], tmp)
            r = results[name]
            print(f"{name}: exit {r['exit']}, first stderr line after "
                  f"{r['first_stderr_seconds']} s, {r['seconds']} s in all")
    print(write_result("cli_feedback", {"results": results}, args.out))


if __name__ == "__main__":
    main()
