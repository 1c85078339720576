r"""Pure statistics of the audit: Clopper–Pearson, Gaussian-DP and one-run lower bounds on ε.

Three estimators turn what an auditor observed into a lower bound on ε that holds with a stated
confidence. Each has a *ceiling*: the largest ε it can certify from the configured number of
trials even against a mechanism that leaks everything (a perfect distinguisher). An audit whose
ceiling is below the claimed ε cannot refute the claim whatever the mechanism does; every
report prints it.

* **Split-half Clopper–Pearson** (:func:`split_half_bound`): a threshold chosen on held-out
  trials, one-sided Clopper–Pearson bounds on its true- and false-positive rates, and the
  (ε, δ)-DP hypothesis-testing inequality (:func:`epsilon_from_rates`). No assumption on the
  mechanism. Ceiling :func:`max_certifiable_epsilon` (≈ 3.5 with 100 evaluation trials per
  world at 95 %, 5.8 with 1 000, 8.1 with 10 000).
* **Gaussian-DP** (:func:`gdp_bound`): the same threshold test read through the Gaussian
  trade-off curve :math:`G_\mu`: a μ-GDP mechanism has
  :math:`\mathrm{TPR} \le \Phi(\Phi^{-1}(\mathrm{FPR}) + \mu)` for every test, so
  :math:`\mu^- = \Phi^{-1}(\mathrm{TPR}^-) - \Phi^{-1}(\mathrm{FPR}^+)` is a lower bound on the
  smallest μ for which the mechanism is μ-GDP (no assumption). It is converted to
  :math:`\varepsilon^- = \varepsilon_{\mu^-}(\delta)` (:func:`gdp_epsilon`), which is a lower bound
  on ε *if the mechanism's trade-off curve is Gaussian* (true for the Gaussian mechanism that the
  product claims to be). Much tighter: it does not need the rare tail events that the
  Clopper–Pearson bound needs. Ceiling :func:`max_certifiable_gdp_epsilon`.
* **One run** (:func:`one_run_bound`): m canaries, each included independently with probability
  1/2, one training run; the auditor guesses the membership of the canaries with the highest and
  lowest scores and abstains on the rest. An (ε, δ)-DP mechanism makes more than v correct
  guesses out of r with probability at most :func:`one_run_p_value`. No assumption besides the
  independent coin flips; ceiling :func:`max_certifiable_one_run_epsilon`.

References:
    Clopper & Pearson, Biometrika 26 (1934) 404–413.
    Jagielski, Ullman, Oprea, arXiv:2006.07709 (v1), §4.
    Nasr, Song, Thakurta, Papernot, Carlini, arXiv:2101.04535 (v1), §3.
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis, "Tight Auditing of
    Differentially Private Machine Learning", arXiv:2302.07956 (v1), §4 (Gaussian-DP fit).
    Dong, Roth, Su, "Gaussian Differential Privacy", arXiv:1905.02383 (v3), Def. 2.3 (G_μ)
    and Cor. 2.13 (μ-GDP ⇔ (ε, δ(ε))-DP for all ε).
    Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training Run", arXiv:2305.08846
    (v1), Thm. 3.1 and Appendix D (p-value with δ).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from typing import overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as beta_dist
from scipy.stats import binom, norm

from .._validation import check_positive_int, check_probability

__all__ = [
    "GDPBound",
    "OneRunBound",
    "ScoreBound",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_rates",
    "gdp_bound",
    "gdp_delta",
    "gdp_epsilon",
    "max_certifiable_epsilon",
    "max_certifiable_gdp_epsilon",
    "max_certifiable_one_run_epsilon",
    "one_run_bound",
    "one_run_epsilon",
    "one_run_p_value",
    "split_half_bound",
]

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


def _region_counts(sorted_scores, thresholds, direction):
    """Number of scores strictly above (``>``) or below (``<``) each threshold."""
    if direction == ">":
        return len(sorted_scores) - np.searchsorted(sorted_scores, thresholds, side="right")
    return np.searchsorted(sorted_scores, thresholds, side="left")


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
        tp = _region_counts(sel_dp, cands, direction)
        fp = _region_counts(sel_d, cands, direction)
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
    tp = int(_region_counts(ev_dp, np.array([threshold]), direction)[0])
    fp = int(_region_counts(ev_d, np.array([threshold]), direction)[0])
    tpr_lo = clopper_pearson_lower(tp, n_dp, alpha=alpha)
    fpr_hi = clopper_pearson_upper(fp, n_d, alpha=alpha)
    return ScoreBound(
        score=score, threshold=threshold, direction=direction, tpr=tp / n_dp, fpr=fp / n_d,
        tpr_lower=tpr_lo, fpr_upper=fpr_hi,
        epsilon_lower_bound=epsilon_from_rates(tpr_lo, fpr_hi, delta=delta), alpha=alpha,
        n_select=(h, hp), n_eval=(n_d, n_dp),
        separated=(tp == n_dp and fp == 0) or (tp == 0 and fp == n_d),
    )



# ============================================================================ Gaussian DP
@overload
def gdp_delta(epsilon: float, mu: float) -> float: ...
@overload
def gdp_delta(epsilon: ArrayLike, mu: ArrayLike) -> float | np.ndarray: ...
def gdp_delta(epsilon: ArrayLike, mu: ArrayLike) -> float | np.ndarray:
    r"""The δ(ε) of a μ-GDP mechanism (the Gaussian mechanism of sensitivity 1 and noise 1/μ).

    .. math::

        \delta_\mu(\varepsilon) = \Phi\Bigl(-\frac{\varepsilon}{\mu} + \frac{\mu}{2}\Bigr)
        - e^{\varepsilon}\,\Phi\Bigl(-\frac{\varepsilon}{\mu} - \frac{\mu}{2}\Bigr).

    Args:
        epsilon: ε ≥ 0 in nats (scalar or array).
        mu: μ ≥ 0 (broadcast with ``epsilon``).

    Returns:
        float or np.ndarray: δ in [0, 1].

    Raises:
        ValueError: for negative or NaN ε or μ.

    References:
        Dong, Roth, Su, arXiv:1905.02383 (v3), Cor. 2.13.

    Example:
        >>> round(gdp_delta(0.0, 1.0), 6)  # 2 Φ(1/2) − 1: the total-variation distance
        0.382925
        >>> gdp_delta(1.0, 0.0)
        0.0
    """
    eps = np.asarray(epsilon, dtype=float)
    mu = np.asarray(mu, dtype=float)
    for name, v in (("epsilon", eps), ("mu", mu)):
        if np.any(np.isnan(v)) or np.any(v < 0):
            raise ValueError(f"`{name}` must be non-negative. Found {v.tolist()!r}.")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        safe = np.where(mu > 0, mu, 1.0)
        a = norm.cdf(-eps / safe + safe / 2)
        # e^ε Φ(−ε/μ − μ/2) in log space (no overflow at large ε)
        b = np.exp(eps + norm.logcdf(-eps / safe - safe / 2))
        out = np.where(mu > 0, np.clip(a - b, 0.0, 1.0), 0.0)
        out = np.where(np.isinf(mu), 1.0, out)
    return float(out) if out.ndim == 0 else out


def gdp_epsilon(mu: float, delta: float) -> float:
    r"""The smallest ε at which a μ-GDP mechanism is (ε, δ)-DP, rounded *down*.

    Solves :math:`\delta_\mu(\varepsilon) = \delta` (:func:`gdp_delta`, decreasing in ε) by
    bisection and returns the low end of the final bracket, so the value never overstates the ε
    that μ implies (it is used as a lower bound).

    Args:
        mu: μ ≥ 0 (``inf`` gives ``inf``).
        delta: δ in (0, 1).

    Returns:
        float: ε ≥ 0 in nats.

    Raises:
        ValueError: for negative μ or δ outside (0, 1).

    References:
        Dong, Roth, Su, arXiv:1905.02383 (v3), Cor. 2.13.

    Example:
        >>> round(gdp_epsilon(1.0, 1e-5), 3)
        4.377
        >>> gdp_epsilon(0.0, 1e-5)
        0.0
    """
    delta = check_probability(delta, "delta", open_low=True, open_high=True)
    mu = float(mu)
    if math.isnan(mu) or mu < 0:
        raise ValueError(f"`mu` must be non-negative. Found {mu!r}.")
    if math.isinf(mu):
        return math.inf
    if mu == 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    lo, hi = 0.0, max(1.0, mu * mu)
    while gdp_delta(hi, mu) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gdp_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10 * max(1.0, hi):
            break
    return lo


def _probit(p):
    with np.errstate(divide="ignore"):
        return norm.ppf(p)


def _gdp_mu(tp, n_dp, fp, n_d, alpha):
    r"""μ⁻ = Φ⁻¹(TPR⁻) − Φ⁻¹(FPR⁺) (≥ 0) from counts, vectorised."""
    tpr_lo = clopper_pearson_lower(tp, n_dp, alpha=alpha)
    fpr_hi = clopper_pearson_upper(fp, n_d, alpha=alpha)
    with np.errstate(invalid="ignore"):
        mu = _probit(tpr_lo) - _probit(fpr_hi)
    return np.where(np.isfinite(mu), np.maximum(mu, 0.0), 0.0), tpr_lo, fpr_hi


@dataclasses.dataclass(frozen=True)
class GDPBound:
    r"""The Gaussian-DP lower bound of one score.

    Attributes:
        score: the score's name.
        threshold, direction: the test chosen on the selection trials (``">"``: the region
            is "score above the threshold").
        tpr, fpr: measured rates on the evaluation trials (:math:`D'` and :math:`D`).
        tpr_lower, fpr_upper: their one-sided Clopper–Pearson bounds at level ``alpha``.
        mu_lower_bound: :math:`\mu^- = \Phi^{-1}(\mathrm{TPR}^-) - \Phi^{-1}(\mathrm{FPR}^+)`
            (≥ 0): the mechanism is not μ-GDP for any μ below it (no assumption).
        epsilon_lower_bound: :func:`gdp_epsilon` of μ⁻ at δ: a lower bound on ε if the
            mechanism's trade-off curve is Gaussian.
        alpha: one-sided level of each Clopper–Pearson bound.
        n_select, n_eval: selection and evaluation trials per world (:math:`D`, :math:`D'`).
    """

    score: str
    threshold: float
    direction: str
    tpr: float
    fpr: float
    tpr_lower: float
    fpr_upper: float
    mu_lower_bound: float
    epsilon_lower_bound: float
    alpha: float
    n_select: tuple[int, int]
    n_eval: tuple[int, int]

    def as_dict(self) -> dict:
        """JSON-friendly dict (an infinite threshold becomes ``None``)."""
        d = dataclasses.asdict(self)
        if not math.isfinite(d["threshold"]):
            d["threshold"] = None
        d["n_select"], d["n_eval"] = list(self.n_select), list(self.n_eval)
        return d


def _check_scores(d, dp, minimum=2):
    out = []
    for name, v in (("scores_d", d), ("scores_dprime", dp)):
        v = np.asarray(v, dtype=float).reshape(-1)
        if v.size < minimum:
            raise ValueError(f"`{name}` must hold at least {minimum} scores. Found {v.size}.")
        if not np.all(np.isfinite(v)):
            raise ValueError(f"`{name}` must be finite. Found {v[~np.isfinite(v)][:3]!r}.")
        out.append(v)
    return out


def _gdp_select(sel_d, sel_dp, n_d, n_dp, alpha):
    """Threshold and direction from the selection trials only.

    Two candidates: the empirical one (largest Clopper–Pearson μ⁻ on the selection trials) and
    the one a normal fit of each world's selection scores predicts to be best at the evaluation
    sizes. The candidate with the larger selection-set μ⁻ is kept.
    """
    h, hp = sel_d.size, sel_dp.size

    def plug_in(tp, fp):
        # the selection set's own Clopper–Pearson μ⁻: it penalises tail thresholds that a
        # handful of trials decide (which rarely hold up on the evaluation trials)
        return _gdp_mu(tp, hp, fp, h, alpha)[0]

    pooled = np.sort(np.concatenate([sel_d, sel_dp]))
    u = np.unique(pooled)
    cands = (u[:-1] + u[1:]) / 2.0
    # Thresholds in the far tails are decided by a handful of trials, and Φ⁻¹ amplifies their
    # noise there: keep thresholds with at least 1 % of the pooled selection scores (and 5) on
    # each side. A gap between perfectly separated worlds has half of them on each side.
    k_min = max(5, math.ceil(0.01 * pooled.size))
    below = np.searchsorted(pooled, cands, side="left")
    cands = cands[(below >= k_min) & (pooled.size - below >= k_min)]
    cands = np.concatenate([[-np.inf], cands, [np.inf]])
    options = []
    for direction in (">", "<"):
        tp = _region_counts(sel_dp, cands, direction)
        fp = _region_counts(sel_d, cands, direction)
        mu = plug_in(tp, fp)
        gap = np.abs(tp / hp - fp / h)
        i = int(np.lexsort((-gap, -mu))[0])
        options.append((float(mu[i]), float(gap[i]), float(cands[i]), direction))
    m, s = float(sel_d.mean()), float(sel_d.std(ddof=1)) if h > 1 else 0.0
    mp, sp = float(sel_dp.mean()), float(sel_dp.std(ddof=1)) if hp > 1 else 0.0
    if s > 0 and sp > 0 and m != mp:
        direction = ">" if mp > m else "<"
        sign = 1.0 if direction == ">" else -1.0
        grid = np.linspace(min(m - 4 * s, mp - 4 * sp), max(m + 4 * s, mp + 4 * sp), 801)
        tpr = norm.sf(sign * (grid - mp) / sp)
        fpr = norm.sf(sign * (grid - m) / s)
        mu_fit = _gdp_mu(np.round(tpr * n_dp).astype(int), n_dp,
                         np.round(fpr * n_d).astype(int), n_d, alpha)[0]
        t = float(grid[int(np.argmax(mu_fit))])
        tp = _region_counts(sel_dp, np.array([t]), direction)
        fp = _region_counts(sel_d, np.array([t]), direction)
        options.append((float(plug_in(tp, fp)[0]), float(abs(tp[0] / hp - fp[0] / h)), t,
                        direction))
    best = max(options, key=lambda o: (o[0], o[1]))
    return best[2], best[3]


def gdp_bound(scores_d: ArrayLike, scores_dprime: ArrayLike, *, delta: float, alpha: float,
              select_fraction: float = 0.25, score: str = "score") -> GDPBound:
    r"""Gaussian-DP lower bound on μ and ε from the scores of two worlds (held-out threshold).

    The first ``select_fraction`` of each array chooses the threshold and direction: the one
    whose selection-set Clopper–Pearson bounds give the largest μ⁻, or the one a normal fit of
    the selection scores predicts to be best, whichever has the larger selection-set μ⁻ (for a
    Gaussian shift :math:`\Phi^{-1}(\mathrm{TPR}) - \Phi^{-1}(\mathrm{FPR})` is the same at every
    threshold, so a small selection set suffices
    and most trials evaluate). The rest measures the
    region's rates; with one-sided Clopper–Pearson bounds

    .. math::

        \mu^- = \Phi^{-1}(\mathrm{TPR}^-) - \Phi^{-1}(\mathrm{FPR}^+), \qquad
        \varepsilon^- = \varepsilon_{\mu^-}(\delta),

    because every test of a μ-GDP mechanism has :math:`\mathrm{TPR} \le \Phi(\Phi^{-1}
    (\mathrm{FPR}) + \mu)` (Dong et al., Def. 2.3 of the trade-off function
    :math:`G_\mu`). μ⁻ holds for any mechanism; ε⁻ assumes its trade-off curve is Gaussian.

    Args:
        scores_d: scores on :math:`D`, shape ``(n,)``, ``n ≥ 4``, finite.
        scores_dprime: scores on :math:`D'`, shape ``(n',)``, ``n' ≥ 4``, finite.
        delta: δ in (0, 1).
        alpha: one-sided level of each of the two Clopper–Pearson bounds, in (0, 1).
        select_fraction: share of each world's trials that selects the threshold, in (0, 1).
        score: the score's name (recorded in the result).

    Returns:
        GDPBound: threshold, rates, μ⁻ and ε⁻.

    Raises:
        ValueError: for too few or non-finite scores, or invalid δ, α or fraction.

    References:
        Nasr et al., arXiv:2302.07956 (v1), §4; Dong, Roth, Su, arXiv:1905.02383 (v3), Def. 2.3
        and Cor. 2.13.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> b = gdp_bound(rng.normal(0, 1, 20000), rng.normal(1, 1, 20000), delta=1e-5,
        ...               alpha=0.025)
        >>> 0.85 < b.mu_lower_bound < 1.0, b.epsilon_lower_bound < gdp_epsilon(1.0, 1e-5)
        (True, True)
    """
    delta = check_probability(delta, "delta", open_low=True, open_high=True)
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    select_fraction = check_probability(select_fraction, "select_fraction", open_low=True,
                                        open_high=True)
    d, dp = _check_scores(scores_d, scores_dprime, minimum=4)
    h = min(max(1, int(round(select_fraction * d.size))), d.size - 1)
    hp = min(max(1, int(round(select_fraction * dp.size))), dp.size - 1)
    sel_d, sel_dp = np.sort(d[:h]), np.sort(dp[:hp])
    ev_d, ev_dp = np.sort(d[h:]), np.sort(dp[hp:])
    n_d, n_dp = ev_d.size, ev_dp.size
    threshold, direction = _gdp_select(sel_d, sel_dp, n_d, n_dp, alpha)
    tp = int(_region_counts(ev_dp, np.array([threshold]), direction)[0])
    fp = int(_region_counts(ev_d, np.array([threshold]), direction)[0])
    mu, tpr_lo, fpr_hi = (float(x) for x in _gdp_mu(tp, n_dp, fp, n_d, alpha))
    return GDPBound(score=score, threshold=threshold, direction=direction, tpr=tp / n_dp,
                    fpr=fp / n_d, tpr_lower=tpr_lo, fpr_upper=fpr_hi, mu_lower_bound=mu,
                    epsilon_lower_bound=gdp_epsilon(mu, delta), alpha=alpha,
                    n_select=(h, hp), n_eval=(n_d, n_dp))


def max_certifiable_gdp_epsilon(n_d: int, n_dprime: int | None = None, *, delta: float,
                                alpha: float) -> float:
    r"""The ceiling of :func:`gdp_bound`: its ε for a perfect distinguisher.

    :math:`\mu_{\max} = \Phi^{-1}(\alpha^{1/n'}) - \Phi^{-1}(1 - \alpha^{1/n})` with ``n_d``
    and ``n_dprime`` evaluation trials, converted by :func:`gdp_epsilon`.

    Args:
        n_d: evaluation trials on :math:`D`, ≥ 1.
        n_dprime: evaluation trials on :math:`D'` (default ``n_d``).
        delta: δ in (0, 1).
        alpha: one-sided level of each Clopper–Pearson bound, in (0, 1).

    Returns:
        float: ε in nats.

    Example:
        >>> round(max_certifiable_gdp_epsilon(1000, delta=1e-5, alpha=0.025), 2)
        36.49
    """
    n_d = check_positive_int(n_d, "n_d")
    n_dp = n_d if n_dprime is None else check_positive_int(n_dprime, "n_dprime")
    mu, _, _ = _gdp_mu(n_dp, n_dp, 0, n_d, alpha)
    return gdp_epsilon(float(mu), delta)


# ============================================================================ one run
def one_run_p_value(m: int, r: int, v: int, *, epsilon: float, delta: float) -> float:
    r"""P-value of v or more correct guesses out of r under (ε, δ)-DP (one-run audit).

    With m canaries each included independently with probability 1/2 and r guesses (the rest
    abstain), an (ε, δ)-DP mechanism gives

    .. math::

        P[W \ge v] \le P[\mathrm{Bin}(r, p_\varepsilon) \ge v]
        + 2 m \delta \max_{1 \le i \le v} \frac{1}{i}\,
          P[v - i \le \mathrm{Bin}(r, p_\varepsilon) < v],
        \qquad p_\varepsilon = \frac{e^\varepsilon}{1 + e^\varepsilon}.

    Args:
        m: canaries, ≥ 1.
        r: guesses, in [1, m].
        v: correct guesses, in [0, r].
        epsilon: ε ≥ 0 of the null hypothesis (nats).
        delta: δ in [0, 1) of the null hypothesis.

    Returns:
        float: the p-value in [0, 1].

    Raises:
        ValueError: unless 0 ≤ v ≤ r ≤ m, ε ≥ 0 and δ ∈ [0, 1).

    References:
        Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1), Thm. 3.1 and Appendix D.

    Example:
        >>> round(one_run_p_value(1000, 100, 100, epsilon=0.0, delta=0.0), 35)  # 2^-100
        7.9e-31
    """
    m, r, v = _one_run_counts(m, r, v)
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise ValueError(f"`epsilon` must be finite and non-negative. Found {epsilon!r}.")
    delta = check_probability(delta, "delta", open_high=True)
    q = 1.0 / (1.0 + math.exp(-epsilon))
    p = float(binom.sf(v - 1, r, q))
    if delta > 0 and v > 0:
        i = np.arange(1, v + 1)
        tail = np.cumsum(binom.pmf(v - i, r, q))  # P[v − i ≤ Bin < v]
        p += float(np.max(tail / i)) * delta * 2 * m
    return min(p, 1.0)


def _one_run_counts(m, r, v):
    m, r, v = (check_positive_int(m, "m"), check_positive_int(r, "r"), int(v))
    if not 0 <= v <= r <= m:
        raise ValueError(f"Need 0 <= v <= r <= m. Found m={m}, r={r}, v={v}.")
    return m, r, v


def one_run_epsilon(m: int, r: int, v: int, *, delta: float, alpha: float) -> float:
    r"""Lower bound on ε from v correct guesses out of r with m canaries (one-run audit).

    The largest ε whose :func:`one_run_p_value` is below ``alpha`` (bisection; the low end of
    the bracket is returned, so the bound is never overstated); 0 if even ε = 0 is not rejected.

    Args:
        m, r, v: canaries, guesses and correct guesses (0 ≤ v ≤ r ≤ m).
        delta: δ in [0, 1).
        alpha: the test's level (1 − confidence), in (0, 1).

    Returns:
        float: ε ≥ 0 in nats.

    References:
        Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1), Appendix D.

    Example:
        >>> round(one_run_epsilon(1000, 100, 100, delta=1e-5, alpha=0.05), 2)
        3.47
        >>> one_run_epsilon(1000, 100, 50, delta=1e-5, alpha=0.05)
        0.0
    """
    m, r, v = _one_run_counts(m, r, v)
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    if one_run_p_value(m, r, v, epsilon=0.0, delta=delta) >= alpha:
        return 0.0
    lo, hi = 0.0, 1.0
    while hi < 700 and one_run_p_value(m, r, v, epsilon=hi, delta=delta) < alpha:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if one_run_p_value(m, r, v, epsilon=mid, delta=delta) < alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return lo


#: Default guess counts of :func:`one_run_bound`, as fractions of the canaries.
ONE_RUN_GUESS_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)


def _guess_counts(m, guesses):
    if guesses is None:
        guesses = sorted({max(1, math.ceil(f * m)) for f in ONE_RUN_GUESS_FRACTIONS})
    guesses = [int(g) for g in guesses]
    if not guesses or any(g < 1 or g > m for g in guesses):
        raise ValueError(f"`guesses` must be integers in [1, m={m}]. Found {guesses!r}.")
    return guesses


@dataclasses.dataclass(frozen=True)
class OneRunBound:
    r"""The one-run lower bound of one score.

    Attributes:
        score: the score's name.
        canaries: m.
        guesses: r, the guesses of the best candidate (``k_positive`` highest scores guessed
            in, ``k_negative`` lowest guessed out).
        k_positive, k_negative: its split of the guesses.
        correct: v, correct guesses.
        epsilon_lower_bound: :func:`one_run_epsilon` at level ``alpha`` (nats).
        alpha: level of each candidate's test (the confidence's complement split by
            Bonferroni over the ``candidates`` guess counts).
        candidates: the guess counts tried.
    """

    score: str
    canaries: int
    guesses: int
    k_positive: int
    k_negative: int
    correct: int
    epsilon_lower_bound: float
    alpha: float
    candidates: tuple[int, ...]

    def as_dict(self) -> dict:
        """JSON-friendly dict."""
        d = dataclasses.asdict(self)
        d["candidates"] = list(self.candidates)
        return d


def one_run_bound(scores: ArrayLike, included: ArrayLike, *, delta: float, alpha: float,
                  guesses: Iterable[int] | None = None, score: str = "score") -> OneRunBound:
    r"""One-run lower bound on ε from canary scores and their (coin-flip) membership.

    For each guess count r in ``guesses`` the auditor guesses "in" for the
    :math:`\lceil r/2 \rceil` highest scores and "out" for the :math:`\lfloor r/2 \rfloor`
    lowest, counts the correct guesses v, and computes :func:`one_run_epsilon` at level
    ``alpha / len(guesses)`` (Bonferroni over the candidates, which are fixed before the
    scores are seen). The largest is returned.

    Args:
        scores: one score per canary, shape ``(m,)``, larger meaning "looks included"; finite.
        included: the canaries' memberships, bool, shape ``(m,)``, drawn independently with
            probability 1/2 (the theorem's assumption).
        delta: δ in [0, 1).
        alpha: total level (1 − confidence), in (0, 1).
        guesses: the guess counts r to try (default :data:`ONE_RUN_GUESS_FRACTIONS` × m).
        score: the score's name.

    Returns:
        OneRunBound: the best candidate and its bound.

    Raises:
        ValueError: for mismatched shapes, non-finite scores or invalid guess counts.

    References:
        Steinke, Nasr, Jagielski, arXiv:2305.08846 (v1), Algorithm 1 and Thm. 3.1.

    Example:
        >>> inc = np.arange(1000) % 2 == 0
        >>> b = one_run_bound(inc.astype(float), inc, delta=1e-5, alpha=0.05)
        >>> b.correct == b.guesses == 1000, round(b.epsilon_lower_bound, 2)
        (True, 5.23)
    """
    s = np.asarray(scores, dtype=float).reshape(-1)
    inc = np.asarray(included).reshape(-1)
    if inc.dtype != bool:
        raise TypeError(f"`included` must be booleans. Found {inc.dtype}.")
    if s.size != inc.size or s.size < 1:
        raise ValueError(f"`scores` and `included` must have the same positive length. Found "
                         f"{s.size} and {inc.size}.")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"`scores` must be finite. Found {s[~np.isfinite(s)][:3]!r}.")
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    m = s.size
    cands = _guess_counts(m, guesses)
    a = alpha / len(cands)
    order = np.argsort(-s, kind="stable")
    best: tuple | None = None
    for r in cands:
        kp = math.ceil(r / 2)
        kn = r - kp
        v = int(inc[order[:kp]].sum()) + (int((~inc[order[m - kn:]]).sum()) if kn else 0)
        eps = one_run_epsilon(m, r, v, delta=delta, alpha=a)
        if best is None or eps > best[0]:
            best = (eps, r, kp, kn, v)
    assert best is not None  # at least one guess count
    eps, r, kp, kn, v = best
    return OneRunBound(score=score, canaries=m, guesses=r, k_positive=kp, k_negative=kn,
                       correct=v, epsilon_lower_bound=eps, alpha=a, candidates=tuple(cands))


def max_certifiable_one_run_epsilon(m: int, *, delta: float, alpha: float,
                                    guesses: Iterable[int] | None = None) -> float:
    r"""The ceiling of :func:`one_run_bound`: every guess correct, best guess count.

    Args:
        m: canaries, ≥ 1.
        delta: δ in [0, 1).
        alpha: total level, in (0, 1) (split over the guess counts as in
            :func:`one_run_bound`).
        guesses: the guess counts (default as in :func:`one_run_bound`).

    Returns:
        float: ε in nats.

    Example:
        >>> round(max_certifiable_one_run_epsilon(1000, delta=1e-5, alpha=0.05), 2)
        5.23
    """
    m = check_positive_int(m, "m")
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    cands = _guess_counts(m, guesses)
    return max(one_run_epsilon(m, r, r, delta=delta, alpha=alpha / len(cands)) for r in cands)
