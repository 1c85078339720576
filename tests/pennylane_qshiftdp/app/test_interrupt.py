"""Ctrl-C during ``qshiftdp train`` (issue 35): the steps taken are written, --resume continues.

A real SIGINT is delivered to a fresh interpreter running the command line: the test seam
wraps the optimizer's ``step`` to send it to its own process after a given step (in the middle
of an epoch), so no timing is involved. The interrupted run must write ledger.json,
privacy_statement.txt and a checkpoint whose steps and ε are exactly what was spent (checked
against Opacus's accountant), end with the one-line summary and exit 130; ``--resume`` must take
exactly the remaining steps; and a seeded run must then end with the weights of an
uninterrupted one.
"""

import json
import subprocess
import sys

import pytest
import torch

from pennylane_qshiftdp.accountants.calibration import compute_epsilon

ARGS = ["train", "--device", "default.qubit", "--qubits", "2", "--layers", "1", "--epochs", "3",
        "--batch-size", "32", "--shots", "50", "--seeded-noise", "--no-progress"]
STEPS_PER_EPOCH = 9  # q = 1 / ceil(270 / 32)
STOP_AFTER = 13  # 4 steps into the second epoch

SCRIPT = """
import contextlib, io, json, os, shutil, signal, sys
from pennylane_qshiftdp.app.cli import main
from pennylane_qshiftdp.optimizers.optimizer import QShiftDPOptimizer

args, stop_after, run, fresh = json.loads(sys.argv[1])
real_step = QShiftDPOptimizer.step
taken = []


def step(self, *a, **k):
    out = real_step(self, *a, **k)
    taken.append(1)
    if len(taken) == stop_after:
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C sends
    return out


QShiftDPOptimizer.step = step
report = {}
out = io.StringIO()
with contextlib.redirect_stdout(out):
    report["interrupted_status"] = main([*args, "--output-dir", run])
report["interrupted_stdout"] = out.getvalue()
report["interrupted_files"] = sorted(os.listdir(run))
for name in ("ledger.json", "privacy_statement.txt", "metrics.json"):
    shutil.copy(os.path.join(run, name), os.path.join(run, "interrupted_" + name))
shutil.copy(os.path.join(run, "checkpoint.pt"), os.path.join(run, "interrupted_checkpoint.pt"))
QShiftDPOptimizer.step = real_step
out = io.StringIO()
with contextlib.redirect_stdout(out):
    report["resumed_status"] = main([*args, "--output-dir", run, "--resume"])
report["resumed_stdout"] = out.getvalue()
with contextlib.redirect_stdout(io.StringIO()):
    report["fresh_status"] = main([*args, "--output-dir", fresh])
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    base = tmp_path_factory.mktemp("interrupt")
    run, fresh = base / "run", base / "fresh"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps([ARGS, STOP_AFTER, str(run), str(fresh)])],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), run, fresh, proc.stderr


def test_ctrl_c_writes_the_ledger_and_statement_of_the_steps_taken(interrupted):
    report, run, _, stderr = interrupted
    assert report["interrupted_status"] == 130
    assert "interrupted: finishing the current step" in stderr
    assert {"ledger.json", "privacy_statement.txt", "checkpoint.pt", "metrics.json"} <= set(
        report["interrupted_files"])
    ledger = json.loads((run / "interrupted_ledger.json").read_text())
    assert ledger["steps"] == STOP_AFTER  # the step in progress finished, no more
    [(sigma, q, steps)] = ledger["proven_history"]
    assert steps == STOP_AFTER and q == pytest.approx(1 / 9)
    metrics = json.loads((run / "interrupted_metrics.json").read_text())
    spent = compute_epsilon(noise_multiplier=sigma, sample_rate=q, steps=STOP_AFTER,
                            delta=ledger["target_delta"])
    assert metrics["epsilon"] == pytest.approx(spent, rel=1e-9) and metrics["steps"] == 13
    assert len(metrics["per_step"]) == STOP_AFTER
    statement = (run / "interrupted_privacy_statement.txt").read_text()
    assert f"Interrupted (Ctrl-C) after {STOP_AFTER} of 27 planned steps" in statement
    assert "--resume" in statement
    ckpt = torch.load(run / "interrupted_checkpoint.pt", weights_only=True)
    assert ckpt["epoch"] == 1 and ckpt["step_in_epoch"] == STOP_AFTER - STEPS_PER_EPOCH
    assert ckpt["ledger"]["steps"] == STOP_AFTER
    assert set(ckpt["rngs"]) == {"sampler", "noise", "device"}  # seeded: an exact resume


def test_the_interrupted_run_ends_with_its_summary_line(interrupted):
    report, run, _, _ = interrupted
    lines = report["interrupted_stdout"].strip().splitlines()
    ledger = json.loads((run / "interrupted_ledger.json").read_text())
    metrics = json.loads((run / "interrupted_metrics.json").read_text())
    from pennylane_qshiftdp.app.summary import format_epsilon

    assert lines[-1] == (
        f"privacy: (ε = {format_epsilon(metrics['epsilon'])}, δ = 1e-05) proven · "
        f"add/remove-one adjacency · dp-accounting PLD accountant · "
        f"{STOP_AFTER} of 27 planned steps "
        f"(interrupted: --resume continues the run) · full statement: "
        f"{run / 'privacy_statement.txt'}")
    assert ledger["steps"] == STOP_AFTER


def test_resume_takes_exactly_the_remaining_steps_and_repeats_the_uninterrupted_run(
        interrupted):
    report, run, fresh, _ = interrupted
    assert report["resumed_status"] == 0 and report["fresh_status"] == 0
    resumed = json.loads((run / "ledger.json").read_text())
    uninterrupted = json.loads((fresh / "ledger.json").read_text())
    assert resumed["steps"] == uninterrupted["steps"] == 27
    assert resumed["proven_history"] == uninterrupted["proven_history"]
    a = torch.load(run / "checkpoint.pt", weights_only=True)
    b = torch.load(fresh / "checkpoint.pt", weights_only=True)
    assert a["step_in_epoch"] == 0 and a["epoch"] == 3
    for key in b["model"]:  # seeded: the same sampling, noise and shots as without Ctrl-C
        assert torch.equal(a["model"][key], b["model"][key]), key
    ma = json.loads((run / "metrics.json").read_text())
    mb = json.loads((fresh / "metrics.json").read_text())
    assert ma["epsilon"] == mb["epsilon"] and ma["test_accuracy"] == mb["test_accuracy"]
    assert report["resumed_stdout"].strip().splitlines()[-1].startswith(
        "privacy: (ε = ")
    assert "27 steps · full statement" in report["resumed_stdout"].strip().splitlines()[-1]
