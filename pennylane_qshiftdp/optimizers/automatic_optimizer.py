r"""Automatic clipping as an optimizer: :class:`AutomaticClipDPOptimizer`.

Bu et al. (arXiv:2206.07136, AUTO-S, their Eq. (4.1) in units of the group's C): every
per-example gradient is scaled by :math:`C/(\lVert g\rVert + \gamma C)` instead of
:math:`\min(1, C/\lVert g\rVert)`. The hooks it overrides: the clip factor, and which rows
count as clipped (all of them).
"""

from __future__ import annotations

from typing import Any

import torch

from .._validation import check_positive_float
from .optimizer import QShiftDPOptimizer

__all__ = ["AutomaticClipDPOptimizer"]

#: Automatic clipping scales its factor by this (1 − 2⁻²⁰): float32 rows of huge gradients
#: would otherwise round to norms up to ~4e-8 above C (measured).
_AUTOMATIC_MARGIN = 1.0 - 2.0**-20

#: The refusal of automatic clipping combined with another clip mode or certified groups.
AUTOMATIC_COMBINATION = ("`automatic_gamma` (automatic clipping: every per-example gradient "
                         "is normalised) cannot be combined with adaptive clipping, "
                         "`clip_norm_fn` or certified clip groups.")


class AutomaticClipDPOptimizer(QShiftDPOptimizer):
    r""":class:`~pennylane_qshiftdp.QShiftDPOptimizer` with automatic clipping.

    Each per-example gradient's norm :math:`C\lVert g\rVert/(\lVert g\rVert + \gamma C)` is
    below C whatever g: the sensitivity, and the noise, are those of clipping at C; no clip
    norm to tune (the learning rate absorbs the scale). Every example counts as clipped.

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        automatic_gamma: the stability constant γ > 0.
        **common: the settings every mode shares (:class:`~pennylane_qshiftdp.QShiftDPOptimizer`).

    Raises:
        ValueError: for γ ≤ 0 or certified clip groups.
    """

    _selects_mode = False

    def __init__(self, optimizer: torch.optim.Optimizer, *, automatic_gamma: float,
                 **common: Any):
        super().__init__(optimizer, **common)
        if any(self._certified_flags):
            raise ValueError(AUTOMATIC_COMBINATION)
        self.automatic_gamma = check_positive_float(automatic_gamma, "automatic_gamma")

    def _clip_factor(self, norm: float, norms: torch.Tensor) -> torch.Tensor:
        # C·g/(‖g‖ + γC), of norm below C for every g (the margin keeps it below C after the
        # rows are rounded to float32, where γC/‖g‖ vanishes for huge gradients)
        gamma = self.automatic_gamma
        assert gamma is not None  # set by __init__
        return norm / (norms + gamma * norm) * _AUTOMATIC_MARGIN

    def _binding(self, norm: float, norms: torch.Tensor) -> torch.Tensor:
        return torch.ones_like(norms, dtype=torch.bool)  # every row rescaled
