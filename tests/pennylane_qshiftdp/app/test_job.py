"""Smoke tests of the end-to-end training job on a tiny configuration (default.qubit)."""

import json
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from pennylane_qshiftdp.app.job import TrainConfig, train

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
    assert ledger["format_version"] == 3
    from pennylane_qshiftdp.app.records import PUBLIC_STEP_FIELDS

    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["per_step"] and all(set(x) <= set(PUBLIC_STEP_FIELDS)
                                       for x in metrics["per_step"])
    for rec in r.step_records:
        assert rec["artificial_variance_mean"] == pytest.approx(rec["target_variance"])
        assert rec["certified_bound_violations"] == 0


def test_test_loss_curve_and_noise_plot_only_when_noise_varies(tmp_path):
    import torch

    from pennylane_qshiftdp.app.data import load_dataset
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.losses import LinearLoss

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


@pytest.mark.parametrize("accountant,beside", [("pld", "RDP"), ("rdp", "PLD")])
def test_accountant_end_to_end_ledger_json_and_statement(accountant, beside, tmp_path):
    """`qshiftdp train --accountant pld` (the default) or rdp: σ calibrated and every step
    charged with it, the ledger JSON names it and round-trips, the statement reports the other
    beside it and the public divisor b = the batch size."""
    import json

    from pennylane_qshiftdp.accountants.calibration import compute_epsilon
    from pennylane_qshiftdp.accountants.ledger import PrivacyLedger

    r = train(TrainConfig(**TINY, accountant=accountant, output_dir=str(tmp_path)),
              progress=False)
    doc = json.loads((tmp_path / "ledger.json").read_text())
    assert doc["accountant"] == accountant and doc["format_version"] == 3
    assert doc["expected_batch_size"] == TINY["expected_batch_size"]
    assert doc["sample_rate_source"] == "dataset_length"
    assert set(doc["epsilon_by_accountant"]) == {"rdp", "pld"}
    (sigma, q, steps), = doc["planned_history"]
    assert r.epsilon == compute_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps,
                                        delta=TINY.get("delta", 1e-5), accountant=accountant)
    assert PrivacyLedger.load(tmp_path / "ledger.json").epsilon == r.epsilon
    assert f"On the same proven history: {beside} ε = " in r.statement
    assert f"b = {TINY['expected_batch_size']} (the loader's batch_size)" in r.statement


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
from opacus.accountants import RDPAccountant, create_accountant  # noqa: E402

import pennylane_qshiftdp as qs  # noqa: E402
from pennylane_qshiftdp.privacy_engine import make_private  # noqa: E402


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
    acct = create_accountant(popt.ledger.accountant)  # Opacus's registry ("pld" by default)
    acct.history = list(popt.ledger.proven_history)
    assert abs(acct.get_epsilon(1e-3) - popt.ledger.epsilon) < 1e-9
    rdp = RDPAccountant()
    rdp.history = list(popt.ledger.proven_history)
    assert popt.ledger.epsilons["rdp"] == pytest.approx(rdp.get_epsilon(1e-3), abs=1e-9)
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
                     target_epsilon=1.0, target_delta=1e-3, epochs=1,
                     max_grad_norm="certified")  # the calibrated default needs no bound


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
    acct = create_accountant(ledger["accountant"])  # an independent Opacus-registry accountant
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
                                        epochs=1, seed=0, max_grad_norm="certified")
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


# ---------------------------------------------------------------------------------------------
# Side outputs: nothing that depends on a private batch is written unless diagnostics=True
# ---------------------------------------------------------------------------------------------

def _data_dependent_keys():
    from pennylane_qshiftdp.app.records import DIAGNOSTIC_EPOCH_FIELDS, DIAGNOSTIC_STEP_FIELDS

    return set(DIAGNOSTIC_STEP_FIELDS) | set(DIAGNOSTIC_EPOCH_FIELDS) | {
        "training_data_sha256", "certified_clip_violations", "training_shots", "unclipped",
        "largest_norm_ratio", "training_rows_hmac_sha256", "hmac_key"}


def _train_on(monkeypatch, out, *, drop_first=False, **kw):
    """Train TINY on digits, or on its neighbour without the first training example."""
    import dataclasses

    import pennylane_qshiftdp.app.data as data_mod

    original = data_mod.load_dataset

    def load(*args, **kwargs):
        d = original(*args, **kwargs)
        if drop_first:  # D' = D minus one example; the test split is unchanged
            d = dataclasses.replace(d, X_train=d.X_train[1:], y_train=d.y_train[1:])
        return d

    monkeypatch.setattr(data_mod, "load_dataset", load)
    out.mkdir(parents=True)
    monkeypatch.chdir(out)  # the same relative --output-dir in both worlds
    try:
        return train(TrainConfig(**{**TINY, "epochs": 1, **kw}, output_dir="."),
                     progress=False)
    finally:
        monkeypatch.setattr(data_mod, "load_dataset", original)


def _leaves(obj, path=()):
    """Every (path, value) leaf of nested dicts/lists/tensors, tensors as lists."""
    if isinstance(obj, torch.Tensor):
        obj = obj.tolist()
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    else:
        yield path, obj


def _outputs(out):
    """Every output of a run directory as leaves: JSON, checkpoint, CSV and statement lines."""
    import csv

    leaves = {}
    for name in ("ledger.json", "metrics.json"):
        leaves.update({(name, *p): v for p, v in _leaves(json.loads((out / name).read_text()))})
    ckpt = torch.load(out / "checkpoint.pt", weights_only=True)
    leaves.update({("checkpoint.pt", *p): v for p, v in _leaves(ckpt)})
    with open(out / "metrics.csv", newline="") as fh:
        for i, row in enumerate(csv.DictReader(fh)):
            leaves.update({("metrics.csv", i, k): v for k, v in row.items()})
    lines = (out / "privacy_statement.txt").read_text().splitlines()
    leaves.update({("privacy_statement.txt", line.split(":")[0]): line for line in lines})
    return leaves


def _differing(a, b):
    """Leaf paths whose value differs (or that exist in one run only), with indices as '*'."""
    return {tuple("*" if isinstance(k, int) else k for k in path)
            for path in set(a) | set(b) if a.get(path, "missing") != b.get(path, "missing")}


def test_default_outputs_of_neighbouring_data_sets_differ_only_in_the_dp_release(
        monkeypatch, tmp_path):
    """The exact side-output check (issue 21, row "default qshiftdp train outputs").

    D and D' = D minus one training example, same seeds (seeded noise, so the noise is the
    same draw in both worlds). Every file and key written by default is listed; the values
    that differ between D and D' are exactly the privatized model and what is computed from it
    (test-split accuracy and loss), plus N (public by convention, as in Opacus). The old
    checkpoint held the batch sizes, clipped counts and ‖Σ clipped g‖ / σC: it fails this.
    """
    from pennylane_qshiftdp.app.records import PUBLIC_EPOCH_FIELDS, PUBLIC_STEP_FIELDS

    d = _train_on(monkeypatch, tmp_path / "D", max_grad_norm="certified")
    d2 = _train_on(monkeypatch, tmp_path / "D2", drop_first=True, max_grad_norm="certified")
    assert d.steps == d2.steps == 9  # q = 1/ceil(270/32) = 1/ceil(269/32): same plan
    files = {"accuracy_epsilon.png", "checkpoint.pt", "ledger.json", "metrics.csv",
             "metrics.json", "privacy_statement.txt"}  # certified clip: constant noise, no plot
    for run in ("D", "D2"):  # and the operator's resume check (NOT protected, not released)
        assert {f.name for f in (tmp_path / run).iterdir()} == files | {"resume_check.json"}
    checks = [json.loads((tmp_path / run / "resume_check.json").read_text())
              for run in ("D", "D2")]
    from pennylane_qshiftdp.app.resume_check import RESUME_CHECK_NOTE

    # the keyed digest is a function of every private row: labelled, and it does differ (a
    # fresh random key per run, so two digests of the same rows differ too)
    assert all(c["NOT_PROTECTED"] == RESUME_CHECK_NOTE for c in checks)
    assert checks[0]["training_rows_hmac_sha256"] != checks[1]["training_rows_hmac_sha256"]
    assert checks[0]["hmac_key"] != checks[1]["hmac_key"]
    a, b = _outputs(tmp_path / "D"), _outputs(tmp_path / "D2")
    # no key of the data-dependent kind anywhere; step and epoch rows hold only public fields
    keys = {k for path in a for k in path if isinstance(k, str)}
    assert not keys & _data_dependent_keys()
    ckpt = torch.load(tmp_path / "D" / "checkpoint.pt", weights_only=True)
    metrics = json.loads((tmp_path / "D" / "metrics.json").read_text())
    for rows, allowed in ((ckpt["step_records"], PUBLIC_STEP_FIELDS),
                          (metrics["per_step"], PUBLIC_STEP_FIELDS),
                          (ckpt["metrics"], PUBLIC_EPOCH_FIELDS),
                          (metrics["per_epoch"], PUBLIC_EPOCH_FIELDS)):
        assert rows and all(set(r) <= set(allowed) for r in rows)
    assert len(ckpt["step_records"]) == 9 and ckpt["format"] == "qshiftdp-train-checkpoint-2"
    # what differs between the neighbours: the DP release and its post-processing, and N
    release = {("checkpoint.pt", "model", "qlayer.weights", "*", "*", "*"),
               ("checkpoint.pt", "metrics", "*", "test_accuracy"),
               ("checkpoint.pt", "metrics", "*", "test_loss"),
               ("metrics.json", "test_accuracy"),
               ("metrics.json", "per_epoch", "*", "test_accuracy"),
               ("metrics.json", "per_epoch", "*", "test_loss"),
               ("metrics.csv", "*", "test_accuracy"), ("metrics.csv", "*", "test_loss"),
               ("checkpoint.pt", "metrics", "*", "test_balanced_accuracy"),
               ("metrics.json", "test_balanced_accuracy"),
               ("metrics.json", "per_epoch", "*", "test_balanced_accuracy"),
               ("metrics.csv", "*", "test_balanced_accuracy"),
               ("metrics.json", "majority_class_warning")}  # a function of the two numbers
    public_n = {(f, *p) for f in ("ledger.json",) for p in (
        ("dataset_size",), ("extra", "provenance", "training_examples"))} | {
        ("checkpoint.pt", "ledger", "dataset_size"),
        ("checkpoint.pt", "ledger", "extra", "provenance", "training_examples"),
        ("checkpoint.pt", "data", "n_train"),  # the resume check's public facts: N only
        ("privacy_statement.txt", "Sampling")} | {
        # the cost plan: the expected batch qN times the circuits (shots) per example
        ("metrics.json", "cost", "estimated", k) for k in (
            "circuits_per_step", "shots_per_step", "total_circuits", "total_shots")}
    diff = _differing(a, b)
    # the running sum of the released noisy sums (the diagnosis's; a DP release) and the
    # variance added with them (public)
    release |= {d for d in diff if d[:3] == ("checkpoint.pt", "released_running",
                                              "released_total")}
    assert diff <= release | public_n, diff - release - public_n
    assert ("checkpoint.pt", "model", "qlayer.weights", "*", "*", "*") in diff  # it trained
    assert ("privacy_statement.txt", "Sampling") in diff  # N = 270 vs 269, stated as public
    # the held-out split is the same in both worlds: its majority rate and size do not move
    assert not diff & {("metrics.json", "test_majority_rate"),
                       ("metrics.json", "test_split", "examples")}
    assert ("metrics.json", "test_majority_rate") in a
    # the plot is a function of the public records only: redrawn from them, byte for byte
    from pennylane_qshiftdp.app.job import TrainResult
    from pennylane_qshiftdp.app.outputs import write_outputs

    redrawn = TrainResult(
        test_accuracy=metrics["test_accuracy"], epsilon=metrics["epsilon"],
        steps=metrics["steps"], statement="", metrics=metrics["per_epoch"],
        step_records=metrics["per_step"], weights=np.zeros(1), output_dir=None,
        n_classes=d.n_classes, test_majority_rate=metrics["test_majority_rate"])
    write_outputs(redrawn, None, tmp_path / "redrawn")
    assert ((tmp_path / "redrawn" / "accuracy_epsilon.png").read_bytes()
            == (tmp_path / "D" / "accuracy_epsilon.png").read_bytes())


def test_diagnostics_are_separate_marked_and_differ_between_neighbours(monkeypatch, tmp_path):
    """With diagnostics=True the data-dependent records go to diagnostics.json (marked), the
    statement names them, and they do differ between D and D' (the check above has power)."""
    from pennylane_qshiftdp.app.records import DIAGNOSTIC_STEP_FIELDS, NOT_PROTECTED

    runs = []
    for name, drop in (("D", False), ("D2", True)):
        with pytest.warns(qs.PrivacyWarning, match="NOT covered by the differential-privacy"):
            runs.append(_train_on(monkeypatch, tmp_path / name, drop_first=drop,
                                  max_grad_norm="certified", credit="adaptive", beta=1e-3,
                                  diagnostics=True))
    r = runs[0]
    out = tmp_path / "D"
    assert {"diagnostics.json", "diagnostics.png"} <= {f.name for f in out.iterdir()}
    diag = json.loads((out / "diagnostics.json").read_text())
    assert diag["NOT_PROTECTED"] == NOT_PROTECTED
    assert len(diag["per_step"]) == r.steps == 9
    for rec, full in zip(diag["per_step"], r.step_records, strict=True):
        assert set(DIAGNOSTIC_STEP_FIELDS) <= set(rec)
        assert rec == {k: v for k, v in full.items() if k in rec}  # the records as computed
        assert rec["credited_noise_multiplier"] >= full["proven_noise_multiplier"]
        assert rec["shot_variance_lower_bound_mean"] <= rec["shot_variance_estimate_mean"]
    assert diag["summary"]["per_example_gradients"] == sum(
        x["batch_examples"] for x in r.step_records)
    assert diag["summary"]["certified_clip_binding"] == 0
    assert diag["credited_epsilon"] == pytest.approx(r.credited_epsilon, rel=1e-12)
    assert len(diag["training_data_sha256"]) == 64
    # the default files stay clean: diagnostics never leak into them
    a = _outputs(out)
    assert not {k for p in a for k in p if isinstance(k, str)} & _data_dependent_keys()
    ledger = json.loads((out / "ledger.json").read_text())
    assert ledger["credited_history"] == ledger["proven_history"]  # nothing credited in it
    assert "withheld" in ledger["credited_history_note"]
    # the statement says they were written, counts the certified clip, shows the credited ε
    first = r.statement.splitlines()[0]
    assert first.endswith("; NOT for the diagnostics released beside it (diagnostics.json, "
                          "diagnostics.png), which are computed from the private batches.")
    n = diag["summary"]["per_example_gradients"]
    assert (f"Diagnostic (NOT protected, computed from the private batches): 0 of {n} "
            f"per-example gradients exceeded the certified bound and were clipped.") in r.statement
    from pennylane_qshiftdp._formatting import format_up

    assert f"({format_up(r.credited_epsilon)}, 0.00101)" in r.statement  # rounded up
    # the diagnostics differ between the neighbours (what the default outputs must not hold)
    d2 = json.loads((tmp_path / "D2" / "diagnostics.json").read_text())
    changed = {p[-1] for p in _differing(dict(_leaves(diag)), dict(_leaves(d2)))}
    assert {"gradient_snr", "training_data_sha256", "credited_epsilon"} <= changed


def test_default_statement_withholds_data_dependent_numbers(tmp_path):
    cfg = TrainConfig(**{**TINY, "epochs": 1}, credit="adaptive", beta=1e-3,
                      output_dir=str(tmp_path))
    r = train(cfg, progress=False)
    assert r.diagnostics is None and "ε withheld" in r.statement
    from pennylane_qshiftdp._formatting import format_up

    assert f"{r.credited_epsilon:.6g}" not in r.statement
    assert format_up(r.credited_epsilon) not in r.statement  # as it would be printed
    assert "Certified clip: a clip that binds means" in r.statement
    assert "Diagnostics (NOT protected" not in r.statement
    assert not (tmp_path / "diagnostics.json").exists()
    assert (tmp_path / "privacy_statement.txt").read_text() == r.statement + "\n"


def test_resume_refuses_a_checkpoint_that_would_run_code(tmp_path):
    """torch.load(weights_only=True): a pickled callable is refused, never executed."""
    import os

    cfg = TrainConfig(**{**TINY, "epochs": 2}, output_dir=str(tmp_path / "run"))
    train(cfg, progress=False, stop_after_epochs=1)
    path = tmp_path / "run" / "checkpoint.pt"
    ckpt = torch.load(path, weights_only=True)
    marker = tmp_path / "code-ran"

    class _RunsCode:
        def __reduce__(self):
            return (os.makedirs, (str(marker),))

    torch.save({**ckpt, "metrics": [_RunsCode()]}, path)
    with pytest.raises(ValueError, match=re.escape(
            f"--resume refused {path}: it holds pickled objects other than tensors and "
            f"built-in containers, and loading them could run arbitrary code (it names "
            f"os.makedirs).")):
        train(cfg, progress=False, resume=True)
    assert not marker.exists()
    torch.save({**ckpt, "epoch": 1}, path)  # a clean checkpoint still resumes
    assert train(cfg, progress=False, resume=True).steps == 18


def test_resume_with_diagnostics_reproduces_the_uninterrupted_diagnostics(tmp_path):
    kw = dict(credit="adaptive", beta=1e-3, diagnostics=True)
    with pytest.warns(qs.PrivacyWarning):
        full = train(TrainConfig(**TINY, **kw, output_dir=str(tmp_path / "a")), progress=False)
        cfg = TrainConfig(**TINY, **kw, output_dir=str(tmp_path / "b"))
        train(cfg, progress=False, stop_after_epochs=1)
        resumed = train(cfg, progress=False, resume=True)
    assert resumed.credited_epsilon == pytest.approx(full.credited_epsilon, rel=1e-12)
    np.testing.assert_array_equal(resumed.weights, full.weights)
    a = json.loads((tmp_path / "a" / "diagnostics.json").read_text())
    b = json.loads((tmp_path / "b" / "diagnostics.json").read_text())
    assert b["per_step"] == a["per_step"] and b["credited_history"] == a["credited_history"]
    for x, y in zip(b["per_epoch"], a["per_epoch"], strict=True):
        assert x["training_shots"] == y["training_shots"]


def test_pca_statement_first_line_says_what_is_not_covered():
    cfg = TrainConfig(**{**TINY, "epochs": 1}, dataset="breast_cancer",
                      preprocessing="standardize_pca")
    with pytest.warns(qs.PrivacyWarning):
        r = train(cfg, progress=False)
    first = r.statement.splitlines()[0]
    assert first.startswith("Guarantee: (ε, δ) = (")
    assert first.endswith(
        "for the training examples (add/remove-one adjacency) as preprocessed, with the "
        "preprocessing statistics held fixed; NOT for those statistics, which were computed "
        "from the training data without privacy (see Preprocessing), so NOT for the raw data.")
    fixed = train(TrainConfig(**{**TINY, "epochs": 1}), progress=False).statement
    assert fixed.splitlines()[0].endswith(
        "add/remove-one adjacency), raw data included (the preprocessing is fixed before "
        "seeing the data).")


def test_shots_auto_device_auto_and_eval_shots():
    from pennylane_qshiftdp.accountants.calibration import plan_shots
    from pennylane_qshiftdp.app.job import LIGHTNING_QUBITS, MAX_QUBITS, resolve_device

    cfg = TrainConfig(**{**TINY, "epochs": 1, "shots": "auto", "device": "auto"},
                      max_grad_norm="certified")
    r = train(cfg, progress=False)
    rec = r.step_records[0]
    sigma = math.sqrt(rec["target_variance"]) / rec["clip_norm"]
    # per-weight bound 1 for ⟨Z0⟩ and |∂ℓ/∂f| ≤ 1 (linear loss): v1 = 1
    # planned for the public divisor b (the loader's batch size), never for q·N
    b = float(re.search(r"divided by the public constant b = ([0-9.]+)", r.statement).group(1))
    assert b == TINY["expected_batch_size"]
    expected = plan_shots(per_example_shot_variance=1.0, noise_multiplier=sigma,
                          clip_norm=rec["clip_norm"], expected_batch_size=b)
    assert r.device == "default.qubit" and r.training_shots > 0
    assert r.shots == expected
    assert r.training_shots % r.shots == 0
    # measured crossovers: none up to the job's 14 qubits with exact-law draws (the default),
    # 10 qubits with the device's own sampling
    assert resolve_device(TrainConfig(qubits=14)) == "default.qubit"
    assert LIGHTNING_QUBITS > MAX_QUBITS
    assert resolve_device(TrainConfig(qubits=9, shot_sampling="device")) == "default.qubit"
    assert resolve_device(TrainConfig(qubits=10, shot_sampling="device")) == "lightning.qubit"
    # one-qubit circuits per output: default.qubit however many outputs
    assert resolve_device(TrainConfig(qubits=15, model="neuron")) == "default.qubit"
    assert resolve_device(TrainConfig(depolarizing=0.1)) == "default.mixed"
    assert resolve_device(TrainConfig(device="lightning.qubit")) == "lightning.qubit"
    r2 = train(TrainConfig(**{**TINY, "epochs": 1}, eval_shots=10), progress=False)
    assert r2.test_accuracy * len(r2.metrics) >= 0  # runs; accuracy from a 10-shot evaluation
    with pytest.raises(ValueError, match="needs a finite `epsilon`"):
        train(TrainConfig(**{**TINY, "epochs": 1, "shots": "auto", "epsilon": math.inf}),
              progress=False)


def test_plan_shots_closed_form():
    from pennylane_qshiftdp.accountants.calibration import plan_shots

    # the numbers: qN = 54, σ²C² = 652, per-example bound 1 → ⌈54 / 6.52⌉ = 9
    assert plan_shots(per_example_shot_variance=1.0, noise_multiplier=math.sqrt(652.0),
                      clip_norm=1.0, expected_batch_size=54) == 9
    assert plan_shots(per_example_shot_variance=0.0, noise_multiplier=1.0, clip_norm=1.0,
                      expected_batch_size=54) == 2
    with pytest.raises(ValueError, match=re.escape("`fraction` must be in (0, 1]. Found 2.0.")):
        plan_shots(per_example_shot_variance=1.0, noise_multiplier=1.0, clip_norm=1.0,
                   expected_batch_size=1, fraction=2.0)


# ------------------------------------------------- honest outputs: majority class, balanced acc
def _predictions(r, cfg):
    """The final weights' predicted labels on the job's held-out test split (analytic)."""
    from pennylane_qshiftdp.app.data import load_dataset
    from pennylane_qshiftdp.app.models import QuantumClassifier

    data = load_dataset(cfg.dataset, n_features=cfg.qubits, seed=cfg.seed,
                        test_size=cfg.test_size)
    model = QuantumClassifier(cfg.qubits, cfg.layers, device="default.qubit", shots=None)
    with torch.no_grad():
        model.qlayer.weights.copy_(torch.as_tensor(r.weights))
        out = model(torch.as_tensor(data.X_test))
    return data.y_test, np.where(out.numpy() >= 0, 1.0, -1.0)


def _mean_recall(y, pred):
    """Balanced accuracy in closed form: the mean over the true classes of their recall."""
    return float(np.mean([np.mean(pred[y == c] == c) for c in np.unique(y)]))


def test_majority_class_warning_fires_on_a_stuck_run(tmp_path):
    """TINY (2 qubits, 1 layer, 2 epochs) on digits 0 vs 1 ends predicting +1 for every test
    example: accuracy = the majority-class rate 45/90, and the run says so."""
    cfg = TrainConfig(**TINY, output_dir=str(tmp_path / "r"))
    with pytest.warns(UserWarning, match="the classifier predicts the majority class") as rec:
        r = train(cfg, progress=False)
    y, pred = _predictions(r, cfg)
    assert np.unique(pred).tolist() == [1.0]  # really one class
    assert r.test_majority_rate == pytest.approx(0.5) == np.mean(y == 1.0)
    assert r.test_accuracy == pytest.approx(r.test_majority_rate)
    assert r.test_balanced_accuracy == pytest.approx(0.5)  # any constant answer: 1/K
    msg = [str(w.message) for w in rec if "majority class" in str(w.message)]
    assert len(msg) == 1 and msg[0] == r.majority_warning
    assert "test accuracy 0.5000" in msg[0] and "majority-class rate 0.5000" in msg[0]
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["majority_class_warning"] == r.majority_warning
    assert metrics["test_majority_rate"] == r.test_majority_rate
    assert metrics["test_split"]["examples"] == r.test_examples == len(y) == 90
    assert "never trained on" in metrics["test_split"]["note"]


def test_balanced_accuracy_is_sklearns_and_a_learning_run_does_not_warn(tmp_path):
    """The default job's model (4 qubits, 2 layers) on digits learns in one epoch: no warning;
    the balanced accuracy is sklearn's on the final predictions (and the mean recall)."""
    import csv

    from sklearn.metrics import balanced_accuracy_score

    cfg = TrainConfig(**{**TINY, "qubits": 4, "layers": 2, "epochs": 1},
                      output_dir=str(tmp_path / "r"))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = train(cfg, progress=False)
    assert not [w for w in rec if "majority class" in str(w.message)]
    assert r.majority_warning is None and r.test_accuracy > r.test_majority_rate + 0.3
    y, pred = _predictions(r, cfg)
    assert len(np.unique(pred)) == 2
    assert r.test_accuracy == pytest.approx(np.mean(pred == y))
    assert r.test_balanced_accuracy == pytest.approx(balanced_accuracy_score(y, pred))
    assert r.test_balanced_accuracy == pytest.approx(_mean_recall(y, pred))
    assert r.metrics[-1]["test_balanced_accuracy"] == r.test_balanced_accuracy
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["test_balanced_accuracy"] == r.test_balanced_accuracy
    assert metrics["per_epoch"][-1]["test_balanced_accuracy"] == r.test_balanced_accuracy
    assert metrics["majority_class_warning"] is None
    with open(tmp_path / "r" / "metrics.csv", newline="") as fh:
        row = list(csv.DictReader(fh))[-1]
    assert float(row["test_balanced_accuracy"]) == pytest.approx(r.test_balanced_accuracy)


def _capture_figures(monkeypatch):
    """Keep every figure write_outputs saves (by file name) instead of only writing it."""
    import matplotlib.figure

    saved, original = {}, matplotlib.figure.Figure.savefig

    def savefig(fig, path, *args, **kwargs):
        saved[Path(path).name] = fig
        return original(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return saved


def _lines(fig):
    return {ln.get_label(): ln for ln in fig.axes[0].get_lines()}


def test_accuracy_plot_draws_the_test_splits_majority_rate(monkeypatch, tmp_path):
    """breast_cancer (imbalanced: 90 of 143 test examples benign): the accuracy panel draws the
    majority-class rate of the test split, not 1/2 as "chance", and the balanced accuracy."""
    from sklearn.metrics import balanced_accuracy_score

    from pennylane_qshiftdp.app.job import TrainResult
    from pennylane_qshiftdp.app.outputs import write_outputs

    saved = _capture_figures(monkeypatch)
    cfg = TrainConfig(**{**TINY, "dataset": "breast_cancer", "epochs": 1},
                      output_dir=str(tmp_path / "r"))
    with warnings.catch_warnings():  # this short run may well end at the majority class
        warnings.simplefilter("ignore", UserWarning)
        r = train(cfg, progress=False)
    y, pred = _predictions(r, cfg)
    rate = np.unique(y, return_counts=True)[1].max() / len(y)
    assert rate == pytest.approx(90 / 143) and r.test_majority_rate == pytest.approx(rate)
    assert r.test_balanced_accuracy == pytest.approx(balanced_accuracy_score(y, pred))
    lines = _lines(saved["accuracy_epsilon.png"])
    majority = lines[f"majority class of the test split ({rate:.3f})"]
    assert np.allclose(majority.get_ydata(), rate)
    assert np.allclose(lines["1/2 (balanced accuracy of any constant answer)"].get_ydata(), 0.5)
    assert not [k for k in lines if k.startswith("chance")]
    assert np.allclose(lines["test balanced accuracy"].get_ydata(),
                       [m["test_balanced_accuracy"] for m in r.metrics])
    # K classes: the majority rate of the test split, beside 1/K (drawn from the saved fields)
    three = TrainResult(test_accuracy=0.5, epsilon=1.0, steps=1, statement="",
                        metrics=[{"epoch": 1, "steps": 1, "epsilon": 1.0, "test_accuracy": 0.5,
                                  "test_balanced_accuracy": 0.45, "test_loss": 0.1}],
                        step_records=[], weights=np.zeros(1), output_dir=None, n_classes=3,
                        test_majority_rate=0.4)
    write_outputs(three, None, tmp_path / "k3")
    lines = _lines(saved["accuracy_epsilon.png"])
    assert np.allclose(lines["majority class of the test split (0.400)"].get_ydata(), 0.4)
    assert np.allclose(lines["1/3 (balanced accuracy of any constant answer)"].get_ydata(),
                       1 / 3)


@pytest.mark.parametrize(("acc", "rate", "bal", "k", "expected"), [
    (0.63, 0.627, 0.50, 2, "predicts the majority class"),      # within 0.01 of the rate
    (0.6503, 0.6294, 0.5283, 2, "barely separates the classes"),  # breast_cancer's default run
    (0.62, 0.40, 0.37, 3, "barely separates the classes"),       # 1/3 + 0.05 = 0.383
    (0.62, 0.40, 0.40, 3, None),                                 # above 1/K + 0.05
    (0.1053, 0.3421, 0.1047, 3, "systematically wrong"),         # iris, found by a user
    (0.30, 0.40, 0.29, 3, "barely separates the classes"),       # 1/3 - 0.05 = 0.283
    (0.9, 0.627, 0.88, 2, None),
    (0.9, 0.627, math.nan, None, None),                          # K unknown: rate rule only
])
def test_learned_little_warning_rules(acc, rate, bal, k, expected):
    """Closed-form thresholds: accuracy within 0.01 of the majority rate, or balanced accuracy
    within 0.05 of 1/K (a classifier that answers one class for all but a few examples)."""
    from pennylane_qshiftdp.app.metrics import majority_class_warning

    msg = majority_class_warning(acc, rate, bal, k)
    assert (msg is None) if expected is None else (expected in msg)


@pytest.mark.parametrize("secure", [True, False])
def test_shot_sampling_is_seeded_from_the_csprng_in_secure_mode(secure, monkeypatch):
    """A credit mode counts shot noise as privacy noise, so in secure mode the simulator's
    shot sampling must not follow the public seed: reseeded from the OS's CSPRNG every epoch
    (different in two runs with the same --seed); seeded runs keep [seed, epoch, 1]. The
    statement's Randomness line says which."""
    from pennylane_qshiftdp import _compat

    seen = []
    real = _compat.reseed_device
    monkeypatch.setattr(_compat, "reseed_device",
                        lambda dev, seq: (seen.append(seq), real(dev, seq))[1])
    cfg = TrainConfig(**{**TINY, "secure_mode": secure})
    runs = [train(cfg, progress=False) for _ in range(2)]
    assert len(seen) == 2 * cfg.epochs
    if secure:
        assert all(isinstance(s, int) for s in seen) and len(set(seen)) == len(seen)
        assert "shot sampling reseeded from the OS's CSPRNG" in runs[0].statement
    else:
        assert seen == [[cfg.seed, e, 1] for e in range(cfg.epochs)] * 2
        assert "shot sampling seeded from the public --seed" in runs[0].statement
        assert runs[0].test_accuracy == runs[1].test_accuracy
