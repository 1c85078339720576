r"""How many circuits, shots and device batches a TorchLayer's training step sends (not run).

A training forward pass of :class:`~pennylane_qshiftdp.qnn.TorchLayer` on :math:`B` examples
runs, on the parameter-shift route, the forward circuit and the :math:`T` shifted circuits of
PennyLane's rules (:math:`T = 2P_\text{cone}` for two-term rules, :math:`P_\text{cone}` the
differentiated gate parameters inside the measured observables' light cone) for every example:

.. math::

    \text{circuits} = B\,(1 + T), \qquad
    \text{shots} = B\,\big(N_s + \textstyle\sum_t N_t\big),

with :math:`N_s` the QNode's shots and :math:`N_t = N_s` unless a shot budget splits them
(:mod:`pennylane_qshiftdp.sampling.allocation`). All go to the device in one
:func:`pennylane.execute` call (one batch; one per shot count under a budget). A device that
splits circuits further (several non-commuting observables, a Hamiltonian estimated term by
term) runs more: :func:`layer_cost` counts the circuits after the device's own preprocessing,
as its :class:`pennylane.Tracker` counts them (``executions``). Under exact-law sampling and
analytic parameter shift the same circuits are simulated by merged evaluations (one batch per
group of measurements) and counted as the device's tracker counts them; on the adjoint route
(analytic, state-vector simulators) nothing goes to the device.

Nothing here runs a circuit: :func:`counting_layers` makes every TorchLayer's forward pass
record how it was called (rows, whether input gradients flow) and return zeros in its output
layout, so a model's own forward pass says which layers run per step; :func:`layer_cost` builds
the tapes a batch would send from synthetic inputs (zeros: the structure of the circuits, never
the data) and counts them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np
import pennylane as qml
import torch
from pennylane.devices.qubit.sampling import get_num_shots_and_executions

from ..gradients._recording import rewrite_for_recording
from ..gradients.observables import plan_for
from ..gradients.shift_rules import coefficient_matrix
from ..gradients.shot_statistics import active_recorder
from ..hardware.batched import route_refusal, sampler_of, uses_batched_route
from ..sampling.exact_law import simulates_with_kernels
from ..sampling.modes import shot_sampling
from ._budget import shifted_shots, shot_counts
from ._outputs import empty_parts, torch_layer_output
from ._shift_plan import shift_rule, shifted_tapes, unbroadcast
from .evaluation import prepared_batch
from .routes import choose_route

__all__ = ["LayerCall", "LayerCost", "counting_layers", "execution_text", "layer_cost",
           "layer_tapes", "planned_forward"]


@dataclasses.dataclass(frozen=True)
class LayerCall:
    """One forward pass of a TorchLayer recorded by :func:`counting_layers`.

    Attributes:
        layer: the TorchLayer.
        rows: number of examples (rows) of the batch.
        input_grad: whether gradients flow to the layer's inputs (a trainable layer before it).
        n_inputs: number of input features of one example.
    """

    layer: torch.nn.Module
    rows: int
    input_grad: bool
    n_inputs: int


@dataclasses.dataclass(frozen=True)
class LayerCost:
    r"""What one training forward pass of a layer sends to its device, as a function of the
    batch size :math:`B \ge 1`: ``circuits(B) = fixed_circuits + circuits_per_example · B``
    (likewise shots); nothing for :math:`B = 0`.

    Attributes:
        route: ``"parameter_shift"`` or ``"adjoint"`` (:mod:`~pennylane_qshiftdp.qnn.routes`).
        sampling: ``"device"``, ``"exact_law"`` or ``"analytic"``.
        device: the device's name.
        circuits_per_example: circuits per example (the device's ``executions``).
        fixed_circuits: circuits run once per batch whatever its size (an unbroadcast tape
            shared by the batch), usually 0.
        shots_per_example, fixed_shots: the same for shots (under exact-law sampling, the shots
            the draws stand for; 0 analytically).
        device_batches: :func:`pennylane.execute` calls (jobs) per non-empty batch.
        shifted_circuits: :math:`T`, shifted circuits per example of the shift rule.
        shots_per_circuit: the forward circuit's shots, then each shifted circuit's (``None``
            analytically).
        shift_coefficients: per shifted circuit ``(i, c)``: the differentiated gate parameter
            ``i`` (position among them) whose rule uses it with the largest :math:`|c|`, and
            that coefficient (``None`` on the adjoint route).
        execution: who runs the circuits (:func:`execution_text`).
        batched_route: the circuits go to a Qiskit backend as one ``SamplerV2`` job per batch
            (:mod:`pennylane_qshiftdp.hardware.batched`; ``device_batches`` is then 1).
    """

    route: str
    sampling: str
    device: str
    circuits_per_example: int
    fixed_circuits: int
    shots_per_example: int
    fixed_shots: int
    device_batches: int
    shifted_circuits: int
    shots_per_circuit: tuple | None
    shift_coefficients: tuple | None = None
    execution: str = ""
    batched_route: bool = False

    def circuits(self, batch: float) -> float:
        """Circuits of a batch of ``batch`` examples (0 for an empty batch)."""
        return self.fixed_circuits + self.circuits_per_example * batch if batch > 0 else 0.0

    def shots(self, batch: float) -> float:
        """Shots of a batch of ``batch`` examples (0 for an empty batch)."""
        return self.fixed_shots + self.shots_per_example * batch if batch > 0 else 0.0


# Attribute of a TorchLayer holding the list its forward passes append to while counting (set
# and removed by counting_layers: owned by that call, never kept).
_COUNTING_ATTR = "_qshiftdp_counting_calls"


@contextlib.contextmanager
def counting_layers(module: torch.nn.Module) -> Iterator[list]:
    """Within the block, the forward pass of every
    :class:`~pennylane_qshiftdp.qnn.TorchLayer` in ``module`` runs no circuit: it appends a
    :class:`LayerCall` to the yielded list and returns zeros in its output layout (connected to
    its weights and inputs), so the module's own forward pass runs through.

    Args:
        module: a TorchLayer or a module containing TorchLayers.

    Example:
        >>> import pennylane as qml
        >>> from pennylane_qshiftdp import param_shift
        >>> from pennylane_qshiftdp.qnn import TorchLayer
        >>> @qml.qnode(qml.device("default.qubit", wires=1), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.RY(inputs[..., 0], wires=0)
        ...     qml.RX(weights[0], wires=0)
        ...     return qml.expval(qml.Z(0))
        >>> layer = TorchLayer(circuit, {"weights": (1,)})
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 1), layer)
        >>> with counting_layers(model) as calls:
        ...     out = model(torch.zeros(5, 3))
        >>> [(c.rows, c.input_grad) for c in calls], tuple(out.shape)
        ([(5, True)], (5,))
    """
    calls: list = []
    layers = [m for m in module.modules() if isinstance(m, qml.qnn.TorchLayer)]
    for layer in layers:
        layer.__dict__[_COUNTING_ATTR] = calls
    try:
        yield calls
    finally:
        for layer in layers:
            layer.__dict__.pop(_COUNTING_ATTR, None)


def planned_forward(layer, inputs: torch.Tensor) -> torch.Tensor | None:
    """Inside :func:`counting_layers`: record the call and return zeros in the layer's output
    layout; outside it: ``None`` (the layer evaluates as usual)."""
    calls = layer.__dict__.get(_COUNTING_ATTR)
    if calls is None:
        return None
    x = inputs.reshape(-1, inputs.shape[-1]) if inputs.ndim > 1 else inputs.reshape(1, -1)
    calls.append(LayerCall(layer, int(x.shape[0]), bool(inputs.requires_grad),
                           int(x.shape[-1])))
    parts, layout = empty_parts(layer, x[:0])
    rows = [torch.zeros((x.shape[0], *p.shape[1:]), dtype=p.dtype) + p.sum() for p in parts]
    return torch_layer_output(layout, rows, inputs)


def execution_text(route: str, sampling: str, device) -> str:
    """Who runs a layer's circuits on ``route`` with ``sampling`` on ``device``: the device
    itself, or the product's state-vector kernels (the same exact law, to float rounding)."""
    name = getattr(device, "name", device)
    kernels = simulates_with_kernels(device)
    if route == "adjoint":
        return (f"adjoint sweep on pennylane_qshiftdp's batched state-vector kernels (analytic; "
                f"nothing sent to {name})")
    if sampling == "device":
        return f"{name} runs every circuit and samples every shot"
    where = ("simulated by pennylane_qshiftdp's batched state-vector kernels (where a gate "
             "is outside them: by " + name + ")" if kernels
             else "executed analytically by " + name)
    if sampling == "exact_law":
        return f"exact-law draws from {name}'s generator; the circuits {where}"
    return f"analytic; the circuits {where}"


def _recorder(qnode):
    rec = qnode.gradient_kwargs.get("recorder")
    return rec if rec is not None else active_recorder()


def _executions(tapes, device) -> tuple[int, int]:
    """``(executions, shots)`` of ``tapes`` after the device's preprocessing, as its tracker
    counts them."""
    config = device.setup_execution_config()
    program = device.preprocess_transforms(config)
    batch, _ = program(list(tapes))
    executions = shots = 0
    for tape in batch:
        e, s = get_num_shots_and_executions(tape)
        executions += e
        shots += s
    return executions, shots


def _count(layer, rows: int, n_inputs: int, input_grad: bool) -> dict:
    """What a training forward pass on ``rows`` synthetic (zero) examples sends: the
    :class:`LayerCost` fields, with ``circuits`` and ``shots`` for this batch."""
    x = torch.zeros(rows, n_inputs, dtype=torch.float64)
    prep = prepared_batch(layer, x, input_grad)
    qnode, tape, fwd = prep.qnode, prep.tape, prep.fwd
    device = qnode.device
    finite = bool(tape.shots)
    exact = shot_sampling(qnode) == "exact_law" and finite
    out: dict[str, Any] = {"route": "parameter_shift",
                           "sampling": "exact_law" if exact else (
                               "device" if finite else "analytic"),
                           "device_batches": 1, "shifted_circuits": 0,
                           "shift_coefficients": None}
    beff = rows if fwd.batch_size else 1
    ns = int(tape.shots.total_shots) if finite else 0
    out["shots_per_circuit"] = None if not finite else (ns,)
    if not prep.diff_idx:  # the forward circuit alone
        if exact:
            return out | {"circuits": beff, "shots": beff * ns}
        e, s = _executions([fwd], device)
        return out | {"circuits": e, "shots": s}
    recorder = _recorder(qnode)
    if choose_route(qnode, tape, prep.diff_idx, recorder=recorder) == "adjoint":
        return out | {"route": "adjoint", "device_batches": 0, "circuits": 0, "shots": 0,
                      "shots_per_circuit": None}
    rep = fwd.bind_new_parameters(unbroadcast(prep.np_params, prep.broadcast),
                                  list(range(len(prep.np_params))))
    rep.trainable_params = prep.diff_idx
    rule = shift_rule(layer, rep, prep.diff_idx, prep.x_idx)
    budget = shifted_shots(qnode, rule, rep)
    coeffs = coefficient_matrix(rule.fn, rep, rule.num_tapes)
    out["shift_coefficients"] = tuple(
        (int(i), float(coeffs[i, t])) for t, i in enumerate(np.abs(coeffs).argmax(axis=0)))
    out["shifted_circuits"] = rule.num_tapes
    counts = [ns, *(budget or [ns] * rule.num_tapes)]  # shots per circuit (0: analytic)
    if finite:
        out["shots_per_circuit"] = tuple(counts)
    if exact or not finite and recorder is None:  # merged evaluations (module docstring)
        batches = sum(len(dict.fromkeys(counts[c] for c in idx)) for _, idx, _ in rule.groups)
        return out | {"device_batches": batches, "circuits": beff * len(counts),
                      "shots": beff * sum(counts) if exact else 0}
    shifted = shifted_tapes(fwd, rule, prep.np_params)
    if budget is not None:
        shifted = [t.copy(shots=n) for t, n in zip(shifted, budget, strict=True)]
    if recorder is not None:
        shifted, _ = rewrite_for_recording(shifted, [plan_for(mp.obs)
                                                     for mp in tape.measurements], tape.shots)
    tapes = [fwd, *shifted]
    e, s = _executions(tapes, device)
    batches = len(shot_counts(tapes))
    batched = uses_batched_route(qnode) and route_refusal(tapes, device,
                                                          sampler_of(qnode)) is None
    if batched:  # one SamplerV2 job whatever the shot counts (module hardware.batched)
        batches = 1
    return out | {"device_batches": batches, "circuits": e, "shots": s, "batched": batched,
                  "tapes": tapes}


def layer_tapes(layer, rows: int, *, n_inputs: int, input_grad: bool = False) -> list | None:
    """The tapes a training forward pass of ``layer`` on ``rows`` synthetic (zero) examples
    sends to its device in one batch (before the device's preprocessing; nothing is run), or
    ``None`` where it sends no such batch (adjoint, exact-law or analytic merged evaluation, or
    no differentiated parameter)."""
    return _count(layer, rows, n_inputs, input_grad).get("tapes")


def layer_cost(layer, *, n_inputs: int, input_grad: bool = False) -> LayerCost:
    r"""What a training forward pass of ``layer`` sends to its device (nothing is run).

    Counted at batch sizes 1 and 2 from synthetic zero inputs (the circuits' structure
    depends on the QNode, its shots, device, sampling mode and budget, never on the input
    values) and extended linearly (:class:`LayerCost`).

    Args:
        layer: a :class:`~pennylane_qshiftdp.qnn.TorchLayer` whose QNode uses
            :func:`~pennylane_qshiftdp.param_shift`.
        n_inputs: number of input features of one example.
        input_grad: whether gradients flow to the inputs (a trainable layer before it), which
            adds the shifted circuits of the input-dependent gates.

    Returns:
        LayerCost: circuits, shots and device batches per example and per batch.

    Raises:
        NotImplementedError, ValueError: as
            :func:`~pennylane_qshiftdp.qnn.evaluation.evaluate_layer` raises them for a circuit
            it cannot evaluate.

    Example:
        >>> import pennylane as qml
        >>> from pennylane_qshiftdp import param_shift
        >>> from pennylane_qshiftdp.qnn import TorchLayer
        >>> @qml.set_shots(shots=100)
        ... @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> cost = layer_cost(TorchLayer(circuit, {"weights": (1, 2, 3)}), n_inputs=2)
        >>> cost.circuits_per_example, cost.shots_per_example, cost.device_batches
        (13, 1300, 1)
    """
    one = _count(layer, 1, n_inputs, input_grad)
    two = _count(layer, 2, n_inputs, input_grad)
    execution = execution_text(one["route"], one["sampling"], layer.qnode.device)
    if one.get("batched"):
        execution = (f"{layer.qnode.device.name}'s backend runs every circuit and samples every "
                     f"shot: one Qiskit SamplerV2 job per batch, each circuit structure "
                     f"transpiled once")
    return LayerCost(route=one["route"], sampling=one["sampling"], execution=execution,
                     device=str(layer.qnode.device.name),
                     circuits_per_example=two["circuits"] - one["circuits"],
                     fixed_circuits=2 * one["circuits"] - two["circuits"],
                     shots_per_example=two["shots"] - one["shots"],
                     fixed_shots=2 * one["shots"] - two["shots"],
                     device_batches=one["device_batches"],
                     shifted_circuits=one["shifted_circuits"],
                     shots_per_circuit=one["shots_per_circuit"],
                     shift_coefficients=one["shift_coefficients"],
                     batched_route=bool(one.get("batched", False)))
