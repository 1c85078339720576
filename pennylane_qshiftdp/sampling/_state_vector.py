r"""Batched state-vector kernels, and analytic simulation of merged tapes on default.qubit.

A merged tape (:func:`~pennylane_qshiftdp.sampling.merging.merged_tapes`) runs thousands of
circuits as one broadcast tape of fused single-qubit gates and entangling gates. PennyLane's
default.qubit applies each broadcast gate by a generic ``einsum`` (and CNOT by ``stack`` and
``roll``), which dominates a private step from 8 qubits on. :func:`simulate_tapes` computes the
same analytic results (``probs``, ``expval``, ``var``) with :func:`apply_gate`: a one-qubit
gate is a batched 2×2 matrix product on the amplitude pairs of its qubit, CNOT and CZ index
swaps and sign flips, and any other gate PennyLane's own
:func:`pennylane.devices.qubit.apply_operation`. Derived here (elementary); tested against
PennyLane's simulation.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml
from pennylane.devices.qubit import apply_operation, create_initial_state
from pennylane.devices.qubit.sampling import get_num_shots_and_executions
from pennylane.measurements import ExpectationMP, ProbabilityMP, VarianceMP

from ._circuit_fusion import light_cone, matmul_2x2, one_qubit_matrix

__all__ = ["apply_gate", "evolve", "one_qubit", "record_executions", "simulate_stacked",
           "simulate_tapes", "track_execution"]


# ----------------------------------------------------------------------------- kernels
# States are kept as one array ``(K, B, 2, ..., 2)`` (K states, e.g. the adjoint sweep's ket
# and bras, each broadcast over a batch of B; qubit w on axis 2 + w) and every gate is applied
# to all of them at once. A one-qubit gate is a 2×2 matrix product on every amplitude pair of
# its qubit (the matrix broadcast over the batch when the gate is; diagonal gates two
# elementwise products), CNOT and CZ are index swaps and sign flips; any other gate goes
# through PennyLane's ``apply_operation`` state by state. Derived here (elementary); tested
# against PennyLane's simulation and against parameter shift.


# Below this many amplitudes after the target qubit, the qubit's axis is moved last first: a 2×2
# matrix product over a short trailing axis is slow in numpy, one over a long leading axis fast.
_MIN_TRAILING = 8


def one_qubit(states: np.ndarray, m: np.ndarray, wire: int) -> np.ndarray:
    """Apply the 2×2 matrix ``m`` (or one per batch row, ``(B, 2, 2)``) to qubit ``wire`` of
    every state of ``states`` ``(K, B, 2, ..., 2)``: one batched 2×2 matrix product per
    amplitude pair."""
    k, b = states.shape[:2]
    n = states.ndim - 2
    left, right = 2 ** wire, 2 ** (n - 1 - wire)
    if right >= _MIN_TRAILING:
        x = states.reshape(k, b, left, 2, right)
        mat = m.reshape(1, b, 1, 2, 2) if m.ndim == 3 else m
        return np.matmul(mat, x).reshape(states.shape)
    x = states.reshape(k, b, left, 2, right).swapaxes(-1, -2).reshape(k, b, left * right, 2)
    mat = np.swapaxes(m, -1, -2)
    if m.ndim == 3:
        mat = mat.reshape(1, b, 2, 2)
    y = np.matmul(x, mat)
    return np.ascontiguousarray(
        y.reshape(k, b, left, right, 2).swapaxes(-1, -2)).reshape(states.shape)


def _diagonal(states: np.ndarray, d0, d1, wire: int) -> np.ndarray:
    """The diagonal gate ``diag(d0, d1)`` (scalars or one per batch row, ``(B,)``) on qubit
    ``wire`` of every state of ``states`` ``(K, B, 2, ..., 2)``: two elementwise products."""
    k, b = states.shape[:2]
    n = states.ndim - 2
    x = states.reshape(k, b, 2 ** wire, 2, 2 ** (n - 1 - wire))
    out = np.empty_like(x)
    for i, d in enumerate((d0, d1)):
        np.multiply(x[:, :, :, i, :], np.reshape(d, (1, b, 1, 1)) if np.ndim(d) else d,
                    out=out[:, :, :, i, :])
    return out.reshape(states.shape)


def apply_gate(op, states: np.ndarray, *, inverse: bool = False) -> np.ndarray:
    """``op`` (or its inverse) on every state of ``states`` ``(K, B, 2, ..., 2)``."""
    if op.name in ("RZ", "PhaseShift") and len(op.wires) == 1:
        theta = np.asarray(op.data[0], dtype=float) * (-1.0 if inverse else 1.0)
        if op.name == "RZ":
            return _diagonal(states, np.exp(-0.5j * theta), np.exp(0.5j * theta),
                             int(op.wires[0]))
        return _diagonal(states, 1.0, np.exp(1j * theta), int(op.wires[0]))
    if len(op.wires) == 1:
        m = one_qubit_matrix(op)
        if inverse:
            m = np.conj(np.swapaxes(m, -1, -2))
        return one_qubit(states, m, int(op.wires[0]))
    if op.name in ("CNOT", "CZ"):
        return _controlled_flip(states, op.name, *(int(w) for w in op.wires))
    gate = op.adjoint() if inverse else op
    return np.stack([apply_operation(gate, s, is_state_batched=True) for s in states])


def _controlled_flip(states: np.ndarray, name: str, control: int, target: int) -> np.ndarray:
    """CNOT (an index swap) or CZ (a sign flip) on every state of ``states``."""
    c, t = 2 + control, 2 + target
    out = states.copy()
    sel: list = [slice(None)] * states.ndim
    sel[c] = 1
    if name == "CNOT":
        a0, a1 = list(sel), list(sel)
        a0[t], a1[t] = 0, 1
        out[tuple(a0)], out[tuple(a1)] = states[tuple(a1)], states[tuple(a0)]
    else:
        sel[t] = 1
        out[tuple(sel)] = -states[tuple(sel)]
    return out


def evolve(operations, num_wires: int, batch: int | None) -> np.ndarray:
    """The state ``(1, B, 2, ..., 2)`` after ``operations`` on ``|0...0>`` of ``num_wires``
    standard wires (0..n-1), broadcast over a batch of ``batch`` (1 for ``None``)."""
    state0 = create_initial_state(range(max(num_wires, 1)), like="numpy")
    states = np.broadcast_to(state0, (1, batch or 1, *state0.shape)).astype(np.complex128)
    for op in operations:
        states = apply_gate(op, states)
    return states


def _gate_supported(op) -> bool:
    return op.has_matrix and not isinstance(op, (qml.operation.Channel,
                                                 qml.measurements.MidMeasureMP))


def _marginal(probs: np.ndarray, wires: list[int]) -> np.ndarray:
    """``probs`` ``(B, 2, ..., 2)`` summed over every qubit but ``wires``, in their order."""
    n = probs.ndim - 1
    others = tuple(1 + w for w in range(n) if w not in wires)
    kept = probs.sum(axis=others) if others else probs
    order = sorted(wires)
    perm = [0] + [1 + order.index(w) for w in wires]
    return np.transpose(kept, perm).reshape(probs.shape[0], 2 ** len(wires))


def _measure(mp, ket: np.ndarray) -> np.ndarray | None:
    """The analytic value of ``mp`` on the batched state ``ket`` ``(B, 2, ..., 2)``."""
    n = ket.ndim - 1
    if isinstance(mp, ProbabilityMP) and mp.mv is None:
        state = ket
        if mp.obs is not None:
            for gate in mp.diagonalizing_gates():
                if not _gate_supported(gate):
                    return None
                state = apply_gate(gate, state[None])[0]
        wires = [int(w) for w in mp.wires] if len(mp.wires) else list(range(n))
        return _marginal(np.abs(state) ** 2, wires)
    if _observable_measurement(mp):
        bra = apply_operation(mp.obs, ket, is_state_batched=True)
        b = ket.shape[0]
        mean = np.einsum("bi,bi->b", ket.reshape(b, -1).conj(), bra.reshape(b, -1)).real
        if isinstance(mp, ExpectationMP):
            return mean
        # var = <O²> - <O>² with <O²> = <Oψ|Oψ> (O Hermitian)
        return (np.abs(bra.reshape(b, -1)) ** 2).sum(axis=1) - mean ** 2
    return None


def _observable_measurement(mp) -> bool:
    return isinstance(mp, (ExpectationMP, VarianceMP)) and mp.obs is not None \
        and mp.obs.has_matrix


def simulate_tapes(tapes) -> list | None:
    """Analytic results of ``tapes`` as :func:`pennylane.execute` on default.qubit returns them
    (one array per measurement, a tuple for several; a leading batch axis for a broadcast
    tape), or ``None`` if a gate or measurement is outside what the kernels cover (gates with a
    matrix; ``probs``, and ``expval`` and ``var`` of observables with a matrix), or a tape has
    shots.

    Args:
        tapes: quantum scripts with numpy parameters and ``shots=None``.
    """
    tapes = list(tapes)
    for tape in tapes:
        if tape.shots or not all(_gate_supported(op) for op in tape.operations) or any(
                not (isinstance(mp, ProbabilityMP) and mp.mv is None)
                and not _observable_measurement(mp) for mp in tape.measurements) or any(
                qml.math.get_interface(d) != "numpy" for op in tape.operations
                for d in op.data):
            return None
    results = []
    for tape in tapes:
        std = tape.map_to_standard_wires()
        batch = std.batch_size
        states = evolve(std.operations, len(std.wires), batch)
        values = []
        for mp in std.measurements:
            v = _measure(mp, states[0])
            if v is None:
                return None
            values.append(v if batch is not None else v[0])
        results.append(values[0] if len(values) == 1 else tuple(values))
    return results


def track_execution(device, tapes, results) -> None:
    """Record ``tapes`` on ``device.tracker`` as default.qubit's own execution does
    (``batches``, then per tape ``simulations``, ``executions`` and ``results``), so
    :class:`pennylane.Tracker` counts circuits run by :func:`simulate_tapes` the same way."""
    if device.tracker.active:
        record_executions(device, [(get_num_shots_and_executions(tape)[0], result)
                                   for tape, result in zip(tapes, results, strict=True)])


def record_executions(device, entries) -> None:
    """Record one batch of simulations on ``device.tracker``, per simulated tape its
    ``(executions, result)`` (see :func:`track_execution`)."""
    tracker = device.tracker
    if not tracker.active:
        return
    tracker.update(batches=1)
    tracker.record()
    for executions, result in entries:
        tracker.update(simulations=1, executions=executions, results=result)
        tracker.record()


# ------------------------------------------------------------- merged circuits, operator-free
# The circuits of a merged evaluation (the template's gates, parameters stacked along the batch
# axis) are simulated from the stacked arrays directly: no PennyLane operator is built for the
# one- and two-qubit gates the kernels cover (building thousands-wide broadcast operators and
# the merged tape cost as much as simulating them at 4 qubits). The circuit is the same as
# ``merged_tapes`` builds: the light cone of the measured wires, runs of one-qubit gates fused
# (their product applied where the run ends), the wires that remain numbered 0..m-1.


def _numeric(values) -> bool:
    return all(isinstance(v, (np.ndarray, np.generic, float, int)) for v in values)


def simulate_stacked(template, stacked, rows: slice, measurements) -> tuple | None:
    """Analytic values of ``measurements`` for the batch rows ``rows`` of circuits that are
    ``template``'s gates with the parameters ``stacked`` (per operation ``None`` or, per
    parameter, ``None`` or an array with one row per circuit and batch element, as
    :func:`~pennylane_qshiftdp.sampling.merging.stacked_parameters` returns).

    Returns:
        ``(values, broadcast)``: per measurement, its values with one leading row per batch
        row of ``rows``, as :func:`simulate_tapes` returns them for the merged tape, or, when no
        kept gate is broadcast (``broadcast`` false; an unbroadcast merged tape), one row shared
        by all of them. ``None`` where the kernels do not cover a gate or measurement (the
        caller then builds the merged tape), and for ``probs()`` of all wires (whose wire order
        is the tape's).
    """
    mps = list(measurements)
    if any(not len(mp.wires) for mp in mps) or any(
            not (isinstance(mp, ProbabilityMP) and mp.mv is None)
            and not _observable_measurement(mp) for mp in mps):
        return None
    ops = list(template.operations)
    if not all(_gate_supported(op) for op in ops):
        return None
    kept_ids = {id(op) for op in light_cone(ops, mps)}
    gates = []
    for op, new in zip(ops, stacked, strict=True):
        if id(op) not in kept_ids:
            continue
        data = op.data if new is None else [op.data[j] if d is None else d[rows]
                                            for j, d in enumerate(new)]
        if not _numeric(data):
            return None
        gates.append((op, data, new is not None))
    wires = qml.wires.Wires.all_wires([op.wires for op, _, _ in gates]
                                      + [mp.wires for mp in mps])
    wire_map = {w: i for i, w in enumerate(wires)}
    # Stacked arrays have one row per batch row; gates that keep their own parameters are
    # unbroadcast (stacked_parameters), so with none moved one state serves every row.
    broadcast = any(moved for _, _, moved in gates)
    width = rows.stop - rows.start if broadcast else 1
    states = np.zeros((1, width, 2 ** max(len(wires), 1)), dtype=np.complex128)
    states[:, :, 0] = 1.0
    states = states.reshape(1, width, *([2] * max(len(wires), 1)))
    pending: dict = {}  # wire -> one-qubit matrices not yet applied (in circuit order)

    def flush(w):
        run = pending.pop(w, None)
        if not run:
            return states
        mat = run[0]
        for m in run[1:]:
            mat = matmul_2x2(m, mat)
        return one_qubit(states, mat, w)

    for op, data, moved in gates:
        mapped = [wire_map[w] for w in op.wires]
        if len(mapped) == 1:
            pending.setdefault(mapped[0], []).append(
                one_qubit_matrix(op, data if moved else None))
            continue
        for w in mapped:
            states = flush(w)
        if op.name in ("CNOT", "CZ"):
            states = _controlled_flip(states, op.name, *mapped)
            continue
        gate = qml.ops.functions.bind_new_parameters(op, data) if moved else op
        if gate.batch_size != (width if moved else None):
            return None  # the gate does not broadcast (as merged_tapes declines it)
        states = apply_gate(gate.map_wires(wire_map), states)
    for w in list(pending):
        states = flush(w)
    values = []
    for mp in mps:
        v = _measure(mp.map_wires(wire_map), states[0])
        if v is None:
            return None
        values.append(v)
    return values, broadcast
