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

from ._circuit_fusion import light_cone, matmul_2x2, one_qubit_matrix, rotation_matrix

__all__ = ["PAULI_MATRICES", "apply_gate", "evolve", "one_qubit", "record_executions", "shift_spec",
           "simulate_shifts", "simulate_stacked", "simulate_tapes", "track_execution"]


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


def one_qubit(states: np.ndarray, m: np.ndarray, wire: int,
              out: np.ndarray | None = None) -> np.ndarray:
    """Apply the 2×2 matrix ``m`` (or one per batch row, ``(B, 2, 2)``) to qubit ``wire`` of
    every state of ``states`` ``(K, B, 2, ..., 2)``: one batched 2×2 matrix product per
    amplitude pair; into ``out`` (a contiguous array of the same shape, not ``states``) if
    given."""
    k, b = states.shape[:2]
    n = states.ndim - 2
    left, right = 2 ** wire, 2 ** (n - 1 - wire)
    if right >= _MIN_TRAILING:
        x = states.reshape(k, b, left, 2, right)
        mat = m.reshape(1, b, 1, 2, 2) if m.ndim == 3 else m
        if out is None:
            return np.matmul(mat, x).reshape(states.shape)
        np.matmul(mat, x, out=out.reshape(x.shape))
        return out
    x = states.reshape(k, b, left, 2, right).swapaxes(-1, -2).reshape(k, b, left * right, 2)
    mat = np.swapaxes(m, -1, -2)
    if m.ndim == 3:
        mat = mat.reshape(1, b, 2, 2)
    y = np.matmul(x, mat).reshape(k, b, left, right, 2).swapaxes(-1, -2)
    if out is None:
        return np.ascontiguousarray(y).reshape(states.shape)
    out.reshape(k, b, left, 2, right)[...] = y
    return out


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


# Up to this many one-qubit gates on adjacent qubits are applied as one Kronecker product
# (a 2^k × 2^k matrix product per amplitude group): numpy's stacked matrix product costs about
# the same per call for k = 1, 2, 3 (three 2×2 gates at 12 qubits: 70 ms as one 8×8 product,
# 180 ms one by one) and much more from k = 4.
_MAX_FUSED_QUBITS = 3


def _adjacent_groups(matrices: dict, n: int) -> list[list[int]]:
    """The qubits of ``matrices`` (qubit -> one-qubit matrix), in order, grouped into runs of
    at most :data:`_MAX_FUSED_QUBITS` adjacent qubits with unbroadcast matrices and at least
    :data:`_MIN_TRAILING` amplitudes after them; every other qubit alone."""
    groups: list[list[int]] = []
    for w in sorted(matrices):
        last = groups[-1] if groups else None
        if last is not None and last[-1] == w - 1 and len(last) < _MAX_FUSED_QUBITS and \
                matrices[w].ndim == 2 and all(matrices[v].ndim == 2 for v in last) and \
                2 ** (n - 1 - w) >= _MIN_TRAILING:
            last.append(w)
        else:
            groups.append([w])
    return groups


def _adjacent_qubits(states: np.ndarray, matrices: list, first: int,
                     out: np.ndarray) -> np.ndarray:
    """The 2×2 matrices ``matrices`` on the adjacent qubits ``first, first + 1, ...`` of every
    state of ``states`` ``(K, B, 2, ..., 2)``, as one product with their Kronecker product,
    into ``out``."""
    k, b = states.shape[:2]
    n = states.ndim - 2
    mat = matrices[0]
    for m in matrices[1:]:
        mat = np.kron(mat, m)
    span = len(matrices)
    shape = (k, b, 2 ** first, 2 ** span, 2 ** (n - first - span))
    np.matmul(mat, states.reshape(shape), out=out.reshape(shape))
    return out


def _controlled_flip(states: np.ndarray, name: str, control: int, target: int, *,
                     inplace: bool = False) -> np.ndarray:
    """CNOT (an index swap) or CZ (a sign flip) on every state of ``states`` (in place, and
    returned, with ``inplace``)."""
    c, t = 2 + control, 2 + target
    sel: list = [slice(None)] * states.ndim
    sel[c] = 1
    if inplace:
        out, src = states, states
    else:
        out, src = states.copy(), states
    if name == "CNOT":
        a0, a1 = list(sel), list(sel)
        a0[t], a1[t] = 0, 1
        low = src[tuple(a0)].copy() if inplace else src[tuple(a0)]
        out[tuple(a0)] = src[tuple(a1)]
        out[tuple(a1)] = low
    else:
        sel[t] = 1
        np.negative(src[tuple(sel)], out=out[tuple(sel)])
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


# ------------------------------------------ shifted circuits from one suffix per parameter
# A parameter-shift circuit differs from the forward circuit by one rotation angle moved by
# ±π/2. For U(φ) = exp(-iφG/2) with G a Pauli operator (RX, RY, RZ, the rotations of Rot;
# PhaseShift up to a global phase), U(φ ± π/2) = (I ∓ iG)/√2 · U(φ). With |κ⟩ the forward state
# just after the gate, V the gates after it, ψ = V|κ⟩ the forward circuit's final state and
# χ = V G|κ⟩, every quadratic form Q of the final state (an observable's expectation, the
# probability of an outcome) of the two shifted circuits is
#
#     Q(±) = ½(⟨ψ|Q|ψ⟩ + ⟨χ|Q|χ⟩) ∓ Im⟨χ|Q|ψ⟩,
#
# expanding ((I ∓ iG)/√2)† Q' ((I ∓ iG)/√2) with Q' = V†QV and G² = I. So both shifted circuits
# of a rotation need one evolution of G|κ⟩ through the gates after it, instead of two whole
# circuits: the χ's are spawned from the forward state as the sweep passes each shifted gate and
# evolved together with it. Derived here (elementary); tested against PennyLane's execution of
# every shifted circuit.

#: The Pauli matrices, by axis.
PAULI_MATRICES = {"X": np.array([[0, 1], [1, 0]], dtype=np.complex128),
                  "Y": np.array([[0, -1j], [1j, 0]], dtype=np.complex128),
                  "Z": np.array([[1, 0], [0, -1]], dtype=np.complex128)}

# Gates whose parameter is the angle of a Pauli rotation, and its axis.
_ROTATION_AXES = {qml.RX: "X", qml.RY: "Y", qml.RZ: "Z", qml.PhaseShift: "Z"}

_HALF_PI_ATOL = 1e-12

# Largest number of amplitudes (suffix states × rows × 2^wires) of one suffix sweep; beyond it
# the merged circuits run in chunks instead (2^26 complex amplitudes: 1 GiB per copy).
_MAX_SHIFT_AMPLITUDES = 2**26


def shift_spec(template, offsets) -> list | None:
    """Per circuit, ``None`` (the forward circuit: no offset) or ``(k, sign)``: tape parameter
    ``k``, the angle of a Pauli rotation (of RX, RY, RZ, PhaseShift or Rot), moved by
    ``sign·π/2``; ``None`` overall if some circuit is not of that form (offsets per tape
    parameter, ``(C, *shape)``, as :func:`~pennylane_qshiftdp.sampling.merging.stacked_from_offsets`
    takes them)."""
    owners = [op for op in template.operations for _ in op.data]
    arrays = [np.asarray(o, dtype=float) for o in offsets]
    if not arrays:
        return None
    n_circ = arrays[0].shape[0]
    moved = [arr.reshape(n_circ, -1) for arr in arrays]
    sizes = [m.shape[1] for m in moved]
    table = np.concatenate(moved, axis=1)  # (C, all parameter entries)
    column_owner = np.repeat(np.arange(len(moved)), sizes)
    scalar = np.repeat(np.array(sizes) == 1, sizes)
    nonzero = table != 0
    counts = nonzero.sum(axis=1)
    if np.any(counts > 1):
        return None
    first = nonzero.argmax(axis=1)
    spec: list = []
    for c in range(n_circ):
        if not counts[c]:
            spec.append(None)
            continue
        col = int(first[c])
        k, value = int(column_owner[col]), float(table[c, col])
        if k >= len(owners) or not scalar[col] or \
                abs(abs(value) - np.pi / 2) > _HALF_PI_ATOL or \
                (type(owners[k]) not in _ROTATION_AXES and type(owners[k]) is not qml.Rot):
            return None
        spec.append((k, 1 if value > 0 else -1))
    return spec


def _shift_measurable(mp) -> bool:
    if isinstance(mp, ExpectationMP):
        return _observable_measurement(mp)
    if not (isinstance(mp, ProbabilityMP) and mp.mv is None and len(mp.wires)):
        return False
    return mp.obs is None or all(_gate_supported(g) for g in mp.diagonalizing_gates())


def _kept_gates(ops, kept_ids, batched: bool, rows: slice) -> tuple[list, bool] | None:
    """The light cone's gates as ``(op, data, sliced)``, with this part's ``rows`` of broadcast
    parameters, and whether any was sliced; ``None`` for non-numeric parameters."""
    gates = []
    broadcast = False
    for op in ops:
        if id(op) not in kept_ids:
            continue
        data, sliced = list(op.data), False
        if batched and data:
            nds = tuple(op.ndim_params)
            for j, d in enumerate(data):
                if np.ndim(d) == (nds[j] if j < len(nds) else 0) + 1:
                    data[j], sliced = np.asarray(d)[rows], True
        if not _numeric(data):
            return None
        broadcast = broadcast or sliced
        gates.append((op, data, sliced))
    return gates, broadcast


def _one_qubit_parts(op, data, mapped, base) -> list[tuple] | None:
    """``(tape parameter or None, axis, matrix)`` of a one-qubit gate (a ``Rot`` as its three
    rotations), or ``None`` for a gate on several wires."""
    if type(op) is qml.Rot:  # RZ(φ), RY(θ), RZ(ω), each its own rotation
        return [(base + j, axis, rotation_matrix(np.asarray(data[j], dtype=float), axis))
                for j, axis in enumerate("ZYZ")]
    if len(mapped) == 1:
        axis = _ROTATION_AXES.get(type(op))
        return [(base if axis else None, axis, one_qubit_matrix(op, data))]
    return None


class _ShiftSweep:
    """The sweep of :func:`simulate_shifts`: block 0 the forward state, then one χ per shifted
    angle in the light cone.

    Runs of one-qubit gates stay fused: a G inserted inside a run, before the run's remaining
    product S, is the same as S G S† after the whole run, so every χ of a run is spawned from
    the forward state once the fused run has been applied. The pending runs of all wires are
    applied together, before any of their χ is spawned (gates on different wires commute): a
    layer's rotations act on the blocks alive before the layer only, not on the χ's the layer
    spawns. CNOT and CZ are not applied one by one but composed into one pending signed
    permutation of the basis (a layer's ring of CNOTs: one gather instead of one strided swap
    per gate), applied when the next one-qubit run or another gate needs the state, and folded
    into the readout of ``probs`` (a basis permutation only relabels the outcomes). Two buffers
    with room for every block; the blocks in use are a prefix of the current one
    (``active``), and a one-qubit gate or a permutation writes into the other buffer.
    """

    def __init__(self, capacity: int, n_rows: int, n: int, shifted: set):
        self.n, self.shifted = n, shifted
        self.buffers = [np.zeros((capacity, n_rows, *([2] * n)), dtype=np.complex128),
                        np.empty((capacity, n_rows, *([2] * n)), dtype=np.complex128)]
        self.buffers[0].reshape(capacity, n_rows, -1)[0, :, 0] = 1.0
        self.active = 1
        self.order: dict = {}  # tape parameter -> block index
        self.pending: dict = {}  # wire -> [("m", matrix) | ("g", parameter, Pauli)] in order
        self.perm = _SignedPermutation(n)  # CNOTs and CZs not yet applied

    def materialize(self) -> None:
        """Apply the pending permutation to the blocks in use."""
        if self.perm.identity:
            return
        self.perm.apply(self.buffers[0][:self.active], self.buffers[1][:self.active])
        self.buffers.reverse()
        self.perm.reset()

    def add_one_qubit(self, wire: int, parts: list[tuple]) -> None:
        """Append a one-qubit gate's matrices (and its shifted generators) to ``wire``'s run."""
        run = self.pending.setdefault(wire, [])
        for param, axis, mat in parts:
            run.append(("m", mat))
            if param in self.shifted:
                run.append(("g", param, PAULI_MATRICES[axis]))

    def flush_all(self) -> None:
        """Apply every wire's pending run, then spawn the runs' χ's from the forward state."""
        runs = [(w, self.pending.pop(w)) for w in sorted(self.pending)]
        runs = [(w, run) for w, run in runs if run]
        if not runs:
            return
        self.materialize()  # the pending permutation came before these runs
        totals = {}
        for w, run in runs:
            mats = [e[1] for e in run if e[0] == "m"]
            if mats:
                total = mats[0]
                for m in mats[1:]:
                    total = matmul_2x2(m, total)
                totals[w] = total
        active, buffers = self.active, self.buffers
        for group in _adjacent_groups(totals, self.n):
            if len(group) == 1:
                one_qubit(buffers[0][:active], totals[group[0]], group[0],
                          out=buffers[1][:active])
            else:
                _adjacent_qubits(buffers[0][:active], [totals[w] for w in group], group[0],
                                 out=buffers[1][:active])
            buffers.reverse()
        for w, run in runs:
            self._spawn(w, run)

    def _spawn(self, wire: int, run: list) -> None:
        rest = np.eye(2, dtype=complex)  # the product of the run's matrices after an entry
        spawns = []
        for entry in reversed(run):
            if entry[0] == "m":
                rest = matmul_2x2(rest, entry[1])
            else:
                moved = matmul_2x2(matmul_2x2(rest, entry[2]),
                                   np.conj(np.swapaxes(rest, -1, -2)))
                spawns.append((entry[1], moved))
        for param, moved in reversed(spawns):
            self.order[param] = self.active
            one_qubit(self.buffers[0][:1], moved, wire,
                      out=self.buffers[0][self.active:self.active + 1])
            self.active += 1

    def apply_gate(self, gate, wire_map) -> None:
        """Apply a gate on several wires (other than CNOT/CZ) to every block in use."""
        self.flush_all()
        self.materialize()
        self.buffers[0][:self.active] = apply_gate(gate.map_wires(wire_map),
                                                   self.buffers[0][:self.active])

    def values(self, mapped_mps, spec) -> list:
        """Per measurement, one row per circuit of ``spec`` (circuit-major)."""
        if not self.perm.identity and not all(isinstance(mp, ProbabilityMP) and not
                                              mp.diagonalizing_gates() for mp in mapped_mps):
            self.materialize()
        readout = None if self.perm.identity else self.perm
        psi, chis = self.buffers[0][:1], self.buffers[0][1:self.active]
        values = []
        for mp in mapped_mps:
            q_psi, q_chi, cross = _quadratic_forms(mp, psi, chis, readout)
            rows_out = []
            for s in spec:
                if s is None or s[0] not in self.order:
                    rows_out.append(q_psi)  # the forward circuit, or outside the light cone
                    continue
                i = self.order[s[0]] - 1
                rows_out.append(0.5 * (q_psi + q_chi[i]) - s[1] * cross[i])
            values.append(np.stack(rows_out))  # (C, rows, ...)
        return values


def simulate_shifts(template, spec, measurements, rows: slice) -> tuple | None:
    """Analytic values of ``measurements`` for the circuits ``spec`` (see :func:`shift_spec`)
    of the batch rows ``rows`` of ``template``, by the suffix evolutions above
    (:class:`_ShiftSweep`).

    Returns:
        ``(values, broadcast)`` as :func:`simulate_stacked` returns them for the same circuits
        (values per measurement with one leading row per circuit and batch row, circuit-major),
        or ``None`` for a measurement other than ``expval`` of an observable with a matrix and
        ``probs`` of explicit wires, or a gate the kernels do not cover.
    """
    mps = list(measurements)
    ops = list(template.operations)
    if not all(_shift_measurable(mp) for mp in mps) or \
            not all(_gate_supported(op) for op in ops):
        return None
    kept_ids = {id(op) for op in light_cone(ops, mps)}
    first_param, k = {}, 0
    for op in ops:
        first_param[id(op)] = k
        k += len(op.data)
    shifted = {s[0] for s in spec if s is not None}
    batched = template.batch_size is not None
    n_rows = rows.stop - rows.start if batched else 1
    kept = _kept_gates(ops, kept_ids, batched, rows)
    if kept is None:
        return None
    gates, broadcast = kept
    if (1 + len(shifted)) * n_rows * 2 ** len(template.wires) > _MAX_SHIFT_AMPLITUDES:
        return None
    wires = qml.wires.Wires.all_wires([op.wires for op, _, _ in gates]
                                      + [mp.wires for mp in mps])
    wire_map = _wire_order(gates, wires, shifted, first_param)
    sweep = _ShiftSweep(1 + len(shifted), n_rows, max(len(wires), 1), shifted)
    for op, data, sliced in gates:
        mapped = [wire_map[w] for w in op.wires]
        parts = _one_qubit_parts(op, data, mapped, first_param[id(op)])
        if parts is not None:
            sweep.add_one_qubit(mapped[0], parts)
            continue
        if any(sweep.pending.get(w) for w in mapped):
            sweep.flush_all()
        if op.name in ("CNOT", "CZ"):
            sweep.perm.compose(op.name, *mapped)
            continue
        gate = qml.ops.functions.bind_new_parameters(op, data) if sliced else op
        if gate.batch_size != (n_rows if sliced else None):
            return None  # the rebound gate does not broadcast (as merged_tapes declines it)
        sweep.apply_gate(gate, wire_map)
    sweep.flush_all()
    values = sweep.values([mp.map_wires(wire_map) for mp in mps], spec)
    return values, broadcast or bool(sweep.order)


# From this many amplitudes per state, a permutation gathers one state at a time (its 64 KiB
# at 12 qubits stay in cache): 17 ms for 37 × 27 states of 12 qubits, 25 ms in one ``take``.
_ROW_GATHER = 1024


class _SignedPermutation:
    """A product of CNOTs and CZs on ``n`` qubits as one signed permutation of the 2^n basis
    states: the state after them is ``sign * stored[..., source]`` (flat basis index; qubit 0
    the most significant bit, as in the ``(K, B, 2, ..., 2)`` layout)."""

    def __init__(self, n: int):
        self.n = n
        self.reset()

    def reset(self) -> None:
        self.source: np.ndarray | None = None
        self.sign: np.ndarray | None = None

    @property
    def identity(self) -> bool:
        return self.source is None and self.sign is None

    def compose(self, name: str, control: int, target: int) -> None:
        """Follow the permutation by CNOT or CZ on ``(control, target)``."""
        index = np.arange(2 ** self.n)
        c_bit = (index >> (self.n - 1 - control)) & 1
        if name == "CNOT":
            # after[i] = before[i ^ (c(i) << t)]: compose the sources (and signs)
            flipped = index ^ (c_bit << (self.n - 1 - target))
            self.source = flipped if self.source is None else self.source[flipped]
            if self.sign is not None:
                self.sign = self.sign[flipped]
        else:
            t_bit = (index >> (self.n - 1 - target)) & 1
            flip = 1.0 - 2.0 * (c_bit & t_bit)
            self.sign = flip if self.sign is None else self.sign * flip

    def apply(self, states: np.ndarray, out: np.ndarray) -> None:
        """The permuted ``states`` ``(K, B, 2, ..., 2)`` into ``out`` (same shape)."""
        k, b = states.shape[:2]
        flat = states.reshape(k * b, -1)
        dest = out.reshape(k * b, -1)
        if self.source is not None:
            if flat.shape[1] >= _ROW_GATHER:  # one row at a time: its source stays in cache
                for row in range(k * b):
                    np.take(flat[row], self.source, out=dest[row])
            else:
                np.take(flat, self.source, axis=1, out=dest)
        else:
            dest[...] = flat
        if self.sign is not None:
            dest *= self.sign

    def outcome_matrix(self, wires: list[int]) -> np.ndarray:
        """``(2^n, 2^m)`` 0/1 matrix: stored basis state j counts for outcome o of ``wires``
        (in their order) of the permuted state. Signs do not change probabilities."""
        size = 2 ** self.n
        after = np.arange(size)
        if self.source is not None:
            inverse = np.empty(size, dtype=np.int64)
            inverse[self.source] = after  # stored j sits at permuted index inverse[j]
            after = inverse
        outcome = np.zeros(size, dtype=np.int64)
        for w in wires:
            outcome = 2 * outcome + ((after >> (self.n - 1 - w)) & 1)
        onehot = np.zeros((size, 2 ** len(wires)))
        onehot[np.arange(size), outcome] = 1.0
        return onehot


def _wire_order(gates, wires, shifted, first_param) -> dict:
    """Axis per wire for the sweep of :func:`simulate_shifts`: the wires whose one-qubit gates
    act on the most blocks first. A 2×2 product on one of the last three axes (fewer than
    :data:`_MIN_TRAILING` amplitudes after it) costs two to three times one on a leading
    axis; a gate acts on every block spawned before it, so each wire is weighted by the
    shifted angles that precede its gates (the order of the sweep's results does not depend
    on the axes)."""
    weight = dict.fromkeys(wires, 0)
    spawned = 0
    for op, _, _ in gates:
        if len(op.wires) == 1:
            weight[op.wires[0]] += 1 + spawned
        base = first_param[id(op)]
        spawned += sum(base + j in shifted for j in range(len(op.data)))
    ranked = sorted(range(len(wires)), key=lambda i: (-weight[wires[i]], i))
    return {wires[i]: axis for axis, i in enumerate(ranked)}


def _quadratic_forms(mp, psi: np.ndarray, chis: np.ndarray,
                     readout: _SignedPermutation | None = None):
    """For the measurement ``mp``: its value on ``psi`` ``(1, B, 2, ..., 2)``, on each state of
    ``chis`` ``(K, B, 2, ..., 2)``, and ``Im⟨χ|Q|ψ⟩`` per χ (per outcome for ``probs``); with
    ``readout`` (``probs`` without diagonalizing gates only), of the states permuted by it."""
    k, b = chis.shape[:2]
    if isinstance(mp, ProbabilityMP):
        wires = [int(w) for w in mp.wires]
        if readout is not None:
            return _permuted_probability_forms(psi, chis, readout.outcome_matrix(wires))
        if mp.obs is not None:  # probabilities in the observable's eigenbasis: rotate first
            for gate in mp.diagonalizing_gates():
                psi = apply_gate(gate, psi)
                chis = apply_gate(gate, chis) if k else chis
        p_psi = _marginal(np.abs(psi[0]) ** 2, wires)
        if k == 0:
            empty = np.zeros((0, b, p_psi.shape[1]))
            return p_psi, empty, empty
        flat = chis.reshape(k * b, *chis.shape[2:])
        p_chi = _marginal(np.abs(flat) ** 2, wires).reshape(k, b, -1)
        mixed = (np.conj(chis) * psi).imag.reshape(k * b, *chis.shape[2:])
        cross = _marginal(mixed, wires).reshape(k, b, -1)
        return p_psi, p_chi, cross
    o_psi = apply_operation(mp.obs, psi[0], is_state_batched=True).reshape(b, -1)
    ket = psi[0].reshape(b, -1)
    q_psi = np.einsum("bi,bi->b", ket.conj(), o_psi).real
    if k == 0:
        return q_psi, np.zeros((0, b)), np.zeros((0, b))
    flat = chis.reshape(k * b, *chis.shape[2:])
    o_chi = apply_operation(mp.obs, flat, is_state_batched=True).reshape(k, b, -1)
    c = chis.reshape(k, b, -1).conj()
    q_chi = np.einsum("kbi,kbi->kb", c, o_chi).real
    cross = np.einsum("kbi,bi->kb", c, o_psi).imag
    return q_psi, q_chi, cross


def _permuted_probability_forms(psi: np.ndarray, chis: np.ndarray, onehot: np.ndarray):
    """:func:`_quadratic_forms` of ``probs`` for stored states whose basis state j counts for
    the outcomes ``onehot[j]`` (a pending permutation folded into the readout): sums over
    the real and imaginary parts (interleaved in memory) as matrix products."""
    k, b = chis.shape[:2]
    size = onehot.shape[0]
    pairs = np.repeat(onehot, 2, axis=0)  # (2·size, outcomes): one row per real component
    ket = psi.reshape(b, size).view(np.float64)  # (B, 2·size): re, im, re, im, ...
    p_psi = (ket * ket) @ pairs
    if k == 0:
        empty = np.zeros((0, b, onehot.shape[1]))
        return p_psi, empty, empty
    flat = chis.reshape(k, b, size).view(np.float64)
    p_chi = (flat * flat) @ pairs
    # Im(conj(χ) ψ) = Re χ · Im ψ − Im χ · Re ψ: per batch row, χ's components against ψ's
    # (swapped, one negated), summed per outcome
    weights = np.empty_like(ket)
    weights[:, 0::2], weights[:, 1::2] = ket[:, 1::2], -ket[:, 0::2]
    cross = np.matmul(flat.transpose(1, 0, 2), weights[:, :, None] * pairs).transpose(1, 0, 2)
    return p_psi, p_chi, cross
