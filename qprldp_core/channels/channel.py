r"""The :class:`Channel` class (a CPTP map from Kraus operators) and its adjoint map."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, as_matrix, check_atol, format_number
from ._apply import local_depolarizing_apply

__all__ = ["Channel", "HeisenbergMap"]


class HeisenbergMap:
    r"""The adjoint (Heisenberg-picture) map :math:`\mathcal A^\dagger(X)=\sum_k K_k^\dagger XK_k`.

    Defined by :math:`\mathrm{Tr}[X\,\mathcal A(\rho)] = \mathrm{Tr}[\mathcal A^\dagger(X)\,\rho]`.
    The adjoint of a CPTP map is completely positive and *unital* (:math:`\mathcal A^\dagger(I) =
    I`) but in general *not* trace preserving, so it is not a :class:`Channel`.

    Args:
        kraus: the Kraus operators :math:`K_k` of the Schrödinger-picture channel.
    """

    def __init__(self, kraus: tuple[np.ndarray, ...]) -> None:
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

    def __call__(self, x: ArrayLike) -> np.ndarray:
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
    constructors of :mod:`qprldp_core.channels` set them, so a channel built from Kraus operators
    is always ``"general"`` and never receives a closed-form certificate it has not earned.

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
    # Types of the slots (set once in __init__ through object.__setattr__).
    _kraus: tuple[np.ndarray, ...] | None
    _din: int
    _dout: int
    _description: str
    _kind: str
    _params: Mapping[str, Any]
    _lazy: Callable[[], tuple[np.ndarray, ...]] | None

    def __init__(
        self,
        kraus: Sequence[ArrayLike] | np.ndarray | None,
        *,
        atol: float = DEFAULT_ATOL,
        description: str | None = None,
        _kind: str = "general",
        _params: dict | None = None,
        _lazy: Callable[[], tuple[np.ndarray, ...]] | None = None,
        _dims: tuple[int, int] | None = None,
    ) -> None:
        atol = check_atol(atol)
        object.__setattr__(self, "_lazy", None)
        if _lazy is not None:
            # Kraus operators built only when asked for (local depolarizing on many qubits).
            object.__setattr__(self, "_kraus", None)
            object.__setattr__(self, "_lazy", _lazy)
            din, dout = cast(tuple[int, int], _dims)
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
                f"Found max deviation {format_number(dev)}."
            )
        for a in ops:
            a.setflags(write=False)
        return tuple(ops)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Channel is immutable.")

    # -- metadata ---------------------------------------------------------------------------
    @property
    def kraus(self) -> tuple[np.ndarray, ...]:
        """Kraus operators, a tuple of read-only arrays of shape (d_out, d_in)."""
        if self._kraus is None:
            build = cast(Callable[[], tuple[np.ndarray, ...]], self._lazy)
            ops = self._check_kraus(list(build()), 1e-6)
            object.__setattr__(self, "_kraus", ops)
        return cast(tuple[np.ndarray, ...], self._kraus)

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
    def params(self) -> Mapping[str, Any]:
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
    def apply(self, rho: ArrayLike) -> np.ndarray:
        r"""Apply the channel: :math:`\sum_k K_k \rho K_k^\dagger`.

        Args:
            rho: matrix of shape (d_in, d_in) (not required to be a state: the map is linear).

        Returns:
            complex128 array of shape (d_out, d_out).

        Raises:
            ValueError: if the shape is wrong.
        """
        r = as_matrix(rho, "rho")
        if r.shape != (self._din, self._din):
            raise ValueError(
                f"`rho` must have shape ({self._din}, {self._din}). Found {r.shape}."
            )
        if self._kind == "depolarizing":
            p = float(self._params["p"])
            return (1 - p) * r + p * np.trace(r) * np.eye(self._din) / self._din
        if self._kind == "local_depolarizing":
            return local_depolarizing_apply(r, float(self._params["p"]), int(self._params["n"]))
        out = sum(k @ r @ k.conj().T for k in self.kraus)
        return (out + out.conj().T) / 2 if np.allclose(r, r.conj().T) else out

    def __call__(self, rho: ArrayLike) -> np.ndarray:
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
            >>> from qprldp_core.channels import depolarizing
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
            >>> from qprldp_core.channels import unitary
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
