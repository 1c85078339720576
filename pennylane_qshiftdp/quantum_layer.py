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

from . import sampling
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
    "uses_private_transform",
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
        output_scalars: per measurement, whether it is one number per example (expval, var).
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
    output_scalars: tuple = ()

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


def _check_layer_measurements(tape) -> None:
    """Refuse measurements without a parameter-shift gradient, saying what works."""
    for mp in tape.measurements:
        if not isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP,
                               qml.measurements.ProbabilityMP)):
            raise NotImplementedError(
                f"{_TRANSFORM_NAME}: the TorchLayer's QNode returns `{mp}`, which has no "
                f"parameter-shift gradient. Supported returns: expval (one, several in a list "
                f"or tuple, Hamiltonians and sums), var and probs."
            )


def _num_outputs(mp, num_wires: int) -> int:
    if isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP)):
        return 1
    if isinstance(mp, qml.measurements.ProbabilityMP):
        return 2 ** (len(mp.wires) or num_wires)
    raise NotImplementedError(
        f"{_TRANSFORM_NAME}: a TorchLayer measurement {mp} has no parameter-shift gradient."
    )


def _flat(results, batch: int, num_meas: int) -> tuple[np.ndarray, tuple]:
    """Results of one broadcast tape -> array ``(B, n_out)`` (measurements side by side) and
    the number of columns of each measurement."""
    parts = [results] if num_meas == 1 else list(results)
    cols = [np.asarray(qml.math.toarray(r), dtype=float).reshape(batch, -1) for r in parts]
    return np.concatenate(cols, axis=1), tuple(c.shape[1] for c in cols)


def _forward_rows(fwd, device, *, exact: bool, batch: int, bad: np.ndarray):
    """The forward tape alone (exact-law draws or the device's own execution): outputs
    ``(batch, n_out)``, NaN in the rows ``bad``, and each measurement's number of columns."""
    [res] = (sampling.execute_exact_law([fwd], device) if exact
             else qml.execute([fwd], device, diff_method=None))
    out, sizes = _flat(res, batch if fwd.batch_size else 1, len(fwd.measurements))
    out = np.broadcast_to(out, (batch, out.shape[1])).copy()
    out[bad] = np.nan
    return out, sizes


def _scalars(tape) -> tuple:
    """Per measurement, whether it returns one number per example (``expval``, ``var``)."""
    return tuple(isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP))
                 for mp in tape.measurements)


def _jacobian_array(grad, batch: int, num_meas: int, num_params: int) -> np.ndarray:
    """PennyLane's gradient structure (with a trailing batch axis) -> ``(B, n_out, n_params)``."""
    per_meas = [grad] if num_meas == 1 else list(grad)
    blocks = []
    for g in per_meas:
        per_param = [g] if num_params == 1 else list(g)
        cols = [np.asarray(qml.math.toarray(a), dtype=float) for a in per_param]
        # each column: (B,) or, for probs, (B, d) (PennyLane keeps the batch axis first)
        cols = [c.reshape(batch, -1) for c in cols]
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


def _op_params(tape) -> list:
    """The gate parameters of ``tape`` (the first tape parameters; observables' follow)."""
    return [d for op in tape.operations for d in op.data]


def _shifts(rep_tape, tapes):
    """Per shifted tape, the gate-parameter offsets relative to ``rep_tape`` (arrays).

    PennyLane's shifted tapes keep the gates of ``rep_tape`` and move their parameters; their
    measurements may differ (a variance's rule measures ``expval`` and ``expval(O²)``).
    """
    base = [np.asarray(p, dtype=float) for p in _op_params(rep_tape)]
    sig = [(op.name, op.wires, len(op.data)) for op in rep_tape.operations]
    out = []
    for t in tapes:
        if [(op.name, op.wires, len(op.data)) for op in t.operations] != sig:
            raise NotImplementedError(
                f"{_TRANSFORM_NAME}: a shifted circuit of this TorchLayer changes the gates "
                f"(not only their parameters); the per-example evaluation needs shift rules "
                f"that move gate parameters (PennyLane's qubit gates, custom shifts)."
            )
        out.append([np.asarray(p, dtype=float) - b
                    for p, b in zip(_op_params(t), base, strict=True)])
    return out


@dataclasses.dataclass
class _ShiftRule:
    """PennyLane's shifted circuits of one circuit structure, as offsets and measurements.

    Attributes:
        shifts: per shifted tape, per gate parameter, the offset from the forward circuit.
        fn: the transform's processing function (results of the shifted tapes -> gradient).
        measurements: per shifted tape, its measurements.
        groups: the forward circuit (index 0) and the shifted ones (index ``t + 1``) grouped by
            measurements: ``[(measurements, indices, offsets)]`` with ``offsets`` per gate
            parameter an array ``(len(indices), *shape)`` (for exact-law merging).
    """

    shifts: list
    fn: object
    measurements: list
    groups: list

    @property
    def num_tapes(self) -> int:
        return len(self.shifts)


def _make_rule(rep, g_tapes, fn) -> _ShiftRule:
    shifts = _shifts(rep, g_tapes)
    zero = [np.zeros_like(np.asarray(p, dtype=float)) for p in _op_params(rep)]
    all_mps = [list(rep.measurements)] + [list(t.measurements) for t in g_tapes]
    all_offsets = [zero, *shifts]
    keys, groups = {}, []
    for c, mps in enumerate(all_mps):
        key = tuple(mp.hash for mp in mps)
        if key not in keys:
            keys[key] = len(groups)
            groups.append((mps, []))
        groups[keys[key]][1].append(c)
    groups = [(mps, idx, [np.stack([all_offsets[c][k] for c in idx]) for k in range(len(zero))])
              for mps, idx in groups]
    return _ShiftRule(shifts, fn, all_mps[1:], groups)


def _shifted_tapes(fwd, rule: _ShiftRule, np_params) -> list:
    """The broadcast shifted tapes: ``fwd``'s gates with each rule's offsets, its measurements."""
    n_op = len(_op_params(fwd))
    idx = list(range(n_op))
    return [fwd.copy(measurements=mps).bind_new_parameters(
                [p + d for p, d in zip(np_params[:n_op], s, strict=True)], idx)
            for s, mps in zip(rule.shifts, rule.measurements, strict=True)]


def _execute_merged(fwd, rule: _ShiftRule, device, *, analytic: bool) -> list:
    """Forward and shifted circuits, per group of circuits with the same measurements one
    merged evaluation (one group for expval models): analytic (``shots=None``) or by
    exact-law sampling."""
    results = [None] * (1 + rule.num_tapes)
    n_op = len(_op_params(fwd))
    for mps, idx, offsets in rule.groups:
        template = fwd.copy(measurements=mps)
        obs_params = template.get_parameters(trainable_only=False)[n_op:]
        full = list(offsets) + [np.zeros((len(idx), *np.shape(p))) for p in obs_params]
        for c, r in zip(idx, sampling.execute_offsets(template, full, device,
                                                       analytic=analytic), strict=True):
            results[c] = r
    return results


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
    rule = _make_rule(rep, g_tapes, fn)
    cacheable = all(_cacheable(op) for op, t in zip(rep.operations, ops_of, strict=True) if t)
    if not (cacheable or x_idx):
        return rule
    params = _op_params(rep)
    probed = rep.bind_new_parameters(
        [np.asarray(p, dtype=float) + _ADDITIVITY_PROBE if i in trainable else p
         for i, p in enumerate(params)], list(range(len(params))))
    probed.trainable_params = diff_idx
    g2, _ = _pennylane_tapes(probed)
    moved = set()
    if len(g2) != len(g_tapes):
        moved = set(trainable)
    elif [[mp.hash for mp in t.measurements] for t in g2] != [
            [mp.hash for mp in mps] for mps in rule.measurements]:
        moved = set(trainable)
    else:
        for s1, s2 in zip(rule.shifts, _shifts(probed, g2), strict=True):
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


def finite_rows(inputs: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    """``inputs`` ``(B, n_in)`` with every row holding a non-finite entry set to zeros, and the
    boolean mask ``(B,)`` of those rows."""
    bad = ~torch.isfinite(inputs.detach()).all(dim=-1)
    if not bool(bad.any()):
        return inputs, bad.numpy()
    return inputs.detach().masked_fill(bad[:, None], 0.0), bad.numpy()


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
    key = (inputs.data_ptr(), tuple(inputs.shape))
    # A row with a non-finite entry runs as zeros and reads NaN (outputs and Jacobians), so
    # the other examples' outputs, gradients and shots are those of the batch without it
    # (a NaN angle would otherwise poison the whole broadcast execution, or crash sampling),
    # and only that example's per-example gradient is non-finite (the optimizer zeroes it).
    inputs, bad = finite_rows(inputs)
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
    _check_layer_measurements(tape)
    single_output = len(tape.measurements) == 1 and _scalars(tape)[0]

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
        out, sizes = _forward_rows(fwd, device, exact=exact, batch=batch, bad=bad)
        return LayerEvaluation(torch.as_tensor(out), torch.zeros(batch, out.shape[1], 0,
                               dtype=torch.float64), [], wjac, [], [], key, single_output,
                               sizes, _scalars(tape))

    rep = fwd.bind_new_parameters(_unbroadcast(np_params, broadcast), list(range(len(np_params))))
    rep.trainable_params = diff_idx
    rule = _shift_rule(layer, rep, diff_idx, x_idx)
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
        results = _execute_merged(fwd, rule, device, analytic=False)
    elif not tape.shots and recorder is None:
        # Analytic: the same merged, light-cone-pruned, gate-fused tapes, read analytically.
        results = _execute_merged(fwd, rule, device, analytic=True)
    else:
        shifted = _shifted_tapes(fwd, rule, np_params)
        if recorder is not None:
            shifted, per_tape = _rewrite(shifted, plans, tape.shots)
        results = qml.execute([fwd, *shifted], device, diff_method=None)
    res_batch = batch if fwd.batch_size else 1
    out, sizes = _flat(results[0], res_batch, num_meas)
    if recorder is not None:
        rep_b = rep.copy()
        grad = _post_process_recording(results[1:], tape=rep_b, plans=plans,
                                       num_tapes=rule.num_tapes, per_tape=per_tape, fn=rule.fn,
                                       recorder=recorder)
    else:
        grad = rule.fn(results[1:])
    jac = _jacobian_array(grad, res_batch, num_meas, len(diff_idx))
    if res_batch != batch:
        out = np.broadcast_to(out, (batch, out.shape[1])).copy()
        jac = np.broadcast_to(jac, (batch, *jac.shape[1:])).copy()
    if bad.any():
        out, jac = np.array(out, copy=True), np.array(jac, copy=True)
        out[bad], jac[bad] = np.nan, np.nan
        nan_rows = torch.as_tensor(bad)
        input_jacs = [dj.masked_fill(nan_rows[:, None], float("nan")) for dj in input_jacs]
    return LayerEvaluation(
        outputs=torch.as_tensor(out),
        jacobian=torch.as_tensor(jac),
        weight_rows=weight_rows,
        weight_jacobian=wjac,
        input_rows=input_rows,
        input_jacobians=input_jacs,
        inputs_ptr=key,
        single_output=single_output,
        output_sizes=sizes,
        output_scalars=_scalars(tape),
    )


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


def uses_private_transform(qnode) -> bool:
    """Whether ``qnode`` is differentiated by :func:`~pennylane_qshiftdp.param_shift`."""
    return getattr(qnode, "diff_method", None) is param_shift


def _split(rows: torch.Tensor, sizes, scalars) -> list:
    """Rows ``(B, n_out)`` -> per measurement ``(B,)`` (expval/var) or ``(B, d)``."""
    parts, start = [], 0
    for d, scalar in zip(sizes, scalars, strict=True):
        part = rows[:, start:start + d]
        parts.append(part.reshape(-1) if scalar else part)
        start += d
    return parts


def _output_structure(layer, x):
    """The pytree structure of the QNode function's return (``qml.pytrees``) and its number
    of measurements, cached on the layer."""
    cached = layer.__dict__.get("_qshiftdp_output_structure")
    if cached is not None:
        return cached
    kwargs = {layer.input_arg: x.detach()[0] if x.ndim > 1 and x.shape[0] else x.detach(),
              **{k: w.detach() for k, w in layer.qnode_weights.items()}}
    with qml.queuing.AnnotatedQueue():
        out = layer.qnode.func(**kwargs)
    leaves, structure = qml.pytrees.flatten(
        out, is_leaf=lambda obj: isinstance(obj, qml.measurements.MeasurementProcess))
    layer.__dict__["_qshiftdp_output_structure"] = (structure, len(leaves))
    return structure, len(leaves)


def stacked_parts(layer, x) -> int:
    """How many parts PennyLane's TorchLayer stacks on a new leading axis (0: none)."""
    structure, n_leaves = _output_structure(layer, x)
    res = qml.pytrees.unflatten(list(range(n_leaves)), structure)
    return len(res) if isinstance(res, tuple) and len(res) > 1 else 0


def torch_layer_output(layer, parts: list, inputs: torch.Tensor):
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
    structure, n_leaves = _output_structure(layer, x)
    if n_leaves != len(parts):
        raise NotImplementedError(
            f"The QNode function returns {n_leaves} measurements but its tape "
            f"has {len(parts)}; the per-example evaluation needs one tape measurement per "
            f"returned measurement."
        )
    res = qml.pytrees.unflatten(parts, structure)
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
        if batched:
            results = [torch.reshape(r, (*inputs.shape[:-1], *r.shape[1:])) for r in results]
        return torch.stack(results, dim=0)
    if batched:
        results = torch.reshape(results, (*inputs.shape[:-1], *results.shape[1:]))
    return results


def empty_parts(layer, inputs) -> list:
    """Zero-row parts connected to the weights (Poisson sampling draws empty batches)."""
    names = list(layer.qnode_weights)
    x0 = torch.zeros(inputs.shape[-1], dtype=torch.float64)
    kwargs = {layer.input_arg: x0, **{k: layer.qnode_weights[k].detach() for k in names}}
    tapes, _ = qml.workflow.construct_batch(layer.qnode, level="user")(**kwargs)
    tape = tapes[0]
    _check_layer_measurements(tape)
    num_wires = len(layer.qnode.device.wires or tape.wires)
    sizes = [_num_outputs(mp, num_wires) for mp in tape.measurements]
    zero = sum((w * 0).sum() for w in layer.qnode_weights.values())
    out = torch.zeros(0, sum(sizes), dtype=inputs.dtype) + zero.to(inputs.dtype)
    return _split(out, sizes, _scalars(tape))


def forward_parts(layer, inputs) -> list | None:
    """Parts without gradients (``torch.no_grad()``, frozen layers): the forward circuit of
    the batch only, by the device's own sampling or, under exact-law sampling, by exact-law
    draws; ``None``: evaluate as PennyLane's layer does (a QNode producing several tapes, or
    a shot vector).

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
    _check_layer_measurements(tape)
    params = [np.asarray(p.numpy() if isinstance(p, torch.Tensor) else p)
              for p in tape.get_parameters(trainable_only=False)]
    fwd = tape.bind_new_parameters(params, list(range(len(params))))
    exact = sampling.shot_sampling(qnode) == "exact_law" and bool(tape.shots)
    out, sizes = _forward_rows(fwd, qnode.device, exact=exact, batch=int(inputs.shape[0]),
                               bad=bad)
    return _split(torch.as_tensor(out).to(inputs.dtype), sizes, _scalars(fwd))


def fused_parts(layer, x: torch.Tensor, weights: list, *, input_grad: bool) -> list:
    """Forward and shifted circuits of the batch ``x`` ``(B, n_in)`` in one execution; the
    per-example Jacobians are kept for the backward pass and Opacus's grad sampler."""
    ev = evaluate_layer(layer, x, input_grad=input_grad)
    if layer.training:
        pending = layer.__dict__.setdefault("_qshiftdp_pending", [])
        pending.append(ev)
        del pending[:-_MAX_PENDING]
    out = _FusedLayerFunction.apply(ev, x, *weights)
    return _split(out, ev.output_sizes, ev.output_scalars)


def _pop_evaluation(layer, inputs: torch.Tensor) -> LayerEvaluation | None:
    pending = layer.__dict__.get("_qshiftdp_pending", [])
    key = (inputs.data_ptr(), tuple(inputs.shape))
    for i in range(len(pending) - 1, -1, -1):
        if pending[i].inputs_ptr == key:
            return pending.pop(i)
    return None


def torch_layer_grad_sampler(layer, activations, backprops):
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
    if any(getattr(w, "grad_sample", None) is not None for w in layer.qnode_weights.values()):
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
        layer.__dict__["_qshiftdp_backprops"] = torch.zeros(0, 1, dtype=torch.float64)
        return {w: torch.zeros(0, *w.shape, dtype=w.dtype) for w in weights.values()
                if w.requires_grad}
    ev = _pop_evaluation(layer, xb)
    if ev is None:
        ev = evaluate_layer(layer, xb)
    rows_n = xb.shape[0]
    rows = backprops.detach()
    stacked = stacked_parts(layer, xb)
    if stacked:  # PennyLane's layer stacked the parts: (n_parts, *batch, d)
        rows = rows.reshape(stacked, rows_n, -1).transpose(0, 1)
    rows = rows.reshape(rows_n, -1).double()
    layer.__dict__["_qshiftdp_backprops"] = rows
    layer.__dict__["_qshiftdp_last_evaluation"] = ev
    flat = ev.per_example_weight_grads(rows)  # (rows, P)
    flat = flat.reshape(n_examples, -1, flat.shape[-1]).sum(dim=1)
    out, offset = {}, 0
    for w in weights.values():
        n = w.numel()
        if w.requires_grad:
            out[w] = flat[:, offset:offset + n].reshape(n_examples, *w.shape).to(w.dtype)
        offset += n
    return out


# Opacus's per-example hooks on a TorchLayer whose inputs need no gradient make torch warn on
# every backward pass; the hook does fire, with the gradients Opacus needs (tested).
warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are "
                        "computed with respect to module outputs", category=UserWarning)
