"""The circuits, shots and device batches of a training step, counted without running them,
against what PennyLane's device tracker counts when the step runs."""

import importlib.util
import math

import numpy as np
import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.qnn import TorchLayer
from pennylane_qshiftdp.qnn.circuit_count import counting_layers, layer_cost
from pennylane_qshiftdp.sampling import set_shot_budget, set_shot_sampling

HAS_QISKIT = importlib.util.find_spec("pennylane_qiskit") is not None


def _layer(device, *, shots=100, measure="expval", crx=True, wires=2):
    dev = qml.device(device, wires=wires)

    @qml.set_shots(shots=shots)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(wires), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(wires))
        if crx:
            qml.CRX(weights[0, 0, 0], wires=[0, 1])
        if measure == "expval":
            return qml.expval(qml.Z(0))
        if measure == "two":
            return qml.expval(qml.Z(0)), qml.expval(qml.X(1))
        if measure == "hamiltonian":
            return qml.expval(qml.dot([0.5, 0.3], [qml.Z(0), qml.X(1)]))
        return qml.probs(wires=[0])

    return TorchLayer(circuit, {"weights": (1, wires, 3)}), dev


def _measured(model, dev, batch, seed=0):
    x = torch.rand(batch, 3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    with qml.Tracker(dev) as tracker:
        model(x).sum().backward()
    return tracker.totals


def _planned(model):
    with counting_layers(model) as calls:
        model(torch.zeros(2, 3, dtype=torch.float64))
    [call] = calls
    return layer_cost(call.layer, n_inputs=call.n_inputs, input_grad=call.input_grad)


CASES = [
    ("default.qubit", "device", 100, "expval"),
    ("default.qubit", "exact_law", 100, "expval"),
    ("default.qubit", "device", 100, "two"),
    ("default.qubit", "device", 100, "hamiltonian"),
    ("default.qubit", "exact_law", 100, "probs"),
    ("default.qubit", "device", None, "probs"),  # analytic, merged (not the adjoint route)
    ("lightning.qubit", "device", 100, "expval"),
    ("lightning.qubit", "exact_law", 100, "two"),
    ("default.mixed", "device", 100, "expval"),
    ("default.mixed", "exact_law", 100, "expval"),
    ("default.mixed", "device", None, "expval"),  # analytic on a mixed-state simulator
]


@pytest.mark.parametrize("device, sampling, shots, measure, budget",
                         [(*case, budget) for case in CASES for budget in (None, 600)
                          if case[2] is not None or budget is None])  # budgets: finite shots
def test_counts_equal_the_device_tracker(device, sampling, shots, measure, budget):
    """Planned circuits, shots and batches equal the tracker's at two batch sizes (the input
    gradients of the classical layer before the TorchLayer included)."""
    layer, dev = _layer(device, shots=shots, measure=measure)
    if sampling == "exact_law":
        set_shot_sampling(layer, "exact_law")
    if budget is not None:
        set_shot_budget(layer, budget)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2).double(), layer)
    cost = _planned(model)
    assert cost.route == "parameter_shift"
    for batch in (3, 5):
        totals = _measured(model, dev, batch)
        assert cost.circuits(batch) == totals["executions"]
        assert cost.device_batches == totals["batches"]
        if sampling == "device" and shots:
            assert cost.shots(batch) == totals["shots"]
    if shots is None:
        assert cost.shots(5) == 0
    # two-term rules for the 6 rotation angles and 2 input angles, four terms for the CRX
    assert cost.shifted_circuits == 2 * (6 + 2) + 4


def test_two_term_circuits_per_example_are_one_plus_two_p_in_the_light_cone():
    """B (1 + 2 P_cone): a weight outside the readout's light cone adds no circuit."""
    dev = qml.device("default.qubit", wires=2)

    @qml.set_shots(shots=50)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RX(weights[0], wires=0)
        qml.RX(weights[1], wires=1)  # outside the light cone of Z(0)
        qml.RZ(weights[2], wires=0)
        return qml.expval(qml.Z(0))

    layer = TorchLayer(circuit, {"weights": (3,)})
    cost = layer_cost(layer, n_inputs=1)
    assert (cost.circuits_per_example, cost.fixed_circuits) == (1 + 2 * 2, 0)
    assert cost.shots_per_example == 50 * 5 and cost.shots_per_circuit == (50,) * 5
    totals = _measured(torch.nn.Sequential(torch.nn.Linear(3, 1).double(),
                                           TorchLayer(circuit, {"weights": (3,)})), dev, 4)
    # with input gradients the embedding's angle adds two more circuits per example
    assert totals["executions"] == 4 * (1 + 2 * 3)


def test_the_adjoint_route_sends_nothing_to_the_device():
    layer, dev = _layer("default.qubit", shots=None)
    model = torch.nn.Sequential(torch.nn.Linear(3, 2).double(), layer)
    cost = _planned(model)
    assert (cost.route, cost.circuits(7), cost.device_batches) == ("adjoint", 0, 0)
    assert _measured(model, dev, 7) == {}
    assert "nothing sent" in cost.execution


def test_counting_layers_runs_no_circuit_and_keeps_the_output_layout():
    layer, dev = _layer("default.qubit", measure="two")
    model = torch.nn.Sequential(torch.nn.Linear(3, 2).double(), layer)
    x = torch.zeros(4, 3, dtype=torch.float64)
    with qml.Tracker(dev) as tracker, counting_layers(model) as calls:
        planned = model(x)
    assert tracker.totals == {} and len(layer.evaluations.pending) == 0
    assert [(c.rows, c.input_grad, c.n_inputs) for c in calls] == [(4, True, 2)]
    assert planned.shape == model(x).shape and not planned.abs().sum()
    with counting_layers(layer) as calls:  # no classical layer before it: no input gradient
        layer(torch.zeros(4, 2, dtype=torch.float64))
    assert calls[0].input_grad is False


def test_an_unbroadcast_layer_counts_its_circuits_once_per_batch():
    """A circuit with no input dependence runs once for the whole batch (fixed circuits)."""
    dev = qml.device("default.qubit", wires=1)

    @qml.set_shots(shots=20)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RX(weights[0], wires=0)
        return qml.expval(qml.Z(0))

    layer = TorchLayer(circuit, {"weights": (1,)})
    cost = layer_cost(layer, n_inputs=1)
    assert (cost.circuits_per_example, cost.fixed_circuits) == (0, 3)
    with qml.Tracker(dev) as tracker:
        layer(torch.zeros(6, 1, dtype=torch.float64)).sum().backward()
    assert tracker.totals["executions"] == cost.circuits(6) == 3


def test_a_budget_splits_the_shifted_shots_by_coefficient():
    """CRX's four-term rule: the outer shifts get about 5.8 times fewer shots."""
    layer, _ = _layer("default.qubit", shots=100, crx=True)
    set_shot_budget(layer, 1000)
    cost = layer_cost(layer, n_inputs=2)
    shots = np.array(cost.shots_per_circuit[1:])
    coeffs = np.array([abs(c) for _, c in cost.shift_coefficients])
    assert cost.shots_per_circuit[0] == 100 and shots.sum() <= 1000
    np.testing.assert_array_equal(shots, np.floor(1000 * coeffs / coeffs.sum()))
    c1, c2 = (math.sqrt(2) + 1) / (4 * math.sqrt(2)), (math.sqrt(2) - 1) / (4 * math.sqrt(2))
    assert sorted({round(c, 12) for c in coeffs}) == sorted({round(c2, 12), round(c1, 12), 0.5})
    assert cost.device_batches == len(set(cost.shots_per_circuit))


@pytest.mark.skipif(not HAS_QISKIT, reason="pennylane-qiskit is not installed")
@pytest.mark.parametrize("budget", [None, 240])
def test_qiskit_aer_counts_and_one_job_per_step(budget):
    """qiskit.aer: every circuit of a step in one SamplerV2 job (the batched Qiskit route:
    under a budget too, one PUB per shot count; before it, one job per shot count)."""
    dev = qml.device("qiskit.aer", wires=1)

    @qml.set_shots(shots=50)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.Rot(weights[0], weights[1], weights[2], wires=0)
        return qml.expval(qml.Z(0))

    layer = TorchLayer(circuit, {"weights": (3,)})
    if budget is not None:
        set_shot_budget(layer, budget)
    model = torch.nn.Sequential(torch.nn.Linear(3, 1).double(), layer)
    cost = _planned(model)
    totals = _measured(model, dev, 2)
    assert (totals["executions"], totals["shots"], totals["batches"]) == (
        cost.circuits(2), cost.shots(2), cost.device_batches)
    assert totals["batches"] == totals["jobs"] == 1 and cost.batched_route
    assert totals["shots"] == 2 * (50 + 8 * (50 if budget is None else 30))
    assert totals["batch_len"] == cost.circuits(2) == 2 * (1 + 2 * 4)


@pytest.mark.skipif(importlib.util.find_spec("braket") is None
                    or importlib.util.find_spec("braket.pennylane_plugin") is None,
                    reason="amazon-braket-pennylane-plugin is not installed (not in the test "
                    "extra: it pins cloudpickle 2.2.1 against scikit-learn's joblib)")
def test_braket_local_simulator_counts_and_one_task_batch_per_step():
    dev = qml.device("braket.local.qubit", wires=1)

    @qml.set_shots(shots=40)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.Rot(weights[0], weights[1], weights[2], wires=0)
        return qml.expval(qml.Z(0))

    model = torch.nn.Sequential(torch.nn.Linear(3, 1).double(),
                                TorchLayer(circuit, {"weights": (3,)}))
    cost = _planned(model)
    totals = _measured(model, dev, 2)
    assert (totals["executions"], totals["shots"], totals["batches"]) == (
        cost.circuits(2), cost.shots(2), 1)
