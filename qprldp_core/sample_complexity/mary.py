r"""m-ary symmetric testing: the pretty-good measurement and bounds on the copies needed."""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, check_density_matrix, eigh_psd, support_tol
from ..contraction import trace_distance_contraction_bound
from ..divergences import fidelity, trace_distance
from ._common import (
    COUNT_SLACK,
    check_copies,
    check_open01,
    fid_lower_n,
    private_lower,
    round_count_down,
    td_lower_n,
)
from ._tensor_powers import hermitian_part, tensor_power
from .copy_bounds import CopyBounds

__all__ = ["pretty_good_measurement_error", "mary_copy_bounds", "private_mary_lower_bound"]


def _check_states_priors(states, priors, atol):
    if len(states) < 2:
        raise ValueError(f"`states` must contain at least 2 states. Found {len(states)}.")
    sts = [check_density_matrix(x, f"states[{i}]", atol=atol) for i, x in enumerate(states)]
    for i, x in enumerate(sts):
        if x.shape != sts[0].shape:
            raise ValueError(
                f"`states[{i}]` must have shape {sts[0].shape}. Found shape {x.shape}."
            )
    if priors is None:
        pri = np.full(len(sts), 1.0 / len(sts))
    else:
        pri = np.asarray(priors, dtype=float)
        if pri.shape != (len(sts),):
            raise ValueError(
                f"`priors` must have length {len(sts)}. Found shape {pri.shape}."
            )
        if np.any(pri <= 0) or abs(pri.sum() - 1) > 1e-9:
            raise ValueError(
                f"`priors` must be positive and sum to 1. Found {pri.tolist()}."
            )
    return sts, pri


def pretty_good_measurement_error(
    states: Sequence[ArrayLike],
    *,
    priors: ArrayLike | None = None,
    copies: int = 1,
    atol: float = DEFAULT_ATOL,
) -> float:
    r"""Error of the pretty-good measurement on :math:`\{\pi_i, \rho_i^{\otimes n}\}`.

    .. math::
        E_i = S^{-1/2}\pi_i\rho_i^{\otimes n}S^{-1/2},\quad S = \sum_i\pi_i\rho_i^{\otimes n},
        \qquad P_e^{\rm PGM} = 1 - \sum_i\pi_i\mathrm{Tr}[E_i\rho_i^{\otimes n}]
        \ \ge P_e^{\rm opt}.

    Args:
        states: sequence of m ≥ 2 density matrices of shape (d, d).
        priors: probabilities :math:`\pi_i > 0` summing to 1 (uniform if ``None``).
        copies: :math:`n \ge 0` (:math:`d^n \le 4096`).
        atol: tolerance of the density-matrix checks (the pseudo-inverse drops eigenvalues of
            S at or below :func:`~qprldp_core._validation.support_tol`, 1e-13 for d^n ≤ 28).

    Returns:
        :math:`P_e^{\rm PGM} \in [0, 1]`, an upper bound on the optimal error.

    Raises:
        ValueError: if an argument is invalid.

    References:
        Hausladen, Wootters (1994); Barnum, Knill, arXiv:quant-ph/0004088.

    Example:
        >>> pretty_good_measurement_error([np.diag([1.0, 0]), np.diag([0, 1.0])])
        0.0
    """
    sts, pri = _check_states_priors(states, priors, atol)
    n = check_copies(copies)
    pw = [tensor_power(x, n) for x in sts]
    big_s = sum(p * x for p, x in zip(pri, pw, strict=True))
    # Pseudo-inverse square root on supp S: eigenvalues <= support_tol are S's kernel (ρ_i have
    # no weight there beyond rounding noise, as π_i ρ_i <= S); all others are inverted unchanged.
    w, v = eigh_psd(hermitian_part(big_s), atol=atol)
    keep = w > support_tol(w.size)
    inv = np.where(keep, 1.0 / np.sqrt(np.where(keep, w, 1.0)), 0.0)
    s_inv = (v * inv) @ v.conj().T
    succ = 0.0
    for p, x in zip(pri, pw, strict=True):
        e = s_inv @ (p * x) @ s_inv
        succ += p * float(np.real(np.trace(e @ x)))
    return float(min(1.0, max(0.0, 1.0 - succ)))


def mary_copy_bounds(
    states: Sequence[ArrayLike],
    *,
    priors: ArrayLike | None = None,
    alpha: float,
    atol: float = DEFAULT_ATOL,
) -> CopyBounds:
    r"""Bounds on :math:`n^*` for m-ary symmetric testing with optimal error :math:`\le\alpha`.

    * Lower (pairwise reduction, derived here, ``docs/qprldp.md`` §6.5): any m-outcome POVM
      induces for each pair :math:`i \ne j` a binary test whose error with priors
      :math:`(\pi_i, \pi_j)` is at most the m-ary error, so :math:`P_e^{(m)}(n) \ge
      (\pi_i + \pi_j)P_e^{(i,j)}(n)`; apply :func:`symmetric_copy_bounds`'s lower bounds to
      each pair with target :math:`\alpha/(\pi_i + \pi_j)` and take the maximum.
    * Upper (Barnum–Knill): :math:`P_e^{\rm opt}(n) \le P_e^{\rm PGM}(n) \le \sum_{i\ne j}
      \sqrt{\pi_i\pi_j}\,\sqrt{F(\rho_i, \rho_j)}^{\,n}`, with :math:`\sqrt F` the root fidelity;
      the least such :math:`n` is found exactly by integer search.

    Args:
        states: sequence of m ≥ 2 density matrices of shape (d, d).
        priors: probabilities :math:`\pi_i > 0` summing to 1 (uniform if ``None``).
        alpha: target error :math:`\alpha \in (0, 1)`.
        atol: tolerance of the checks.

    Returns:
        :class:`CopyBounds` with ``task == "mary"``.

    Raises:
        ValueError: if an argument is invalid.

    References:
        Barnum, Knill, J. Math. Phys. 43, 2097 (2002), arXiv:quant-ph/0004088 (PGM error bound).

    Example:
        >>> sts = [np.diag([1.0, 0, 0]), np.diag([0, 1.0, 0]), np.eye(3) / 3]
        >>> b = mary_copy_bounds(sts, alpha=0.05)
        >>> b.lower <= b.upper
        True
    """
    sts, pri = _check_states_priors(states, priors, atol)
    alpha = check_open01(alpha, "alpha")
    if alpha >= 1 - float(np.max(pri)):
        return CopyBounds(0, 0, "mary", "alpha >= 1 - max prior", "alpha >= 1 - max prior")
    lower: int | float = 0
    coef, rfs = [], []
    for i, j in combinations(range(len(sts)), 2):
        pij = pri[i] + pri[j]
        a_ij = alpha / pij
        pi = pri[i] / pij
        f = float(fidelity(sts[i], sts[j], atol=atol))
        t = float(trace_distance(sts[i], sts[j], atol=atol))
        if a_ij < 1:
            lower = max(lower, round_count_down(fid_lower_n(f, pi, 1 - pi, a_ij)),
                        round_count_down(td_lower_n(t, pi, 1 - pi, a_ij)))
        coef.append(2 * math.sqrt(pri[i] * pri[j]))
        rfs.append(math.sqrt(max(0.0, min(1.0, f))))
    upper = _bk_upper(np.array(coef), np.array(rfs), alpha)
    return CopyBounds(lower, upper, "mary", "pairwise fidelity/trace distance",
                      "Barnum-Knill pretty-good measurement")


def _bk_upper(coef: np.ndarray, rfs: np.ndarray, alpha: float) -> int | float:
    # Least n with Σ coef_k rfs_k^n <= α / (1 + slack) (monotone non-increasing in n).
    target = alpha * (1 - COUNT_SLACK)

    def val(n: int) -> float:
        return float(np.sum(coef * rfs**n)) if n > 0 else float(np.sum(coef))

    if np.any(rfs >= 1.0) and np.sum(coef[rfs >= 1.0]) > target:
        return math.inf
    hi = 1
    while val(hi) > target:
        hi *= 2
        if hi > 2**62:
            return math.inf
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if val(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def private_mary_lower_bound(
    states: Sequence[ArrayLike],
    *,
    priors: ArrayLike | None = None,
    alpha: float,
    epsilon: float,
    delta: float,
    notion: str = "qldp",
    atol: float = DEFAULT_ATOL,
) -> int | float:
    r"""Copies needed for m-ary testing of :math:`\{\mathcal A(\rho_i)\}` for *every*
    :math:`(\varepsilon,\delta)`-private :math:`\mathcal A`.

    Pairwise reduction as in :func:`mary_copy_bounds`, with each pair's output fidelity bounded
    below through the contraction of the inputs' trace distance (as in
    :func:`private_symmetric_lower_bound`; derived here, ``docs/qprldp.md`` §6.5).

    Args:
        states: m ≥ 2 *input* density matrices of shape (d, d).
        priors: probabilities summing to 1 (uniform if ``None``).
        alpha: target error :math:`\alpha \in (0, 1)`.
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        notion: ``"qldp"`` or ``"qprldp"``.
        atol: tolerance of the checks.

    Returns:
        Lower bound on :math:`n^*` (int, or ``math.inf``).

    Raises:
        ValueError: if an argument is invalid.

    Example:
        >>> sts = [np.diag([1.0, 0]), np.diag([0, 1.0])]
        >>> private_mary_lower_bound(sts, alpha=0.05, epsilon=0.1, delta=0.0)
        19
    """
    sts, pri = _check_states_priors(states, priors, atol)
    alpha = check_open01(alpha, "alpha")
    eta = trace_distance_contraction_bound(epsilon=epsilon, delta=delta, notion=notion)
    lower: int | float = 0
    for i, j in combinations(range(len(sts)), 2):
        pij = pri[i] + pri[j]
        a_ij = alpha / pij
        if a_ij >= 1:
            continue
        tin = min(1.0, float(trace_distance(sts[i], sts[j], atol=atol)))
        lower = max(lower, private_lower(eta, tin, float(epsilon), float(delta),
                                          pri[i] / pij, a_ij))
    return lower
