r"""Why a private run did not learn, read from what the run released (no privacy cost).

A private step releases the noisy sum :math:`\tilde s = s + z` of the clipped per-example
gradients (:math:`z \sim N(0, \sigma^2 C^2 I_d)`, public variance :math:`V = d\sigma^2C^2`) and,
after the update, the parameters. From these alone — post-processing of the DP release, so
nothing here is charged or leaks more — the mean signal power is estimated without bias,
:math:`\widehat{\lVert s\rVert^2} = \overline{\lVert\tilde s\rVert^2} - V`
(:math:`E\lVert\tilde s\rVert^2 = \lVert s\rVert^2 + V`), and so the per-step
**signal-to-noise ratio** :math:`\widehat{\mathrm{SNR}} = \sqrt{\max(0,
\widehat{\lVert s\rVert^2})/V}`. One step's SNR is below 1 in most private runs that learn:
the signal of T steps adds up like T, the noise like :math:`\sqrt T`. So the noise is named
only when the **run's** accumulated releases are indistinguishable from noise too: the sum of
all released noisy sums :math:`\sum_t \tilde s_t` has
:math:`E\lVert\sum_t\tilde s_t\rVert^2 = \lVert\sum_t s_t\rVert^2 + \sum_t V_t`, so
:math:`\sqrt{\max(0, \lVert\sum_t\tilde s_t\rVert^2 / \sum_t V_t - 1)}` estimates how far
the accumulated signal stands above the accumulated noise (with no signal,
:math:`\lVert\sum_t z_t\rVert^2/\sum_t V_t` is a :math:`\chi^2_d/d` variable, mean 1 and
standard deviation :math:`\sqrt{2/d}`; the noise is named while the ratio stays within two of
them of 1). The **learning-rate scale** is how far the released parameters moved per step
relative to their norm. The **clip** is judged against public synthetic inputs: the median
per-example gradient norm m of the model at its initial weights on synthetic examples drawn
without the data (the one ``max_grad_norm="calibrated"`` clips at); a clip C above
:data:`CLIP_RATIO` × m adds noise σC where σm would do, so every release is C/m times noisier
than it needs to be. The clipped fraction depends on the private batch and is not used
(derived here; docs/engine.md §3b, docs/utility.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

__all__ = ["SNR_THRESHOLD", "NOISE_Z", "MIN_RELATIVE_STEP", "MAX_RELATIVE_STEP", "CLIP_RATIO",
           "stuck_run_cause"]

#: Below this estimated signal-to-noise ratio of a step's noisy sum, the noise dominates.
SNR_THRESHOLD = 1.0
#: The run's accumulated released sums are "noise alone" while within this many standard
#: deviations (√(2/d)) of what pure noise gives.
NOISE_Z = 2.0
#: Below this median relative step ‖Δθ‖/‖θ‖, the learning rate is too small to move the model.
MIN_RELATIVE_STEP = 1e-3
#: Above it, each step moves the weights by about their own size: the learning rate is too large.
MAX_RELATIVE_STEP = 0.5
#: A clip norm above this many times the median synthetic per-example gradient norm is named.
CLIP_RATIO = 3.0


def stuck_run_cause(records: Sequence[Mapping], *, batch_argument: str = "the loader's "
                    "batch_size", lr_argument: str = "the optimizer's lr",
                    epsilon_argument: str = "target_epsilon",
                    public_gradient_norm: float | None = None,
                    clip_argument: str = "max_grad_norm",
                    epochs_argument: str = "epochs") -> str | None:
    r"""The quantity that most likely kept a private run near chance, and what to change.

    Reads the public fields of the optimizer's step records
    (:attr:`~pennylane_qshiftdp.QShiftDPOptimizer.history`): ``released_sum_norm`` (norm of
    the noisy sum, the DP release), ``noise_variance_total`` (:math:`V = d\sigma^2C^2`,
    public), ``released_total_norm`` and ``noise_variance_cumulative`` (their running sums),
    ``parameter_step_norm`` and ``parameter_norm`` (of the released parameters).
    Empty steps are skipped. The checks, in order:

    1. the learning-rate scale: the median of :math:`\lVert\Delta\theta\rVert/\lVert
       \theta\rVert` is below :data:`MIN_RELATIVE_STEP` (the steps barely move the weights)
       or above :data:`MAX_RELATIVE_STEP` (each step moves them by about their size);
    2. the noise: :math:`\widehat{\mathrm{SNR}} < 1` per step (the mean of
       :math:`\lVert\tilde s\rVert^2 - V` over the steps estimates the signal power) **and**
       the run's accumulated releases are indistinguishable from noise: with
       ``released_total_norm`` and ``noise_variance_cumulative`` (the norm of the sum of the
       released noisy sums and the sum of their variances), :math:`\lVert\sum_t\tilde
       s_t\rVert^2/\sum_t V_t < 1 + 2\sqrt{2/d}` (within :data:`NOISE_Z` standard deviations
       of the :math:`\chi^2_d/d` law of pure noise; d = ``coordinates``). Records without
       these fields use the per-step test alone;
    3. the clip: with ``public_gradient_norm`` m given, the median ``clip_norm`` C of the
       records is above :data:`CLIP_RATIO` × m (the noise σC is C/m times what a clip at m
       needs).

    Args:
        records: the step records (dicts) of a run, in order.
        batch_argument, lr_argument, epsilon_argument, clip_argument, epochs_argument: how
            the message names the batch size, the learning rate, ε, the clip norm and the
            epochs in the user's terms (a flag of the command line or an argument of
            :func:`~pennylane_qshiftdp.make_private`).
        public_gradient_norm: m > 0, the median per-example gradient norm on public
            synthetic examples at the initial weights (``QShiftDPOptimizer.
            public_gradient_norm``), or ``None`` (the clip check is skipped).

    Raises:
        ValueError: for a ``public_gradient_norm`` that is not a positive finite number.

    Returns:
        str | None: one sentence per cause found (one line), naming the quantity with its
        value and the argument to change; ``None`` when neither check fires (or no step was
        recorded).

    Example:
        >>> steps = [{"released_sum_norm": 8.0, "noise_variance_total": 100.0,
        ...           "parameter_step_norm": 0.01, "parameter_norm": 1.0}] * 3
        >>> print(stuck_run_cause(steps))  # doctest: +ELLIPSIS
        the noise dominates: the estimated signal-to-noise ratio of the noisy gradient ...
    """
    if public_gradient_norm is not None and not (
            isinstance(public_gradient_norm, (int, float))
            and math.isfinite(public_gradient_norm) and public_gradient_norm > 0):
        raise ValueError(f"`public_gradient_norm` must be a positive finite number or None. "
                         f"Found {public_gradient_norm!r}.")
    rows = [r for r in records if r.get("released_sum_norm") is not None
            and r.get("noise_variance_total")]
    if not rows:
        return None
    causes = []
    clips = [r["clip_norm"] for r in rows if r.get("clip_norm")]
    clip = statistics.median(clips) if clips else None
    if clip is not None and public_gradient_norm is not None and (
            clip > CLIP_RATIO * public_gradient_norm):
        causes.append(
            f"the clip is far above the gradients: C = {clip:.3g} is "
            f"{clip / public_gradient_norm:.2g}x the median per-example gradient norm "
            f"{public_gradient_norm:.3g} on public synthetic inputs at the initial weights, so "
            f"the noise σC is that many times larger than a clip at the gradients needs; set "
            f"{clip_argument} near {public_gradient_norm:.3g}"
            + (" (max_grad_norm='calibrated', the default, does)."
               if clip_argument == "max_grad_norm" else "."))
    moves = [r["parameter_step_norm"] / r["parameter_norm"] for r in rows
             if r.get("parameter_step_norm") is not None and r.get("parameter_norm")]
    if moves:
        move = statistics.median(moves)
        if move < MIN_RELATIVE_STEP:
            causes.append(
                f"the learning rate is too small: a median step moves the weights by "
                f"{move:.2g} of their norm ({len(rows)} steps move them by at most "
                f"{move * len(rows):.2g}); raise {lr_argument} (about "
                f"{MIN_RELATIVE_STEP * 10 / move:.2g}x).")
        elif move > MAX_RELATIVE_STEP:
            causes.append(
                f"the learning rate is too large: a median step moves the weights by "
                f"{move:.2g} of their norm; lower {lr_argument} (about "
                f"{move / (MAX_RELATIVE_STEP / 5):.2g}x).")
    power = statistics.fmean(r["released_sum_norm"] ** 2 - r["noise_variance_total"]
                             for r in rows)
    variance = statistics.fmean(r["noise_variance_total"] for r in rows)
    snr = math.sqrt(max(power, 0.0) / variance)
    last = rows[-1]
    run_snr, run_noise = None, False
    if last.get("released_total_norm") is not None and last.get("noise_variance_cumulative"):
        ratio = last["released_total_norm"] ** 2 / last["noise_variance_cumulative"]
        run_snr = math.sqrt(max(0.0, ratio - 1.0))
        # Pure noise gives ratio ~ χ²_d/d: mean 1, standard deviation √(2/d).
        d = last.get("coordinates")
        run_noise = ratio < 1.0 + (NOISE_Z * math.sqrt(2.0 / d) if d else SNR_THRESHOLD**2)
    if snr < SNR_THRESHOLD and (run_snr is None or run_noise):
        over_run = ("" if run_snr is None else
                    f", and {run_snr:.2g} for the sum over the run")
        causes.append(
            f"the noise dominates: the estimated signal-to-noise ratio of the noisy gradient "
            f"sum is {snr:.2g} per step{over_run} (below {SNR_THRESHOLD:g}; estimated from the "
            f"released noisy sums, {len(rows)} steps), so the steps are mostly random. Raise "
            f"{batch_argument} (the clipped sum grows with the batch, the noise does not), "
            f"lower {epochs_argument} (fewer steps, less noise per step) or raise "
            f"{epsilon_argument}" + (
                f"; or lower {clip_argument} (C = {clip:.3g})" if clip is not None and
                public_gradient_norm is not None and clip > public_gradient_norm else "")
            + ".")
    return " ".join(causes) if causes else None
