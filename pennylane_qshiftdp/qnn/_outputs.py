r"""A TorchLayer's outputs in PennyLane's layout, with and without the per-example Jacobians.

With gradients enabled the layer's forward pass runs the forward and shifted circuits of the
batch in one execution (:func:`fused_parts`) and returns the outputs through an autograd
function whose backward pass uses the cached Jacobians (no circuit runs); without gradients it
runs the forward circuit only (:func:`forward_parts`). :func:`torch_layer_output` rebuilds the
QNode function's return structure and combines it exactly as PennyLane 0.45's
``TorchLayer.forward`` does.
"""

from __future__ import annotations

import numpy as np
import pennylane as qml
import torch

from ..gradients.shift_rules import check_rebindable
from ..hardware.batched import TEMPLATE_CACHE
from ..sampling.modes import shot_sampling
from ._caches import layer_cache
from .evaluation import (
    OutputLayout,
    check_layer_measurements,
    evaluate_layer,
    finite_rows,
    forward_rows,
    num_outputs,
    record_function,
    scalar_measurements,
)

__all__: list[str] = []

class _FusedLayerFunction(torch.autograd.Function):
    """Outputs from a :class:`LayerEvaluation`; backward from its cached Jacobians."""

    @staticmethod
    def forward(ctx, ev, x, *weights):
        ctx.ev = ev
        ctx.weight_meta = [(w.shape, w.dtype) for w in weights]
        ctx.x_dtype = x.dtype
        # a copy: ``ev.outputs`` stays a leaf (the evaluation deep-copies with its layer)
        return ev.outputs.to(x.dtype, copy=True)

    @staticmethod
    def backward(ctx, grad_out):
        ev = ctx.ev
        v = ev.parameter_vjp(grad_out)  # (B, n_diff)
        grad_x = None
        if ctx.needs_input_grad[1] and ev.input_rows:
            grad_x = sum(v[:, r:r + 1] * dj for r, dj in zip(ev.input_rows, ev.input_jacobians,
                                                              strict=True)).to(ctx.x_dtype)
        flat = v[:, ev.weight_rows].sum(dim=0) @ ev.weight_jacobian
        grads, offset = [], 0
        for shape, dtype in ctx.weight_meta:
            n = int(np.prod(shape)) if len(shape) else 1
            grads.append(flat[offset:offset + n].reshape(shape).to(dtype))
            offset += n
        return (None, grad_x, *grads)


def _split(rows: torch.Tensor, sizes, scalars) -> list:
    """Rows ``(B, n_out)`` -> per measurement ``(B,)`` (expval/var) or ``(B, d)``."""
    parts, start = [], 0
    for d, scalar in zip(sizes, scalars, strict=True):
        part = rows[:, start:start + d]
        parts.append(part.reshape(-1) if scalar else part)
        start += d
    return parts


def _kwargs(layer, x: torch.Tensor) -> dict:
    """The QNode's keyword arguments for the batch ``x`` ``(B, n_in)`` (weights detached)."""
    return {layer.input_arg: x.detach(),
            **{k: w.detach() for k, w in layer.qnode_weights.items()}}


def output_layout(layer, x: torch.Tensor) -> OutputLayout:
    """The return structure of the layer's QNode function, read off one call with the batch
    ``x`` (never kept: the QNode, its function or its return may change between calls)."""
    return record_function(layer.qnode, _kwargs(layer, x))[1]


def torch_layer_output(layout: OutputLayout, parts: list, inputs: torch.Tensor):
    """Per-measurement batched results -> PennyLane's TorchLayer output for ``inputs``.

    The QNode function's return structure (list, tuple, one measurement) is rebuilt with
    :mod:`pennylane.pytrees` as a QNode does, then combined exactly as PennyLane 0.45's
    ``TorchLayer.forward`` combines a QNode's result (tested against it over a matrix of
    measurements and batch shapes).
    """
    batched = inputs.ndim > 1
    x = inputs.reshape(-1, inputs.shape[-1]) if batched else inputs
    if not batched:
        parts = [p[0] for p in parts]
    if layout.num_measurements != len(parts):
        raise NotImplementedError(
            f"The QNode function returns {layout.num_measurements} measurements but its tape "
            f"has {len(parts)}; the per-example evaluation needs one tape measurement per "
            f"returned measurement."
        )
    res = qml.pytrees.unflatten(parts, layout.structure)
    results: torch.Tensor | tuple
    if isinstance(res, torch.Tensor):
        results = res.type(x.dtype)
    else:
        def _combine(_res):
            if len(x.shape) > 1:  # (an empty batch has no -1 to infer: sizes are explicit)
                _res = [torch.reshape(r, (x.shape[0], int(np.prod(r.shape[1:])))) for r in _res]
            return torch.hstack(_res).type(x.dtype)

        if isinstance(res, tuple) and len(res) > 1:
            if all(isinstance(r, torch.Tensor) for r in res):
                results = tuple(_combine([r]) for r in res)
            else:
                results = tuple(_combine(r) for r in res)
        else:
            results = _combine(res)
    if isinstance(results, tuple):
        parts = list(results)
        if batched:
            parts = [torch.reshape(r, (*inputs.shape[:-1], *r.shape[1:])) for r in parts]
        return torch.stack(parts, dim=0)
    if batched:
        results = torch.reshape(results, (*inputs.shape[:-1], *results.shape[1:]))
    return results


def empty_parts(layer, inputs) -> tuple[list, OutputLayout]:
    """Zero-row parts (Poisson sampling draws empty batches) and the return layout.

    The parts are connected to the weights *and* to ``inputs``, so a backward pass reaches
    every trainable layer before this one too (Opacus's hooks then give each an empty
    per-example gradient, as for a non-empty batch)."""
    names = list(layer.qnode_weights)
    x0 = torch.zeros(inputs.shape[-1], dtype=torch.float64)
    kwargs = {layer.input_arg: x0, **{k: layer.qnode_weights[k].detach() for k in names}}
    layout = record_function(layer.qnode, kwargs)[1]
    tapes, _ = qml.workflow.construct_batch(layer.qnode, level="user")(**kwargs)
    tape = tapes[0]
    check_layer_measurements(tape)
    num_wires = len(layer.qnode.device.wires or tape.wires)
    sizes = [num_outputs(mp, num_wires) for mp in tape.measurements]
    zero = sum((w * 0).sum() for w in layer.qnode_weights.values())
    if inputs.requires_grad:
        zero = zero + (inputs * 0).sum()
    out = torch.zeros(0, sum(sizes), dtype=inputs.dtype) + torch.as_tensor(zero).to(inputs.dtype)
    return _split(out, sizes, scalar_measurements(tape)), layout


def forward_parts(layer, inputs) -> tuple[list, OutputLayout] | None:
    """Parts without gradients (``torch.no_grad()``, frozen layers) and the return layout:
    the forward circuit of the batch only, by the device's own sampling or, under exact-law
    sampling, by exact-law draws; ``None``: evaluate as PennyLane's layer does (a QNode
    producing several tapes, or a shot vector).

    The layout is rebuilt by :func:`torch_layer_output` as on the gradient path, which also
    avoids PennyLane 0.45's TorchLayer reshape error for ``probs`` with finite shots on a batch
    of one. A row with a non-finite entry runs as zeros and reads NaN (:func:`finite_rows`).
    """
    qnode = layer.qnode
    clean, bad = finite_rows(inputs)
    kwargs = {layer.input_arg: clean.detach().double(),
              **{k: w.detach().double() for k, w in layer.qnode_weights.items()}}
    tapes, _ = qml.workflow.construct_batch(qnode, level="gradient")(**kwargs)
    if len(tapes) != 1 or tapes[0].shots.has_partitioned_shots:
        return None
    tape = tapes[0]
    check_layer_measurements(tape)
    params = [np.asarray(p.numpy() if isinstance(p, torch.Tensor) else p)
              for p in tape.get_parameters(trainable_only=False)]
    try:
        fwd = tape.bind_new_parameters(params, list(range(len(params))))
    except Exception:
        for op in tape.operations:  # name the operation PennyLane cannot rebind
            check_rebindable(op)
        raise
    exact = shot_sampling(qnode) == "exact_law" and bool(tape.shots)
    out, sizes = forward_rows(fwd, qnode.device, exact=exact, batch=int(inputs.shape[0]),
                               bad=bad, qnode=qnode, cache=layer_cache(layer, TEMPLATE_CACHE))
    layout = record_function(qnode, kwargs)[1]
    return _split(torch.as_tensor(out).to(inputs.dtype), sizes, scalar_measurements(fwd)), layout


def captured_by_opacus(layer) -> bool:
    """Whether Opacus's forward hook records this forward pass's activations: train mode,
    gradients enabled and a trainable parameter of the layer itself (Opacus's
    ``capture_activations_hook`` conditions)."""
    return (layer.training and torch.is_grad_enabled()
            and any(p.requires_grad for p in layer.parameters(recurse=False)))


def fused_parts(layer, x: torch.Tensor, weights: list, *,
                input_grad: bool) -> tuple[list, OutputLayout]:
    """Forward and shifted circuits of the batch ``x`` ``(B, n_in)`` in one execution; the
    per-example Jacobians go to the backward pass (on the autograd graph) and, when Opacus
    records this forward pass, to the layer's pending evaluations for its grad sampler."""
    ev = evaluate_layer(layer, x, input_grad=input_grad)
    if captured_by_opacus(layer):
        layer.evaluations.push(ev, x, weights)
    out = _FusedLayerFunction.apply(ev, x, *weights)
    return _split(out, ev.output_sizes, ev.output_scalars), ev.layout
