"""The batched Qiskit route (issue 45): the device's results structure and counts, the law of
pennylane-qiskit's shots (chi-squared on counts, with and without a noise model), per-example
gradients against the analytic ones, other SamplerV2s, job caps and the fallback rules."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch
from scipy import stats

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.hardware import (
    BatchedRouteFallback,
    execute_batched,
    route_refusal,
    set_job_limits,
    set_sampler,
    uses_batched_route,
)
from pennylane_qshiftdp.qnn import TorchLayer
from pennylane_qshiftdp.qnn.evaluation import evaluate_layer

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pennylane_qiskit") is None,
                                reason="pennylane-qiskit is not installed")


def _noise_model():
    from qiskit_aer.noise import NoiseModel
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    return NoiseModel.from_backend(FakeManilaV2())


def _device(wires, seed=7, **options):
    return qml.device("qiskit.aer", wires=wires, seed_simulator=seed, **options)


def test_results_and_counts_are_those_of_qml_execute():
    """Deterministic outcomes (basis states), so values are equal exactly: expval, var, probs,
    several measurements, a broadcast tape, non-commuting observables (the device splits them),
    a Hamiltonian, different shots; the tracker counts the same circuits and shots."""
    dev = _device(3)
    flip = np.pi  # RX(pi) |0> = -i |1>
    tapes = [
        qml.tape.QuantumScript([qml.RX(flip, 0), qml.RY(0.0, 1)],
                               [qml.expval(qml.Z(0)), qml.probs(wires=[0, 1])], shots=50),
        qml.tape.QuantumScript([qml.RX(np.array([flip, 0.0]), 1), qml.CNOT([1, 2])],
                               [qml.expval(qml.Z(2))], shots=30),
        qml.tape.QuantumScript([qml.Hadamard(0), qml.RZ(0.0, 0), qml.RX(flip, 2)],
                               [qml.expval(qml.X(0)), qml.var(qml.Z(2)),
                                qml.expval(qml.Z(0) @ qml.Z(2))], shots=40),
        qml.tape.QuantumScript([qml.Rot(0.0, flip, 0.0, wires=1)],
                               [qml.expval(qml.dot([0.5, 2.0], [qml.Z(1), qml.Z(0)]))],
                               shots=20),
        qml.tape.QuantumScript([qml.RY(flip, 0)], [qml.probs(wires=[0])], shots=50),
        qml.tape.QuantumScript([qml.RX(np.array([flip, 0.0, flip]), 0), qml.Hadamard(1)],
                               [qml.expval(qml.Z(0)), qml.probs(wires=[0]),
                                qml.var(qml.X(1))], shots=25),
    ]
    assert route_refusal(tapes, dev) is None
    with qml.Tracker(dev) as mine:
        got = execute_batched(tapes, dev)
    with qml.Tracker(dev) as ref:
        want = [qml.execute([t], dev, diff_method=None)[0] for t in tapes]
    assert mine.totals["jobs"] == 1 and mine.totals["batches"] == 1
    assert (mine.totals["executions"], mine.totals["shots"]) == (
        ref.totals["executions"], ref.totals["shots"])
    assert mine.totals["executions"] == 1 + 2 + 2 + 1 + 1 + 3  # broadcast: a circuit per row;
    # X0 and Z0 Z2: 2 circuits

    def same(a, b):
        if isinstance(b, tuple):
            assert isinstance(a, tuple) and len(a) == len(b)
            for x, y in zip(a, b, strict=True):
                same(x, y)
        else:
            assert np.shape(a) == np.shape(b)
            np.testing.assert_allclose(a, b, atol=1e-12)

    # Z0 Z2 on |+>|1> is random (the circuit split off for it): its shape, and values elsewhere
    got[2], want[2] = got[2][:2] + (np.sign(got[2][2]) ** 2,), want[2][:2] + (1.0,)
    for a, b in zip(got, want, strict=True):
        same(a, b)
    # |+> measured in X reads +1 on every shot, |1> in Z reads -1
    assert float(got[2][0]) == 1.0 and float(got[2][1]) == 0.0


def _law_tapes(rng, n_circuits, shots, shift=0.0):
    """Random 3-qubit circuits measured in the computational basis (probs)."""
    tapes = []
    for _ in range(n_circuits):
        a = rng.uniform(0.3, 2.8, size=7)
        ops = [qml.RY(a[0] + shift, 0), qml.RX(a[1], 1), qml.RY(a[2], 2), qml.CNOT([0, 1]),
               qml.Rot(a[3], a[4], a[5], wires=2), qml.CNOT([2, 0]), qml.RY(a[6], 1)]
        tapes.append(qml.tape.QuantumScript(ops, [qml.probs(wires=[0, 1, 2])], shots=shots))
    return tapes


def _chi2_pvalue(counts_a, counts_b):
    """Two-sample chi-squared homogeneity test, summed over circuits (empty cells dropped)."""
    stat, dof = 0.0, 0
    for a, b in zip(counts_a, counts_b, strict=True):
        keep = (a + b) > 0
        table = np.stack([a[keep], b[keep]])
        s, _, d, _ = stats.chi2_contingency(table, correction=False)
        stat, dof = stat + s, dof + d
    return float(stats.chi2.sf(stat, dof))


@pytest.mark.parametrize("noisy", [False, True])
def test_shot_statistics_have_the_law_of_pennylane_qiskit(noisy):
    """6 circuits x 4000 shots: the batched route's counts against pennylane-qiskit's own
    (chi-squared homogeneity, p > 0.001 with fixed seeds); the same test rejects circuits whose
    first angle differs by 0.1 (so it has the power to see a wrong law)."""
    shots = 4000
    options = {"noise_model": _noise_model()} if noisy else {}
    dev = _device(3, seed=11, **options)
    tapes = _law_tapes(np.random.default_rng(3), 6, shots)
    batched = [np.rint(np.asarray(r) * shots) for r in execute_batched(tapes, dev)]
    own = [np.rint(np.asarray(r) * shots)
           for r in qml.execute(tapes, _device(3, seed=12, **options), diff_method=None)]
    assert _chi2_pvalue(batched, own) > 1e-3
    shifted = _law_tapes(np.random.default_rng(3), 6, shots, shift=0.1)
    wrong = [np.rint(np.asarray(r) * shots)
             for r in qml.execute(shifted, _device(3, seed=12, **options), diff_method=None)]
    assert _chi2_pvalue(batched, wrong) < 1e-3


def _layer(device, shots):
    @qml.set_shots(shots=shots)
    @qml.qnode(device, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    layer = TorchLayer(circuit, {"weights": (1, 2, 3)})
    with torch.no_grad():
        layer.weights.copy_(torch.linspace(-1.2, 1.4, 6).reshape(1, 2, 3))
    return layer


def test_per_example_gradients_match_the_analytic_ones_within_shot_noise():
    """A seeded batched step on qiskit.aer (one job) against default.qubit's analytic
    per-example gradients: every entry within 5 standard errors of a two-term estimate
    (each shifted expval has variance at most 1/N); the same seed repeats the step."""
    shots = 4000
    x = torch.tensor([[0.3, 1.1], [2.0, -0.4], [0.9, 0.2]], dtype=torch.float64)
    exact = evaluate_layer(_layer(qml.device("default.qubit", wires=2), None), x)
    dev = _device(2, seed=5)
    layer = _layer(dev, shots)
    with qml.Tracker(dev) as tracker:
        ev = evaluate_layer(layer, x)
    assert tracker.totals["jobs"] == 1 and tracker.totals["executions"] == 3 * (1 + 2 * 6)
    ones = torch.ones(3, 1, dtype=torch.float64)
    got, want = ev.per_example_weight_grads(ones), exact.per_example_weight_grads(ones)
    # d f / d theta_i = (f(+) - f(-)) / 2 for each gate parameter, sd <= 1/sqrt(2N)
    bound = 5 / np.sqrt(2 * shots)
    assert torch.all((got - want).abs() <= bound), (got - want).abs().max()
    assert torch.all((ev.outputs - exact.outputs).abs() <= 5 / np.sqrt(shots))
    with qml.Tracker(dev) as tracker, torch.no_grad():  # forward only (test metrics)
        out = layer(x)
    assert tracker.totals["jobs"] == 1 and tracker.totals["executions"] == 3
    assert torch.all((out - exact.outputs[:, 0]).abs() <= 5 / np.sqrt(shots))
    again = evaluate_layer(_layer(_device(2, seed=5), shots), x)
    assert torch.equal(again.jacobian, ev.jacobian) and torch.equal(again.outputs, ev.outputs)
    other = evaluate_layer(_layer(_device(2, seed=6), shots), x)
    assert not torch.equal(other.jacobian, ev.jacobian)


def test_make_private_takes_the_route_by_default_and_set_sampler_none_switches_it_off():
    dev = _device(2, seed=1)
    model = torch.nn.Sequential(_layer(dev, 50))
    x = torch.rand(40, 2, dtype=torch.float64)  # q = 1/10: a quick noise calibration
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, torch.ones(40)),
                                         batch_size=4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = qs.make_private(model, opt, loader, target_epsilon=1.0,
                                             target_delta=1e-5, epochs=1, max_grad_norm=1.0)
    xb = x[:3]

    def step():
        with qml.Tracker(dev) as tracker, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a batch not drawn from the Poisson loader
            opt.zero_grad()
            model(xb).sum().backward()
            opt.step()
        return tracker.totals

    totals = step()
    assert totals["jobs"] == 1 and totals["executions"] == 3 * 13
    assert uses_batched_route(model._module[0].qnode)
    # set_sampler(..., None): pennylane-qiskit's route (one transpile per circuit), on a layer
    # of one rotation (3 circuits per example)
    small = qml.device("qiskit.aer", wires=1)

    @qml.set_shots(shots=20)
    @qml.qnode(small, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RX(weights[0], wires=0)
        return qml.expval(qml.Z(0))

    layer = TorchLayer(circuit, {"weights": (1,)})
    set_sampler(layer, None)
    assert not uses_batched_route(layer.qnode)
    with qml.Tracker(small) as tracker:
        evaluate_layer(layer, torch.zeros(1, 1, dtype=torch.float64))
    assert "jobs" not in tracker.totals and tracker.totals["executions"] == 3


def test_fallback_warns_once_naming_why_and_gives_the_devices_numbers():
    """A gate the route does not template (QubitUnitary), a mid-circuit measurement and a run
    option it does not know run on the device's own execution after one warning each."""
    u = qml.QubitUnitary(np.array([[0, 1], [1, 0]]), wires=0)
    tape = qml.tape.QuantumScript([u], [qml.expval(qml.Z(0))], shots=20)
    cache: dict = {}
    with pytest.warns(BatchedRouteFallback, match=r"\(gate QubitUnitary is not templated\)"):
        [res] = execute_batched([tape], _device(1), cache=cache)
    assert float(res) == -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per cache and reason
        execute_batched([tape], _device(1), cache=cache)
    m0 = qml.measure(0)
    mcm = qml.tape.QuantumScript([qml.RX(np.pi, 0), m0.measurements[0]],
                                 [qml.expval(qml.Z(0))], shots=20)
    assert route_refusal([mcm], _device(2)) == "the circuit has a mid-circuit measurement"
    dev = qml.device("qiskit.aer", wires=1, max_parallel_threads=1)
    ok = qml.tape.QuantumScript([qml.RX(np.pi, 0)], [qml.expval(qml.Z(0))], shots=20)
    with pytest.warns(BatchedRouteFallback, match="run option.*max_parallel_threads"):
        assert float(execute_batched([ok], dev)[0]) == -1.0


def test_job_caps_split_a_batch_into_jobs_within_both():
    dev = _device(1)
    tapes = [qml.tape.QuantumScript([qml.RX(np.pi, 0)], [qml.expval(qml.Z(0))], shots=s)
             for s in (10, 10, 10, 20, 20)]
    with qml.Tracker(dev) as tracker:
        res = execute_batched(tapes, dev, max_circuits=2, max_shots=35)
    assert [float(r) for r in res] == [-1.0] * 5
    # rows: 10+10 | 10+20 | 20: each job at most 2 circuits and 35 shots
    assert tracker.totals["jobs"] == 3 and tracker.totals["executions"] == 5
    with pytest.raises(ValueError, match="`max_shots` must be a positive integer"):
        execute_batched(tapes, dev, max_shots=0)
    with pytest.raises(ValueError, match="exceeds `max_shots` \\(15\\) on its own"):
        execute_batched(tapes, dev, max_shots=15)
    layer = _layer(_device(2), 10)
    assert set_job_limits(layer, max_circuits=4)[0] is layer.qnode
    with qml.Tracker(layer.qnode.device) as tracker:
        evaluate_layer(layer, torch.zeros(1, 2, dtype=torch.float64))
    assert tracker.totals["jobs"] == 4  # 13 circuits, 4 per job


@pytest.mark.parametrize("kind", ["backend_sampler", "runtime_job", "runtime_batch",
                                  "runtime_session", "remote"])
def test_other_samplers_on_a_fake_backend(kind):
    """qiskit's BackendSamplerV2 and IBM Runtime's SamplerV2 (job, batch and session mode, local
    on FakeManilaV2) given to a qiskit.aer layer, and qiskit.remote on FakeManilaV2 with its own
    (runtime) sampler: the templates are transpiled for the fake backend; the estimates are
    those of its noisy circuit (within 0.15 of the noiseless value at 500 shots)."""
    from qiskit.primitives import BackendSamplerV2
    from qiskit_ibm_runtime import Batch, SamplerV2, Session
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    backend = FakeManilaV2()
    if kind == "backend_sampler":
        sampler = BackendSamplerV2(backend=backend, options={"seed_simulator": 3})
    elif kind == "runtime_job":
        sampler = SamplerV2(mode=backend)
    elif kind == "runtime_batch":
        sampler = SamplerV2(mode=Batch(backend=backend))
    elif kind == "runtime_session":
        sampler = SamplerV2(mode=Session(backend=backend))
    else:
        sampler = "auto"
    x = torch.tensor([[0.3, 1.1], [2.0, -0.4]], dtype=torch.float64)
    exact = evaluate_layer(_layer(qml.device("default.qubit", wires=2), None), x)
    if kind == "remote":
        layer = _layer(qml.device("qiskit.remote", wires=2, backend=backend), 500)
    else:
        layer = _layer(_device(2), 500)
    set_sampler(layer, sampler)
    with qml.Tracker(layer.qnode.device) as tracker:
        ev = evaluate_layer(layer, x)
    assert tracker.totals["jobs"] == 1 and tracker.totals["executions"] == 2 * 13
    assert torch.all((ev.outputs - exact.outputs).abs() < 0.15)
    assert torch.all((ev.jacobian - exact.jacobian).abs() < 0.2)
    with pytest.raises(TypeError, match="`sampler` must be 'auto', None or a Qiskit SamplerV2"):
        set_sampler(layer, "aer")


def test_fused_one_qubit_runs_give_each_circuits_outcome_law_exactly():
    """A template fuses runs of one-qubit gates into one U gate per run (its angles computed per
    row): the template circuit bound to a row has the outcome probabilities default.qubit gives
    that circuit (exactly, to float rounding), for runs of RY, RZ, RX, Hadamard, SX, PhaseShift,
    U3 and S between CNOTs."""
    from qiskit.quantum_info import Statevector
    from qiskit_ibm_runtime.fake_provider import FakeManilaV2

    from pennylane_qshiftdp.hardware import batched as hb

    rng = np.random.default_rng(1)
    a = rng.uniform(-3, 3, size=12)
    ops = [qml.RY(a[0], 0), qml.RZ(a[1], 0), qml.RX(a[2], 0), qml.Hadamard(1), qml.RY(a[3], 1),
           qml.CNOT([0, 1]), qml.SX(0), qml.PhaseShift(a[4], 0), qml.U3(a[5], a[6], a[7], 0),
           qml.RY(a[8], 2), qml.S(2), qml.RX(a[9], 2), qml.CNOT([2, 1]), qml.RZ(a[10], 1),
           qml.RY(a[11], 1)]
    tape = qml.tape.QuantumScript(ops, [qml.probs(wires=[0, 1, 2])], shots=10)
    dev = _device(3)
    [device_tape], _ = hb._device_batch([tape], dev)
    key, values = hb._structure(device_tape, {0: 0, 1: 1, 2: 2})
    qc, _, layout = hb._circuit(key)
    assert sum(item[0] == "run" for item in layout) == 4  # wires 0 (twice), 1 and 2
    bound = qc.assign_parameters(hb._template_values(layout, np.array([values]))[0])
    bound.remove_final_measurements()
    probs = Statevector.from_instruction(bound).probabilities(qargs=[2, 1, 0])
    want = qml.execute([tape.copy(shots=None)], qml.device("default.qubit"))[0]
    np.testing.assert_allclose(probs, want, atol=1e-12)
    # on IBM's basis each fused run is 2 sqrt(X) pulses, as a numeric transpile gives; the last
    # run (RZ, RY: one non-diagonal gate) is kept as it is, its RY 2 pulses
    isa = hb._transpile(key, FakeManilaV2(), {}).circuit
    assert isa.count_ops().get("sx", 0) == 2 * 4 + 2
