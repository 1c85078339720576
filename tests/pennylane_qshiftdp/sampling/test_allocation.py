"""A per-example shot budget split over the parameter-shift circuits ∝ |shift coefficient|."""

import math
import re

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.qnn import TorchLayer
from pennylane_qshiftdp.qnn.evaluation import evaluate_layer
from pennylane_qshiftdp.sampling import (
    set_shot_budget,
    set_shot_sampling,
    set_step_shot_budget,
    shot_budget,
    split_shots,
)

C1 = (math.sqrt(2) + 1) / (4 * math.sqrt(2))  # CRX's four-term rule (PennyLane)
C2 = (math.sqrt(2) - 1) / (4 * math.sqrt(2))


def test_split_shots_closed_forms():
    assert split_shots(100, [0.5] * 4).tolist() == [25] * 4
    assert split_shots(1000, [C1, C1, C2, C2]).tolist() == [426, 426, 73, 73]
    assert split_shots(7, [1.0, 1.0, 1.0]).tolist() == [2, 2, 2]  # the rest is not spent


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 10**6), st.lists(st.floats(0.01, 10.0), min_size=1, max_size=40))
def test_split_shots_properties(budget, weights):
    """Σ N ≤ S < Σ N + T; N_t within one shot of S w_t / W; equal weights, equal shots."""
    w = np.array(weights)
    share = budget * w / w.sum()
    if share.min() < 1:
        with pytest.raises(ValueError, match="cannot give each of the"):
            split_shots(budget, w)
        return
    n = split_shots(budget, w)
    assert n.sum() <= budget < n.sum() + len(w)
    assert np.all(n <= share + 1e-9) and np.all(n > share - 1)
    for a in np.unique(w):
        assert len(set(n[w == a].tolist())) == 1


def test_split_shots_refusals():
    with pytest.raises(ValueError, match=re.escape("`budget` = 5 shots cannot give each of "
                                                   "the 3 circuits a shot")):
        split_shots(5, [1.0, 1.0, 0.01])
    with pytest.raises(ValueError, match=re.escape("`budget` must be at least 1. Found 0.")):
        split_shots(0, [1.0])
    with pytest.raises(TypeError, match="`budget` must be an integer"):
        split_shots(2.5, [1.0])
    with pytest.raises(ValueError, match="`weights` must be positive and finite"):
        split_shots(10, [1.0, 0.0])


def _crx_layer(device="default.qubit", shots=200, seed=0):
    dev = qml.device(device, wires=2, seed=seed)

    @qml.set_shots(shots=shots)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RY(inputs[..., 1], wires=1)
        qml.CRX(weights[0], wires=[0, 1])
        qml.RX(weights[1], wires=1)
        return qml.expval(qml.Z(1))

    layer = TorchLayer(circuit, {"weights": (2,)})
    with torch.no_grad():
        layer.weights.copy_(torch.tensor([0.9, -0.4]))
    return layer


X = torch.tensor([[0.7, 1.9], [2.4, 0.3]], dtype=torch.float64)


def _analytic(inputs, weights, shift=None):
    """⟨Z1⟩ of the circuit above with numpy (derived: RY, CRX as a controlled RX, RX)."""
    w = np.array(weights, dtype=float)
    out = []
    for x0, x1 in np.asarray(inputs):
        psi = np.kron([np.cos(x0 / 2), np.sin(x0 / 2)], [np.cos(x1 / 2), np.sin(x1 / 2)])

        def rx(t):
            return np.array([[np.cos(t / 2), -1j * np.sin(t / 2)],
                             [-1j * np.sin(t / 2), np.cos(t / 2)]])

        crx = np.block([[np.eye(2), np.zeros((2, 2))], [np.zeros((2, 2)), rx(w[0])]])
        psi = np.kron(np.eye(2), rx(w[1])) @ (crx @ psi)
        z1 = np.kron(np.eye(2), np.diag([1, -1]))
        out.append(float(np.real(psi.conj() @ z1 @ psi)))
    return np.array(out)


@pytest.mark.parametrize("sampling", ["device", "exact_law"])
def test_the_device_honours_each_circuits_shots(sampling):
    """With a budget, the per-example gradient estimate Σ_t c_t μ̂_t has variance
    Σ_t c_t² (1 − μ_t²) / N_t with the split N_t (closed form for ±1 outcomes), not that of the
    QNode's shots, and its mean is the analytic gradient."""
    layer = _crx_layer(seed=11)
    if sampling == "exact_law":
        set_shot_sampling(layer, "exact_law")
    set_shot_budget(layer, 600)
    reps = 1000  # independent draws: one example repeated over the rows of two batches
    w = layer.weights.detach().numpy()
    for b in range(len(X)):
        rows = X[b].repeat(reps // 2, 1)
        est = np.concatenate([evaluate_layer(layer, rows).jacobian[:, 0, :].numpy()
                              for _ in range(2)])
        tape = qml.tape.QuantumScript(
            [qml.RY(X[b, 0].item(), 0), qml.RY(X[b, 1].item(), 1), qml.CRX(w[0], [0, 1]),
             qml.RX(w[1], 1)], [qml.expval(qml.Z(1))])
        tape.trainable_params = [2, 3]
        tapes, fn = qml.gradients.param_shift(tape)  # PennyLane's own tapes and processing
        coeffs = qs.shift_rule_coefficients(tape)  # (2 parameters, 6 tapes)
        shots = split_shots(600, np.abs(coeffs).max(axis=0))
        mu = np.array([float(qml.execute([t], qml.device("default.qubit"))[0]) for t in tapes])
        grad = np.asarray(fn(list(mu)), dtype=float)
        expected_var = (coeffs**2 * (1 - mu**2) / shots).sum(axis=1)
        assert np.all(np.abs(est.mean(axis=0) - grad) < 5 * np.sqrt(expected_var / reps))
        # the sample variance within 5 sd of its sampling law (sd ≈ σ² sqrt(2 / (reps - 1)))
        ratio = est.var(axis=0, ddof=1) / expected_var
        assert np.all(np.abs(ratio - 1) < 5 * np.sqrt(2 / (reps - 1))), ratio
        # the QNode's 200 shots per circuit would give a variance far outside that range
        uniform = (coeffs**2 * (1 - mu**2) / 200).sum(axis=1)
        assert np.all(np.abs(uniform / expected_var - 1) > 5 * np.sqrt(2 / (reps - 1)))


def test_the_recorder_records_each_circuits_shots():
    recorder = qs.ShotRecorder()
    layer = _crx_layer()
    layer.qnode.gradient_kwargs["recorder"] = recorder
    set_shot_budget(layer, 600)
    evaluate_layer(layer, X)
    stats = recorder.statistics
    coeff = np.round(np.abs(stats.coefficient), 9)
    recorded = {float(c): set(stats.shots[coeff == c].tolist()) for c in np.unique(coeff)}
    weights = np.array([C1, C1, C2, C2, 0.5, 0.5])  # |c| of CRX's four shifts and RX's two
    split = dict(zip(np.round(weights, 9).tolist(), split_shots(600, weights).tolist(),
                     strict=False))
    assert recorded == {c: {split[c]} for c in split}
    # W = 2 C1 + 2 C2 + 2 · 0.5 = 2: N = floor(600 |c| / 2)
    assert split == {round(C1, 9): 128, round(C2, 9): 21, 0.5: 150}


def test_a_budget_that_gives_every_circuit_the_qnodes_shots_changes_nothing():
    """Two-term rules, budget = T·Ns: every circuit keeps Ns shots, so the step is the same
    single execution, bit for bit."""
    dev_a = qml.device("default.qubit", wires=2, seed=5)
    dev_b = qml.device("default.qubit", wires=2, seed=5)

    def layer_on(dev):
        @qml.set_shots(shots=100)
        @qml.qnode(dev, diff_method=qs.param_shift)
        def circuit(inputs, weights):
            qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
            qml.StronglyEntanglingLayers(weights, wires=range(2))
            return qml.expval(qml.Z(0))

        return TorchLayer(circuit, {"weights": (1, 2, 3)})

    a, b = layer_on(dev_a), layer_on(dev_b)
    b.load_state_dict(a.state_dict())
    set_shot_budget(b, 12 * 100)
    ea, eb = evaluate_layer(a, X), evaluate_layer(b, X)
    assert torch.equal(ea.outputs, eb.outputs) and torch.equal(ea.jacobian, eb.jacobian)


def test_set_shot_budget_and_per_step_budget():
    layer = _crx_layer()
    assert shot_budget(layer.qnode) is None
    assert set_step_shot_budget(layer, 10_000, expected_batch_size=20.0) == 500
    assert shot_budget(layer.qnode) == 500
    set_shot_budget(layer, None)
    assert shot_budget(layer.qnode) is None
    with pytest.raises(ValueError, match=re.escape(
            "`shots_per_step` = 10 is less than one shot per example and quantum layer (1 "
            "layer(s), expected batch 20); use at least 20.")):
        set_step_shot_budget(layer, 10, expected_batch_size=20.0)
    with pytest.raises(ValueError, match="the QNode is analytic"):
        set_shot_budget(_crx_layer(shots=None), 100)
    with pytest.raises(ValueError, match=re.escape("`shots_per_example` must be a positive "
                                                   "integer or None. Found 0.")):
        set_shot_budget(layer, 0)
    with pytest.raises(ValueError, match="cannot give each of the 6 circuits a shot"):
        set_shot_budget(layer, 5)
        evaluate_layer(layer, X)
