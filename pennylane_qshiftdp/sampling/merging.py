r"""Merging circuits that differ only in their parameters into broadcast tapes (exact).

A forward tape and its parameter-shift tapes have the same gates; on a device that simulates a
broadcast tape at once (default.qubit) they run as a few broadcast tapes, stacked along the
batch axis, instead of one tape each. Gates outside the measured wires' light cone are dropped
and, on default.qubit and default.mixed, runs of single-qubit gates are fused
(:mod:`._circuit_fusion`); both are exact.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml

from ._circuit_fusion import fuse_single_qubit, light_cone

__all__: list[str] = []

# Largest number of state-vector amplitudes (merged batch × 2^wires) of one merged broadcast
# tape: 2^20 complex128 amplitudes are 16 MiB per copy of the state in default.qubit; larger
# merged tapes were no faster at 8 to 12 qubits (benchmarks/bench_transform.py --step).
MAX_MERGED_AMPLITUDES = 2**20

def stacked_parameters(template, param_sets, beff):
    """Operation parameters of all circuits stacked along the batch axis.

    Returns, per operation of ``template``, ``None`` (its parameters are the same in every
    circuit) or a list with, per parameter, ``None`` (the same unbroadcast value everywhere) or
    an array ``(C·beff, ...)``; ``None`` overall if the circuits cannot share a broadcast tape.
    """
    def column(k, nd):
        try:
            arr = np.stack([ps[k] for ps in param_sets])  # (C, ...) or (C, beff, ...)
        except ValueError:  # shapes differ between circuits
            return _NO_MERGE
        nd = arr.ndim - 1 if nd is None else nd
        if arr.ndim == nd + 1:  # unbroadcast in every circuit
            if np.all(arr == arr[:1]):
                return None
            return np.repeat(arr, beff, axis=0) if beff > 1 else arr
        if arr.ndim == nd + 2 and arr.shape[1] == beff:
            return arr.reshape(-1, *arr.shape[2:])
        return _NO_MERGE

    stacked, k = _stack_operations(template, column)
    if stacked is None:
        return None
    # Observable parameters (after the operations') must not vary between circuits.
    for k2 in range(k, len(param_sets[0])):
        first = np.asarray(param_sets[0][k2])
        if any(not np.array_equal(np.asarray(ps[k2]), first) for ps in param_sets[1:]):
            return None
    return stacked


#: A parameter column that cannot be merged into a broadcast tape.
_NO_MERGE = object()


def _stack_operations(template, column) -> tuple[list[list | None] | None, int]:
    """Per operation of ``template``, ``None`` or the list of ``column(k, ndim)`` over its
    parameters (``k``: the tape parameter index, ``ndim``: the gate's unbroadcast parameter
    dimension or ``None``); returns ``(stacked, number of operation parameters)``, with
    ``stacked`` ``None`` if a column is :data:`_NO_MERGE` or a gate has no ``ndim_params``."""
    stacked: list[list | None] = []
    k = 0
    for op in template.operations:
        if not op.data:
            stacked.append(None)
            continue
        try:
            nds = tuple(op.ndim_params)
        except (AttributeError, NotImplementedError, TypeError):
            return None, k
        new = []
        for j in range(len(op.data)):
            col = column(k, nds[j] if j < len(nds) else None)
            k += 1
            if col is _NO_MERGE:
                return None, k
            new.append(col)
        stacked.append(None if all(d is None for d in new) else new)
    return stacked, k


def stacked_from_offsets(template, offsets, beff):
    """:func:`stacked_parameters` for the circuits ``template`` with every parameter moved
    by the rows of ``offsets`` (per tape parameter an array ``(C, *shape)``, row ``c`` the
    offset of circuit ``c``), without building one parameter list per circuit."""
    base = template.get_parameters(trainable_only=False)

    def column(k, nd):
        b, off = np.asarray(base[k]), np.asarray(offsets[k])
        nd = b.ndim if nd is None else nd
        if b.ndim == nd:  # unbroadcast
            if not off.any():
                return None
            arr = b[None] + off
            return np.repeat(arr, beff, axis=0) if beff > 1 else arr
        if b.ndim == nd + 1 and b.shape[0] == beff:
            arr = b[None] + off.reshape(off.shape[0], 1, *off.shape[1:])
            return arr.reshape(-1, *arr.shape[2:])
        return _NO_MERGE

    stacked, k = _stack_operations(template, column)
    if stacked is None:
        return None
    if any(np.asarray(offsets[k2]).any() for k2 in range(k, len(base))):
        return None  # observable parameters must not vary between circuits
    return stacked


def broadcasts_natively(device) -> bool:
    """Whether the device simulates a broadcast tape at once (default.qubit) rather than
    splitting it into one tape per batch element (lightning.qubit's ``broadcast_expand``),
    which would make merging circuits only add work. Read off the device's preprocessing
    every call (tens of microseconds; nothing is kept between calls)."""
    return _device_broadcasts_natively(device)


def _device_broadcasts_natively(device) -> bool:
    try:
        pipeline = device.preprocess_transforms()
    except (AttributeError, NotImplementedError, TypeError):
        return False
    split = qml.transforms.broadcast_expand.tape_transform
    return not any(getattr(t, "tape_transform", None) is split
               for t in pipeline)


def fuses_gates(device) -> bool:
    """Whether merged tapes for ``device`` get :func:`fuse_single_qubit`: on PennyLane's
    Python simulators, where each broadcast gate is one ``einsum`` over the whole batch and a
    :class:`~pennylane.QubitUnitary` is native. The exact classes only: a subclass could
    attach noise per gate in its preprocessing, which fusing gates would change."""
    return type(device) in (qml.devices.DefaultQubit, qml.devices.DefaultMixed)


def circuits_per_chunk(template, max_amplitudes: int) -> int:
    """How many circuits of ``template`` one merged broadcast tape runs: as many as fit in
    ``max_amplitudes`` amplitudes (batch × 2^wires each), at least one."""
    per_circuit = (template.batch_size or 1) * 2 ** max(len(template.wires), 1)
    return max(1, max_amplitudes // per_circuit)


def merged_tapes(template, stacked, num_circuits, measurements, max_amplitudes, *,
                  fuse=False):
    """Analytic broadcast tapes running ``num_circuits`` circuits (their parameters
    ``stacked`` along the batch axis, see :func:`stacked_parameters`), as
    ``[(tape, number of circuits)]``; ``None`` if the circuits cannot be merged. Operations
    outside the measured wires' light cone are dropped (:func:`light_cone`) and, with
    ``fuse``, single-qubit runs fused (:func:`fuse_single_qubit`)."""
    beff = template.batch_size or 1
    if stacked is None:
        return None
    rows = circuits_per_chunk(template, max_amplitudes)
    chunks = []
    for start in range(0, num_circuits, rows):
        stop = min(start + rows, num_circuits)
        ops = []
        for op, new in zip(template.operations, stacked, strict=True):
            if new is None:
                ops.append(op)
                continue
            data = [op.data[j] if d is None else d[start * beff:stop * beff]
                    for j, d in enumerate(new)]
            new_op = qml.ops.functions.bind_new_parameters(op, data)
            if new_op.batch_size != (stop - start) * beff:
                return None  # the gate does not broadcast
            ops.append(new_op)
        ops = light_cone(ops, measurements)
        if fuse:
            ops = fuse_single_qubit(ops)
        chunks.append((qml.tape.QuantumScript(ops, measurements, shots=None), stop - start))
    return chunks
