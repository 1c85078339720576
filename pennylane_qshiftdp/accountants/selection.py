r"""Private hyperparameter selection whose cost is charged: K private runs and a private choice.

Tuning on private data spends privacy: every candidate run releases a model, and choosing the
best by its accuracy on private held-out data is one more query. :class:`PrivateSelection` makes
both part of the guarantee:

1. **The runs.** Every candidate is trained with :func:`~pennylane_qshiftdp.make_private` at
   :meth:`PrivateSelection.run_epsilon`, the per-run budget at which the **composition of all K
   runs** (one history of K × T Poisson-subsampled Gaussian steps, composed by the accountant:
   dp-accounting's PLD by default) leaves room for the choice. The released models of every
   run are covered, not only the chosen one.
2. **The choice.** Each run reports a score with sensitivity Δ_u (by default 1: the number of
   correctly classified held-out examples, which one example changes by at most 1). The index
   is drawn by the exponential mechanism, P(i) ∝ exp(ε_sel · u_i / (2Δ_u)) (McSherry & Talwar,
   2007; ε_sel-DP for any scores of sensitivity Δ_u), sampled as the arg max of
   ε_sel·u_i/(2Δ_u) + G_i with independent standard Gumbel G_i. The scores themselves are never
   returned or printed.
3. **The total.** (ε_runs + ε_sel, δ): ε_runs is the accountant's ε of every run's budget —
   its *proven* history as trained (read from its ledger,
   :attr:`PrivacyLedger.proven_history`) followed by the steps its ledger still allows — all
   concatenated; charging the whole budget keeps a run stopped early on private information
   covered. It is composed with the ε_sel-DP choice by basic composition (Dwork & Roth,
   Theorem 3.16). :meth:`PrivateSelection.select` refuses to choose when this total exceeds
   the budget, or when a run was trained further after it was reported.

This is the simple charged scheme the survey of Papernot & Steinke (arXiv:2110.03620, §1)
starts from; their random-stopping schemes cost less for large K and are not implemented.

All ε are in nats.
"""

from __future__ import annotations

import math
import numbers
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .calibration import DEFAULT_ACCOUNTANT, calibrate_noise_multiplier, epochs_to_steps
from .composition import check_accountant, epsilon_from_history

__all__ = ["PrivateSelection", "Selected", "selection_probabilities"]

# The runs' budget is calibrated this much below its share, so that the runs' own calibration
# (a bisection with a tolerance) and the accountant's discretisation never push the composed ε
# over the budget.
_RUN_MARGIN = 0.99


def selection_probabilities(scores: Sequence[float], *, epsilon: float,
                            sensitivity: float = 1.0) -> list[float]:
    r"""The exponential mechanism's probabilities P(i) = exp(εu_i/(2Δ)) / Σ_j exp(εu_j/(2Δ)).

    For any two score vectors u, u' with max_i |u_i − u'_i| ≤ Δ, P(i)/P'(i) ≤ e^ε for every i
    (McSherry & Talwar, 2007, Theorem 6).

    Args:
        scores: K ≥ 1 finite scores.
        epsilon: ε > 0 of the choice (nats).
        sensitivity: Δ > 0, the most one example changes any score.

    Returns:
        list[float]: K probabilities summing to 1.

    Raises:
        ValueError: if a score is not finite, or ε or Δ is not a positive finite number.

    Example:
        >>> [round(p, 4) for p in selection_probabilities([10, 12], epsilon=1.0)]
        [0.2689, 0.7311]
    """
    u = _check_scores(scores)
    eps = _positive(epsilon, "epsilon")
    delta_u = _positive(sensitivity, "sensitivity")
    top = max(u)
    weights = [math.exp(eps * (x - top) / (2 * delta_u)) for x in u]
    total = math.fsum(weights)
    return [w / total for w in weights]


@dataclass(frozen=True)
class Selected:
    """The outcome of :meth:`PrivateSelection.select` (public: no score is kept).

    Attributes:
        index: position of the chosen candidate in ``candidates``.
        candidate: the chosen candidate (as passed).
        result: what was reported with it (for example the trained model), or ``None``.
        epsilon: total ε (nats) of the K runs and the choice, at ``delta``.
        epsilon_runs: ε of the K runs' composed proven histories.
        epsilon_selection: ε of the choice.
        delta: δ of the guarantee.
        adjacency: the runs' neighbouring relation (``"add_remove"`` or ``"replace_one"``).
        seeded: whether the choice was drawn from a seeded generator (research, not release).
    """

    index: int
    candidate: Any
    result: Any
    epsilon: float
    epsilon_runs: float
    epsilon_selection: float
    delta: float
    adjacency: str = "add_remove"
    seeded: bool = False

    def statement(self) -> str:
        """One paragraph: what the (ε, δ) covers and how it was composed."""
        text = (f"Private selection: ({self.epsilon:.4g}, {self.delta:.3g})-DP under "
                f"{self.adjacency.replace('_', '/')} adjacency for the released models of "
                f"every candidate run (as they were when reported) and the choice of "
                f"candidate {self.index}: each run's budget (its proven history and the steps "
                f"it still allowed) composed by the accountant (ε = {self.epsilon_runs:.4g} "
                f"nats) plus the exponential-mechanism choice (ε = "
                f"{self.epsilon_selection:.4g} nats), basic composition.")
        if self.seeded:
            text += (" The choice was drawn from a seeded generator: repeatable research, "
                     "not for release.")
        return text


class PrivateSelection:
    r"""Choose among K candidate configurations, charging the runs and the choice.

    Usage: for every candidate, train with ``make_private(...,
    target_epsilon=selection.run_epsilon(sample_rate=q, epochs=E), target_delta=δ)``, then
    :meth:`report` its optimizer (or ledger) and its score; then :meth:`select`.

    Args:
        candidates: K ≥ 1 public configurations (anything: dicts of learning rates, model
            builders, ...). They must not be chosen by looking at the private data.
        target_epsilon: total ε > 0 (nats) of all runs and the choice.
        target_delta: δ ∈ (0, 1) of the guarantee (every run must use it).
        selection_epsilon: ε_sel ∈ (0, target_epsilon) spent on the choice. With K = 1 nothing
            is chosen and ε_sel is not spent.
        score_sensitivity: Δ_u > 0, the most one example of the data set changes a score
            (1 for a count of correct held-out predictions).
        accountant: composes the runs' histories (``"pld"``, ``"rdp"`` or ``"prv"``).
        seed: seeds the choice (for tests); ``None`` draws it from the operating system
            (:class:`random.SystemRandom`).

    Raises:
        ValueError: for an empty candidate list or an argument out of its domain.

    Example:
        >>> sel = PrivateSelection([{"lr": 0.1}, {"lr": 1.0}], target_epsilon=2.0,
        ...                        target_delta=1e-5, selection_epsilon=0.2)
        >>> round(sel.run_epsilon(sample_rate=0.1, epochs=5), 3)
        1.25
    """

    def __init__(self, candidates: Sequence[Any], *, target_epsilon: float, target_delta: float,
                 selection_epsilon: float, score_sensitivity: float = 1.0,
                 accountant: str = DEFAULT_ACCOUNTANT, seed: int | None = None) -> None:
        if isinstance(candidates, (str, bytes)):
            raise ValueError(f"`candidates` must be a sequence of configurations, not a string. "
                             f"Found {candidates!r}.")
        self.candidates = list(candidates)
        if not self.candidates:
            raise ValueError("`candidates` is empty: pass at least one configuration.")
        self.target_epsilon: float = _positive(target_epsilon, "target_epsilon")
        if isinstance(target_delta, bool) or not (isinstance(target_delta, numbers.Real)
                                                  and 0.0 < target_delta < 1.0):
            raise ValueError(f"`target_delta` must be in (0, 1). Found {target_delta!r}.")
        self.target_delta: float = float(target_delta)
        eps_sel = _positive(selection_epsilon, "selection_epsilon")
        if eps_sel >= self.target_epsilon:
            raise ValueError(f"`selection_epsilon` ({selection_epsilon!r}) must be below "
                             f"`target_epsilon` ({target_epsilon!r}): the runs need a budget.")
        self.selection_epsilon: float = eps_sel if len(self.candidates) > 1 else 0.0
        self.score_sensitivity: float = _positive(score_sensitivity, "score_sensitivity")
        self.accountant: str = check_accountant(accountant)
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
            raise ValueError(f"`seed` must be an int or None. Found {seed!r}.")
        self.seed: int | None = None if seed is None else int(seed)
        self._rng: random.Random = (random.SystemRandom() if seed is None
                                    else random.Random(self.seed))
        # index -> (the run's ledger, its steps when reported, its score, its result)
        self._reports: dict[int, tuple[Any, int, float, Any]] = {}
        self._planned_run_epsilon: float | None = None
        self._selected: Selected | None = None

    # ------------------------------------------------------------------ planning
    def run_epsilon(self, *, sample_rate: float, epochs: float) -> float:
        r"""The ``target_epsilon`` to give each run's :func:`make_private` (nats).

        σ* is calibrated so that K runs of T = ``epochs_to_steps(epochs, q)`` steps, composed
        as one history of K·T steps, spend 0.99 × (target ε − ε_sel); the run's ε is that of
        T steps at σ*. A run calibrated for it gets σ ≥ σ* (ε is decreasing in σ), so the
        composition stays within the budget; :meth:`select` charges each run's whole budget
        and checks the total.

        Args:
            sample_rate: the runs' Poisson sampling rate q ∈ (0, 1] (all runs share it).
            epochs: the runs' number of epochs E > 0.

        Returns:
            float: ε > 0 of one run at ``target_delta``.
        """
        steps = epochs_to_steps(epochs=epochs, sample_rate=sample_rate)
        k = len(self.candidates)
        share = _RUN_MARGIN * (self.target_epsilon - self.selection_epsilon)
        sigma = calibrate_noise_multiplier(target_epsilon=share, target_delta=self.target_delta,
                                           sample_rate=sample_rate, steps=k * steps,
                                           accountant=self.accountant)
        eps = epsilon_from_history([(sigma, float(sample_rate), steps)],
                                   delta=self.target_delta, accountant=self.accountant)
        self._planned_run_epsilon = eps
        return eps

    # ------------------------------------------------------------------ reporting
    def report(self, index: int, privacy: Any, score: float, result: Any = None) -> None:
        """Record a finished run: its ledger and its private score.

        Train nothing more with the run afterwards: :meth:`select` refuses if its ledger
        has changed. The run is charged its whole budget (its history and every step its
        ledger still allows), so a run stopped early — even on its validation score — is
        covered.

        Args:
            index: the candidate's position in ``candidates``.
            privacy: the run's optimizer (from :func:`make_private`) or its
                :class:`~pennylane_qshiftdp.PrivacyLedger`.
            score: the run's score, of sensitivity ``score_sensitivity`` (finite). With the
                default sensitivity 1 it must be a whole number (a count of correct
                predictions): an accuracy in [0, 1] would make the choice nearly uniform.
            result: anything to hand back if this candidate is chosen (the model).

        Raises:
            ValueError: for an unknown or already reported index, a report after
                :meth:`select`, a ledger with another δ, accountant or adjacency than the
                runs before, a shot-noise credit mode, a run trained at a larger
                ``target_epsilon`` than :meth:`run_epsilon` planned, or a score that is not
                finite (or not whole at sensitivity 1).
            TypeError: if ``privacy`` carries no ledger.
        """
        if self._selected is not None:
            raise ValueError("the choice was already drawn: no run can be reported after it.")
        if isinstance(index, bool) or not isinstance(index, numbers.Integral) or not (
                0 <= index < len(self.candidates)):
            raise ValueError(f"`index` must be an int in [0, {len(self.candidates)}). "
                             f"Found {index!r}.")
        index = int(index)
        if index in self._reports:
            raise ValueError(f"candidate {index} was already reported: each run is reported "
                             f"once.")
        ledger = getattr(privacy, "ledger", privacy)
        if not hasattr(ledger, "proven_history"):
            raise TypeError(f"`privacy` must be the optimizer returned by make_private or its "
                            f"PrivacyLedger. Found {type(privacy).__name__}.")
        if float(ledger.target_delta) != self.target_delta:
            raise ValueError(f"the run's target_delta ({ledger.target_delta!r}) differs from "
                             f"the selection's ({self.target_delta!r}): train every run with "
                             f"target_delta={self.target_delta!r}.")
        if ledger.accountant != self.accountant:
            raise ValueError(f"the run's accountant ({ledger.accountant!r}) is not the "
                             f"selection's ({self.accountant!r}): use one accountant for the "
                             f"runs and the selection.")
        if ledger.credit_mode != "none":
            raise ValueError(f"the run uses credit={ledger.credit_mode!r}: its proven ε is up "
                             f"to proven_epsilon_factor times its target, so the selection "
                             f"would exceed its plan. Train the candidates with credit='none'.")
        adjacency = {r[0].adjacency for r in self._reports.values()}
        if adjacency and ledger.adjacency not in adjacency:
            raise ValueError(f"the run's adjacency ({ledger.adjacency!r}) is not that of the "
                             f"runs reported before ({adjacency.pop()!r}): one guarantee "
                             f"needs one adjacency.")
        planned = self._planned_run_epsilon
        if planned is not None and float(ledger.target_epsilon) > planned * (1 + 1e-12):
            raise ValueError(f"the run was trained at target_epsilon "
                             f"{float(ledger.target_epsilon):.6g}, above the "
                             f"{planned:.6g} that run_epsilon(...) planned: the runs composed "
                             f"would exceed target_epsilon {self.target_epsilon:g}.")
        (value,) = _check_scores([score], name="score")
        if self.score_sensitivity == 1.0 and not float(value).is_integer():
            raise ValueError(f"`score` ({value!r}) is not a whole number while "
                             f"score_sensitivity is 1: report a count (correct held-out "
                             f"predictions), or set score_sensitivity to what one example can "
                             f"change the score by (1/n for an accuracy over n examples).")
        self._reports[index] = (ledger, int(ledger.steps), value, result)

    @staticmethod
    def _charged_history(ledger) -> list[tuple[float, float, int]]:
        """The run's proven history and every step its budget still allows (its plan)."""
        history = list(ledger.proven_history)
        more = int(ledger.remaining_steps())
        if more > 0:
            history.append((float(ledger.noise_multiplier), float(ledger.sample_rate), more))
        return history

    @property
    def epsilon_runs(self) -> float:
        """ε (nats) of the runs reported so far: each run's proven history and the steps its
        budget still allows, composed."""
        history = [entry for ledger, _, _, _ in self._reports.values()
                   for entry in self._charged_history(ledger)]
        return epsilon_from_history(history, delta=self.target_delta,
                                    accountant=self.accountant)

    # ------------------------------------------------------------------ choosing
    def select(self) -> Selected:
        """Draw the candidate by the exponential mechanism over the reported scores.

        The draw happens once: later calls return the same outcome (a second independent draw
        would spend ε_sel again), and no run can be reported after it.

        Returns:
            Selected: the index, the candidate, its reported result and the total (ε, δ).

        Raises:
            ValueError: if a candidate was not reported, a run was trained further after its
                report, or the composed ε of the runs plus ε_sel exceeds ``target_epsilon``
                (a run planned for more steps or less noise than :meth:`run_epsilon` gives).
        """
        if self._selected is not None:
            return self._selected
        missing = [i for i in range(len(self.candidates)) if i not in self._reports]
        if missing:
            raise ValueError(f"candidates {missing} were not reported: every planned run must "
                             f"be trained and reported before the choice (an unreported run "
                             f"would still have spent its budget).")
        changed = [i for i, (ledger, steps, _, _) in sorted(self._reports.items())
                   if int(ledger.steps) != steps]
        if changed:
            raise ValueError(f"runs {changed} were trained after they were reported: report "
                             f"each run when it is finished (its released model is what the "
                             f"guarantee covers).")
        eps_runs = self.epsilon_runs
        total = eps_runs + self.selection_epsilon
        if total > self.target_epsilon:
            raise ValueError(f"the runs composed spend ε = {eps_runs:.6g} and the choice "
                             f"{self.selection_epsilon:.6g}: {total:.6g} > target_epsilon "
                             f"{self.target_epsilon:.6g}. Train every run at "
                             f"run_epsilon(...) with the planned sampling rate and epochs.")
        k = len(self.candidates)
        if k == 1:
            index = 0
        else:
            scale = self.selection_epsilon / (2 * self.score_sensitivity)
            noisy = [scale * self._reports[i][2] + _gumbel(self._rng) for i in range(k)]
            index = max(range(k), key=noisy.__getitem__)
        self._selected = Selected(index=index, candidate=self.candidates[index],
                                  result=self._reports[index][3], epsilon=total,
                                  epsilon_runs=eps_runs,
                                  epsilon_selection=self.selection_epsilon,
                                  delta=self.target_delta,
                                  adjacency=str(self._reports[index][0].adjacency),
                                  seeded=self.seed is not None)
        return self._selected

    def __repr__(self) -> str:  # no score
        return (f"PrivateSelection({len(self.candidates)} candidates, "
                f"{len(self._reports)} reported, target_epsilon={self.target_epsilon:g}, "
                f"selection_epsilon={self.selection_epsilon:g})")


def _gumbel(rng: random.Random) -> float:
    """A standard Gumbel draw, −log(−log U), U uniform on (0, 1)."""
    u = rng.random()
    while u <= 0.0:
        u = rng.random()
    return -math.log(-math.log(u))


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"`{name}` must be a positive finite number. Found {value!r}.")
    return float(value)


def _check_scores(scores: Sequence[float], name: str = "scores") -> list[float]:
    values = list(scores)
    if not values:
        raise ValueError(f"`{name}` is empty.")
    out: list[float] = []
    for x in values:
        if hasattr(x, "item") and getattr(x, "ndim", 0) == 0:  # numpy or torch scalars
            x = x.item()
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
            raise ValueError(f"`{name}` must be finite numbers. Found {x!r}.")
        out.append(float(x))
    return out
