"""Issue 32: state a layer keeps between calls never gives another batch's, a stale or a wrong
result. One regression test per failure class found from outside (each failed before the fix):

1. another batch's evaluation used for this batch (non-contiguous inputs, allocator reuse) and
   the crash in backward of a circuit the structure cache declines;
2. a stale observable (operator hashes elide arrays of more than 1000 entries);
3. a stale output layout after ``layer.qnode`` is swapped;
4. ``qml.probs()`` of every device wire with an idle wire;
5. what parameter shift cannot differentiate: complex parameters (silently 0), ``qml.evolve``
   of a sum (IndexError), ``ctrl(PauliRot)`` on the parameter-shift route (TypeError).

References are independent: PennyLane's own layer and per-example backprop.
"""

import re

import numpy as np
import pennylane as qml
import pytest
import torch
from opacus import GradSampleModule

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.qnn import TorchLayer
from pennylane_qshiftdp.qnn.evaluation import PendingEvaluations, gradient_route
from pennylane_qshiftdp.qnn.routes import set_gradient_route

ATOL = 1e-10


def _backprop_grads(func, dev, weights: dict, x, coef):
    """Per example j, the gradient of Σ coef[j] · f(x[j]) with respect to each weight, by
    backprop on a QNode of the same function (one example at a time)."""
    qnode = qml.QNode(func, dev, diff_method="backprop", interface="torch")
    out = {k: [] for k in weights}
    for j in range(x.shape[0]):
        w = {k: v.detach().clone().requires_grad_(True) for k, v in weights.items()}
        res = qnode(x[j], **w)
        res = torch.stack(list(res), dim=-1) if isinstance(res, (list, tuple)) else res
        loss = (res.reshape(coef[j].shape) * coef[j]).sum()
        grads = torch.autograd.grad(loss, list(w.values()), allow_unused=True)
        for k, g in zip(w, grads, strict=True):
            out[k].append(torch.zeros_like(w[k]) if g is None else g)
    return {k: torch.stack(v) for k, v in out.items()}


# ------------------------------------------------------------------ 1. another batch's evaluation
def _patch_circuit(kind):
    def circuit(inputs, weights):
        if kind == "declined":  # classical processing: the structure cache declines it
            for i in range(4):
                qml.RY(2 * inputs[..., i], wires=i)
        else:
            qml.AngleEmbedding(inputs, wires=range(4), rotation="Y")
        qml.BasicEntanglerLayers(weights, wires=range(4))
        return [qml.expval(qml.Z(i)) for i in range(4)]
    return circuit


def _layouts(rng, batch):
    """Quanvolution patches (unfold + permute: non-contiguous, copied by every reshape), an
    ``expand`` (stride 0) and a slice of a larger tensor, each of a fresh allocation."""
    img = torch.as_tensor(rng.random((batch, 1, 4, 4)))
    yield torch.nn.functional.unfold(img, 2, stride=2).permute(0, 2, 1)  # (B, 4, 4)
    base = torch.as_tensor(rng.random((batch, 4)))
    yield base[:, None, :].expand(batch, 3, 4)
    big = torch.as_tensor(rng.random((batch, 3, 9)))
    yield big[:, :, 2:6]


@pytest.mark.parametrize("kind", ["replayed", "declined"])
@pytest.mark.parametrize("route", ["auto", "parameter_shift"])
def test_non_contiguous_inputs_use_their_own_evaluation(kind, route):
    """Every step's per-example gradients equal backprop one example at a time, 30 steps of
    non-contiguous inputs; before the fix 4 of 40 steps took another batch's evaluation
    (error 3.59) and the declined circuit crashed in backward."""
    dev = qml.device("default.qubit", wires=4)
    func = _patch_circuit(kind)
    torch.manual_seed(0)
    layer = TorchLayer(qml.QNode(func, dev, diff_method=qs.param_shift),
                       {"weights": (1, 4)}).double()
    set_gradient_route(layer, route)
    model = GradSampleModule(layer, loss_reduction="sum")
    rng = np.random.default_rng(1)
    for step in range(10):
        for x in _layouts(rng, int(rng.integers(1, 4))):
            coef = torch.as_tensor(rng.standard_normal((*x.shape[:-1], 4)))
            (model(x) * coef).sum().backward()
            got = layer.weights.grad_sample
            layer.weights.grad_sample, layer.weights.grad = None, None
            ref = _backprop_grads(func, dev, {"weights": layer.weights}, x, coef)["weights"]
            assert torch.allclose(got, ref, atol=ATOL, rtol=0), (step, (got - ref).abs().max())
            del x
    assert layer.evaluations.pending == []  # every evaluation was taken by its own backward


def test_pending_evaluation_is_matched_by_content_not_address():
    """A pending evaluation is returned only for byte-identical input rows and weights; an
    unknown forward pass raises instead of being evaluated again (or taking another's)."""
    stack = PendingEvaluations(max_pending=2)
    w = (torch.ones(3, dtype=torch.float64),)
    a = torch.zeros(2, 3, dtype=torch.float64)
    b = a.clone()
    b[1, 2] = 1e-300  # one bit pattern apart
    stack.push("eval-a", a, w)
    stack.push("eval-b", b, w)
    assert stack.pop(a.clone(), w) == "eval-a"  # an older entry, by content
    with pytest.raises(RuntimeError, match="does not hold"):
        stack.pop(b, (torch.zeros(3, dtype=torch.float64),))  # other weights
    nan = torch.full((1, 3), float("nan"), dtype=torch.float64)
    stack.push("eval-nan", nan, w)
    assert stack.pop(nan.clone(), w) == "eval-nan"  # NaN rows equal themselves bytewise
    stack.push("c", a, w)
    stack.push("d", a, w)
    stack.push("e", b, w)
    assert [e.evaluation for e in stack.pending] == ["d", "e"]  # at most max_pending kept


# ------------------------------------------------------------------ 2. stale observable
def _hermitian(seed, n=32):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return (a + a.conj().T) / 2


@pytest.mark.parametrize("measure", ["var", "expval"])
def test_changed_observable_is_not_served_stale(measure):
    """Two 5-qubit Hermitian observables with the same operator hash (numpy elides the
    interior of a 32 x 32 matrix when printing) but one different entry: after the QNode's
    observable changes, outputs and gradients are those of the new one (before the fix off
    by 2.4e-2 on the parameter-shift route)."""
    h1 = _hermitian(1)
    h2 = h1.copy()
    h2[10, 12] += 0.5
    h2[12, 10] += 0.5
    mp = getattr(qml, measure)
    assert mp(qml.Hermitian(h1, wires=range(5))).hash == mp(qml.Hermitian(h2, wires=range(5))).hash
    obs = {"H": h1}
    dev = qml.device("default.qubit", wires=5)

    def func(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(5), rotation="Y")
        qml.BasicEntanglerLayers(weights, wires=range(5))
        return mp(qml.Hermitian(obs["H"], wires=range(5)))

    torch.manual_seed(0)
    layer = TorchLayer(qml.QNode(func, dev, diff_method=qs.param_shift),
                       {"weights": (1, 5)}).double()
    set_gradient_route(layer, "parameter_shift")
    model = GradSampleModule(layer, loss_reduction="sum")
    x = torch.rand(3, 5, dtype=torch.float64)
    for h in (h1, h2, h1):
        obs["H"] = h
        coef = torch.arange(1.0, 4.0, dtype=torch.float64)
        out = model(x)
        (out * coef).sum().backward()
        got = layer.weights.grad_sample
        layer.weights.grad_sample, layer.weights.grad = None, None
        bp = qml.QNode(func, dev, diff_method="backprop", interface="torch")
        ref_out = torch.stack([bp(x[j], layer.weights.detach()) for j in range(3)])
        assert torch.allclose(out.detach(), ref_out, atol=ATOL, rtol=0)
        ref = _backprop_grads(func, dev, {"weights": layer.weights}, x, coef[:, None])
        assert torch.allclose(got, ref["weights"], atol=ATOL, rtol=0)


# ------------------------------------------------------------------ 3. stale output layout
def _two_outputs(as_tuple):
    def func(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.BasicEntanglerLayers(weights, wires=range(2))
        ms = [qml.expval(qml.Z(0)), qml.expval(qml.Z(1))]
        return tuple(ms) if as_tuple else ms
    return func


def test_swapped_qnode_gives_pennylanes_layout():
    """After ``layer.qnode`` is swapped from a list return to a tuple return (and back), the
    layer gives PennyLane's layout and values in training and evaluation (before the fix it
    kept ``(B, 2)`` where PennyLane gives ``(2, B, 1)``)."""
    dev = qml.device("default.qubit", wires=2)
    torch.manual_seed(0)
    layer = TorchLayer(qml.QNode(_two_outputs(False), dev, diff_method=qs.param_shift),
                       {"weights": (1, 2)}).double()
    x = torch.rand(4, 2, dtype=torch.float64)
    for as_tuple in (False, True, False):
        func = _two_outputs(as_tuple)
        layer.qnode = qml.QNode(func, dev, diff_method=qs.param_shift)
        ref = qml.qnn.TorchLayer(qml.QNode(func, dev, diff_method="parameter-shift"),
                                 {"weights": (1, 2)}).double()
        ref.load_state_dict(layer.state_dict())
        expected = ref(x)
        got = layer(x)
        with torch.no_grad():
            got_eval = layer(x)
        assert got.shape == expected.shape == got_eval.shape
        assert torch.allclose(got, expected, atol=ATOL)
        assert torch.allclose(got_eval, expected, atol=ATOL)


def test_swapped_qnode_reaches_the_grad_sampler():
    """The grad sampler reads the layout of the forward pass it differentiates: per-example
    gradients after a swap to a tuple return equal backprop (before the fix a loss written
    for PennyLane's layout paired examples with other examples' rows: error 1.77)."""
    dev = qml.device("default.qubit", wires=2)
    torch.manual_seed(0)
    layer = TorchLayer(qml.QNode(_two_outputs(False), dev, diff_method=qs.param_shift),
                       {"weights": (1, 2)}).double()
    model = GradSampleModule(layer, loss_reduction="sum")
    x = torch.rand(3, 2, dtype=torch.float64)
    model(x).sum().backward()  # a step with the list layout
    layer.weights.grad_sample, layer.weights.grad = None, None
    layer.qnode = qml.QNode(_two_outputs(True), dev, diff_method=qs.param_shift)
    out = model(x)
    assert out.shape == (2, 3, 1)  # PennyLane's (n_parts, B, 1) for a tuple of expvals
    coef = torch.as_tensor(np.random.default_rng(0).standard_normal((2, 3, 1)))
    (out * coef).sum().backward()
    ref = _backprop_grads(_two_outputs(True), dev, {"weights": layer.weights}, x,
                          coef[:, :, 0].T)
    assert torch.allclose(layer.weights.grad_sample, ref["weights"], atol=ATOL, rtol=0)


# ------------------------------------------------------------------ 4. probs with an idle wire
@pytest.mark.parametrize("route", ["auto", "parameter_shift"])
def test_probs_of_every_device_wire_with_an_idle_wire(route):
    """``qml.probs()`` on a 3-wire device whose third wire no gate touches: 8 columns in
    training, evaluation and PennyLane (before the fix training gave 4)."""
    dev = qml.device("default.qubit", wires=3)

    def func(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.BasicEntanglerLayers(weights, wires=range(2))
        return qml.probs()

    torch.manual_seed(0)
    layer = TorchLayer(qml.QNode(func, dev, diff_method=qs.param_shift),
                       {"weights": (1, 2)}).double()
    set_gradient_route(layer, route)
    ref = qml.qnn.TorchLayer(qml.QNode(func, dev, diff_method="parameter-shift"),
                             {"weights": (1, 2)}).double()
    ref.load_state_dict(layer.state_dict())
    x = torch.rand(4, 2, dtype=torch.float64)
    train = layer(x)
    with torch.no_grad():
        evaluation = layer(x)
    assert train.shape == evaluation.shape == ref(x).shape == (4, 8)
    assert torch.allclose(train, ref(x), atol=ATOL)
    assert torch.allclose(evaluation, ref(x), atol=ATOL)
    model = GradSampleModule(layer, loss_reduction="sum")
    coef = torch.as_tensor(np.random.default_rng(2).standard_normal((4, 8)))
    (model(x) * coef).sum().backward()
    grads = _backprop_grads(func, dev, {"weights": layer.weights}, x, coef)
    assert torch.allclose(layer.weights.grad_sample, grads["weights"], atol=ATOL, rtol=0)


# ------------------------------------------------------------------ 5. not differentiable
def _complex_weight(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.exp(qml.X(0) @ qml.X(1), 1j * weights[0])
    return qml.expval(qml.Z(0))


def _evolve_sum(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.evolve(qml.X(0) @ qml.X(1) + 0.5 * qml.Z(1), weights[0])
    return qml.expval(qml.Z(0))


def _ctrl_pauli_rot(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.Hadamard(0)
    qml.ctrl(qml.PauliRot(weights[0], "XY", wires=[1, 2]), control=0)
    return qml.expval(qml.Z(1))


@pytest.mark.parametrize("func, route, message", [
    (_complex_weight, "auto", "`Exp` on wires [0, 1] is complex"),
    (_complex_weight, "parameter_shift", "`Exp` on wires [0, 1] is complex"),
    (_evolve_sum, "auto", "cannot rebind the parameters of `Evolution`"),
    (_evolve_sum, "parameter_shift", "cannot rebind the parameters of `Evolution`"),
    (_ctrl_pauli_rot, "parameter_shift", "param_shift cannot differentiate `C(PauliRot)`"),
])
def test_what_parameter_shift_cannot_differentiate_is_refused_before_training(
        func, route, message):
    """Refused by make_private's route probe (before any batch), naming the operation; before
    the fix the complex weight's gradient was silently 0 (backprop: up to 0.68) and the other
    two crashed inside PennyLane (IndexError, TypeError)."""
    dev = qml.device("default.qubit", wires=3)
    layer = TorchLayer(qml.QNode(func, dev, diff_method=qs.param_shift),
                       {"weights": (1,)}).double()
    set_gradient_route(layer, route)
    with pytest.raises(NotImplementedError, match=re.escape(message)):
        gradient_route(layer, torch.zeros(1, 2, dtype=torch.float64))
    data = torch.utils.data.TensorDataset(torch.rand(8, 2, dtype=torch.float64),
                                          torch.ones(8, dtype=torch.float64))
    loader = torch.utils.data.DataLoader(data, batch_size=2)
    with pytest.raises(NotImplementedError, match=re.escape(message)):
        qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1), loader,
                        target_epsilon=1.0, target_delta=1e-5, epochs=1, max_grad_norm=1.0)


def test_ctrl_pauli_rot_on_the_adjoint_route_matches_backprop():
    """What the adjoint route can differentiate (analytic, generator known) is not refused:
    ``ctrl(PauliRot)`` there equals backprop."""
    dev = qml.device("default.qubit", wires=3)
    torch.manual_seed(0)
    layer = TorchLayer(qml.QNode(_ctrl_pauli_rot, dev, diff_method=qs.param_shift),
                       {"weights": (1,)}).double()
    model = GradSampleModule(layer, loss_reduction="sum")
    x = torch.rand(3, 2, dtype=torch.float64)
    coef = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    (model(x) * coef).sum().backward()
    ref = _backprop_grads(_ctrl_pauli_rot, dev, {"weights": layer.weights}, x, coef[:, None])
    assert torch.allclose(layer.weights.grad_sample, ref["weights"], atol=ATOL, rtol=0)


def test_custom_gradient_options_are_refused_not_ignored():
    """The per-example evaluation applies PennyLane's default rules: a QNode asking for
    custom shifts is refused rather than differentiated with other rules than asked."""
    dev = qml.device("default.qubit", wires=2)
    qnode = qml.QNode(_two_outputs(False), dev, diff_method=qs.param_shift,
                      gradient_kwargs={"shifts": [(np.pi / 4,)]})
    layer = TorchLayer(qnode, {"weights": (1, 2)}).double()
    with pytest.raises(NotImplementedError, match=re.escape("gradient option(s) ['shifts']")):
        layer(torch.zeros(2, 2, dtype=torch.float64))
