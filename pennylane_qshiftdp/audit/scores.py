r"""Scores of a release: projection on the canary's direction, distance from the shot lattice."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["lattice_score", "projection_score"]


def projection_score(releases: ArrayLike, direction: ArrayLike) -> np.ndarray:
    r"""Releases projected on a direction: :math:`s_i = \langle r_i, u\rangle / \|u\|_2`.

    Args:
        releases: shape ``(trials, K)`` (or ``(trials,)`` for K = 1).
        direction: the canary's expected gradient direction, shape ``(K,)``, nonzero.

    Returns:
        np.ndarray: shape ``(trials,)``.

    Raises:
        ValueError: for a zero direction or mismatched shapes.

    Example:
        >>> projection_score([[3.0, 4.0], [1.0, 0.0]], [0.0, 2.0]).tolist()
        [4.0, 0.0]
    """
    r = np.asarray(releases, dtype=float)
    r = r.reshape(r.shape[0], -1) if r.ndim else r.reshape(1, 1)
    u = np.asarray(direction, dtype=float).reshape(-1)
    if u.size != r.shape[1]:
        raise ValueError(f"`direction` must have {r.shape[1]} entries (one per released "
                         f"coordinate). Found {u.size}.")
    norm = float(np.linalg.norm(u))
    if not (norm > 0 and math.isfinite(norm)):
        raise ValueError(f"`direction` must be a finite nonzero vector. Found {u.tolist()!r}.")
    return r @ (u / norm)


def lattice_score(releases: ArrayLike, step: ArrayLike) -> np.ndarray:
    r"""Euclidean distance of each release from the lattice :math:`h\mathbb Z^K`.

    .. math::

        s_i = \Bigl(\sum_k \bigl(r_{ik} - h_k \operatorname{round}(r_{ik}/h_k)\bigr)^2\Bigr)^{1/2}
        \in [0, \tfrac12\|h\|_2].

    Args:
        releases: shape ``(trials, K)`` (or ``(trials,)``).
        step: lattice step :math:`h > 0`, a scalar or one per coordinate.

    Returns:
        np.ndarray: shape ``(trials,)``.

    Raises:
        ValueError: for a step that is not positive and finite.

    Example:
        >>> lattice_score([1.0, 1.25, 0.4], 0.5).tolist()
        [0.0, 0.25, 0.09999999999999998]
    """
    r = np.asarray(releases, dtype=float)
    r = r.reshape(r.shape[0], -1) if r.ndim else r.reshape(1, 1)
    h = np.broadcast_to(np.asarray(step, dtype=float).reshape(-1), (r.shape[1],))
    if not np.all(np.isfinite(h) & (h > 0)):
        raise ValueError(f"`step` must be positive and finite. Found {step!r}.")
    resid = r - h * np.round(r / h)
    return np.linalg.norm(resid, axis=1)

