r"""Opacus's grad sampler for :class:`pennylane_qshiftdp.qnn.TorchLayer`.

Opacus computes per-example gradients layer by layer: for each layer type it needs a *grad
sampler* ``f(layer, activations, backprops) -> {parameter: per-example gradient}``. For the
product's TorchLayer the per-example gradient of the quantum weights is

.. math::

    g_j = \sum_m \frac{\partial \ell_j}{\partial f_m}\,
          \nabla_\theta \hat f_m(x_j;\theta)
        = \sum_m b_{jm} \sum_i \hat J_{jmi}\, C_{i\cdot},

with :math:`b_{jm}` Opacus's backprops, :math:`\hat J_{jmi} = \sum_t c_{it}\hat\mu_{jmt}` the
parameter-shift estimate of :math:`\partial f_m/\partial\varphi_i` for example :math:`j`
(:func:`~pennylane_qshiftdp.qnn.evaluation.evaluate_layer`, kept from the training forward
pass) and :math:`C = \partial\varphi/\partial\theta` the classical Jacobian from the weights to
the gate parameters.

Registered through Opacus's public registry (:func:`opacus.grad_sample.register_grad_sampler`,
``grad_sample_mode="hooks"``) for the product's layer only: PennyLane's own
:class:`pennylane.qnn.TorchLayer` keeps Opacus's own treatment (its ``functorch`` fallback), as
without this package; one whose QNode uses the private transform is reported by the
``ModuleValidator`` rule with the conversion to use. A weight shared by several layers (or a
layer called several times) gets the sum of its per-example contributions, as Opacus sums
every module's grad samples of one parameter.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from opacus.grad_sample import register_grad_sampler

from ..qnn.evaluation import GradSampleRecord
from ..qnn.private_qnode import check_private_qnode
from ..qnn.torch_layer import TorchLayer
from .divisor_guard import mark_unreleased

__all__ = ["torch_layer_grad_sampler"]


def torch_layer_grad_sampler(layer: TorchLayer, activations: Sequence[torch.Tensor],
                             backprops: torch.Tensor) -> dict[torch.nn.Parameter, torch.Tensor]:
    r"""Opacus grad sampler of :class:`pennylane_qshiftdp.qnn.TorchLayer` (registered there).

    Args:
        layer: the layer (its QNode must use :func:`~pennylane_qshiftdp.param_shift`).
        activations: Opacus's captured inputs, ``[x]`` with ``x`` of shape ``(B, ..., n_in)``.
        backprops: :math:`\partial\ell/\partial f`, in the layout of the layer's output
            (already multiplied by the batch size for a mean-reduced loss).

    Returns:
        dict: per-example gradients ``{weight: tensor of shape (B, *weight.shape)}`` (rows of
        extra leading batch dimensions are summed into their example).

    Raises:
        SensitivityError: if the QNode's diff method is not the private transform.
    """
    check_private_qnode(layer.qnode)
    # Only trainable weights: a weight frozen since the last step keeps the per-example
    # gradient it had then (Opacus's zero_grad clears trainable parameters only).
    if any(getattr(w, "grad_sample", None) is not None
           for w in layer.qnode_weights.values() if w.requires_grad):
        # Opacus promotes per-example gradients at the end of a backward pass: one still held
        # here means a second backward pass before optimizer.step(). Opacus would fail later
        # with a shape error; its rows would be clipped apart from this pass's (sensitivity 2C).
        raise ValueError(
            "A second backward pass through a quantum layer before optimizer.step(): "
            "per-example gradients of several backward passes would be clipped separately "
            "(an example in two of them would count twice). Call optimizer.step() after every "
            "backward pass; for a main and an auxiliary loss back-propagate their sum once."
        )
    x = activations[0]
    xb = x.reshape(-1, x.shape[-1])
    n_examples = int(x.shape[0]) if x.ndim > 1 else 1
    weights = dict(layer.qnode_weights)
    if xb.shape[0] == 0:
        layer.evaluations.last_grad_sample = None
        empty = {w: torch.zeros(0, *w.shape, dtype=w.dtype) for w in weights.values()
                 if w.requires_grad}
        mark_unreleased(empty)
        return empty
    # The evaluation of exactly the forward pass whose activations Opacus hands over (same
    # input rows and weights, byte for byte); never re-evaluated here, never another batch's.
    ev = layer.evaluations.pop(xb, weights.values())
    rows_n = xb.shape[0]
    rows = backprops.detach()
    stacked = ev.layout.stacked
    if stacked:  # PennyLane's layer stacked the parts: (n_parts, *batch, d)
        rows = rows.reshape(stacked, rows_n, -1).transpose(0, 1)
    rows = rows.reshape(rows_n, -1).double()
    layer.evaluations.last_grad_sample = GradSampleRecord(ev, rows)
    flat = ev.per_example_weight_grads(rows)  # (rows, P)
    flat = flat.reshape(n_examples, -1, flat.shape[-1]).sum(dim=1)
    out, offset = {}, 0
    for w in weights.values():
        n = w.numel()
        if w.requires_grad:
            out[w] = flat[:, offset:offset + n].reshape(n_examples, *w.shape).to(w.dtype)
        offset += n
    mark_unreleased(out)
    return out


@register_grad_sampler(TorchLayer)
def _grad_sampler(layer, activations, backprops):
    return torch_layer_grad_sampler(layer, activations, backprops)

