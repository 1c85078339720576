"""Smoke tests of the end-to-end training job on a tiny configuration (default.qubit)."""

import json
import re
import shutil

import numpy as np
import pytest

from pennylane_qshiftdp.training import TrainConfig, train

TINY = dict(device="default.qubit", qubits=2, layers=1, epochs=2, expected_batch_size=32,
            shots=100, seed=3, secure_mode=False)


def test_train_writes_outputs_and_respects_budget(tmp_path):
    cfg = TrainConfig(**TINY, output_dir=str(tmp_path / "run"))
    r = train(cfg, progress=False)
    assert 0 < r.epsilon <= cfg.epsilon
    for name in ("ledger.json", "metrics.csv", "metrics.json", "accuracy_epsilon.png",
                 "noise.png", "privacy_statement.txt"):
        assert (tmp_path / "run" / name).exists(), name
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    assert ledger["format_version"] == 2
    for rec in r.step_records:
        assert rec["artificial_variance_mean"] == pytest.approx(rec["target_variance"])
        assert rec["certified_bound_violations"] == 0


def test_test_loss_curve_and_noise_plot_only_when_noise_varies(tmp_path):
    import torch

    from pennylane_qshiftdp.data import load_dataset
    from pennylane_qshiftdp.losses import LinearLoss
    from pennylane_qshiftdp.models import QuantumClassifier

    cfg = TrainConfig(**TINY, max_grad_norm="certified", output_dir=str(tmp_path / "c"))
    r = train(cfg, progress=False)
    # the certified clip adds the same σ²Δ² at every step: no noise plot
    assert not (tmp_path / "c" / "noise.png").exists()
    assert (tmp_path / "c" / "accuracy_epsilon.png").exists()
    # the last epoch's test loss is the mean linear loss of the final weights on the test split
    data = load_dataset("digits", n_features=2, seed=3, test_size=cfg.test_size)
    model = QuantumClassifier(2, 1, device="default.qubit", shots=None)
    with torch.no_grad():
        model.qlayer.weights.copy_(torch.as_tensor(r.weights))
        out = model(torch.as_tensor(data.X_test))
    expected = float(LinearLoss()(out, torch.as_tensor(data.y_test)).mean())
    assert r.metrics[-1]["test_loss"] == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert all(m["test_loss"] is not None for m in r.metrics)


def test_resume_reproduces_uninterrupted_run(tmp_path):
    full = train(TrainConfig(**TINY, output_dir=str(tmp_path / "a")), progress=False)
    cfg = TrainConfig(**TINY, output_dir=str(tmp_path / "b"))
    train(cfg, progress=False, stop_after_epochs=1)
    # the interrupted run's directory moved elsewhere still resumes (output_dir is not a
    # setting that must match), and exactly
    moved = tmp_path / "moved"
    shutil.move(str(tmp_path / "b"), str(moved))
    resumed = train(TrainConfig(**TINY, output_dir=str(moved)), progress=False, resume=True)
    assert resumed.steps == full.steps
    assert resumed.epsilon == pytest.approx(full.epsilon, abs=1e-12)
    np.testing.assert_array_equal(resumed.weights, full.weights)


def test_adaptive_needs_shots():
    with pytest.raises(ValueError, match="needs finite shots"):
        train(TrainConfig(**{**TINY, "shots": None}, credit="adaptive", beta=1e-3),
              progress=False)


# ---------------------------------------------------------------------------------------------
# make_private on hybrid TorchLayer models
# ---------------------------------------------------------------------------------------------

import math  # noqa: E402

import pennylane as qml  # noqa: E402
import torch  # noqa: E402
from opacus.accountants import RDPAccountant  # noqa: E402

import pennylane_qshiftdp as qs  # noqa: E402
from pennylane_qshiftdp.engine import make_private  # noqa: E402


def _step(model, opt, x, y):
    opt.zero_grad()
    if len(x):
        (-model(x).reshape(-1) * y).mean().backward()
    opt.step()


def _torch_layer(recorder=None, data_dependent=False):
    dev = qml.device("default.qubit", wires=2, seed=5)

    @qml.qnode(dev, interface="torch", diff_method=qs.param_shift,
               gradient_kwargs={"recorder": recorder} if recorder else {})
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        if data_dependent:
            qml.RX(weights[0, 0, 0] * inputs[..., 0], wires=0)
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    circuit = qml.set_shots(circuit, shots=100)
    return qml.qnn.TorchLayer(circuit, {"weights": (1, 2, 3)})


class _Scale(torch.nn.Module):
    """Fixed classical pre-processing (no parameters)."""

    def forward(self, x):
        return math.pi * torch.sigmoid(x)


def _loader(n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    y = torch.where(x[:, 0] > 0, 1.0, -1.0).double()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=8)


def test_fixed_pre_processing_adaptive_credit_stops_at_budget():
    rec = qs.ShotRecorder()
    model = torch.nn.Sequential(_Scale(), _torch_layer(rec), torch.nn.Identity())
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    pmodel, popt, loader = make_private(model, opt, _loader(), target_epsilon=2.0,
                                        target_delta=1e-3, epochs=1, credit="adaptive",
                                        beta=1e-3, recorder=rec, seed=0)
    assert popt.ledger.total_delta == pytest.approx(1e-3 + 1e-3)
    stopped = False
    for _epoch in range(3):  # planned for one epoch: must stop before exceeding ε
        for x, y in loader:
            try:
                _step(pmodel, popt, x, y)
            except qs.PrivacyBudgetExceededError:
                stopped = True
                break
        if stopped:
            break
    assert stopped and popt.ledger.planned_epsilon <= 2.0
    acct = RDPAccountant()
    acct.history = list(popt.ledger.proven_history)
    assert abs(acct.get_epsilon(1e-3) - popt.ledger.epsilon) < 1e-9
    floor = popt.noise_floor_multiplier
    # the added noise never depends on the batch: exactly the floor at every step
    assert popt.ledger.proven_history == [(floor, popt.ledger.sample_rate, popt.ledger.steps)]
    assert all(r["proven_noise_multiplier"] == floor for r in popt.history)
    assert all(r["credited_noise_multiplier"] >= floor for r in popt.history)
    assert popt.ledger.epsilon <= 1.5 * 2.0 * (1 + 1e-9)


def test_unboundable_model_is_refused():
    model = torch.nn.Sequential(_torch_layer(data_dependent=True))
    with pytest.raises(qs.SensitivityError, match="depends on the input data"):
        make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), _loader(),
                     target_epsilon=1.0, target_delta=1e-3, epochs=1)


def test_adaptive_at_100_shots_credits_noise_and_reports_delta_plus_beta(tmp_path):
    cfg = TrainConfig(**{**TINY, "shots": 100}, credit="adaptive", beta=1e-3,
                      output_dir=str(tmp_path))
    r = train(cfg, progress=False)
    target = r.step_records[0]["target_variance"]
    floor_var = (r.step_records[0]["proven_noise_multiplier"]
                 * r.step_records[0]["clip_norm"]) ** 2
    for s in r.step_records:  # exactly the floor, whatever the batch; credit only in the claim
        assert s["artificial_variance_mean"] == pytest.approx(floor_var) and floor_var < target
        assert s["credited_variance_mean"] > 0
        assert s["credited_noise_multiplier"] > s["proven_noise_multiplier"]
    assert "(ε, δ + β)" in r.statement and "central limit theorem" in r.statement
    assert "Proven guarantee" in r.statement and "APPROXIMATION" in r.statement


def test_data_dependent_preprocessing_is_stated():
    cfg = TrainConfig(**{**TINY, "epochs": 1}, dataset="breast_cancer",
                      preprocessing="standardize_pca")
    with pytest.warns(qs.PrivacyWarning):
        r = train(cfg, progress=False)
    assert "NOT protected" in r.statement


def test_ledger_epsilon_equals_independent_opacus_recomputation(tmp_path):
    r = train(TrainConfig(**TINY, output_dir=str(tmp_path)), progress=False)
    ledger = json.loads((tmp_path / "ledger.json").read_text())
    acct = RDPAccountant()
    acct.history = [tuple(h) for h in ledger["proven_history"]]
    assert abs(acct.get_epsilon(1e-5) - r.epsilon) < 1e-9 and r.epsilon <= 1.0
    assert ledger["proven_history"] == ledger["history"]  # no credit: the same noise


def test_secure_mode_runs_and_refuses_a_seed():
    r = train(TrainConfig(**{**TINY, "epochs": 1, "secure_mode": True}), progress=False)
    assert r.steps > 0 and r.epsilon <= 1.0 and "CSPRNG" in r.statement
    model = torch.nn.Sequential(_torch_layer())
    with pytest.raises(ValueError, match="refuses `seed`"):
        make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), _loader(),
                     target_epsilon=1.0, target_delta=1e-3, epochs=1, secure_mode=True, seed=1)


def test_statement_for_isotropic_declared_floor_and_seeded_noise():
    cfg = TrainConfig(**{**TINY, "epochs": 1}, credit="isotropic", beta=1e-3,
                      variance_floor=0.5)
    with pytest.warns(qs.PrivacyWarning, match="declared by you"):
        r = train(cfg, progress=False)
    assert "(ε, δ + β)" in r.statement
    assert "DECLARED BY THE USER" in r.statement
    assert "NOT for a real release" in r.statement


@pytest.mark.parametrize("field,value,msg", [
    ("epsilon", float("nan"), "`epsilon` must be a positive number or inf"),
    ("lr", float("inf"), "`lr` must be positive and finite"),
    ("variance_floor", 5.0, "`variance_floor` must be in [0, 1]"),
])
def test_train_rejects_bad_values(field, value, msg):
    cfg = TrainConfig(**{**TINY, field: value},
                      credit="depolarizing" if field == "variance_floor" else "none")
    with pytest.raises(ValueError, match=re.escape(msg)):
        if field == "variance_floor":
            with pytest.warns(qs.PrivacyWarning, match="declared by you"):
                train(cfg, progress=False)
        else:
            train(cfg, progress=False)


class _Times10(torch.nn.Module):
    """Fixed post-processing that breaks the linear loss's certified bound."""

    def forward(self, f):
        return 10.0 * f


def test_post_processing_that_breaks_the_loss_bound_is_clipped_and_reported():
    model = torch.nn.Sequential(_torch_layer(), _Times10())
    pmodel, popt, loader = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                        _loader(), target_epsilon=1.0, target_delta=1e-3,
                                        epochs=1, seed=0)
    x, y = next(iter(loader))
    assert len(x) > 0
    _step(pmodel, popt, x, y)
    assert popt.last_record["certified_bound_violations"] > 0
    assert popt.last_record["largest_certified_norm_ratio"] > 1.0
    with pytest.raises(ValueError, match="already private"):
        make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), _loader(),
                     target_epsilon=1.0, target_delta=1e-3, epochs=1)
    # Issue 21: strict=True decides from public information at make_private (the ×10 after the
    # TorchLayer is seen on a synthetic input), never by raising on a private batch.
    model = torch.nn.Sequential(_torch_layer(), _Times10())
    with pytest.raises(qs.SensitivityError, match="post-processing in forward"):
        make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), _loader(),
                     target_epsilon=1.0, target_delta=1e-3, epochs=1, seed=0, strict=True,
                     loss=qs.losses.LinearLoss())


def test_hybrid_model_and_fixed_clipping_train_from_the_job():
    r = train(TrainConfig(**{**TINY, "epochs": 1}, model="hybrid"), progress=False)
    assert r.steps > 0 and r.epsilon <= 1.0
    assert "C_classical" in r.statement
    r = train(TrainConfig(**{**TINY, "epochs": 1}, max_grad_norm=0.5), progress=False)
    assert "fixed clip norm C = 0.5" in r.statement
    r = train(TrainConfig(**{**TINY, "epochs": 1}, max_grad_norm="adaptive"), progress=False)
    assert "adaptive quantile clipping" in r.statement
    assert any("next_clip_norm" in rec for rec in r.step_records)


def test_outputs_hold_only_public_fields_unless_diagnostics(tmp_path):
    from pennylane_qshiftdp.training import DIAGNOSTIC_STEP_FIELDS

    cfg = dict(TINY, epochs=1, expected_batch_size=64)  # two steps on the tiny set
    train(TrainConfig(**cfg, output_dir=str(tmp_path / "plain")), progress=False)
    plain = json.loads((tmp_path / "plain" / "metrics.json").read_text())["per_step"]
    assert plain and not any(k in r for r in plain for k in DIAGNOSTIC_STEP_FIELDS)
    assert not (tmp_path / "plain" / "diagnostics.png").exists()
    with pytest.warns(qs.PrivacyWarning, match="NOT covered by the differential-privacy"):
        r = train(TrainConfig(**cfg, credit="adaptive", beta=1e-3, diagnostics=True,
                              output_dir=str(tmp_path / "diag")), progress=False)
    diag = json.loads((tmp_path / "diag" / "metrics.json").read_text())["per_step"]
    assert len(diag) == r.steps >= 2
    for rec in diag:
        for k in DIAGNOSTIC_STEP_FIELDS:
            assert k in rec, k
        assert rec["credited_noise_multiplier"] >= rec["proven_noise_multiplier"]
        assert 0.0 <= rec["clipped_fraction"] <= 1.0 and rec["gradient_snr"] >= 0.0
        assert rec["shot_variance_lower_bound_mean"] <= rec["shot_variance_estimate_mean"]
    assert (tmp_path / "diag" / "diagnostics.png").exists()
    ledger = json.loads((tmp_path / "diag" / "ledger.json").read_text())
    assert ledger["extra"]["certified_clip_violations"] == 0


def test_shots_auto_device_auto_and_eval_shots():
    from pennylane_qshiftdp.calibration import plan_shots
    from pennylane_qshiftdp.training import resolve_device

    cfg = TrainConfig(**{**TINY, "epochs": 1, "shots": "auto", "device": "auto"},
                      max_grad_norm="certified")
    r = train(cfg, progress=False)
    rec = r.step_records[0]
    sigma = math.sqrt(rec["target_variance"]) / rec["clip_norm"]
    # per-weight bound 1 for ⟨Z0⟩ and |∂ℓ/∂f| ≤ 1 (linear loss): v1 = 1
    q_n = float(re.search(r"expected batch size qN = ([0-9.]+)", r.statement).group(1))
    expected = plan_shots(per_example_shot_variance=1.0, noise_multiplier=sigma,
                          clip_norm=rec["clip_norm"], expected_batch_size=q_n)
    assert r.device == "default.qubit" and r.training_shots > 0
    assert r.shots == expected
    assert r.training_shots % r.shots == 0
    assert resolve_device(TrainConfig(qubits=10)) == "default.qubit"
    assert resolve_device(TrainConfig(qubits=11)) == "lightning.qubit"  # measured crossover
    assert resolve_device(TrainConfig(qubits=12)) == "lightning.qubit"
    assert resolve_device(TrainConfig(depolarizing=0.1)) == "default.mixed"
    assert resolve_device(TrainConfig(device="lightning.qubit")) == "lightning.qubit"
    r2 = train(TrainConfig(**{**TINY, "epochs": 1}, eval_shots=10), progress=False)
    assert r2.test_accuracy * len(r2.metrics) >= 0  # runs; accuracy from a 10-shot evaluation
    with pytest.raises(ValueError, match="needs a finite `epsilon`"):
        train(TrainConfig(**{**TINY, "epochs": 1, "shots": "auto", "epsilon": math.inf}),
              progress=False)


def test_plan_shots_closed_form():
    from pennylane_qshiftdp.calibration import plan_shots

    # the numbers: qN = 54, σ²C² = 652, per-example bound 1 → ⌈54 / 6.52⌉ = 9
    assert plan_shots(per_example_shot_variance=1.0, noise_multiplier=math.sqrt(652.0),
                      clip_norm=1.0, expected_batch_size=54) == 9
    assert plan_shots(per_example_shot_variance=0.0, noise_multiplier=1.0, clip_norm=1.0,
                      expected_batch_size=54) == 2
    with pytest.raises(ValueError, match=re.escape("`fraction` must be in (0, 1]. Found 2.0.")):
        plan_shots(per_example_shot_variance=1.0, noise_multiplier=1.0, clip_norm=1.0,
                   expected_batch_size=1, fraction=2.0)
