r"""Named channels: global and local depolarizing, bit flip, unitary, and measure-and-prepare.

Each constructor validates its parameters and returns a :class:`~qprldp_core.channels.Channel`
whose ``kind`` and ``params`` record what it is (``measure_prepare_channel`` returns a "general"
channel), so that certificates can use closed forms.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, as_matrix, check_probability, format_number
from ._checks import check_depolarizing_p, check_dimension
from .channel import Channel

__all__ = ["depolarizing", "local_depolarizing", "bit_flip", "unitary", "measure_prepare_channel"]


_PAULIS = (
    np.eye(2, dtype=np.complex128),
    np.array([[0, 1], [1, 0]], dtype=np.complex128),
    np.array([[0, -1j], [1j, 0]], dtype=np.complex128),
    np.array([[1, 0], [0, -1]], dtype=np.complex128),
)


# Largest number of qubits for which `local_depolarizing` materialises Kraus operators
# (4**n operators of size 2**n x 2**n).
_MAX_KRAUS_QUBITS = 6


def _depolarizing_kraus(p: float, d: int) -> tuple[np.ndarray, ...]:
    # I/d = (1/d²) Σ_ab W_ab ρ W_ab† over the d² Weyl (clock-shift) operators W_ab = X^a Z^b, so
    # D_p(ρ) = (1 − p (d² − 1)/d²) ρ + (p/d²) Σ_{(a,b)≠(0,0)} W_ab ρ W_ab†.
    c0 = 1.0 - p * (d * d - 1.0) / (d * d)
    c = p / (d * d)
    omega = np.exp(2j * np.pi / d)
    x = np.roll(np.eye(d), 1, axis=0)
    z = np.diag(omega ** np.arange(d))
    ops = [math.sqrt(max(c0, 0.0)) * np.eye(d, dtype=np.complex128)]
    for a in range(d):
        xa = np.linalg.matrix_power(x, a)
        for b in range(d):
            if a == 0 and b == 0:
                continue
            ops.append(math.sqrt(c) * (xa @ np.linalg.matrix_power(z, b)))
    return tuple(op.astype(np.complex128) for op in ops if np.any(op))


def depolarizing(p: float, d: int = 2, *, atol: float = DEFAULT_ATOL) -> Channel:
    r"""Global depolarizing channel :math:`\mathcal D_p(\rho) = (1-p)\rho + p I/d` on dimension d.

    Args:
        p: depolarizing probability in the CPTP range :math:`[0, d^2/(d^2-1)]` (the module's
            convention; for PennyLane's or toqito's parameter use the converters).
        d: dimension, integer ≥ 2.
        atol: tolerance of the trace-preservation check.

    Returns:
        A :class:`Channel` with ``kind == "depolarizing"`` and ``params == {"p": p, "d": d}``.
        Kraus operators are the :math:`d^2` Weyl operators.

    Raises:
        ValueError: if d < 2 or p is outside the CPTP range.

    Example:
        >>> depolarizing(0.5, 2)(np.diag([1.0, 0.0])).real
        array([[0.75, 0.  ], [0.  , 0.25]])
    """
    d = check_dimension(d, "d")
    p = check_depolarizing_p(p, d)
    return Channel(
        None,
        atol=atol,
        description=f"global depolarizing D_p, p={p:.6g}, d={d}",
        _kind="depolarizing",
        _params={"p": p, "d": d},
        _lazy=lambda: _depolarizing_kraus(p, d),
        _dims=(d, d),
    )


def local_depolarizing(p: float, n: int, *, atol: float = DEFAULT_ATOL) -> Channel:
    r"""Local depolarizing channel :math:`\mathcal D_p^{\otimes n}` on n qubits.

    Kraus operators (:math:`4^n` of them) are only built when ``.kraus`` is read (composition,
    tensor products, adjoint, Choi matrix), and only for n ≤ 6. :meth:`Channel.apply` acts qubit
    by qubit without them (memory :math:`4^n`), and certificates use only the metadata.

    Args:
        p: single-qubit depolarizing probability in the CPTP range [0, 4/3].
        n: number of qubits, integer ≥ 1.
        atol: tolerance of the trace-preservation check.

    Returns:
        A :class:`Channel` with ``kind == "local_depolarizing"`` and
        ``params == {"p": p, "n": n}``.

    Raises:
        ValueError: if n < 1 or p is outside [0, 4/3].

    Example:
        >>> ch = local_depolarizing(0.3, 50)
        >>> ch.input_dim == 2**50, ch.num_qubits
        (True, 50)
    """
    n = check_dimension(n, "n", minimum=1)
    p = check_depolarizing_p(p, 2)

    def build():
        if n > _MAX_KRAUS_QUBITS:
            raise NotImplementedError(
                f"local_depolarizing: Kraus operators are only built for n <= "
                f"{_MAX_KRAUS_QUBITS} qubits. Found n={n}."
            )
        single = _depolarizing_kraus(p, 2)
        ops = single
        for _ in range(n - 1):
            ops = tuple(np.kron(a, b) for a in ops for b in single)
        return ops

    return Channel(
        None,
        atol=atol,
        description=f"local depolarizing D_p^(⊗n), p={p:.6g} per qubit, n={n}",
        _kind="local_depolarizing",
        _params={"p": p, "n": n},
        _lazy=build,
        _dims=(2**n, 2**n),
    )


def bit_flip(p: float, *, atol: float = DEFAULT_ATOL) -> Channel:
    r"""Bit-flip channel :math:`\rho \mapsto (1-p)\rho + p X\rho X` on a qubit.

    Args:
        p: flip probability in [0, 1].
        atol: tolerance of the trace-preservation check.

    Returns:
        A :class:`Channel` with ``kind == "bit_flip"`` and ``params == {"p": p}``.

    Raises:
        ValueError: if p is outside [0, 1].

    Example:
        >>> bit_flip(0.25)(np.diag([1.0, 0.0])).real
        array([[0.75, 0.  ], [0.  , 0.25]])
    """
    p = check_probability(p, "p")
    ops = [math.sqrt(1 - p) * _PAULIS[0], math.sqrt(p) * _PAULIS[1]]
    return Channel(
        ops, atol=atol, description=f"bit flip, p={p:.6g}", _kind="bit_flip", _params={"p": p}
    )


def unitary(U: ArrayLike, *, atol: float = DEFAULT_ATOL) -> Channel:
    r"""Unitary channel :math:`\rho \mapsto U\rho U^\dagger`.

    Args:
        U: unitary matrix of shape (d, d) (checked within ``atol``).
        atol: tolerance of the unitarity check.

    Returns:
        A :class:`Channel` with ``kind == "unitary"`` and ``params == {"U": U}``.

    Raises:
        ValueError: if U is not square or not unitary.

    Example:
        >>> unitary(np.array([[0, 1], [1, 0]]))(np.diag([1.0, 0.0])).real
        array([[0., 0.], [0., 1.]])
    """
    u = as_matrix(U, "U")
    dev = float(np.max(np.abs(u.conj().T @ u - np.eye(u.shape[0]))))
    if dev > atol:
        raise ValueError(
            f"`U` must be unitary. Found max |U^dagger U - I| entry {format_number(dev)}."
        )
    return Channel(
        [u], atol=max(atol, 2 * dev), description=f"unitary on d={u.shape[0]}", _kind="unitary",
        _params={"U": u.copy()},
    )


def measure_prepare_channel(transition: ArrayLike) -> Channel:
    r"""Classical channel embedded as a quantum measure-and-prepare channel.

    .. math::
        \mathcal W(\rho) = \sum_{x, y} W[y, x]\,\langle x|\rho|x\rangle\, |y\rangle\langle y|,
        \qquad K_{yx} = \sqrt{W[y, x]}\,|y\rangle\langle x|.

    Args:
        transition: column-stochastic matrix :math:`W` of shape (d_out, d_in), entries in [0, 1],
            each column summing to 1 (:math:`W[y, x] = P(y \mid x)`).

    Returns:
        The :class:`~qprldp_core.channels.Channel`.

    Raises:
        ValueError: if ``transition`` is not a column-stochastic matrix.

    Example:
        >>> ch = measure_prepare_channel([[0.9, 0.2], [0.1, 0.8]])
        >>> np.round(ch(np.diag([1.0, 0])).real, 6)
        array([[0.9, 0. ], [0. , 0.1]])
    """
    w = np.asarray(transition, dtype=float)
    if w.ndim != 2:
        raise ValueError(f"`transition` must be a 2-D matrix. Found shape {w.shape}.")
    if np.any(w < 0) or np.any(w > 1) or not np.all(np.isfinite(w)):
        raise ValueError("`transition` must have entries in [0, 1]. Found an entry outside.")
    sums = w.sum(axis=0)
    if np.max(np.abs(sums - 1)) > 1e-12:
        raise ValueError(f"`transition` columns must sum to 1. Found column sums {sums.tolist()}.")
    dout, din = w.shape
    kraus = []
    for x in range(din):
        for y in range(dout):
            if w[y, x] > 0:
                k = np.zeros((dout, din), dtype=np.complex128)
                k[y, x] = math.sqrt(w[y, x])
                kraus.append(k)
    return Channel(kraus)
