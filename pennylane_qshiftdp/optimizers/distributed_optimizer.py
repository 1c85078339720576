"""Data-parallel training: :class:`DistributedQShiftDPOptimizer` (as Opacus's
``DistributedDPOptimizer``).

Each process clips the per-example gradients of its share of the Poisson batch, the clipped
sums (and the step's counts) are all-reduced, and the noise is drawn once, by rank 0, and
shared, so every process takes the same step. The hooks it overrides: the standard normal draws
and the combination of the clipped sums before the noise. It combines with every clip mode
(:func:`~.selection.get_optimizer_class` puts it in front of the clip mode's class).
"""

from __future__ import annotations

from typing import Any

import torch

from .optimizer import QShiftDPOptimizer

__all__ = ["DistributedQShiftDPOptimizer"]


class DistributedQShiftDPOptimizer(QShiftDPOptimizer):
    """:class:`~pennylane_qshiftdp.QShiftDPOptimizer` on an initialised ``torch.distributed``
    process group.

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        **settings: those of the clip mode's class it is combined with.

    Raises:
        ValueError: without an initialised process group (e.g. launched by torchrun).
    """

    _selects_mode = False
    distributed = True

    def __init__(self, optimizer: torch.optim.Optimizer, **settings: Any):
        super().__init__(optimizer, **settings)
        if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
            raise ValueError("distributed=True needs an initialised torch.distributed "
                             "process group (e.g. launched by torchrun).")

    def _standard_normal(self, n: int) -> torch.Tensor:
        """``n`` standard normal draws, drawn by rank 0 and shared."""
        if torch.distributed.get_rank() != 0:
            z = torch.zeros(n, dtype=torch.float64)
        else:
            z = super()._standard_normal(n)
        torch.distributed.all_reduce(z, op=torch.distributed.ReduceOp.SUM)
        return z

    def _gather_step(self) -> None:
        """Sum the clipped gradients and the step's counts over processes."""
        ops = torch.distributed
        for p in self.params:
            ops.all_reduce(p.summed_grad, op=ops.ReduceOp.SUM)
        keys = ("batch_examples", "clipped", "certified_bound_violations", "unclipped",
                "nonfinite_examples")
        counts = torch.tensor([float(self._step_stats.get(k, 0)) for k in keys],
                              dtype=torch.float64)
        ops.all_reduce(counts, op=ops.ReduceOp.SUM)
        ratio = torch.tensor([self._step_stats.get("largest_norm_ratio", 0.0)],
                             dtype=torch.float64)
        ops.all_reduce(ratio, op=ops.ReduceOp.MAX)
        self._step_stats.update({k: int(v) for k, v in zip(keys, counts.tolist(), strict=True)})
        self._step_stats["largest_norm_ratio"] = float(ratio[0])
        super()._gather_step()
