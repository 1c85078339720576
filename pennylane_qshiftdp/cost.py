r"""What private training costs on a device, known before the run: circuits, shots, jobs, time.

On hardware every circuit and every shot is billed. A training step of a model with quantum
layers sends, per layer, the forward circuit and the :math:`T` parameter-shift circuits of
every example of the Poisson batch to the device in one batch (one job; one per shot count
under a shot budget), so with the expected batch size :math:`\bar B = qN` (public)

.. math::

    \text{circuits per step} = \bar B \sum_{\text{layers}} (1 + T_\ell), \qquad
    T_\ell = 2P_{\text{cone},\ell} \text{ for two-term rules},

    \text{shots per step} = \bar B \sum_{\text{layers}} \big(N_s + \textstyle\sum_t N_t\big),

and over the :math:`T_\text{steps} = \lceil E/q\rceil` steps of :math:`E` epochs the totals are
:math:`T_\text{steps}` times these (docs/hardware.md). :func:`estimate_cost` computes them
from the model's own forward pass and the circuits' structure
(:mod:`~pennylane_qshiftdp.qnn.circuit_count`: counted after the device's preprocessing, as the
device's :class:`pennylane.Tracker` counts them), without running a circuit; with
``probe=True`` it also times one step on a synthetic batch of the expected size (public
inputs: zeros), which does run that step's circuits.

Everything in the estimate is public: it depends on the model, the device, the shots, the
expected batch size and the number of steps, never on the data. The realised counts of a run
grow with the realised (private) Poisson batch sizes; :class:`CostMeter` measures them with the
device's tracker, and they are diagnostics that are not protected by the guarantee.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Iterator
from typing import Any

import pennylane as qml
import torch
from opacus import GradSampleModule

from ._validation import check_positive_float
from .accountants.calibration import epochs_to_steps
from .data_loader import private_dataset
from .model_checks import preserved_shot_rngs
from .qnn.circuit_count import LayerCost, counting_layers, layer_cost
from .qnn.evaluation import prepared_batch

__all__ = ["COST_KEYS", "CostEstimate", "CostMeter", "LayerPlan", "estimate_cost",
           "plan_layers"]

#: The keys of :meth:`CostEstimate.as_dict` (``qshiftdp train --dry-run``'s JSON object) and of
#: :meth:`CostMeter.summary`, in this order.
COST_KEYS = ("circuits_per_step", "shots_per_step", "device_batches_per_step", "steps",
             "total_circuits", "total_shots", "seconds_per_step", "total_seconds",
             "jobs_per_step", "qpu_seconds_per_step")


@dataclasses.dataclass(frozen=True)
class LayerPlan:
    """A quantum layer of a model as one training step calls it, with what it costs.

    Attributes:
        name: the layer's name in the module (``""`` for the module itself).
        rows_per_example: how many rows of the layer's batch one example gives (1 unless the
            model folds extra dimensions into the batch).
        input_grad: whether gradients flow to the layer's inputs.
        cost: the layer's :class:`~pennylane_qshiftdp.qnn.circuit_count.LayerCost`.
        n_inputs: the layer's input features per row.
        layer: the layer itself.
    """

    name: str
    rows_per_example: float
    input_grad: bool
    cost: LayerCost
    n_inputs: int = 0
    layer: torch.nn.Module | None = dataclasses.field(repr=False, compare=False,
                                                      default=None)


@dataclasses.dataclass(frozen=True)
class CostEstimate:
    r"""The planned cost of a private training run (public: no data involved).

    Attributes:
        circuits_per_step: expected circuits per step, :math:`\bar B \sum_\ell (1 + T_\ell)`
            (what the devices' trackers count as ``executions``).
        shots_per_step: expected shots per step (under exact-law sampling, the shots the
            draws stand for; 0 analytically).
        device_batches_per_step: ``execute`` calls (jobs on Qiskit or Braket devices) per
            non-empty step.
        steps: planned steps :math:`\lceil E/q\rceil`.
        total_circuits, total_shots: ``steps`` times the per-step values.
        seconds_per_step: wall time of one probe step (forward and backward pass of a
            synthetic batch of :math:`\mathrm{round}(\bar B)` examples), ``None`` without a
            probe.
        total_seconds: ``steps × seconds_per_step`` (``None`` without a probe).
        jobs_per_step: primitive jobs (Qiskit) per non-empty step: one per quantum layer on
            the batched Qiskit route, more where a per-job cap
            (:func:`~pennylane_qshiftdp.hardware.set_job_limits`) or the backend's
            ``max_circuits`` splits a layer's batch (at least ⌈circuits/cap⌉ and
            ⌈shots/cap⌉); ``device_batches_per_step`` elsewhere.
        qpu_seconds_per_step: estimated QPU time of a step's shots, :math:`\sum_c N_c (d_c
            + r)` with each circuit's duration :math:`d_c` from the backend's ``target`` and
            its default repetition delay :math:`r` (:mod:`pennylane_qshiftdp.hardware.qpu_time`;
            no compilation or queueing), ``None`` without a backend that gives durations.
        expected_batch_size: :math:`\bar B = qN`.
        sample_rate: :math:`q`.
        layers: the quantum layers of a step (:class:`LayerPlan`).
    """

    circuits_per_step: float
    shots_per_step: float
    device_batches_per_step: int
    steps: int
    total_circuits: float
    total_shots: float
    seconds_per_step: float | None
    total_seconds: float | None
    expected_batch_size: float
    sample_rate: float
    layers: tuple
    jobs_per_step: int = 0
    qpu_seconds_per_step: float | None = None

    def as_dict(self) -> dict:
        """The keys of :data:`COST_KEYS` (``qshiftdp train --dry-run``'s JSON object)."""
        return {k: getattr(self, k) for k in COST_KEYS}


@contextlib.contextmanager
def _quiet(module: torch.nn.Module, *, evaluate: bool) -> Iterator[None]:
    """Opacus's per-example hooks off (a GradSampleModule would capture the synthetic batch),
    the devices' shot generators restored, and with ``evaluate`` every submodule in eval mode
    (a TorchLayer keeps no evaluation for Opacus then); all restored on exit."""
    hooked = [m for m in module.modules()
              if isinstance(m, GradSampleModule) and getattr(m, "hooks_enabled", False)]
    modes = [(m, m.training) for m in module.modules()]
    for m in hooked:
        m.disable_hooks()
    try:
        if evaluate:
            module.eval()
        with preserved_shot_rngs(module):
            yield
    finally:
        for m, training in modes:
            m.training = training
        for m in hooked:
            m.enable_hooks()


def plan_layers(module: torch.nn.Module, example: torch.Tensor) -> tuple[LayerPlan, ...]:
    """The quantum layers one training step of ``module`` calls, and what each costs.

    The module's own forward pass runs on two synthetic examples (zeros of ``example``'s
    shape) with every :class:`~pennylane_qshiftdp.qnn.TorchLayer` counting instead of
    running circuits (:func:`~pennylane_qshiftdp.qnn.circuit_count.counting_layers`); nothing
    is executed and no state changes.

    Args:
        module: the model (before or after :func:`~pennylane_qshiftdp.make_private`).
        example: one input example (only its shape and dtype are used).

    Returns:
        tuple: a :class:`LayerPlan` per TorchLayer call of the forward pass.

    Raises:
        ValueError: if the forward pass calls no quantum layer.
    """
    x = torch.zeros((2, *torch.as_tensor(example).shape),
                    dtype=torch.as_tensor(example).dtype)
    with _quiet(module, evaluate=False), torch.enable_grad(), \
            counting_layers(module) as calls:
        module(x)
    if not calls:
        raise ValueError("`module` calls no pennylane_qshiftdp TorchLayer in its forward pass; "
                         "there are no circuits to count.")

    def name_of(layer) -> str:
        return next((n for n, m in module.named_modules() if m is layer),
                    type(layer).__name__)

    return tuple(LayerPlan(name_of(c.layer), c.rows / 2.0, c.input_grad,
                           layer_cost(c.layer, n_inputs=c.n_inputs, input_grad=c.input_grad),
                           c.n_inputs, c.layer)
                 for c in calls)


def _probe_seconds(module, example, rows: int, plans) -> float:
    """Wall time of one forward and backward pass of ``rows`` synthetic examples, after the
    layers' expanded circuits for that batch shape are built, and on the batched Qiskit route
    their traced preprocessing and transpiled templates (nothing runs then: what the first
    step of a run builds once, a step of the run does not repeat)."""
    x = torch.zeros((rows, *torch.as_tensor(example).shape),
                    dtype=torch.as_tensor(example).dtype)
    params = [p for p in module.parameters() if p.requires_grad]
    for plan in plans:
        if plan.layer is not None:
            n = round(rows * plan.rows_per_example)
            prepared_batch(plan.layer, torch.zeros(n, plan.n_inputs, dtype=torch.float64),
                           plan.input_grad)
            if plan.cost.batched_route and n > 0:
                # the batched Qiskit route's traced preprocessing and transpiled templates
                from .hardware.batched import TEMPLATE_CACHE, prepare_batched, sampler_of
                from .qnn._caches import layer_cache
                from .qnn.circuit_count import layer_tapes

                qnode = plan.layer.qnode
                prepare_batched(layer_tapes(plan.layer, n, n_inputs=plan.n_inputs,
                                            input_grad=plan.input_grad) or [],
                                qnode.device, sampler=sampler_of(qnode),
                                cache=layer_cache(plan.layer, TEMPLATE_CACHE))
    with _quiet(module, evaluate=True), torch.enable_grad():
        start = time.perf_counter()
        out = module(x)
        if params and out.requires_grad:
            torch.autograd.grad(out.double().sum(), params, allow_unused=True)
        return time.perf_counter() - start


def estimate_cost(module: torch.nn.Module, data_loader: torch.utils.data.DataLoader, *,
                  epochs: float, sample_rate: float | None = None,
                  probe: bool = False, probe_rows: int | None = None,
                  qpu_backend: Any = None) -> CostEstimate:
    r"""Circuits, shots, device batches and steps of private training, before any circuit runs.

    Sampling as :func:`~pennylane_qshiftdp.make_private` does it: Poisson rate
    :math:`q = 1/\mathrm{len}(\text{data\_loader})` unless ``sample_rate`` is given, expected
    batch :math:`\bar B = qN`, :math:`\lceil E/q\rceil` steps. Per step, every quantum layer
    the model's forward pass calls sends its forward and shifted circuits for every example
    (module docstring); the counts are the devices' tracker counts for a batch of
    :math:`\bar B` examples (an empty Poisson batch sends nothing).

    Args:
        module: the model (the one to pass to, or returned by, ``make_private``).
        data_loader: the training loader ``make_private`` receives (only its length, batch
            size and one example's shape are read).
        epochs: :math:`E > 0`.
        sample_rate: Poisson rate :math:`q \in (0, 1]` if not ``1/len(data_loader)``.
        probe: also time one step on a synthetic batch of :math:`\mathrm{round}(\bar B)`
            zero inputs (this runs that step's circuits on the device; the shot generators of
            simulators are restored afterwards).
        probe_rows: with ``probe``, time the step on at most this many synthetic rows instead
            and scale the time linearly to :math:`\bar B` (``None``: the whole expected batch).
            The scaling assumes a step's time linear in its rows (a device's fixed cost per
            batch is counted :math:`\bar B` / rows times).
        qpu_backend: a Qiskit ``BackendV2`` whose ``target`` durations give the estimated QPU
            time of the layers on the batched Qiskit route (e.g. the fake backend whose noise
            model ``qiskit.aer`` simulates); ``None``: the device's own backend where its
            target has durations (``qiskit.remote``), else no estimate.

    Returns:
        CostEstimate: the plan (``as_dict()`` gives the keys of :data:`COST_KEYS`).

    Raises:
        ValueError: for a loader ``make_private`` would refuse, ``epochs`` ≤ 0, a rate
            outside (0, 1], or a module without quantum layer.

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
        >>> model = torch.nn.Sequential(TorchLayer(circuit, {"weights": (1, 2, 3)}))
        >>> data = torch.utils.data.TensorDataset(torch.zeros(100, 2), torch.zeros(100))
        >>> loader = torch.utils.data.DataLoader(data, batch_size=10)
        >>> est = estimate_cost(model, loader, epochs=2)
        >>> est.circuits_per_step, est.shots_per_step, est.steps, est.total_circuits
        (130.0, 13000.0, 20, 2600.0)
    """
    dataset, _ = private_dataset(data_loader)
    n = len(dataset)
    if n < 1:
        raise ValueError("`data_loader` has no examples.")
    q = 1.0 / len(data_loader) if sample_rate is None else sample_rate
    steps = epochs_to_steps(epochs=check_positive_float(epochs, "epochs"), sample_rate=q)
    expected = q * n
    example = dataset[0][0]
    plans = plan_layers(module, example)
    circuits = shots = 0.0
    batches = jobs = 0
    qpu: float | None = 0.0
    for plan in plans:
        rows = expected * plan.rows_per_example
        circuits += plan.cost.circuits(rows)
        shots += plan.cost.shots(rows)
        batches += plan.cost.device_batches
        jobs += _jobs(plan, plan.cost.circuits(rows), plan.cost.shots(rows))
        seconds_q = _qpu_seconds(plan, rows, qpu_backend)
        qpu = None if qpu is None or seconds_q is None else qpu + seconds_q
    seconds = None
    if probe:
        rows = max(1, round(expected))
        if probe_rows is not None:
            if isinstance(probe_rows, bool) or not isinstance(probe_rows, int) or probe_rows < 1:
                raise ValueError(f"`probe_rows` must be a positive integer. Found "
                                 f"{probe_rows!r}.")
            rows = min(rows, probe_rows)
        seconds = _probe_seconds(module, example, rows, plans) * max(1.0, expected / rows)
    return CostEstimate(
        circuits_per_step=_tidy(circuits), shots_per_step=_tidy(shots),
        device_batches_per_step=batches, steps=steps, total_circuits=_tidy(circuits * steps),
        total_shots=_tidy(shots * steps),
        seconds_per_step=seconds, total_seconds=None if seconds is None else seconds * steps,
        expected_batch_size=expected, sample_rate=q, layers=plans, jobs_per_step=jobs,
        qpu_seconds_per_step=qpu)


def _jobs(plan: LayerPlan, circuits: float, shots: float) -> int:
    """Primitive jobs of one layer's batch of ``circuits`` and ``shots`` (see
    :attr:`CostEstimate.jobs_per_step`)."""
    if not plan.cost.batched_route or plan.layer is None:
        return plan.cost.device_batches
    from .hardware.batched import job_caps

    caps = job_caps(plan.layer.qnode)
    backend_max = getattr(getattr(plan.layer.qnode.device, "target_device",
                                  plan.layer.qnode.device), "backend", None)
    backend_max = getattr(backend_max, "max_circuits", None)
    need = 1
    for cap, amount in ((caps["max_circuits"], circuits), (backend_max, circuits),
                        (caps["max_shots"], shots)):
        if cap:
            need = max(need, math.ceil(amount / cap - 1e-9))
    return need


def _qpu_seconds(plan: LayerPlan, rows: float, backend) -> float | None:
    """Estimated QPU seconds of one layer's batch of ``rows`` examples (``None`` where no
    backend gives durations, or the layer is not on the batched route)."""
    if not plan.cost.batched_route or plan.layer is None or rows <= 0:
        return 0.0 if rows <= 0 else None
    from .hardware.batched import templates_of, transpiled
    from .hardware.qpu_time import has_durations, shot_seconds
    from .qnn.circuit_count import layer_tapes

    device = plan.layer.qnode.device
    if backend is None:
        own = getattr(device, "compile_backend", None)
        backend = own if own is not None and has_durations(own) else None
    if backend is None or not has_durations(backend):
        return None

    def seconds(n: int) -> float:
        tapes = layer_tapes(plan.layer, n, n_inputs=plan.n_inputs, input_grad=plan.input_grad)
        total = 0.0
        for key, count, shots in templates_of(tapes or [], device):
            total += count * shots * shot_seconds(transpiled(key, backend), backend)
        return total

    one, two = seconds(1), seconds(2)
    return (2 * one - two) + (two - one) * rows


def _tidy(value: float) -> float:
    """``value`` rounded to 6 decimals (``qN`` times a count: 1197.0, not 1196.9999999999998)."""
    return round(float(value), 6)


class CostMeter:
    """The measured cost of training steps, counted by the devices' :class:`pennylane.Tracker`.

    ``with meter.step(): ...`` around each optimizer step (forward, backward, ``step()``)
    counts the circuits (``executions``), shots and batches the model's devices ran in it, and
    its wall time. Under exact-law sampling a device runs its circuits analytically: their shots
    are those the draws stand for (each example's circuits' shots, from the layers' plan).

    These counts grow with the realised Poisson batch sizes: they are diagnostics, not
    protected by the differential-privacy guarantee.

    Args:
        module: the model whose quantum layers' devices are tracked.
        plans: its :func:`plan_layers` (to convert exact-law executions into shots).
    """

    def __init__(self, module: torch.nn.Module, plans: tuple):
        devices: list = []
        for m in module.modules():
            if isinstance(m, qml.qnn.TorchLayer) and not any(
                    m.qnode.device is d for d in devices):
                devices.append(m.qnode.device)
        self.devices = devices
        # Under exact-law sampling: shots per circuit of each device's circuits.
        self._ratio: list[float | None] = []
        for dev in devices:
            mine = [p.cost for p in plans if p.layer is not None
                    and p.layer.qnode.device is dev and p.cost.sampling == "exact_law"]
            circ = sum(c.circuits_per_example for c in mine)
            self._ratio.append(sum(c.shots_per_example for c in mine) / circ if circ else None)
        self.records: list[dict] = []

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        """Count one step (appended to :attr:`records`)."""
        trackers = [qml.Tracker(dev) for dev in self.devices]
        with contextlib.ExitStack() as stack:
            for tracker in trackers:
                stack.enter_context(tracker)
            start = time.perf_counter()
            yield
            seconds = time.perf_counter() - start
        circuits = shots = batches = jobs = 0
        for tracker, ratio in zip(trackers, self._ratio, strict=True):
            executions = int(tracker.totals.get("executions", 0))
            circuits += executions
            batches += int(tracker.totals.get("batches", 0))
            # the batched Qiskit route counts its primitive jobs; elsewhere a batch is a job
            jobs += int(tracker.totals.get("jobs", tracker.totals.get("batches", 0)))
            shots += (int(tracker.totals.get("shots", 0)) if ratio is None
                      else int(round(executions * ratio)))
        self.records.append({"circuits": circuits, "shots": shots, "device_batches": batches,
                             "jobs": jobs, "seconds": seconds})

    def summary(self) -> dict:
        """Means per step and totals over the measured steps, with the keys of
        :data:`COST_KEYS` (``None`` values before any step)."""
        steps = len(self.records)
        if not steps:
            return dict.fromkeys(COST_KEYS) | {"steps": 0}
        total = {k: sum(r[k] for r in self.records) for k in
                 ("circuits", "shots", "device_batches", "jobs", "seconds")}
        return {"circuits_per_step": total["circuits"] / steps,
                "shots_per_step": total["shots"] / steps,
                "device_batches_per_step": total["device_batches"] / steps,
                "steps": steps, "total_circuits": total["circuits"],
                "total_shots": total["shots"], "seconds_per_step": total["seconds"] / steps,
                "total_seconds": total["seconds"], "jobs_per_step": total["jobs"] / steps,
                "qpu_seconds_per_step": None}

