"""Data-parallel training on torch.distributed (gloo): 2 local processes via torchrun."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "distributed_training.py"


def _run(args, cwd):
    proc = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_two_processes_match_the_single_process_ledger_and_converge(tmp_path):
    # --standalone: a local rendezvous on a free port (no fixed port to collide with)
    _run(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
          str(SCRIPT), "--out", str(tmp_path)], tmp_path)
    _run([str(SCRIPT), "--single-process", "--out", str(tmp_path)], tmp_path)
    r0, r1, single = (json.loads((tmp_path / f).read_text())
                      for f in ("rank0.json", "rank1.json", "single.json"))
    # the same (σ, q, steps): the same ε as one process
    assert r0["history"] == single["history"] and r0["steps"] == single["steps"] == 24
    assert r0["epsilon"] == pytest.approx(single["epsilon"], rel=1e-15)
    assert r0["epsilon"] <= 8.0
    # the noisy sum of the whole group is divided by the loader's batch size (public, global)
    assert r0["expected_batch_size"] == r1["expected_batch_size"] == single[
        "expected_batch_size"] == 16
    # every process took the same steps with the same noise: identical weights
    assert r0["weights"] == r1["weights"]
    # each example joined each step with probability q: about q·N·T examples in all
    assert abs(r0["examples_seen"] - 0.25 * 64 * 24) < 5 * (0.25 * 0.75 * 64 * 24) ** 0.5
    # training converges from a start that is mostly wrong (accuracy 0.17)
    assert r0["accuracy"] >= 0.9 and single["accuracy"] >= 0.9
