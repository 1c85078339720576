r"""Quantum channels from Kraus operators, and the depolarizing family.

Convention (fixed): the depolarizing channel on dimension d is

.. math::

    \mathcal D_p(\rho) = (1 - p)\,\rho + p\,\frac{I}{d},

completely positive and trace preserving (CPTP) exactly for :math:`p \in [0, d^2/(d^2 - 1)]`.
PennyLane's single-qubit ``qml.DepolarizingChannel(q)`` is :math:`\mathcal D_p` with
:math:`p = 4q/3`; toqito's ``depolarizing(d, param)`` is :math:`\mathcal D_p` with
``param = 1 - p``. Use the converters below instead of passing an ambiguous "p".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from types import MappingProxyType

import numpy as np

from ._validation import DEFAULT_ATOL, _as_matrix, _check_real, _fmt, check_atol, check_probability

__all__ = [
    "Channel",
    "HeisenbergMap",
    "depolarizing",
    "local_depolarizing",
    "bit_flip",
    "unitary",
    "depolarizing_p_from_pennylane",
    "depolarizing_p_to_pennylane",
    "depolarizing_p_from_toqito",
    "depolarizing_p_to_toqito",
    "depolarizing_p_max",
    "PARAM_ATOL",
]

_PAULIS = (
    np.eye(2, dtype=np.complex128),
    np.array([[0, 1], [1, 0]], dtype=np.complex128),
    np.array([[0, -1j], [1j, 0]], dtype=np.complex128),
    np.array([[1, 0], [0, -1]], dtype=np.complex128),
)

# Boundary tolerance of the depolarizing parameter converters and of the CPTP-range check: a value
# within PARAM_ATOL outside an end of its range is taken to *be* that end and clamped onto it
# exactly. The ends are computed in double precision (1 - d^2/(d^2 - 1) is 2 ulps above -1/15 for
# d = 4), so a user's -1/15 must not be rejected. 1e-12 is ~4500 ulps at 1: far above the rounding
# of the one-line conversion formulas, far below any physically meaningful difference in p.
PARAM_ATOL = 1e-12

# Largest number of qubits for which `local_depolarizing` materialises Kraus operators
# (4**n operators of size 2**n x 2**n).
_MAX_KRAUS_QUBITS = 6


def depolarizing_p_max(d: int) -> float:
    r"""Largest p for which :math:`\mathcal D_p` on dimension d is CPTP: :math:`d^2/(d^2-1)`.

    Args:
        d: dimension, integer ≥ 2.

    Returns:
        :math:`d^2/(d^2 - 1)`.

    Example:
        >>> depolarizing_p_max(2)
        1.3333333333333333
    """
    d = _check_dim(d, "d")
    return d * d / (d * d - 1.0)


def _check_dim(d, name: str, minimum: int = 2) -> int:
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise TypeError(f"`{name}` must be an integer. Found {type(d).__name__}.")
    d = int(d)
    if d < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Found {d}.")
    return d


def _in_range(x: float, lo: float, hi: float) -> float | None:
    """x clamped onto [lo, hi] if it lies within PARAM_ATOL of it, else None."""
    if lo <= x <= hi:
        return x
    if lo - PARAM_ATOL <= x < lo:
        return lo
    if hi < x <= hi + PARAM_ATOL:
        return hi
    return None


def _check_dep_p(p, d: int, name: str = "p") -> float:
    p = _check_real(p, name)
    pmax = d * d / (d * d - 1.0)
    out = _in_range(p, 0.0, pmax)
    if out is None:
        raise ValueError(
            f"`{name}` must be in [0, {pmax:.6g}] (the CPTP range d^2/(d^2-1) for d={d}). "
            f"Found {_fmt(p)}."
        )
    return out


class HeisenbergMap:
    r"""The adjoint (Heisenberg-picture) map :math:`\mathcal A^\dagger(X)=\sum_k K_k^\dagger XK_k`.

    Defined by :math:`\mathrm{Tr}[X\,\mathcal A(\rho)] = \mathrm{Tr}[\mathcal A^\dagger(X)\,\rho]`.
    The adjoint of a CPTP map is completely positive and *unital* (:math:`\mathcal A^\dagger(I) =
    I`) but in general *not* trace preserving, so it is not a :class:`Channel`.

    Args:
        kraus: the Kraus operators :math:`K_k` of the Schrödinger-picture channel.
    """

    def __init__(self, kraus: tuple[np.ndarray, ...]):
        self._kraus = tuple(kraus)

    @property
    def kraus(self) -> tuple[np.ndarray, ...]:
        """Kraus operators of the Schrödinger-picture channel."""
        return self._kraus

    @property
    def input_dim(self) -> int:
        """Dimension of the observables it accepts (the channel's output dimension)."""
        return int(self._kraus[0].shape[0])

    @property
    def output_dim(self) -> int:
        """Dimension of the observables it returns (the channel's input dimension)."""
        return int(self._kraus[0].shape[1])

    def __call__(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.complex128)
        if x.shape != (self.input_dim, self.input_dim):
            raise ValueError(
                f"`x` must have shape ({self.input_dim}, {self.input_dim}). Found {x.shape}."
            )
        return sum(k.conj().T @ x @ k for k in self._kraus)

    def __repr__(self) -> str:
        n, a, b = len(self._kraus), self.input_dim, self.output_dim
        return f"HeisenbergMap({n} Kraus operators, {a}->{b})"


class Channel:
    r"""A CPTP map given by Kraus operators, :math:`\mathcal A(\rho) = \sum_k K_k\rho K_k^\dagger`.

    Instances are immutable: the Kraus operators are copied, made read-only, and there are no
    setters. ``kind`` and ``params`` carry metadata for certificates (``"depolarizing"``,
    ``"local_depolarizing"``, ``"bit_flip"``, ``"unitary"`` or ``"general"``); only the
    constructors of this module set them, so a channel built from Kraus operators is always
    ``"general"`` and never receives a closed-form certificate it has not earned.

    Args:
        kraus: sequence of arrays of shape (d_out, d_in) (a single 2-D array is one operator).
        atol: tolerance of the trace-preservation check
            :math:`\max_{ij}|(\sum_k K_k^\dagger K_k - I)_{ij}| \le \mathrm{atol}`.
        description: human-readable description (defaults to a generic one).

    Raises:
        TypeError: if ``kraus`` is not a sequence of numeric arrays.
        ValueError: if the operators have inconsistent shapes or are not trace preserving.

    Example:
        >>> ch = Channel([np.sqrt(0.9) * np.eye(2), np.sqrt(0.1) * np.array([[0, 1], [1, 0]])])
        >>> ch(np.diag([1.0, 0.0])).real
        array([[0.9, 0. ], [0. , 0.1]])
    """

    __slots__ = ("_kraus", "_din", "_dout", "_description", "_kind", "_params", "_lazy")

    def __init__(
        self,
        kraus,
        *,
        atol: float = DEFAULT_ATOL,
        description: str | None = None,
        _kind: str = "general",
        _params: dict | None = None,
        _lazy: Callable[[], tuple[np.ndarray, ...]] | None = None,
        _dims: tuple[int, int] | None = None,
    ):
        atol = check_atol(atol)
        object.__setattr__(self, "_lazy", None)
        if _lazy is not None:
            # Kraus operators built only when asked for (local depolarizing on many qubits).
            object.__setattr__(self, "_kraus", None)
            object.__setattr__(self, "_lazy", _lazy)
            din, dout = _dims
        else:
            ops = self._check_kraus(kraus, atol)
            object.__setattr__(self, "_kraus", ops)
            dout, din = ops[0].shape
        object.__setattr__(self, "_din", int(din))
        object.__setattr__(self, "_dout", int(dout))
        object.__setattr__(
            self,
            "_description",
            description or f"general channel ({din}->{dout}) with Kraus operators",
        )
        object.__setattr__(self, "_kind", _kind)
        object.__setattr__(self, "_params", MappingProxyType(dict(_params or {})))

    @staticmethod
    def _check_kraus(kraus, atol: float) -> tuple[np.ndarray, ...]:
        if isinstance(kraus, np.ndarray) and kraus.ndim == 2:
            kraus = [kraus]
        if isinstance(kraus, str | bytes) or not hasattr(kraus, "__iter__"):
            raise TypeError(
                f"`kraus` must be a sequence of matrices. Found {type(kraus).__name__}."
            )
        ops = []
        for i, k in enumerate(kraus):
            a = np.asarray(k)
            if a.dtype == object or not np.issubdtype(a.dtype, np.number):
                raise TypeError(f"`kraus[{i}]` must be a numeric matrix. Found dtype {a.dtype}.")
            if a.ndim != 2:
                raise ValueError(f"`kraus[{i}]` must be a 2-D matrix. Found shape {a.shape}.")
            if not np.all(np.isfinite(a)):
                raise ValueError(f"`kraus[{i}]` must have finite entries. Found a NaN or inf.")
            ops.append(a.astype(np.complex128))
        if not ops:
            raise ValueError("`kraus` must contain at least one operator. Found 0.")
        shape = ops[0].shape
        for i, a in enumerate(ops):
            if a.shape != shape:
                raise ValueError(
                    f"`kraus` operators must share one shape. Found {shape} and {a.shape} "
                    f"(kraus[{i}])."
                )
        s = sum(a.conj().T @ a for a in ops)
        dev = float(np.max(np.abs(s - np.eye(shape[1]))))
        if dev > atol:
            raise ValueError(
                "`kraus` must be trace preserving (sum_k K_k^dagger K_k = I). "
                f"Found max deviation {_fmt(dev)}."
            )
        for a in ops:
            a.setflags(write=False)
        return tuple(ops)

    def __setattr__(self, name, value):
        raise AttributeError("Channel is immutable.")

    # -- metadata ---------------------------------------------------------------------------
    @property
    def kraus(self) -> tuple[np.ndarray, ...]:
        """Kraus operators, a tuple of read-only arrays of shape (d_out, d_in)."""
        if self._kraus is None:
            ops = self._check_kraus(list(self._lazy()), 1e-6)
            object.__setattr__(self, "_kraus", ops)
        return self._kraus

    @property
    def input_dim(self) -> int:
        """Input dimension d_in."""
        return self._din

    @property
    def output_dim(self) -> int:
        """Output dimension d_out."""
        return self._dout

    @property
    def description(self) -> str:
        """Human-readable description used in certificates."""
        return self._description

    @property
    def kind(self) -> str:
        """One of "depolarizing", "local_depolarizing", "bit_flip", "unitary", "general"."""
        return self._kind

    @property
    def params(self):
        """Read-only mapping of the constructor's parameters (e.g. ``{"p": 0.3, "d": 2}``)."""
        return self._params

    @property
    def depolarizing_p(self) -> float | None:
        """The p of :math:`\\mathcal D_p` (per qubit for local depolarizing), else None."""
        if self._kind in ("depolarizing", "local_depolarizing"):
            return float(self._params["p"])
        return None

    @property
    def num_qubits(self) -> int | None:
        """Number of qubits if the dimension is a power of two, else None."""
        if self._kind == "local_depolarizing":
            return int(self._params["n"])
        d = self._din
        if d == self._dout and d & (d - 1) == 0:
            return d.bit_length() - 1
        return None

    def __repr__(self) -> str:
        return f"Channel({self._description})"

    # -- action -----------------------------------------------------------------------------
    def apply(self, rho) -> np.ndarray:
        r"""Apply the channel: :math:`\sum_k K_k \rho K_k^\dagger`.

        Args:
            rho: matrix of shape (d_in, d_in) (not required to be a state: the map is linear).

        Returns:
            complex128 array of shape (d_out, d_out).

        Raises:
            ValueError: if the shape is wrong.
        """
        r = _as_matrix(rho, "rho")
        if r.shape != (self._din, self._din):
            raise ValueError(
                f"`rho` must have shape ({self._din}, {self._din}). Found {r.shape}."
            )
        if self._kind == "depolarizing":
            p = float(self._params["p"])
            return (1 - p) * r + p * np.trace(r) * np.eye(self._din) / self._din
        if self._kind == "local_depolarizing":
            return _local_depolarizing_apply(r, float(self._params["p"]), int(self._params["n"]))
        out = sum(k @ r @ k.conj().T for k in self.kraus)
        return (out + out.conj().T) / 2 if np.allclose(r, r.conj().T) else out

    def __call__(self, rho) -> np.ndarray:
        """Alias of :meth:`apply`."""
        return self.apply(rho)

    def compose(self, other: Channel) -> Channel:
        r"""Sequential composition :math:`\mathcal A \circ \mathcal B` (``self ∘ other``).

        ``other`` is applied *first*: ``self.compose(other)(rho) == self(other(rho))``.

        Args:
            other: channel with ``other.output_dim == self.input_dim``.

        Returns:
            The composed :class:`Channel` (kind "general").

        Raises:
            ValueError: if the dimensions do not match.
        """
        if not isinstance(other, Channel):
            raise TypeError(f"`other` must be a Channel. Found {type(other).__name__}.")
        if other.output_dim != self.input_dim:
            raise ValueError(
                f"`other` output dimension must equal self input dimension {self.input_dim}. "
                f"Found {other.output_dim}."
            )
        ops = [a @ b for a in self.kraus for b in other.kraus]
        return Channel(
            ops,
            atol=1e-6,
            description=f"({self.description}) ∘ ({other.description})",
        )

    def tensor(self, other: Channel) -> Channel:
        r"""Tensor product :math:`\mathcal A \otimes \mathcal B` (self on the first factor).

        Args:
            other: any channel.

        Returns:
            The product :class:`Channel` (kind "general").
        """
        if not isinstance(other, Channel):
            raise TypeError(f"`other` must be a Channel. Found {type(other).__name__}.")
        ops = [np.kron(a, b) for a in self.kraus for b in other.kraus]
        return Channel(
            ops, atol=1e-6, description=f"({self.description}) ⊗ ({other.description})"
        )

    def adjoint(self) -> HeisenbergMap:
        r"""Heisenberg-picture adjoint :math:`\mathcal A^\dagger(X) = \sum_k K_k^\dagger X K_k`.

        Returns:
            A :class:`HeisenbergMap`: unital and completely positive, but not trace preserving
            in general (so not a :class:`Channel`).

        Example:
            >>> ch = depolarizing(0.5, 2)
            >>> np.allclose(ch.adjoint()(np.eye(2)), np.eye(2))
            True
        """
        return HeisenbergMap(self.kraus)

    def choi(self) -> np.ndarray:
        r"""Unnormalised Choi matrix :math:`J = \sum_{ij} |i\rangle\langle j| \otimes
        \mathcal A(|i\rangle\langle j|)`.

        Returns:
            PSD array of shape (d_in d_out, d_in d_out) with
            :math:`\mathrm{Tr}_{\mathrm{out}} J = I_{d_{in}}`.

        Example:
            >>> float(np.trace(unitary(np.eye(2)).choi()).real)
            2.0
        """
        din, dout = self._din, self._dout
        j = np.zeros((din * dout, din * dout), dtype=np.complex128)
        for k in self.kraus:
            # vec of K with input index first: |K>> = sum_i |i> ⊗ K|i>
            v = k.T.reshape(-1)  # v[i*dout + a] = K[a, i]
            j += np.outer(v, v.conj())
        return j


def _local_depolarizing_apply(x: np.ndarray, p: float, n: int) -> np.ndarray:
    r"""Apply :math:`\mathcal D_p^{\otimes n}` qubit by qubit without Kraus operators.

    On qubit i: :math:`X \mapsto (1-p)X + p\,\mathrm{Tr}_i(X)\otimes I_i/2` (self-adjoint, so
    this is also the Heisenberg-picture action).
    """
    t = x.reshape((2,) * (2 * n))
    for i in range(n):
        tr = np.trace(t, axis1=i, axis2=i + n)  # partial trace over qubit i
        mixed = np.expand_dims(np.expand_dims(tr, i), i + n) * (np.eye(2).reshape(
            [2 if k in (i, i + n) else 1 for k in range(2 * n)]) / 2)
        t = (1 - p) * t + p * mixed
    return t.reshape(x.shape)


# -- constructors ------------------------------------------------------------------------------
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
    d = _check_dim(d, "d")
    p = _check_dep_p(p, d)
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
    n = _check_dim(n, "n", minimum=1)
    p = _check_dep_p(p, 2)

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


def unitary(U, *, atol: float = DEFAULT_ATOL) -> Channel:
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
    u = _as_matrix(U, "U")
    dev = float(np.max(np.abs(u.conj().T @ u - np.eye(u.shape[0]))))
    if dev > atol:
        raise ValueError(f"`U` must be unitary. Found max |U^dagger U - I| entry {_fmt(dev)}.")
    return Channel(
        [u], atol=max(atol, 2 * dev), description=f"unitary on d={u.shape[0]}", _kind="unitary",
        _params={"U": u.copy()},
    )


# -- parameter converters ----------------------------------------------------------------------
def depolarizing_p_from_pennylane(q: float) -> float:
    r"""Convert PennyLane's single-qubit ``DepolarizingChannel(q)`` to p: :math:`p = 4q/3`.

    PennyLane's Kraus form is :math:`(1-q)\rho + \tfrac q3(X\rho X + Y\rho Y + Z\rho Z)
    = (1 - \tfrac{4q}{3})\rho + \tfrac{4q}{3}\tfrac I2`.

    Args:
        q: PennyLane's parameter in [0, 1]; a value within :data:`PARAM_ATOL` outside the range
            is clamped onto its end.

    Returns:
        p in [0, 4/3] (exactly :func:`depolarizing_p_max` (2) for q = 1).

    Raises:
        ValueError: if q is outside [0, 1] by more than :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_from_pennylane(0.75)
        1.0
        >>> depolarizing_p_from_pennylane(1 + 1e-15) == depolarizing_p_max(2)
        True
    """
    q = _check_real(q, "q")
    q_in = _in_range(q, 0.0, 1.0)
    if q_in is None:
        raise ValueError(f"`q` must be in [0, 1]. Found {_fmt(q)}.")
    return min(4.0 * q_in / 3.0, depolarizing_p_max(2))


def depolarizing_p_to_pennylane(p: float) -> float:
    r"""Inverse of :func:`depolarizing_p_from_pennylane`: :math:`q = 3p/4`.

    Args:
        p: single-qubit depolarizing probability in [0, 4/3]; a value within :data:`PARAM_ATOL`
            outside the range is clamped onto its end.

    Returns:
        PennyLane's q in [0, 1].

    Raises:
        ValueError: if p is outside [0, 4/3] by more than :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_to_pennylane(1.0)
        0.75
        >>> depolarizing_p_to_pennylane(4 / 3)
        1.0
    """
    p = _check_dep_p(p, 2)
    return min(1.0, 3.0 * p / 4.0)


def depolarizing_p_from_toqito(param: float, d: int = 2) -> float:
    r"""Convert toqito's ``depolarizing(d, param)`` to p: :math:`p = 1 - \mathrm{param}`.

    toqito's channel is :math:`\mathrm{param}\cdot\rho + (1-\mathrm{param}) I/d`.

    Args:
        param: toqito's parameter; the CPTP range is :math:`[1 - d^2/(d^2-1), 1] =
            [-1/(d^2-1), 1]`. A value within :data:`PARAM_ATOL` outside it (e.g. ``-1/3`` for
            d = 2, which double precision puts an ulp below ``1 - 4/3``) is clamped onto its end.
        d: dimension (only used for the range check).

    Returns:
        p in :math:`[0, d^2/(d^2-1)]`; exactly :func:`depolarizing_p_max` (d) at the lower end.

    Raises:
        ValueError: if the resulting p is outside the CPTP range by more than
            :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_from_toqito(0.7)
        0.30000000000000004
        >>> depolarizing_p_from_toqito(-1 / 3, 2) == depolarizing_p_max(2)
        True
    """
    param = _check_real(param, "param")
    d = _check_dim(d, "d")
    pmax = d * d / (d * d - 1.0)
    lo = -1.0 / (d * d - 1.0)  # = 1 - pmax, written without cancellation
    param_in = _in_range(param, lo, 1.0)
    if param_in is None:
        raise ValueError(
            f"`param` must be in [{lo:.6g}, 1] (toqito's CPTP range for d={d}). "
            f"Found {_fmt(param)}."
        )
    if param_in == lo:
        return pmax  # the exact boundary, whatever rounding 1 - lo would add
    return min(max(1.0 - param_in, 0.0), pmax)


def depolarizing_p_to_toqito(p: float, d: int = 2) -> float:
    r"""Inverse of :func:`depolarizing_p_from_toqito`: ``param = 1 - p``.

    Args:
        p: depolarizing probability in :math:`[0, d^2/(d^2-1)]`; a value within
            :data:`PARAM_ATOL` outside the range is clamped onto its end.
        d: dimension.

    Returns:
        toqito's parameter in :math:`[-1/(d^2-1), 1]` (exactly ``-1/(d**2 - 1)`` at the end).

    Raises:
        ValueError: if p is outside the CPTP range by more than :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_to_toqito(0.25)
        0.75
        >>> depolarizing_p_to_toqito(4 / 3, 2)
        -0.3333333333333333
    """
    d = _check_dim(d, "d")
    p = _check_dep_p(p, d)
    lo = -1.0 / (d * d - 1.0)
    if p == d * d / (d * d - 1.0):
        return lo  # the exact boundary -1/(d^2 - 1), not 1 - pmax with its cancellation
    return max(1.0 - p, lo)
