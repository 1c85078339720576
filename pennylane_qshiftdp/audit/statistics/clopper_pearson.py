r"""Split-half Clopper–Pearson lower bounds on ε (no assumption on the mechanism).

A threshold chosen on held-out trials, one-sided Clopper–Pearson bounds on its true- and
false-positive rates, and the (ε, δ)-DP hypothesis-testing inequality
(:func:`epsilon_from_rates`); ceiling :func:`max_certifiable_epsilon`.

References:
    Clopper & Pearson, Biometrika 26 (1934) 404–413.
    Jagielski, Ullman, Oprea, arXiv:2006.07709 (v1), §4.
    Nasr, Song, Thakurta, Papernot, Carlini, arXiv:2101.04535 (v1), §3.
"""

from __future__ import annotations

import dataclasses
import math
from typing import overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_dist

from ..._validation import check_positive_int, check_probability
from ._thresholds import region_counts

__all__ = ["ScoreBound", "clopper_pearson_lower", "clopper_pearson_upper", "epsilon_from_rates",
           "max_certifiable_epsilon", "split_half_bound"]


@overload
def clopper_pearson_lower(k: int | np.integer, n: int | np.integer, *, alpha: float) -> float: ...
@overload
def clopper_pearson_lower(k: ArrayLike, n: ArrayLike, *, alpha: float) -> float | np.ndarray: ...
def clopper_pearson_lower(k: ArrayLike, n: ArrayLike, *, alpha: float) -> float | np.ndarray:
    r"""One-sided Clopper–Pearson lower confidence bound of a binomial proportion.

    .. math::

        p^- = B^{-1}(\alpha;\, k,\, n - k + 1), \qquad p^- = 0 \text{ if } k = 0,

    with :math:`B^{-1}` the Beta quantile, so :math:`P[p \ge p^-] \ge 1 - \alpha`.

    Args:
        k: successes, integers in ``[0, n]`` (scalar or array).
        n: trials, positive integers (broadcast with ``k``).
        alpha: one-sided error level in (0, 1).

    Returns:
        float or np.ndarray: the bound in [0, 1].

    Raises:
        ValueError: if ``alpha`` is outside (0, 1) or ``k`` is outside ``[0, n]``.

    References:
        Clopper & Pearson, Biometrika 26 (1934) 404–413.

    Example:
        >>> round(clopper_pearson_lower(10, 10, alpha=0.05), 6)  # alpha ** (1 / n)
        0.741134
        >>> clopper_pearson_lower(0, 10, alpha=0.05)
        0.0
    """
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    k, n = _counts(k, n)
    with np.errstate(invalid="ignore"):
        out = np.where(k > 0, beta_dist.ppf(alpha, np.maximum(k, 1), n - k + 1), 0.0)
    return float(out) if out.ndim == 0 else out


@overload
def clopper_pearson_upper(k: int | np.integer, n: int | np.integer, *, alpha: float) -> float: ...
@overload
def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, *, alpha: float) -> float | np.ndarray: ...
def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, *, alpha: float) -> float | np.ndarray:
    r"""One-sided Clopper–Pearson upper confidence bound of a binomial proportion.

    .. math::

        p^+ = B^{-1}(1 - \alpha;\, k + 1,\, n - k), \qquad p^+ = 1 \text{ if } k = n.

    Args:
        k: successes, integers in ``[0, n]`` (scalar or array).
        n: trials, positive integers (broadcast with ``k``).
        alpha: one-sided error level in (0, 1).

    Returns:
        float or np.ndarray: the bound in [0, 1].

    Raises:
        ValueError: if ``alpha`` is outside (0, 1) or ``k`` is outside ``[0, n]``.

    References:
        Clopper & Pearson, Biometrika 26 (1934) 404–413.

    Example:
        >>> round(clopper_pearson_upper(0, 10, alpha=0.05), 6)  # 1 - alpha ** (1 / n)
        0.258866
    """
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    k, n = _counts(k, n)
    with np.errstate(invalid="ignore"):
        out = np.where(k < n, beta_dist.ppf(1.0 - alpha, k + 1, np.maximum(n - k, 1)), 1.0)
    return float(out) if out.ndim == 0 else out


def _counts(k: ArrayLike, n: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    k = np.asarray(k)
    n = np.asarray(n)
    if not (np.issubdtype(k.dtype, np.integer) and np.issubdtype(n.dtype, np.integer)):
        raise TypeError(f"`k` and `n` must be integers. Found {k.dtype} and {n.dtype}.")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"`k` must be in [0, n] with n >= 1. Found k={k.tolist()!r}, "
                         f"n={n.tolist()!r}.")
    return k, n


@overload
def epsilon_from_rates(tpr_lower: float, fpr_upper: float, *, delta: float) -> float: ...
@overload
def epsilon_from_rates(tpr_lower: ArrayLike, fpr_upper: ArrayLike, *,
                       delta: float) -> float | np.ndarray: ...
def epsilon_from_rates(tpr_lower: ArrayLike, fpr_upper: ArrayLike, *,
                       delta: float) -> float | np.ndarray:
    r"""Lower bound on ε from a rejection region's bounded true- and false-positive rates.

    For a region :math:`R` with :math:`\mathrm{TPR} = P[M(D') \in R] \ge \mathrm{TPR}^-` and
    :math:`\mathrm{FPR} = P[M(D) \in R] \le \mathrm{FPR}^+`, (ε, δ)-DP in both directions
    (applied to :math:`R` and to its complement) implies

    .. math::

        \varepsilon \ge \max\Bigl(\ln\frac{\mathrm{TPR}^- - \delta}{\mathrm{FPR}^+},\;
        \ln\frac{1 - \mathrm{FPR}^+ - \delta}{1 - \mathrm{TPR}^-},\; 0\Bigr).

    Args:
        tpr_lower: :math:`\mathrm{TPR}^-` in [0, 1] (scalar or array).
        fpr_upper: :math:`\mathrm{FPR}^+` in (0, 1] (broadcast with ``tpr_lower``).
        delta: δ in [0, 1).

    Returns:
        float or np.ndarray: the lower bound on ε (nats), ≥ 0.

    Raises:
        ValueError: for rates outside [0, 1] or δ outside [0, 1).

    References:
        Jagielski et al., arXiv:2006.07709 (v1), §4; Kairouz, Oh, Viswanath, arXiv:1311.0776
        (v4), Thm. 2.1 (both directions of the hypothesis test).

    Example:
        >>> round(epsilon_from_rates(0.5, 0.05, delta=0.0), 6)  # ln 10
        2.302585
        >>> epsilon_from_rates(0.3, 0.3, delta=1e-5)
        0.0
    """
    delta = check_probability(delta, "delta", open_high=True)
    tpr = np.asarray(tpr_lower, dtype=float)
    fpr = np.asarray(fpr_upper, dtype=float)
    for name, v in (("tpr_lower", tpr), ("fpr_upper", fpr)):
        if np.any(~np.isfinite(v)) or np.any(v < 0) or np.any(v > 1):
            raise ValueError(f"`{name}` must be in [0, 1]. Found {v.tolist()!r}.")
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.where((tpr > delta) & (fpr > 0), np.log((tpr - delta) / fpr), 0.0)
        e2 = np.where((1 - fpr > delta) & (tpr < 1),
                      np.log((1.0 - fpr - delta) / (1.0 - tpr)), 0.0)
    out = np.maximum(np.maximum(e1, e2), 0.0)
    return float(out) if out.ndim == 0 else out


def max_certifiable_epsilon(n_d: int, n_dprime: int | None = None, *, delta: float,
                            alpha: float) -> float:
    r"""The largest ε lower bound that ``n_d`` and ``n_dprime`` evaluation trials can give.

    That of a perfect distinguisher (:math:`\mathrm{TPR} = 1`, :math:`\mathrm{FPR} = 0`):
    :math:`\mathrm{TPR}^- = \alpha^{1/n'}`, :math:`\mathrm{FPR}^+ = 1 - \alpha^{1/n}`.

    Args:
        n_d: evaluation trials on :math:`D`, ≥ 1.
        n_dprime: evaluation trials on :math:`D'` (default ``n_d``).
        delta: δ in [0, 1).
        alpha: one-sided level of each Clopper–Pearson bound, in (0, 1).

    Returns:
        float: ε in nats.

    Example:
        >>> round(max_certifiable_epsilon(2000, delta=1e-5, alpha=0.0125), 3)
        6.122
    """
    n_d = check_positive_int(n_d, "n_d")
    n_dp = n_d if n_dprime is None else check_positive_int(n_dprime, "n_dprime")
    return epsilon_from_rates(clopper_pearson_lower(n_dp, n_dp, alpha=alpha),
                              clopper_pearson_upper(0, n_d, alpha=alpha), delta=delta)


@dataclasses.dataclass(frozen=True)
class ScoreBound:
    r"""The split-half ε lower bound of one score.

    Attributes:
        score: the score's name.
        threshold: the threshold chosen on the first half.
        direction: ``">"`` (region: score above the threshold) or ``"<"``.
        tpr, fpr: measured rates of the region on the second half (:math:`D'` and :math:`D`).
        tpr_lower, fpr_upper: their one-sided Clopper–Pearson bounds.
        epsilon_lower_bound: the bound (nats, ≥ 0).
        alpha: one-sided level of each Clopper–Pearson bound.
        n_select: first-half trials per world (:math:`D`, :math:`D'`).
        n_eval: second-half trials per world (:math:`D`, :math:`D'`).
        separated: the second-half scores of the two worlds are perfectly separated by the
            threshold.
    """

    score: str
    threshold: float
    direction: str
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    epsilon_lower_bound: float
    alpha: float
    n_select: tuple[int, int]
    n_eval: tuple[int, int]
    separated: bool

    def as_dict(self) -> dict:
        """JSON-friendly dict (an infinite threshold becomes ``None``)."""
        d = dataclasses.asdict(self)
        if not math.isfinite(d["threshold"]):
            d["threshold"] = None
        d["n_select"], d["n_eval"] = list(self.n_select), list(self.n_eval)
        return d


def split_half_bound(scores_d: ArrayLike, scores_dprime: ArrayLike, *, delta: float,
                     alpha: float, score: str = "score") -> ScoreBound:
    r"""Split-half Clopper–Pearson lower bound on ε from the scores of two worlds.

    The first half of each array (``len // 2`` trials) chooses the threshold and direction that
    maximise :func:`epsilon_from_rates` of the first half's Clopper–Pearson bounds (candidates:
    the midpoints between consecutive distinct first-half scores, and ±∞; if every candidate
    gives 0, the one with the largest :math:`|\mathrm{TPR} - \mathrm{FPR}|`). The second half
    measures the region's rates and gives the bound. Perfectly separated scores put the
    threshold in the gap, so a perfect distinguisher gets :func:`max_certifiable_epsilon`.

    Args:
        scores_d: scores of the trials on :math:`D`, shape ``(n,)``, ``n ≥ 2``.
        scores_dprime: scores on :math:`D'` (larger means "looks like :math:`D'`" for
            direction ``">"``; both directions are tried), shape ``(n',)``, ``n' ≥ 2``.
        delta: δ in [0, 1).
        alpha: one-sided level of each of the two Clopper–Pearson bounds, in (0, 1).
        score: the score's name (recorded in the result).

    Returns:
        ScoreBound: threshold, direction, rates, bounds and ε.

    Raises:
        ValueError: for fewer than 2 scores per world, non-finite scores, or invalid δ or α.

    References:
        Nasr et al., arXiv:2101.04535 (v1), §3; Jagielski et al., arXiv:2006.07709 (v1), §4.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> b = split_half_bound(rng.normal(0, 1, 400), rng.normal(100, 1, 400), delta=1e-5,
        ...                      alpha=0.025)
        >>> b.separated, round(b.epsilon_lower_bound, 3) == round(
        ...     max_certifiable_epsilon(200, delta=1e-5, alpha=0.025), 3)
        (True, True)
    """
    delta = check_probability(delta, "delta", open_high=True)
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    d = np.asarray(scores_d, dtype=float).reshape(-1)
    dp = np.asarray(scores_dprime, dtype=float).reshape(-1)
    for name, v in (("scores_d", d), ("scores_dprime", dp)):
        if v.size < 2:
            raise ValueError(f"`{name}` must hold at least 2 scores (one per half). Found "
                             f"{v.size}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"`{name}` must be finite. Found {v[~np.isfinite(v)][:3]!r}.")
    h, hp = d.size // 2, dp.size // 2
    sel_d, sel_dp = np.sort(d[:h]), np.sort(dp[:hp])
    ev_d, ev_dp = np.sort(d[h:]), np.sort(dp[hp:])

    u = np.unique(np.concatenate([sel_d, sel_dp]))
    cands = np.concatenate([[-np.inf], (u[:-1] + u[1:]) / 2.0, [np.inf]])
    best: tuple | None = None
    for direction in (">", "<"):
        tp = region_counts(sel_dp, cands, direction)
        fp = region_counts(sel_d, cands, direction)
        eps = epsilon_from_rates(clopper_pearson_lower(tp, hp, alpha=alpha),
                                 clopper_pearson_upper(fp, h, alpha=alpha), delta=delta)
        gap = np.abs(tp / hp - fp / h)
        i = int(np.lexsort((-gap, -eps))[0])  # largest ε, then largest |TPR − FPR|
        key = (float(eps[i]), float(gap[i]))
        if best is None or key > best[0]:
            best = (key, float(cands[i]), direction)
    assert best is not None  # the candidates include ±inf
    _, threshold, direction = best

    n_d, n_dp = ev_d.size, ev_dp.size
    tp = int(region_counts(ev_dp, np.array([threshold]), direction)[0])
    fp = int(region_counts(ev_d, np.array([threshold]), direction)[0])
    tpr_lo = clopper_pearson_lower(tp, n_dp, alpha=alpha)
    fpr_hi = clopper_pearson_upper(fp, n_d, alpha=alpha)
    return ScoreBound(
        score=score, threshold=threshold, direction=direction, tpr=tp / n_dp, fpr=fp / n_d,
        tpr_lower=tpr_lo, fpr_upper=fpr_hi,
        epsilon_lower_bound=epsilon_from_rates(tpr_lo, fpr_hi, delta=delta), alpha=alpha,
        n_select=(h, hp), n_eval=(n_d, n_dp),
        separated=(tp == n_dp and fp == 0) or (tp == 0 and fp == n_d),
    )
