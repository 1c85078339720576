r"""The privacy ledger: Opacus accounting plus everything a privacy statement needs.

:class:`PrivacyLedger` wraps an accountant of Opacus's registry (dp-accounting's PLD,
registered as ``"pld"``, by default; Opacus's ``RDPAccountant`` or ``PRVAccountant``), records the
(σ, q, steps) history, the sensitivity Δ, the adjacency relation, the public divisor of the
noisy sum and where q came from, the shot-noise credit mode and its failure probability β,
refuses a step *before* it would take the spent ε above the target, round-trips through a
versioned JSON form for checkpoint/resume, and writes a human-readable privacy statement that
reports the ε of RDP and PLD beside its own.

All ε are in nats.

References:
    Abadi et al., "Deep Learning with Differential Privacy", arXiv:1607.00133.
    Mironov, Talwar, Zhang, "Rényi Differential Privacy of the Sampled Gaussian Mechanism",
    arXiv:1908.10530.
    Gopi, Lee, Wutschitz, "Numerical Composition of Differential Privacy", arXiv:2106.02848.
    Yousefpour et al., "Opacus: User-Friendly Differential Privacy Library in PyTorch",
    arXiv:2109.12298.
"""

from __future__ import annotations

import copy
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

from .._validation import check_positive_float, check_positive_int
from ..credit.shot_noise import CREDIT_MODES
from ..exceptions import PrivacyBudgetExceededError, PrivacyWarning
from .composition import (
    epsilon_from_history,
    extend_history,
    make_accountant,
    truncate_history,
)
from .config import ADJACENCIES, SAMPLE_RATE_SOURCES, LedgerConfig
from .persistence import FORMAT_VERSION, ledger_state, normalise_extra, parse_state, write_atomic
from .registry import resolve_accountant
from .statement import privacy_statement

__all__ = ["PrivacyLedger", "LedgerConfig", "ADJACENCIES", "CREDIT_MODES", "FORMAT_VERSION",
           "SAMPLE_RATE_SOURCES"]

#: Largest number of steps :meth:`PrivacyLedger.remaining_steps` searches (2**40).
_MAX_SEARCH_STEPS = 2**40

#: Compositions a ledger remembers (ε of a history at its δ, by accountant).
_MEMO_SIZE = 256


class PrivacyLedger:
    r"""Privacy ledger for Q-ShiftDP training, on an accountant of Opacus's registry.

    Each step releases the summed per-example gradients of a Poisson-sampled batch (rate q)
    plus Gaussian noise of total per-coordinate variance σ²Δ², part of which may be credited to
    shot noise (``credit_mode``). The ledger records one (σ, q) sampled-Gaussian composition per
    step in the accountant (PLD by default) and reports the spent ε at ``target_delta`` (an
    upper bound, in nats). With ``credit_mode="adaptive"`` the shot-noise lower confidence bound
    fails with probability at most β over the whole run, so the guarantee is (ε, δ + β).

    A step is checked *before* it is taken: :meth:`step` raises
    :class:`~pennylane_qshiftdp.exceptions.PrivacyBudgetExceededError` and records nothing if
    the step would take ε above ``target_epsilon``.

    The settings are a :class:`~.config.LedgerConfig` (checked once when it is made), passed
    as the one positional argument, or its fields as keywords (below): ``PrivacyLedger(cfg)``
    and ``PrivacyLedger(**dataclasses.asdict(cfg))`` are the same ledger.

    Args:
        config: the settings as a :class:`~.config.LedgerConfig`, or ``None`` to give them as
            the keywords below (not both).
        target_epsilon: budget ε > 0, in nats.
        target_delta: budget δ ∈ (0, 1); should be well below 1 / ``dataset_size``.
        noise_multiplier: σ > 0, the noise standard deviation in units of Δ.
        sample_rate: Poisson sampling rate q ∈ (0, 1] (expected batch size / dataset size).
        sensitivity: per-example sensitivity Δ > 0 of the summed gradient (L2), *already
            including* the adjacency factor (×2 for ``replace_one``).
        adjacency: ``"add_remove"`` (neighbours differ by adding/removing one example; Opacus's
            convention) or ``"replace_one"`` (one example replaced; Δ doubled by the caller).
        credit_mode: ``"none"``, ``"depolarizing"``, ``"adaptive"`` or ``"isotropic"``
            (docs/noise.md).
        beta: failure probability β of the adaptive credit: in (0, 1) for ``"adaptive"``,
            exactly 0 otherwise.
        accountant: ``"pld"`` (default: dp-accounting's privacy loss distributions,
            :class:`~pennylane_qshiftdp.accountants.pld.PLDAccountant`), ``"rdp"`` (Opacus
            ``RDPAccountant``) or ``"prv"`` (Opacus ``PRVAccountant``), or another name of
            Opacus's accountant registry (:func:`~.registry.resolve_accountant`: one a user
            registered is used as it is; ``"gdp"`` is refused).
        dataset_size: number N of training examples (public: declared, or ``len(dataset)``
            treated as public), or ``None``. When given, δ ≥ 1/N gives a
            :class:`~pennylane_qshiftdp.exceptions.PrivacyWarning`, and the statement shows
            it.
        preprocessing_note: which data-dependent statistics are *not* protected (e.g. the
            mean and principal components of the training data), or ``None`` if the
            preprocessing is data-independent.
        extra: extra JSON-able metadata (e.g. the per-part breakdown of Δ), or ``None``. A
            key ``"preprocessing"`` (text) describes data-independent preprocessing; without a
            ``preprocessing_note`` the statement then says the guarantee covers the raw
            examples.
        expected_batch_size: the public constant b > 0 the noisy sum is divided by (the
            statement shows it), or ``None``.
        sample_rate_source: how q was obtained, one of :data:`SAMPLE_RATE_SOURCES`
            (``"dataset_length"``: from ``len(dataset)``, which the statement then says is
            treated as public; needs ``dataset_size``; ``"sample_rate"`` refuses it), or
            ``None``.

    Raises:
        ValueError: if a parameter is out of range or a choice is unknown.
        TypeError: if a parameter has the wrong type or ``extra`` is not JSON-able, a keyword
            is unknown, or both a ``config`` and keywords are given.

    Warns:
        PrivacyWarning: if ``dataset_size`` is given and ``target_delta >= 1 / dataset_size``.

    References:
        Abadi et al., arXiv:1607.00133; Mironov, Talwar, Zhang, arXiv:1908.10530;
        Opacus ``opacus.accountants``.

    Example:
        >>> ledger = PrivacyLedger(
        ...     target_epsilon=1.0, target_delta=1e-5, noise_multiplier=1.5,
        ...     sample_rate=0.01, sensitivity=2.0,
        ... )
        >>> for _ in range(100):
        ...     _ = ledger.step()
        >>> ledger.steps, ledger.history
        (100, [(1.5, 0.01, 100)])
        >>> print(f"{ledger.epsilon:.3f}")  # PLD (the default); RDP: 0.465
        0.292
        >>> ledger.would_exceed(10_000)
        True
        >>> PrivacyLedger.from_json(ledger.to_json()).epsilon == ledger.epsilon
        True
    """

    def __init__(self, config: LedgerConfig | None = None, /, **settings: Any) -> None:
        if config is None:
            config = LedgerConfig(**settings)
        elif not isinstance(config, LedgerConfig) or settings:
            raise TypeError(
                f"PrivacyLedger takes a LedgerConfig, or its fields as keywords (not both). "
                f"Found {type(config).__name__} and the keywords {sorted(settings)}.")
        self._configure(config)
        self._acct = make_accountant(self._accountant_name)
        self._proven: list[tuple[float, float, int]] = []
        self._credited: list[tuple[float, float, int]] = []
        self._eps_cache: tuple[tuple, float] | None = None
        self._reset_memos()

    def _reset_memos(self) -> None:
        """Forget this ledger's compositions and admissible step counts (configuration changed)."""
        self._epsilon_memo: dict[tuple, float] = {}
        self._one_step_memo: dict = {}  # this ledger's one-step PLDs (pld_epsilon's cache)
        # (accountant, δ, target, prefix, σ, q) -> (largest admissible tail known, smallest
        # exceeding tail known or None): brackets K* (see _exceeds)
        self._bracket: dict[tuple, tuple[int, int | None]] = {}
        # compositions made by budget checks since the planned ε was last read
        self._unread_compositions = 0

    # ------------------------------------------------------------------ configuration
    def _configure(self, config: LedgerConfig) -> None:
        """Take the (checked) settings of ``config``; warn about a δ (or δ + β) ≥ 1/N."""
        delta, beta, dataset_size = config.target_delta, config.beta, config.dataset_size
        if dataset_size is not None and delta >= 1.0 / dataset_size:
            warnings.warn(
                f"`target_delta`={delta} is not below 1/`dataset_size` = 1/{dataset_size} = "
                f"{1.0 / dataset_size:.3g}: a mechanism that publishes one random example in "
                f"full satisfies such a δ. Choose δ well below 1/N (e.g. 1e-5).",
                PrivacyWarning,
                stacklevel=3,
            )
        if dataset_size is not None and beta > 0 and delta + beta >= 1.0 / dataset_size:
            warnings.warn(
                f"`target_delta` + `beta` = {delta + beta:g} is not below 1/`dataset_size` = "
                f"{1.0 / dataset_size:.3g}: the reported (ε, δ + β) guarantee is then "
                f"meaningless. Choose β well below 1/N (e.g. 1e-6).",
                PrivacyWarning,
                stacklevel=3,
            )

        self._target_epsilon = config.target_epsilon
        self._target_delta = delta
        self._noise_multiplier = config.noise_multiplier
        self._sample_rate = config.sample_rate
        self._sensitivity = config.sensitivity
        self._adjacency = config.adjacency
        self._credit_mode = config.credit_mode
        self._beta = beta
        self._accountant_name = config.accountant
        self._dataset_size = dataset_size
        self._preprocessing_note = config.preprocessing_note
        self._extra = config.extra
        self._expected_batch_size = config.expected_batch_size
        self._sample_rate_source = config.sample_rate_source

    # ------------------------------------------------------------------ read-only metadata
    @property
    def target_epsilon(self) -> float:
        """Budget ε (nats)."""
        return self._target_epsilon

    @property
    def target_delta(self) -> float:
        """Budget δ."""
        return self._target_delta

    @property
    def delta(self) -> float:
        """The δ at which :attr:`epsilon` is reported (= ``target_delta``)."""
        return self._target_delta

    @property
    def beta(self) -> float:
        """Failure probability β of the adaptive shot-noise credit (0 in other modes)."""
        return self._beta

    @property
    def total_delta(self) -> float:
        """δ + β: the δ of the overall (ε, δ + β) guarantee (= δ unless adaptive)."""
        return self._target_delta + self._beta

    @property
    def noise_multiplier(self) -> float:
        """σ, the noise standard deviation in units of Δ."""
        return self._noise_multiplier

    @property
    def sample_rate(self) -> float:
        """Poisson sampling rate q."""
        return self._sample_rate

    @property
    def sensitivity(self) -> float:
        """Per-example sensitivity Δ (adjacency factor included)."""
        return self._sensitivity

    @property
    def adjacency(self) -> str:
        """``"add_remove"`` or ``"replace_one"``."""
        return self._adjacency

    @property
    def credit_mode(self) -> str:
        """Shot-noise credit mode."""
        return self._credit_mode

    @property
    def accountant(self) -> str:
        """Opacus mechanism name of the accountant: ``"rdp"``, ``"prv"``, ``"pld"`` or one a user
        registered with Opacus."""
        return self._accountant_name

    @property
    def dataset_size(self) -> int | None:
        """Number of training examples N, if known."""
        return self._dataset_size

    @property
    def expected_batch_size(self) -> float | None:
        """The public constant b the noisy sum is divided by, if declared, else ``None``.

        Never q·N of the private data set size (opacus#819): :func:`~pennylane_qshiftdp.
        make_private` records the loader's ``batch_size`` or the declared
        ``expected_batch_size``.
        """
        return self._expected_batch_size

    @property
    def sample_rate_source(self) -> str | None:
        """How q was obtained: ``"sample_rate"`` (given), ``"dataset_size"`` (from a declared
        size), ``"dataset_length"`` (from ``len(dataset)``, treated as public), or ``None``."""
        return self._sample_rate_source

    @property
    def preprocessing_note(self) -> str | None:
        """Which data-dependent statistics are not protected, or ``None``."""
        return self._preprocessing_note

    @property
    def extra(self) -> dict[str, Any] | None:
        """A copy of the extra metadata."""
        return None if self._extra is None else json.loads(json.dumps(self._extra))

    def extra_update(self, items: dict[str, Any]) -> None:
        """Add JSON-able metadata (e.g. provenance) to :attr:`extra`.

        Raises:
            TypeError: if ``items`` is not a JSON-able dict.
        """
        merged = dict(self._extra or {})
        merged.update(items)
        self._extra = normalise_extra(merged)

    # ------------------------------------------------------------------ accounting
    @property
    def history(self) -> list[tuple[float, float, int]]:
        """A copy of the accountant's history: a list of (σ, q, steps) triples."""
        return list(self._acct.history)

    @property
    def steps(self) -> int:
        """Number of steps recorded so far."""
        return sum(n for _, _, n in self._acct.history)

    def _epsilon_of(self, history, accountant: str | None = None) -> float:
        """ε of ``history`` at ``target_delta``, composed once per ledger (remembered)."""
        if not history:
            return 0.0
        accountant = self._accountant_name if accountant is None else accountant
        # The budget check, the step, the search for K* and the proven ε of a step compose the
        # same histories: this ledger remembers its last compositions (never another's).
        key = (accountant, self._target_delta, tuple(map(tuple, history)))
        if accountant == self._accountant_name and key[2] == tuple(self._acct.history):
            self._unread_compositions = 0  # the planned ε is wanted (see _exceeds)
        memo = self._epsilon_memo
        if key in memo:
            return memo[key]
        eps = epsilon_from_history(history, delta=self._target_delta, accountant=accountant,
                                   cache=self._one_step_memo)
        if len(memo) >= _MEMO_SIZE:
            memo.pop(next(iter(memo)))
        memo[key] = eps
        return eps

    def _exceeds(self, sigma: float, steps: int) -> bool:
        """``ε(history + steps at σ) > target``, exactly as composing that history says.

        The history is split into a prefix and a tail of ``n`` steps at (σ, q) (``n = 0`` if its
        last entry has another σ), so the extended history is the prefix plus ``n + steps``
        steps at (σ, q). For a monotone accountant (its registry entry's ``monotone``) ε grows with
        the tail, so every tail composed so far brackets the admissible count K* (largest
        tail with ε ≤ target): a tail at or below an admissible one is admissible, one at or
        above an exceeding one exceeds, and the answer costs nothing. Inside the bracket the
        extended history is composed, as before (its ε is then the step record's, free).
        When a composition made by a check was never read (nobody asks for the planned ε at
        every step: the optimizer's record reads the proven ε, or nothing does), K* is
        searched instead (:meth:`_admissible_tail`, about 2·log₂ K* compositions, once per
        prefix and σ) and every later check of that prefix and σ is O(1). PRV composes every
        check.
        """
        history = self._acct.history
        q = self._sample_rate
        if history and history[-1][0] == sigma and history[-1][1] == q:
            prefix, tail = tuple(history[:-1]), history[-1][2] + steps
        else:
            prefix, tail = tuple(history), steps
        extended = extend_history(history, sigma, q, steps)
        if not self._monotone():
            return self._epsilon_of(extended) > self._target_epsilon
        key = (self._accountant_name, self._target_delta, self._target_epsilon, prefix, sigma, q)
        lo, hi = self._bracket.get(key, (0, None))
        if tail <= lo:
            return False
        if hi is not None and tail >= hi:
            return True
        if self._unread_compositions > 0:  # the last check's ε was not wanted: find K*
            lo, hi = self._admissible_tail(prefix, sigma, lo, hi, tail)
            self._set_bracket(key, lo, hi)
            if tail <= lo:
                return False
            if hi is not None and tail >= hi:
                return True
        over = self._epsilon_of(extended) > self._target_epsilon
        self._unread_compositions += 1
        self._set_bracket(key, lo if over else tail, tail if over else hi)
        return over

    def _set_bracket(self, key: tuple, lo: int, hi: int | None) -> None:
        """Remember that tail ``lo`` is admissible and ``hi`` (if known) exceeds, for ``key``."""
        if key not in self._bracket and len(self._bracket) >= _MEMO_SIZE:
            self._bracket.pop(next(iter(self._bracket)))
        self._bracket[key] = (lo, hi)

    def _monotone(self) -> bool:
        """Whether ε grows with the tail's length for this ledger's accountant and target
        (the accountant's entry, :class:`~.registry.AccountantEntry`: RDP, and PLD up to a
        target of 256 nats)."""
        entry = resolve_accountant(self._accountant_name)
        return entry.monotone and self._target_epsilon <= entry.monotone_max_epsilon

    def _admissible_tail(self, prefix: tuple, sigma: float, lo: int, hi: int | None,
                         start: int) -> tuple[int, int | None]:
        """Narrow the bracket (``lo`` admissible, ``hi`` exceeding or ``None``) of K* to
        (K*, K* + 1), K* = max{k ≥ 0 : ε(prefix + k steps at (σ, q)) ≤ target}.

        Galloping up from ``start`` while no exceeding tail is known, then bisection; every ε
        composed by the accountant (:meth:`_epsilon_of`). K* is verified at both ends (K*
        admissible, K* + 1 exceeds); monotonicity of ε in k makes it the answer of every
        budget check of this prefix and σ. The search stops early, leaving a wider bracket
        (those checks then compose), where monotonicity is not established: no exceeding
        tail below 2**40 steps, a PLD history longer than :data:`~.pld.PLD_MAX_STEPS` (ε is
        then RDP's), or a non-finite ε.
        """
        q = self._sample_rate
        limit = _MAX_SEARCH_STEPS
        max_steps = resolve_accountant(self._accountant_name).max_steps
        if max_steps is not None:  # PLD: beyond PLD_MAX_STEPS its ε is RDP's
            limit = min(limit, max_steps - sum(n for _, _, n in prefix))

        def exceeds(k: int) -> bool | None:
            eps = self._epsilon_of(extend_history(list(prefix), sigma, q, k))
            return None if not math.isfinite(eps) else eps > self._target_epsilon

        probe = max(int(start), lo + 1)
        while hi is None:
            if probe > limit:
                return lo, hi
            found = exceeds(probe)
            if found is None:
                return lo, hi
            if found:
                hi = probe
            else:
                lo, probe = probe, 2 * probe
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = exceeds(mid)
            if found is None:
                return lo, hi
            if found:
                hi = mid
            else:
                lo = mid
        return lo, hi

    @property
    def planned_epsilon(self) -> float:
        """ε (nats) of the plan: every step so far at the σ set for it.

        That σ is the calibrated one unless a noise scheduler changed it (the optimizer passes
        the σ actually set to :meth:`step`). The budget check (:meth:`would_exceed`,
        :meth:`step`) uses this data-independent history, so when a run stops never depends on
        the private data.
        """
        key = tuple(self._acct.history)
        if self._eps_cache is None or self._eps_cache[0] != key:
            self._eps_cache = (key, self._epsilon_of(self._acct.history))
        return self._eps_cache[1]

    @property
    def credited_history(self) -> list[tuple[float, float, int]]:
        """(σ_t, q, steps) of the credited noise: added noise plus credited shot noise.

        Empty without a credit mode (then the credited guarantee is the proven one).
        """
        return list(self._credited)

    @property
    def credited_epsilon(self) -> float:
        r"""ε (nats) of the Q-ShiftDP credited guarantee (an approximation).

        Composes, per step, :math:`\sigma^{cr}_t = \sqrt{\min_k(\text{added}_k +
        \text{credit}_k)}/C`: valid only if the credited shot noise acts as independent
        Gaussian noise (central limit theorem), and for ``adaptive``/``isotropic`` only outside
        the failure event of probability β. Without a credit mode it equals :attr:`epsilon`.
        """
        if self._credit_mode == "none":
            return self.proven_epsilon
        return self._cached_epsilon("_credited_cache", self._credited)

    def _cached_epsilon(self, slot: str, history) -> float:
        """ε of ``history``, cached in attribute ``slot`` until the history changes."""
        key = tuple(history)
        cache = getattr(self, slot, None)
        if cache is None or cache[0] != key:
            cache = (key, self._epsilon_of(history))
            setattr(self, slot, cache)
        return cache[1]

    @property
    def proven_history(self) -> list[tuple[float, float, int]]:
        r"""(σ_t, q, steps) triples of the Gaussian noise actually added.

        σ_t is the smallest per-coordinate standard deviation of the Gaussian noise added at
        step t divided by the clip norm; shot noise is not counted. The optimizer never lets it
        depend on the batch (a data-dependent noise level would leak through the variance).
        """
        return list(self._proven)

    @property
    def proven_epsilon(self) -> float:
        """ε (nats) proven from the Gaussian noise actually added (no approximation)."""
        return self._cached_epsilon("_proven_cache", self._proven)

    @property
    def epsilons(self) -> dict[str, float]:
        """The proven ε (nats, at ``target_delta``) under every accountant the ledger reports.

        The ledger's own accountant (:attr:`accountant`, whose ε is :attr:`epsilon` and the
        budget's) and, beside it, RDP and PLD on the same proven history: each is an upper
        bound, so the smallest is also one, but only the ledger's own is the guarantee it
        reports and budgets.

        Returns:
            dict: ``{"rdp": ..., "pld": ...}`` plus the ledger's own accountant (e.g.
            ``"prv"``), in that order.

        Example:
            >>> ledger = PrivacyLedger(target_epsilon=20.0, target_delta=1e-5,
            ...                        noise_multiplier=1.0, sample_rate=0.2, sensitivity=1.0)
            >>> for _ in range(50):
            ...     _ = ledger.step()
            >>> {k: round(v, 2) for k, v in ledger.epsilons.items()}
            {'rdp': 11.29, 'pld': 10.13}
        """
        names = dict.fromkeys(("rdp", "pld", self._accountant_name))
        return {name: (self.proven_epsilon if name == self._accountant_name
                       else self._epsilon_of(self._proven, name)) for name in names}

    @property
    def epsilon(self) -> float:
        """ε spent so far at δ = ``target_delta`` (nats): the proven guarantee.

        It is composed by the accountant from the noise actually added at each step
        (:attr:`proven_history`); no assumption on shot noise.
        """
        return self.proven_epsilon

    def epsilon_at(self, steps: int, *, credited: bool = False) -> float:
        """ε (nats, at ``target_delta``) after the first ``steps`` recorded steps.

        The proven guarantee of that prefix of :attr:`proven_history` (or, with
        ``credited=True``, the credited one of :attr:`credited_history`; without a credit
        mode the proven one). ``epsilon_at(ledger.steps)`` is :attr:`epsilon` (the same
        composition, the same float). The optimizer fills its step records' ε with it when they
        are read, so a step composes nothing it does not need.

        Args:
            steps: a count of recorded steps, 0 ≤ ``steps`` ≤ :attr:`steps`.
            credited: the credited guarantee instead of the proven one.

        Returns:
            ε of the prefix (0 for ``steps=0``).

        Raises:
            ValueError: if ``steps`` is negative or above the steps recorded.

        Example:
            >>> ledger = PrivacyLedger(target_epsilon=20.0, target_delta=1e-5,
            ...                        noise_multiplier=1.0, sample_rate=0.2, sensitivity=1.0)
            >>> for _ in range(50):
            ...     ledger.charge()
            >>> ledger.epsilon_at(50) == ledger.epsilon, ledger.epsilon_at(10) < ledger.epsilon
            (True, True)
        """
        k = self._check_nonnegative_steps(steps)
        if k > self.steps:
            raise ValueError(f"`steps` must be at most the {self.steps} steps recorded. "
                             f"Found {steps!r}.")
        history = self._credited if credited and self._credit_mode != "none" else self._proven
        return self._epsilon_of(truncate_history(history, k))

    def epsilon_after(self, steps: int, *, noise_multiplier: float | None = None) -> float:
        r"""Planned ε (nats) after ``steps`` more steps at (σ, q).

        Args:
            steps: number of further steps, ≥ 0.
            noise_multiplier: the σ > 0 those steps will use (the one actually set, e.g. by
                a noise scheduler; data-independent); default the calibrated σ.

        Returns:
            ε at δ = ``target_delta``, an upper bound.

        Raises:
            ValueError: if ``steps`` < 0.
        """
        k = self._check_nonnegative_steps(steps)
        if k == 0:
            return self.planned_epsilon
        sigma = (self._noise_multiplier if noise_multiplier is None
                 else check_positive_float(noise_multiplier, "noise_multiplier"))
        return self._epsilon_of(extend_history(self._acct.history, sigma, self._sample_rate, k))

    def would_exceed(self, steps: int = 1, *, noise_multiplier: float | None = None) -> bool:
        """Whether ``steps`` more steps would take ε above ``target_epsilon``.

        Args:
            steps: number of further steps, ≥ 1.
            noise_multiplier: the σ those steps will use (default the calibrated σ).

        Returns:
            ``True`` if ``epsilon_after(steps, noise_multiplier=...) > target_epsilon``.

        With the RDP and PLD accountants ε grows with the number of steps at σ, so the answer
        is ``count > K*`` for the largest admissible count K* after the same history: every
        count composed so far brackets K*, and a count outside the bracket costs O(1). Inside
        it the extended history is composed (as before; the planned ε of the next step is
        then already known), unless the last such composition went unread, in which case K*
        is searched once (about 2·log₂ K* compositions) and every later check at this σ is
        O(1). A new σ (a noise scheduler) has its own bracket; PRV composes at every check.
        The answer is always the composed one.
        """
        steps = check_positive_int(steps, "steps")
        sigma = (self._noise_multiplier if noise_multiplier is None
                 else check_positive_float(noise_multiplier, "noise_multiplier"))
        return self._exceeds(sigma, steps)

    def step(self, *, noise_multiplier: float | None = None,
             proven_noise_multiplier: float | None = None,
             credited_noise_multiplier: float | None = None) -> float:
        """Record one step, after checking that the plan stays within the budget.

        Args:
            noise_multiplier: the σ set for this step (data-independent: the calibrated σ, or
                what a noise scheduler set); the budget check composes it. Default: the
                calibrated σ.
            proven_noise_multiplier: σ_t of the Gaussian noise actually added at this step
                (smallest per-coordinate standard deviation over the clip norm; it must not
                depend on the batch); defaults to the planned σ.
            credited_noise_multiplier: with a credit mode, the step's credited σ_t (added noise
                plus credited shot noise; default: the proven σ_t, nothing credited); refused
                without a credit mode.

        Returns:
            ε of the calibrated plan after the step (nats; see :attr:`planned_epsilon`). It is
            composed for the return value; :meth:`charge` records the same step without it.

        Raises:
            PrivacyBudgetExceededError: if the step would take the planned ε above
                ``target_epsilon``; nothing is recorded then.
            ValueError: for a non-positive σ_t, or a credited σ_t without a credit mode.
        """
        self.charge(noise_multiplier=noise_multiplier,
                    proven_noise_multiplier=proven_noise_multiplier,
                    credited_noise_multiplier=credited_noise_multiplier)
        return self.planned_epsilon

    def charge(self, *, noise_multiplier: float | None = None,
               proven_noise_multiplier: float | None = None,
               credited_noise_multiplier: float | None = None) -> None:
        """Record one step, after the budget check, without composing the new ε.

        The same as :meth:`step` (same arguments, same check, same records) except that it
        returns nothing: the check is :meth:`would_exceed` (O(1) once K* is known), and ε is
        composed only when asked for (:attr:`epsilon`, :attr:`planned_epsilon`, the
        statement).

        Args:
            noise_multiplier: the σ set for this step (default: the calibrated σ).
            proven_noise_multiplier: σ_t of the Gaussian noise actually added (default: the
                planned σ).
            credited_noise_multiplier: with a credit mode, the step's credited σ_t (default:
                the proven σ_t); refused without a credit mode.

        Raises:
            PrivacyBudgetExceededError: if the step would take the planned ε above
                ``target_epsilon``; nothing is recorded then.
            ValueError: for a non-positive σ_t, or a credited σ_t without a credit mode.
        """
        proven = (self._noise_multiplier if proven_noise_multiplier is None
                  else check_positive_float(proven_noise_multiplier, "proven_noise_multiplier"))
        if credited_noise_multiplier is not None and self._credit_mode == "none":
            raise ValueError(
                f"`credited_noise_multiplier` needs a credit mode (credit_mode='none'). Found "
                f"{credited_noise_multiplier!r}."
            )
        credited = None
        if self._credit_mode != "none":  # nothing credited unless said: the proven σ_t
            credited = (proven if credited_noise_multiplier is None else check_positive_float(
                credited_noise_multiplier, "credited_noise_multiplier"))
        planned = (self._noise_multiplier if noise_multiplier is None
                   else check_positive_float(noise_multiplier, "noise_multiplier"))
        if self._exceeds(planned, 1):
            new_eps = self._epsilon_of(
                extend_history(self._acct.history, planned, self._sample_rate, 1))
            raise PrivacyBudgetExceededError(
                f"Privacy budget exceeded: step {self.steps + 1} would spend ε = {new_eps:.6g} "
                f"> target ε = {self._target_epsilon:.6g} (δ = {self._target_delta:g}); "
                f"ε spent so far is {self.planned_epsilon:.6g} after {self.steps} steps. "
                f"The step was not taken."
            )
        self._acct.step(noise_multiplier=planned, sample_rate=self._sample_rate)
        self._proven = extend_history(self._proven, proven, self._sample_rate, 1)
        if credited is not None:
            self._credited = extend_history(self._credited, credited, self._sample_rate, 1)

    def fresh(self) -> PrivacyLedger:
        """A ledger with this one's settings and no steps, sharing its compositions.

        For repeated trials of one run (the audits' releases): every trial accounts the same
        plan, so the compositions, one-step PLDs and admissible step counts K* this ledger has
        remembered (pure functions of the history, δ and target, never of the steps taken)
        serve the copy, and what the copy composes serves this one. Steps, histories and the
        ε caches are the copy's own; ``extra`` is copied. Every ε and every budget answer is
        what a new :class:`PrivacyLedger` with the same arguments gives.

        Returns:
            PrivacyLedger: the empty copy.

        Example:
            >>> ledger = PrivacyLedger(target_epsilon=8.0, target_delta=1e-5,
            ...                        noise_multiplier=1.0, sample_rate=0.2, sensitivity=1.0)
            >>> ledger.charge()
            >>> trial = ledger.fresh()
            >>> trial.steps, ledger.steps, trial.target_epsilon
            (0, 1, 8.0)
        """
        new = copy.copy(self)
        new._extra = copy.deepcopy(self._extra)
        new._acct = make_accountant(self._accountant_name)
        new._proven, new._credited = [], []
        new._eps_cache = None
        for slot in ("_proven_cache", "_credited_cache"):
            new.__dict__.pop(slot, None)
        new._unread_compositions = 0
        return new

    def remaining_steps(self) -> int:
        """How many more steps at (σ, q) fit in the budget.

        Returns:
            The largest k ≥ 0 with ``epsilon_after(k) <= target_epsilon`` (searched up to
            2**40).
        """
        if self.would_exceed(1):
            return 0
        lo, hi = 1, 2
        while not self.would_exceed(hi):
            lo, hi = hi, 2 * hi
            if hi > _MAX_SEARCH_STEPS:
                return lo
        while hi - lo > 1:  # invariant: lo fits, hi exceeds
            mid = (lo + hi) // 2
            if self.would_exceed(mid):
                hi = mid
            else:
                lo = mid
        return lo

    @staticmethod
    def _check_nonnegative_steps(steps) -> int:
        if steps == 0 and not isinstance(steps, bool):
            return 0
        return check_positive_int(steps, "steps")

    # ------------------------------------------------------------------ persistence
    def state_dict(self) -> dict[str, Any]:
        """A JSON-able snapshot of the whole ledger (history, steps and all metadata).

        Returns:
            A dict with ``"format_version": 3``; also ``"opacus_version"`` and
            ``"epsilon_by_accountant"`` (:attr:`epsilons`), for information
            (:func:`~pennylane_qshiftdp.accountants.persistence.ledger_state`).
        """
        return ledger_state(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Replace this ledger's configuration and history with those of ``state_dict``.

        Args:
            state_dict: a dict produced by :meth:`state_dict` (possibly via JSON).

        Raises:
            ValueError: if the format version is unknown, a key is missing, a value is out of
                range, or ``steps`` disagrees with the history.
        """
        state = parse_state(state_dict)
        self._configure(LedgerConfig(**state.config))
        steps = sum(n for _, _, n in state.planned)
        if self._credit_mode != "none" and state.version >= 2 and sum(
                n for _, _, n in state.credited) != steps:
            raise ValueError(
                f"`credited_history` must cover the same {steps} steps as `history` with credit "
                f"mode {self._credit_mode!r}.")
        self._acct = make_accountant(self._accountant_name, state.planned)
        self._proven = list(state.proven)
        self._credited = list(state.credited) if self._credit_mode != "none" else []
        if self._credit_mode != "none" and state.version < 2:
            self._credited = list(state.planned)  # v1 recorded only the calibrated σ
        self._eps_cache = None
        self._proven_cache = None
        self._credited_cache = None
        # The remembered compositions are keyed by everything they depend on (accountant, δ,
        # target, history; σ, q and interval for a one-step PLD), so they stay exact across a
        # load (an audit reloads the same plan every trial): only the check's bookkeeping
        # restarts (a ledger made by from_state_dict starts with empty memos).
        if "_epsilon_memo" in self.__dict__:
            self._unread_compositions = 0
        else:
            self._reset_memos()

    @classmethod
    def from_state_dict(cls, state_dict: dict[str, Any]) -> PrivacyLedger:
        """A new ledger restored from :meth:`state_dict` output."""
        ledger = cls.__new__(cls)
        ledger._eps_cache = None
        ledger.load_state_dict(state_dict)
        return ledger

    def to_json(self, *, indent: int | None = 2) -> str:
        """The :meth:`state_dict` as a JSON string (floats round-trip exactly)."""
        return json.dumps(self.state_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_json(cls, s: str) -> PrivacyLedger:
        """A new ledger restored from :meth:`to_json` output.

        Raises:
            ValueError: if ``s`` is not valid JSON or not a valid ledger state.
        """
        return cls.from_state_dict(json.loads(s))

    def save(self, path: str | os.PathLike) -> Path:
        """Write :meth:`to_json` to ``path`` atomically (write to a temporary file, then rename).

        Returns:
            The path written.
        """
        return write_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | os.PathLike) -> PrivacyLedger:
        """A new ledger read from a file written by :meth:`save`."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    # ------------------------------------------------------------------ reporting
    def statement(self, *, diagnostics: dict[str, Any] | None = None) -> str:
        r"""A human-readable privacy statement for the run recorded so far.

        See :func:`~pennylane_qshiftdp.accountants.statement.privacy_statement` (what each line
        says, and which parts are withheld unless ``diagnostics`` is given).

        Args:
            diagnostics: ``None`` (default) for a statement of data-independent facts only, or
                a dict of diagnostics computed from the private batches and released beside it
                (NOT protected; added to the statement, marked as such).

        Returns:
            A multi-line string.

        Raises:
            TypeError: if ``diagnostics`` is neither ``None`` nor a dict.
        """
        return privacy_statement(self, diagnostics=diagnostics)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(epsilon={self.epsilon:.6g}, "
            f"target_epsilon={self._target_epsilon!r}, target_delta={self._target_delta!r}, "
            f"steps={self.steps}, noise_multiplier={self._noise_multiplier!r}, "
            f"sample_rate={self._sample_rate!r}, sensitivity={self._sensitivity!r}, "
            f"adjacency={self._adjacency!r}, credit_mode={self._credit_mode!r}, "
            f"beta={self._beta!r}, accountant={self._accountant_name!r})"
        )
