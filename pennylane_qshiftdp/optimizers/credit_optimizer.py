r"""Shot-noise credit as an optimizer: :class:`ShotNoiseCreditDPOptimizer` and its
:class:`CreditSettings`.

With a credit mode the quantum coordinates get exactly the floor
:math:`\sigma_{\mathrm{floor}} C` of Gaussian noise at every step (a level that never depends
on the batch) and the batch's credited shot noise (:func:`~.shot_noise_credit`) only enters
the *credited* noise multiplier. The hooks it overrides: the credited variance, the noise of
the credited coordinates and the check of the σ set (it must stay above the floor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch

from .._validation import check_beta, check_nonnegative_float, check_positive_float
from ..credit.shot_noise import (
    CREDIT_MODES,
    CreditResult,
    confidence_multiplier,
    shot_noise_credit,
)
from .optimizer import QShiftDPOptimizer

if TYPE_CHECKING:
    from ..gradients.shot_statistics import ShotRecorder
    from ..qnn.torch_layer import TorchLayer

__all__ = ["CreditSettings", "ShotNoiseCreditDPOptimizer", "check_credit_clipping"]

_ADAPTIVE_CREDITS = ("adaptive", "isotropic")


def check_credit_clipping(credit: str, certified: Any, adaptive_clipping: bool = False) -> None:
    """Refuse a credit mode without certified clipping (or with adaptive clipping).

    Args:
        credit: the credit mode.
        certified: the ``certified`` setting (a bool, or one bool per clip group).
        adaptive_clipping: adaptive clipping is on.

    Raises:
        NotImplementedError: for a credit mode other than ``"none"`` without it.
    """
    if credit != "none" and (not certified or adaptive_clipping):
        raise NotImplementedError(
            f"credit={credit!r} needs certified clipping (max_grad_norm='certified'): "
            f"the credit counts the shot noise of unclipped gradients.")


@dataclass(frozen=True)
class CreditSettings:
    """The settings of a shot-noise credit mode, checked once when made.

    Args:
        mode: ``"depolarizing"``, ``"adaptive"`` or ``"isotropic"``.
        credit_layer: the :class:`pennylane.qnn.TorchLayer` whose weights get the credit.
        recorder: the :class:`~.ShotRecorder` attached to its QNode.
        noise_floor_multiplier: :math:`\\sigma_{\\mathrm{floor}} > 0`, the noise the quantum
            coordinates get at every step (in units of C); must be below σ.
        beta: failure probability of the adaptive bound over the run (adaptive/isotropic).
        variance_floor: proven :math:`v_{\\min}` (``depolarizing``; floor of ``adaptive``).
        confidence: ``"gaussian"`` or ``"cantelli"`` multiplier for the adaptive credit.
        outcome_range: ``(lo, hi)`` of every single-shot outcome of the measured observable
            (default ``(-1, 1)``, Pauli words).

    Raises:
        ValueError: for an unknown mode, ``"none"``, a missing layer, recorder or floor, or an
            invalid β, variance floor or noise floor.
    """

    mode: str
    credit_layer: TorchLayer | None = None
    recorder: ShotRecorder | None = None
    noise_floor_multiplier: float | None = None
    beta: float = 0.0
    variance_floor: float = 0.0
    confidence: str = "gaussian"
    outcome_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        mode = self.mode
        if mode not in CREDIT_MODES:
            raise ValueError(f"`credit` must be one of {CREDIT_MODES}. Found {mode!r}.")
        if mode == "none":
            raise ValueError("CreditSettings are those of a credit mode; credit='none' has "
                             "none (use get_optimizer_class(clipping) without a credit).")
        check_beta(self.beta, "beta", required=mode in _ADAPTIVE_CREDITS)
        check_nonnegative_float(self.variance_floor, "variance_floor")
        if self.credit_layer is None or self.recorder is None:
            raise ValueError(f"credit={mode!r} needs the quantum layer (`credit_layer`) "
                             f"and the `recorder` attached to its QNode.")
        if self.noise_floor_multiplier is None:
            raise ValueError(f"credit={mode!r} needs `noise_floor_multiplier` (the "
                             f"smallest noise the credit may leave, in units of C).")
        check_positive_float(self.noise_floor_multiplier, "noise_floor_multiplier")


class ShotNoiseCreditDPOptimizer(QShiftDPOptimizer):
    """:class:`~pennylane_qshiftdp.QShiftDPOptimizer` with shot-noise credit on a quantum
    layer's weights (certified clipping only).

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        credit_settings: the :class:`CreditSettings`.
        **common: the settings every mode shares (:class:`~pennylane_qshiftdp.QShiftDPOptimizer`);
            ``certified`` must be on, and ``steps`` (the planned T, for the Bonferroni
            correction) is required by the adaptive and isotropic credits.

    Raises:
        NotImplementedError: without certified clipping.
        ValueError: for a noise floor not below σ, or no planned ``steps`` with an adaptive
            credit.
    """

    _selects_mode = False

    def __init__(self, optimizer: torch.optim.Optimizer, *, credit_settings: CreditSettings,
                 **common: Any):
        s = credit_settings
        check_credit_clipping(s.mode, common.get("certified", False))
        super().__init__(optimizer, **common)
        sigma = float(self.noise_multiplier)
        floor = float(s.noise_floor_multiplier or 0.0)
        if floor >= sigma:
            raise ValueError(
                f"`noise_floor_multiplier` must be below `noise_multiplier` = {sigma:g} "
                f"(otherwise no shot noise can be credited). Found {s.noise_floor_multiplier}.")
        steps = common.get("steps")
        adaptive = s.mode in _ADAPTIVE_CREDITS
        if adaptive and (steps is None or steps < 1):
            raise ValueError(f"`steps` (planned T) must be a positive integer for "
                             f"credit={s.mode!r}. Found {steps!r}.")
        assert s.credit_layer is not None  # CreditSettings checks it
        self.credit_settings = s
        self.credit = s.mode
        self.credit_layer = s.credit_layer
        self.recorder = s.recorder
        self.beta = float(s.beta)
        self.variance_floor = float(s.variance_floor)
        self.outcome_range = cast("tuple[float, float]", tuple(s.outcome_range)
                                  if s.outcome_range is not None else (-1.0, 1.0))
        self.noise_floor_multiplier = floor
        self._credit_params = list(s.credit_layer.qnode_weights.values())
        # Each credited weight's coordinates in the credit vector (the layer's flattened
        # weights, frozen ones included).
        self._credit_slices: dict[int, tuple[int, int]] = {}
        start = 0
        for q in self._credit_params:
            self._credit_slices[id(q)] = (start, start + q.numel())
            start += q.numel()
        self.z = (confidence_multiplier(beta=s.beta, steps=int(steps or 0), coordinates=start,
                                        method=s.confidence) if adaptive else None)

    def _check_noise_multiplier(self) -> float:
        sigma = super()._check_noise_multiplier()
        floor = self.noise_floor_multiplier
        if floor is not None and floor >= sigma:
            raise ValueError(
                f"`noise_multiplier` was set to {sigma:g}, not above the credit's noise floor "
                f"{floor:g}; no step was taken.")
        return sigma

    def _credit(self) -> CreditResult | None:
        """Per-coordinate credited variance of the credit layer's weights (or ``None``)."""
        layer, recorder = self.credit_layer, self.recorder
        assert recorder is not None  # a credit mode requires it
        # The grad sampler's record of this step's backward pass: consumed here, so no later
        # step can read it; one whose rows are not this step's examples earns no credit.
        sample = layer.evaluations.last_grad_sample
        layer.evaluations.last_grad_sample = None
        stats = recorder.statistics
        batch = self._step_stats.get("batch_examples", 0)
        if batch == 0 or len(stats) == 0 or sample is None or len(sample.backprops) != batch:
            return None
        if stats.call.max() > 0:
            raise NotImplementedError(
                f"The recorder holds {stats.call.max() + 1} gradient calls; shot-noise credit "
                f"needs one forward/backward per step (no virtual steps, no second forward)."
            )
        ev, backprops = sample.evaluation, sample.backprops
        if backprops.shape[1] != 1:
            raise NotImplementedError("Shot-noise credit supports one scalar output per example.")
        return shot_noise_credit(stats, jacobian=ev.tape_to_weight_jacobian(),
                                 loss_weights=backprops[:, 0].numpy(), mode=self.credit,
                                 variance_floor=self.variance_floor, z=self.z,
                                 outcome_range=self.outcome_range)

    def _coordinate_variance(self, p: Any, sigma: float, scale: float,
                             credit: CreditResult | None
                             ) -> tuple[torch.Tensor, torch.Tensor, float, float]:
        where = self._credit_slices.get(id(p))
        if where is None:
            return super()._coordinate_variance(p, sigma, scale, credit)
        # data-independent: the floor, whatever the batch
        n, floor = p.numel(), self.noise_floor_multiplier
        assert floor is not None  # set by __init__
        var = torch.full((n,), (floor * scale) ** 2, dtype=torch.float64)
        lo, hi = where
        c = (torch.as_tensor(credit.credit[lo:hi], dtype=torch.float64)
             if credit is not None else torch.zeros(n, dtype=torch.float64))
        return var, var + c, floor, float(c.sum())
