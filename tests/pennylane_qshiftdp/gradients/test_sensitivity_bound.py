"""Tests for pennylane_qshiftdp.sensitivity: hand-checked values and a randomized bound check."""

import math
import re

import numpy as np
import pennylane as qml
import pytest
import torch
from pennylane import numpy as pnp

import pennylane_qshiftdp as qs
from pennylane_qshiftdp import losses
from pennylane_qshiftdp.gradients.sensitivity_bound import sensitivity

DEV = qml.device("default.qubit", wires=3)


def w(*vals):
    return pnp.array(vals, requires_grad=True)


@qml.qnode(DEV)
def basic(x):
    qml.RX(x[0], 0)
    qml.RY(x[1], 1)
    qml.CNOT([0, 1])
    return qml.expval(qml.Z(1))


def test_basic_circuit_linear_loss_is_sqrt2():
    s = sensitivity(basic, w(0.1, 0.2))
    assert s.delta == pytest.approx(math.sqrt(2), abs=1e-12)
    np.testing.assert_allclose(s.weight_bounds, [[1.0, 1.0]])
    assert s.adjacency == "add_remove" and s.loss_grad_bounds == (1.0, 1.0)


def test_mse_with_unit_targets_multiplies_by_four():
    s = sensitivity(basic, w(0.1, 0.2), loss=losses.MSELoss(target_bound=1.0))
    assert s.delta == pytest.approx(4 * math.sqrt(2), abs=1e-12)


def test_replace_one_doubles_delta():
    s = sensitivity(basic, w(0.1, 0.2), adjacency="replace_one")
    assert s.delta == pytest.approx(2 * math.sqrt(2)) and s.delta_per_example == pytest.approx(
        math.sqrt(2))


def test_shared_weight_scaled_weight_and_light_cone():
    @qml.qnode(DEV)
    def circuit(x):
        qml.RX(x[0], 0)
        qml.RX(x[0], 0)  # shared: bound 2
        qml.RY(0.7 * x[1], 1)  # scaled: bound 0.7
        qml.RZ(x[2], 2)  # outside the light cone of Z(1): bound 0
        qml.CNOT([0, 1])
        return qml.expval(qml.Z(1))

    s = sensitivity(circuit, w(0.1, 0.2, 0.3))
    np.testing.assert_allclose(s.weight_bounds, [[2.0, 0.7, 0.0]], atol=1e-12)
    assert s.delta == pytest.approx(math.sqrt(4 + 0.49), abs=1e-12)


def test_multi_term_rule_crx():
    @qml.qnode(DEV)
    def circuit(x):
        qml.Hadamard(0)
        qml.CRX(x[0], [0, 1])
        return qml.expval(qml.X(0))

    s = sensitivity(circuit, w(0.5))
    # four-term rule: coefficients ±(√2+1)/(4√2), ±(√2−1)/(4√2); ‖c‖₁ = 1.
    np.testing.assert_allclose(s.weight_bounds, [[1.0]], atol=1e-12)


def test_two_measurements_and_hamiltonian_range():
    @qml.qnode(DEV)
    def circuit(x):
        qml.RX(x[0], 0)
        qml.RY(x[1], 1)
        return qml.expval(qml.Z(0)), qml.expval(0.5 * qml.X(1) + 0.25 * qml.Z(1))

    s = sensitivity(circuit, w(0.1, 0.2))
    np.testing.assert_allclose(s.measurement_bounds, [1.0, 0.75])
    assert s.observable_ranges == ((-1.0, 1.0), (-0.75, 0.75))
    # LinearLoss over M=2: L1 ≤ 1, L2 ≤ 1/√2 -> min(1·1, (1/√2)·√(1+0.5625))
    assert s.delta == pytest.approx(min(1.0, math.sqrt(1.5625 / 2)))


def test_torch_layer_style_kwargs_and_strongly_entangling():
    @qml.qnode(DEV)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3))
        qml.StronglyEntanglingLayers(weights, wires=range(3))
        return qml.expval(qml.Z(0))

    s = sensitivity(circuit, inputs=torch.rand(3),
                    weights=torch.rand(2, 3, 3, requires_grad=True))
    assert s.weight_shapes == ((2, 3, 3),) and s.weight_names == ("weights",)
    assert s.delta == pytest.approx(math.sqrt(18))


def test_data_dependent_jacobian_refused_then_bounded():
    @qml.qnode(DEV)
    def circuit(x, weights):
        qml.RX(weights[0] * x[0], 0)
        return qml.expval(qml.Z(0))

    x = pnp.array([0.3], requires_grad=False)
    with pytest.raises(qs.SensitivityError, match="depends on the input data"):
        sensitivity(circuit, x, w(0.1))
    s = sensitivity(circuit, x, w(0.1), jacobian_bound=math.pi)
    np.testing.assert_allclose(s.weight_bounds, [[math.pi]])


def test_weight_dependent_jacobian_refused():
    @qml.qnode(DEV)
    def circuit(weights):
        qml.RX(weights[0] ** 2, 0)
        return qml.expval(qml.Z(0))

    with pytest.raises(qs.SensitivityError, match="depends on the weights"):
        sensitivity(circuit, w(0.4))


def test_bad_arguments():
    with pytest.raises(ValueError, match=re.escape("`adjacency` must be one of")):
        sensitivity(basic, w(0.1, 0.2), adjacency="swap")
    with pytest.raises(ValueError, match="No trainable argument"):
        sensitivity(basic, pnp.array([0.1, 0.2], requires_grad=False))
    with pytest.raises(TypeError, match="BoundedLoss"):
        sensitivity(basic, w(0.1, 0.2), loss=torch.nn.MSELoss())


def test_randomized_shot_gradients_never_exceed_delta():
    """Per-example gradients estimated from few shots stay within Δ (and the per-weight B_k)."""

    def f(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.RY(weights[0], 0)
        qml.CRX(weights[1], [0, 1])
        qml.RX(weights[1], 1)
        qml.IsingXX(0.5 * weights[2], [0, 1])
        return qml.expval(qml.Z(0) @ qml.Z(1)), qml.expval(qml.X(1))

    dev = qml.device("default.qubit", wires=2, seed=2024)
    qn = qml.set_shots(qml.QNode(f, dev, diff_method=qs.param_shift), shots=5)
    rng = np.random.default_rng(0)
    weights = pnp.array(rng.uniform(-np.pi, np.pi, 3), requires_grad=True)
    inputs = pnp.array(rng.uniform(0, np.pi, 2), requires_grad=False)
    loss = losses.MSELoss(target_bound=1.0)
    s = sensitivity(qn, inputs, weights, loss=loss)
    worst = 0.0
    for _ in range(60):
        weights = pnp.array(rng.uniform(-np.pi, np.pi, 3), requires_grad=True)
        inputs = pnp.array(rng.uniform(0, np.pi, 2), requires_grad=False)
        jac = np.asarray(qml.jacobian(lambda v, x=inputs: qml.math.stack(qn(x, v)))(weights))
        assert np.all(np.abs(jac) <= s.weight_bounds + 1e-12)
        out = np.asarray(qml.math.stack(qn(inputs, weights)))
        y = rng.choice([-1.0, 1.0], size=2)
        a = 2 * (out - y) / 2  # ∂ℓ/∂f for MSE over M=2 outputs
        g = a @ jac
        worst = max(worst, np.linalg.norm(g) / s.delta)
    assert worst <= 1.0
