r"""Per-example analytic Jacobians of a broadcast tape by the adjoint method (the simulator route).

For ``shots=None`` on a state-vector simulator the parameter-shift gradient equals the analytic
derivative, which the adjoint method computes from one forward and one backward sweep over the
gates instead of :math:`2P + 1` circuits (Jones & Gacon, arXiv:2009.02823, Algorithm 1). PennyLane's
``adjoint_jacobian`` does not broadcast, so the sweep is written here over a *batched* state (one
row per example, the encoding gates broadcast over the batch); every gate is applied by
PennyLane's own :func:`pennylane.devices.qubit.apply_operation`.

With :math:`U_k(\varphi) = e^{i c_k \varphi G_k}` (:func:`pennylane.generator`, prefactor
:math:`c_k`), final state :math:`|\psi\rangle`, and, at gate :math:`k` of the backward sweep,
:math:`|\kappa_k\rangle = U_k \cdots U_1|0\rangle` and
:math:`|\beta_k\rangle = U_{k+1}^\dagger \cdots U_L^\dagger O |\psi\rangle`,

.. math::

    \frac{\partial \langle O\rangle}{\partial\varphi_k}
    = 2\,\mathrm{Re}\,\langle\beta_k| i c_k G_k |\kappa_k\rangle
    = -2 c_k\,\mathrm{Im}\,\langle\beta_k| G_k |\kappa_k\rangle ,

row by row of the batch. ``Rot(φ, θ, ω) = RZ(ω) RY(θ) RZ(φ)`` is swept as its three rotations.
The result equals :func:`~pennylane_qshiftdp.param_shift` with ``shots=None`` to float precision
(tested), so the certified bound Δ holds for it and clipping in the optimizer is unchanged.

Supported: ``expval`` of observables with a matrix, gates without parameters, and gates with one
parameter and a generator (``RX``, ``RY``, ``RZ``, ``PhaseShift``, ``CRX``..., ``IsingXX``...,
``MultiRZ``) or ``Rot`` (other gates only where no parameter of theirs is differentiated);
:func:`supports_adjoint` decides it from the tape's structure alone.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml
from pennylane.devices.qubit import apply_operation, create_initial_state
from pennylane.measurements import ExpectationMP

__all__: list[str] = []


def _sweep_ops(tape, diff: set) -> list[tuple]:
    """The tape's gates as ``(op, tape parameter index or None)``; a differentiated ``Rot`` as
    its three rotations; ``None`` for gates none of whose parameters is in ``diff``.

    Raises:
        NotImplementedError: for a differentiated gate the sweep cannot differentiate.
    """
    out: list[tuple] = []
    index = 0
    for op in tape.operations:
        mine = set(range(index, index + op.num_params))
        if not mine & diff:
            out.append((op, None))
        elif op.num_params == 1 and op.has_generator:
            out.append((op, index))
        elif isinstance(op, qml.Rot):
            phi, theta, omega = op.data
            w = op.wires
            out += [(qml.RZ(phi, w), index), (qml.RY(theta, w), index + 1),
                    (qml.RZ(omega, w), index + 2)]
        else:
            raise NotImplementedError(f"The adjoint route does not differentiate {op.name}.")
        index += op.num_params
    return out


def supports_adjoint(tape, diff_idx) -> bool:
    """Whether the adjoint sweep applies to ``tape`` and the parameters ``diff_idx``:
    ``expval`` measurements of observables with a matrix, no channels or mid-circuit
    measurements, and differentiated gates it can differentiate (decided from the structure)."""
    if not tape.measurements or any(
            not isinstance(mp, ExpectationMP) or mp.obs is None or not mp.obs.has_matrix
            for mp in tape.measurements):
        return False
    if any(isinstance(op, (qml.operation.Channel, qml.measurements.MidMeasureMP))
           or not op.has_matrix for op in tape.operations):
        return False
    try:
        _sweep_ops(tape, set(diff_idx))
    except NotImplementedError:
        return False
    return True


# Generators of PennyLane's gates, by gate class, wires and hyperparameters (they do not depend
# on the parameter).
_GENERATORS: dict[tuple, tuple] = {}


def _generator(op) -> tuple:
    """``(G, c)`` with :math:`U(\varphi) = e^{i c \varphi G}` (:func:`pennylane.generator`),
    computed once per gate class, wires and hyperparameters."""
    key = (type(op).__module__, type(op).__qualname__, tuple(op.wires),
           repr(sorted(op.hyperparameters.items(), key=lambda kv: kv[0])))
    if key not in _GENERATORS:
        generator, prefactor = qml.generator(op, format="prefactor")
        _GENERATORS[key] = (generator, float(np.real(prefactor)))
    return _GENERATORS[key]


def _inner(bra: np.ndarray, ket: np.ndarray) -> np.ndarray:
    r"""Row-wise :math:`\langle\beta|\kappa\rangle` of batched states ``(B, 2, ..., 2)``."""
    b = bra.shape[0]
    return np.einsum("bi,bi->b", bra.reshape(b, -1).conj(), ket.reshape(b, -1))


def _inner_imag(bra: np.ndarray, ket: np.ndarray) -> np.ndarray:
    r"""Row-wise :math:`\mathrm{Im}\langle\beta|\kappa\rangle` (no conjugated copy)."""
    b = bra.shape[0]
    br, kr = bra.reshape(b, -1), ket.reshape(b, -1)
    return (np.einsum("bi,bi->b", br.real, kr.imag) - np.einsum("bi,bi->b", br.imag, kr.real))


# ----------------------------------------------------------------------------- kernels
# The sweep keeps the ket and the M bras in one array ``(K, B, 2, ..., 2)`` (qubit w on axis
# 2 + w) and applies every gate to all of them at once. A one-qubit gate is a 2×2 matrix
# product on every amplitude pair of its qubit (the matrix broadcast over the batch when the
# gate is), CNOT and CZ are index swaps and sign flips; any other gate goes through PennyLane's
# ``apply_operation`` state by state. Derived here (elementary); tested against PennyLane's
# simulation and against parameter shift.


def _rotation(op) -> np.ndarray | None:
    """The 2×2 matrix of a one-qubit rotation, ``(2, 2)`` or ``(B, 2, 2)``; ``None`` for other
    gates."""
    name = op.name
    if name not in ("RX", "RY", "RZ", "PhaseShift"):
        return None
    theta = np.asarray(op.data[0], dtype=float)
    c, s = np.cos(theta / 2), np.sin(theta / 2)
    m = np.zeros(theta.shape + (2, 2), dtype=np.complex128)
    if name == "RX":
        m[..., 0, 0] = m[..., 1, 1] = c
        m[..., 0, 1] = m[..., 1, 0] = -1j * s
    elif name == "RY":
        m[..., 0, 0] = m[..., 1, 1] = c
        m[..., 0, 1], m[..., 1, 0] = -s, s
    elif name == "RZ":
        m[..., 0, 0], m[..., 1, 1] = np.exp(-0.5j * theta), np.exp(0.5j * theta)
    else:
        m[..., 0, 0], m[..., 1, 1] = 1.0, np.exp(1j * theta)
    return m


# Below this many amplitudes after the target qubit, the qubit's axis is moved last first: a 2×2
# matrix product over a short trailing axis is slow in numpy, one over a long leading axis fast.
_MIN_TRAILING = 8


def _one_qubit(states: np.ndarray, m: np.ndarray, wire: int) -> np.ndarray:
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


def _apply(op, states: np.ndarray, *, inverse: bool = False) -> np.ndarray:
    """``op`` (or its inverse) on every state of ``states`` ``(K, B, 2, ..., 2)``."""
    if len(op.wires) == 1:
        m = _rotation(op)
        if m is None:
            m = np.asarray(qml.matrix(op), dtype=np.complex128)
        if inverse:
            m = np.conj(np.swapaxes(m, -1, -2))
        return _one_qubit(states, m, int(op.wires[0]))
    if op.name in ("CNOT", "CZ"):
        c, t = (2 + int(w) for w in op.wires)
        out = states.copy()
        sel: list = [slice(None)] * states.ndim
        sel[c] = 1
        if op.name == "CNOT":
            a0, a1 = list(sel), list(sel)
            a0[t], a1[t] = 0, 1
            out[tuple(a0)], out[tuple(a1)] = states[tuple(a1)], states[tuple(a0)]
        else:
            sel[t] = 1
            out[tuple(sel)] = -states[tuple(sel)]
        return out
    gate = op.adjoint() if inverse else op
    return np.stack([apply_operation(gate, s, is_state_batched=True) for s in states])


# The generators of the one-qubit rotations: X, Y, Z and the projector on |1> (PhaseShift).
_GENERATOR_MATRICES = {
    "RX": np.array([[0, 1], [1, 0]], dtype=np.complex128),
    "RY": np.array([[0, -1j], [1j, 0]], dtype=np.complex128),
    "RZ": np.array([[1, 0], [0, -1]], dtype=np.complex128),
    "PhaseShift": np.array([[0, 0], [0, 1]], dtype=np.complex128),
}


def _apply_generator(op, generator, ket: np.ndarray) -> np.ndarray:
    r""":math:`G|\kappa\rangle` for the gate ``op``'s generator, ket ``(B, 2, ..., 2)``."""
    g = _GENERATOR_MATRICES.get(op.name)
    if g is not None and len(op.wires) == 1:
        return _one_qubit(ket[None], g, int(op.wires[0]))[0]
    return apply_operation(generator, ket, is_state_batched=True)


def adjoint_jacobian(tape, diff_idx: list[int]) -> tuple[np.ndarray, np.ndarray]:
    r"""Outputs and per-example Jacobian of ``tape`` with respect to the tape parameters
    ``diff_idx``, by one forward and one backward sweep over a batched state.

    Args:
        tape: a tape with numpy parameters, broadcast over the batch (or not), ``expval``
            measurements only (:func:`supports_adjoint`).
        diff_idx: tape parameter indices to differentiate (sorted).

    Returns:
        tuple: outputs ``(B, M)`` and Jacobian ``(B, M, len(diff_idx))``, with ``B`` the
        tape's batch size (1 for an unbroadcast tape) and ``M`` its number of measurements.
    """
    tape = tape.map_to_standard_wires()
    batch = tape.batch_size or 1
    ops = _sweep_ops(tape, set(diff_idx))
    state0 = create_initial_state(range(len(tape.wires)), like="numpy")
    states = np.broadcast_to(state0, (1, batch, *state0.shape)).astype(np.complex128)
    for op, _ in ops:
        states = _apply(op, states)
    ket = states[0]
    bras = [apply_operation(mp.obs, ket, is_state_batched=True) for mp in tape.measurements]
    outputs = np.stack([_inner(ket, bra).real for bra in bras], axis=1)
    jac = np.zeros((batch, len(bras), len(diff_idx)))
    column = {p: c for c, p in enumerate(diff_idx)}
    first = min((k for k, (_, p) in enumerate(ops) if p in column), default=len(ops))
    states = np.stack([ket, *bras])  # (1 + M, B, 2, ..., 2): the ket, then the bras
    for k in range(len(ops) - 1, first - 1, -1):
        op, p = ops[k]
        if p in column:
            generator, prefactor = _generator(op)
            g_ket = _apply_generator(op, generator, states[0])
            for m in range(len(bras)):
                jac[:, m, column[p]] = -2.0 * prefactor * _inner_imag(states[1 + m], g_ket)
        if k > first:
            states = _apply(op, states, inverse=True)
    return outputs, jac
