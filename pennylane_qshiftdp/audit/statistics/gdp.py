r"""Gaussian-DP lower bounds on ε: the threshold test read through the trade-off curve G_μ.

References:
    Nasr, Hayes, Steinke, Balle, Tramèr, Jagielski, Carlini, Terzis, arXiv:2302.07956 (v1), §4.
    Dong, Roth, Su, "Gaussian Differential Privacy", arXiv:1905.02383 (v3), Def. 2.3 (G_μ)
    and Cor. 2.13 (μ-GDP ⇔ (ε, δ(ε))-DP for all ε).
"""

from __future__ import annotations

import dataclasses
import math
from typing import overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

from ..._validation import check_positive_int, check_probability
from ._thresholds import region_counts
from .clopper_pearson import clopper_pearson_lower, clopper_pearson_upper

__all__ = ["GDPBound", "gdp_bound", "gdp_delta", "gdp_epsilon", "max_certifiable_gdp_epsilon"]


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
        tp = region_counts(sel_dp, cands, direction)
        fp = region_counts(sel_d, cands, direction)
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
        tp = region_counts(sel_dp, np.array([t]), direction)
        fp = region_counts(sel_d, np.array([t]), direction)
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
    tp = int(region_counts(ev_dp, np.array([threshold]), direction)[0])
    fp = int(region_counts(ev_d, np.array([threshold]), direction)[0])
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
