"""Reusing a layer's expanded circuit between batches: the same evaluations as building it
afresh, batch after batch, and a full build wherever the structure may depend on values."""

import numpy as np
import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.qnn import _structure
from pennylane_qshiftdp.qnn._caches import layer_cache
from pennylane_qshiftdp.qnn.evaluation import evaluate_layer
from pennylane_qshiftdp.qnn.routes import set_gradient_route

N = 3


def _templates(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N), rotation="Y")
    qml.StronglyEntanglingLayers(weights.reshape(2, N, 3), wires=range(N))


def _templates_direct(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N), rotation="X")
    qml.BasicEntanglerLayers(weights, wires=range(N))


def _gates(inputs, weights):
    qml.RY(inputs[..., 0], wires=0)  # views of the leaves: selections
    qml.RX(weights[0], wires=0)
    qml.Rot(weights[1], weights[2], weights[3], wires=1)
    qml.CRX(weights[4], wires=[0, 2])
    qml.IsingXX(weights[5], wires=[1, 2])
    qml.RZ(0.25, wires=2)  # a constant
    qml.CNOT([2, 0])


def _branching(inputs, weights):
    """Python control flow on a weight's value: the structure changes with the values."""
    qml.AngleEmbedding(inputs, wires=range(N), rotation="Y")
    if float(weights[0]) > 0:
        qml.RX(weights[0], wires=0)
    else:
        qml.RY(weights[0], wires=1)
    qml.CNOT([0, 1])
    qml.RZ(weights[1], wires=1)


def _processing(inputs, weights):
    """Classical processing of the weights: not a selection."""
    qml.AngleEmbedding(inputs, wires=range(N), rotation="Y")
    qml.RX(2 * weights[0], wires=0)
    qml.RY(torch.sin(weights[1]), wires=1)
    qml.CNOT([0, 1])


class Shifted(qml.RX):
    """A user gate (not one of PennyLane's): its decomposition could depend on values."""


def _user_gate(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N), rotation="Y")
    Shifted(weights[0], wires=0)
    qml.CNOT([0, 1])


BODIES = {
    "templates": (_templates, {"weights": (2 * N * 3,)}, N),
    "basic_entangler": (_templates_direct, {"weights": (2, N)}, N),
    "gates": (_gates, {"weights": (6,)}, 1),
    "branching": (_branching, {"weights": (2,)}, N),
    "processing": (_processing, {"weights": (2,)}, N),
    "user_gate": (_user_gate, {"weights": (1,)}, N),
}


def _layer(body, shapes, shots=None, seed=None, measure=None):
    dev = qml.device("default.qubit", wires=N, seed=seed)

    def circuit(inputs, weights):
        body(inputs, weights)
        return measure() if measure else [qml.expval(qml.Z(0)), qml.expval(qml.X(1))]

    qnode = qml.set_shots(qml.QNode(circuit, dev, interface="torch",
                                    diff_method=qs.param_shift), shots=shots)
    torch.manual_seed(1)
    return qs.qnn.TorchLayer(qnode, shapes).double()


def _without_cache(monkeypatch):
    monkeypatch.setattr("pennylane_qshiftdp.qnn.evaluation.structure_key",
                        lambda *args: None)


def _batches(n_in, sizes=(5, 5, 3, 5)):
    gen = torch.Generator().manual_seed(7)
    return [torch.rand(b, n_in, dtype=torch.float64, generator=gen) * 3 for b in sizes]


def _steps(layer, batches, input_grad, flips=False):
    """Evaluate batch after batch, moving the weights between batches (a training loop)."""
    out = []
    gen = torch.Generator().manual_seed(11)
    for i, x in enumerate(batches):
        out.append(evaluate_layer(layer, x, input_grad=input_grad))
        with torch.no_grad():
            for w in layer.qnode_weights.values():
                w.add_(0.4 * torch.randn(w.shape, generator=gen, dtype=w.dtype))
                if flips:
                    w.mul_(-1.0 if i % 2 == 0 else 1.0)
    return out


def _assert_same(a, b):
    torch.testing.assert_close(a.outputs, b.outputs, atol=0, rtol=0)
    torch.testing.assert_close(a.jacobian, b.jacobian, atol=0, rtol=0)
    torch.testing.assert_close(a.weight_jacobian, b.weight_jacobian, atol=0, rtol=0)
    assert a.weight_rows == b.weight_rows and a.input_rows == b.input_rows
    assert len(a.input_jacobians) == len(b.input_jacobians)
    for u, v in zip(a.input_jacobians, b.input_jacobians, strict=True):
        torch.testing.assert_close(u, v, atol=0, rtol=0)
    assert a.route == b.route


@pytest.mark.parametrize("route", ["auto", "parameter_shift"])
@pytest.mark.parametrize("input_grad", [False, True])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_same_evaluations_as_building_afresh(name, input_grad, route, monkeypatch):
    """Batch after batch (weights moving, the batch size changing, Python control flow taking
    both branches), the evaluations equal those of building the expanded tape afresh, bit for
    bit, on the adjoint and the parameter-shift route."""
    body, shapes, n_in = BODIES[name]
    batches = _batches(n_in)
    flips = name == "branching"
    cached = _layer(body, shapes)
    set_gradient_route(cached, route)
    ours = _steps(cached, batches, input_grad, flips)
    fresh = _layer(body, shapes)
    set_gradient_route(fresh, route)
    _without_cache(monkeypatch)
    theirs = _steps(fresh, batches, input_grad, flips)
    for a, b in zip(ours, theirs, strict=True):
        _assert_same(a, b)


def test_exact_law_draws_are_unchanged(monkeypatch):
    """With finite shots (exact-law sampling, seeded device) the draws are those of a full
    build: the replayed tape is the same circuit, so the same laws and the same generator
    calls."""
    body, shapes, n_in = BODIES["templates"]
    batches = _batches(n_in)
    cached = _layer(body, shapes, shots=200, seed=3)
    qs.sampling.use_exact_law(cached)
    got = _steps(cached, batches, False)
    fresh = _layer(body, shapes, shots=200, seed=3)
    qs.sampling.use_exact_law(fresh)
    _without_cache(monkeypatch)
    expected = _steps(fresh, batches, False)
    for a, b in zip(got, expected, strict=True):
        _assert_same(a, b)


def _builds_of_three_more(layer, x, monkeypatch) -> int:
    """How many times three more evaluations build the QNode's tape in full."""
    builds = []
    real = qml.workflow.construct_batch

    def spy(*args, **kwargs):
        builds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(qml.workflow, "construct_batch", spy)
    for _ in range(3):
        evaluate_layer(layer, x)
    return len(builds)


@pytest.mark.parametrize("name,kept", [("templates", True), ("basic_entangler", True),
                                       ("gates", True), ("processing", False),
                                       ("user_gate", False)])
def test_which_structures_are_kept(name, kept, monkeypatch):
    """Selections of PennyLane's own gates and templates are kept and replayed (no further
    construction of the QNode's tape); classical processing and user gates are built afresh
    every batch."""
    body, shapes, n_in = BODIES[name]
    layer = _layer(body, shapes)
    x = _batches(n_in, (4,))[0]
    evaluate_layer(layer, x)
    structures = list(layer_cache(layer, "structures").values())
    assert any(isinstance(s, _structure.Structure) for s in structures) == kept
    assert _builds_of_three_more(layer, x, monkeypatch) == (0 if kept else 3)


def test_refused_structure_is_not_checked_again(monkeypatch):
    """A structure that fails the checks (a tracked gate parameter that is not a selection) is
    remembered as refused: later batches build once each, without the check's second build."""
    body, shapes, n_in = BODIES["templates"]
    layer = _layer(body, shapes)
    x = _batches(n_in, (4,))[0]
    monkeypatch.setattr(_structure, "_sources", lambda *args: None)
    evaluate_layer(layer, x)
    assert list(layer_cache(layer, "structures").values()) == [_structure._REFUSED]
    assert _builds_of_three_more(layer, x, monkeypatch) == 3


def test_key_misses_on_what_changes_the_tape():
    """The key changes with the shots, the batch shape, the observable and input gradients;
    a QNode with transforms of its own is never keyed."""
    body, shapes, n_in = BODIES["templates"]
    layer = _layer(body, shapes)
    qnode = layer.qnode
    x = torch.zeros(4, n_in, dtype=torch.float64, requires_grad=True)
    w = layer.qnode_weights["weights"].detach().double().requires_grad_(True)

    def key(q, xx=x, input_grad=False):
        raw = qml.tape.make_qscript(q.func, shots=q.shots)(inputs=xx, weights=w)
        return _structure.structure_key(q, raw, [xx, w], input_grad)

    base = key(qnode)
    assert base is not None
    assert key(qnode, input_grad=True) != base
    assert key(qml.set_shots(qnode, shots=10)) != base
    x5 = torch.zeros(5, n_in, dtype=torch.float64, requires_grad=True)
    assert key(qnode, xx=x5) != base
    other = _layer(body, shapes, measure=lambda: qml.expval(qml.Y(0))).qnode
    assert key(other) != key(_layer(body, shapes).qnode)
    transformed = qml.transforms.cancel_inverses(qnode)
    assert key(transformed) is None


def test_function_raising_at_the_second_point_is_built_afresh():
    """A QNode function that refuses values other than the batch's (here: any other inputs)
    makes the check at the second point fail: the evaluation still succeeds, the structure is
    refused and later batches are built in full."""
    current = {}

    def picky(inputs, weights):
        if not torch.equal(inputs.detach(), current["x"]):
            raise RuntimeError("only the batch's own inputs")
        _templates(inputs, weights)

    body, shapes, n_in = BODIES["templates"]
    layer = _layer(picky, shapes)
    x = _batches(n_in, (4,))[0]
    current["x"] = x
    ev = evaluate_layer(layer, x)
    assert list(layer_cache(layer, "structures").values()) == [_structure._REFUSED]
    reference = evaluate_layer(_layer(body, shapes), x)
    _assert_same(ev, reference)


def test_observables_whose_hashes_collide_are_told_apart():
    """PennyLane's operator hash prints the observable's data, and numpy elides long arrays:
    two 32×32 Hermitian observables differing in a middle entry hash alike. The key reads the
    data exactly, so changing the observable between batches is never replayed stale."""
    n = 5
    current = {"M": np.diag(np.arange(32.0))}

    def body(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n), rotation="Y")
        qml.BasicEntanglerLayers(weights, wires=range(n))

    dev = qml.device("default.qubit", wires=n)

    def circuit(inputs, weights):
        body(inputs, weights)
        return qml.expval(qml.Hermitian(current["M"], wires=range(n)))

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift)
    torch.manual_seed(2)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (1, n)}).double()
    x = torch.rand(3, n, dtype=torch.float64)
    evaluate_layer(layer, x)
    changed = np.diag(np.arange(32.0))
    changed[15, 15] = 100.0
    assert qml.Hermitian(changed, wires=range(n)).hash == \
        qml.Hermitian(current["M"], wires=range(n)).hash  # the collision
    current["M"] = changed
    got = evaluate_layer(layer, x)

    def reference(inputs, weights):
        body(inputs, weights)
        return qml.expval(qml.Hermitian(changed, wires=range(n)))

    ref = qml.QNode(reference, dev, interface="torch", diff_method="backprop")
    w = layer.qnode_weights["weights"].detach()
    torch.testing.assert_close(got.outputs[:, 0], ref(x, w), atol=1e-10, rtol=0)


def test_tied_weights_are_not_replayed():
    """Two weights tied to one tensor share a storage: a view of it would not say which weight
    a gate reads, so the structure is built afresh and each weight gets its own gradient."""
    dev = qml.device("default.qubit", wires=1)

    def circuit(inputs, a, b):
        qml.RY(inputs[..., 0], wires=0)
        if float(inputs[0, 0]) > 0.5:
            qml.RX(a[0], wires=0)
        else:
            qml.RX(b[0], wires=0)
        return qml.expval(qml.Z(0))

    tied = torch.tensor([0.7], dtype=torch.float64)
    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift)
    layer = qs.qnn.TorchLayer(qnode, {"a": (1,), "b": (1,)},
                              init_method={"a": tied, "b": tied}).double()
    assert layer.qnode_weights["a"].data_ptr() == layer.qnode_weights["b"].data_ptr()
    evaluate_layer(layer, torch.tensor([[0.9]], dtype=torch.float64))  # the branch on a
    x = torch.tensor([[0.1]], dtype=torch.float64)  # the branch on b
    grads = evaluate_layer(layer, x).per_example_weight_grads(torch.ones(1, 1))
    expected = -np.sin(0.7) * np.cos(0.1)  # d/db cos(0.1) cos(b) at b = 0.7
    np.testing.assert_allclose(grads.numpy(), [[0.0, expected]], atol=1e-12)
    assert not any(isinstance(s, _structure.Structure)
                   for s in layer_cache(layer, "structures").values())


def test_sparse_hamiltonian_is_refused_with_what_to_use():
    dev = qml.device("default.qubit", wires=2)
    sparse = qml.SparseHamiltonian(qml.Hamiltonian([1.0], [qml.Z(0) @ qml.Z(1)]).sparse_matrix(),
                                   wires=[0, 1])

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.RX(weights[0], wires=0)
        return qml.expval(sparse)

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (1,)}).double()
    with pytest.raises(NotImplementedError, match="SparseHamiltonian.*qml.Hermitian"):
        evaluate_layer(layer, torch.rand(2, 2, dtype=torch.float64))
