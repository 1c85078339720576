"""A clip norm from public information, recomputed every few steps:
:class:`PublicClipDPOptimizer`.

The clip norm is a function of the step alone (e.g. :func:`~.public_clip.domain_gradient_bound`
at the current weights, a release), called every ``clip_refresh_steps`` steps (once an epoch
for :func:`~pennylane_qshiftdp.make_private`) before clipping: the hook it overrides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._validation import check_positive_int
from .optimizer import QShiftDPOptimizer

__all__ = ["PublicClipDPOptimizer"]

# A clip norm from public information is never set below this (all-zero gradients).
_MIN_PUBLIC_CLIP = 1e-6

#: The refusal of a public clip with several clip groups or adaptive clipping.
PUBLIC_CLIP_COMBINATION = "`clip_norm_fn` needs one flat clip group and no adaptive clipping."


class PublicClipDPOptimizer(QShiftDPOptimizer):
    """:class:`~pennylane_qshiftdp.QShiftDPOptimizer` whose clip norm is recomputed from public
    information.

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        clip_norm_fn: callable ``step -> C`` giving a clip norm from public information.
        clip_refresh_steps: how often ``clip_norm_fn`` is called, ≥ 1.
        **common: the settings every mode shares (:class:`~pennylane_qshiftdp.QShiftDPOptimizer`).

    Raises:
        ValueError: with several clip groups, or ``clip_refresh_steps`` < 1.
    """

    _selects_mode = False

    def __init__(self, optimizer: torch.optim.Optimizer, *, clip_norm_fn: Callable[[int], float],
                 clip_refresh_steps: int = 1, **common: Any):
        super().__init__(optimizer, **common)
        if len(self.clip_groups) != 1:
            raise ValueError(PUBLIC_CLIP_COMBINATION)
        self.clip_norm_fn = clip_norm_fn
        self.clip_refresh_steps = check_positive_int(clip_refresh_steps, "clip_refresh_steps")

    def _fixed_clip_reason(self) -> str | None:
        return super()._fixed_clip_reason() or (
            "the clip norm is recomputed from public information (max_grad_norm='public') "
            "every few steps")

    def _refresh_clip(self) -> None:
        fn = self.clip_norm_fn
        assert fn is not None  # set by __init__
        if not self._is_last_step_skipped and self._history and (
                len(self._history) % self.clip_refresh_steps == 0):
            clip = max(float(fn(len(self._history))), _MIN_PUBLIC_CLIP)
            self.clip_groups = [(self.clip_groups[0][0], clip)]
            self._max_grad_norm = clip
