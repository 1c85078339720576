r"""Refuse a training plan whose cost is absurd, before the first step.

Two costs are known before training: the noise and the time.

* **Noise.** The plan's noise multiplier :math:`\sigma` (from the accountant, for the target
  (ε, δ), the sampling rate :math:`q` and the :math:`T` steps) sets the Gaussian noise
  :math:`\mathcal N(0, \sigma^2 C^2)` added to every coordinate of a step's sum of clipped
  gradients; the optimizer divides the sum by the expected batch size :math:`qN`, so SGD with
  learning rate :math:`\eta` moves every weight by noise of standard deviation
  :math:`\eta\sigma C / (qN)` per step. The quantum weights are rotation angles: when that
  exceeds :data:`MAX_UPDATE_NOISE` = π (half a period) each step scrambles the weights, whatever
  the data, and the plan comes from a typo (``--epochs 100000000`` at ε = 1 gives σ ≈ 28 800,
  which moves every angle by about 100·C radians per step) or a budget far too small for the
  data. The threshold is on σ: refused when :math:`\sigma > \pi\,qN / (\eta C)`.
* **Time.** :math:`T` steps times the wall time of one step, measured here on a probe: the
  job's model on a batch of public inputs (the middle of the input domain; no training example
  is read), one warm-up step, then one timed step, scaled to the expected batch size. A plan
  above :data:`MAX_HOURS` is refused.

Both thresholds are documented defaults; ``qshiftdp train --skip-plan-check``
(``train(..., skip_plan_check=True)``) trains anyway. Neither check reads the private data:
σ, q, T, C (the certified bound, the public clip norm or a fixed one) and the probe are
functions of public settings (N is public, as in Opacus).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = ["MAX_HOURS", "MAX_UPDATE_NOISE", "Plan", "check_plan", "probe_step_seconds",
           "steps_left"]

#: A plan whose estimated training time exceeds this many hours is refused.
MAX_HOURS = 24.0

#: A plan is refused when the noise added to every weight per step, learning rate × σC / qN,
#: has a standard deviation above this (radians: half the period of a rotation angle).
MAX_UPDATE_NOISE = math.pi


class Plan:
    """What a training plan costs (public numbers only).

    Args:
        steps: steps still to take.
        noise_multiplier: σ (``None`` without noise: the non-private baseline).
        expected_batch_size: qN, the divisor of the noisy sum.
        clip_norm: C at the start (the certified bound, the public clip norm or a fixed one).
        lr: the SGD learning rate η.
        seconds_per_step: from :func:`probe_step_seconds` (``None``: not measured).
    """

    def __init__(self, *, steps: int, noise_multiplier: float | None,
                 expected_batch_size: float, clip_norm: float | None = None,
                 lr: float | None = None, seconds_per_step: float | None = None):
        self.steps = int(steps)
        self.noise_multiplier = noise_multiplier
        self.expected_batch_size = float(expected_batch_size)
        self.clip_norm = clip_norm
        self.lr = lr
        self.seconds_per_step = seconds_per_step

    @property
    def update_noise(self) -> float | None:
        """Standard deviation of the noise on every weight per step, η σ C / qN (radians)."""
        sigma, clip_norm, lr = self.noise_multiplier, self.clip_norm, self.lr
        if sigma is None or clip_norm is None or lr is None:
            return None
        return lr * sigma * clip_norm / self.expected_batch_size

    @property
    def hours(self) -> float | None:
        """Estimated training time in hours (``None`` without a probe)."""
        if self.seconds_per_step is None:
            return None
        return self.steps * self.seconds_per_step / 3600.0

    def problems(self) -> list[str]:
        """The reasons the plan is absurd, each with its numbers (empty: the plan is fine).

        Example:
            >>> Plan(steps=500_000_000, noise_multiplier=28800.0, expected_batch_size=54,
            ...      clip_norm=1.3, lr=0.2, seconds_per_step=0.07).problems()[0][:72]
            'σ = 28800 adds noise of standard deviation 139 to every weight per step '
        """
        out = []
        noise = self.update_noise
        if noise is not None and noise > MAX_UPDATE_NOISE:
            # update_noise is None unless σ, C and η are all set
            assert self.lr is not None and self.clip_norm is not None
            sigma_max = MAX_UPDATE_NOISE * self.expected_batch_size / (self.lr * self.clip_norm)
            out.append(
                f"σ = {self.noise_multiplier:.6g} adds noise of standard deviation "
                f"{noise:.3g} to every weight per step (learning rate {self.lr:g} x σ x clip "
                f"norm C = {self.clip_norm:.4g} / expected batch qN = "
                f"{self.expected_batch_size:.4g}), above π radians (half a rotation): every "
                f"step scrambles the weights (σ must be at most {sigma_max:.4g} here)")
        hours = self.hours
        if hours is not None and hours > MAX_HOURS:
            out.append(
                f"the estimated training time is {_duration(hours)} ({self.steps} steps x "
                f"{self.seconds_per_step:.3g} s per step, measured on a probe step of public "
                f"inputs on this machine), above {MAX_HOURS:g} hours")
        return out


def _duration(hours: float) -> str:
    if hours >= 48:
        return f"about {hours:,.0f} hours ({hours / 24:,.0f} days)"
    return f"about {hours:.3g} hours"


def check_plan(plan: Plan) -> None:
    """Raise when ``plan`` is absurd (see the module docstring), naming every reason.

    Args:
        plan: the plan.

    Raises:
        ValueError: with σ, qN, the steps and the time estimate, and how to proceed.

    Example:
        >>> check_plan(Plan(steps=50, noise_multiplier=2.2, expected_batch_size=54,
        ...                 clip_norm=1.3, lr=0.2, seconds_per_step=0.05))
    """
    problems = plan.problems()
    if problems:
        raise ValueError(
            "the training plan is refused before the first step: " + "; and ".join(problems)
            + ". Lower `epochs`, raise `epsilon` or `expected_batch_size` (or use fewer "
            "qubits or layers), or pass `skip_plan_check` to train anyway.")


def probe_step_seconds(step: Callable[[int], None], *, batch: int,
                       expected_batch_size: float) -> float:
    r"""Seconds per training step, from a probe: ``step(batch)`` once to warm up, once timed.

    Args:
        step: runs one forward and backward pass of a fresh model on ``batch`` public inputs.
        batch: probe batch size (small: the time is scaled linearly to the expected batch).
        expected_batch_size: :math:`qN`.

    Returns:
        float: the timed probe's seconds times :math:`\max(1, qN / \text{batch})`.
    """
    step(batch)
    t0 = time.perf_counter()
    step(batch)
    seconds = time.perf_counter() - t0
    return seconds * max(1.0, expected_batch_size / batch)


def steps_left(epochs: int, steps_per_epoch: int, *, start_epoch: int = 0,
               done_in_epoch: int = 0) -> int:
    """Steps a run still has to take.

    Example:
        >>> steps_left(10, 5), steps_left(10, 5, start_epoch=3, done_in_epoch=2)
        (50, 33)
    """
    return max(0, (epochs - start_epoch) * steps_per_epoch - done_in_epoch)
