"""The per-example gradient routes (parameter shift, adjoint): same gradients, reported route."""

import warnings

import numpy as np
import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.qnn.evaluation import evaluate_layer, gradient_route
from pennylane_qshiftdp.qnn.routes import gradient_route_setting, set_gradient_route

N = 3


def _gates(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N), rotation="Y")
    qml.RX(weights[0], wires=0)
    qml.Rot(weights[1], weights[2], weights[3], wires=1)
    qml.CRX(weights[4], wires=[0, 2])
    qml.IsingXX(weights[5], wires=[1, 2])
    qml.PhaseShift(weights[6], wires=2)
    qml.QubitUnitary(np.array([[0, 1], [1, 0]]), wires=0)  # no parameter differentiated
    qml.MultiRZ(weights[7], wires=[0, 1, 2])
    qml.CNOT([2, 0])
    qml.RY(inputs[..., 0], wires=1)  # data re-uploading
    qml.CRZ(weights[8], wires=[1, 0])


def _templates(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(N), rotation="X")
    qml.StronglyEntanglingLayers(weights[:6].reshape(2, N, 1).repeat(1, 1, 3) * 0.5
                                 + weights[6:9].reshape(1, N, 1), wires=range(N))


MEASUREMENTS = {
    "expval": lambda: qml.expval(qml.Z(0)),
    "expval_list": lambda: [qml.expval(qml.Z(0)), qml.expval(qml.X(1) @ qml.Z(2))],
    "hamiltonian": lambda: qml.expval(0.3 * qml.Z(0) + 0.7 * qml.X(1) @ qml.Y(2)),
    "hermitian": lambda: qml.expval(qml.Hermitian(np.array([[1.0, 0.5], [0.5, -0.2]]), 1)),
}


def _layer(body, measure, wires=None, device="default.qubit", shots=None):
    dev = qml.device(device, wires=wires or N)

    def circuit(inputs, weights):
        body(inputs, weights)
        return measure()

    qnode = qml.set_shots(qml.QNode(circuit, dev, interface="torch",
                                    diff_method=qs.param_shift), shots=shots)
    torch.manual_seed(0)
    return qs.qnn.TorchLayer(qnode, {"weights": (9,)}).double()


def _both_routes(layer, x, input_grad):
    set_gradient_route(layer, "auto")
    adj = evaluate_layer(layer, x, input_grad=input_grad)
    set_gradient_route(layer, "parameter_shift")
    ps = evaluate_layer(layer, x, input_grad=input_grad)
    set_gradient_route(layer, "auto")
    return adj, ps


@pytest.mark.parametrize("body", [_gates, _templates], ids=["gates", "templates"])
@pytest.mark.parametrize("measure", list(MEASUREMENTS))
@pytest.mark.parametrize("batch", [1, 4])
def test_adjoint_equals_parameter_shift(body, measure, batch):
    layer = _layer(body, MEASUREMENTS[measure])
    x = torch.rand(batch, N, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    adj, ps = _both_routes(layer, x * 3, input_grad=True)
    assert adj.route == "adjoint" and ps.route == "parameter_shift"
    torch.testing.assert_close(adj.outputs, ps.outputs, atol=1e-12, rtol=0)
    torch.testing.assert_close(adj.jacobian, ps.jacobian, atol=1e-10, rtol=0)
    for a, p in zip(adj.input_jacobians, ps.input_jacobians, strict=True):
        torch.testing.assert_close(a, p, atol=1e-12, rtol=0)
    assert adj.weight_rows == ps.weight_rows and adj.input_rows == ps.input_rows


def test_adjoint_per_example_gradients_equal_backprop_one_example_at_a_time():
    layer = _layer(_gates, MEASUREMENTS["expval_list"])
    x = torch.rand(5, N, dtype=torch.float64, generator=torch.Generator().manual_seed(1)) * 3
    ev = evaluate_layer(layer, x)
    assert ev.route == "adjoint"
    c = torch.tensor([0.3, -1.2], dtype=torch.float64)
    grads = ev.per_example_weight_grads(c.expand(5, 2))
    dev = qml.device("default.qubit", wires=N)

    def circuit(inputs, weights):
        _gates(inputs, weights)
        return MEASUREMENTS["expval_list"]()

    ref = qml.QNode(circuit, dev, interface="torch", diff_method="backprop")
    for j in range(5):
        w = layer.weights.detach().clone().requires_grad_(True)
        out = torch.stack(list(ref(x[j], w)))
        (g,) = torch.autograd.grad((c * out).sum(), w)
        torch.testing.assert_close(grads[j], g, atol=1e-10, rtol=0)


def test_non_standard_wire_labels_and_a_batch_shared_tape():
    dev = qml.device("default.qubit", wires=["a", "b"])

    def circuit(inputs, weights):
        qml.RY(weights[0], wires="b")  # no input: one unbroadcast tape shared by the batch
        qml.CNOT(["b", "a"])
        qml.RX(weights[1], wires="a")
        return qml.expval(qml.Z("a"))

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (2,)}).double()
    x = torch.zeros(3, 1, dtype=torch.float64)
    adj, ps = _both_routes(layer, x, input_grad=False)
    assert adj.route == "adjoint"
    torch.testing.assert_close(adj.jacobian, ps.jacobian, atol=1e-12, rtol=0)


@pytest.mark.parametrize("case", ["shots", "var", "probs", "mixed", "recorder"])
def test_parameter_shift_where_adjoint_does_not_apply(case):
    measure = {"var": lambda: qml.var(qml.Z(0)), "probs": lambda: qml.probs(wires=[0])}.get(
        case, MEASUREMENTS["expval"])
    device = "default.mixed" if case == "mixed" else "default.qubit"
    layer = _layer(_gates, measure, device=device, shots=100 if case == "shots" else None)
    x = torch.rand(2, N, dtype=torch.float64)
    if case == "recorder":
        layer.qnode.gradient_kwargs["recorder"] = qs.ShotRecorder()
        layer.qnode = qml.set_shots(layer.qnode, shots=100)
    assert gradient_route(layer, x) == "parameter_shift"
    assert evaluate_layer(layer, x).route == "parameter_shift"


def test_the_adjoint_route_is_refused_where_it_does_not_apply():
    layer = _layer(_gates, MEASUREMENTS["expval"], shots=100)
    assert set_gradient_route(layer, "adjoint") == [layer.qnode]
    assert gradient_route_setting(layer.qnode) == "adjoint"
    with pytest.raises(ValueError, match="gradient route 'adjoint' needs shots=None"):
        evaluate_layer(layer, torch.rand(2, N, dtype=torch.float64))
    with pytest.raises(ValueError, match="`route` must be one of"):
        set_gradient_route(layer, "backprop")


@pytest.mark.parametrize("shots,route", [(None, "adjoint"), (50, "parameter_shift")])
def test_make_private_reports_the_route_in_the_ledger(shots, route):
    layer = _layer(_gates, MEASUREMENTS["expval"], shots=shots)
    model = torch.nn.Sequential(layer)
    data = torch.utils.data.TensorDataset(torch.rand(12, N, dtype=torch.float64),
                                          torch.ones(12, dtype=torch.float64))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, opt, dl = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                          loader, target_epsilon=1.0, target_delta=1e-5,
                                          epochs=1, max_grad_norm=1.0, seed=0)
    assert opt.ledger.extra["gradient_routes"] == {"0": route}
    assert f'"gradient_routes": {{"0": "{route}"}}' in opt.ledger.statement()
    xb, yb = next(iter(dl))
    opt.zero_grad()
    pmodel(xb).sum().backward()
    opt.step()
    assert layer.evaluations.last_grad_sample.evaluation.route == route
