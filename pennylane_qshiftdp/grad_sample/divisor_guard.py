r"""Refuse a step of another DP optimizer over the quantum layer's per-example gradients.

Opacus's :class:`opacus.optimizers.DPOptimizer`, as :class:`opacus.PrivacyEngine` builds it,
divides the noisy sum by ``expected_batch_size = int(q·N)``, with N the private data set size
(opacus#819): between neighbouring data sets the release is divided by different constants, so
one example moves it by about :math:`(1 + q)` times the sensitivity the noise is calibrated for
(exact ε 18.4 where Opacus reports 5.09, for N = 29 vs 30). The validator refuses the product's
layer inside Opacus's own engine (:data:`~pennylane_qshiftdp.validators.torch_layer.
OPACUS_DIVISOR_MESSAGE`); this guard is the backstop for every other way of reaching such an
optimizer (a ``DPOptimizer`` built by hand over a :class:`opacus.GradSampleModule`).

The grad sampler marks the quantum weights whose per-example gradients it computed
(:func:`mark_unreleased`); :class:`~pennylane_qshiftdp.QShiftDPOptimizer` clears the mark when
it clips them (:func:`clear_unreleased`). A process-wide optimizer step pre-hook
(:func:`torch.optim.optimizer.register_optimizer_step_pre_hook`, registered when this module is
imported) refuses the wrapped optimizer's step when a marked weight was clipped and summed by
another DP optimizer (Opacus sets ``p.summed_grad``), before any parameter changes. Weights
never marked (every model without the product's layer) are not looked at beyond one attribute
read, and a plain optimizer over a :class:`opacus.GradSampleModule` (no ``summed_grad``) is left
alone.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

__all__ = ["DivisorError", "clear_unreleased", "mark_unreleased"]

_MARK = "_qshiftdp_unreleased"


class DivisorError(RuntimeError):
    """A DP optimizer that divides by a data-dependent batch size reached the quantum layer's
    per-example gradients; nothing was changed."""


_MESSAGE = (
    "A DP optimizer other than pennylane_qshiftdp's clipped the per-example gradients of a "
    "pennylane_qshiftdp TorchLayer and is about to step. Opacus's DPOptimizer divides the "
    "noisy sum by `expected_batch_size`, which opacus.PrivacyEngine sets to int(q·N) with N "
    "the private data set size (opacus#819): the guarantee it reports does not hold. Use "
    "pennylane_qshiftdp.QShiftDPOptimizer (a DPOptimizer subclass with the same arguments, "
    "given a public expected_batch_size), pennylane_qshiftdp.PrivacyEngine or "
    "pennylane_qshiftdp.make_private. No parameter was changed.")


def mark_unreleased(params: Iterable[torch.Tensor]) -> None:
    """Mark weights whose per-example gradients the quantum layer's grad sampler computed."""
    for p in params:
        setattr(p, _MARK, True)


def clear_unreleased(params: Iterable[torch.Tensor]) -> None:
    """Clear the mark: a public-divisor optimizer clipped (or discarded) these gradients."""
    for p in params:
        if getattr(p, _MARK, False):
            setattr(p, _MARK, False)


def _guard(optimizer: torch.optim.Optimizer, args, kwargs) -> None:
    del args, kwargs
    for group in optimizer.param_groups:
        for p in group["params"]:
            if getattr(p, _MARK, False) and getattr(p, "summed_grad", None) is not None:
                raise DivisorError(_MESSAGE)


_HANDLE = register_optimizer_step_pre_hook(_guard)
