"""The batched state-vector kernels against PennyLane's own simulation (default.qubit).

``simulate_tapes`` stands in for ``qml.execute`` on default.qubit in exact-law and analytic
merged execution: on random broadcast circuits of one- and two-qubit gates it returns what
``qml.execute`` returns (same structure, values to 1e-12), records the same executions on the
device's tracker, and declines (``None``) what it does not cover.
"""

import numpy as np
import pennylane as qml
import pytest

from pennylane_qshiftdp.sampling._state_vector import simulate_tapes, track_execution


def _random_tape(seed: int, n: int, batch: int | None, measurements):
    rng = np.random.default_rng(seed)
    shape = () if batch is None else (batch,)
    ops = []
    for _ in range(4 * n):
        kind = rng.integers(8)
        w = int(rng.integers(n))
        v = (w + 1 + int(rng.integers(n - 1))) % n
        if kind == 0:
            ops.append(qml.RX(rng.uniform(-3, 3, shape), w))
        elif kind == 1:
            ops.append(qml.Rot(*rng.uniform(-3, 3, (3, *shape)), w))
        elif kind == 2:
            ops.append(qml.CNOT([w, v]))
        elif kind == 3:
            ops.append(qml.CZ([w, v]))
        elif kind == 4:
            ops.append(qml.CRX(rng.uniform(-3, 3, shape), [w, v]))  # apply_operation path
        elif kind == 5:
            ops.append(qml.RZ(rng.uniform(-3, 3, shape), w))  # diagonal kernel
        elif kind == 6:
            ops.append(qml.PhaseShift(rng.uniform(-3, 3, shape), w))  # diagonal kernel
        else:
            u = qml.matrix(qml.Rot(*rng.uniform(-3, 3, (3, *shape)), 0))
            ops.append(qml.QubitUnitary(u, w, unitary_check=False))
    return qml.tape.QuantumScript(ops, measurements, shots=None)


MEASUREMENTS = {
    "probs subset reversed": lambda: [qml.probs(wires=[2, 0])],
    "probs all": lambda: [qml.probs()],
    "probs in a Pauli basis": lambda: [qml.probs(op=qml.X(1) @ qml.Y(2))],
    "expval, var, Hermitian": lambda: [
        qml.expval(qml.Z(0) @ qml.X(2)), qml.var(qml.Y(1)),
        qml.expval(qml.Hermitian(np.array([[1.0, 0.5j], [-0.5j, -2.0]]), 1))],
}


@pytest.mark.parametrize("batch", [None, 1, 5])
@pytest.mark.parametrize("which", sorted(MEASUREMENTS))
@pytest.mark.parametrize("seed", range(3))
def test_equals_pennylane_execute(seed, which, batch):
    tape = _random_tape(seed, 3, batch, MEASUREMENTS[which]())
    dev = qml.device("default.qubit", wires=3)
    (expected,) = qml.execute([tape], dev, diff_method=None)
    (got,) = simulate_tapes([tape])
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        pairs = list(zip(got, expected, strict=True))
    else:
        pairs = [(got, expected)]
    for g, e in pairs:
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, atol=1e-12, rtol=0)


def test_wires_that_are_not_0_to_n():
    tape = qml.tape.QuantumScript([qml.RY(0.4, "a"), qml.CNOT(["a", 7]), qml.RX(1.1, 7)],
                                  [qml.probs(wires=[7]), qml.expval(qml.Z("a"))])
    dev = qml.device("default.qubit", wires=["a", 7])
    (expected,) = qml.execute([tape], dev, diff_method=None)
    (got,) = simulate_tapes([tape])
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-12, rtol=0)


def test_declines_what_it_does_not_cover():
    ok = qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.expval(qml.Z(0))])
    assert simulate_tapes([ok]) is not None
    cases = [
        qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.sample(wires=0)]),
        qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.expval(qml.Z(0))], shots=10),
        qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.state()]),
        qml.tape.QuantumScript([qml.RX(0.1, 0), qml.measurements.MidMeasureMP(0)],
                               [qml.expval(qml.Z(0))]),
    ]
    for tape in cases:
        assert simulate_tapes([ok, tape]) is None, tape


def test_tracker_counts_as_the_device_does():
    tapes = [_random_tape(s, 3, 4, [qml.probs(wires=[0, 1])]) for s in range(2)]
    dev = qml.device("default.qubit", wires=3)
    with qml.Tracker(dev) as reference:
        qml.execute(tapes, dev, diff_method=None)
    with qml.Tracker(dev) as ours:
        track_execution(dev, tapes, simulate_tapes(tapes))
    for key in ("batches", "simulations", "executions"):
        assert ours.totals[key] == reference.totals[key]
