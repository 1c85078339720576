r"""Privacy auditing with one training run: m canaries, guesses on the extreme scores.

References:
    Steinke, Nasr, Jagielski, "Privacy Auditing with One (1) Training Run", arXiv:2305.08846
    (v1), Thm. 3.1 and Appendix D (p-value with δ).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binom

from ..._validation import check_positive_int, check_probability

__all__ = ["ONE_RUN_GUESS_FRACTIONS", "OneRunBound", "max_certifiable_one_run_epsilon",
           "one_run_bound", "one_run_epsilon", "one_run_p_value"]


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
