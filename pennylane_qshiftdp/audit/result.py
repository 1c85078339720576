r"""The outcome of an audit (:class:`AuditResult`) and the analysis every runner shares.

:func:`analyse_releases` turns the releases of the two worlds (and which trials crashed or
released non-finite values) into scores and lower bounds: split-half Clopper–Pearson and
Gaussian-DP per score, at a Bonferroni-split level so that every reported number holds at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._formatting import format_fixed_down, format_fixed_up, format_up
from .statistics import (
    GDPBound,
    ScoreBound,
    gdp_bound,
    max_certifiable_epsilon,
    max_certifiable_gdp_epsilon,
    split_half_bound,
)

__all__ = ["ESTIMATORS", "AuditResult", "analyse_releases"]

#: Estimators of the two-world audits: name -> what they assume (docs/audit.md).
ESTIMATORS = {
    "clopper_pearson": "none (split-half threshold test, exact binomial bounds)",
    "gdp": "the mechanism's trade-off curve is Gaussian (μ-GDP); μ⁻ itself assumes nothing",
}


@dataclasses.dataclass(frozen=True, eq=False)
class AuditResult:
    r"""The outcome of auditing one configuration.

    Attributes:
        label: the configuration's name (e.g. ``"adaptive"``).
        status: ``"audited"`` or ``"refused"``.
        message: the refusal message (``None`` when audited).
        trials: trials per world (:math:`D` and :math:`D'` each).
        seed: the audit's seed (per-trial seeds derive from it).
        target_epsilon: the budget of the audited mechanism (``None`` if it has none).
        delta: δ of the claim.
        beta: failure probability β of an adaptive credit (the credited claim is at
            δ + β); 0 otherwise.
        claimed_epsilon: the proven ε claimed after the run, the largest over all trials of
            both worlds (the weakest claim made; it can depend on the data).
        claimed_epsilon_min: the smallest proven ε claimed in any trial.
        credited_epsilon: the credited ε (shot noise counted as Gaussian), largest.
        bounds: per score, its split-half Clopper–Pearson :class:`ScoreBound`.
        epsilon_lower_bound: the audited lower bound: the largest over scores and estimators.
        max_certifiable_epsilon: the Clopper–Pearson ceiling (a perfect distinguisher's bound).
        confidence: joint confidence of every reported bound.
        seconds: wall-clock time of the audit.
        settings: the audited settings (JSON-friendly).
        warnings: distinct warning messages raised by the mechanism.
        scores: per score, ``(scores on D, scores on D')`` (not in :meth:`as_dict`).
        releases: ``(releases on D, releases on D')``, each ``(trials, K)``.
        gdp_bounds: per score, its :class:`GDPBound`.
        ceilings: per estimator, the largest ε it can certify from these trials.
        findings: what the audit found besides the bounds (non-finite or crashing releases).
        failures: ``(trials on D, trials on D')`` whose release crashed or was non-finite.
    """

    label: str
    status: str
    message: str | None
    trials: int
    seed: int
    target_epsilon: float | None
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
    gdp_bounds: Mapping[str, GDPBound] = dataclasses.field(default_factory=dict)
    ceilings: Mapping[str, float] = dataclasses.field(default_factory=dict)
    findings: tuple[str, ...] = ()
    failures: tuple[int, int] = (0, 0)

    @property
    def refused(self) -> bool:
        """The mechanism refused the configuration (in both worlds, at the first trial)."""
        return self.status == "refused"

    @property
    def estimator_bounds(self) -> dict[str, float]:
        """Per estimator, its largest bound over the scores (nats)."""
        out = {}
        if self.bounds:
            out["clopper_pearson"] = max(b.epsilon_lower_bound for b in self.bounds.values())
        if self.gdp_bounds:
            out["gdp"] = max(b.epsilon_lower_bound for b in self.gdp_bounds.values())
        return out

    @property
    def ceiling(self) -> float:
        """The largest ε any of the estimators could certify from these trials."""
        return max(self.ceilings.values(), default=self.max_certifiable_epsilon)

    @property
    def refuted_by(self) -> tuple[str, ...]:
        """The estimators whose bound exceeds the proven claim."""
        if self.refused or self.claimed_epsilon is None:
            return ()
        return tuple(k for k, v in self.estimator_bounds.items() if v > self.claimed_epsilon)

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
            "credited_refuted": self.credited_refuted, "refuted_by": list(self.refuted_by),
            "trials": self.trials, "seed": self.seed, "target_epsilon": self.target_epsilon,
            "delta": self.delta, "beta": self.beta, "claimed_epsilon": self.claimed_epsilon,
            "claimed_epsilon_min": self.claimed_epsilon_min,
            "credited_epsilon": self.credited_epsilon,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "estimator_bounds": self.estimator_bounds,
            "max_certifiable_epsilon": self.max_certifiable_epsilon,
            "ceilings": dict(self.ceilings), "ceiling": self.ceiling,
            "confidence": self.confidence, "seconds": self.seconds,
            "bounds": {k: b.as_dict() for k, b in self.bounds.items()},
            "gdp_bounds": {k: b.as_dict() for k, b in self.gdp_bounds.items()},
            "findings": list(self.findings), "failures": list(self.failures),
            "settings": dict(self.settings), "warnings": list(self.warnings),
        }
        if include_scores:
            out["scores"] = {k: [a.tolist(), b.tolist()] for k, (a, b) in self.scores.items()}
        return out

    def __str__(self) -> str:
        head = f"{self.label}: "
        if self.refused:
            return head + f"refused ({self.message})"
        # claims (ε, δ, β) rounded up, the audited lower bounds down: never printed past
        # what they are
        beta = f" + β {format_up(self.beta)}" if self.beta else ""
        per = ", ".join(f"{k} {format_fixed_down(b.epsilon_lower_bound)}"
                        for k, b in self.bounds.items())
        est = ", ".join(f"{k} {format_fixed_down(v)}" for k, v in self.estimator_bounds.items())
        ceil = ", ".join(f"{k} {v:.2f}" for k, v in self.ceilings.items())
        credited = (f", {format_fixed_up(self.credited_epsilon, 3)} credited"
                    if self.credited_epsilon is not None else "")
        claim = (f"{format_fixed_up(self.claimed_epsilon, 3)} proven"
                 if self.claimed_epsilon is not None else "none")
        found = "".join(f" FINDING: {f}" for f in self.findings)
        return (f"{head}claimed ε = {claim}{credited} (δ = {format_up(self.delta)}{beta}); "
                f"audited ε ≥ {format_fixed_down(self.epsilon_lower_bound)} (per score {per}; "
                f"per estimator {est}) "
                f"from {self.trials} trials per world at {self.confidence:.0%}; CEILING "
                f"(largest certifiable ε) {ceil}: {self.verdict} [{self.seconds:.1f} s]"
                f"{found}")


def _sanitise(s_d, s_dp, fail_d, fail_dp):
    """Failed (crashed or non-finite) trials get a score above every finite one."""
    s_d = np.asarray(s_d, dtype=float).copy()
    s_dp = np.asarray(s_dp, dtype=float).copy()
    bad_d = fail_d | ~np.isfinite(s_d)
    bad_dp = fail_dp | ~np.isfinite(s_dp)
    finite = np.concatenate([s_d[~bad_d], s_dp[~bad_dp]])
    top = (float(finite.max()) + 1.0 + abs(float(finite.max()))) if finite.size else 1.0
    s_d[bad_d] = top
    s_dp[bad_dp] = top
    return s_d, s_dp


def analyse_releases(releases_d: ArrayLike, releases_dp: ArrayLike, *,
                     scorers: Mapping[str, Callable], delta: float, confidence: float,
                     fail_d: ArrayLike | None = None, fail_dp: ArrayLike | None = None,
                     errors: tuple[str, ...] = (),
                     estimators: Collection[str] = ("clopper_pearson", "gdp")
                     ) -> dict[str, Any]:
    r"""Scores, bounds, ceilings and findings from the releases of two worlds.

    Every score in ``scorers`` and every estimator gets two one-sided Clopper–Pearson bounds
    at level :math:`(1 - \text{confidence}) / (2 S E)` (S scores, E estimators; Bonferroni), so
    every reported bound holds simultaneously. Trials that crashed or released a non-finite
    value (``fail_d``, ``fail_dp``, or a non-finite release) are a *finding*: they enter every
    score as a value above all finite ones, and a ``failure`` score (1 for a failed trial)
    is added; failures on one world only are an outcome the other world never produced, the
    empirical face of ε = ∞.

    Args:
        releases_d, releases_dp: releases, shape ``(trials, K)`` each (failed rows: anything).
        scorers: score name -> ``f(releases) -> (trials,)``.
        delta: δ of the claim, in (0, 1).
        confidence: joint confidence, in (0, 1).
        fail_d, fail_dp: bool ``(trials,)``: trials whose release crashed.
        errors: messages of the crashes (first few are quoted in the findings).
        estimators: a subset of :data:`ESTIMATORS`.

    Returns:
        dict: ``scores``, ``bounds``, ``gdp_bounds``, ``ceilings``, ``findings``,
        ``failures``, ``epsilon_lower_bound``, ``max_certifiable_epsilon``.

    Raises:
        ValueError: for an unknown estimator or fewer than 4 trials per world.
    """
    unknown = sorted(set(estimators) - set(ESTIMATORS))
    if unknown or not estimators:
        raise ValueError(f"`estimators` must be a non-empty subset of {tuple(ESTIMATORS)}. "
                         f"Found {tuple(estimators)!r}.")
    rel_d = np.asarray(releases_d, dtype=float)
    rel_dp = np.asarray(releases_dp, dtype=float)
    n, n_p = rel_d.shape[0], rel_dp.shape[0]
    if min(n, n_p) < 4:
        raise ValueError(f"Need at least 4 trials per world. Found {n} and {n_p}.")
    fail_d = np.zeros(n, bool) if fail_d is None else np.asarray(fail_d, bool).copy()
    fail_dp = np.zeros(n_p, bool) if fail_dp is None else np.asarray(fail_dp, bool).copy()
    fail_d |= ~np.all(np.isfinite(rel_d.reshape(n, -1)), axis=1)
    fail_dp |= ~np.all(np.isfinite(rel_dp.reshape(n_p, -1)), axis=1)
    clean_d = np.where(fail_d.reshape(-1, *[1] * (rel_d.ndim - 1)), 0.0, rel_d)
    clean_dp = np.where(fail_dp.reshape(-1, *[1] * (rel_dp.ndim - 1)), 0.0, rel_dp)
    scores = {}
    for name, fn in scorers.items():
        with np.errstate(all="ignore"):
            s_d, s_dp = fn(clean_d), fn(clean_dp)
        scores[name] = _sanitise(s_d, s_dp, fail_d, fail_dp)
    findings = []
    k_d, k_dp = int(fail_d.sum()), int(fail_dp.sum())
    if k_d or k_dp:
        scores["failure"] = (fail_d.astype(float), fail_dp.astype(float))
        msg = (f"the release crashed or was non-finite in {k_d}/{n} trials on D and "
               f"{k_dp}/{n_p} on D'")
        if (k_d == 0) != (k_dp == 0):
            msg += (" — an outcome the other world never produced: evidence of ε = ∞ "
                    "(bounded only by the ceiling)")
        if errors:
            msg += f"; first error: {errors[0]}"
        findings.append(msg)
    n_tests = 2 * len(scores) * len(estimators)
    alpha = (1.0 - confidence) / n_tests
    bounds, gdp = {}, {}
    if "clopper_pearson" in estimators:
        bounds = {k: split_half_bound(a, b, delta=delta, alpha=alpha, score=k)
                  for k, (a, b) in scores.items()}
    if "gdp" in estimators:
        gdp = {k: gdp_bound(a, b, delta=delta, alpha=alpha, score=k)
               for k, (a, b) in scores.items()}
    ceilings = {}
    cp_ceiling = max_certifiable_epsilon(n - n // 2, n_p - n_p // 2, delta=delta, alpha=alpha)
    if bounds:
        ceilings["clopper_pearson"] = cp_ceiling
    if gdp:
        b = next(iter(gdp.values()))
        ceilings["gdp"] = max_certifiable_gdp_epsilon(*b.n_eval, delta=delta, alpha=alpha)
    eps = max([b.epsilon_lower_bound for b in bounds.values()]
              + [b.epsilon_lower_bound for b in gdp.values()])
    return dict(scores=scores, bounds=bounds, gdp_bounds=gdp, ceilings=ceilings,
                findings=tuple(findings), failures=(k_d, k_dp), epsilon_lower_bound=eps,
                max_certifiable_epsilon=cp_ceiling)
