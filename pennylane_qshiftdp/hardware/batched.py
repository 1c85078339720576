r"""A batch of tapes on a pennylane-qiskit device as one Qiskit ``SamplerV2`` job.

pennylane-qiskit runs a batch of circuits by converting and transpiling every circuit on its
own (``compile_circuits``: one :func:`qiskit.transpile` per circuit, 0.1 to 0.25 s each with a
noise model, most of it qiskit-aer rebuilding its ``target``). A private training step's
circuits are a handful of parametrised *templates*: the forward circuit and the shifted copies
differ only in their gate parameters. :func:`execute_batched` therefore

1. applies the device's own preprocessing (``device.preprocess_transforms()``: decomposition
   into its gates, broadcast expansion, splitting of non-commuting observables), as
   :func:`pennylane.execute` does, so the circuits, their shots and their post-processing are
   the device's (traced once per row structure and reused where that is exact: "preprocessing"
   below);
2. groups the resulting circuits by exact structure, keyed by content: per gate its name, its
   wires and its number of parameters, then the measurement basis change (the diagonalizing
   gates, with their values); never by object identity;
3. converts each template once into a Qiskit circuit with free parameters (pennylane-qiskit's
   gate map, :data:`pennylane_qiskit.converter.QISKIT_OPERATION_MAP`; every device wire
   measured into the classical register ``c``, as the device does) and transpiles it once per
   backend with the device's transpile options (cached by content in the layer's cache, see
   :data:`TEMPLATE_CACHE`);
4. runs one ``SamplerV2`` job whose PUBs are ``(template, parameter rows, shots)``: one PUB per
   template and shot count (a shot budget gives circuits different shots);
5. turns every row's bit strings into the device's samples and lets the device compute the
   statistics (``QubitDevice.statistics`` for ``qiskit.aer``; ``process_samples`` of each
   measurement for ``qiskit.remote``, as those devices do), then applies the preprocessing's
   post-processing: the results have the structure :func:`pennylane.execute` returns.

The device's tracker counts what its own execution counts (per circuit ``executions`` and
``shots``, per job ``batches``) and ``jobs``. Anything the route cannot take falls back to the
device's own execution with a one-line :class:`BatchedRouteFallback` warning naming why
(:func:`route_refusal`): a mid-circuit measurement, a gate outside the converter's map or with
a non-scalar parameter, analytic or partitioned shots, a state-vector backend, a device option
the route does not know.

Sampling: by default the sampler is the device's (``qiskit.aer``: qiskit-aer's
``SamplerV2.from_backend`` on the device's ``AerSimulator``, noise model included;
``qiskit.remote``: qiskit-ibm-runtime's ``SamplerV2`` in the device's session or on its
backend). :func:`set_sampler` gives a QNode another ``SamplerV2`` (qiskit's
``BackendSamplerV2`` over any ``BackendV2``, a runtime sampler in job, batch or session
mode), or switches the route off (``None``). The device's ``seed_simulator`` seeds the route:
job :math:`j` of a layer samples with a seed derived from ``(seed_simulator, j)``, so a seeded
run repeats and two steps do not repeat each other's draws.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pennylane as qml
from pennylane.measurements import (
    CountsMP,
    ExpectationMP,
    MidMeasureMP,
    ProbabilityMP,
    SampleMP,
    VarianceMP,
)

from ..gradients._keys import measurement_key, value_key

if TYPE_CHECKING:
    import torch

__all__ = ["MAX_TEMPLATES", "TEMPLATE_CACHE", "BatchedRouteFallback", "Template",
           "execute_batched", "job_caps", "prepare_batched", "route_refusal", "sampler_of",
           "set_job_limits", "set_sampler", "templates_of", "transpiled", "uses_batched_route"]

#: Name of the layer cache (:func:`pennylane_qshiftdp.qnn._caches.layer_cache`) holding the
#: traced device preprocessing per row structure (``"plans"``) and the transpiled templates
#: per (structure, backend) (``"templates"``), at most :data:`MAX_TEMPLATES` each, oldest
#: dropped first; the job counter that derives each job's seed (``"jobs"``); and the fallback
#: reasons already warned of (``"warned"``).
TEMPLATE_CACHE = "qiskit_templates"

#: Most transpiled templates a cache keeps (a layer has a few: one per circuit structure).
MAX_TEMPLATES = 64

# Attribute of a QNode holding its sampler ("auto" when absent).
_SAMPLER_ATTR = "_qshiftdp_sampler"
_AUTO = "auto"
# Attribute of a QNode holding its per-job caps.
_CAPS_ATTR = "_qshiftdp_job_caps"

# Gates of the converter's map the route does not template: matrix or state parameters, or a
# barrier whose parameter is the register size (the device's own execution handles them).
_NOT_TEMPLATED = {"QubitUnitary", "StatePrep", "Barrier"}
_MEASUREMENTS = (ExpectationMP, VarianceMP, ProbabilityMP, SampleMP, CountsMP)
# Run options of qiskit.aer the route applies itself (memory: bit strings are always read).
_KNOWN_RUN_OPTIONS = {"memory", "seed_simulator"}


class BatchedRouteFallback(UserWarning):
    """The batched Qiskit route could not take a batch: it ran on the device's own execution."""


class _Refused(Exception):
    """Why a batch cannot take the route (the message)."""


def set_sampler(target: qml.QNode | torch.nn.Module, sampler: Any = _AUTO) -> list:
    """Choose how the QNodes of ``target`` run their circuits on a pennylane-qiskit device.

    ``"auto"`` (the default, also without calling this): the batched route with the device's
    own sampler (module docstring). A ``SamplerV2`` object (``qiskit_aer.primitives.SamplerV2``,
    ``qiskit.primitives.BackendSamplerV2``, ``qiskit_ibm_runtime.SamplerV2`` in job, batch or
    session mode): the batched route with that sampler, the templates transpiled for its
    backend. ``None``: the device's own execution (pennylane-qiskit's route, one transpile
    per circuit). Devices that are not pennylane-qiskit's ignore the setting.

    Args:
        target: a QNode, a TorchLayer or a module containing TorchLayers.
        sampler: ``"auto"``, ``None`` or an object with a ``run(pubs)`` method (a
            ``BaseSamplerV2``).

    Returns:
        list: the QNodes set.

    Raises:
        TypeError: for a ``sampler`` that is none of these.
        ValueError: for a ``target`` without a QNode.

    Example:
        >>> dev = qml.device("default.qubit", wires=1)
        >>> qn = qml.QNode(lambda: qml.expval(qml.Z(0)), dev)
        >>> [sampler_of(q) for q in set_sampler(qn, None)]
        [None]
    """
    from ..sampling.modes import qnodes_of

    if not (sampler is None or (isinstance(sampler, str) and sampler == _AUTO)
            or callable(getattr(sampler, "run", None))):
        raise TypeError(f"`sampler` must be 'auto', None or a Qiskit SamplerV2 (an object with "
                        f"run(pubs)). Found {sampler!r}.")
    qnodes = qnodes_of(target)
    for qnode in qnodes:
        setattr(qnode, _SAMPLER_ATTR, sampler)
    return qnodes


def set_job_limits(target: qml.QNode | torch.nn.Module, *, max_circuits: int | None = None,
                   max_shots: int | None = None) -> list:
    """Cap what one job of the batched route holds: a batch of more circuits or shots runs as
    several jobs, each within both caps (``qshiftdp train`` sets ``--max-circuits`` and
    ``--max-shots`` here, so they hold per job as well as in total).

    Args:
        target: a QNode, a TorchLayer or a module containing TorchLayers.
        max_circuits: most circuits of one job (``None``: no cap but the backend's own
            ``max_circuits``).
        max_shots: most shots of one job (``None``: no cap).

    Returns:
        list: the QNodes set.

    Raises:
        ValueError: for a cap below 1 (naming it), or a target without a QNode.

    Example:
        >>> dev = qml.device("default.qubit", wires=1)
        >>> qn = qml.QNode(lambda: qml.expval(qml.Z(0)), dev)
        >>> [job_caps(q) for q in set_job_limits(qn, max_circuits=100)]
        [{'max_circuits': 100, 'max_shots': None}]
    """
    from ..sampling.modes import qnodes_of

    caps = {"max_circuits": max_circuits, "max_shots": max_shots}
    for name, value in caps.items():
        _check_cap(name, value)
    qnodes = qnodes_of(target)
    for qnode in qnodes:
        setattr(qnode, _CAPS_ATTR, caps)
    return qnodes


def job_caps(qnode: qml.QNode) -> dict:
    """The caps :func:`set_job_limits` gave ``qnode`` (``max_circuits``, ``max_shots``)."""
    return dict(getattr(qnode, _CAPS_ATTR, {"max_circuits": None, "max_shots": None}))


def _check_cap(name: str, value) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | np.integer)
                              or value < 1):
        raise ValueError(f"`{name}` must be a positive integer or None. Found {value!r}.")


def sampler_of(qnode: qml.QNode) -> Any:
    """The sampler :func:`set_sampler` gave ``qnode``: ``"auto"`` (the default), ``None`` (the
    device's own execution) or a ``SamplerV2``."""
    return getattr(qnode, _SAMPLER_ATTR, _AUTO)


def _pennylane_qiskit():
    """pennylane-qiskit's modules if it is imported (a device of it exists only then)."""
    if "pennylane_qiskit" not in sys.modules:
        return None
    from pennylane_qiskit import converter, qiskit_device, qiskit_device_legacy

    return converter, qiskit_device, qiskit_device_legacy


def _kind(device) -> tuple[str, Any] | None:
    """``("legacy", the pennylane-qiskit QubitDevice)`` for ``qiskit.aer`` (PennyLane's facade
    around it), ``("remote", device)`` for the new-API devices (``qiskit.remote``), else
    ``None``."""
    mods = _pennylane_qiskit()
    if mods is None:
        return None
    _, new_api, legacy_api = mods
    target = getattr(device, "target_device", None)
    if target is not None and isinstance(target, legacy_api.QiskitDeviceLegacy):
        return "legacy", target
    if isinstance(device, new_api.QiskitDevice):
        return "remote", device
    return None


def uses_batched_route(qnode: qml.QNode) -> bool:
    """Whether ``qnode``'s circuits go through :func:`execute_batched` (a pennylane-qiskit
    device and a sampler other than ``None``; a batch the route cannot take still falls back
    with a warning)."""
    return sampler_of(qnode) is not None and _kind(qnode.device) is not None


# ----------------------------------------------------------------------------- templates
def _wire_index(device) -> dict:
    return {w: i for i, w in enumerate(device.wires)}


def _structure(tape, wires: dict) -> tuple[tuple, list]:
    """The template key of a device tape and its gate parameters in template order.

    Raises:
        _Refused: for a gate the route does not template.
    """
    converter = _pennylane_qiskit()[0]  # type: ignore[index]
    gates = []
    values: list = []
    for op in tape.operations:
        name = op.name
        if name == "GlobalPhase":  # a global phase does not change the outcome law
            continue
        if name not in converter.QISKIT_OPERATION_MAP or name in _NOT_TEMPLATED:
            raise _Refused(f"gate {name} is not templated")
        for p in op.data:
            if np.ndim(p) != 0:
                raise _Refused(f"gate {name} has a non-scalar parameter")
            values.append(float(p))
        gates.append((name, tuple(wires[w] for w in op.wires), len(op.data)))
    rotations = []
    for op in tape.diagonalizing_gates:
        if op.name not in converter.QISKIT_OPERATION_MAP or op.name in _NOT_TEMPLATED or any(
                np.ndim(p) != 0 for p in op.data):
            raise _Refused(f"measurement basis change {op.name} is not templated")
        rotations.append((op.name, tuple(wires[w] for w in op.wires),
                          tuple(float(p) for p in op.data)))
    return (len(wires), tuple(gates), tuple(rotations)), values


# One-qubit runs. A template has free parameters, so the transpiler cannot merge a run of
# one-qubit rotations into one gate as it does for numeric circuits (each RY stays 2 sqrt(X)
# pulses on IBM's basis, where a numeric run of any length is at most 2): with a noise model
# or on hardware the template would run more noisy gates than pennylane-qiskit's per-circuit
# transpile. A run of consecutive one-qubit gates on a wire with two or more non-diagonal
# gates is therefore one U(theta, phi, lambda) gate of the template, its angles computed per
# row from the product of the run's matrices (PennyLane's ``compute_matrix``, broadcast over
# the rows) by Qiskit's ``OneQubitEulerDecomposer("U3")``: the same unitary up to a global
# phase, so the same outcome law.
_DIAGONAL = {"RZ", "PhaseShift", "U1", "S", "T", "PauliZ", "Identity", "Adjoint(S)",
             "Adjoint(T)"}


def _fusible(name: str) -> bool:
    """A one-qubit gate PennyLane can give the matrix of from its parameters."""
    cls = getattr(qml, name, None)
    return isinstance(cls, type) and getattr(cls, "num_wires", None) == 1 \
        and hasattr(cls, "compute_matrix")


def _layout(key: tuple) -> list:
    """The template's gates: ``("gate", i, src)`` keeps gate ``i`` (its parameters at columns
    ``src`` of a row), ``("run", wire, [(name, src), ...])`` fuses a run into one U gate."""
    _, gates, _ = key
    out: list = []
    runs: dict = {}
    pos = 0

    def close(wire) -> None:
        run = runs.pop(wire, None)
        if not run:
            return
        if sum(gates[i][0] not in _DIAGONAL for i, _ in run) >= 2:
            out.append(("run", wire, [(gates[i][0], src) for i, src in run]))
        else:
            out.extend(("gate", i, src) for i, src in run)

    for i, (name, wires, k) in enumerate(gates):
        src = list(range(pos, pos + k))
        pos += k
        if len(wires) == 1 and _fusible(name):
            runs.setdefault(wires[0], []).append((i, src))
            continue
        for w in wires:
            close(w)
        out.append(("gate", i, src))
    for w in sorted(runs):
        close(w)
    return out


def _circuit(key: tuple):
    """The Qiskit circuit of a template key (gates in order, one-qubit runs fused, free
    parameters ``p[0..k-1]``, every wire measured into the classical register ``c`` as
    pennylane-qiskit does) and its layout (:func:`_layout`)."""
    from qiskit import ClassicalRegister, QuantumCircuit, QuantumRegister
    from qiskit.circuit import ParameterVector
    from qiskit.circuit.library import UGate

    converter = _pennylane_qiskit()[0]  # type: ignore[index]
    n, gates, rotations = key
    layout = _layout(key)
    qreg, creg = QuantumRegister(n, "q"), ClassicalRegister(n, "c")
    qc = QuantumCircuit(qreg, creg)
    params = ParameterVector("p", sum(len(item[2]) if item[0] == "gate" else 3
                                      for item in layout))
    pos = 0
    for item in layout:
        if item[0] == "gate":
            name, wires, k = gates[item[1]]
            qc.append(converter.QISKIT_OPERATION_MAP[name](*params[pos:pos + k]),
                      [qreg[i] for i in wires])
            pos += k
        else:
            qc.append(UGate(*params[pos:pos + 3]), [qreg[item[1]]])
            pos += 3
    for name, wires, data in rotations:
        qc.append(converter.QISKIT_OPERATION_MAP[name](*data), [qreg[i] for i in wires])
    for q, c in zip(qreg, creg, strict=True):
        qc.measure(q, c)
    return qc, params, layout


def _template_values(layout: list, raw: np.ndarray) -> np.ndarray:
    """The template's parameter rows from the circuits' gate parameters ``raw`` ``(rows, k)``:
    kept gates' parameters as they are, each fused run's U angles."""
    from qiskit.synthesis import OneQubitEulerDecomposer

    rows = raw.shape[0]
    cols: list = []
    decomposer = None
    for item in layout:
        if item[0] == "gate":
            cols.extend(raw[:, c] for c in item[2])
            continue
        unitary = np.broadcast_to(np.eye(2, dtype=complex), (rows, 2, 2))
        for name, src in item[2]:
            matrix = getattr(qml, name).compute_matrix(*[raw[:, c] for c in src])
            unitary = np.matmul(np.asarray(matrix, dtype=complex), unitary)
        decomposer = decomposer or OneQubitEulerDecomposer("U3")
        angles = np.array([decomposer.angles(u) for u in unitary]).reshape(rows, 3)
        cols.extend(angles.T)
    return np.stack(cols, axis=1) if cols else np.zeros((rows, 0))


@dataclasses.dataclass
class Template:
    """A circuit structure of a batch, converted and transpiled once.

    Attributes:
        key: the content key (:func:`templates_of`).
        circuit: the transpiled Qiskit circuit (free parameters).
        columns: per parameter of ``circuit`` (in its order), the column of the template's
            parameter rows it takes (the transpiler drops parameters whose gates do not change
            the outcome law, e.g. a rotation about Z just before a measurement).
        creg: the name of the classical register holding the device's wires.
        layout: which gates are kept and which one-qubit runs are fused (:func:`_layout`).
    """

    key: tuple
    circuit: Any
    columns: list
    creg: str
    layout: list = dataclasses.field(default_factory=list)

    def values(self, raw: np.ndarray) -> np.ndarray:
        """The circuit's parameter rows (in ``circuit.parameters`` order) from the gate
        parameters of the device's circuits ``raw`` ``(rows, k)``."""
        return _template_values(self.layout, raw)[:, self.columns]


def _transpile(key, backend, options: dict):
    from qiskit import transpile
    from qiskit_aer import AerSimulator

    qc, params, layout = _circuit(key)
    if isinstance(backend, AerSimulator):
        # the same pass manager as backend=: Aer's target (rebuilt at every access of
        # AerSimulator.target, about 1 ms, some 160 times per transpile) read once
        isa = transpile(qc, target=backend.target, **options)
    else:
        isa = transpile(qc, backend=backend, **options)
    index = {p: i for i, p in enumerate(params)}
    return Template(key, isa, [index[p] for p in isa.parameters], isa.cregs[0].name, layout)


# ----------------------------------------------------------------------------- the device
@dataclasses.dataclass
class _Setup:
    kind: str
    dev: Any  # the pennylane-qiskit device (legacy QubitDevice or new-API QiskitDevice)
    backend: Any  # what the templates are transpiled for
    options: dict  # transpile options
    seed: int | None


def _setup(device, sampler) -> _Setup:
    """The device's backend, transpile options and seed, or :class:`_Refused`."""
    found = _kind(device)
    if found is None:
        raise _Refused(f"device {getattr(device, 'name', device)!r} is not a pennylane-qiskit "
                       f"device")
    kind, dev = found
    if kind == "legacy":
        if dev._is_state_backend:
            raise _Refused(f"backend {dev.backend_name} is a state-vector backend")
        unknown = sorted(set(dev.run_args) - _KNOWN_RUN_OPTIONS)
        if unknown:
            raise _Refused(f"device run option(s) {unknown} are not applied by the route")
        backend = dev.compile_backend or dev.backend
        options = {**dev.transpile_args, "routing_method": "none"}
        seed = dev.run_args.get("seed_simulator")
    else:
        backend = dev.compile_backend
        options = dict(dev._transpile_args)
        seed = None
    if not (isinstance(sampler, str) and sampler == _AUTO):
        own = _sampler_backend(sampler)
        if own is not None and own is not backend:
            # transpiled for the sampler's backend (its ISA), routed on its coupling map
            backend = own
            options = {k: v for k, v in options.items() if k != "routing_method"}
    return _Setup(kind, dev, backend, options, seed)


def _sampler_backend(sampler):
    """The backend a ``SamplerV2`` runs on, where it says (``BackendSamplerV2.backend``, a
    runtime sampler's ``backend()``, Aer's ``_backend``), else ``None``."""
    found = getattr(sampler, "backend", None)
    if callable(found):
        try:
            found = found()
        except Exception:  # noqa: BLE001 - a runtime sampler without a backend yet
            found = None
    if found is None:
        found = getattr(sampler, "_backend", None)
    return found if hasattr(found, "num_qubits") else None


def _job_seed(seed, job: int) -> int | None:
    if seed is None:
        return None
    return int(np.random.SeedSequence([int(seed), job]).generate_state(1)[0])


def _make_sampler(setup: _Setup, sampler, seed):
    """The sampler of one job: the given one, or the device's (module docstring)."""
    if not (isinstance(sampler, str) and sampler == _AUTO):
        return sampler
    if setup.kind == "legacy":
        from qiskit_aer import AerSimulator

        if isinstance(setup.dev.backend, AerSimulator):
            from qiskit_aer.primitives import SamplerV2

            return SamplerV2.from_backend(setup.dev.backend, seed=seed)
        from qiskit.primitives import BackendSamplerV2

        return BackendSamplerV2(backend=setup.dev.backend,
                                options={} if seed is None else {"seed_simulator": seed})
    from qiskit_ibm_runtime import SamplerV2 as RuntimeSampler

    dev = setup.dev
    runtime = RuntimeSampler(mode=dev.session if dev.session else dev.backend)
    runtime.options.update(**dev._kwargs)
    return runtime


def _backend_key(setup: _Setup) -> tuple:
    """What a transpiled template depends on besides its structure: the backend by its name,
    its options (an Aer noise model sets the basis gates) and qubit count, and the transpile
    options (all by their text)."""
    backend = setup.backend
    return (type(backend).__name__, str(getattr(backend, "name", "")),
            int(getattr(backend, "num_qubits", 0) or 0), str(getattr(backend, "options", "")),
            repr(sorted(setup.options.items())))


# ----------------------------------------------------------------------------- refusal
def _check_tapes(tapes) -> None:
    for tape in tapes:
        if any(isinstance(op, MidMeasureMP) for op in tape.operations) or any(
                getattr(mp, "mv", None) is not None for mp in tape.measurements):
            raise _Refused("the circuit has a mid-circuit measurement")
        if not tape.shots:
            raise _Refused("the circuit is analytic (shots=None)")
        if tape.shots.has_partitioned_shots:
            raise _Refused(f"the circuit has a shot vector ({tape.shots})")
        for mp in tape.measurements:
            if not isinstance(mp, _MEASUREMENTS):
                raise _Refused(f"measurement {type(mp).__name__} is not read from bit strings")


def _device_batch(tapes, device):
    """The device's preprocessing of ``tapes`` (as :func:`pennylane.execute` applies it)."""
    config = device.setup_execution_config()
    program = device.preprocess_transforms(config)
    return program(list(tapes))


def route_refusal(tapes: Sequence[qml.tape.QuantumScript], device: qml.devices.Device,
                  sampler: Any = _AUTO) -> str | None:
    """Why ``tapes`` cannot take the batched route on ``device`` (``None``: they can).

    Args:
        tapes: PennyLane tapes (before the device's preprocessing).
        device: a PennyLane device.
        sampler: as for :func:`set_sampler`.

    Returns:
        str | None: the reason, in a few words, or ``None``.

    Example:
        >>> tape = qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.expval(qml.Z(0))], shots=10)
        >>> route_refusal([tape], qml.device("default.qubit", wires=1))
        "device 'default.qubit' is not a pennylane-qiskit device"
    """
    try:
        setup = _setup(device, sampler)
        _check_tapes(tapes)
        batch, _ = _device_batch(tapes, device)
        _check_tapes(batch)
        wires = _wire_index(setup.dev)
        for tape in batch:
            _structure(tape, wires)
    except _Refused as why:
        return str(why)
    return None


def templates_of(tapes, device) -> list[tuple[tuple, int, int]]:
    """The templates of ``tapes`` after the device's preprocessing: per (structure, shots) its
    content key, its number of circuits and its shots per circuit (in order of first
    appearance). What a job sends, without transpiling or running anything.

    Raises:
        ValueError: if the tapes cannot take the batched route (:func:`route_refusal`).
    """
    try:
        _setup(device, _AUTO)
        batch, _ = _device_batch(tapes, device)
        _check_tapes(batch)
        wires = _wire_index(_kind(device)[1])  # type: ignore[index]
        groups: dict = {}
        for tape in batch:
            key, _ = _structure(tape, wires)
            shots = int(tape.shots.total_shots)
            groups[(key, shots)] = groups.get((key, shots), 0) + 1
    except _Refused as why:
        raise ValueError(f"The tapes cannot take the batched Qiskit route: {why}.") from None
    return [(key, count, shots) for (key, shots), count in groups.items()]


def transpiled(key: tuple, backend, options: dict | None = None):
    """The template ``key`` converted and transpiled for ``backend`` (nothing cached)."""
    return _transpile(key, backend, dict(options or {})).circuit


# ----------------------------------------------------------------------------- execution
def execute_batched(tapes: Sequence[qml.tape.QuantumScript], device: qml.devices.Device, *,
                    sampler: Any = _AUTO, cache: dict | None = None,
                    max_circuits: int | None = None, max_shots: int | None = None) -> list:
    r"""``qml.execute(tapes, device)`` on a pennylane-qiskit device as one ``SamplerV2`` job.

    Same circuits, shots, results structure and tracker counts as the device's own execution
    (module docstring); a batch the route cannot take runs on the device's own execution (one
    :func:`pennylane.execute` per shot count) after a one-line :class:`BatchedRouteFallback`
    warning naming why.

    Args:
        tapes: PennyLane tapes with finite shots (broadcast tapes allowed).
        device: a ``qiskit.aer`` or ``qiskit.remote`` device.
        sampler: ``"auto"`` (the device's) or a ``SamplerV2`` (:func:`set_sampler`).
        cache: the dict holding the transpiled templates and the job counter (a layer's
            :data:`TEMPLATE_CACHE`); ``None``: a fresh one (nothing kept).
        max_circuits, max_shots: most circuits (parameter rows) and shots one job may hold;
            a batch above either runs as several jobs (``None``: one job, or as many as the
            backend's ``max_circuits`` requires).

    Returns:
        list: one result per tape, as :func:`pennylane.execute` returns them.

    Raises:
        ValueError: for ``max_circuits`` or ``max_shots`` below 1.
    """
    _check_cap("max_circuits", max_circuits)
    _check_cap("max_shots", max_shots)
    cache = {} if cache is None else cache
    tapes = list(tapes)
    if not tapes:
        return []
    try:
        setup = _setup(device, sampler)
        _check_tapes(tapes)
        batch, structures, post = _device_circuits(tapes, device, setup, cache)
    except _Refused as why:
        return _fallback(tapes, device, str(why), cache)
    templates = _templates(cache, setup, {key for key, _ in structures})
    groups: dict = {}
    for i, ((key, values), tape) in enumerate(zip(structures, batch, strict=True)):
        groups.setdefault((key, int(tape.shots.total_shots)), []).append((i, values))
    jobs = _split_jobs(groups, max_circuits, max_shots,
                       getattr(setup.backend, "max_circuits", None))
    samples: list = [None] * len(batch)
    for pubs in jobs:
        job_index = cache.get("jobs", 0)
        cache["jobs"] = job_index + 1
        run = _make_sampler(setup, sampler, _job_seed(setup.seed, job_index))
        result = run.run([_pub(templates[key], rows, shots) for key, shots, rows in pubs]
                         ).result()
        for (key, _, rows), pub_result in zip(pubs, result, strict=True):
            bits = getattr(pub_result.data, templates[key].creg).to_bool_array(order="little")
            for (i, _), row_bits in zip(rows, bits, strict=True):
                samples[i] = row_bits.astype(np.int64)
    raw = [_statistics(setup, tape, s) for tape, s in zip(batch, samples, strict=True)]
    _track(setup, device, batch, raw, len(jobs))
    return post(raw)


# ----------------------------------------------------------------------------- preprocessing
# The device's preprocessing (decomposition, broadcast expansion, splitting of observables) is
# the costly part of a batch in PennyLane (about 2 ms per circuit). It depends on a tape's
# structure, not on its parameter values, for the gates of a training circuit: it is traced
# once per *row* structure (a broadcast tape's rows are expanded one by one, each row an
# unbroadcast tape of that structure) on three random parameter assignments, and where every
# parameter of every resulting circuit is an affine function a*v_j + b of one row parameter v_j
# (or a constant) on all three, and the trace reproduces the device's own preprocessing of the
# first real row of that structure, it is kept (in the cache, "plans") and applied to the
# values of every row of that structure; the rows' results are stacked as PennyLane's
# broadcast expansion stacks them. Otherwise the device's preprocessing runs on every tape.
_PROBES = 3


@dataclasses.dataclass
class _Plan:
    circuits: list  # the device tapes of one row (their measurements and shots)
    keys: list  # per device tape of a row: its template key
    maps: list  # per device tape of a row: (j, a, b) arrays, its parameters = a * v[j] + b
    post: Any  # the preprocessing's post-processing of one row's results


def _input_key(tape) -> tuple | None:
    """A tape's row structure, exactly (:mod:`pennylane_qshiftdp.gradients._keys`: arrays by
    their bytes, never an operator's ``hash``): per gate its type, wires, which parameters are
    broadcast and hyperparameters; every measurement with its observable's data; shots.
    ``None`` for a tape with no exact key or a parameter that is neither a number nor a
    broadcast number (it is then preprocessed by the device on its own)."""
    batch = tape.batch_size
    try:
        ops = []
        for op in tape.operations:
            shapes = tuple(np.shape(p) for p in op.data)
            if any(sh not in ((), (batch,)) for sh in shapes):
                return None
            ops.append((type(op).__module__, type(op).__qualname__, tuple(op.wires.tolist()),
                        tuple(len(sh) for sh in shapes), value_key(dict(op.hyperparameters))))
        meas = tuple(measurement_key(mp) for mp in tape.measurements)
    except TypeError:
        return None
    return tuple(ops), meas, tape.shots


def _row_values(tape) -> np.ndarray:
    """The gate parameters of every row ``(rows, L)`` (one row for an unbroadcast tape)."""
    rows = tape.batch_size or 1
    cols = [np.broadcast_to(np.asarray(qml.math.toarray(p), dtype=float), (rows,))
            for op in tape.operations for p in op.data]
    return np.stack(cols, axis=1) if cols else np.zeros((rows, 0))


def _row_tape(tape, values):
    """The unbroadcast tape of ``tape``'s structure with row parameters ``values`` ``(L,)``."""
    return tape.bind_new_parameters([float(v) for v in values], list(range(len(values))))


def _trace(tape, device, wires) -> _Plan | None:
    """The device's preprocessing of ``tape``'s row structure as an affine map of a row's
    parameters (``None`` where it is not one)."""
    n = _row_values(tape).shape[1]
    rng = np.random.default_rng(20261207)
    probes, traced = [], []
    for _ in range(_PROBES):
        values = rng.uniform(-3.0, 3.0, size=n)
        batch, post = _device_batch([_row_tape(tape, values)], device)
        _check_tapes(batch)
        probes.append(values)
        traced.append((batch, post, [_structure(t, wires) for t in batch]))
    first_batch, first_post, first = traced[0]
    if any([k for k, _ in other] != [k for k, _ in first] for _, _, other in traced[1:]):
        return None
    v = np.stack(probes)  # (probes, L)
    maps = []
    for c in range(len(first)):
        y = np.array([trace[2][c][1] for trace in traced], dtype=float).reshape(_PROBES, -1)
        found = _affine(v, y)
        if found is None:
            return None
        maps.append(found)
    return _Plan(first_batch, [k for k, _ in first], maps, first_post)


def _affine(v: np.ndarray, y: np.ndarray):
    """Per column of ``y`` ``(probes, p)``: ``(j, a, b)`` with ``y = a v[:, j] + b`` on every
    probe (``v``: ``(probes, L)``), a constant as ``(0, 0, b)``; ``None`` if a column is
    neither."""
    p = y.shape[1]
    const = np.all(np.abs(y - y[0]) <= 1e-12, axis=0)
    dv = v[1] - v[0]
    safe = np.where(np.abs(dv) > 1e-9, dv, np.nan)
    a = (y[1] - y[0])[:, None] / safe[None, :]  # (p, L)
    b = y[0][:, None] - a * v[0][None, :]
    ok = np.ones_like(a, dtype=bool)
    for k in range(2, v.shape[0]):
        ok &= np.abs(a * v[k][None, :] + b - y[k][:, None]) <= 1e-9
    ok &= np.isfinite(a) & (np.abs(np.nan_to_num(a)) > 1e-12)
    has = ok.any(axis=1)
    if not np.all(has | const):
        return None
    j = np.where(has & ~const, ok.argmax(axis=1), 0)
    rows = np.arange(p)
    a_sel = np.where(const, 0.0, a[rows, j] if p else np.zeros(0))
    b_sel = np.where(const, y[0], b[rows, j] if p else np.zeros(0))
    return j.astype(int), a_sel, b_sel


def _checked(plan: _Plan | None, tape, device, wires) -> _Plan | None:
    """``plan`` if it gives the device's own preprocessing of ``tape``'s first row (its
    structures and parameter values, to 1e-9), else ``None``."""
    if plan is None:
        return None
    v = _row_values(tape)[0]
    batch, _ = _device_batch([_row_tape(tape, v)], device)
    _check_tapes(batch)
    own = [_structure(t, wires) for t in batch]
    if [k for k, _ in own] != plan.keys:
        return None
    for (_, values), (j, a, b) in zip(own, plan.maps, strict=True):
        if not np.allclose(values, a * v[j] + b, rtol=0, atol=1e-9):
            return None
    return plan


def _stack_rows(tape, rows: list):
    """One broadcast tape's result from its rows' results, stacked as PennyLane's
    ``broadcast_expand`` stacks them (the unbroadcast row's result for a tape without a batch
    axis)."""
    if tape.batch_size is None:
        return rows[0]
    if len(tape.measurements) == 1:
        return qml.math.stack(rows)
    return tuple(qml.math.stack([r[i] for r in rows]) for i in range(len(tape.measurements)))


def _device_circuits(tapes, device, setup: _Setup, cache: dict):
    """The device tapes of ``tapes``, their (template key, parameter values) and the
    post-processing back to one result per input tape."""
    wires = _wire_index(setup.dev)
    plans = cache.setdefault("plans", {})
    batch: list = []
    structures: list = []
    spans: list = []
    for tape in tapes:
        key = _input_key(tape)
        if key is not None and key not in plans:
            plans[key] = _checked(_trace(tape, device, wires), tape, device, wires)
            while len(plans) > MAX_TEMPLATES:
                del plans[next(iter(plans))]
        plan = None if key is None else plans[key]
        start = len(batch)
        if plan is None:  # the device's preprocessing on this tape
            tape_batch, post = _device_batch([tape], device)
            _check_tapes(tape_batch)
            batch.extend(tape_batch)
            structures.extend(_structure(t, wires) for t in tape_batch)
            spans.append((start, len(batch), None, post))
            continue
        values = _row_values(tape)  # (rows, L)
        per_circuit = [a * values[:, j] + b for j, a, b in plan.maps]  # each (rows, p_k)
        for r in range(values.shape[0]):
            batch.extend(plan.circuits)
            structures.extend((k, list(vals[r])) for k, vals
                              in zip(plan.keys, per_circuit, strict=True))
        spans.append((start, len(batch), plan, tape))

    def post_all(raw):
        out = []
        for a, b, plan, other in spans:
            if plan is None:
                out.append(other(raw[a:b])[0])
                continue
            m = len(plan.circuits)
            rows = [plan.post(raw[i:i + m])[0] for i in range(a, b, m)]
            out.append(_stack_rows(other, rows))
        return out

    return batch, structures, post_all


def prepare_batched(tapes, device, *, sampler: Any = _AUTO, cache: dict) -> bool:
    """Trace the device's preprocessing of ``tapes`` and transpile their templates into
    ``cache``, as :func:`execute_batched` would, running nothing (what the first step of a run
    builds once; the dry run's probe builds it before it is timed).

    Returns:
        bool: whether the tapes can take the route (:func:`route_refusal` is ``None``).
    """
    try:
        setup = _setup(device, sampler)
        _check_tapes(tapes)
        _, structures, _ = _device_circuits(list(tapes), device, setup, cache)
    except _Refused:
        return False
    _templates(cache, setup, {key for key, _ in structures})
    return True


def _templates(cache: dict, setup: _Setup, keys) -> dict:
    """The transpiled template of every key (from the cache, or transpiled and cached)."""
    store = cache.setdefault("templates", {})
    bkey = _backend_key(setup)
    out = {}
    for key in keys:
        full = (key, bkey)
        template = store.get(full)
        if template is None:
            template = _transpile(key, setup.backend, setup.options)
            store[full] = template
            while len(store) > MAX_TEMPLATES:
                del store[next(iter(store))]
        out[key] = template
    return out


def _split_jobs(groups: dict, max_circuits, max_shots, backend_max) -> list:
    """The PUBs ``(key, shots, rows)`` of each job: one job unless a cap splits them (rows
    of a PUB are split, in order, into jobs of at most ``max_circuits`` rows and
    ``max_shots`` shots)."""
    caps = [c for c in (max_circuits, backend_max) if c]
    cap_rows = min(caps) if caps else None
    jobs: list = [[]]
    n_rows = n_shots = 0
    for (key, shots), rows in groups.items():
        start = 0
        while start < len(rows):
            room_rows = len(rows) - start
            if cap_rows is not None:
                room_rows = min(room_rows, cap_rows - n_rows)
            if max_shots is not None:
                room_rows = min(room_rows, (max_shots - n_shots) // shots)
            if room_rows <= 0:
                if n_rows == 0:
                    raise ValueError(f"A circuit of {shots} shots exceeds `max_shots` "
                                     f"({max_shots}) on its own.")
                jobs.append([])
                n_rows = n_shots = 0
                continue
            jobs[-1].append((key, shots, rows[start:start + room_rows]))
            n_rows += room_rows
            n_shots += room_rows * shots
            start += room_rows
    return jobs


def _pub(template: Template, rows, shots: int):
    from qiskit.primitives.containers.bindings_array import BindingsArray

    values = np.array([v for _, v in rows], dtype=float).reshape(len(rows), -1)
    params = tuple(template.circuit.parameters)
    binds = (BindingsArray({params: template.values(values)}, shape=(len(rows),))
             if params else BindingsArray(shape=(len(rows),)))
    return template.circuit, binds, shots


def _statistics(setup: _Setup, tape, samples):
    """The device's result for one device tape from its samples ``(shots, wires)``."""
    single = len(tape.measurements) == 1
    if setup.kind == "legacy":
        from pennylane.devices.legacy_facade import _set_shots

        dev = setup.dev
        with _set_shots(dev, tape.shots):
            dev._samples = samples
            res = dev.statistics(tape)
        return res[0] if single else tuple(res)
    res = [mp.process_samples(samples, wire_order=setup.dev.wires) for mp in tape.measurements]
    return (res[0],) if single else tuple(res)


def _track(setup: _Setup, device, batch, raw, jobs: int) -> None:
    """Count the batch on the device's tracker as its own execution would, plus ``jobs``."""
    tracker = device.tracker
    if not tracker.active:
        return
    if setup.kind == "remote":
        tracker.update(batches=1, batch_len=len(batch))
        tracker.record()
    for tape, res in zip(batch, raw, strict=True):
        tracker.update(executions=1, shots=int(tape.shots.total_shots), results=res)
        tracker.record()
    if setup.kind == "legacy":
        tracker.update(batches=1, batch_len=len(batch))
        tracker.record()
    tracker.update(jobs=jobs)
    tracker.record()


def _fallback(tapes, device, why: str, cache: dict) -> list:
    """The device's own execution (one call per shot count), after a one-line warning (once
    per cache and reason)."""
    warned = cache.setdefault("warned", set())
    if why not in warned:
        warned.add(why)
        warnings.warn(f"Batched Qiskit route not taken ({why}); the device's own execution "
                      f"runs these circuits.", BatchedRouteFallback, stacklevel=3)
    return device_execute(tapes, device)


def device_execute(tapes: Sequence[qml.tape.QuantumScript],
                   device: qml.devices.Device) -> list:
    """``qml.execute(tapes, device)`` with one call per distinct shot count (results in the
    order of ``tapes``): the device's own execution, which the batched route replaces."""
    counts = list(dict.fromkeys(t.shots for t in tapes))
    if len(counts) <= 1:
        return list(qml.execute(tapes, device, diff_method=None))
    results: list = [None] * len(tapes)
    for shots in counts:
        idx = [i for i, t in enumerate(tapes) if t.shots == shots]
        for i, r in zip(idx, qml.execute([tapes[i] for i in idx], device, diff_method=None),
                        strict=True):
            results[i] = r
    return results
