r"""Exact simplifications of a broadcast circuit: the measured wires' light cone and fused
single-qubit gates (each run of single-qubit gates on a wire becomes one broadcast
:class:`~pennylane.QubitUnitary`)."""

from __future__ import annotations

import numpy as np
import pennylane as qml

__all__ = ["fuse_single_qubit", "light_cone", "matmul_2x2", "one_qubit_matrix",
           "rotation_matrix"]

def light_cone(operations, measurements) -> list:
    r"""The operations in the backward light cone of the measured wires.

    Walking the circuit backwards from the wires the measurements read, an operation is kept
    if it acts on a wire in the cone, whose wires then join it. A unitary acting only on wires
    outside the cone of everything after it does not change the reduced state of the measured
    wires (:math:`\mathrm{Tr}_{\bar M}[(I\otimes V)\rho(I\otimes V)^\dagger]
    = \mathrm{Tr}_{\bar M}\rho` for :math:`V` on the traced-out wires), so every measurement
    of those wires is unchanged. Derived here (elementary). The circuit is returned unchanged
    if any operation is not unitary (has no matrix: channels, mid-circuit measurements, state
    preparations) or a measurement reads all wires implicitly (``probs()``, ``state()``).
    """
    cone = set()
    for mp in measurements:
        if not len(mp.wires):
            return list(operations)
        cone.update(mp.wires)
    if not all(op.has_matrix for op in operations):
        return list(operations)
    kept = []
    for op in reversed(operations):
        if cone.intersection(op.wires):
            cone.update(op.wires)
            kept.append(op)
    return kept[::-1]


def fuse_single_qubit(operations) -> list:
    r"""Runs of single-qubit gates on a wire, with nothing else on that wire between them,
    replaced by one :class:`~pennylane.QubitUnitary` of their (broadcast) product.

    A run :math:`U_1, \dots, U_k` (:math:`k \ge 2`) becomes :math:`U_k \cdots U_1`, placed
    where the run ends; it commutes with the gates in between, which act on other wires. The
    product is computed for all batch elements at once (:func:`one_qubit_matrix`,
    :func:`matmul_2x2`), so a broadcast simulator applies one gate instead of :math:`k` (the
    embedding rotation and the first trainable rotation of a layered model become one).
    Single gates, gates whose parameters are not numpy arrays, and gates without a matrix
    (channels, measurements) are kept as they are.
    """
    pending: dict = {}  # wire -> list of single-qubit gates not yet emitted
    out = []

    def flush(wire):
        run = pending.pop(wire, None)
        if not run:
            return
        if len(run) == 1:
            out.append(run[0])
            return
        mat = one_qubit_matrix(run[0])
        for op in run[1:]:
            m = one_qubit_matrix(op)
            mat = matmul_2x2(m, mat)
        out.append(qml.QubitUnitary(mat, wires=run[0].wires, unitary_check=False))

    for op in operations:
        if len(op.wires) == 1 and op.has_matrix and \
                all(qml.math.get_interface(d) == "numpy" for d in op.data):
            pending.setdefault(op.wires[0], []).append(op)
            continue
        for w in op.wires:
            flush(w)
        out.append(op)
    for w in list(pending):
        flush(w)
    return out


def matmul_2x2(a, b):
    """``a @ b`` for (stacks of) 2x2 matrices, entry by entry: numpy's matmul and einsum loop
    over the stack one tiny product at a time."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    out = np.empty(shape, dtype=np.result_type(a, b))
    for i in range(2):
        for k in range(2):
            out[..., i, k] = a[..., i, 0] * b[..., 0, k] + a[..., i, 1] * b[..., 1, k]
    return out


def rotation_matrix(theta, generator):
    """``exp(-i theta/2 P)`` for P in X, Y, Z, shape ``theta.shape + (2, 2)``."""
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    m = np.empty(np.shape(theta) + (2, 2), dtype=complex)
    if generator == "Z":
        m[..., 0, 0], m[..., 1, 1] = c - 1j * s, c + 1j * s
        m[..., 0, 1] = m[..., 1, 0] = 0.0
    elif generator == "Y":
        m[..., 0, 0] = m[..., 1, 1] = c
        m[..., 0, 1], m[..., 1, 0] = -s, s
    else:
        m[..., 0, 0] = m[..., 1, 1] = c
        m[..., 0, 1] = m[..., 1, 0] = -1j * s
    return m


def one_qubit_matrix(op, data=None) -> np.ndarray:
    """The (broadcast) matrix of a single-qubit gate, ``(2, 2)`` or ``(batch, 2, 2)``: closed
    forms for RX, RY, RZ and Rot (PennyLane's conventions, checked against
    :meth:`~pennylane.operation.Operator.matrix` in the tests), PennyLane's matrix otherwise.
    With ``data``, the matrix of the same gate with the parameters ``data`` instead of its own.
    """
    params = op.data if data is None else data
    if type(op) in (qml.RX, qml.RY, qml.RZ):
        return rotation_matrix(np.asarray(params[0], dtype=float), op.name[-1])
    if type(op) is qml.Rot:  # RZ(omega) RY(theta) RZ(phi)
        return _rot_matrix(*(np.asarray(d, dtype=float) for d in params))
    if data is not None:
        op = qml.ops.functions.bind_new_parameters(op, list(data))
    return np.asarray(op.matrix(), dtype=complex)


def _rot_matrix(phi, theta, omega):
    """Broadcast matrix of ``Rot(phi, theta, omega)`` (shape ``batch + (2, 2)``)."""
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    plus, minus = np.exp(-0.5j * (phi + omega)), np.exp(0.5j * (phi - omega))
    shape = np.broadcast(phi, theta, omega).shape
    m = np.empty(shape + (2, 2), dtype=complex)
    m[..., 0, 0], m[..., 0, 1] = plus * c, -minus * s
    m[..., 1, 0], m[..., 1, 1] = np.conj(minus) * s, np.conj(plus) * c
    return m
