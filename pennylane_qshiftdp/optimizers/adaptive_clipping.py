r"""Adaptive (quantile) clipping: the settings, the noise split and the clip-norm update.

Andrew et al. (arXiv:1905.03871) release, at every step, the clipped gradient sum and the
*centred* count of unclipped examples :math:`\sum_i (b_i - 1/2)` (sensitivity 1/2 under
add/remove); by their Theorem 1 the two releases, with noise multipliers :math:`\sigma_\Delta`
and :math:`\sigma_b`, are together as private as one Gaussian release with multiplier
:math:`(\sigma_\Delta^{-2} + (2\sigma_b)^{-2})^{-1/2}`. The clip norm then moves
geometrically towards the target quantile. Pure functions; the optimizer holds the state.
"""

from __future__ import annotations

import math

from .._validation import check_positive_float

__all__ = ["adaptive_settings", "count_noise_multiplier", "gradient_noise_multiplier",
           "next_clip_norm"]


def count_noise_multiplier(noise_multiplier: float, expected_batch_size: float) -> float:
    r"""Noise std :math:`\sigma_b` of the unclipped count in adaptive (quantile) clipping.

    Rule (chosen here): :math:`\sigma_b = \max(b/20, 2\sigma)`, with b the public expected
    batch size (never q·N of the private data set size: the noise level must not depend on
    the data). Andrew et al.
    (arXiv:1905.03871, Theorem 1) release the *centred* count :math:`\sum_i (b_i - 1/2)`
    (sensitivity 1/2 under add/remove) with std :math:`\sigma_b` and the gradient sum with
    :math:`\sigma_\Delta = (\sigma^{-2} - (2\sigma_b)^{-2})^{-1/2}`, together as private as
    one Gaussian release with multiplier :math:`\sigma`; this needs
    :math:`2\sigma_b > \sigma`. Their default :math:`b/20` fails for ordinary jobs (ε = 4,
    16 epochs, batch 16 gives σ ≈ 2.56 > 2·0.8). With :math:`\sigma_b \ge 2\sigma` the gradient
    noise grows by at most :math:`1/\sqrt{1 - 1/16} - 1 \approx 3.3\,\%`.

    Args:
        noise_multiplier: σ > 0 of the combined release.
        expected_batch_size: the public expected batch size b > 0.

    Returns:
        float: :math:`\sigma_b`.

    Example:
        >>> round(count_noise_multiplier(2.56, 16), 2)
        5.12
        >>> count_noise_multiplier(0.5, 512)
        25.6
    """
    check_positive_float(noise_multiplier, "noise_multiplier")
    check_positive_float(expected_batch_size, "expected_batch_size")
    return max(expected_batch_size / 20.0, 2.0 * noise_multiplier)


def gradient_noise_multiplier(sigma: float, unclipped_num_std: float) -> float:
    r"""σ_Δ of the gradient sum so that (gradient, centred count) is one Gaussian at σ.

    Andrew et al., arXiv:1905.03871, Theorem 1: the clipped sum (sensitivity C, std
    :math:`\sigma_\Delta C`) and the centred count :math:`\sum_i(b_i - 1/2)` (sensitivity
    1/2, std :math:`\sigma_b`) together have the privacy of one Gaussian mechanism with
    multiplier :math:`(\sigma_\Delta^{-2} + (2\sigma_b)^{-2})^{-1/2}`; setting that to σ
    gives :math:`\sigma_\Delta = (\sigma^{-2} - (2\sigma_b)^{-2})^{-1/2}`.

    Args:
        sigma: σ > 0 of the combined release.
        unclipped_num_std: :math:`\sigma_b > \sigma/2`.

    Returns:
        float: :math:`\sigma_\Delta \ge \sigma`.

    Raises:
        ValueError: if :math:`2\sigma_b \le \sigma` (no :math:`\sigma_\Delta` exists).

    Example:
        >>> round(gradient_noise_multiplier(1.0, 2.0), 4)
        1.0328
    """
    sigma_b = unclipped_num_std
    if not 2.0 * sigma_b > sigma:
        raise ValueError(
            f"Adaptive clipping needs 2·unclipped_num_std > noise_multiplier (Andrew et al., "
            f"arXiv:1905.03871, Thm. 1). Found 2·{sigma_b:g} <= {sigma:g}; omit "
            f"`unclipped_num_std` to use max(b/20, 2σ) (b the expected batch size)."
        )
    return (sigma**-2 - (2.0 * sigma_b) ** -2) ** -0.5


def adaptive_settings(cfg: dict, sigma: float, expected_batch_size: float) -> dict:
    """Checked settings of adaptive clipping, with the noise split of the two releases.

    Args:
        cfg: ``target_unclipped_quantile`` γ ∈ (0, 1) (default 0.5),
            ``clipbound_learning_rate`` η > 0 (0.2), ``min_clipbound`` (1e-3),
            ``max_clipbound`` (1e3) and optionally ``unclipped_num_std`` (default
            :func:`count_noise_multiplier`).
        sigma: σ > 0 of the combined release.
        expected_batch_size: the public expected batch size b > 0.

    Returns:
        dict: the five settings as floats plus ``gradient_noise_multiplier`` (σ_Δ).

    Raises:
        ValueError: for a setting out of its domain, ``max_clipbound <= min_clipbound`` or
            :math:`2\\sigma_b \\le \\sigma`.
    """
    gamma = cfg.get("target_unclipped_quantile", 0.5)
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"`target_unclipped_quantile` must be in (0, 1). Found {gamma}.")
    eta = check_positive_float(cfg.get("clipbound_learning_rate", 0.2),
                               "clipbound_learning_rate")
    lo = check_positive_float(cfg.get("min_clipbound", 1e-3), "min_clipbound")
    hi = check_positive_float(cfg.get("max_clipbound", 1e3), "max_clipbound")
    if hi <= lo:
        raise ValueError(f"`max_clipbound` must exceed `min_clipbound`. Found {hi} <= {lo}.")
    sigma_b = cfg.get("unclipped_num_std")
    sigma_b = (count_noise_multiplier(sigma, expected_batch_size) if sigma_b is None
               else check_positive_float(sigma_b, "unclipped_num_std"))
    return {
        "target_unclipped_quantile": float(gamma), "clipbound_learning_rate": eta,
        "min_clipbound": lo, "max_clipbound": hi, "unclipped_num_std": float(sigma_b),
        "gradient_noise_multiplier": gradient_noise_multiplier(sigma, float(sigma_b)),
    }


def next_clip_norm(clip_norm: float, noisy_centred_count: float, batch_size: float,
                   settings: dict) -> float:
    r"""The geometric quantile update of the clip norm from the released centred count.

    .. math::

        C_{t+1} = \mathrm{clamp}\Big(C_t \exp\big(-\eta\,(\tilde b/b + 1/2 - \gamma)\big),
        C_{\min}, C_{\max}\Big),

    with :math:`\tilde b` the noisy centred unclipped count, divided by the public expected
    batch size :math:`b` (Andrew et al., arXiv:1905.03871, Algorithm 1, divide by the expected
    batch size; here a constant that does not depend on the data, never q·N).

    Args:
        clip_norm: :math:`C_t > 0`.
        noisy_centred_count: :math:`\tilde b` (a DP release).
        batch_size: the public expected batch size b (times accumulated virtual steps).
        settings: from :func:`adaptive_settings`.

    Returns:
        float: :math:`C_{t+1}`.

    Example:
        >>> s = adaptive_settings({}, 1.0, 100.0)
        >>> next_clip_norm(1.0, 0.0, 100.0, s)  # the unclipped fraction is the target 1/2
        1.0
    """
    frac = noisy_centred_count / batch_size + 0.5
    new = clip_norm * math.exp(
        -settings["clipbound_learning_rate"] * (frac - settings["target_unclipped_quantile"]))
    return min(max(new, settings["min_clipbound"]), settings["max_clipbound"])
