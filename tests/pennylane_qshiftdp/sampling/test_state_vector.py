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


# ------------------------------------------------ merged circuits from stacked parameters


def _offsets(template, n_circuits: int, seed: int) -> list:
    """Random offsets (C circuits, one per circuit, shared by the batch) of every rotation
    angle of ``template``; zero for the first circuit (the forward one), for matrices and for
    the observables' parameters."""
    rng = np.random.default_rng(seed)
    n_op = sum(len(op.data) for op in template.operations)
    scalar = 0 if template.batch_size is None else 1
    out = []
    for k, p in enumerate(template.get_parameters(trainable_only=False)):
        if k >= n_op or np.ndim(p) > scalar:  # observables, matrices: unchanged
            shape = np.shape(p)[scalar:] if k < n_op else np.shape(p)
            out.append(np.zeros((n_circuits, *shape)))
            continue
        off = rng.uniform(-2, 2, n_circuits)
        off[0] = 0.0
        out.append(off)
    return out


def _check_against_pennylane(template, offsets, kernel: str):
    """``execute_offsets(analytic=True)`` of ``template`` moved by ``offsets`` on default.qubit
    runs through ``exact_law.<kernel>``; every circuit's values equal PennyLane's execution of
    that circuit alone (1e-12), and the tracker counts what the run without that kernel
    (the next route: merged circuits, built or stacked) counts."""
    from pennylane_qshiftdp.sampling import exact_law

    dev = qml.device("default.qubit", wires=max(3, len(template.wires)))
    used = []
    real = getattr(exact_law, kernel)

    def spy(*args):
        out = real(*args)
        used.append(out is not None)
        return out

    setattr(exact_law, kernel, spy)
    try:
        with qml.Tracker(dev) as ours:
            got = exact_law.execute_offsets(template, offsets, dev, analytic=True)
    finally:
        setattr(exact_law, kernel, real)
    assert used and all(used)
    base = template.get_parameters(trainable_only=False)
    for c in range(len(got)):
        circuit = template.bind_new_parameters(
            [b + o[c] for b, o in zip(base, offsets, strict=True)], list(range(len(base))))
        (expected,) = qml.execute([circuit], dev, diff_method=None)
        pairs = zip(got[c], expected, strict=True) if isinstance(expected, tuple) \
            else [(got[c], expected)]
        for g, e in pairs:
            assert np.shape(g) == np.shape(e)
            np.testing.assert_allclose(g, e, atol=1e-12, rtol=0)
    setattr(exact_law, kernel, lambda *args: None)
    try:
        with qml.Tracker(dev) as other:
            exact_law.execute_offsets(template, offsets, dev, analytic=True)
    finally:
        setattr(exact_law, kernel, real)
    for key in ("batches", "simulations", "executions"):
        assert ours.totals[key] == other.totals[key], key


@pytest.mark.parametrize("batch", [None, 1, 3])
@pytest.mark.parametrize("which", sorted(set(MEASUREMENTS) - {"probs all"}))
@pytest.mark.parametrize("seed", range(3))
def test_stacked_circuits_equal_each_circuit_run_by_pennylane(seed, which, batch):
    """``execute_offsets(analytic=True)`` on default.qubit simulates the merged circuits from
    their stacked parameters (``simulate_stacked``: light cone, fusion, kernels, no operator
    built); every circuit's values equal PennyLane's execution of that circuit alone, and the
    device's tracker counts what the merged tapes would have counted."""
    template = _random_tape(seed, 3, batch, MEASUREMENTS[which]())
    _check_against_pennylane(template, _offsets(template, 4, seed), "simulate_stacked")


def test_stacked_declines_what_merged_tapes_cannot_broadcast():
    """A gate whose rebound copy does not broadcast (a MultiRZ whose batch size was read
    before: the copy keeps it) is declined, as ``merged_tapes`` declines it; ``probs()`` of
    all wires too (the tape's wire order)."""
    from pennylane_qshiftdp.sampling._state_vector import simulate_stacked

    multi = qml.MultiRZ(0.2, wires=[0, 1])
    assert multi.batch_size is None
    template = qml.tape.QuantumScript([qml.RX(0.3, 0), multi], [qml.expval(qml.Z(0))])
    stacked = [[np.array([0.3, 0.5])], [np.array([0.2, 0.9])]]
    assert simulate_stacked(template, stacked, slice(0, 2), template.measurements) is None
    fine = [[np.array([0.3, 0.5])], None]
    assert simulate_stacked(template, fine, slice(0, 2), template.measurements) is not None
    assert simulate_stacked(template, fine, slice(0, 2), [qml.probs()]) is None


def _assert_threads_change_nothing(template, offsets, workers, monkeypatch):
    """The values with the rows split between ``workers`` threads are bitwise those of one
    call (every row evolves on its own; the exact-law draws then are the same too)."""
    from pennylane_qshiftdp.sampling import exact_law

    dev = qml.device("default.qubit", wires=3)
    monkeypatch.setattr(exact_law, "_workers", lambda: 1)
    one = exact_law.execute_offsets(template, offsets, dev, analytic=True)
    monkeypatch.setattr(exact_law, "_workers", lambda: workers)
    monkeypatch.setattr(exact_law, "_THREADED_AMPLITUDES", 1)
    split = exact_law.execute_offsets(template, offsets, dev, analytic=True)
    for a, b in zip(one, split, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("seed", range(2))
def test_rows_split_between_threads_give_the_same_values_bit_for_bit(seed, monkeypatch):
    """A large merged chunk is split between threads: the same values, bit for bit."""
    template = _random_tape(seed, 3, 3, MEASUREMENTS["expval, var, Hermitian"]())
    _assert_threads_change_nothing(template, _offsets(template, 7, seed), 3, monkeypatch)


# ------------------------------------------ shifted circuits from one suffix per parameter


def _rotation_tape(seed: int, n: int, batch: int | None, measurements):
    """Random circuits of rotations (the gates parameter shift moves by ±π/2), entangling and
    fixed gates, with a broadcast data rotation first on every wire."""
    rng = np.random.default_rng(seed)
    shape = () if batch is None else (batch,)
    ops = [qml.RY(rng.uniform(-3, 3, shape), w) for w in range(n)]
    for _ in range(5 * n):
        kind = rng.integers(8)
        w = int(rng.integers(n))
        v = (w + 1 + int(rng.integers(n - 1))) % n
        if kind == 0:
            ops.append(qml.RX(rng.uniform(-3, 3), w))
        elif kind == 1:
            ops.append(qml.Rot(*rng.uniform(-3, 3, 3), w))
        elif kind == 2:
            ops.append(qml.CNOT([w, v]))
        elif kind == 3:
            ops.append(qml.CZ([w, v]))
        elif kind == 4:
            ops.append(qml.CRX(rng.uniform(-3, 3), [w, v]))  # not shifted: apply_operation
        elif kind == 5:
            ops.append(qml.RZ(rng.uniform(-3, 3), w))
        elif kind == 6:
            ops.append(qml.PhaseShift(rng.uniform(-3, 3), w))
        else:
            ops.append(qml.Hadamard(w))
    return qml.tape.QuantumScript(ops, measurements, shots=None)


def _shift_offsets(template, seed: int) -> list:
    """The forward circuit and, for a random subset of the rotation angles, the circuits with
    that angle moved by +π/2 and by -π/2 (parameter shift's circuits), as offsets."""
    rng = np.random.default_rng(seed)
    angles = []
    k = 0
    for op in template.operations:
        for _ in op.data:
            if type(op) in (qml.RX, qml.RZ, qml.PhaseShift, qml.Rot) or (
                    type(op) is qml.RY and template.batch_size is None):
                angles.append(k)
            k += 1
    chosen = sorted(rng.choice(angles, size=min(6, len(angles)), replace=False))
    circuits = [None] + [(a, s) for a in chosen for s in (1, -1)]
    params = template.get_parameters(trainable_only=False)
    scalar = 0 if template.batch_size is None else 1
    out = []
    for i, p in enumerate(params):
        shape = np.shape(p)[scalar:] if i < k and np.ndim(p) > scalar else \
            (np.shape(p) if i >= k else ())
        off = np.zeros((len(circuits), *shape))
        for c, spec in enumerate(circuits):
            if spec is not None and spec[0] == i:
                off[c] = spec[1] * np.pi / 2
        out.append(off)
    return out


SHIFT_MEASUREMENTS = {
    "expval Z": lambda: [qml.expval(qml.Z(0))],
    "expval product, Hermitian": lambda: [
        qml.expval(qml.Z(0) @ qml.X(2)),
        qml.expval(qml.Hermitian(np.array([[1.0, 0.5j], [-0.5j, -2.0]]), 1))],
    "probs subset reversed": lambda: [qml.probs(wires=[2, 0])],
    "probs in a Pauli basis": lambda: [qml.probs(op=qml.X(1) @ qml.Y(2))],
}


@pytest.mark.parametrize("batch", [None, 1, 3])
@pytest.mark.parametrize("which", sorted(SHIFT_MEASUREMENTS))
@pytest.mark.parametrize("seed", range(3))
def test_shifted_circuits_equal_each_circuit_run_by_pennylane(seed, which, batch):
    """Parameter-shift circuits (one rotation angle moved by ±π/2 each) are simulated by one
    suffix evolution per shifted angle (``simulate_shifts``); every circuit's values equal
    PennyLane's execution of that circuit alone (1e-12), and the device's tracker counts what
    the merged tapes would have counted."""
    template = _rotation_tape(seed, 3, batch, SHIFT_MEASUREMENTS[which]())
    _check_against_pennylane(template, _shift_offsets(template, seed), "simulate_shifts")


def test_shift_spec_declines_what_is_not_one_rotation_moved_by_half_pi():
    from pennylane_qshiftdp.sampling._state_vector import shift_spec

    template = qml.tape.QuantumScript(
        [qml.RX(0.3, 0), qml.CRX(0.2, [0, 1]), qml.Rot(0.1, 0.2, 0.3, 1)],
        [qml.expval(qml.Hermitian(np.eye(2), 1))])
    h = np.pi / 2

    def offsets(rows):  # rows: per circuit, per tape parameter (RX, CRX, Rot×3, Hermitian)
        arr = np.array(rows, dtype=float)
        return [arr[:, i] for i in range(5)] + [np.zeros((len(rows), 2, 2))]

    good = offsets([[0, 0, 0, 0, 0], [h, 0, 0, 0, 0], [0, 0, 0, -h, 0]])
    assert shift_spec(template, good) == [None, (0, 1), (3, -1)]
    assert shift_spec(template, offsets([[h, 0, h, 0, 0]])) is None  # two angles at once
    assert shift_spec(template, offsets([[0.3, 0, 0, 0, 0]])) is None  # not ±π/2
    assert shift_spec(template, offsets([[0, h, 0, 0, 0]])) is None  # CRX: a four-term rule
    moved_observable = offsets([[0, 0, 0, 0, 0]])
    moved_observable[-1] = np.ones((1, 2, 2))
    assert shift_spec(template, moved_observable) is None


@pytest.mark.parametrize("seed", range(2))
def test_shifted_rows_split_between_threads_give_the_same_values_bit_for_bit(seed, monkeypatch):
    """The suffix evolutions split between threads: the same values, bit for bit."""
    template = _rotation_tape(seed, 3, 5, SHIFT_MEASUREMENTS["expval product, Hermitian"]())
    _assert_threads_change_nothing(template, _shift_offsets(template, seed), 2, monkeypatch)


def _layered_tape(seed: int, n: int, batch: int | None, measurements, *, end_with_ring: bool):
    """Layers as StronglyEntanglingLayers builds them (a Rot on every wire, then a ring of
    CNOTs of some range), with a CZ or a fixed gate here and there, after a broadcast data
    rotation on every wire; ending with a ring (a permutation pending at the readout) or with
    one-qubit gates."""
    rng = np.random.default_rng(seed)
    shape = () if batch is None else (batch,)
    ops = [qml.RY(rng.uniform(-3, 3, shape), w) for w in range(n)]
    for layer in range(3):
        ops += [qml.Rot(*rng.uniform(-3, 3, 3), w) for w in range(n)]
        r = 1 + layer % (n - 1)
        for w in range(n):
            ops.append(qml.CZ([w, (w + r) % n]) if rng.random() < 0.2
                       else qml.CNOT([w, (w + r) % n]))
        if rng.random() < 0.5:
            ops.append(qml.Hadamard(int(rng.integers(n))))
    if not end_with_ring:
        ops += [qml.RX(rng.uniform(-3, 3), w) for w in range(n)]
    return qml.tape.QuantumScript(ops, measurements, shots=None)


LAYERED_MEASUREMENTS = {
    "probs one wire": lambda: [qml.probs(wires=[0])],
    "probs subset reversed": lambda: [qml.probs(wires=[3, 1])],
    "probs of Z, expval": lambda: [qml.probs(op=qml.Z(0)), qml.expval(qml.Z(2) @ qml.X(1))],
    "probs in a Pauli basis": lambda: [qml.probs(op=qml.X(1))],
}


@pytest.mark.parametrize("n", [4, 6])
@pytest.mark.parametrize("end_with_ring", [True, False])
@pytest.mark.parametrize("batch", [None, 3])
@pytest.mark.parametrize("which", sorted(LAYERED_MEASUREMENTS))
@pytest.mark.parametrize("seed", range(2))
def test_layered_shifted_circuits_equal_each_circuit_run_by_pennylane(seed, which, batch,
                                                                      end_with_ring, n):
    """Layered circuits (a layer's rotations applied together, on adjacent qubits as one
    Kronecker product from 6 qubits, its CNOT and CZ ring composed into one permutation and,
    before ``probs`` in the computational basis, folded into the readout): every shifted
    circuit's values equal PennyLane's execution of it (1e-12)."""
    template = _layered_tape(seed, n, batch, LAYERED_MEASUREMENTS[which](),
                             end_with_ring=end_with_ring)
    _check_against_pennylane(template, _shift_offsets(template, seed), "simulate_shifts")


@pytest.mark.parametrize("row_gather", [False, True])
@pytest.mark.parametrize("seed", range(5))
def test_signed_permutation_is_the_cnot_and_cz_product(seed, row_gather, monkeypatch):
    """A random product of CNOTs and CZs composed into one signed permutation: applied (in
    one gather, or state by state as from 10 qubits), the state PennyLane's simulation gives;
    folded into a readout, its marginals."""
    from pennylane.devices.qubit import apply_operation

    from pennylane_qshiftdp.sampling import _state_vector
    from pennylane_qshiftdp.sampling._state_vector import _SignedPermutation

    if row_gather:
        monkeypatch.setattr(_state_vector, "_ROW_GATHER", 1)

    rng = np.random.default_rng(seed)
    n = 4
    state = rng.normal(size=(2,) * n) + 1j * rng.normal(size=(2,) * n)
    perm, expected = _SignedPermutation(n), state
    for _ in range(12):
        c, t = (int(w) for w in rng.choice(n, 2, replace=False))
        name = "CNOT" if rng.random() < 0.6 else "CZ"
        perm.compose(name, c, t)
        expected = apply_operation(getattr(qml, name)([c, t]), expected)
    states = np.stack([state, 2 * state, 1j * state]).reshape(1, 3, *state.shape)
    out = np.empty_like(states)
    perm.apply(states, out)
    for i, factor in enumerate((1, 2, 1j)):
        np.testing.assert_allclose(out[0, i], factor * expected, atol=1e-13)
    for wires in ([0], [3, 1], [2, 0, 1]):
        got = (np.abs(state.reshape(-1)) ** 2) @ perm.outcome_matrix(wires)
        probs = np.abs(expected) ** 2
        kept = probs.sum(axis=tuple(w for w in range(n) if w not in wires))
        want = np.transpose(kept, [sorted(wires).index(w) for w in wires]).reshape(-1)
        np.testing.assert_allclose(got, want, atol=1e-14)


@pytest.mark.parametrize("workers", [1, 2])
def test_shifted_rows_swept_in_turn_give_the_same_values_bit_for_bit(workers, monkeypatch):
    """Rows beyond one sweep's amplitude budget are swept in turn (16 qubits at batch 54):
    the same values, bit for bit, as one sweep of every row."""
    from pennylane_qshiftdp.sampling import exact_law

    template = _layered_tape(0, 4, 7, LAYERED_MEASUREMENTS["probs of Z, expval"](),
                             end_with_ring=True)
    offsets = _shift_offsets(template, 0)
    dev = qml.device("default.qubit", wires=4)
    monkeypatch.setattr(exact_law, "_workers", lambda: workers)
    monkeypatch.setattr(exact_law, "_THREADED_AMPLITUDES", 1)
    one = exact_law.execute_offsets(template, offsets, dev, analytic=True)
    calls = []
    real = exact_law.simulate_shifts
    monkeypatch.setattr(exact_law, "simulate_shifts",
                        lambda *args: calls.append(args[-1]) or real(*args))
    monkeypatch.setattr(exact_law, "_SHIFT_SWEEP_AMPLITUDES", 1)  # one row per sweep
    swept = exact_law.execute_offsets(template, offsets, dev, analytic=True)
    assert sorted(r.start for r in calls) == list(range(7))
    for a, b in zip(one, swept, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)
