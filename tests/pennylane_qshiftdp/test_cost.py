"""The cost of private training, planned before the run and measured during it."""

import importlib.util
import math
import re
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.cost import COST_KEYS, CostMeter, estimate_cost, plan_layers
from pennylane_qshiftdp.qnn import TorchLayer
from pennylane_qshiftdp.sampling import use_exact_law

HAS_QISKIT = importlib.util.find_spec("pennylane_qiskit") is not None


def _model(device="default.qubit", shots=100, seed=3, wires=2, layers=1):
    dev = qml.device(device, wires=wires, seed=seed) if device in (
        "default.qubit", "lightning.qubit", "default.mixed") else qml.device(device, wires=wires)

    @qml.set_shots(shots=shots)
    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(wires), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(wires))
        return qml.expval(qml.Z(0))

    return torch.nn.Sequential(TorchLayer(circuit, {"weights": (layers, wires, 3)})), dev


def _loader(n=90, batch=10, features=2):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, features, generator=g, dtype=torch.float64) * math.pi
    y = torch.where(torch.rand(n, generator=g) > 0.5, 1.0, -1.0).double()
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)


def test_estimate_closed_form():
    """qN (1 + 2P) circuits and Ns times as many shots per step, ⌈E/q⌉ steps."""
    model, _ = _model(layers=2)
    est = estimate_cost(model, _loader(n=90, batch=20), epochs=3)
    q = 1 / math.ceil(90 / 20)  # Opacus's rate for a loader of 5 batches
    p = 2 * 2 * 3
    assert est.sample_rate == q and est.expected_batch_size == pytest.approx(90 * q)
    assert est.steps == 15
    assert est.circuits_per_step == pytest.approx(90 * q * (1 + 2 * p))
    assert est.shots_per_step == pytest.approx(100 * est.circuits_per_step)
    assert est.device_batches_per_step == 1
    assert est.total_circuits == pytest.approx(15 * est.circuits_per_step)
    assert est.total_shots == pytest.approx(15 * est.shots_per_step)
    assert list(est.as_dict()) == list(COST_KEYS)
    assert est.seconds_per_step is None and est.total_seconds is None
    [plan] = est.layers
    assert (plan.name, plan.input_grad, plan.cost.route) == ("0", False, "parameter_shift")


def test_estimate_of_a_hybrid_model_counts_the_input_gradient_circuits():
    layer_model, _ = _model()

    class Hybrid(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Linear(3, 2).double()
            self.quantum = layer_model[0]

        def forward(self, x):
            return self.quantum(math.pi * torch.sigmoid(self.pre(x)))

    est = estimate_cost(Hybrid(), _loader(features=3), epochs=1)
    [plan] = est.layers
    assert (plan.name, plan.input_grad) == ("quantum", True)
    assert est.circuits_per_step == pytest.approx(10 * (1 + 2 * (6 + 2)))


def test_the_probe_times_a_step_and_leaves_no_trace():
    model, dev = _model()
    use_exact_law(model)
    loader = _loader()
    state = dev._rng.bit_generator.state
    est = estimate_cost(model, loader, epochs=2, probe=True)
    assert est.seconds_per_step > 0 and est.total_seconds == pytest.approx(
        est.steps * est.seconds_per_step)
    assert dev._rng.bit_generator.state == state  # no seeded draw consumed
    assert all(p.grad is None for p in model.parameters())
    assert model.training and len(model[0].evaluations.pending) == 0


def test_estimate_refuses_a_model_without_quantum_layer():
    with pytest.raises(ValueError, match="calls no pennylane_qshiftdp TorchLayer"):
        estimate_cost(torch.nn.Linear(2, 1).double(), _loader(), epochs=1)


@pytest.mark.parametrize("exact", [False, True])
def test_measured_steps_are_the_plan_per_example_times_the_realised_batch(exact):
    """Through make_private's Poisson loader: every step's circuits and shots are the layer's
    per-example cost times that step's batch size (an empty batch sends nothing), and the
    plan's per-step value is the same cost times the expected batch."""
    model, _ = _model()
    if exact:
        use_exact_law(model)
    loader = _loader(n=60, batch=10)
    est = estimate_cost(model, loader, epochs=1)
    meter = CostMeter(model, est.layers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, opt, ploader = qs.make_private(
            model, torch.optim.SGD(model.parameters(), lr=0.1), loader, target_epsilon=2.0,
            target_delta=1e-5, epochs=1, loss=qs.losses.LinearLoss(), seed=1)
    sizes = []
    for xb, yb in ploader:
        with meter.step():
            opt.zero_grad()
            if len(xb):
                (-(pmodel(xb) * yb)).mean().backward()
            opt.step()
        sizes.append(len(xb))
    per_example = est.layers[0].cost
    assert [r["circuits"] for r in meter.records] == [per_example.circuits_per_example * b
                                                      for b in sizes]
    assert [r["shots"] for r in meter.records] == [100 * r["circuits"] for r in meter.records]
    assert [r["device_batches"] for r in meter.records] == [int(b > 0) for b in sizes]
    summary = meter.summary()
    assert list(summary) == list(COST_KEYS) and summary["steps"] == len(sizes) == est.steps
    assert summary["circuits_per_step"] == pytest.approx(13 * np.mean(sizes))
    assert est.circuits_per_step == pytest.approx(13 * 10)


def test_make_private_records_a_shot_budget_per_circuit():
    model, _ = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, _ = qs.make_private(
            model, torch.optim.SGD(model.parameters(), lr=0.1), _loader(n=90, batch=10),
            target_epsilon=2.0, target_delta=1e-5, epochs=1, loss=qs.losses.LinearLoss(),
            seed=1, shot_budget=12_000)
    extra = opt.ledger.extra
    # 12 000 shots per step over the expected batch of 10: 1 200 per example, 100 per circuit
    assert extra["shot_budget"]["shots_per_example"] == 1200
    [layer] = extra["provenance"]["shot_allocation"]
    assert layer["forward_shots"] == 100 and layer["shifted_shots_per_example"] == 1200
    assert [c["shots"] for c in layer["circuits"]] == [100] * 12
    assert {round(abs(c["coefficient"]), 12) for c in layer["circuits"]} == {0.5}
    statement = opt.ledger.statement()
    assert re.search(r"Shot budget: 12000 shots per step .* 1200 per example", statement)
    assert "The certified bound Δ does not depend on the shots" in statement
    assert opt.ledger.extra["circuit_execution"] == {
        "0": "default.qubit runs every circuit and samples every shot"}


def test_plan_layers_of_the_neuron_model_has_one_layer_per_output():
    from pennylane_qshiftdp.app.models import QuantumNeuronClassifier

    model = QuantumNeuronClassifier(4, 3, shots=10)
    plans = plan_layers(model, torch.zeros(4, dtype=torch.float64))
    assert [p.name for p in plans] == ["qlayers.0", "qlayers.1", "qlayers.2"]
    assert all(p.input_grad and p.cost.circuits_per_example == 1 + 2 * 4 for p in plans)


@pytest.mark.skipif(not HAS_QISKIT, reason="pennylane-qiskit is not installed")
def test_an_unseeded_device_is_stated_and_its_shot_noise_never_credited():
    model, _ = _model("qiskit.aer", shots=20, wires=1)
    kwargs = {"target_epsilon": 2.0, "target_delta": 1e-5, "epochs": 1, "seed": 1,
              "loss": qs.losses.LinearLoss()}
    with pytest.raises(NotImplementedError, match=re.escape(
            "device 'qiskit.aer' samples with a generator of its own that pennylane_qshiftdp "
            "cannot seed. Use credit='none' on it.")):
        qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                        _loader(features=1), credit="adaptive", beta=1e-6,
                        recorder=qs.ShotRecorder(), **kwargs)
    model, _ = _model("qiskit.aer", shots=20, wires=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, _ = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                    _loader(features=1), **kwargs)
    assert "Shots sampled by qiskit.aer with a generator of the device's own, which " \
           "pennylane_qshiftdp cannot seed or reseed" in opt.ledger.statement()
