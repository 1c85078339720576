r"""Adaptive (quantile) clipping as an optimizer: :class:`AdaptiveClipDPOptimizer`.

The clip norm follows the noisy *centred* count of unclipped examples (Andrew et al.,
arXiv:1905.03871); the settings, the noise split and the update are the pure functions of
:mod:`.adaptive_clipping`. The hooks it overrides: the clip groups follow the clip norm, the
gradient's noise multiplier is :math:`\sigma_\Delta` (the count takes the rest of σ), the count
is released after the gradient's noise, and the proven noise multiplier is σ (Theorem 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from .adaptive_clipping import adaptive_settings, gradient_noise_multiplier, next_clip_norm
from .optimizer import NoiseTally, QShiftDPOptimizer

__all__ = ["AdaptiveClipDPOptimizer"]


class AdaptiveClipDPOptimizer(QShiftDPOptimizer):
    """:class:`~pennylane_qshiftdp.QShiftDPOptimizer` with an adaptive quantile clip norm.

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        adaptive_clipping: ``target_unclipped_quantile`` γ ∈ (0, 1),
            ``clipbound_learning_rate`` η > 0, ``min_clipbound``, ``max_clipbound`` and
            optionally ``unclipped_num_std`` (default
            :func:`~.adaptive_clipping.count_noise_multiplier`); ``max_grad_norm`` is the
            initial clip norm.
        **common: the settings every mode shares (:class:`~pennylane_qshiftdp.QShiftDPOptimizer`).

    Raises:
        NotImplementedError: with several clip groups (adaptive clipping uses one flat clip).
        ValueError: for invalid settings (:func:`~.adaptive_clipping.adaptive_settings`), e.g.
            :math:`2\\sigma_b \\le \\sigma`.
    """

    _selects_mode = False

    def __init__(self, optimizer: torch.optim.Optimizer, *,
                 adaptive_clipping: Mapping[str, float], **common: Any):
        super().__init__(optimizer, **common)
        if len(self.clip_groups) != 1:
            raise NotImplementedError("Adaptive clipping uses one flat clip norm.")
        self.adaptive_clipping = adaptive_settings(dict(adaptive_clipping),
                                                   float(self.noise_multiplier),
                                                   float(self.expected_batch_size))

    def _fixed_clip_reason(self) -> str | None:
        return super()._fixed_clip_reason() or (
            "adaptive clipping sets the clip norm from its released quantile count at every "
            "step")

    def _settings(self) -> dict:
        cfg = self.adaptive_clipping
        assert cfg is not None  # set by __init__
        return cfg

    def _gradient_noise_multiplier(self, sigma: float) -> float:
        """σ_Δ of the gradient sum at the σ currently set (:func:`gradient_noise_multiplier`)."""
        return gradient_noise_multiplier(sigma, self._settings()["unclipped_num_std"])

    def _check_noise_multiplier(self) -> float:
        sigma = super()._check_noise_multiplier()
        self._gradient_noise_multiplier(sigma)  # σ must leave the count its share
        return sigma

    def _sync_clip_groups(self) -> None:
        self.clip_groups = [(self.clip_groups[0][0], float(self.max_grad_norm))]

    def _after_release(self) -> None:
        self._update_clip_norm()

    def _proven_multipliers(self, tally: NoiseTally, scale: float) -> tuple[float, float]:
        # Thm. 1 of arXiv:1905.03871: the count and the gradient together are σ
        return self.noise_multiplier, self.noise_multiplier

    def _update_clip_norm(self) -> None:
        r"""Quantile update from the *centred* noisy unclipped count (Andrew et al.).

        Released: :math:`\tilde b = \sum_i (b_i - 1/2) + s\sigma_b z` (sensitivity 1/2 under
        add/remove, 1 under replace-one, :math:`s` the adjacency factor), the sensitivity
        Theorem 1 of arXiv:1905.03871 assumes; the update is :func:`next_clip_norm`, divided by
        the public expected batch size b (never a count of the private data).
        """
        cfg = self._settings()
        stats = self._step_stats
        centred = stats.get("unclipped", 0) - 0.5 * stats.get("batch_examples", 0)
        noisy = centred + self.sensitivity_factor * cfg["unclipped_num_std"] * float(
            self._standard_normal(1)[0])
        self._max_grad_norm = next_clip_norm(
            self.max_grad_norm, noisy, self.expected_batch_size * self._scale_iterations, cfg)
        stats["released_centred_unclipped_count"] = float(noisy)
        stats["next_clip_norm"] = self.max_grad_norm
