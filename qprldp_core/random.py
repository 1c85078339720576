r"""Random states, unitaries and channels for property tests and worst-case searches.

All functions take ``seed``: ``None``, an integer, or a :class:`numpy.random.Generator` (used as
is, so one generator can drive a whole sequence of draws). An integer seed repeats the draw.
"""

from __future__ import annotations

import math

import numpy as np

from ._numerics import as_generator
from ._validation import DEFAULT_ATOL
from .channels import Channel

__all__ = ["random_density_matrix", "random_unitary", "random_channel"]


def _check_dim(d, name):
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 1:
        raise ValueError(f"`{name}` must be a positive integer. Found {d!r}.")
    return int(d)


def random_density_matrix(
    d: int, *, rank: int | None = None, seed: int | np.random.Generator | None = None
) -> np.ndarray:
    r"""Random density matrix :math:`GG^\dagger/\mathrm{tr}(GG^\dagger)` with :math:`G` a
    :math:`d \times r` complex Ginibre matrix (induced measure).

    Args:
        d: dimension ≥ 1.
        rank: :math:`r \in [1, d]`; drawn uniformly from ``1..d`` if ``None``.
        seed: ``None``, an int or a ``numpy.random.Generator``.

    Returns:
        np.ndarray: complex array of shape ``(d, d)``, PSD with unit trace.

    Raises:
        ValueError: if ``d`` or ``rank`` is out of range.

    References:
        Życzkowski & Sommers, J. Phys. A 34, 7111 (2001), quant-ph/0012101 (induced measures).

    Example:
        >>> rho = random_density_matrix(3, rank=2, seed=1)
        >>> round(float(np.trace(rho).real), 12), int(np.linalg.matrix_rank(rho))
        (1.0, 2)
    """
    d = _check_dim(d, "d")
    rng = as_generator(seed)
    if rank is None:
        rank = int(rng.integers(1, d + 1))
    elif not 1 <= rank <= d:
        raise ValueError(f"`rank` must be in [1, {d}]. Found {rank!r}.")
    g = rng.normal(size=(d, rank)) + 1j * rng.normal(size=(d, rank))
    rho = g @ g.conj().T
    return rho / np.trace(rho).real


def random_unitary(d: int, *, seed: int | np.random.Generator | None = None) -> np.ndarray:
    r"""Haar-random unitary (QR of a Ginibre matrix with the phases of R's diagonal removed).

    Args:
        d: dimension ≥ 1.
        seed: ``None``, an int or a ``numpy.random.Generator``.

    Returns:
        np.ndarray: complex unitary of shape ``(d, d)``.

    Raises:
        ValueError: if ``d`` < 1.

    References:
        Mezzadri, Notices AMS 54, 592 (2007), math-ph/0609050.

    Example:
        >>> u = random_unitary(4, seed=0)
        >>> bool(np.allclose(u @ u.conj().T, np.eye(4)))
        True
    """
    d = _check_dim(d, "d")
    rng = as_generator(seed)
    g = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
    q, r = np.linalg.qr(g)
    return q * (np.diag(r) / np.abs(np.diag(r)))


def random_channel(
    din: int,
    dout: int | None = None,
    *,
    num_kraus: int | None = None,
    seed: int | np.random.Generator | None = None,
    atol: float = DEFAULT_ATOL,
) -> Channel:
    r"""Random channel from a random Stinespring isometry :math:`V: \mathbb C^{d_{in}} \to
    \mathbb C^{d_{out}} \otimes \mathbb C^{k}` (QR of a Ginibre matrix).

    Args:
        din: input dimension ≥ 1.
        dout: output dimension ≥ 1 (default ``din``).
        num_kraus: number :math:`k` of Kraus operators, at least
            :math:`\lceil d_{in}/d_{out}\rceil`; drawn from
            :math:`\lceil d_{in}/d_{out}\rceil + \{0, 1, 2\}` if ``None``.
        seed: ``None``, an int or a ``numpy.random.Generator``.
        atol: tolerance of the trace-preservation check.

    Returns:
        Channel: a CPTP map with ``k`` Kraus operators.

    Raises:
        ValueError: for dimensions or ``num_kraus`` out of range.

    Example:
        >>> ch = random_channel(2, 3, num_kraus=2, seed=0)
        >>> ch.input_dim, ch.output_dim, len(ch.kraus)
        (2, 3, 2)
    """
    din = _check_dim(din, "din")
    dout = din if dout is None else _check_dim(dout, "dout")
    kmin = math.ceil(din / dout)
    rng = as_generator(seed)
    if num_kraus is None:
        num_kraus = int(rng.integers(kmin, kmin + 3))
    elif isinstance(num_kraus, bool) or not isinstance(num_kraus, int) or num_kraus < kmin:
        raise ValueError(f"`num_kraus` must be an integer >= {kmin}. Found {num_kraus!r}.")
    k = num_kraus
    g = rng.normal(size=(dout * k, din)) + 1j * rng.normal(size=(dout * k, din))
    v, _ = np.linalg.qr(g)  # isometry C^din -> C^dout ⊗ C^k (Stinespring)
    return Channel([v[j * dout:(j + 1) * dout, :] for j in range(k)], atol=atol)
