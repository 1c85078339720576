r"""Empirical privacy audit of one private step (canary, neighbouring data sets, Clopper–Pearson).

A privacy claim (ε, δ) says that for neighbouring data sets :math:`D` and :math:`D' = D \cup
\{z\}` and every set :math:`R` of releases

.. math::

    P[M(D') \in R] \le e^{\varepsilon} P[M(D) \in R] + \delta
    \quad\text{and}\quad
    P[M(D) \in R] \le e^{\varepsilon} P[M(D') \in R] + \delta .

The audit runs the mechanism :math:`M` — :func:`~pennylane_qshiftdp.make_private` and one
optimizer step at sampling rate :math:`q = 1` — many times on :math:`D` and on :math:`D'`, each
trial with a fresh device seed (shot noise) and a fresh DP-noise seed, and reads the *release*:
the weight change times the expected batch size over the learning rate, i.e. the noisy sum of
clipped per-example gradients :math:`\sum_j \bar g_j + z`. Each release gets two scores,

* ``projection``: the release projected on the canary's expected gradient direction;
* ``lattice``: the distance of the release from the lattice :math:`h\mathbb Z^K`, where
  :math:`h = |c|(\lambda_{\max} - \lambda_{\min})|w| / N_s` is the step on which a sum of
  parameter-shift estimates from :math:`N_s` shots lies (shift coefficient :math:`c`, loss
  weight :math:`w`). A canary whose gradient is off the lattice moves the sum off it, which
  Gaussian noise much smaller than :math:`h` cannot hide.

For each score, a threshold and a direction (``>`` or ``<``) are chosen on the first half of the
trials (the one maximising the lower bound computed on that half), and the true- and
false-positive rates of the rejection region :math:`R` are measured on the second half. With
one-sided Clopper–Pearson bounds :math:`\mathrm{TPR}^-` and :math:`\mathrm{FPR}^+`,

.. math::

    \varepsilon \ge \max\Bigl(\ln\frac{\mathrm{TPR}^- - \delta}{\mathrm{FPR}^+},\;
    \ln\frac{1 - \mathrm{FPR}^+ - \delta}{1 - \mathrm{TPR}^-},\; 0\Bigr)

holds with probability at least the stated confidence. The two bounds of every score are taken
at level :math:`(1 - \text{confidence})/(2S)` for :math:`S` scores (Bonferroni), so every
reported number — per score and their maximum — holds simultaneously. If the scores of the two
worlds separate perfectly, the threshold falls in the gap and the bound is the largest ε the
number of trials can certify (:func:`max_certifiable_epsilon`).

An audited lower bound above the *proven* ε (:attr:`PrivacyLedger.epsilon`, from the Gaussian
noise actually added) refutes the product's guarantee; above the *credited* ε
(:attr:`PrivacyLedger.credited_epsilon`, shot noise counted as Gaussian) it refutes only the
Gaussian approximation of shot noise. A configuration that :func:`make_private` or the optimizer
refuses is reported as refused, with the message.

:func:`audit_setting` is the fixed one-qubit setting (``RY(x) RY(θ)``, ⟨Z⟩, θ = 0.3, 30
examples with maximal shot variance, a zero-variance canary with label 1/4), in which the
lattice score once showed ε ≥ 8 against a claimed ε of 1.99 at :math:`N_s = 2`;
:func:`audit_one_step` audits any model, loss, data set and canary.

This module is library code: it imports no data set, model or application code (matplotlib is
imported only by :func:`plot_audit`).

References:
    Jagielski, Ullman, Oprea, "Auditing Differentially Private Machine Learning: How Private is
    Private SGD?", arXiv:2006.07709 (v1), §4 (Clopper–Pearson ε lower bound).
    Nasr, Song, Thakurta, Papernot, Carlini, "Adversary Instantiation: Lower Bounds for
    Differentially Private Machine Learning", arXiv:2101.04535 (v1), §3 (threshold chosen on
    held-out trials).
    Clopper & Pearson, Biometrika 26 (1934) 404–413.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pennylane as qml
import torch
from scipy.stats import beta as beta_dist

from ._validation import (
    check_delta,
    check_epsilon,
    check_positive_float,
    check_positive_int,
    check_probability,
)
from .engine import make_private
from .exceptions import PrivacyBudgetExceededError, PrivacyWarning, SensitivityError
from .losses import BoundedLoss, LinearLoss
from .shot_statistics import ShotRecorder
from .transform import param_shift

__all__ = [
    "SCORES",
    "SETTING_MODES",
    "AuditResult",
    "ScoreBound",
    "audit_one_step",
    "audit_setting",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_from_rates",
    "lattice_score",
    "max_certifiable_epsilon",
    "plot_audit",
    "projection_score",
    "split_half_bound",
]

#: Scores computed for every release.
SCORES = ("projection", "lattice")

#: The modes of :func:`audit_setting`: name -> (credit, max_grad_norm). ``"fixed_clip"`` uses
#: the ``clip_norm`` argument of :func:`audit_setting` (default 0.5).
SETTING_MODES = {
    "none": ("none", "certified"),
    "depolarizing": ("depolarizing", "certified"),
    "adaptive": ("adaptive", "certified"),
    "isotropic": ("isotropic", "certified"),
    "fixed_clip": ("none", "fixed"),
    "adaptive_clip": ("none", "adaptive"),
}

# Exceptions by which make_private or the optimizer refuse a configuration ("refused").
_REFUSALS = (ValueError, NotImplementedError, SensitivityError, PrivacyBudgetExceededError)
# make_private arguments the audit fixes itself (one step at q = 1, seeded trials).
_FIXED_KWARGS = ("epochs", "sample_rate", "seed", "secure_mode")


# ============================================================================ pure statistics
def clopper_pearson_lower(k, n, *, alpha: float):
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


def clopper_pearson_upper(k, n, *, alpha: float):
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


def _counts(k, n):
    k = np.asarray(k)
    n = np.asarray(n)
    if not (np.issubdtype(k.dtype, np.integer) and np.issubdtype(n.dtype, np.integer)):
        raise TypeError(f"`k` and `n` must be integers. Found {k.dtype} and {n.dtype}.")
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError(f"`k` must be in [0, n] with n >= 1. Found k={k.tolist()!r}, "
                         f"n={n.tolist()!r}.")
    return k, n


def epsilon_from_rates(tpr_lower, fpr_upper, *, delta: float):
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


def split_half_bound(scores_d, scores_dprime, *, delta: float, alpha: float,
                     score: str = "score") -> ScoreBound:
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
    best = None
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


def projection_score(releases, direction) -> np.ndarray:
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


def lattice_score(releases, step) -> np.ndarray:
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


# ============================================================================ result
@dataclasses.dataclass(frozen=True, eq=False)
class AuditResult:
    r"""The outcome of auditing one configuration.

    Attributes:
        label: the configuration's name (e.g. ``"adaptive"``).
        status: ``"audited"`` or ``"refused"``.
        message: the refusal message (``None`` when audited).
        trials: trials per world (:math:`D` and :math:`D'` each).
        seed: the audit's seed (per-trial device and noise seeds derive from it).
        target_epsilon: the budget given to :func:`make_private`.
        delta: δ of the claim (``target_delta``).
        beta: failure probability β of an adaptive credit (the credited claim is at
            δ + β); 0 otherwise.
        claimed_epsilon: the proven ε (:attr:`PrivacyLedger.epsilon` after the step), the
            largest over all trials of both worlds (the weakest claim made; it can depend on
            the data when shot noise is credited).
        claimed_epsilon_min: the smallest proven ε claimed in any trial.
        credited_epsilon: :attr:`PrivacyLedger.credited_epsilon` after the step (largest).
        bounds: per score, its :class:`ScoreBound`.
        epsilon_lower_bound: the audited lower bound: the largest over the scores (nats).
        max_certifiable_epsilon: the bound a perfect distinguisher would get from these trials.
        confidence: joint confidence of every reported bound.
        seconds: wall-clock time of the audit.
        settings: the make_private settings and the setting's description (JSON-friendly).
        warnings: distinct warning messages raised by make_private or the step.
        scores: per score, ``(scores on D, scores on D')`` (not in :meth:`as_dict`).
        releases: ``(releases on D, releases on D')``, each ``(trials, K)``.
    """

    label: str
    status: str
    message: str | None
    trials: int
    seed: int
    target_epsilon: float
    delta: float
    beta: float
    claimed_epsilon: float | None
    claimed_epsilon_min: float | None
    credited_epsilon: float | None
    bounds: Mapping[str, ScoreBound]
    epsilon_lower_bound: float
    max_certifiable_epsilon: float
    confidence: float
    seconds: float
    settings: Mapping
    warnings: tuple[str, ...] = ()
    scores: Mapping[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(
        default_factory=dict, repr=False)
    releases: tuple[np.ndarray, np.ndarray] | None = dataclasses.field(default=None, repr=False)

    @property
    def refused(self) -> bool:
        """make_private or the optimizer refused the configuration."""
        return self.status == "refused"

    @property
    def proven_refuted(self) -> bool:
        """The audited lower bound exceeds the proven ε: the guarantee is wrong."""
        return (not self.refused and self.claimed_epsilon is not None
                and self.epsilon_lower_bound > self.claimed_epsilon)

    @property
    def credited_refuted(self) -> bool:
        """The audited lower bound exceeds the credited ε (Gaussian approximation refuted)."""
        return (not self.refused and self.credited_epsilon is not None
                and self.epsilon_lower_bound > self.credited_epsilon)

    @property
    def verdict(self) -> str:
        """``"refused"``, ``"PROVEN CLAIM REFUTED"``, ``"credited approximation refuted"`` or
        ``"not refuted"``."""
        if self.refused:
            return "refused"
        if self.proven_refuted:
            return "PROVEN CLAIM REFUTED"
        if self.credited_refuted:
            return "credited approximation refuted"
        return "not refuted"

    def as_dict(self, *, include_scores: bool = False) -> dict:
        """JSON-friendly dict of the result.

        Args:
            include_scores: also include every trial's scores (large).
        """
        out = {
            "label": self.label, "status": self.status, "message": self.message,
            "verdict": self.verdict, "proven_refuted": self.proven_refuted,
            "credited_refuted": self.credited_refuted, "trials": self.trials,
            "seed": self.seed, "target_epsilon": self.target_epsilon, "delta": self.delta,
            "beta": self.beta, "claimed_epsilon": self.claimed_epsilon,
            "claimed_epsilon_min": self.claimed_epsilon_min,
            "credited_epsilon": self.credited_epsilon,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "max_certifiable_epsilon": self.max_certifiable_epsilon,
            "confidence": self.confidence, "seconds": self.seconds,
            "bounds": {k: b.as_dict() for k, b in self.bounds.items()},
            "settings": dict(self.settings), "warnings": list(self.warnings),
        }
        if include_scores:
            out["scores"] = {k: [a.tolist(), b.tolist()] for k, (a, b) in self.scores.items()}
        return out

    def __str__(self) -> str:
        head = f"{self.label}: "
        if self.refused:
            return head + f"refused ({self.message})"
        beta = f" + β {self.beta:g}" if self.beta else ""
        per = ", ".join(f"{k} {b.epsilon_lower_bound:.3f}" for k, b in self.bounds.items())
        return (f"{head}claimed ε = {self.claimed_epsilon:.3f} proven, "
                f"{self.credited_epsilon:.3f} credited (δ = {self.delta:g}{beta}); audited "
                f"ε ≥ {self.epsilon_lower_bound:.3f} ({per}; at most "
                f"{self.max_certifiable_epsilon:.2f} certifiable) from {self.trials} trials "
                f"per world at {self.confidence:.0%}: {self.verdict} [{self.seconds:.1f} s]")


# ============================================================================ running trials
def _as_tensor_dataset(dataset, name: str):
    if isinstance(dataset, torch.utils.data.TensorDataset) and len(dataset.tensors) == 2:
        return dataset.tensors
    try:
        items = [dataset[i] for i in range(len(dataset))]
        xs = torch.stack([torch.as_tensor(x) for x, _ in items])
        ys = torch.stack([torch.as_tensor(y) for _, y in items])
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"`{name}` must be a map-style data set of (x, y) pairs of tensors. "
                        f"Found {type(dataset).__name__}.") from err
    return xs, ys


def _trial_seeds(seed: int, trials: int) -> np.ndarray:
    """Per world (D, D') and trial: (device seed, noise seed), shape (2, trials, 2)."""
    state = np.random.SeedSequence(seed).generate_state(4 * trials, dtype=np.uint64)
    return (state >> np.uint64(2)).astype(np.int64).reshape(2, trials, 2)


class _World:
    """make_private and one step on one data set, repeated with fresh seeds."""

    def __init__(self, make_model, loss_fn, xs, ys, kwargs, *, fresh: bool, caught: list):
        self.make_model, self.loss_fn = make_model, loss_fn
        self.data = torch.utils.data.TensorDataset(xs, ys)
        self.kwargs, self.fresh, self.caught = kwargs, fresh, caught
        self.device_rng = np.random.default_rng(0)
        self._private = None

    def _build(self, noise_seed: int):
        built = self.make_model(self.device_rng)
        module, extra = built if isinstance(built, tuple) else (built, {})
        clash = sorted(set(extra) & set(self.kwargs))
        if clash:
            raise TypeError(f"make_private arguments {clash} come both from `make_model` and "
                            f"from the keyword arguments; give each once.")
        params = [p for p in module.parameters() if p.requires_grad]
        sgd = torch.optim.SGD(params, lr=1.0)
        loader = torch.utils.data.DataLoader(self.data, batch_size=len(self.data))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyWarning)
            model, opt, dl = make_private(module, sgd, loader, epochs=1, seed=noise_seed,
                                          **extra, **self.kwargs)
        self.caught.extend(str(w.message) for w in caught)
        snapshot = (opt.state_dict(), opt.ledger.state_dict() if opt.ledger else None,
                    [p.detach().clone() for p in params])
        self._private = (model, opt, dl, params, snapshot)

    def run(self, device_seed: int, noise_seed: int):
        """One trial: (release vector, proven ε, credited ε)."""
        if self.fresh or self._private is None:
            self._build(noise_seed)
        model, opt, dl, params, (opt_state, ledger_state, weights) = self._private
        # Reset everything the previous trial changed; fresh seeds for shots and DP noise.
        opt.load_state_dict(opt_state)
        if ledger_state is not None:
            opt.ledger.load_state_dict(ledger_state)
        with torch.no_grad():
            for p, w in zip(params, weights, strict=True):
                p.copy_(w)
        if opt.generator is not None:
            opt.generator.manual_seed(noise_seed)
        sampler_gen = getattr(dl.batch_sampler, "generator", None)
        if sampler_gen is not None:
            sampler_gen.manual_seed(noise_seed + 1)
        self.device_rng.bit_generator.state = np.random.PCG64(device_seed).state
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyWarning)
            opt.zero_grad(set_to_none=True)
            x, y = next(iter(dl))
            loss = self.loss_fn(model(x), y)
            if loss.ndim:
                loss = loss.mean()
            loss.backward()
            opt.step()
        self.caught.extend(str(w.message) for w in caught)
        release = torch.cat([(w - p.detach()).reshape(-1).double()
                             for p, w in zip(params, weights, strict=True)])
        release = release * opt.expected_batch_size / opt.original_optimizer.param_groups[0]["lr"]
        ledger = opt.ledger
        return release.numpy(), float(ledger.epsilon), float(ledger.credited_epsilon)


def _refused(label, message, *, trials, seed, kwargs, settings, caught, t0, confidence):
    return AuditResult(
        label=label, status="refused", message=message, trials=trials, seed=seed,
        target_epsilon=float(kwargs["target_epsilon"]), delta=float(kwargs["target_delta"]),
        beta=float(kwargs.get("beta", 0.0)), claimed_epsilon=None, claimed_epsilon_min=None,
        credited_epsilon=None, bounds={}, epsilon_lower_bound=0.0,
        max_certifiable_epsilon=0.0, confidence=confidence, seconds=time.perf_counter() - t0,
        settings=settings, warnings=tuple(dict.fromkeys(caught)),
    )


def _jsonable(v):
    if isinstance(v, (str, bool, int, float)) or v is None:
        return v
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return type(v).__name__


def audit_one_step(make_model: Callable, make_loss: Callable, dataset, canary, *, trials: int,
                   seed: int = 0, lattice_step=None, canary_direction=None,
                   confidence: float = 0.95, label: str | None = None, plot_path=None,
                   fresh: bool = False, progress: Callable | None = None,
                   **make_private_kwargs) -> AuditResult:
    r"""Audit one private step of :func:`make_private` on :math:`D` and :math:`D' = D + z`.

    Per world and trial the audit resets the model's weights, the optimizer and the ledger to
    the state :func:`make_private` left, seeds the device and the DP noise afresh, runs one
    step at :math:`q = 1` (the loader's batch is the whole data set; SGD with learning rate 1;
    ``make_loss()`` applied to the model's outputs and the labels, averaged) and records the
    release :math:`(w_0 - w_1)\,qN` (the noisy sum) and the ledger's proven and credited ε.
    Then :func:`split_half_bound` gives a lower bound on ε for each score.

    Args:
        make_model: ``make_model(seed) -> module`` or ``(module, kwargs)``: a fresh model whose
            quantum device is built with ``seed=seed`` (a :class:`numpy.random.Generator`
            that the audit re-seeds before every trial; PennyLane devices accept one).
            ``kwargs`` are further :func:`make_private` arguments that belong to the model
            (``recorder``, ``variance_floor``, ``variance_floor_source``).
        make_loss: ``make_loss() -> loss`` with ``loss(outputs, labels)`` per example or
            reduced. A :class:`~pennylane_qshiftdp.losses.BoundedLoss` is also passed to
            make_private as ``loss`` under ``max_grad_norm="certified"``.
        dataset: :math:`D`, a map-style data set of ``(x, y)`` tensor pairs.
        canary: the added example :math:`z = (x, y)`.
        trials: trials per world, ≥ 4 (half select the threshold, half evaluate it).
        seed: derives every trial's device and noise seeds (repeatable).
        lattice_step: step :math:`h` of the ``lattice`` score (scalar or per coordinate);
            ``None`` skips that score.
        canary_direction: the canary's expected gradient direction for the ``projection``
            score; ``None`` estimates it from the first half of the trials (difference of the
            mean releases), which keeps the second half independent.
        confidence: joint confidence of the reported bounds, in (0, 1).
        label: name of the configuration in the result (default from the credit and clip).
        plot_path: if given, :func:`plot_audit` writes the score histograms there (PNG).
        fresh: call ``make_model`` and make_private for every trial (slower; the default
            builds them once per world and resets them, which gives the same releases).
        progress: optional callback ``progress(done, total)`` after every trial.
        **make_private_kwargs: passed to :func:`make_private` (``target_epsilon`` and
            ``target_delta`` are required; ``epochs``, ``sample_rate``, ``seed`` and
            ``secure_mode`` are fixed by the audit).

    Returns:
        AuditResult: claims, per-score bounds, verdict; ``status="refused"`` with the message
        if make_private or the optimizer refused the configuration.

    Raises:
        ValueError: for invalid ``trials``, ``confidence``, ``lattice_step`` or missing or
            fixed make_private arguments.
        TypeError: for a data set or canary that is not made of ``(x, y)`` tensors.

    References:
        Jagielski et al., arXiv:2006.07709 (v1); Nasr et al., arXiv:2101.04535 (v1).

    Example:
        >>> def circuit(inputs, weights):
        ...     qml.RY(inputs[..., 0], wires=0)
        ...     qml.RY(weights[0], wires=0)
        ...     return qml.expval(qml.Z(0))
        >>> def make_model(seed):
        ...     dev = qml.device("default.qubit", wires=1, seed=seed)
        ...     qnode = qml.set_shots(qml.QNode(circuit, dev, diff_method=param_shift), shots=10)
        ...     return qml.qnn.TorchLayer(qnode, {"weights": (1,)}).double()
        >>> data = torch.utils.data.TensorDataset(torch.zeros(10, 1, dtype=torch.float64),
        ...                                       torch.ones(10, dtype=torch.float64))
        >>> canary = (torch.ones(1, dtype=torch.float64), torch.tensor(1.0))
        >>> r = audit_one_step(make_model, LinearLoss, data, canary, trials=20,
        ...                    target_epsilon=1.0, target_delta=1e-5)
        >>> r.status, r.proven_refuted, round(r.claimed_epsilon, 3)
        ('audited', False, 0.995)
    """
    t0 = time.perf_counter()
    trials = check_positive_int(trials, "trials")
    if trials < 4:
        raise ValueError(f"`trials` must be at least 4 (half select, half evaluate). Found "
                         f"{trials}.")
    confidence = check_probability(confidence, "confidence", open_low=True, open_high=True)
    for key in ("target_epsilon", "target_delta"):
        if key not in make_private_kwargs:
            raise ValueError(f"`{key}` must be given (it is passed to make_private). Found "
                             f"none.")
    fixed = sorted(set(make_private_kwargs) & set(_FIXED_KWARGS))
    if fixed:
        raise ValueError(f"{fixed} are fixed by the audit (one step at q = 1 with seeded "
                         f"trials). Found {fixed} in the keyword arguments.")
    check_epsilon(make_private_kwargs["target_epsilon"], "target_epsilon")
    delta = check_delta(make_private_kwargs["target_delta"], "target_delta")
    if lattice_step is not None:
        h = np.asarray(lattice_step, dtype=float)
        if not np.all(np.isfinite(h) & (h > 0)):
            raise ValueError(f"`lattice_step` must be positive and finite. Found "
                             f"{lattice_step!r}.")
    if not (isinstance(canary, (tuple, list)) and len(canary) == 2):
        raise TypeError(f"`canary` must be an (x, y) pair. Found {type(canary).__name__}.")
    xs, ys = _as_tensor_dataset(dataset, "dataset")
    cx, cy = (torch.as_tensor(v) for v in canary)
    xs_p = torch.cat([xs, cx.reshape(1, *xs.shape[1:]).to(xs.dtype)])
    ys_p = torch.cat([ys, cy.reshape(1, *ys.shape[1:]).to(ys.dtype)])

    loss_fn = make_loss()
    kwargs = dict(make_private_kwargs)
    clip = kwargs.get("max_grad_norm", "certified")
    if isinstance(loss_fn, BoundedLoss) and clip == "certified" and "loss" not in kwargs:
        kwargs["loss"] = loss_fn
    if label is None:
        label = f"credit={kwargs.get('credit', 'none')}, max_grad_norm={clip}"
    settings = {k: _jsonable(v) for k, v in kwargs.items()}
    settings.update(dataset_size=len(xs), lattice_step=_jsonable(
        None if lattice_step is None else np.asarray(lattice_step).tolist()))
    n_scores = 1 + (lattice_step is not None)
    alpha = (1.0 - confidence) / (2 * n_scores)
    caught: list[str] = []
    common = dict(trials=trials, seed=seed, kwargs=kwargs, settings=settings, caught=caught,
                  t0=t0, confidence=confidence)

    worlds = [_World(make_model, loss_fn, xs, ys, kwargs, fresh=fresh, caught=caught),
              _World(make_model, loss_fn, xs_p, ys_p, kwargs, fresh=fresh, caught=caught)]
    seeds = _trial_seeds(seed, trials)
    releases = [[], []]
    claims, credited = [], []
    for t in range(trials):
        for w, world in enumerate(worlds):
            dev_seed, noise_seed = (int(s) for s in seeds[w, t])
            try:
                rel, eps, cred = world.run(dev_seed, noise_seed)
            except _REFUSALS as err:
                where = "D" if w == 0 else "D'"
                return _refused(label, f"{type(err).__name__} on {where}: {err}", **common)
            releases[w].append(rel)
            claims.append(eps)
            credited.append(cred)
        if progress is not None:
            progress(t + 1, trials)
    rel_d, rel_dp = np.stack(releases[0]), np.stack(releases[1])

    half = trials // 2
    if canary_direction is None:
        direction = rel_dp[:half].mean(axis=0) - rel_d[:half].mean(axis=0)
        if not np.any(direction):
            direction = np.ones(rel_d.shape[1])
    else:
        direction = np.asarray(canary_direction, dtype=float)
    scores = {"projection": (projection_score(rel_d, direction),
                             projection_score(rel_dp, direction))}
    if lattice_step is not None:
        scores["lattice"] = (lattice_score(rel_d, lattice_step),
                             lattice_score(rel_dp, lattice_step))
    bounds = {name: split_half_bound(a, b, delta=delta, alpha=alpha, score=name)
              for name, (a, b) in scores.items()}
    result = AuditResult(
        label=label, status="audited", message=None, trials=trials, seed=seed,
        target_epsilon=float(kwargs["target_epsilon"]), delta=delta,
        beta=float(kwargs.get("beta", 0.0)), claimed_epsilon=max(claims),
        claimed_epsilon_min=min(claims), credited_epsilon=max(credited), bounds=bounds,
        epsilon_lower_bound=max(b.epsilon_lower_bound for b in bounds.values()),
        max_certifiable_epsilon=max_certifiable_epsilon(trials - half, delta=delta,
                                                        alpha=alpha),
        confidence=confidence, seconds=time.perf_counter() - t0, settings=settings,
        warnings=tuple(dict.fromkeys(caught)), scores=scores, releases=(rel_d, rel_dp),
    )
    if plot_path is not None:
        plot_audit(result, plot_path)
    return result


# ============================================================================ the fixed setting
def _setting_circuit(q_dep: float):
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RY(weights[0], wires=0)
        if q_dep:
            qml.DepolarizingChannel(q_dep, wires=0)
        return qml.expval(qml.Z(0))

    return circuit


def audit_setting(mode: str | None = None, *, credit: str | None = None, max_grad_norm=None,
                  shots: int = 2, trials: int = 1000, seed: int = 0, theta: float = 0.3,
                  num_examples: int = 30, target_epsilon: float = 2.0,
                  target_delta: float = 1e-5, beta: float = 1e-3, depolarizing=None,
                  clip_norm: float = 0.5, canary_label: float = 0.25,
                  proven_epsilon_factor: float | None = None, confidence: float = 0.95,
                  plot_path=None, fresh: bool = False,
                  progress: Callable | None = None) -> AuditResult:
    r"""Audit one step of the one-qubit setting that refuted the first version's shot-noise credit.

    Circuit ``RY(x) RY(θ)`` on one qubit, ⟨Z⟩, one weight θ (``theta``), a QNode with
    ``diff_method=pennylane_qshiftdp.param_shift`` and ``shots`` on ``default.qubit`` (or
    ``default.mixed`` with a final ``DepolarizingChannel(depolarizing)``), linear loss
    :math:`\ell = -y f`. :math:`D`: ``num_examples`` examples with :math:`x = -\theta` (both
    shifted circuits have ⟨Z⟩ = 0: maximal shot variance) and balanced labels ±1.
    :math:`D'`: :math:`D` plus the canary :math:`x = \pi/2 - \theta` (both shifted circuits
    are Z eigenstates: no shot variance without device noise) with label ``canary_label``.
    One step at q = 1 (make_private warns "q = 1"), SGD learning rate 1, budget
    (``target_epsilon``, ``target_delta``). The ``lattice`` score uses
    :math:`h = |c|(\lambda_{\max} - \lambda_{\min})/N_s = 1/N_s` (shift coefficient 1/2, ±1
    outcomes, labels ±1): every sum over :math:`D` lies on :math:`h\mathbb Z`, and the canary
    adds :math:`(1 - p)\cdot` ``canary_label`` to it.

    Args:
        mode: a key of :data:`SETTING_MODES` (``"none"``, ``"depolarizing"``,
            ``"adaptive"``, ``"isotropic"``, ``"fixed_clip"``, ``"adaptive_clip"``); or
            ``None`` and ``credit``/``max_grad_norm``.
        credit: shot-noise credit mode (with ``mode=None``; default ``"none"``).
        max_grad_norm: ``"certified"``, ``"adaptive"`` or a positive float (with
            ``mode=None``; default ``"certified"``).
        shots: :math:`N_s \ge 1` per shifted circuit.
        trials: trials per world, ≥ 4.
        seed: seeds every trial (repeatable).
        theta: the weight θ.
        num_examples: size of :math:`D`, a positive even number.
        target_epsilon, target_delta: the budget (ε in nats).
        beta: β of the ``adaptive`` and ``isotropic`` credits.
        depolarizing: PennyLane ``DepolarizingChannel`` parameter :math:`q_{dep} \in [0, 3/4]`
            before the measurement; its variance floor :math:`v_{\min}` comes from
            :func:`qprldp_core.certify_device` (source ``"proven"``). Default 0.25 for
            ``credit="depolarizing"``, else 0 (noiseless ``default.qubit``).
        clip_norm: the clip norm of ``mode="fixed_clip"``.
        canary_label: the canary's label (loss weight), in [-1, 1].
        proven_epsilon_factor: passed to :func:`make_private` with a credit mode (``None``:
            its default); a large factor lowers the noise floor, which the audit then probes.
        confidence: joint confidence of the bounds.
        plot_path: if given, the score histograms are written there (PNG).
        fresh: rebuild model and make_private for every trial (see :func:`audit_one_step`).
        progress: optional callback ``progress(done, total)``.

    Returns:
        AuditResult: see :func:`audit_one_step`; ``label`` is the mode.

    Raises:
        ValueError: for an unknown mode, a mode together with ``credit``/``max_grad_norm``,
            or invalid setting parameters.

    Example:
        >>> r = audit_setting("none", trials=40, seed=1)
        >>> r.verdict, r.epsilon_lower_bound <= r.claimed_epsilon
        ('not refuted', True)
    """
    if mode is not None:
        if mode not in SETTING_MODES:
            raise ValueError(f"`mode` must be one of {tuple(SETTING_MODES)}. Found {mode!r}.")
        if credit is not None or max_grad_norm is not None:
            raise ValueError(f"Give either `mode` or `credit`/`max_grad_norm`. Found "
                             f"mode={mode!r}, credit={credit!r}, "
                             f"max_grad_norm={max_grad_norm!r}.")
        credit, max_grad_norm = SETTING_MODES[mode]
        if max_grad_norm == "fixed":
            max_grad_norm = check_positive_float(clip_norm, "clip_norm")
        label = mode
    else:
        credit = "none" if credit is None else credit
        max_grad_norm = "certified" if max_grad_norm is None else max_grad_norm
        label = next((k for k, v in SETTING_MODES.items()
                      if v == (credit, max_grad_norm)
                      or (v == (credit, "fixed") and not isinstance(max_grad_norm, str))),
                     f"credit={credit}, max_grad_norm={max_grad_norm}")
    shots = check_positive_int(shots, "shots")
    theta = float(theta)
    num_examples = check_positive_int(num_examples, "num_examples")
    if num_examples % 2:
        raise ValueError(f"`num_examples` must be even (balanced labels ±1). Found "
                         f"{num_examples}.")
    if not -1.0 <= float(canary_label) <= 1.0:
        raise ValueError(f"`canary_label` must be in [-1, 1] (linear loss). Found "
                         f"{canary_label!r}.")
    q_dep = (0.25 if credit == "depolarizing" else 0.0) if depolarizing is None else depolarizing
    q_dep = float(q_dep)
    if not 0.0 <= q_dep <= 0.75:
        raise ValueError(f"`depolarizing` must be in [0, 0.75] (PennyLane's q). Found "
                         f"{depolarizing!r}.")
    circuit = _setting_circuit(q_dep)
    use_recorder = credit not in ("none",) and credit is not None

    def make_model(device_seed):
        dev = qml.device("default.mixed" if q_dep else "default.qubit", wires=1,
                         seed=device_seed)
        recorder = ShotRecorder() if use_recorder else None
        qnode = qml.QNode(circuit, dev, interface="torch", diff_method=param_shift,
                          gradient_kwargs={"recorder": recorder} if recorder else {})
        qnode = qml.set_shots(qnode, shots=shots)
        layer = qml.qnn.TorchLayer(qnode, {"weights": (1,)}).double()
        with torch.no_grad():
            layer.weights.fill_(theta)
        extra = {"recorder": recorder} if recorder is not None else {}
        if q_dep:
            from qprldp_core import certify_device

            cert = certify_device(qnode, epsilon=1.0,
                                  args=(torch.zeros(1, dtype=torch.float64),
                                        torch.zeros(1, dtype=torch.float64)))
            extra.update(variance_floor=float(cert.variance_floor),
                         variance_floor_source="proven")
        return layer, extra

    n = num_examples
    xs = torch.full((n, 1), -theta, dtype=torch.float64)
    ys = torch.tensor([1.0, -1.0] * (n // 2), dtype=torch.float64)
    canary = (torch.tensor([math.pi / 2 - theta], dtype=torch.float64),
              torch.tensor(float(canary_label), dtype=torch.float64))
    kwargs = dict(target_epsilon=target_epsilon, target_delta=target_delta,
                  max_grad_norm=max_grad_norm, credit=credit)
    if credit in ("adaptive", "isotropic"):
        kwargs["beta"] = beta
    if proven_epsilon_factor is not None:
        kwargs["proven_epsilon_factor"] = proven_epsilon_factor
    # Shift coefficient |c| = 1/2, outcomes ±1, label weights ±1: sums lie on (1/Ns)ℤ.
    step = 0.5 * 2.0 / shots
    # The canary's expected per-example gradient of ℓ = -y f: y (1 - p) sin(π/2) with
    # p = 4 q_dep / 3; only its sign matters in one dimension.
    direction = [math.copysign(1.0, float(canary_label)) if canary_label else 1.0]
    result = audit_one_step(make_model, LinearLoss, torch.utils.data.TensorDataset(xs, ys),
                            canary, trials=trials, seed=seed, lattice_step=step,
                            canary_direction=direction, confidence=confidence, label=label,
                            fresh=fresh, progress=progress, **kwargs)
    settings = dict(result.settings)
    settings.update(circuit="RY(x) RY(θ), <Z>, one qubit", theta=theta, shots=shots,
                    device="default.mixed" if q_dep else "default.qubit",
                    depolarizing_q=q_dep, canary_x=math.pi / 2 - theta,
                    canary_label=float(canary_label), data_x=-theta, sample_rate=1.0, lr=1.0)
    result = dataclasses.replace(result, settings=settings)
    if plot_path is not None:
        plot_audit(result, plot_path)
    return result


# ============================================================================ plot
def plot_audit(result: AuditResult, path) -> None:
    r"""Histograms of the scores on :math:`D` and :math:`D'` with the chosen thresholds (PNG).

    One panel per score; the threshold chosen on the first half is a vertical line; the title
    gives the claims and the audited bound. Uses matplotlib's Agg backend (no display).

    Args:
        result: an audited :class:`AuditResult` (a refused one has no scores).
        path: the PNG file to write (parent directories are created).

    Raises:
        ValueError: if ``result`` was refused (no scores to plot).
    """
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if result.refused or not result.scores:
        raise ValueError(f"`result` has no scores to plot (status {result.status!r}).")
    names = list(result.scores)
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        s_d, s_dp = result.scores[name]
        lo, hi = float(min(s_d.min(), s_dp.min())), float(max(s_d.max(), s_dp.max()))
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 61)
        ax.hist(s_d, bins=bins, alpha=0.55, label="D", color="tab:blue")
        ax.hist(s_dp, bins=bins, alpha=0.55, label="D' (with canary)", color="tab:orange")
        b = result.bounds[name]
        if math.isfinite(b.threshold):
            ax.axvline(b.threshold, color="k", ls="--",
                       label=f"threshold ({b.direction} is D')")
        ax.set_title(f"{name}: ε ≥ {b.epsilon_lower_bound:.3f}")
        ax.set_xlabel(f"{name} score")
        ax.set_ylabel("trials")
        ax.legend(fontsize=8)
    fig.suptitle(f"{result.label}: claimed ε {result.claimed_epsilon:.3f} (proven), "
                 f"{result.credited_epsilon:.3f} (credited); audited ε ≥ "
                 f"{result.epsilon_lower_bound:.3f} — {result.verdict}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
