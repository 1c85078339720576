"""The clip norm from public information: closed forms, brute force, and the job."""

import math

import numpy as np
import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.app.models import make_qnode
from pennylane_qshiftdp.optimizers.public_clip import domain_gradient_bound


def _one_qubit_layer(theta):
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], 0)
        qml.RY(weights[0], 0)
        return qml.expval(qml.Z(0))

    qnode = qml.QNode(circuit, qml.device("default.qubit"), interface="torch",
                      diff_method=qs.param_shift)
    layer = qml.qnn.TorchLayer(qnode, {"weights": (1,)})
    with torch.no_grad():
        layer.weights.fill_(theta)
    return layer


@pytest.mark.parametrize("theta", [0.0, 0.3, 1.2])
def test_closed_form_one_qubit(theta):
    """f = cos(x + θ): |∂f/∂θ| = |sin(x + θ)|, sup over x ∈ [0, a] in closed form."""
    a = 1.0
    layer = _one_qubit_layer(theta)
    got = domain_gradient_bound(layer, input_range=(0.0, a), n_inputs=1,
                                loss_grad_bounds=(1.0, 1.0), samples=512)
    exact = (1.0 if theta <= math.pi / 2 <= a + theta
             else max(abs(math.sin(theta)), abs(math.sin(a + theta))))
    assert got <= exact + 1e-6  # a sampled maximum never exceeds the supremum (float32 θ)
    assert got >= exact - 1e-3  # 512 points, the endpoints and the centre come close
    half = domain_gradient_bound(layer, input_range=(0.0, a), n_inputs=1,
                                 loss_grad_bounds=(0.5, 0.5), samples=512)
    assert half == pytest.approx(got / 2)


def test_never_above_the_certified_bound_and_matches_brute_force():
    layer = qml.qnn.TorchLayer(make_qnode(2, 1, device="default.qubit", shots=None),
                               {"weights": (1, 2, 3)})
    got = domain_gradient_bound(layer, input_range=(0.0, math.pi), n_inputs=2,
                                loss_grad_bounds=(1.0, 1.0), samples=64, seed=1)
    assert got <= math.sqrt(6) + 1e-12  # Δ for 6 weights with ⟨Z0⟩ and |∂ℓ/∂f| ≤ 1
    # brute force with PennyLane's own param_shift on a grid
    ref_qnode = qml.QNode(layer.qnode.func, qml.device("default.qubit"), interface="torch",
                          diff_method="parameter-shift")
    w = layer.weights.detach().double()
    best = 0.0
    for x0 in np.linspace(0, math.pi, 9):
        for x1 in np.linspace(0, math.pi, 9):
            ww = w.clone().requires_grad_(True)
            (g,) = torch.autograd.grad(ref_qnode(torch.tensor([x0, x1]), ww), ww)
            best = max(best, float(g.norm()))
    assert got >= best - 0.05 and got <= best + 0.3


def test_bad_input():
    layer = _one_qubit_layer(0.0)
    with pytest.raises(ValueError, match="`input_range` must be"):
        domain_gradient_bound(layer, input_range=(1.0, 0.0), n_inputs=1,
                              loss_grad_bounds=(1.0, 1.0))


def test_public_clip_through_make_private():
    layer = qml.qnn.TorchLayer(make_qnode(2, 1, device="default.qubit", shots=None),
                               {"weights": (1, 2, 3)})
    g = torch.Generator().manual_seed(0)
    x = torch.rand(16, 2, generator=g, dtype=torch.float64) * math.pi
    y = torch.where(x[:, 0] > 1.5, 1.0, -1.0).double()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=4)
    with pytest.raises(ValueError, match="needs `input_range"):
        qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1), loader,
                        target_epsilon=1.0, target_delta=1e-5, epochs=1,
                        max_grad_norm="public")
    layer = qml.qnn.TorchLayer(make_qnode(2, 1, device="default.qubit", shots=None),
                               {"weights": (1, 2, 3)})
    model, opt, dl = qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1), loader,
                                     target_epsilon=1.0, target_delta=1e-5, epochs=2, seed=0,
                                     max_grad_norm="public", input_range=(0.0, math.pi))
    assert 0 < opt.max_grad_norm <= math.sqrt(6)
    for _ in range(2):
        for xb, yb in dl:
            opt.zero_grad()
            if len(xb):
                (-model(xb) * yb).mean().backward()
            opt.step()
    clips = [r["clip_norm"] for r in opt.history]
    assert len(set(clips[:4])) == 1  # refreshed once per epoch (4 steps)
    assert all(c <= math.sqrt(6) for c in clips)
    assert ("largest analytic per-example gradient norm found at sampled points of the input "
            "domain") in opt.ledger.statement()


def test_one_output_on_default_mixed_matches_per_point_gradients():
    """default.mixed with a depolarizing channel takes the broadcast-weights Jacobian (the direct
    vectorised one took 99 s for the training job): the bound is the largest per-point gradient
    norm, computed here point by point with plain autograd."""
    from pennylane_qshiftdp.optimizers.public_clip import _points

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        qml.DepolarizingChannel(0.1, wires=0)
        return qml.expval(qml.Z(0))

    qnode = qml.QNode(circuit, qml.device("default.mixed", wires=2), interface="torch",
                      diff_method=qs.param_shift)
    layer = qml.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)})
    with torch.no_grad():
        layer.weights.copy_(torch.linspace(-1.0, 1.2, 6).reshape(1, 2, 3))
    got = domain_gradient_bound(layer, input_range=(0.0, math.pi), n_inputs=2,
                                loss_grad_bounds=(1.0, 1.0), samples=5, seed=3)
    ref = qml.QNode(circuit, qml.device("default.mixed", wires=2), interface="torch",
                    diff_method="backprop")
    norms = []
    for x in _points(2, 0.0, math.pi, 5, 3):
        w = layer.weights.detach().double().clone().requires_grad_(True)
        (g,) = torch.autograd.grad(ref(x, w), w)
        norms.append(float(g.norm()))
    assert got == pytest.approx(max(norms), rel=1e-10)
    assert max(norms) > 0.1  # not a trivially zero gradient
