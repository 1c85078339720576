r"""Per-example parameter-shift Jacobians of ``TorchLayer``\ s, and Opacus's grad sampler for them.

Opacus computes per-example gradients layer by layer: for each layer type it needs a *grad
sampler* ``f(layer, activations, backprops) -> {parameter: per-example gradient}``. For a
:class:`pennylane.qnn.TorchLayer` whose QNode uses :func:`~pennylane_qshiftdp.param_shift`,
the per-example gradient of the quantum weights is

.. math::

    g_j = \sum_m \frac{\partial \ell_j}{\partial f_m}\,
          \nabla_\theta \hat f_m(x_j;\theta)
        = \sum_m b_{jm} \sum_i \hat J_{jmi}\, C_{i\cdot},

with :math:`b_{jm}` Opacus's backprops, :math:`\hat J_{jmi} = \sum_t c_{it}\hat\mu_{jmt}` the
parameter-shift estimate of :math:`\partial f_m/\partial\varphi_i` for example :math:`j` and
:math:`C = \partial\varphi/\partial\theta` the classical Jacobian from the weights to the gate
parameters.

One evaluation per step. When a TorchLayer's QNode uses the private transform, its forward
pass (with gradients enabled) executes the forward circuit and *all* shifted circuits of *all*
examples in one :func:`pennylane.execute` call: the inputs are broadcast over the batch, so each
shifted circuit is one broadcast tape. The per-example Jacobians are kept for the backward pass
(whose vector-Jacobian product then runs no circuit) and for the grad sampler. Shift rules,
light-cone pruning and post-processing are PennyLane's (through
:func:`~pennylane_qshiftdp.param_shift`); shot statistics are recorded per example when a
:class:`~.ShotRecorder` is attached.

Exact-law shot sampling (opt-in, simulators only;
:func:`~pennylane_qshiftdp.sampling.use_exact_law`): the same circuits run analytically,
merged into broadcast tapes, in the same single execution, and every :math:`N_s`-shot
estimate is drawn from the exact outcome law with the device's generator
(:func:`~pennylane_qshiftdp.sampling.execute_exact_law`); the recorded shot statistics are
computed from the drawn estimates exactly as from the device's.

Gradients with respect to broadcast inputs (a trainable classical layer before the TorchLayer)
are supported: PennyLane's ``param_shift`` refuses them (pennylane#4462), so the shifts are read
off PennyLane's shifted tapes of one unbroadcast example and applied to the broadcast tape; a
shift rule that is not a pure additive shift is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np
import pennylane as qml
import torch
from opacus.grad_sample import register_grad_sampler

from . import _compat, sampling
from .exceptions import SensitivityError
from .shot_statistics import ShotRecorder, active_recorder
from .transform import (
    _TRANSFORM_NAME,
    _expand,
    _pennylane_tapes,
    _plan_for,
    _post_process_recording,
    _rewrite,
    param_shift,
)

__all__ = [
    "LayerEvaluation",
    "check_private_qnode",
    "evaluate_layer",
    "torch_layer_grad_sampler",
]

# Offset applied to broadcast parameters to check that a shift rule is a pure additive shift.
_ADDITIVITY_PROBE = 0.3713
# Shifts read off two representative tapes must agree to this tolerance.
_SHIFT_ATOL = 1e-12
# Largest number of pending forward evaluations kept per layer (forwards without a backward).
_MAX_PENDING = 16
# Largest number of circuit structures whose shift rule a layer keeps.
_MAX_SHIFT_RULES = 16


def _diff_method_name(qnode) -> str:
    dm = qnode.diff_method
    return getattr(dm, "__name__", None) or str(dm)


def check_private_qnode(qnode) -> None:
    r"""Refuse a QNode whose gradient is not the private parameter-shift transform.

    Only :func:`~pennylane_qshiftdp.param_shift` gives per-example gradients with an a-priori
    bound and shot statistics; ``finite-diff``, ``backprop``, ``adjoint``, ``spsa`` and
    PennyLane's own ``param_shift`` do not (a finite-difference gradient of a shot estimate
    scales like 1/h).

    Args:
        qnode: a :class:`pennylane.QNode`.

    Raises:
        TypeError: if ``qnode`` is not a QNode.
        SensitivityError: if its ``diff_method`` is not ``pennylane_qshiftdp.param_shift``, or
            its gradient keyword arguments ask for a finite-difference fallback.

    Example:
        >>> dev = qml.device("default.qubit", wires=1)
        >>> qn = qml.QNode(lambda inputs, w: qml.expval(qml.Z(0)), dev,
        ...                diff_method="finite-diff")
        >>> check_private_qnode(qn)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pennylane_qshiftdp.exceptions.SensitivityError: ...
    """
    if not isinstance(qnode, qml.QNode):
        raise TypeError(f"`qnode` must be a pennylane.QNode. Found {type(qnode).__name__}.")
    if qnode.diff_method is not param_shift:
        raise SensitivityError(
            f"The QNode uses diff_method={_diff_method_name(qnode)!r}, whose per-example "
            f"gradients have no a-priori bound and no shot statistics. Construct it with "
            f"`diff_method=pennylane_qshiftdp.param_shift` (a drop-in replacement for "
            f"qml.gradients.param_shift)."
        )
    if qnode.gradient_kwargs.get("fallback_fn") is not None:
        raise SensitivityError(
            "The QNode's gradient_kwargs set `fallback_fn`: a finite-difference fallback has "
            "no a-priori bound. Remove it."
        )


@dataclasses.dataclass
class LayerEvaluation:
    r"""One batched evaluation of a TorchLayer: outputs and per-example Jacobians.

    Attributes:
        outputs: layer outputs, shape ``(B, n_out)`` (float64).
        jacobian: :math:`\hat J`, per-example derivatives of the outputs with respect to the
            differentiated gate parameters, shape ``(B, n_out, n_diff)`` (float64).
        weight_rows: positions (in the last axis of ``jacobian``) of gate parameters that
            depend on the weights.
        weight_jacobian: :math:`C`, shape ``(len(weight_rows), P)``: derivative of those gate
            parameters with respect to the flattened weights (data-independent).
        input_rows: positions of gate parameters that depend on the inputs (only when input
            gradients were requested).
        input_jacobians: per input row, :math:`\partial\varphi_i[b]/\partial x[b]`, shape
            ``(B, n_in)``.
        inputs_ptr: ``data_ptr`` and shape of the inputs (to match Opacus's activations).
        single_output: the QNode returns one scalar (``expval``/``var``) per example, so the
            TorchLayer returns shape ``(B,)``.
        output_sizes: number of outputs of each measurement (the columns of ``outputs``).
    """

    outputs: torch.Tensor
    jacobian: torch.Tensor
    weight_rows: list
    weight_jacobian: torch.Tensor
    input_rows: list
    input_jacobians: list
    inputs_ptr: tuple
    single_output: bool
    output_sizes: tuple = ()

    def parameter_vjp(self, cotangent: torch.Tensor) -> torch.Tensor:
        """Per-example ``Σ_m cotangent[b, m] J[b, m, :]``, shape ``(B, n_diff)``."""
        b = self.jacobian.shape[0]
        return torch.einsum("bo,boi->bi", cotangent.reshape(b, -1).double(), self.jacobian)

    def tape_to_weight_jacobian(self) -> np.ndarray:
        r"""Rows :math:`\partial\varphi_i/\partial\theta` for every differentiated gate
        parameter (rows of input parameters are zero), shape ``(n_diff, P)``."""
        jac = np.zeros((self.jacobian.shape[2], self.weight_jacobian.shape[1]))
        jac[self.weight_rows] = self.weight_jacobian.numpy()
        return jac

    def per_example_weight_grads(self, cotangent: torch.Tensor) -> torch.Tensor:
        """Per-example gradients of the flattened weights, shape ``(B, P)``."""
        v = self.parameter_vjp(cotangent)
        return v[:, self.weight_rows] @ self.weight_jacobian


def _num_outputs(mp) -> int:
    if isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP)):
        return 1
    if isinstance(mp, qml.measurements.ProbabilityMP):
        return 2 ** len(mp.wires)
    raise NotImplementedError(
        f"{_TRANSFORM_NAME}: a TorchLayer measurement {mp} has no parameter-shift gradient."
    )


def _flat(results, batch: int, num_meas: int) -> np.ndarray:
    """Results of one broadcast tape -> array ``(B, n_out)`` (TorchLayer's hstack order)."""
    parts = [results] if num_meas == 1 else list(results)
    return np.concatenate(
        [np.asarray(qml.math.toarray(r), dtype=float).reshape(batch, -1) for r in parts], axis=1
    )


def _jacobian_array(grad, batch: int, num_meas: int, num_params: int) -> np.ndarray:
    """PennyLane's gradient structure (with a trailing batch axis) -> ``(B, n_out, n_params)``."""
    per_meas = [grad] if num_meas == 1 else list(grad)
    blocks = []
    for g in per_meas:
        per_param = [g] if num_params == 1 else list(g)
        cols = [np.asarray(qml.math.toarray(a), dtype=float) for a in per_param]
        # each column: (B,) or (d, B) for probs -> (B, d)
        cols = [c.reshape(-1, batch).T if c.ndim > 1 else c.reshape(batch, 1) for c in cols]
        blocks.append(np.stack(cols, axis=-1))  # (B, d_m, n_params)
    return np.concatenate(blocks, axis=1)


def _leaf_gradients(params, leaves):
    """Per parameter that requires grad, the gradients of its sum with respect to ``leaves``
    (``None`` for an unused leaf): one batched backward pass, or one per parameter if torch
    cannot batch it."""
    tracked = [p for p in params if isinstance(p, torch.Tensor) and p.requires_grad]
    if not tracked:
        return []
    outs = [p.sum() for p in tracked]
    try:
        # One stacked output and an identity cotangent: one batched backward pass (faster
        # than a list of outputs with one cotangent each).
        dtype = functools.reduce(torch.promote_types, [o.dtype for o in outs])
        stacked = torch.stack([o.to(dtype) for o in outs])
        eye = torch.eye(len(outs), dtype=stacked.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's vmap performance notes
            batched = torch.autograd.grad(stacked, leaves, grad_outputs=eye,
                                          retain_graph=True, allow_unused=True,
                                          is_grads_batched=True)
        return [tuple(None if g is None else g[k] for g in batched) for k in range(len(outs))]
    except RuntimeError:
        return [torch.autograd.grad(o, leaves, retain_graph=True, allow_unused=True)
                for o in outs]


def _param_dependencies(params, x_leaf, w_leaves):
    """For every tape parameter: (depends on inputs, row of ∂φ/∂θ or None, ∂φ[b]/∂x[b])."""
    deps = []
    leaves = [x_leaf, *w_leaves]
    per_param = iter(_leaf_gradients(params, leaves))
    for p in params:
        if not (isinstance(p, torch.Tensor) and p.requires_grad):
            deps.append((False, None, None))
            continue
        grads = next(per_param)
        gx, gws = grads[0], grads[1:]
        on_x = gx is not None and bool(torch.any(gx != 0))
        on_w = any(g is not None and bool(torch.any(g != 0)) for g in gws)
        if on_x and on_w:
            raise NotImplementedError(
                "A gate parameter depends on both the inputs and the weights (e.g. RX(w * x)): "
                "its per-example gradient with respect to the weights is data dependent. Use "
                "separate gates for data and weights (data re-uploading: RX(x) RX(w))."
            )
        row = None
        if on_w:
            if p.ndim != 0:
                raise NotImplementedError(
                    f"A weight-dependent gate parameter of shape {tuple(p.shape)} is "
                    f"broadcast; only scalar weight parameters are supported."
                )
            row = torch.cat([
                (g if g is not None else torch.zeros_like(w)).reshape(-1).double()
                for g, w in zip(gws, w_leaves, strict=True)
            ])
        deps.append((on_x, row, gx.detach().double() if on_x else None))
    return deps


def _unbroadcast(params, broadcast, offset=0.0):
    """Parameters of the first batch element (broadcast ones sliced), plus ``offset``."""
    return [float(np.asarray(p).reshape(-1)[0]) + offset if i in broadcast else p
            for i, p in enumerate(params)]


def _shifts(rep_tape, tapes):
    """Per shifted tape, the parameter offsets relative to ``rep_tape`` (a list of arrays)."""
    base = [np.asarray(p, dtype=float) for p in rep_tape.get_parameters(trainable_only=False)]
    return [[np.asarray(p, dtype=float) - b
             for p, b in zip(t.get_parameters(trainable_only=False), base, strict=True)]
            for t in tapes]


def _offset_rows(shifts, rep):
    """Per tape parameter, its offsets in the forward circuit (zero) and each shifted tape,
    stacked: an array ``(1 + number of shifted tapes, *shape)``."""
    params = rep.get_parameters(trainable_only=False)
    return [np.stack([np.zeros_like(np.asarray(p, dtype=float)), *(s[k] for s in shifts)])
            for k, p in enumerate(params)]


def _cacheable(op) -> bool:
    """PennyLane's qubit gates: shift rules fixed by the gate type, additive, value-free."""
    return (type(op).__module__.startswith(("pennylane.ops.qubit",
                                            "pennylane.ops.op_math.controlled_ops"))
            and getattr(op, "grad_recipe", None) is not None
            and all(r is None for r in op.grad_recipe))


def _shift_rule(layer, rep, diff_idx, x_idx):
    """Offsets of PennyLane's shifted tapes of ``rep`` (per tape, per parameter), their
    processing function and their number.

    PennyLane's shifted tapes depend on the values only through additive offsets for its own
    qubit gates; for a circuit made of those, the rule is computed once per circuit structure
    (gate types and wires, measurements, differentiated parameters) and kept on the layer,
    after checking that moving every differentiated parameter leaves the offsets unchanged.

    Raises:
        NotImplementedError: if the shift rule of a broadcast input parameter is not a pure
            additive shift.
    """
    trainable = set(diff_idx)
    pos, ops_of = 0, []
    for op in rep.operations:
        ops_of.append(any(pos + j in trainable for j in range(len(op.data))))
        pos += len(op.data)
    key = (tuple((type(op), tuple(op.wires)) for op in rep.operations),
           tuple(mp.hash for mp in rep.measurements), tuple(diff_idx), rep.shots)
    cache = layer.__dict__.setdefault("_qshiftdp_shift_rules", {})
    if key in cache:
        return cache[key]
    g_tapes, fn = _pennylane_tapes(rep)
    shifts = _shifts(rep, g_tapes)
    rule = (shifts, fn, len(g_tapes), _offset_rows(shifts, rep))
    cacheable = all(_cacheable(op) for op, t in zip(rep.operations, ops_of, strict=True) if t)
    if not (cacheable or x_idx):
        return rule
    params = rep.get_parameters(trainable_only=False)
    probed = rep.bind_new_parameters(
        [np.asarray(p, dtype=float) + _ADDITIVITY_PROBE if i in trainable else p
         for i, p in enumerate(params)], list(range(len(params))))
    probed.trainable_params = diff_idx
    g2, _ = _pennylane_tapes(probed)
    moved = set()
    if len(g2) != len(g_tapes):
        moved = set(trainable)
    else:
        for s1, s2 in zip(shifts, _shifts(probed, g2), strict=True):
            moved |= {i for i, (a, b) in enumerate(zip(s1, s2, strict=True))
                      if not np.allclose(a, b, atol=_SHIFT_ATOL)}
    if moved & set(x_idx):
        raise NotImplementedError(
            "A shift rule of a broadcast input parameter is not a pure additive shift; "
            "per-example input gradients are not supported for it."
        )
    if cacheable and not moved:
        if len(cache) >= _MAX_SHIFT_RULES:
            cache.clear()
        cache[key] = rule
    return rule


def _recorder_of(qnode) -> ShotRecorder | None:
    rec = qnode.gradient_kwargs.get("recorder")
    return rec if rec is not None else active_recorder()


def evaluate_layer(layer: qml.qnn.TorchLayer, inputs: torch.Tensor, *,
                   input_grad: bool = False) -> LayerEvaluation:
    r"""Outputs and per-example parameter-shift Jacobians of a TorchLayer, in one execution.

    Args:
        layer: a :class:`pennylane.qnn.TorchLayer` whose QNode uses
            :func:`~pennylane_qshiftdp.param_shift`.
        inputs: the batch, shape ``(B, n_in)``, ``B ≥ 1``.
        input_grad: also differentiate with respect to the inputs (a trainable classical
            layer feeds the TorchLayer).

    Returns:
        LayerEvaluation: outputs ``(B, n_out)`` and Jacobians (see its attributes).

    Raises:
        SensitivityError: for a QNode whose diff method is not the private transform.
        NotImplementedError: for shot vectors, a QNode that produces several tapes, a gate
            parameter depending on both inputs and weights, a shift rule that is not an
            additive shift of a broadcast input parameter, a recorder with a measurement other
            than ``expval``, or, under exact-law sampling, a device without a numpy generator
            or an observable with more than two eigenvalues.

    Example:
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> layer = qml.qnn.TorchLayer(make_qnode(2, 1, device="default.qubit", shots=None),
        ...                            {"weights": (1, 2, 3)})
        >>> ev = evaluate_layer(layer, torch.zeros(3, 2, dtype=torch.float64))
        >>> tuple(ev.outputs.shape), tuple(ev.jacobian.shape)
        ((3, 1), (3, 1, 6))
    """
    qnode = layer.qnode
    check_private_qnode(qnode)
    if inputs.ndim != 2 or inputs.shape[0] < 1:
        raise ValueError(f"`inputs` must have shape (B, n_in) with B >= 1. Found "
                         f"{tuple(inputs.shape)}.")
    batch = int(inputs.shape[0])
    names = list(layer.qnode_weights)
    w_leaves = [layer.qnode_weights[k].detach().double().requires_grad_(True) for k in names]
    x_leaf = inputs.detach().double().requires_grad_(True)
    kwargs = {layer.input_arg: x_leaf, **dict(zip(names, w_leaves, strict=True))}
    tapes, _ = qml.workflow.construct_batch(qnode, level="gradient")(**kwargs)
    if len(tapes) != 1:
        raise NotImplementedError(
            f"A TorchLayer QNode that produces {len(tapes)} tapes is not supported by the "
            f"per-example evaluation; use a QNode whose transforms produce one tape."
        )
    [tape], _ = _expand(tapes[0])
    if tape.shots.has_partitioned_shots:
        raise NotImplementedError(
            f"Shot vectors are not supported for per-example gradients (found {tape.shots})."
        )
    params = tape.get_parameters(trainable_only=False)
    deps = _param_dependencies(params, x_leaf, w_leaves)
    w_idx = [i for i, (_, row, _) in enumerate(deps) if row is not None]
    x_idx = [i for i, (on_x, _, _) in enumerate(deps) if on_x] if input_grad else []
    diff_idx = sorted(w_idx + x_idx)
    broadcast = {i for i, (on_x, _, _) in enumerate(deps) if on_x}
    single_output = len(tape.measurements) == 1 and _num_outputs(tape.measurements[0]) == 1

    np_params = [np.asarray(p.detach().numpy() if isinstance(p, torch.Tensor) else p)
                 for p in params]
    fwd = tape.bind_new_parameters(np_params, list(range(len(np_params))))
    # Broadcast tapes with batch size 1 keep their batch axis; an unbroadcast tape (every
    # gate parameter scalar) is evaluated once and shared by the batch.
    num_meas = len(tape.measurements)
    weight_rows = [diff_idx.index(i) for i in w_idx]
    input_rows = [diff_idx.index(i) for i in x_idx]
    total = sum(p.numel() for p in w_leaves)
    wjac = (torch.stack([deps[i][1] for i in w_idx]) if w_idx
            else torch.zeros(0, total, dtype=torch.float64))
    input_jacs = [deps[i][2].reshape(batch, -1) for i in x_idx]

    device = qnode.device
    exact = sampling.shot_sampling(qnode) == "exact_law" and bool(tape.shots)
    if not diff_idx:
        [res] = (sampling.execute_exact_law([fwd], device) if exact
                 else qml.execute([fwd], device, diff_method=None))
        out = _flat(res, batch if fwd.batch_size else 1, num_meas)
        out = np.broadcast_to(out, (batch, out.shape[1]))
        return LayerEvaluation(torch.as_tensor(out.copy()), torch.zeros(batch, out.shape[1], 0,
                               dtype=torch.float64), [], wjac, [], [],
                               (inputs.data_ptr(), tuple(inputs.shape)), single_output,
                               tuple(_num_outputs(mp) for mp in tape.measurements))

    rep = fwd.bind_new_parameters(_unbroadcast(np_params, broadcast), list(range(len(np_params))))
    rep.trainable_params = diff_idx
    shifts, fn, num_tapes, offsets = _shift_rule(layer, rep, diff_idx, x_idx)
    recorder = _recorder_of(qnode)
    per_tape = 1
    if recorder is not None:
        if not tape.shots:
            raise ValueError(
                "Shot statistics were requested (a ShotRecorder is attached) but the circuit "
                "is analytic (shots=None); set finite shots on the QNode or detach the recorder."
            )
        unsupported = [mp for mp in tape.measurements
                       if not isinstance(mp, qml.measurements.ExpectationMP)]
        if unsupported:
            raise NotImplementedError(
                f"{_TRANSFORM_NAME} records shot statistics for expval measurements only; "
                f"found {unsupported}. Detach the recorder to differentiate var/probs."
            )
        plans = [_plan_for(mp.obs) for mp in tape.measurements]
    if exact:
        # Analytic circuits merged into broadcast tapes, estimates drawn from the exact law
        # (it refuses the observables that recording would rewrite into samples).
        results = sampling._execute(fwd, None, device, offsets=offsets)
    else:
        shifted = [fwd.bind_new_parameters([p + d for p, d in zip(np_params, s, strict=True)],
                                           list(range(len(np_params))))
                   for s in shifts]
        if recorder is not None:
            shifted, per_tape = _rewrite(shifted, plans, tape.shots)
        results = qml.execute([fwd, *shifted], device, diff_method=None)
    res_batch = batch if fwd.batch_size else 1
    out = _flat(results[0], res_batch, num_meas)
    if recorder is not None:
        rep_b = rep.copy()
        grad = _post_process_recording(results[1:], tape=rep_b, plans=plans,
                                       num_tapes=num_tapes, per_tape=per_tape, fn=fn,
                                       recorder=recorder)
    else:
        grad = fn(results[1:])
    jac = _jacobian_array(grad, res_batch, num_meas, len(diff_idx))
    if res_batch != batch:
        out = np.broadcast_to(out, (batch, out.shape[1])).copy()
        jac = np.broadcast_to(jac, (batch, *jac.shape[1:])).copy()
    return LayerEvaluation(
        outputs=torch.as_tensor(out),
        jacobian=torch.as_tensor(jac),
        weight_rows=weight_rows,
        weight_jacobian=wjac,
        input_rows=input_rows,
        input_jacobians=input_jacs,
        inputs_ptr=(inputs.data_ptr(), tuple(inputs.shape)),
        single_output=single_output,
        output_sizes=tuple(_num_outputs(mp) for mp in tape.measurements),
    )


class _FusedLayerFunction(torch.autograd.Function):
    """Outputs from a :class:`LayerEvaluation`; backward from its cached Jacobians."""

    @staticmethod
    def forward(ctx, ev, x, *weights):
        ctx.ev = ev
        ctx.weight_meta = [(w.shape, w.dtype) for w in weights]
        ctx.x_dtype = x.dtype
        return ev.outputs.to(x.dtype)

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


def _torch_layer_layout(out: torch.Tensor, sizes, unbatched: bool):
    """Rows ``(B, n_out)`` -> what ``TorchLayer._evaluate_qnode`` returns.

    One measurement: ``(B,)`` for a scalar, ``(B, d)`` otherwise. Several measurements: a tuple
    of ``(B, d_m)`` blocks (``TorchLayer.forward`` stacks them to ``(n_meas, B, d)``). An
    unbatched input drops the batch axis of each part.
    """
    if len(sizes) <= 1:
        out = out.reshape(-1) if sum(sizes) == 1 else out
        return out[0] if unbatched else out
    parts, start = [], 0
    for d in sizes:
        part = out[:, start:start + d]
        parts.append(part[0] if unbatched else part)
        start += d
    return tuple(parts)


def _empty_output(layer, inputs):
    """Zero-row output connected to the weights (Poisson sampling draws empty batches)."""
    names = list(layer.qnode_weights)
    x0 = torch.zeros(inputs.shape[-1], dtype=torch.float64)
    kwargs = {layer.input_arg: x0, **{k: layer.qnode_weights[k].detach() for k in names}}
    tapes, _ = qml.workflow.construct_batch(layer.qnode, level="user")(**kwargs)
    mps = tapes[0].measurements
    n_out = sum(_num_outputs(mp) for mp in mps)
    zero = sum((w * 0).sum() for w in layer.qnode_weights.values())
    out = torch.zeros(0, n_out, dtype=inputs.dtype) + zero.to(inputs.dtype)
    return _torch_layer_layout(out, [_num_outputs(mp) for mp in mps], unbatched=False)


def _exact_law_forward(layer, inputs):
    """Outputs without gradients under exact-law shot sampling (``None``: evaluate as usual).

    Returns ``(rows, sizes)``: outputs ``(B, n_out)`` and the size of each measurement.
    """
    qnode = layer.qnode
    if sampling.shot_sampling(qnode) != "exact_law":
        return None
    kwargs = {layer.input_arg: inputs.detach().double(),
              **{k: w.detach().double() for k, w in layer.qnode_weights.items()}}
    tapes, _ = qml.workflow.construct_batch(qnode, level="gradient")(**kwargs)
    if len(tapes) != 1 or not tapes[0].shots or tapes[0].shots.has_partitioned_shots:
        return None
    tape = tapes[0]
    params = [np.asarray(p.numpy() if isinstance(p, torch.Tensor) else p)
              for p in tape.get_parameters(trainable_only=False)]
    fwd = tape.bind_new_parameters(params, list(range(len(params))))
    [res] = sampling.execute_exact_law([fwd], qnode.device)
    batch = int(inputs.shape[0])
    out = _flat(res, batch if fwd.batch_size else 1, len(fwd.measurements))
    out = torch.as_tensor(np.broadcast_to(out, (batch, out.shape[1])).copy()).to(inputs.dtype)
    return out, [_num_outputs(mp) for mp in fwd.measurements]


def fused_evaluate_qnode(layer, x):
    """Replacement of ``TorchLayer._evaluate_qnode`` for QNodes using the private transform.

    Returns ``None`` outside autograd (``torch.no_grad()``, or frozen weights and inputs): the
    caller then evaluates the QNode as PennyLane does (under exact-law shot sampling, see
    :mod:`~pennylane_qshiftdp.sampling`, the forward circuit is evaluated here instead). With
    gradients it executes forward and shifted circuits together and keeps the per-example
    Jacobians for the backward pass and Opacus's grad sampler. An empty batch returns a
    zero-row output without executing anything.
    """
    single = x.ndim == 1
    xb = x.reshape(1, -1) if single else x
    if xb.shape[0] == 0:
        return _empty_output(layer, xb)
    weights = list(layer.qnode_weights.values())
    if not (torch.is_grad_enabled()
            and (x.requires_grad or any(w.requires_grad for w in weights))):
        res = _exact_law_forward(layer, xb)
        if res is None:
            return None
        return _torch_layer_layout(res[0], res[1], single)
    ev = evaluate_layer(layer, xb, input_grad=bool(x.requires_grad))
    if layer.training:
        pending = layer.__dict__.setdefault("_qshiftdp_pending", [])
        pending.append(ev)
        del pending[:-_MAX_PENDING]
    out = _FusedLayerFunction.apply(ev, xb, *weights)
    return _torch_layer_layout(out, ev.output_sizes, single)


def _pop_evaluation(layer, inputs: torch.Tensor) -> LayerEvaluation | None:
    pending = layer.__dict__.get("_qshiftdp_pending", [])
    key = (inputs.data_ptr(), tuple(inputs.shape))
    for i in range(len(pending) - 1, -1, -1):
        if pending[i].inputs_ptr == key:
            return pending.pop(i)
    return None


@register_grad_sampler(qml.qnn.TorchLayer)
def torch_layer_grad_sampler(layer, activations, backprops):
    r"""Opacus grad sampler for :class:`pennylane.qnn.TorchLayer` (registered on import).

    Args:
        layer: the TorchLayer (its QNode must use :func:`~pennylane_qshiftdp.param_shift`).
        activations: Opacus's captured inputs, ``[x]`` with ``x`` of shape ``(B, n_in)``.
        backprops: :math:`\partial\ell_j/\partial f_j` per example, shape ``(B, n_out)`` or
            ``(B,)`` (already multiplied by the batch size for a mean-reduced loss).

    Returns:
        dict: per-example gradients ``{weight: tensor of shape (B, *weight.shape)}``.

    Raises:
        SensitivityError: if the QNode's diff method is not the private transform.
    """
    check_private_qnode(layer.qnode)
    x = activations[0]
    xb = x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x
    weights = dict(layer.qnode_weights)
    if xb.shape[0] == 0:
        layer.__dict__["_qshiftdp_backprops"] = torch.zeros(0, 1, dtype=torch.float64)
        return {w: torch.zeros(0, *w.shape, dtype=w.dtype) for w in weights.values()
                if w.requires_grad}
    ev = _pop_evaluation(layer, x)
    if ev is None:
        ev = evaluate_layer(layer, xb)
    batch = xb.shape[0]
    rows = backprops.detach()
    if len(ev.output_sizes) > 1:  # TorchLayer stacked the measurements: (n_meas, B, d)
        rows = rows.reshape(len(ev.output_sizes), batch, -1).transpose(0, 1)
    rows = rows.reshape(batch, -1).double()
    layer.__dict__["_qshiftdp_backprops"] = rows
    layer.__dict__["_qshiftdp_last_evaluation"] = ev
    flat = ev.per_example_weight_grads(rows)  # (B, P)
    out, offset = {}, 0
    for w in weights.values():
        n = w.numel()
        if w.requires_grad:
            out[w] = flat[:, offset:offset + n].reshape(xb.shape[0], *w.shape).to(w.dtype)
        offset += n
    return out


def _uses_private_transform(layer) -> bool:
    return getattr(layer.qnode, "diff_method", None) is param_shift


_compat.install_torch_layer_evaluation(fused_evaluate_qnode, _uses_private_transform)
# Opacus's per-example hooks on a TorchLayer whose inputs need no gradient make torch warn on
# every backward pass; the hook does fire, with the gradients Opacus needs (tested).
warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are "
                        "computed with respect to module outputs", category=UserWarning)
