r"""Rounding of copy counts, argument checks and bound ingredients shared by the testing tasks.

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import math

import numpy as np

from .._numerics import round_up
from .._validation import check_density_matrix, check_real, eigh_psd, format_number

__all__ = [
    "COUNT_SLACK",
    "S_GRID",
    "Q_ONE_TOL",
    "RENYI_GRID",
    "round_count_up",
    "round_count_down",
    "check_open01",
    "check_pair",
    "check_copies",
    "chernoff_q",
    "fid_lower_n",
    "td_lower_n",
    "private_lower",
]


# Relative/absolute slack applied before rounding a real-valued bound on n: a bound computed as
# k + 1e-13 due to rounding noise is treated as k (lower bounds), and k - 1e-13 as k (upper
# bounds). 1e-9 is far above double rounding of the logs involved and far below 1 copy.
COUNT_SLACK = 1e-9
# Chernoff / Hoeffding parameter grid s in (0, 1); any s is valid, the grid only tightens.
S_GRID = np.linspace(0.02, 0.98, 49)
# Q_s = Tr ρ^s σ^{1-s} within this of 1 is treated as exactly 1 (no finite bound from that s):
# rounding noise of ~1e-15 must not turn identical states into "distinguishable in n copies".
Q_ONE_TOL = 1e-12
# Sandwiched Rényi orders alpha > 1 tried in the converse bounds (any order is valid).
RENYI_GRID = (1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


def round_count_up(x: float) -> int | float:
    """Round a real upper bound on n up (conservative: slack upward, then ceil)."""
    if math.isnan(x):
        return math.inf
    if math.isinf(x):
        return math.inf if x > 0 else 0
    if x <= 0:
        return 0
    return math.ceil(x + COUNT_SLACK * max(1.0, x))


def round_count_down(x: float) -> int | float:
    """Round a real lower bound x on the integer n* conservatively: n* >= ceil(x_true), and
    x_true >= x - slack, so n* >= ceil(x - slack) (never above what the real bound gives)."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return math.inf if x > 0 else 0
    if x <= 0:
        return 0
    return max(0, math.ceil(x - COUNT_SLACK * max(1.0, x)))


def check_open01(x, name: str) -> float:
    x = check_real(x, name)
    if not 0.0 < x < 1.0:
        raise ValueError(f"`{name}` must be in (0, 1). Found {format_number(x)}.")
    return x


def check_pair(rho, sigma, atol):
    r = check_density_matrix(rho, "rho", atol=atol)
    s = check_density_matrix(sigma, "sigma", atol=atol)
    if r.shape != s.shape:
        raise ValueError(
            f"`rho` and `sigma` must have the same dimension. Found shapes {r.shape} and {s.shape}."
        )
    return r, s


def check_copies(n, name: str = "copies") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"`{name}` must be an integer >= 0. Found {n!r}.")
    return int(n)


def chernoff_q(r: np.ndarray, s: np.ndarray, svals, atol: float) -> np.ndarray:
    # Q_s = Tr ρ^s σ^{1-s} for each s (Audenaert et al.'s Chernoff quantity), clamped to [0, 1].
    # Only negative rounding noise is clamped (eigh_psd); small positive eigenvalues enter their
    # powers, and 0^s = 0 for s in (0, 1), so no support decision is needed.
    wr, vr = eigh_psd(r, atol=atol)
    ws, vs = eigh_psd(s, atol=atol)
    wr, ws = np.maximum(wr, 0.0), np.maximum(ws, 0.0)
    overlap = np.abs(vr.conj().T @ vs) ** 2  # |<r_i|s_j>|^2
    out = [float(wr**sv @ overlap @ ws ** (1 - sv)) for sv in svals]
    q = np.clip(np.array(out), 0.0, 1.0)
    return np.where(q >= 1.0 - Q_ONE_TOL, 1.0, q)


def fid_lower_n(f: float, p: float, q: float, alpha: float) -> float:
    # P_e(n) >= (1 - sqrt(1 - 4pq F^n))/2 (Uhlmann purification + pure-state Helstrom);
    # P_e(n) <= α forces F^n <= α(1-α)/(pq).
    if alpha >= min(p, q):
        return 0.0
    if f <= 0.0:
        return 1.0
    if f >= 1.0:
        return math.inf
    return math.log(p * q / (alpha * (1 - alpha))) / -math.log(f)


def td_lower_n(t: float, p: float, q: float, alpha: float) -> float:
    # ||pρ_n - qσ_n||_1 <= |p - q| + 2 min(p,q) T(ρ_n, σ_n), T(ρ_n, σ_n) <= n T(ρ, σ):
    # P_e(n) >= min(p,q)(1 - n T).
    m = min(p, q)
    if alpha >= m:
        return 0.0
    if t <= 1e-300:  # avoid overflow; the bound is astronomically large anyway
        return math.inf
    return (1 - alpha / m) / float(t)


def private_lower(eta, tin, epsilon, delta, p, alpha) -> int | float:
    q = 1 - p
    if alpha >= min(p, q):
        return 0
    t = min(1.0, round_up(eta * tin))
    f = max(0.0, 1.0 - t) ** 2
    if delta == 0.0:
        f = max(f, math.exp(-epsilon))
    return max(round_count_down(fid_lower_n(f, p, q, alpha)),
               round_count_down(td_lower_n(t, p, q, alpha)))
