"""Plans whose cost is absurd are refused before training, with the numbers (issue 35)."""

import math

import pytest

from pennylane_qshiftdp.app.cli import main
from pennylane_qshiftdp.app.plan import MAX_HOURS, MAX_UPDATE_NOISE, Plan, check_plan


def test_noise_threshold_is_on_the_update_noise():
    # η σ C / qN at the threshold π passes; just above it is refused, naming σ's limit
    sigma = MAX_UPDATE_NOISE * 54 / (0.2 * 1.3)
    check_plan(Plan(steps=50, noise_multiplier=sigma, expected_batch_size=54, clip_norm=1.3,
                    lr=0.2))
    with pytest.raises(ValueError, match=rf"σ must be at most {sigma:.4g} here"):
        check_plan(Plan(steps=50, noise_multiplier=sigma * 1.01, expected_batch_size=54,
                        clip_norm=1.3, lr=0.2))


def test_time_threshold_and_both_reasons_with_their_numbers():
    fine = Plan(steps=1000, noise_multiplier=2.0, expected_batch_size=54, clip_norm=1.0,
                lr=0.2, seconds_per_step=MAX_HOURS * 3.6)
    assert fine.hours == pytest.approx(MAX_HOURS) and fine.problems() == []
    bad = Plan(steps=500_000_000, noise_multiplier=18240.0, expected_batch_size=54,
               clip_norm=1.604, lr=0.2, seconds_per_step=0.0736)
    reasons = bad.problems()
    assert len(reasons) == 2
    assert reasons[0].startswith("σ = 18240 adds noise of standard deviation 108 to every weight")
    assert "about 10,222 hours (426 days) (500000000 steps x 0.0736 s per step" in reasons[1]
    assert math.isclose(bad.update_noise, 0.2 * 18240 * 1.604 / 54)


def test_the_non_private_baseline_has_no_noise_check():
    assert Plan(steps=10, noise_multiplier=None, expected_batch_size=32).problems() == []


def test_absurd_epochs_are_refused_before_training_and_the_flag_overrides(tmp_path, capsys):
    args = ["train", "--device", "default.qubit", "--qubits", "2", "--layers", "1",
            "--batch-size", "32", "--shots", "50", "--seeded-noise", "--no-progress"]
    assert main([*args, "--epochs", "100000000", "--output-dir", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qshiftdp train: error: the training plan is refused before the "
                          "first step: σ = ")
    assert "900000000 steps x " in err and "above 24 hours" in err
    assert "pass `--skip-plan-check` to train anyway" in err
    assert not (tmp_path / "a").exists()  # nothing written, no step taken


def test_skip_plan_check_trains_the_same_plan(tmp_path):
    from pennylane_qshiftdp.app.job import TrainConfig, train

    cfg = TrainConfig(device="default.qubit", qubits=2, layers=1, epochs=100_000_000,
                      expected_batch_size=32, shots=50, secure_mode=False)
    with pytest.raises(ValueError, match="the training plan is refused"):
        train(cfg, progress=False)
    r = train(cfg, progress=False, skip_plan_check=True, stop_after_epochs=1)
    assert r.steps == 9 and r.planned_steps == 900_000_000
