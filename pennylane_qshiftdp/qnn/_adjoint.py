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
from pennylane.devices.qubit import apply_operation
from pennylane.measurements import ExpectationMP

from ..gradients._keys import value_key
from ..sampling._circuit_fusion import fuse_single_qubit
from ..sampling._state_vector import PAULI_MATRICES, apply_gate, evolve, one_qubit

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


# Generators of PennyLane's gates (they do not depend on the parameter), by the exact key of
# the gate class, wires and hyperparameters (arrays by their bytes, nested operators with their
# data: never a printed representation, which elides long arrays). At most _MAX_GENERATORS.
_GENERATORS: dict[tuple, tuple] = {}
_MAX_GENERATORS = 256


def _generator(op) -> tuple:
    """``(G, c)`` with :math:`U(\varphi) = e^{i c \varphi G}` (:func:`pennylane.generator`),
    computed once per gate class, wires and hyperparameters."""
    try:
        key: tuple | None = (type(op).__module__, type(op).__qualname__,
                             tuple(op.wires.tolist()), value_key(dict(op.hyperparameters)))
    except TypeError:
        key = None  # a hyperparameter without an exact key: computed every time
    if key is not None and key in _GENERATORS:
        return _GENERATORS[key]
    generator, prefactor = qml.generator(op, format="prefactor")
    found = (generator, float(np.real(prefactor)))
    if key is not None:
        if len(_GENERATORS) >= _MAX_GENERATORS:
            _GENERATORS.clear()
        _GENERATORS[key] = found
    return found


def _inner(bra: np.ndarray, ket: np.ndarray) -> np.ndarray:
    r"""Row-wise :math:`\langle\beta|\kappa\rangle` of batched states ``(B, 2, ..., 2)``."""
    b = bra.shape[0]
    return np.einsum("bi,bi->b", bra.reshape(b, -1).conj(), ket.reshape(b, -1))


def _inner_imag(bra: np.ndarray, ket: np.ndarray) -> np.ndarray:
    r"""Row-wise :math:`\mathrm{Im}\langle\beta|\kappa\rangle` (no conjugated copy)."""
    b = bra.shape[0]
    br, kr = bra.reshape(b, -1), ket.reshape(b, -1)
    return (np.einsum("bi,bi->b", br.real, kr.imag) - np.einsum("bi,bi->b", br.imag, kr.real))


# The generators of the one-qubit rotations: X, Y, Z and the projector on |1> (PhaseShift).
_GENERATOR_MATRICES = {
    "RX": PAULI_MATRICES["X"],
    "RY": PAULI_MATRICES["Y"],
    "RZ": PAULI_MATRICES["Z"],
    "PhaseShift": np.array([[0, 0], [0, 1]], dtype=np.complex128),
}


def _apply_generator(op, generator, ket: np.ndarray) -> np.ndarray:
    r""":math:`G|\kappa\rangle` for the gate ``op``'s generator, ket ``(B, 2, ..., 2)``."""
    g = _GENERATOR_MATRICES.get(op.name)
    if g is not None and len(op.wires) == 1:
        return one_qubit(ket[None], g, int(op.wires[0]))[0]
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
    states = evolve(fuse_single_qubit(tape.operations), len(tape.wires), batch)  # fused
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
            states = apply_gate(op, states, inverse=True)
    return outputs, jac
