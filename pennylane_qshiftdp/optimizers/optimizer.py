r"""``QShiftDPOptimizer``: Opacus's DP optimizer with certified clipping and shot-noise credit.

A subclass of :class:`opacus.optimizers.DPOptimizer`, so schedulers, ``zero_grad``, ``step``,
``state_dict`` and Opacus's ``BatchMemoryManager`` behave as in Opacus. In :meth:`step` it

1. checks the :class:`~pennylane_qshiftdp.PrivacyLedger` *before* anything changes;
2. clips every example's gradient (Opacus's ``p.grad_sample``) to L2 norm at most ``C`` — one
   flat clip norm, or one per group of parameters (``clip_groups``; the noise then uses
   :math:`C = \sqrt{\sum_g C_g^2}`), or an adaptive quantile clip norm (Andrew et al.,
   arXiv:1905.03871) whose centred unclipped count is divided by the public expected batch
   size b;
   a non-finite per-example gradient contributes zero;
3. adds Gaussian noise of standard deviation :math:`\sigma C` per coordinate
   (:math:`2\sigma C` under replace-one adjacency); with a
   shot-noise credit mode the quantum coordinates get exactly the floor
   :math:`\sigma_{\mathrm{floor}} C` instead (a level that never depends on the batch) and the
   batch's credited shot noise only enters the *credited* noise multiplier;
4. divides by the public expected batch size :math:`b` (a constant that does not depend on the
   data: the loader's batch size or a declared value, never :math:`qN`, which differs between
   neighbouring data sets; opacus#819) and steps the wrapped optimizer;
5. charges the ledger one step with the proven noise multiplier
   :math:`\sigma_t = \min_k \mathrm{std}_k / C` (data-independent) and, with a credit mode,
   the credited one.

As in Opacus (``opacus.optimizers.get_optimizer_class``), each mode is a subclass overriding
only the hooks it changes: :class:`QShiftDPOptimizer` here holds what every mode shares (fixed,
certified and per-group clipping, the public divisor, seeded or secure noise, the one-batch and
loader checks, the step records and the state); adaptive clipping
(:mod:`.adaptive_optimizer`), automatic clipping (:mod:`.automatic_optimizer`), a public clip
recomputed every epoch (:mod:`.public_optimizer`), shot-noise credit (:mod:`.credit_optimizer`)
and data-parallel training (:mod:`.distributed_optimizer`) are the others, chosen by
:func:`~pennylane_qshiftdp.optimizers.selection.get_optimizer_class`. The ledger is a step hook
(:meth:`QShiftDPOptimizer.attach_ledger`, :class:`~.ledger_hook.LedgerHook`). Called with
today's keywords of a mode (``adaptive_clipping=``, ``credit=``, ``ledger=``, ...),
``QShiftDPOptimizer(...)`` (or a subclass of it) builds the mode's class through
:func:`~pennylane_qshiftdp.optimizers.selection.build_optimizer`.

Privacy does not depend on the loss or the loop: clipping happens here, on whatever
per-example gradients Opacus's hooks computed. An empty Poisson batch (or a step without a
backward pass) adds the full noise and counts as a step.

With ``certified=True`` the clip norm is the a-priori bound Δ of the parameter-shift gradient
(:func:`~pennylane_qshiftdp.sensitivity`): for a certified model no clip binds, and a clip that
binds means the declared bound was wrong; it is counted in the step record as a diagnostic
(never raised: whether a clip binds depends on the private batch).

One ``step()`` per backward pass over one Poisson batch: accumulating several batches, or
several backward passes over one batch, is refused before anything changes (as Opacus's
``PrivacyEngine`` does under Poisson sampling), and so is a step after drawing more than one
batch from the Poisson loader. The budget check follows the noise multiplier actually set
(``optimizer.noise_multiplier``, e.g. by an Opacus noise scheduler), which is data-independent.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from opacus.optimizers import DPOptimizer

from .. import _compat
from .._validation import check_choice, check_positive_float
from ..accountants.ledger import ADJACENCIES, PrivacyLedger
from ..exceptions import PrivacyWarning
from ..grad_sample.divisor_guard import clear_unreleased
from .ledger_hook import LedgerHook
from .secure_noise import secure_normal

if TYPE_CHECKING:
    from ..credit.shot_noise import CreditResult
    from ..gradients.shot_statistics import ShotRecorder

__all__ = ["QShiftDPOptimizer", "StepRecord", "PUBLIC_RECORD_KEYS"]

# A per-example norm above C·(1 + _BIND_RTOL) counts as a binding clip (float rounding of the
# a-priori bound is far below this).
_BIND_RTOL = 1e-9


#: A clipped row whose computed float64 norm exceeds C·(1 − m) is scaled to that norm, with
#: m = max(_ROW_MARGIN, 4·(d + 2)·2⁻⁵³) for d coordinates: above the worst-case relative error
#: of a float64 sum of d squares and its square root, so the row's true norm is at most C.
#: Rows clipped at C (norm C‖g‖/(‖g‖ + 10⁻⁶)) are below it unless ‖g‖ ≳ 10⁶, so the rescaling
#: only touches rows that rounding could carry above C.
_ROW_MARGIN = 1e-12


def _at_most(norm: float, factor: torch.Tensor, row_norms: torch.Tensor,
             coordinates: int) -> torch.Tensor:
    """``factor``, lowered where ``factor × row_norms`` exceeds ``norm·(1 − m)`` (m as for
    :data:`_ROW_MARGIN`, for ``coordinates`` coordinates) to that bound; ``factor`` itself
    (the same tensor) when no row needs it."""
    limit = norm * (1.0 - max(_ROW_MARGIN, 4.0 * (coordinates + 2) * 2.0**-53))
    clipped = factor * row_norms
    over = clipped > limit
    if not bool(over.any()):
        return factor
    return torch.where(over, factor * (limit / clipped.clamp(min=torch.finfo(torch.float64)
                                                            .tiny)), factor)


class StepRecord(dict):
    """What one step clipped, added and credited (a dict: JSON-friendly).

    Only the keys in :data:`PUBLIC_RECORD_KEYS` are data-independent (or DP releases); the
    others (batch size, clipped and non-finite counts, gradient SNR, shot-variance estimates)
    depend on the private batch and are diagnostics, not protected.
    """


#: Step-record keys that do not depend on the private batch (or are DP releases).
PUBLIC_RECORD_KEYS = frozenset({
    "step", "credit_mode", "certified", "adjacency", "proven_noise_multiplier",
    "noise_multiplier", "noise_std", "sensitivity", "artificial_variance_mean",
    "target_variance", "clip_norm", "clip_norms", "next_clip_norm",
    "released_centred_unclipped_count", "epsilon", "released_sum_norm", "noise_variance_total",
    "parameter_step_norm", "parameter_norm", "released_total_norm", "noise_variance_cumulative",
    "coordinates",
})


#: Today's keywords of a mode, and ``ledger``: given any of them, ``QShiftDPOptimizer(...)``
#: builds the mode's class (:func:`~.selection.build_optimizer`).
MODE_KEYWORDS = frozenset({
    "adaptive_clipping", "automatic_gamma", "clip_norm_fn", "clip_refresh_steps", "credit",
    "credit_layer", "recorder", "beta", "variance_floor", "noise_floor_multiplier",
    "confidence", "outcome_range", "distributed", "ledger",
})

_BUILDER: list[Callable[..., Any]] = []


def register_builder(build: Callable[..., Any]) -> None:
    """Set the function that builds an optimizer from today's keywords of a mode
    (:func:`~.selection.build_optimizer`, registered when :mod:`.selection` is imported; the
    selection imports the mode classes, which import this module, so it cannot be imported
    here)."""
    _BUILDER[:] = [build]


class _SelectsMode(type):
    """Metaclass of :class:`QShiftDPOptimizer`: a call with today's keywords of a mode
    (:data:`MODE_KEYWORDS`) on a class that selects its mode (the base class and subclasses of
    it outside this package) goes to :func:`~.selection.build_optimizer`; any other call
    constructs the class itself."""

    def __call__(cls, *args: Any, **settings: Any) -> Any:
        if getattr(cls, "_selects_mode", False) and MODE_KEYWORDS & settings.keys():
            # registered by the package's __init__, which always runs before this module's
            # classes can be called
            return _BUILDER[0](*args, optimizer_class=cls, **settings)
        return super().__call__(*args, **settings)


@dataclass
class NoiseTally:
    """What one step's noise added, summed over its parameters (read by :meth:`add_noise`)."""

    min_multiplier: float = math.inf
    min_total: float = math.inf
    credited: float = 0.0
    added: float = 0.0
    coordinates: int = 0
    signal: float = 0.0
    released: float = 0.0



class QShiftDPOptimizer(DPOptimizer, metaclass=_SelectsMode):
    r"""Opacus :class:`~opacus.optimizers.DPOptimizer` for quantum and hybrid models (Q-ShiftDP).

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        noise_multiplier: σ > 0 (from :func:`~pennylane_qshiftdp.calibrate_noise_multiplier`).
        max_grad_norm: the clip norm C > 0 (flat clipping), or the initial clip norm of
            adaptive clipping. Ignored when ``clip_groups`` is given.
        expected_batch_size: the public constant :math:`b > 0` the noisy sum (and the adaptive
            clip's centred count) is divided by. It must not depend on the private data: a
            divisor q·N with N the data set size moves the release of a neighbouring data set
            by (1 + q)× the sensitivity the noise is calibrated for (opacus#819).
            :func:`~pennylane_qshiftdp.make_private` passes the loader's batch size or the
            declared ``expected_batch_size``.
        clip_groups: optional list of ``(parameters, clip_norm)``: each group's part of every
            per-example gradient is clipped to its own norm (per-layer clipping); the noise
            uses :math:`C = \sqrt{\sum_g C_g^2}`. Every optimised parameter must be in a group.
        certified: the clip norms are certified a-priori bounds (a binding clip is a defect,
            counted as a diagnostic): ``True``/``False`` for all groups, or one bool per clip
            group. A binding clip never raises: a refusal that fires only when some private
            example is present would itself leak it (``make_private(strict=True)`` checks the
            model against the bound from public information instead).
        adjacency: ``"add_remove"`` (default) or ``"replace_one"``: a replaced example moves
            the clipped sum by up to :math:`2C` (and the centred adaptive count by 1), so the
            noise is :math:`2\sigma C` (and :math:`2\sigma_b`) in every clip mode.
        credit: shot-noise credit mode (``"none"``, ``"depolarizing"``, ``"adaptive"``,
            ``"isotropic"``); needs ``certified`` and ``credit_layer``.
        credit_layer: the :class:`pennylane.qnn.TorchLayer` whose weights get the credit.
        recorder: the :class:`~.ShotRecorder` attached to its QNode.
        beta: failure probability of the adaptive bound over the run (adaptive/isotropic).
        steps: planned number of steps T (Bonferroni correction of the adaptive bound).
        variance_floor: proven :math:`v_{\min}` (``depolarizing``; floor of ``adaptive``).
        noise_floor_multiplier: :math:`\sigma_{\mathrm{floor}} > 0`: with a credit mode the
            quantum coordinates get exactly :math:`\sigma_{\mathrm{floor}} C` of Gaussian noise
            at every step (data-independent; the credited shot noise is meant to make up the
            rest). Required with a credit mode; must be below σ.
        automatic_gamma: ``None`` (clipping) or the stability constant γ > 0 of *automatic
            clipping* (Bu et al., arXiv:2206.07136, AUTO-S, their Eq. (4.1) in units of the
            group's C): every per-example gradient is scaled by :math:`C/(\lVert g\rVert +
            \gamma C)` instead of :math:`\min(1, C/\lVert g\rVert)`, so its norm
            :math:`C\lVert g\rVert/(\lVert g\rVert + \gamma C)` is below C whatever g: the
            sensitivity, and the noise, are those of clipping at C; no clip norm to tune
            (the learning rate absorbs the scale). Every example counts as clipped.
        adaptive_clipping: ``None`` or a dict with ``target_unclipped_quantile`` γ ∈ (0, 1),
            ``clipbound_learning_rate`` η > 0, ``min_clipbound``, ``max_clipbound`` and
            optionally ``unclipped_num_std`` (default :func:`count_noise_multiplier`).
        generator: a seeded :class:`torch.Generator` (repeatable noise, not for release) or
            ``None``.
        secure_mode: draw the noise from the OS's CSPRNG (:func:`secure_normal`); refuses a
            ``generator``.
        ledger: a :class:`~pennylane_qshiftdp.PrivacyLedger`, checked before and
            charged after each step.
        confidence: ``"gaussian"`` or ``"cantelli"`` multiplier for the adaptive credit.
        outcome_range: ``(lo, hi)`` of every single-shot outcome of the measured observable
            (the adaptive bound's range; default ``(-1, 1)``, Pauli words).
        loss_reduction: ``"mean"`` or ``"sum"`` (as in Opacus). Every ``step()`` must follow
            exactly one backward pass over one Poisson batch: several backward passes
            (gradient accumulation, or a main and an auxiliary loss back-propagated
            separately) are refused; back-propagate ``(main + aux)`` once instead, so each
            example's contributions are summed before it is clipped.
        clip_norm_fn: optional callable ``step -> C`` giving a clip norm from public
            information (e.g. :func:`~pennylane_qshiftdp.domain_gradient_bound`);
            called every ``clip_refresh_steps`` steps before clipping (flat clipping only).
        clip_refresh_steps: how often ``clip_norm_fn`` is called, ≥ 1.
        distributed: data-parallel training on an initialised ``torch.distributed`` process
            group: each process clips the per-example gradients of its share of the Poisson
            batch, the clipped sums are all-reduced, and the noise is drawn once (by rank 0)
            and shared, so every process takes the same step.

    The keywords of a mode (``adaptive_clipping``, ``automatic_gamma``, ``clip_norm_fn``,
    ``clip_refresh_steps``, ``credit`` and its settings, ``distributed``) and ``ledger`` are
    today's compatibility signature: given any of them, ``QShiftDPOptimizer(...)`` (or a
    subclass of it, e.g. an audit's broken optimizer) returns an instance of the mode's class
    from :func:`~pennylane_qshiftdp.optimizers.selection.get_optimizer_class` (combined with
    the subclass), built by :func:`~pennylane_qshiftdp.optimizers.selection.build_optimizer`
    with the ledger attached (:meth:`attach_ledger`). Without them it is the flat, certified or
    per-group clipping optimizer itself, taking only the settings every mode shares.

    Per-example gradients that are not finite (an input or label NaN or inf) contribute
    zero: their clip factor is 0, so no release is ever NaN or inf. How many there were is a
    diagnostic (``last_record["nonfinite_examples"]``), not protected, and nothing warns about
    it at run time (a warning that fires only on the data set holding the bad example would
    reveal it).

    Raises:
        ValueError: for invalid σ, C, batch size, credit settings or adaptive-clipping
            settings (e.g. :math:`2\sigma_b \le \sigma`).
        NotImplementedError: for a credit mode without certified clipping.

    References:
        Abadi et al., arXiv:1607.00133 (DP-SGD); Andrew et al., arXiv:1905.03871 (quantile
        clipping); Ngo et al., arXiv:2602.02962 (Q-ShiftDP).

    Example:
        >>> from opacus import GradSampleModule
        >>> model = GradSampleModule(torch.nn.Linear(2, 1, bias=False).double())
        >>> opt = QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
        ...     noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=10,
        ...     generator=torch.Generator().manual_seed(0))
        >>> model(torch.ones(3, 2, dtype=torch.float64)).sum().backward()
        >>> _ = opt.step()
        >>> opt.last_record["proven_noise_multiplier"]
        1.0
    """

    _is_last_step_skipped: bool  # Opacus's DPOptimizer sets it
    #: This class picks a mode class when called with today's keywords of a mode (see above);
    #: the mode classes of this package set it to ``False``.
    _selects_mode = True
    # The settings of the modes, off here; each mode's class sets its own.
    #: the shot-noise credit mode (``"none"`` here; :class:`~.ShotNoiseCreditDPOptimizer`).
    credit: str = "none"
    #: adaptive clipping's checked settings (:class:`~.AdaptiveClipDPOptimizer`) or ``None``.
    adaptive_clipping: dict | None = None
    #: automatic clipping's γ (:class:`~.AutomaticClipDPOptimizer`) or ``None``.
    automatic_gamma: float | None = None
    #: the public clip norm's function of the step (:class:`~.PublicClipDPOptimizer`) or ``None``.
    clip_norm_fn: Callable[[int], float] | None = None
    #: the credit's noise floor σ_floor (:class:`~.ShotNoiseCreditDPOptimizer`) or ``None``.
    noise_floor_multiplier: float | None = None
    #: a :class:`~.ShotRecorder` cleared at every :meth:`zero_grad`, or ``None``.
    recorder: ShotRecorder | None = None
    #: data-parallel training (:class:`~.DistributedQShiftDPOptimizer`).
    distributed: bool = False
    _ledger_hook: LedgerHook | None = None

    def __init__(self, optimizer: torch.optim.Optimizer, *, noise_multiplier: float,
                 max_grad_norm: float, expected_batch_size: float,
                 clip_groups: Sequence[tuple[Iterable[torch.nn.Parameter], float]] | None = None,
                 certified: bool | Sequence[bool] = False, adjacency: str = "add_remove",
                 generator: torch.Generator | None = None, secure_mode: bool = False,
                 loss_reduction: str = "mean", steps: int | None = None):
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError(f"`optimizer` must be a torch.optim.Optimizer. Found "
                            f"{type(optimizer).__name__}.")
        sigma = check_positive_float(noise_multiplier, "noise_multiplier")
        check_positive_float(expected_batch_size, "expected_batch_size")
        if secure_mode and generator is not None:
            raise ValueError("secure_mode draws noise from the OS's CSPRNG and refuses a "
                             "seeded `generator`.")
        super().__init__(optimizer, noise_multiplier=sigma,
                         max_grad_norm=check_positive_float(max_grad_norm, "max_grad_norm"),
                         expected_batch_size=expected_batch_size, loss_reduction=loss_reduction,
                         generator=generator, secure_mode=False)
        self.secure_mode = bool(secure_mode)
        self._set_clip_groups(clip_groups, float(max_grad_norm), certified)
        self.adjacency = check_choice(adjacency, "adjacency", ADJACENCIES)
        #: 2 under replace-one adjacency (a replaced example moves the sum by 2C), else 1.
        self.sensitivity_factor = 2.0 if self.adjacency == "replace_one" else 1.0
        #: planned number of steps T (``None``: not known); at step T the diagnosis runs once.
        self.planned_steps = int(steps) if steps else None
        #: median per-example gradient norm on public synthetic examples at the initial
        #: weights (set by make_private; read by :meth:`stuck_run_cause`), or ``None``.
        self.public_gradient_norm: float | None = None
        self._reset_step_state()

    def _set_clip_groups(self, clip_groups, max_grad_norm: float,
                         certified: bool | Sequence[bool]) -> None:
        """Check and set the clip groups (every optimised parameter in one) and their
        certified flags."""
        params = self.params
        if clip_groups is None:
            clip_groups = [(params, max_grad_norm)]
        ids = {id(p) for p in params}
        grouped: list[tuple[list, float]] = []
        seen: set[int] = set()
        for i, (group, norm) in enumerate(clip_groups):
            group = [p for p in group if id(p) in ids]
            check_positive_float(norm, f"clip_groups[{i}] norm")
            seen.update(id(p) for p in group)
            grouped.append((group, float(norm)))
        missing = [tuple(p.shape) for p in params if id(p) not in seen]
        if missing:
            raise ValueError(f"Every optimised parameter needs a clip norm; parameters of "
                             f"shapes {missing} are in no clip group.")
        self.clip_groups = grouped
        self._max_grad_norm = math.sqrt(sum(c * c for _, c in grouped))
        flags = ([bool(certified)] * len(grouped) if isinstance(certified, bool)
                 else [bool(c) for c in certified])
        if len(flags) != len(grouped):
            raise ValueError(f"`certified` must be a bool or one bool per clip group "
                             f"({len(grouped)}). Found {certified!r}.")
        self._certified_flags = flags
        self.certified = flags[0] if flags else False

    def _reset_step_state(self) -> None:
        """The history, the running releases and the loader's and BatchMemoryManager's
        bookkeeping of a fresh optimizer."""
        self._history: list[StepRecord] = []
        # Records whose ε is filled in when the history is read, with the ledger's step count
        # at their step (a step composes no ε it does not need: the budget check is O(1)).
        self._unresolved: list[tuple[StepRecord, int]] = []
        self._step_stats: dict = {}
        # The running sum of the released noisy sums (one entry per parameter of the wrapped
        # optimizer, by position; None until the parameter is first stepped) and of their noise
        # variances, since this optimizer was made or its state loaded: DP releases, read by
        # the diagnosis.
        self._released_total: list[torch.Tensor | None] = []
        self._released_variance = 0.0
        self._scale_iterations = 1
        self._loader: Any = None  # the Poisson loader's CountingBatchSampler
        self._loader_workers = 0
        self._warned_loader = False
        # BatchMemoryManager: the latest physical batch announced (do_skip, logical batch id)
        # and the logical batch whose clipped rows are being accumulated (None: none).
        self._latest_chunk: tuple[bool, Any] | None = None
        self._accumulating: Any = None
        self._signalled_batches = 0
        #: Clip norms set after construction (``optimizer.max_grad_norm = C``, Opacus's clip
        #: schedulers): ``[{"from_step": k, "clip_norm": C}, ...]``.
        self.clip_norm_schedule: list[dict[str, float]] = []
        self._clip_ready = True

    # ------------------------------------------------------------------ the ledger
    @property
    def ledger(self) -> PrivacyLedger | None:
        """The :class:`~pennylane_qshiftdp.PrivacyLedger` attached (:meth:`attach_ledger`), or
        ``None``; setting it attaches that ledger (``None`` detaches it)."""
        hook = self._ledger_hook
        return hook.ledger if hook is not None else None

    @ledger.setter
    def ledger(self, ledger: PrivacyLedger | None) -> None:
        self.attach_ledger(ledger)

    def attach_ledger(self, ledger: PrivacyLedger | None) -> None:
        """Check every later step against ``ledger``'s budget before it is released and charge
        it after (a :class:`~.ledger_hook.LedgerHook`, as Opacus's ``PrivacyEngine`` attaches
        its accountant's step hook); ``None`` detaches the ledger.

        Args:
            ledger: a :class:`~pennylane_qshiftdp.PrivacyLedger`, or ``None``.
        """
        self._ledger_hook = LedgerHook(ledger) if ledger is not None else None

    @property
    def accumulated_iterations(self) -> int:
        """Backward passes in this step (always 1: several are refused); read after clipping
        too (Opacus's accountant hook reads it once the per-example gradients are consumed)."""
        if any(getattr(p, "grad_sample", None) is not None for p in self.params):
            return super().accumulated_iterations
        return self._scale_iterations

    def attach_loader(self, loader: torch.utils.data.DataLoader) -> None:
        """The Poisson loader whose batches the steps must come from, one batch per step
        (:meth:`_check_loader`)."""
        self._loader = loader.batch_sampler
        self._loader_workers = int(getattr(loader, "num_workers", 0) or 0)

    # ------------------------------------------------------------------ the clip norm
    @property
    def max_grad_norm(self) -> float:
        r"""The clip norm C the noise is scaled by (:math:`\sqrt{\sum_g C_g^2}` for several
        clip groups): always that of the clip the rows are clipped with.

        Setting it (as Opacus's ``StepGradClip``/``ExponentialGradClip`` schedulers do) calls
        :meth:`set_clip_norm`, which moves the clip and the noise together, or refuses.
        """
        return self._max_grad_norm

    @max_grad_norm.setter
    def max_grad_norm(self, value: float) -> None:
        if not getattr(self, "_clip_ready", False):  # DPOptimizer.__init__ sets it first
            self._max_grad_norm = float(value)
            return
        self.set_clip_norm(value)

    def set_clip_norm(self, value: float) -> None:
        r"""Clip every later step at C = ``value`` and scale its noise by the same C.

        With one clip group its norm becomes C; with several (per-layer clipping) every
        group's norm is scaled by C / (the current C), so :math:`\sqrt{\sum_g C_g^2}` is C (the
        noise uses the larger of the two after rounding). The change is recorded in
        :attr:`clip_norm_schedule`, in every later step record (``clip_norm``) and, with a
        ledger, in its provenance (``clip_norm_schedule``, printed by the privacy statement).
        The clip norm is public (a constant or a scheduler's function of the step), so moving
        it costs no privacy: σ stays the noise multiplier relative to the clip in force.

        Args:
            value: the new clip norm C > 0.

        Raises:
            ValueError: for C ≤ 0 or non-finite, and when the clip is not the user's to move:
                certified clipping (C is the a-priori bound Δ), adaptive clipping (C follows
                the released quantile count), a public clip recomputed from the input domain
                (``clip_norm_fn``). Nothing is changed then.
        """
        new = check_positive_float(value, "max_grad_norm")
        why = self._fixed_clip_reason()
        if why is not None:
            raise ValueError(
                f"optimizer.max_grad_norm cannot be set to {new!r}: {why}. To schedule the clip "
                f"norm, make the model private with a float max_grad_norm (DP-SGD clipping) "
                f"or max_grad_norm='automatic'; Opacus's clip schedulers then move the clip "
                f"and the noise together. Nothing was changed.")
        ratio = new / self._max_grad_norm
        if len(self.clip_groups) == 1:
            self.clip_groups = [(self.clip_groups[0][0], new)]
        else:
            self.clip_groups = [(g, c * ratio) for g, c in self.clip_groups]
        # the noise's C never below the clip the rows are clipped with (rounding)
        self._max_grad_norm = max(new, math.sqrt(sum(c * c for _, c in self.clip_groups)))
        self.clip_norm_schedule.append({"from_step": len(self._history) + 1,
                                        "clip_norm": self._max_grad_norm})
        if self.ledger is not None:
            self.ledger.extra_update({"clip_norm_schedule": [dict(e) for e in
                                                             self.clip_norm_schedule]})


    def _fixed_clip_reason(self) -> str | None:
        """Why the user may not move the clip norm (:meth:`set_clip_norm`), or ``None``; a mode
        that sets the clip itself extends it."""
        if any(self._certified_flags):
            return ("the clip norm is the certified a-priori bound Δ of the parameter-shift "
                    "gradient (max_grad_norm='certified'); a clip below it would bind on "
                    "examples the certificate covers")
        return None
    # ------------------------------------------------------------------ BatchMemoryManager
    def signal_skip_step(self, do_skip: bool = True) -> None:
        """Opacus's ``BatchMemoryManager`` announces each physical batch it draws: ``do_skip``
        for all but the last of a logical batch.

        The optimizer remembers which logical batch the physical batch belongs to (with the
        Poisson loader of :func:`~pennylane_qshiftdp.make_private`: its draw number and the
        loader's iteration; otherwise the count of logical batches announced), so the rows it
        accumulates are never released with another logical batch's: rows left by a loop that
        stopped mid-logical-batch (``break``, an exception) are discarded when a physical
        batch of another logical batch is stepped (:meth:`pre_step`).

        Raises:
            ValueError: over a loader with worker processes: they draw batches ahead of the
                steps, so which logical batch a step's rows belong to could not be told.
        """
        if self._loader_workers > 0:
            raise ValueError(
                f"BatchMemoryManager over a loader with worker processes (num_workers="
                f"{self._loader_workers}): batches are drawn ahead of the steps, so the "
                f"optimizer cannot tell which logical batch a step's rows belong to after a "
                f"loop leaves one unfinished. Use num_workers=0 with BatchMemoryManager.")
        sampler = self._loader
        drawn: int = int(getattr(sampler, "outstanding", None) or 0)
        if drawn:
            # splitting the Poisson loader's latest batch: its draw number (unique)
            batch: Any = ("poisson", sampler.batches_drawn)
        else:
            batch = self._signalled_batches
            if not do_skip:
                self._signalled_batches += 1
        self._latest_chunk = (bool(do_skip), batch)
        super().signal_skip_step(do_skip)

    def _discard_accumulated(self) -> int:
        """Drop the clipped rows of an unfinished logical batch (never released); returns how
        many rows there were."""
        rows = int(self._step_stats.get("batch_examples", 0))
        for p in self.params:
            p.summed_grad = None
        self._step_stats = {"discarded_rows": rows} if rows else {}
        self._accumulating = None
        return rows
    # ------------------------------------------------------------------ noise
    def _standard_normal(self, n: int) -> torch.Tensor:
        """``n`` standard normal draws (from the OS's CSPRNG in secure mode, else from the
        generator)."""
        if self.secure_mode:
            return torch.as_tensor(secure_normal(n))
        return torch.randn(n, generator=self.generator, dtype=torch.float64)

    def _check_one_batch(self) -> None:
        """Refuse a step over several backward passes.

        Opacus stores ``p.grad_sample`` as a list after a second backward pass without a step.
        Each pass's rows would be clipped separately, so an example present in two passes
        would contribute 2C against noise σC. (Several Poisson batches in one step are refused
        by :meth:`_check_loader`.) Whether this happens depends on the loop only, never on
        the data.
        """
        for p in self.params:
            gs = getattr(p, "grad_sample", None)
            if isinstance(gs, list) and len(gs) > 1:
                raise ValueError(
                    f"optimizer.step() after {len(gs)} backward passes: per-example gradients "
                    f"of several backward passes would be clipped separately (an example in "
                    f"two of them would count twice), and several Poisson batches per step are "
                    f"not accounted. Call optimizer.step() after every backward pass; for a "
                    f"main and an auxiliary loss back-propagate their sum once; for large "
                    f"batches use Opacus's BatchMemoryManager. No step was taken."
                )

    def _check_loader(self, logical_batch: Any = None) -> None:
        """Match the step with the oldest batch drawn from the Poisson loader and not yet
        stepped; refuse a step over another set of examples; warn once when a step drew no
        batch.

        Batches may be drawn ahead (``list(loader)``, worker processes prefetching) and
        stepped through one by one; a step whose per-example gradients have another number
        of rows than that batch (several batches concatenated, an empty batch skipped, a
        batch split into several steps) is not one step of the sampled Gaussian mechanism at
        rate q, and is refused before any noise is drawn. Whether this happens depends on the
        loop, never on the data (a correct loop always matches).
        """
        if self._loader is None:
            return
        consume = getattr(self._loader, "consume", None)
        outstanding = getattr(self._loader, "outstanding", 0)
        settle = getattr(self._loader, "settle", None)
        rows = self._step_stats.get("batch_examples", 0) - self._step_stats.get(
            "injected_rows", 0)  # rows an audit added to this step (its canaries)
        if (settle is not None and isinstance(logical_batch, tuple)
                and logical_batch[0] == "poisson"):
            # The last physical batch of a BatchMemoryManager logical batch. Every such step
            # releases (a data-independent count); the rows of a logical batch the loop did
            # not step whole (`continue`, an exception caught in the loop) are discarded and
            # the step adds the noise alone, as for an empty batch.
            if not settle(logical_batch[1], int(rows)):
                self._discard_accumulated()
                for p in self.params:
                    p.summed_grad = torch.zeros(p.shape, dtype=torch.float64, device=p.device)
            return
        if consume is not None and outstanding:
            if not consume(int(rows)):
                for p in self.params:
                    p.summed_grad = None
                self._loader.drop_oldest()  # never stepped: the next batch can be
                raise ValueError(
                    "optimizer.step() whose per-example gradients are not those of the oldest "
                    "batch drawn from the Poisson-sampling loader and not yet stepped "
                    f"({outstanding} drawn and not stepped): the ledger accounts one batch "
                    "(rate q) per step. Step once per batch, in the order drawn, with every "
                    "batch (an empty one too); do not concatenate or split batches "
                    "(BatchMemoryManager splits a large batch without breaking this). No step "
                    "was taken.")
            return
        if self.ledger is not None:
            count = (self.ledger.extra or {}).get("steps_without_poisson_batch", 0) + 1
            self.ledger.extra_update({"steps_without_poisson_batch": count})
        if not self._warned_loader:
            self._warned_loader = True
            warnings.warn(
                "optimizer.step() was called without drawing a batch from the Poisson-sampling "
                "loader returned by make_private: the ledger's ε assumes Poisson sampling at "
                f"rate q = {self.ledger.sample_rate if self.ledger else '?'} and does not hold "
                "for batches from another loader (the privacy statement now says so). Iterate "
                "the returned loader.",
                PrivacyWarning, stacklevel=3)

    def _gather_step(self) -> None:
        """Combine the step's clipped sums before the noise (distributed training sums them
        over processes: :class:`~.DistributedQShiftDPOptimizer`); nothing here."""

    # ------------------------------------------------------------------ per-sample gradients
    def _check_promoted(self) -> None:
        """Refuse a step whose per-example gradients Opacus computed but never promoted.

        A forward pass with gradients enabled, in train mode and without a backward pass of its
        own (``print(model(x))`` in the loop) leaves an activation on Opacus's stack; the next
        backward pass then leaves its per-example gradients unpromoted (``p.grad_sample`` stays
        ``None``) and, with more batches, adds them to the earlier ones. Opacus refuses the step
        ("Per sample gradient is not initialized"); without this check the step would release
        noise only. Whether it happens depends on the loop, never on the data.
        """
        stale = [tuple(p.shape) for p in self.params
                 if _compat.unpromoted_grad_sample(p) is not None]
        if stale:
            raise ValueError(
                f"optimizer.step() after a backward pass whose per-example gradients Opacus did "
                f"not finish (parameters of shapes {stale}): a forward pass with gradients "
                f"enabled and no backward pass of its own ran before this batch's (e.g. "
                f"printing or evaluating model(x) in the training loop). Run such forward "
                f"passes under torch.no_grad() or in model.eval(). No step was taken; the "
                f"model's per-example bookkeeping is now out of step, so call make_private "
                f"again on a fresh module.")

    def _ensure_grad_samples(self) -> int:
        """Fill missing per-sample gradients with zeros; return the batch size."""
        sizes = [len(p.grad_sample) if isinstance(p.grad_sample, torch.Tensor) else
                 sum(len(g) for g in p.grad_sample)
                 for p in self.params if getattr(p, "grad_sample", None) is not None]
        batch = max(sizes) if sizes else 0
        for p in self.params:
            if getattr(p, "grad_sample", None) is None:
                # No backward reached this parameter (e.g. an empty batch): zero gradients,
                # never the unclipped p.grad of some other code path.
                p.grad_sample = torch.zeros(batch, *p.shape, dtype=p.dtype, device=p.device)
        return batch

    def clip_and_accumulate(self) -> None:
        """Per-example clipping (per group); non-finite examples zeroed; diagnostic counts."""
        samples = [self._get_flat_grad_sample(p) for p in self.params]
        batch = len(samples[0]) if samples else 0
        # An example whose gradient has a NaN or inf anywhere contributes zero: its clip factor
        # is 0 and its rows are replaced by zeros (0·inf would be NaN). This depends on that
        # example alone, so the sum keeps sensitivity C.
        finite = torch.ones(batch, dtype=torch.bool)
        for g in samples if batch else []:
            finite &= torch.isfinite(g.reshape(batch, -1)).all(dim=1).cpu()
        nonfinite = int(batch - finite.sum())
        if nonfinite:
            samples = [torch.where(finite.to(g.device).view(-1, *[1] * (g.dim() - 1)), g,
                                   torch.zeros((), dtype=g.dtype, device=g.device))
                       for g in samples]
        index = {id(p): i for i, p in enumerate(self.params)}
        factors = {}
        # The clip groups follow a clip norm the mode moved (adaptive clipping) BEFORE they are
        # read: the rows are clipped with the C this step's noise is scaled by (before issue
        # 46's fix they were clipped with the previous step's C, above it when C shrank).
        self._sync_clip_groups()
        # A parameter frozen since make_private (``requires_grad_(False)``) is in no step: it
        # gets no per-example gradient, no noise and no update; its clip group clips the rest.
        groups = [([p for p in group if id(p) in index], norm) for group, norm in self.clip_groups]
        bound_count, largest_ratio = 0, 0.0
        unclipped, clipped_any = 0, None
        row_norms: list[torch.Tensor | None] = []
        for (group, norm), certified in zip(groups, self._certified_flags, strict=True):
            if not group:
                row_norms.append(None)
                continue
            if batch == 0:
                factor = torch.zeros(0, dtype=torch.float64)
                norms = torch.zeros(0, dtype=torch.float64)
            else:
                norms = torch.stack(
                    [samples[index[id(p)]].reshape(batch, -1).double().norm(2, dim=-1).cpu()
                     for p in group], dim=1).norm(2, dim=1)
                factor = self._clip_factor(norm, norms) * finite
            row_norms.append(norms)
            binding = self._binding(norm, norms)
            unclipped = int((~binding).sum())
            if certified:
                bound_count = max(bound_count, int(binding.sum()))
                if batch:
                    largest_ratio = max(largest_ratio, float(norms.max()) / norm)
            clipped_any = binding if clipped_any is None else clipped_any | binding
            for p in group:
                factors[id(p)] = factor
        # Clipped rows in float64 whatever the parameters' dtype (a float32 product of a
        # subnormal factor and a huge gradient rounds above C), and, per clip group, a factor
        # whose clipped norm (factor × the float64 row norm) exceeds C less a rounding margin
        # lowered to it: no example's contribution to the sum exceeds its clip norm. The sum
        # stays in float64 until the noise is added (:meth:`add_noise`); rounding the noisy
        # sum to the parameters' dtype is post-processing.
        for (group, norm), group_norms in zip(groups, row_norms, strict=True):
            if group and batch and group_norms is not None:
                safe = _at_most(norm, factors[id(group[0])], group_norms,
                                sum(p.numel() for p in group))
                for p in group:
                    factors[id(p)] = safe
        for p, g in zip(self.params, samples, strict=True):
            grad = torch.einsum("i,i...", factors[id(p)].to(g.device, torch.float64),
                                g.to(torch.float64))
            p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad
            p.grad_sample = None
        clear_unreleased(self.params)
        self._clear_frozen_grad_samples()
        stats = self._step_stats
        stats["batch_examples"] = stats.get("batch_examples", 0) + batch
        stats["nonfinite_examples"] = stats.get("nonfinite_examples", 0) + nonfinite
        stats["certified_bound_violations"] = (stats.get("certified_bound_violations", 0)
                                               + bound_count)
        stats["clipped"] = stats.get("clipped", 0) + (int(clipped_any.sum())
                                                      if clipped_any is not None else 0)
        stats["largest_norm_ratio"] = max(stats.get("largest_norm_ratio", 0.0), largest_ratio)
        stats["unclipped"] = stats.get("unclipped", 0) + unclipped


    def _sync_clip_groups(self) -> None:
        """Before clipping: set the clip groups from the clip norm a mode moved (adaptive
        clipping); nothing here."""

    def _clip_factor(self, norm: float, norms: torch.Tensor) -> torch.Tensor:
        r"""Each example's factor for clip norm ``norm`` and row norms ``norms``:
        :math:`\min(1, C/(\lVert g\rVert + 10^{-6}))`."""
        return (norm / (norms + 1e-6)).clamp(max=1.0)

    def _binding(self, norm: float, norms: torch.Tensor) -> torch.Tensor:
        """Which examples' clip binds (a diagnostic count)."""
        return norms > norm * (1.0 + _BIND_RTOL)

    def _credit(self) -> CreditResult | None:
        """This step's credited shot variance (:class:`~.ShotNoiseCreditDPOptimizer`); none
        here."""
        return None

    def add_noise(self) -> None:
        r"""Add Gaussian noise whose level never depends on the batch.

        Without credit: std :math:`\sigma s C` on every coordinate, :math:`s` = 2 under
        replace-one adjacency and 1 otherwise (the largest change one example makes to the
        clipped sum is :math:`sC`). With a credit mode: std :math:`\sigma_{floor} s C` on the
        credited (quantum) coordinates, *whatever the credit*, and :math:`\sigma s C`
        elsewhere. The noise level must not depend on the current batch: two Gaussians whose
        variances differ between neighbouring data sets are distinguishable through the
        variance alone (for σ vs σ_floor of the audit setting, δ(ε = 3) ≈ 6·10⁻³ with
        identical means; docs/noise.md). The shot noise credited for the batch only enters
        the *credited* noise multiplier
        :math:`\sigma^{cr}_t = \sqrt{\min_k(\mathrm{added}_k + \mathrm{credit}_k)}/(sC)`, an
        approximation reported beside the proven one.
        """
        clip = self.max_grad_norm
        scale = self.sensitivity_factor * clip  # the sensitivity the noise is calibrated for
        sigma = self._gradient_noise_multiplier(self.noise_multiplier)
        credit = self._credit()
        tally = NoiseTally()
        every = self._all_params()
        position = {id(q): i for i, q in enumerate(every)}  # this step's parameters only
        self._released_total += [None] * (len(every) - len(self._released_total))
        for p in self.params:
            n = p.numel()
            var, total, mult, credited = self._coordinate_variance(p, sigma, scale, credit)
            tally.credited += credited
            if n:
                tally.min_multiplier = min(tally.min_multiplier, mult)
                tally.min_total = min(tally.min_total, float(total.min()))
            tally.added += float(var.sum())
            tally.coordinates += n
            tally.signal += float(p.summed_grad.double().pow(2).sum())
            tally.released += self._release(p, var, position[id(p)])
        self._released_variance += tally.added
        self._after_release()
        proven, credited_multiplier = self._proven_multipliers(tally, scale)
        self._step_stats.update(
            proven_noise_multiplier=float(proven),
            credited_noise_multiplier=float(credited_multiplier),
            **self._noise_stats(tally, sigma, scale, clip),
            # None: no shot statistics are recorded without a credit mode (not a measured 0)
            shot_variance_estimate_mean=(float(credit.estimate.mean()) if credit is not None
                                         else None),
            shot_variance_lower_bound_mean=(float(credit.lower_bound.mean())
                                            if credit is not None else None),
        )

    def _gradient_noise_multiplier(self, sigma: float) -> float:
        """The noise multiplier of the gradient sum at the σ currently set: σ itself here
        (adaptive clipping spends part of it on its count)."""
        return sigma

    def _coordinate_variance(self, p: Any, sigma: float, scale: float,
                             credit: CreditResult | None
                             ) -> tuple[torch.Tensor, torch.Tensor, float, float]:
        """The noise variance of ``p``'s coordinates, their total with the credited shot
        variance, their noise multiplier and the credited variance's sum: :math:`(\\sigma s
        C)^2` everywhere here (a credit mode lowers its coordinates to the floor)."""
        var = torch.full((p.numel(),), (sigma * scale) ** 2, dtype=torch.float64)
        return var, var, sigma, 0.0

    def _release(self, p: Any, var: torch.Tensor, index: int) -> float:
        """Add the noise of variance ``var`` to ``p``'s clipped sum (the release, ``p.grad``),
        add it to the running released sum at ``index``; returns its squared norm."""
        noise = (self._standard_normal(p.numel()) * var.sqrt()).reshape(p.shape)
        # the release: the float64 noisy sum (its rounding to p's dtype is post-processing)
        p.grad = (p.summed_grad.to(torch.float64) + noise.to(p.summed_grad.device)
                  ).to(p.dtype).view_as(p)
        released = float(p.grad.double().pow(2).sum())
        so_far = self._released_total[index]
        self._released_total[index] = (p.grad.detach().double().clone() if so_far is None
                                       else so_far.add_(p.grad.detach().double()))
        p.summed_grad = None
        return released

    def _after_release(self) -> None:
        """After the noise: a mode's further release (adaptive clipping's count); none
        here."""

    def _proven_multipliers(self, tally: NoiseTally, scale: float) -> tuple[float, float]:
        """The step's proven noise multiplier :math:`\\min_k \\mathrm{std}_k/(sC)` and the
        credited one (never below it); σ for a step without coordinates."""
        if not math.isfinite(tally.min_multiplier):
            return self.noise_multiplier, self.noise_multiplier
        proven = tally.min_multiplier
        return proven, max(math.sqrt(tally.min_total) / scale, proven)

    def _noise_stats(self, tally: NoiseTally, sigma: float, scale: float,
                     clip: float) -> dict[str, Any]:
        """The step record's fields on the noise (the releases' norms and variances are DP
        releases: the diagnosis estimates the signal from them, at no privacy cost)."""
        added, coords = tally.added, tally.coordinates
        return dict(
            noise_multiplier=float(self.noise_multiplier),
            noise_std=float(sigma * scale),
            sensitivity=float(scale),
            artificial_variance_mean=added / max(coords, 1),
            gradient_snr=math.sqrt(tally.signal / added) if added > 0 else math.inf,
            released_sum_norm=math.sqrt(tally.released),
            noise_variance_total=added,
            released_total_norm=math.sqrt(sum(float(t.pow(2).sum())
                                              for t in self._released_total if t is not None)),
            noise_variance_cumulative=self._released_variance,
            coordinates=coords,
            credited_variance_mean=tally.credited / max(coords, 1),
            target_variance=(self.noise_multiplier * scale) ** 2,
            clip_norm=clip,
            clip_norms=[float(c) for _, c in self.clip_groups],
        )

    def scale_grad(self) -> None:
        """Divide by the public expected batch size b (times accumulated virtual steps)."""
        if self.loss_reduction == "mean":
            k = self._scale_iterations
            for p in self.params:
                p.grad /= self.expected_batch_size * k

    # ------------------------------------------------------------------ the step
    def _clear_frozen_grad_samples(self) -> None:
        """Drop the gradients and per-example gradients of frozen parameters.

        Opacus clears and privatises trainable parameters only: a weight frozen after a
        backward pass would keep its rows and, once unfrozen, add them to a later batch's
        (opacus#409, #542), and would keep the plain (unclipped, noiseless) ``.grad`` of that
        backward pass, which the wrapped optimizer would apply (torch's optimizers step every
        parameter with a gradient, frozen or not).
        """
        for group in self.original_optimizer.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    if getattr(p, "grad_sample", None) is not None:
                        p.grad_sample = None
                    p.grad = None

    def zero_grad(self, set_to_none: bool = False) -> None:
        """Clear gradients, per-sample gradients (of frozen parameters too) and the shot
        recorder."""
        for p in self.params:
            if not hasattr(p, "grad_sample"):
                p.grad_sample = None
        self._clear_frozen_grad_samples()
        super().zero_grad(set_to_none)
        if self.recorder is not None:
            self.recorder.clear()
        if not self._is_last_step_skipped:
            self._step_stats = {}


    def _check_noise_multiplier(self) -> float:
        """The σ actually set (a scheduler may change it), checked before the step (a mode
        adds its own checks)."""
        return check_positive_float(self.noise_multiplier, "optimizer.noise_multiplier")

    def _refresh_clip(self) -> None:
        """Before clipping: a clip norm a mode recomputes from public information (the public
        per-epoch clip); nothing here."""

    def pre_step(self, closure: Callable[[], float] | None = None) -> bool:
        """Clip, noise, scale and charge the ledger (Opacus's pre-step)."""
        sigma = self._check_noise_multiplier()
        if self._ledger_hook is not None:
            self._ledger_hook.before_step(sigma)
        self._check_one_batch()
        self._check_promoted()
        self._ensure_grad_samples()
        self._scale_iterations = self.accumulated_iterations
        # BatchMemoryManager: which logical batch these rows belong to. Rows accumulated for
        # another one (a loop left it unfinished) are discarded, never released with these.
        chunk, self._latest_chunk = self._latest_chunk, None
        self._step_skip_queue.clear()  # the physical batch is told by `chunk`, not the queue
        owner = chunk[1] if chunk is not None else None
        if self._accumulating is not None and self._accumulating != owner:
            self._discard_accumulated()
        self._refresh_clip()
        self.clip_and_accumulate()
        if chunk is not None and chunk[0]:
            self._accumulating = owner
            self._is_last_step_skipped = True
            return False
        self._accumulating = None
        if chunk is not None:
            self._check_loader(owner)
        else:
            self._check_loader()
        self._gather_step()
        self.add_noise()
        self.scale_grad()
        if self.step_hook:
            self.step_hook(self)
        self._is_last_step_skipped = False
        self._record_step(sigma)
        self._step_stats = {}
        return True

    def _record_step(self, sigma: float) -> None:
        """Charge the ledger (its step hook) and append the step's :class:`StepRecord`."""
        stats = self._step_stats
        hook = self._ledger_hook
        if hook is not None:
            hook.after_step(sigma, stats, credited=self.credit != "none")
        record = StepRecord(
            step=len(self._history) + 1,
            credit_mode=self.credit,
            batch_examples=stats.get("batch_examples", 0),
            clipped=stats.get("clipped", 0),
            clipped_fraction=(stats.get("clipped", 0) / stats["batch_examples"]
                              if stats.get("batch_examples") else 0.0),
            certified_bound_violations=stats.get("certified_bound_violations", 0),
            largest_certified_norm_ratio=stats.get("largest_norm_ratio", 0.0),
            nonfinite_examples=stats.get("nonfinite_examples", 0),
            certified=self.certified,
            adjacency=self.adjacency,
            **{k: stats[k] for k in ("proven_noise_multiplier", "credited_noise_multiplier",
                                     "noise_multiplier", "noise_std", "sensitivity",
                                     "artificial_variance_mean",
                                     "credited_variance_mean", "target_variance", "clip_norm",
                                     "clip_norms", "gradient_snr", "released_sum_norm",
                                     "noise_variance_total", "released_total_norm",
                                     "noise_variance_cumulative", "coordinates",
                                     "shot_variance_estimate_mean",
                                     "shot_variance_lower_bound_mean")},
        )
        for key in ("next_clip_norm", "released_centred_unclipped_count"):
            if key in stats:
                record[key] = stats[key]
        self._history.append(record)
        if hook is not None:
            self._unresolved.append((record, hook.ledger.steps))

    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Clip, noise and step; returns the wrapped optimizer's return value.

        Raises:
            PrivacyBudgetExceededError: if the ledger's target would be exceeded at the noise
                multiplier currently set (before any change to the parameters).
            ValueError: after several backward passes or Poisson batches without a step, or
                for a noise multiplier the clip mode cannot use (before any change).
        """
        if closure is not None:
            with torch.enable_grad():
                closure()
        if self.pre_step():
            before = [p.detach().clone() for p in self.params]
            out = self.original_optimizer.step()
            # The parameters are released after every step, so how far they moved is public
            # (post-processing): :func:`~.diagnosis.stuck_run_cause` reads it.
            moved = math.sqrt(sum(float((p.detach() - b).double().pow(2).sum())
                                  for p, b in zip(self.params, before, strict=True)))
            size = math.sqrt(sum(float(b.double().pow(2).sum()) for b in before))
            if self._history:
                self._history[-1]["parameter_step_norm"] = moved
                self._history[-1]["parameter_norm"] = size
            if self.planned_steps and len(self._history) == self.planned_steps:
                cause = self.stuck_run_cause()
                if cause is not None:  # one line at the planned end of the run
                    warnings.warn(f"private run ended ({self.planned_steps} steps): {cause}",
                                  PrivacyWarning, stacklevel=2)
            return out
        return None

    def stuck_run_cause(self, **names: str) -> str | None:
        """Why this run may not learn, from its released values and public synthetic inputs.

        :func:`~.diagnosis.stuck_run_cause` on :attr:`history` with this optimizer's
        :attr:`public_gradient_norm` (no privacy cost: post-processing of the releases).

        Args:
            **names: ``batch_argument``, ``lr_argument``, ``epsilon_argument``,
                ``clip_argument``, ``epochs_argument``: how the message names them.

        Returns:
            str | None: one line naming each cause found and what to change, or ``None``.
        """
        from .diagnosis import stuck_run_cause

        # the records' ε are not read by the diagnosis: leave them unresolved (no composition)
        return stuck_run_cause(self._history, public_gradient_norm=self.public_gradient_norm,
                               **names)

    # ------------------------------------------------------------------ step records
    @property
    def history(self) -> list[StepRecord]:
        """The :class:`StepRecord` of every step, oldest first (the list itself).

        Each record's ``epsilon`` and ``credited_epsilon`` (the ledger's proven and credited ε
        after that step, nats) are composed when the history is read, not during the step:
        the step's budget check is O(1) (:meth:`PrivacyLedger.would_exceed`), and a run that
        reads its history once per epoch pays its compositions then. The numbers are the
        ones composed at the step would have been (:meth:`PrivacyLedger.epsilon_at`).
        """
        self._resolve_epsilons()
        return self._history

    @history.setter
    def history(self, records: list[StepRecord]) -> None:
        self._history = list(records)
        self._unresolved = []

    @property
    def last_record(self) -> StepRecord | None:
        """The last step's :class:`StepRecord` (``None`` before the first step)."""
        self._resolve_epsilons()
        return self._history[-1] if self._history else None

    def _resolve_epsilons(self) -> None:
        """Fill in ε of the records made since the history was last read."""
        if not self._unresolved or self.ledger is None:
            return
        pending, self._unresolved = self._unresolved, []
        for record, steps in pending:
            record["epsilon"] = self.ledger.epsilon_at(steps)
            record["credited_epsilon"] = self.ledger.epsilon_at(steps, credited=True)

    # ------------------------------------------------------------------ persistence
    def state_dict(self, *, diagnostics: bool = False) -> dict[str, Any]:
        """Everything the next step depends on, for an exact resume.

        The wrapped optimizer's state, the noise multiplier currently set (a scheduler may have
        changed it), every clip norm the noise depends on (the flat one and each clip group's,
        adaptive or public ones included), the noise generator's state, the ledger, and the
        step history. The history keeps only data-independent fields (or releases: the
        adaptive clip norm) unless ``diagnostics=True``; counts of clipped or non-finite
        examples depend on the private batch and are not protected.

        Args:
            diagnostics: also keep the data-dependent fields of the step records.

        Returns:
            dict: read back by :meth:`load_state_dict`.
        """
        keep = None if diagnostics else PUBLIC_RECORD_KEYS
        return {
            "expected_batch_size": float(self.expected_batch_size),
            "optimizer": self.original_optimizer.state_dict(),
            "history": [{k: v for k, v in r.items() if keep is None or k in keep}
                        for r in self.history],
            "max_grad_norm": self.max_grad_norm,
            "clip_norms": [float(c) for _, c in self.clip_groups],
            "clip_norm_schedule": [dict(e) for e in self.clip_norm_schedule],
            "noise_multiplier": float(self.noise_multiplier),
            "generator": self.generator.get_state() if self.generator is not None else None,
            "ledger": self.ledger.state_dict() if self.ledger is not None else None,
            **self.running_release_state(),
        }

    def _all_params(self) -> list[torch.nn.Parameter]:
        return [p for group in self.original_optimizer.param_groups for p in group["params"]]

    def running_release_state(self) -> dict[str, Any]:
        """The running sum of the released noisy sums (one tensor or ``None`` per parameter of
        the wrapped optimizer, in its order) and of their noise variances: DP releases, kept so
        that a resumed run's diagnosis (:func:`~.diagnosis.stuck_run_cause`) is the
        uninterrupted run's."""
        totals = self._released_total + [None] * (len(self._all_params())
                                                  - len(self._released_total))
        return {"released_total": [None if t is None else t.detach().cpu().clone()
                                   for t in totals],
                "released_variance": float(self._released_variance)}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved.

        Raises:
            ValueError: if the saved clip groups do not match this optimizer's, or the saved
                expected batch size (the public divisor, also the ledger's) is not this
                optimizer's: the resumed run would release sums divided by another constant.
        """
        saved_b = [state_dict.get("expected_batch_size")]
        if state_dict.get("ledger") is not None:
            saved_b.append(state_dict["ledger"].get("expected_batch_size"))
        for b in saved_b:
            if b is not None and float(b) != float(self.expected_batch_size):
                raise ValueError(
                    f"`expected_batch_size` of the saved state ({float(b):g}) is not this "
                    f"optimizer's ({float(self.expected_batch_size):g}): the public divisor of "
                    f"the noisy sum must stay the same when a run is resumed.")
        self.original_optimizer.load_state_dict(state_dict["optimizer"])
        self._released_total, self._released_variance = [], 0.0
        totals = state_dict.get("released_total")
        if totals is not None:  # else (an older state) the diagnosis's running sums restart
            params = self._all_params()
            if len(totals) != len(params):
                raise ValueError(f"`released_total` has {len(totals)} entries; this optimizer "
                                 f"has {len(params)} parameters.")
            self._released_total = [
                None if t is None else torch.as_tensor(t, dtype=torch.float64).to(p.device)
                .reshape(p.shape).clone() for p, t in zip(params, totals, strict=True)]
            self._released_variance = float(state_dict.get("released_variance", 0.0))
        self.history = [StepRecord(r) for r in state_dict["history"]]
        self._max_grad_norm = float(state_dict["max_grad_norm"])
        self.clip_norm_schedule = [dict(e) for e in state_dict.get("clip_norm_schedule") or []]
        norms = state_dict.get("clip_norms")
        if norms is not None:
            if len(norms) != len(self.clip_groups):
                raise ValueError(f"`clip_norms` has {len(norms)} entries; this optimizer has "
                                 f"{len(self.clip_groups)} clip groups.")
            self.clip_groups = [(g, float(c))
                                for (g, _), c in zip(self.clip_groups, norms, strict=True)]
        if state_dict.get("noise_multiplier") is not None:
            self.noise_multiplier = float(state_dict["noise_multiplier"])
        if state_dict.get("generator") is not None and self.generator is not None:
            self.generator.set_state(state_dict["generator"])
        if state_dict.get("ledger") is not None and self.ledger is not None:
            self.ledger.load_state_dict(state_dict["ledger"])
