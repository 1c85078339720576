"""Smoke tests of the end-to-end training job on a tiny configuration (default.qubit)."""

import json

import numpy as np
import pytest

from pennylane_qshiftdp.engine import TrainConfig, train

TINY = dict(device="default.qubit", qubits=2, layers=1, epochs=2, expected_batch_size=32,
            shots=100, seed=3)


def test_train_writes_outputs_and_respects_budget(tmp_path):
    cfg = TrainConfig(**TINY, output_dir=str(tmp_path / "run"))
    r = train(cfg, progress=False)
    assert 0 < r.epsilon <= cfg.epsilon
    for name in ("ledger.json", "metrics.csv", "metrics.json", "accuracy_epsilon.png",
                 "noise.png", "privacy_statement.txt"):
        assert (tmp_path / "run" / name).exists(), name
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    assert ledger["format_version"] == 1
    for rec in r.step_records:
        assert rec["total_variance_min"] >= rec["target_variance"] * (1 - 1e-12)


def test_resume_reproduces_uninterrupted_run(tmp_path):
    full = train(TrainConfig(**TINY, output_dir=str(tmp_path / "a")), progress=False)
    cfg = TrainConfig(**TINY, output_dir=str(tmp_path / "b"))
    train(cfg, progress=False, stop_after_epochs=1)
    resumed = train(cfg, progress=False, resume=True)
    assert resumed.steps == full.steps
    assert resumed.epsilon == pytest.approx(full.epsilon, abs=1e-12)
    np.testing.assert_array_equal(resumed.weights, full.weights)


def test_adaptive_needs_shots():
    with pytest.raises(ValueError, match="needs finite shots"):
        train(TrainConfig(**{**TINY, "shots": None}, credit="adaptive", beta=1e-3),
              progress=False)
