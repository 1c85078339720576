r"""Exact threshold and proven bounds on δ*(ε) of local depolarizing noise (internals).

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
The derivations are in :func:`~qprldp_core.certify.local_depolarizing_bounds`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ._depolarizing import TIE_RTOL, p_eff_qubit

__all__ = [
    "log_binom",
    "binomial_weights",
    "local_qldp_upper",
    "local_pair_values",
    "local_threshold",
    "local_bounds",
]


def log_binom(n: int, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def binomial_weights(n: int, p: float) -> np.ndarray:
    s = np.arange(n + 1)
    if p == 0.0:
        w = np.zeros(n + 1)
        w[0] = 1.0
        return w
    if p == 1.0:
        w = np.zeros(n + 1)
        w[n] = 1.0
        return w
    return np.exp(log_binom(n, s) + (n - s) * math.log1p(-p) + s * math.log(p))


def local_qldp_upper(p: float, n: int, gammas: np.ndarray) -> np.ndarray:
    r"""Dual upper bound U(γ) on sup E_γ for D_p^{⊗n}, p ∈ [0, 1] (derived here, see
    :func:`local_depolarizing_bounds`). Vectorised over ``gammas``."""
    w = binomial_weights(n, p)  # weight of "depolarise the subset S", |S| = s
    s = np.arange(n + 1)
    log_c = (n - s) * math.log(2.0)  # c_s = 2^(n−s)
    # candidate maximisers m: breakpoints 2^-(n-s) and 1 − 2^-(n-s), plus 0 and 1
    brk = np.exp(-log_c[:-1])
    ms = np.unique(np.concatenate([[0.0, 1.0], brk, 1.0 - brk]))
    with np.errstate(divide="ignore"):
        lm, l1m = np.log(ms), np.log(1.0 - ms)
    # min(1, c m) and min(1, c (1 − m)) in log space (no overflow for large n)
    up = np.exp(np.minimum(lm[:, None] + log_c[None, :], 0.0))  # (M, n+1)
    low = 1.0 - np.exp(np.minimum(l1m[:, None] + log_c[None, :], 0.0))
    hi = up @ w  # upper bound on λ_max(D^{⊗n}(M)) given Tr M = m 2^n
    lo = low @ w  # lower bound on λ_min
    vals = hi[None, :] - gammas[:, None] * lo[None, :]
    return np.clip(vals.max(axis=1), 0.0, 1.0)


def local_pair_values(p: float, n: int, eps: float) -> tuple[float, float, int]:
    r"""QLDP and QPrLDP values of product basis pairs at Hamming distance m (max over m)."""
    a, b = 1.0 - p / 2.0, p / 2.0
    la, lb = math.log(a), math.log(b)
    gamma = math.exp(eps)
    best_v, best_m = 0.0, n
    e_n = 0.0
    for m in range(1, n + 1):
        j = np.arange(m + 1)
        lc = log_binom(m, j)
        lp = lc + j * la + (m - j) * lb
        lq = lc + j * lb + (m - j) * la
        viol = (2 * j - m) * (la - lb) > eps + TIE_RTOL * max(1.0, eps)
        v = float(np.sum(np.exp(lp[viol])))
        if v > best_v + 1e-15:
            best_v, best_m = v, m
        if m == n:
            e_n = float(np.sum(np.maximum(np.exp(lp) - gamma * np.exp(lq), 0.0)))
    return min(1.0, e_n), min(1.0, max(best_v, e_n)), best_m


def local_threshold(p_eff: float, n: int) -> float:
    if p_eff == 0.0:
        return math.inf
    return n * math.log((2.0 - p_eff) / p_eff)


def local_bounds(p: float, n: int, eps: float, notion: str):
    pe = p_eff_qubit(p)
    if pe == 0.0:
        return 1.0, 1.0, n
    thr = local_threshold(pe, n)
    if eps >= thr * (1.0 - TIE_RTOL):
        return 0.0, 0.0, n
    qldp_lo, qprldp_lo, m = local_pair_values(pe, n, eps)
    if notion == "QLDP":
        up = float(local_qldp_upper(pe, n, np.array([math.exp(eps)]))[0])
        return qldp_lo, max(up, qldp_lo), n
    # QPrLDP: convert QLDP upper bounds at ε′ < ε
    if eps == 0.0:
        return qprldp_lo, 1.0, m
    t = np.linspace(0.0, 1.0, 65)[:-1]
    eps_p = eps * t
    ups = local_qldp_upper(pe, n, np.exp(eps_p))
    factor = 1.0 / (-np.expm1(eps_p - eps))  # e^ε / (e^ε − e^ε′)
    cand = ups * factor
    i = int(np.argmin(cand))
    lo_t, hi_t = t[max(i - 1, 0)], (t[i + 1] if i + 1 < len(t) else 1.0)
    t2 = np.linspace(lo_t, hi_t, 34)[1:-1]
    eps2 = eps * t2
    cand2 = local_qldp_upper(pe, n, np.exp(eps2)) / (-np.expm1(eps2 - eps))
    up = float(min(1.0, cand.min(), cand2.min()))
    return qprldp_lo, max(up, qprldp_lo), m
