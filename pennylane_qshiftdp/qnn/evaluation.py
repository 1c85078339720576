r"""Per-example parameter-shift Jacobians of a ``TorchLayer``, in one execution per batch.

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
(:func:`~pennylane_qshiftdp.execute_exact_law`); the recorded shot statistics are
computed from the drawn estimates exactly as from the device's.

Gradients with respect to broadcast inputs (a trainable classical layer before the TorchLayer)
are supported: PennyLane's ``param_shift`` refuses them (pennylane#4462), so the shifts are read
off PennyLane's shifted tapes of one unbroadcast example and applied to the broadcast tape; a
shift rule that is not a pure additive shift is refused.
"""


from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pennylane as qml
import torch

from ..exceptions import UnsupportedMeasurementError
from ..gradients._recording import post_process_recording, rewrite_for_recording
from ..gradients.observables import TRANSFORM_NAME, plan_for
from ..gradients.shift_rules import check_differentiable, expand_tape
from ..gradients.shot_statistics import ShotRecorder, active_recorder
from ..hardware.batched import TEMPLATE_CACHE
from ..sampling.exact_law import execute_exact_law
from ..sampling.modes import shot_sampling
from ._adjoint import adjoint_jacobian
from ._budget import execute_by_shots, shifted_shots
from ._caches import layer_cache
from ._shift_plan import (
    execute_merged,
    param_dependencies,
    shift_rule,
    shifted_tapes,
    unbroadcast,
)
from ._structure import flat_weights, numpy_params, replay, structure_key
from ._structure import lookup as lookup_structure
from ._structure import record as record_structure
from .private_qnode import check_private_qnode
from .routes import choose_route

__all__ = ["GradSampleRecord", "LayerEvaluation", "OutputLayout", "PendingEvaluations",
           "evaluate_layer", "gradient_route", "record_function"]

# Largest number of pending forward evaluations kept per layer (forwards without a backward).
_MAX_PENDING = 16

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
        layout: the return structure of the QNode's function in the call that made this
            evaluation (:class:`OutputLayout`): how PennyLane's layer arranges the outputs.
        single_output: the QNode returns one scalar (``expval``/``var``) per example, so the
            TorchLayer returns shape ``(B,)``.
        output_sizes: number of outputs of each measurement (the columns of ``outputs``).
        output_scalars: per measurement, whether it is one number per example (expval, var).
        route: ``"parameter_shift"`` or ``"adjoint"`` (:mod:`~pennylane_qshiftdp.qnn.routes`).
    """

    outputs: torch.Tensor
    jacobian: torch.Tensor
    weight_rows: list
    weight_jacobian: torch.Tensor
    input_rows: list
    input_jacobians: list
    layout: OutputLayout
    single_output: bool
    output_sizes: tuple = ()
    output_scalars: tuple = ()
    route: str = "parameter_shift"

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


@dataclasses.dataclass
class GradSampleRecord:
    r"""What Opacus's grad sampler used for a layer's last per-example gradients.

    Attributes:
        evaluation: the :class:`LayerEvaluation` of the batch.
        backprops: :math:`\partial\ell/\partial f` per example, shape ``(B, n_out)``
            (float64; already multiplied by the batch size for a mean-reduced loss).
    """

    evaluation: LayerEvaluation
    backprops: torch.Tensor


@dataclasses.dataclass(frozen=True)
class OutputLayout:
    """The return structure of a QNode's function, read off one call of it.

    Attributes:
        structure: the :mod:`pennylane.pytrees` structure of the returned measurements.
        num_measurements: how many measurements the function returns.
    """

    structure: Any
    num_measurements: int

    @property
    def stacked(self) -> int:
        """How many parts PennyLane's TorchLayer stacks on a new leading axis (0: none): a
        tuple of several measurements."""
        res = qml.pytrees.unflatten(list(range(self.num_measurements)), self.structure)
        return len(res) if isinstance(res, tuple) and len(res) > 1 else 0


def record_function(qnode: qml.QNode, kwargs: dict) -> tuple[qml.tape.QuantumScript,
                                                              OutputLayout]:
    """The QNode's function recorded once (as :func:`pennylane.tape.make_qscript` does) and the
    structure of what it returned: both belong to this call, nothing is kept."""
    with qml.queuing.AnnotatedQueue() as queue:
        out = qnode.func(**kwargs)
    tape = qml.tape.QuantumScript.from_queue(queue, shots=qnode.shots)
    leaves, structure = qml.pytrees.flatten(
        out, is_leaf=lambda obj: isinstance(obj, qml.measurements.MeasurementProcess))
    return tape, OutputLayout(structure, len(leaves))


def _same_bytes(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Exact equality of dtype, shape and every byte (a NaN equals itself)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.detach().contiguous().reshape(-1).view(torch.uint8),
                       b.detach().contiguous().reshape(-1).view(torch.uint8))


@dataclasses.dataclass
class _Pending:
    evaluation: LayerEvaluation
    inputs: torch.Tensor
    weights: tuple


class PendingEvaluations:
    """A layer's training evaluations awaiting Opacus's grad sampler, beside Opacus's own stack.

    Opacus's forward hook pushes a layer's inputs onto ``layer.activations`` after every
    forward pass in train mode with gradients enabled and a trainable parameter, and its
    backward hook pops the most recent one for the grad sampler. The layer's forward pass
    pushes its :class:`LayerEvaluation` here under the same conditions (:meth:`push`), with a
    copy of its input rows and weights, and the grad sampler takes back the most recent
    evaluation whose input rows and weights equal, byte for byte, the activations Opacus hands
    it and the layer's weights (:meth:`pop`). The evaluation a step uses is therefore one made
    from exactly that step's inputs and weights, never found by a memory address (an
    address is reused by the allocator, and a non-contiguous input is copied by every
    reshape). At most ``max_pending`` evaluations are kept (forward passes without a backward
    pass are dropped oldest first).

    Attributes:
        last_grad_sample: what the grad sampler used for the last backward pass
            (:class:`GradSampleRecord`), read and cleared by the optimizer's shot-noise credit.
    """

    def __init__(self, max_pending: int = _MAX_PENDING):
        self.max_pending = int(max_pending)
        self.pending: list[_Pending] = []
        self.last_grad_sample: GradSampleRecord | None = None

    def push(self, evaluation: LayerEvaluation, inputs: torch.Tensor, weights) -> None:
        """Keep the evaluation of a training forward pass of ``inputs`` ``(B, n_in)`` at
        ``weights`` (both copied)."""
        self.pending.append(_Pending(evaluation, inputs.detach().clone(),
                                     tuple(w.detach().clone() for w in weights)))
        del self.pending[:-self.max_pending]

    def pop(self, inputs: torch.Tensor, weights) -> LayerEvaluation:
        """The most recent pending evaluation of exactly these input rows and weights
        (removed).

        Raises:
            RuntimeError: if no pending evaluation matches (the forward pass of these
                activations was not a training forward pass of this layer, or was dropped).
        """
        weights = tuple(weights)
        for i in range(len(self.pending) - 1, -1, -1):
            entry = self.pending[i]
            if _same_bytes(entry.inputs, inputs) and len(entry.weights) == len(weights) and \
                    all(_same_bytes(a, b) for a, b in zip(entry.weights, weights, strict=True)):
                return self.pending.pop(i).evaluation
        raise RuntimeError(
            "Opacus asked for the per-example gradients of a TorchLayer forward pass whose "
            "evaluation this layer does not hold: the inputs or weights of that forward pass "
            "differ from every training forward pass awaiting a backward pass (weights changed "
            "between forward and backward, inputs modified in place, Opacus's batch_first=False, "
            f"or more than {self.max_pending} forward passes without a backward pass). No "
            "gradient was computed; run forward, backward and step in that order."
        )

    def clear(self) -> None:
        """Drop every pending evaluation and the last grad sample."""
        self.pending.clear()
        self.last_grad_sample = None


# Gradient options of param_shift at their defaults (the layer applies PennyLane's default rules).
_DEFAULT_GRADIENT_KWARGS = {"argnum": None, "shifts": None, "gradient_recipes": None, "f0": None,
                            "broadcast": False, "fallback_fn": None}


def check_layer_gradient_kwargs(qnode) -> None:
    """Refuse gradient options the per-example evaluation would not apply (custom shifts or
    recipes, broadcast shifts), rather than differentiating with other rules than asked."""
    extra = sorted(k for k, v in qnode.gradient_kwargs.items()
                   if k != "recorder" and not (k in _DEFAULT_GRADIENT_KWARGS
                                               and v is _DEFAULT_GRADIENT_KWARGS[k]))
    if extra:
        raise NotImplementedError(
            f"{TRANSFORM_NAME}: the TorchLayer's QNode sets the gradient option(s) {extra}; "
            f"the per-example evaluation applies PennyLane's default shift rules (and a "
            f"`recorder`) only. Remove {extra} from the QNode, or differentiate the QNode "
            f"with {TRANSFORM_NAME} directly (outside a TorchLayer)."
        )


def check_layer_measurements(tape) -> None:
    """Refuse measurements without a parameter-shift gradient, saying what works, and
    observables the per-example evaluation cannot read (``SparseHamiltonian``)."""
    for mp in tape.measurements:
        if not isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP,
                               qml.measurements.ProbabilityMP)):
            raise UnsupportedMeasurementError(
                f"{TRANSFORM_NAME}: the TorchLayer's QNode returns `{mp}`, which has no "
                f"parameter-shift gradient. Supported returns: expval (one, several in a list "
                f"or tuple, Hamiltonians and sums), var and probs."
            )
        if mp.obs is not None and any(isinstance(op, qml.SparseHamiltonian)
                                      for op in _operands(mp.obs)):
            raise NotImplementedError(
                f"{TRANSFORM_NAME}: the TorchLayer's QNode measures `{mp}`; a "
                f"SparseHamiltonian observable is not supported by the per-example "
                f"evaluation. Use qml.Hermitian with its dense matrix, or a Hamiltonian of "
                f"Pauli words (qml.dot(coeffs, ops))."
            )


def _operands(op) -> list:
    """``op`` and, for sums, products and scalar products, every operand within it."""
    out = [op]
    for child in getattr(op, "operands", ()) or ():
        out.extend(_operands(child))
    base = getattr(op, "base", None)
    if base is not None:
        out.extend(_operands(base))
    return out


def num_outputs(mp, num_wires: int) -> int:
    if isinstance(mp, (qml.measurements.ExpectationMP, qml.measurements.VarianceMP)):
        return 1
    if isinstance(mp, qml.measurements.ProbabilityMP):
        return 2 ** (len(mp.wires) or num_wires)
    raise UnsupportedMeasurementError(
        f"{TRANSFORM_NAME}: a TorchLayer measurement {mp} has no parameter-shift gradient."
    )


def _flat(results, batch: int, num_meas: int) -> tuple[np.ndarray, tuple]:
    """Results of one broadcast tape -> array ``(B, n_out)`` (measurements side by side) and
    the number of columns of each measurement."""
    parts = [results] if num_meas == 1 else list(results)
    cols = [np.asarray(qml.math.toarray(r), dtype=float).reshape(batch, -1) for r in parts]
    return np.concatenate(cols, axis=1), tuple(c.shape[1] for c in cols)


def forward_rows(fwd, device, *, exact: bool, batch: int, bad: np.ndarray, qnode=None,
                 cache: dict | None = None):
    """The forward tape alone (exact-law draws or the device's own execution; with ``qnode``
    on a pennylane-qiskit device, the batched Qiskit route with the templates in ``cache``):
    outputs ``(batch, n_out)``, NaN in the rows ``bad``, and each measurement's number of
    columns."""
    [res] = (execute_exact_law([fwd], device) if exact
             else execute_by_shots([fwd], device, qnode=qnode, cache=cache) if fwd.shots
             else qml.execute([fwd], device, diff_method=None))
    out, sizes = _flat(res, batch if fwd.batch_size else 1, len(fwd.measurements))
    out = np.broadcast_to(out, (batch, out.shape[1])).copy()
    out[bad] = np.nan
    return out, sizes


def scalar_measurements(tape) -> tuple:
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


@dataclasses.dataclass
class _Prepared:
    """A batch's tape, its parameters and their classical dependencies (nothing executed)."""

    qnode: qml.QNode
    tape: qml.tape.QuantumScript
    fwd: qml.tape.QuantumScript
    np_params: list
    deps: list
    diff_idx: list
    w_idx: list
    x_idx: list
    broadcast: set
    w_leaves: list
    batch: int
    layout: OutputLayout
    bad: np.ndarray
    single_output: bool


def _prepare(layer, inputs: torch.Tensor, input_grad: bool) -> _Prepared:
    """The broadcast forward tape of ``inputs`` and which of its parameters are differentiated
    (those of the weights, and of the inputs with ``input_grad``)."""
    qnode = layer.qnode
    check_private_qnode(qnode)
    check_layer_gradient_kwargs(qnode)
    if inputs.ndim != 2 or inputs.shape[0] < 1:
        raise ValueError(f"`inputs` must have shape (B, n_in) with B >= 1. Found "
                         f"{tuple(inputs.shape)}.")
    batch = int(inputs.shape[0])
    # A row with a non-finite entry runs as zeros and reads NaN (outputs and Jacobians), so
    # the other examples' outputs, gradients and shots are those of the batch without it
    # (a NaN angle would otherwise poison the whole broadcast execution, or crash sampling),
    # and only that example's per-example gradient is non-finite (the optimizer zeroes it).
    inputs, bad = finite_rows(inputs)
    names = list(layer.qnode_weights)
    w_leaves = [layer.qnode_weights[k].detach().double().requires_grad_(True) for k in names]
    x_leaf = inputs.detach().double().requires_grad_(True)
    kwargs = {layer.input_arg: x_leaf, **dict(zip(names, w_leaves, strict=True))}
    # The expanded tape of a structure seen before is replayed from the leaves' values
    # (module _structure: only where it provably equals the full construction).
    raw, layout = record_function(qnode, kwargs)
    check_layer_measurements(raw)
    skey = structure_key(qnode, raw, [x_leaf, *w_leaves], input_grad)
    x_np = x_leaf.detach().numpy()
    kept = lookup_structure(layer, skey)
    if kept is not None:
        np_params = replay(kept, x_np, flat_weights(w_leaves))
        deps = kept.deps
        fwd = kept.template.bind_new_parameters(np_params, list(range(len(np_params))))
        tape = fwd
    else:
        tape = _expanded_tape(qnode, kwargs)
        params = tape.get_parameters(trainable_only=False)
        check_differentiable(tape, [i for i, p in enumerate(params)
                                    if isinstance(p, torch.Tensor) and p.requires_grad])
        deps = param_dependencies(params, x_leaf, w_leaves)
        np_params = numpy_params(params)
        # Broadcast tapes with batch size 1 keep their batch axis; an unbroadcast tape
        # (every gate parameter scalar) is evaluated once and shared by the batch.
        fwd = tape.bind_new_parameters(np_params, list(range(len(np_params))))

        def build(x2, w2):
            # leaves that require grad, as here: the expansion depends on trainability
            kw2 = {layer.input_arg: torch.as_tensor(x2).requires_grad_(True),
                   **{k: w.requires_grad_(True) for k, w in zip(names, w2, strict=True)}}
            np2 = numpy_params(_expanded_tape(qnode, kw2).get_parameters(trainable_only=False))
            return np2, fwd.bind_new_parameters(np2, list(range(len(np2))))

        record_structure(layer, skey, params, deps, fwd, x_np, w_leaves, build)
    w_idx = [i for i, (_, row, _) in enumerate(deps) if row is not None]
    x_idx = [i for i, (on_x, _, _) in enumerate(deps) if on_x] if input_grad else []
    broadcast = {i for i, (on_x, _, _) in enumerate(deps) if on_x}
    check_layer_measurements(tape)
    single_output = len(tape.measurements) == 1 and scalar_measurements(tape)[0]
    return _Prepared(qnode, tape, fwd, np_params, deps, sorted(w_idx + x_idx), w_idx, x_idx,
                     broadcast, w_leaves, batch, layout, bad, single_output)


def _expanded_tape(qnode, kwargs) -> qml.tape.QuantumScript:
    """The QNode's one tape at PennyLane's ``"gradient"`` level, expanded for the transform."""
    tapes, _ = qml.workflow.construct_batch(qnode, level="gradient")(**kwargs)
    if len(tapes) != 1:
        raise NotImplementedError(
            f"A TorchLayer QNode that produces {len(tapes)} tapes is not supported by the "
            f"per-example evaluation; use a QNode whose transforms produce one tape."
        )
    [tape], _ = expand_tape(tapes[0])
    if qnode.device.wires is not None:
        # Measurements of no wires (``qml.probs()``) are of every device wire, idle ones
        # included, as when PennyLane executes the QNode (its own device preprocessing).
        [tape], _ = qml.devices.preprocess.validate_device_wires(
            tape, wires=qnode.device.wires, name=qnode.device.name)
    if tape.shots.has_partitioned_shots:
        raise NotImplementedError(
            f"Shot vectors are not supported for per-example gradients (found {tape.shots})."
        )
    return tape


def gradient_route(layer: qml.qnn.TorchLayer, inputs: torch.Tensor, *,
                   input_grad: bool = False) -> str:
    """The route :func:`evaluate_layer` takes for ``inputs`` (nothing is executed).

    ``"adjoint"`` for ``shots=None`` on a state-vector simulator where the adjoint sweep
    applies, ``"parameter_shift"`` otherwise (:mod:`~pennylane_qshiftdp.qnn.routes`). It
    depends on the QNode's structure, shots and device, not on the values of ``inputs``.

    Args:
        layer: a TorchLayer whose QNode uses :func:`~pennylane_qshiftdp.param_shift`.
        inputs: a batch ``(B, n_in)`` (zeros will do).
        input_grad: whether input gradients would be computed too.

    Returns:
        str: ``"adjoint"`` or ``"parameter_shift"``.

    Raises:
        NotImplementedError: for a circuit whose shifted circuits PennyLane cannot build on
            the parameter-shift route (the operation is named).

    Example:
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=1), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.RY(inputs[..., 0], wires=0)
        ...     qml.RX(weights[0], wires=0)
        ...     return qml.expval(qml.Z(0))
        >>> layer = qml.qnn.TorchLayer(circuit, {"weights": (1,)})
        >>> gradient_route(layer, torch.zeros(2, 1))
        'adjoint'
    """
    prep = _prepare(layer, inputs, input_grad)
    if not prep.diff_idx:
        return "parameter_shift"
    route = choose_route(prep.qnode, prep.tape, prep.diff_idx, recorder=_recorder_of(prep.qnode))
    if route == "parameter_shift":
        # PennyLane's shifted circuits of one example (nothing runs): a circuit it cannot
        # shift is refused here, before training, not at the first batch.
        rep = prep.fwd.bind_new_parameters(unbroadcast(prep.np_params, prep.broadcast),
                                           list(range(len(prep.np_params))))
        rep.trainable_params = prep.diff_idx
        shift_rule(layer, rep, prep.diff_idx, prep.x_idx)
    return route


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
        SensitivityError: for a QNode whose diff method is not the private transform, or a
            gate parameter depending on both inputs and weights (as
            :func:`~pennylane_qshiftdp.sensitivity` raises for it).
        UnsupportedMeasurementError: for a return without a parameter-shift gradient (as
            :func:`~pennylane_qshiftdp.param_shift` raises for it).
        NotImplementedError: for shot vectors, a QNode that produces several tapes, a shift
            rule that is not an additive shift of a broadcast input parameter, a recorder with
            a measurement other
            than ``expval``, or, under exact-law sampling, a device without a numpy generator
            or an observable with more than two eigenvalues.

    Example:
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> layer = qml.qnn.TorchLayer(circuit,
        ...                            {"weights": (1, 2, 3)})
        >>> ev = evaluate_layer(layer, torch.zeros(3, 2, dtype=torch.float64))
        >>> tuple(ev.outputs.shape), tuple(ev.jacobian.shape)
        ((3, 1), (3, 1, 6))
    """
    prep = _prepare(layer, inputs, input_grad)
    qnode, tape, fwd, np_params, deps = prep.qnode, prep.tape, prep.fwd, prep.np_params, prep.deps
    diff_idx, w_idx, x_idx, broadcast = prep.diff_idx, prep.w_idx, prep.x_idx, prep.broadcast
    batch, layout, bad, single_output = prep.batch, prep.layout, prep.bad, prep.single_output
    num_meas = len(tape.measurements)
    total = sum(p.numel() for p in prep.w_leaves)
    wjac = (torch.stack([deps[i][1] for i in w_idx]) if w_idx
            else torch.zeros(0, total, dtype=torch.float64))
    rows = _BatchRows(batch=batch, bad=bad, weight_rows=[diff_idx.index(i) for i in w_idx],
                      weight_jacobian=wjac, input_rows=[diff_idx.index(i) for i in x_idx],
                      input_jacobians=[deps[i][2].reshape(batch, -1) for i in x_idx],
                      layout=layout, single_output=single_output)

    device = qnode.device
    exact = shot_sampling(qnode) == "exact_law" and bool(tape.shots)
    if not diff_idx:
        out, sizes = forward_rows(fwd, device, exact=exact, batch=batch, bad=bad, qnode=qnode,
                                  cache=layer_cache(layer, TEMPLATE_CACHE))
        return LayerEvaluation(torch.as_tensor(out), torch.zeros(batch, out.shape[1], 0,
                               dtype=torch.float64), [], wjac, [], [], layout, single_output,
                               sizes, scalar_measurements(tape))

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
                f"{TRANSFORM_NAME} records shot statistics for expval measurements only; "
                f"found {unsupported}. Detach the recorder to differentiate var/probs."
            )
        plans = [plan_for(mp.obs) for mp in tape.measurements]
    res_batch = batch if fwd.batch_size else 1
    if choose_route(qnode, tape, diff_idx, recorder=recorder) == "adjoint":
        # Analytic on a state-vector simulator: one forward and one backward sweep.
        out, jac = adjoint_jacobian(fwd, diff_idx)
        return _evaluation(out, jac, rows, (1,) * num_meas, scalar_measurements(tape),
                           "adjoint")
    rep = fwd.bind_new_parameters(unbroadcast(np_params, broadcast), list(range(len(np_params))))
    rep.trainable_params = diff_idx
    rule = shift_rule(layer, rep, diff_idx, x_idx)
    budget = shifted_shots(qnode, rule, rep)  # None without a shot budget (module _budget)
    if exact:
        # Analytic circuits merged into broadcast tapes, estimates drawn from the exact law
        # (it refuses the observables that recording would rewrite into samples).
        results = execute_merged(fwd, rule, device, analytic=False, shifted_shots=budget)
    elif not tape.shots and recorder is None:
        # Analytic: the same merged, light-cone-pruned, gate-fused tapes, read analytically.
        results = execute_merged(fwd, rule, device, analytic=True)
    else:
        shifted = shifted_tapes(fwd, rule, np_params)
        if budget is not None:
            shifted = [t.copy(shots=n) for t, n in zip(shifted, budget, strict=True)]
        if recorder is not None:
            shifted, per_tape = rewrite_for_recording(shifted, plans, tape.shots)
        results = execute_by_shots([fwd, *shifted], device, qnode=qnode,
                                   cache=layer_cache(layer, TEMPLATE_CACHE))
    out, sizes = _flat(results[0], res_batch, num_meas)
    if recorder is not None:
        rep_b = rep.copy()
        grad = post_process_recording(results[1:], tape=rep_b, plans=plans,
                                       num_tapes=rule.num_tapes, per_tape=per_tape, fn=rule.fn,
                                       recorder=recorder, tape_shots=budget)
    else:
        grad = rule.fn(results[1:])
    jac = _jacobian_array(grad, res_batch, num_meas, len(diff_idx))
    return _evaluation(out, jac, rows, sizes, scalar_measurements(tape), "parameter_shift")


@dataclasses.dataclass(frozen=True)
class _BatchRows:
    """What :func:`evaluate_layer` knows of the batch before executing: its size, the rows
    with a non-finite input, where the weights and inputs enter the differentiated gate
    parameters (the fields of :class:`LayerEvaluation` of the same names), the layout."""

    batch: int
    bad: np.ndarray
    weight_rows: list
    weight_jacobian: torch.Tensor
    input_rows: list
    input_jacobians: list
    layout: OutputLayout
    single_output: bool


def _evaluation(out, jac, rows: _BatchRows, sizes, scalars, route) -> LayerEvaluation:
    """The :class:`LayerEvaluation` of outputs ``(B', n_out)`` and Jacobians
    ``(B', n_out, n_diff)`` (``B'`` 1 for an unbroadcast tape, shared by the batch); rows with
    a non-finite input read NaN."""
    batch, bad, input_jacs = rows.batch, rows.bad, rows.input_jacobians
    if out.shape[0] != batch:
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
        weight_rows=rows.weight_rows,
        weight_jacobian=rows.weight_jacobian,
        input_rows=rows.input_rows,
        input_jacobians=input_jacs,
        layout=rows.layout,
        single_output=rows.single_output,
        output_sizes=sizes,
        output_scalars=scalars,
        route=route,
    )


def prepared_batch(layer: qml.qnn.TorchLayer, inputs: torch.Tensor, input_grad: bool):
    """The batch's broadcast forward tape and its differentiated parameters, as
    :func:`evaluate_layer` prepares them (nothing is executed): what
    :mod:`~pennylane_qshiftdp.qnn.circuit_count` counts a step's circuits from."""
    return _prepare(layer, inputs, input_grad)
