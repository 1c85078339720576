r"""Which circuits a TorchLayer's batch runs: PennyLane's shift rules as parameter offsets.

For a batch, the forward circuit is one broadcast tape; PennyLane's shifted tapes of one
unbroadcast example (:func:`~pennylane_qshiftdp.param_shift`'s own) are read as offsets of the
gate parameters (:class:`ShiftRule`) and applied to the broadcast tape, so every shifted circuit
of every example is one broadcast tape too. The classical dependencies of the gate parameters
on the inputs and the weights (:func:`param_dependencies`) come from torch's autograd.

For a circuit made of PennyLane's own qubit gates, whose rules are fixed by the gate type, the
rule is computed once per circuit structure and kept per layer (:func:`shift_rule`), after
checking that moving every differentiated parameter leaves the offsets unchanged.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pennylane as qml
import torch

from .._validation import ignoring_warnings
from ..exceptions import SensitivityError
from ..gradients._keys import measurement_key, value_key
from ..gradients.observables import TRANSFORM_NAME
from ..gradients.shift_rules import pennylane_tapes
from ..sampling.exact_law import execute_offsets
from ._caches import layer_cache

__all__: list[str] = []

# Offset applied to broadcast parameters to check that a shift rule is a pure additive shift.
_ADDITIVITY_PROBE = 0.3713


# Shifts read off two representative tapes must agree to this tolerance.
_SHIFT_ATOL = 1e-12


# Largest number of circuit structures whose shift rule a layer keeps.
_MAX_SHIFT_RULES = 16


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
        with ignoring_warnings(("", Warning)):  # torch's vmap performance notes
            batched = torch.autograd.grad(stacked, leaves, grad_outputs=eye,
                                          retain_graph=True, allow_unused=True,
                                          is_grads_batched=True)
        return [tuple(None if g is None else g[k] for g in batched) for k in range(len(outs))]
    except RuntimeError:
        return [torch.autograd.grad(o, leaves, retain_graph=True, allow_unused=True)
                for o in outs]


def param_dependencies(params, x_leaf, w_leaves) -> list[tuple]:
    """For every tape parameter: (depends on inputs, row of ∂φ/∂θ or None, ∂φ[b]/∂x[b])."""
    deps: list[tuple[bool, torch.Tensor | None, torch.Tensor | None]] = []
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
            raise SensitivityError(
                "A gate parameter depends on both the inputs and the weights: each gate "
                "parameter must depend on the inputs or on the weights, not both (in RX(w * x) "
                "the derivative with respect to w is the data itself, so the gradient has no "
                "a-priori bound; RX(x + w) is not supported either). Use separate gates for "
                "data and weights (data re-uploading): RX(x) RX(w), which equals RX(x + w) for "
                "rotations about one axis."
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


def unbroadcast(params, broadcast, offset=0.0):
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
                f"{TRANSFORM_NAME}: a shifted circuit of this TorchLayer changes the gates "
                f"(not only their parameters); the per-example evaluation needs shift rules "
                f"that move gate parameters (PennyLane's qubit gates, custom shifts)."
            )
        out.append([np.asarray(p, dtype=float) - b
                    for p, b in zip(_op_params(t), base, strict=True)])
    return out


@dataclasses.dataclass
class ShiftRule:
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


def _make_rule(rep, g_tapes, fn) -> ShiftRule:
    shifts = _shifts(rep, g_tapes)
    zero = [np.zeros_like(np.asarray(p, dtype=float)) for p in _op_params(rep)]
    all_mps = [list(rep.measurements)] + [list(t.measurements) for t in g_tapes]
    all_offsets = [zero, *shifts]
    keys: dict[tuple, int] = {}
    members: list[tuple[list, list[int]]] = []
    for c, mps in enumerate(all_mps):
        key = tuple(measurement_key(mp) for mp in mps)
        if key not in keys:
            keys[key] = len(members)
            members.append((mps, []))
        members[keys[key]][1].append(c)
    groups = [(mps, idx, [np.stack([all_offsets[c][k] for c in idx]) for k in range(len(zero))])
              for mps, idx in members]
    return ShiftRule(shifts, fn, all_mps[1:], groups)


def shifted_tapes(fwd, rule: ShiftRule, np_params) -> list:
    """The broadcast shifted tapes: ``fwd``'s gates with each rule's offsets, its measurements."""
    n_op = len(_op_params(fwd))
    idx = list(range(n_op))
    return [fwd.copy(measurements=mps).bind_new_parameters(
                [p + d for p, d in zip(np_params[:n_op], s, strict=True)], idx)
            for s, mps in zip(rule.shifts, rule.measurements, strict=True)]


def execute_merged(fwd, rule: ShiftRule, device, *, analytic: bool,
                   shifted_shots: list[int] | None = None) -> list:
    """Forward and shifted circuits, per group of circuits with the same measurements (and
    shots) one merged evaluation (one group for expval models): analytic (``shots=None``) or
    by exact-law sampling, the shifted circuits with ``shifted_shots`` each if given (a shot
    budget, :mod:`._budget`), else with the forward circuit's shots."""
    results = [None] * (1 + rule.num_tapes)
    n_op = len(_op_params(fwd))
    shots = [fwd.shots] + ([fwd.shots] * rule.num_tapes if shifted_shots is None
                           else [qml.measurements.Shots(int(n)) for n in shifted_shots])
    for mps, idx, offsets in rule.groups:
        for count in dict.fromkeys(shots[c] for c in idx):
            pos = [k for k, c in enumerate(idx) if shots[c] == count]
            template = fwd.copy(measurements=mps, shots=count)
            obs_params = template.get_parameters(trainable_only=False)[n_op:]
            full = [o[pos] for o in offsets] + [np.zeros((len(pos), *np.shape(p)))
                                                for p in obs_params]
            for k, r in zip(pos, execute_offsets(template, full, device, analytic=analytic),
                            strict=True):
                results[idx[k]] = r
    return results


def _cacheable(op) -> bool:
    """PennyLane's qubit gates: shift rules fixed by the gate type, additive, value-free."""
    return (type(op).__module__.startswith(("pennylane.ops.qubit",
                                            "pennylane.ops.op_math.controlled_ops"))
            and getattr(op, "grad_recipe", None) is not None
            and all(r is None for r in op.grad_recipe))


def rule_key(rep, diff_idx) -> tuple | None:
    """The exact key of the shift rule of ``rep``: per gate its type, wires and
    hyperparameters (bytes of arrays, nested operators with their data), every measurement
    exactly (:func:`~pennylane_qshiftdp.gradients._keys.measurement_key`, never an operator's
    printed hash), the differentiated parameters and the shots; ``None`` (not cached) if a
    hyperparameter has no exact key."""
    try:
        ops = tuple((type(op), tuple(op.wires.tolist()), value_key(dict(op.hyperparameters)))
                    for op in rep.operations)
        mps = tuple(measurement_key(mp) for mp in rep.measurements)
    except TypeError:
        return None
    return (ops, mps, tuple(diff_idx), rep.shots)


def cached_shift_rules(layer) -> dict:
    """The shift rules kept for ``layer``, by :func:`rule_key` (a live dict on the layer)."""
    return layer_cache(layer, "shift_rules")


def shift_rule(layer, rep, diff_idx, x_idx):
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
    key = rule_key(rep, diff_idx)
    cache = cached_shift_rules(layer)
    if key is not None and key in cache:
        return cache[key]
    g_tapes, fn = pennylane_tapes(rep)
    rule = _make_rule(rep, g_tapes, fn)
    cacheable = all(_cacheable(op) for op, t in zip(rep.operations, ops_of, strict=True) if t)
    if not (cacheable or x_idx):
        return rule
    params = _op_params(rep)
    probed = rep.bind_new_parameters(
        [np.asarray(p, dtype=float) + _ADDITIVITY_PROBE if i in trainable else p
         for i, p in enumerate(params)], list(range(len(params))))
    probed.trainable_params = diff_idx
    g2, _ = pennylane_tapes(probed)
    moved = set()
    if len(g2) != len(g_tapes):
        moved = set(trainable)
    elif [[measurement_key(mp) for mp in t.measurements] for t in g2] != [
            [measurement_key(mp) for mp in mps] for mps in rule.measurements]:
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
    if cacheable and not moved and key is not None:
        if len(cache) >= _MAX_SHIFT_RULES:
            cache.clear()
        cache[key] = rule
    return rule
