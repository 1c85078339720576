r"""Executing tapes analytically and drawing every shot estimate from the exact outcome law.

How it is switched on: :func:`use_exact_law` or :func:`set_shot_sampling` (:mod:`.modes`).
The forward circuit and all shifted circuits are then executed *analytically* (copies with
``shots=None``, still one :func:`pennylane.execute` call; on a device that simulates broadcast
tapes at once, such as default.qubit, they are merged into a few broadcast tapes,
:mod:`.merging`) and every estimate is drawn with one vectorised draw per measurement group
(:mod:`.draws`). The draws come from the device's own numpy ``Generator`` (``device._rng`` of
default.qubit, lightning.qubit and default.mixed), so the device seed and per-epoch reseeding
(the training job's ``--resume``) repeat them exactly; a device without one (hardware, remote
simulators) is refused. As with the device's own sampling, the shot noise then comes from a
seeded pseudo-random generator. Direct calls of the QNode (outside a TorchLayer) keep sampling
on the device.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pennylane as qml
from pennylane.devices.qubit.sampling import get_num_shots_and_executions

from ..gradients._keys import measurement_key
from ._state_vector import (
    record_executions,
    shift_spec,
    simulate_shifts,
    simulate_stacked,
    simulate_tapes,
    track_execution,
)
from .draws import read_group, shot_groups
from .merging import (
    MAX_MERGED_AMPLITUDES,
    broadcasts_natively,
    circuits_per_chunk,
    fuses_gates,
    merged_tapes,
    stacked_from_offsets,
    stacked_parameters,
)
from .modes import device_generator

__all__ = ["execute_exact_law", "execute_offsets", "simulates_with_kernels"]

def _as_rows(result, num_meas):
    return [result] if num_meas == 1 else list(result)


def _check_shots(shots) -> None:
    if not shots:
        raise ValueError("Exact-law sampling draws finite-shot estimates; the tapes are "
                         "analytic (shots=None). Execute them with pennylane.execute.")
    if shots.has_partitioned_shots:
        raise NotImplementedError(f"Exact-law shot sampling does not support shot vectors "
                                  f"(found {shots}).")


def execute_exact_law(tapes: Sequence[qml.tape.QuantumScript], device: qml.devices.Device, *,
                      max_amplitudes: int = MAX_MERGED_AMPLITUDES) -> list:
    r"""Execute tapes analytically and draw every shot estimate from the exact outcome law.

    The tapes must have the same measurements and finite shots (not a shot vector). Tapes with
    the same gates, differing only in parameters (a forward tape and its parameter-shift tapes),
    are merged into broadcast tapes of at most ``max_amplitudes`` amplitudes; others run one
    analytic copy each. All run in one :func:`pennylane.execute` call with ``shots=None``; then,
    per measurement group (module docstring), one vectorised binomial or multinomial draw over
    all tapes and batch elements uses the device's generator.

    Args:
        tapes: the circuits, all with the same measurements and shots.
        device: a simulator with a numpy generator (see :func:`device_generator`).
        max_amplitudes: bound on merged batch size × :math:`2^{\text{wires}}` per broadcast tape.

    Returns:
        list: per tape, results in the structure the device returns with shots (one array per
        measurement, a tuple for several; a leading batch axis for broadcast tapes).

    Raises:
        ValueError: for tapes without finite shots, with different shots, batch sizes or
            measurements, or a non-positive ``max_amplitudes``.
        NotImplementedError: for a shot vector, a device without a numpy generator, or a
            measurement other than expval/var of a two-outcome observable and probs.

    Example:
        >>> dev = qml.device("default.qubit", seed=0)
        >>> tape = qml.tape.QuantumScript([qml.RX(np.pi, 0)], [qml.expval(qml.Z(0))], shots=10)
        >>> [float(r) for r in execute_exact_law([tape], dev)]
        [-1.0]
    """
    if not tapes:
        return []
    template = tapes[0]
    _check_shots(template.shots)
    key = [measurement_key(mp) for mp in template.measurements]
    for t in tapes[1:]:
        if t.batch_size != template.batch_size:
            raise ValueError(f"All tapes must have the same batch size. Found "
                             f"{template.batch_size} and {t.batch_size}.")
        if t.shots != template.shots:
            raise ValueError(f"All tapes must have the same shots. Found {template.shots} and "
                             f"{t.shots}.")
        if [measurement_key(mp) for mp in t.measurements] != key:
            raise ValueError(f"All tapes must have the same measurements. Found "
                             f"{template.measurements} and {t.measurements}.")
    signature = [(op.name, op.wires, len(op.data)) for op in template.operations]
    if all([(op.name, op.wires, len(op.data)) for op in t.operations] == signature
           for t in tapes[1:]):
        return _execute(template, [t.get_parameters(trainable_only=False) for t in tapes],
                        device, max_amplitudes)
    return _execute(template, None, device, max_amplitudes, tapes=tapes)


def execute_offsets(template, offsets, device, *, analytic: bool = False) -> list:
    r"""The circuits ``template`` with its parameters moved by each row of ``offsets``, merged
    into broadcast tapes (light cone, single-qubit fusion) where the device broadcasts natively.

    With ``analytic=False`` every estimate is drawn from the exact outcome law
    (:func:`execute_exact_law`, the tape's finite shots); with ``analytic=True`` the tape's own
    measurements are returned analytically (``shots=None``), exactly as
    :func:`pennylane.execute` returns them for the separate circuits, up to floating-point
    rounding of the fused gates (dropping gates outside the light cone is exact).

    Args:
        template: a tape (possibly broadcast); with ``analytic=False`` it needs finite shots.
        offsets: per tape parameter (``get_parameters(trainable_only=False)`` order) an array
            ``(C, *shape)`` added to it: C circuits.
        device: the device to run them on.
        analytic: return analytic results (see above).

    Returns:
        list: per circuit, results in the structure the device returns (one array per
        measurement, a tuple for several; a leading batch axis for a broadcast template).

    Raises:
        ValueError: with ``analytic=False``, for a template without finite shots.
        NotImplementedError: as :func:`execute_exact_law`.
    """
    return _execute(template, None, device, offsets=offsets, analytic=analytic)


def _execute(template, param_sets, device, max_amplitudes=MAX_MERGED_AMPLITUDES, *,
             tapes=None, offsets=None, analytic=False) -> list:
    """:func:`execute_exact_law` of the circuits ``template`` with each parameter set
    (all tape parameters, as ``get_parameters(trainable_only=False)``), of ``template`` with
    its parameters moved by each row of ``offsets`` (per tape parameter an array
    ``(C, *shape)``; ``param_sets`` is then ``None``), or of ``tapes``; with ``analytic``, the
    measurements' analytic values instead of exact-law draws."""
    if isinstance(max_amplitudes, bool) or not isinstance(max_amplitudes, (int, np.integer)) \
            or max_amplitudes < 1:
        raise ValueError(f"`max_amplitudes` must be a positive integer. Found "
                         f"{max_amplitudes!r}.")
    shots = template.shots
    mps = list(template.measurements)
    groups: list | None = None
    if analytic:  # one reader per measurement: its analytic value
        analytic_mps = mps
    else:
        _check_shots(shots)
        rng = device_generator(device)
        groups = shot_groups(mps)
        analytic_mps = [g.analytic for g in groups]
    batch = template.batch_size
    beff = batch or 1

    chunks = None
    per_group: list[list[np.ndarray]] = [[] for _ in analytic_mps]
    direct = None
    kernels = simulates_with_kernels(device)
    natively = broadcasts_natively(device)
    if tapes is None and (kernels or natively):
        if kernels and offsets:
            direct = _run_shifts(device, template, offsets, analytic_mps, max_amplitudes,
                                 per_group)
        if offsets is not None:
            n_circ = len(np.asarray(offsets[0])) if offsets else 1
            stacked = None if direct is not None else \
                stacked_from_offsets(template, offsets, beff)
        else:
            n_circ = len(param_sets)
            stacked = stacked_parameters(template, param_sets, beff)
        if direct is None and kernels and stacked is not None:
            direct = _run_stacked(device, template, stacked, n_circ, analytic_mps,
                                  max_amplitudes, per_group)
        if direct is None and natively:
            chunks = merged_tapes(template, stacked, n_circ, analytic_mps, max_amplitudes,
                                   fuse=fuses_gates(device))
    if direct is not None:
        num = direct
    else:
        if chunks is None and tapes is None and param_sets is None:
            base = template.get_parameters(trainable_only=False)
            n_circ = len(np.asarray(offsets[0])) if offsets else 1
            param_sets = [[b + np.asarray(o)[c] for b, o in zip(base, offsets, strict=True)]
                          for c in range(n_circ)]
        if chunks is None and tapes is None:
            indices = list(range(len(param_sets[0])))
            tapes = [template.bind_new_parameters(ps, indices) for ps in param_sets]
        if chunks is None:  # one analytic copy per circuit
            chunks = [(t.copy(measurements=analytic_mps, shots=None), 1) for t in tapes]
        num = sum(c[1] for c in chunks)
        results = _run(device, [c[0] for c in chunks])
        for (tape, n_circuits), res in zip(chunks, results, strict=True):
            n_rows = n_circuits * beff
            for g, r in enumerate(_as_rows(res, len(analytic_mps))):
                arr = np.asarray(qml.math.toarray(r), dtype=float)
                arr = arr.reshape(n_rows, *arr.shape[1:]) if tape.batch_size is not None \
                    else np.broadcast_to(arr, (n_rows, *arr.shape))
                per_group[g].append(arr)

    values: list = [None] * len(mps)
    if groups is None:
        for i, parts in enumerate(per_group):
            v = np.concatenate(parts, axis=0)
            values[i] = v.reshape(num, beff, *v.shape[1:])
    for g, group in enumerate(groups or ()):
        exact = np.concatenate(per_group[g], axis=0)  # (num · beff, ...)
        for i, v in zip(group.members, read_group(group, exact, shots.total_shots, rng),
                        strict=True):
            values[i] = v.reshape(num, beff, *v.shape[1:])

    out = []
    for t in range(num):
        row = [v[t] if batch else v[t, 0] for v in values]
        out.append(row[0] if len(row) == 1 else tuple(row))
    return out


def _run_stacked(device, template, stacked, n_circ, measurements, max_amplitudes,
                 per_group) -> int | None:
    """The merged circuits simulated from their stacked parameters without building tapes
    (:func:`~pennylane_qshiftdp.sampling._state_vector.simulate_stacked`, default.qubit only),
    chunked as :func:`merged_tapes` chunks them and recorded on the device's tracker as the
    merged tapes would be; appends each measurement's rows to ``per_group`` and returns the
    number of circuits, or ``None`` (nothing appended or recorded) where the kernels decline."""
    beff = template.batch_size or 1
    step = circuits_per_chunk(template, max_amplitudes)
    chunks = []
    for start in range(0, n_circ, step):
        stop = min(start + step, n_circ)
        done = _simulate_rows(template, stacked, start * beff, stop * beff, measurements)
        if done is None:
            return None
        chunks.append((stop - start, *done))
    _record_and_collect(device, measurements, chunks, beff, per_group)
    return n_circ


def _record_and_collect(device, measurements, chunks, beff, per_group) -> None:
    """Record merged chunks ``[(circuits, values, broadcast)]`` on the device's tracker as
    the merged tapes would be, and append each measurement's rows to ``per_group``."""
    if device.tracker.active:
        executions = get_num_shots_and_executions(
            qml.tape.QuantumScript([], measurements, shots=None))[0]
        entries = []
        for n_circuits, values, broadcast in chunks:
            # an unbroadcast merged tape: one execution, results without the batch axis
            result = values if broadcast else [v[0] for v in values]
            entries.append((executions * (n_circuits * beff if broadcast else 1),
                            result[0] if len(result) == 1 else tuple(result)))
        record_executions(device, entries)
    for n_circuits, values, _ in chunks:
        n_rows = n_circuits * beff
        for g, v in enumerate(values):
            per_group[g].append(np.broadcast_to(v, (n_rows, *v.shape[1:])))


def _run_shifts(device, template, offsets, measurements, max_amplitudes,
                per_group) -> int | None:
    """Parameter-shift circuits (each the forward circuit with one rotation angle moved by
    ±π/2) by one suffix evolution per shifted angle
    (:func:`~pennylane_qshiftdp.sampling._state_vector.simulate_shifts`, default.qubit only),
    the batch rows split between threads when large; recorded and collected as
    :func:`_run_stacked` records and collects the same circuits. ``None`` (nothing recorded)
    where it does not apply."""
    spec = shift_spec(template, offsets)
    if spec is None:
        return None
    beff = template.batch_size or 1
    n_circ = len(spec)
    n_blocks = 1 + len({s[0] for s in spec if s is not None})
    per_row = n_blocks * 2 ** max(len(template.wires), 1)
    # rows per sweep: its two buffers of (blocks × rows × 2^wires) amplitudes stay near
    # _SHIFT_SWEEP_AMPLITUDES per thread (one sweep for every row up to 12 qubits at batch 54)
    span = max(1, _SHIFT_SWEEP_AMPLITUDES // per_row) * min(_workers(), 4)
    parts = []
    for start in range(0, beff, span):
        done = _in_threads(lambda rows: simulate_shifts(template, spec, measurements, rows),
                           start, min(start + span, beff), per_row, row_axis=1)
        if done is None:
            return None
        parts.append(done)
    broadcast = parts[0][1]
    values = [np.concatenate([part[0][i] for part in parts], axis=1)
              for i in range(len(parts[0][0]))] if broadcast and len(parts) > 1 \
        else parts[0][0]  # per measurement (C, rows, ...); rows 1 if unbroadcast
    step = circuits_per_chunk(template, max_amplitudes)
    chunks = []
    for start in range(0, n_circ, step):
        stop = min(start + step, n_circ)
        part = [v[start:stop] for v in values]
        if broadcast:
            part = [v.reshape((stop - start) * beff, *v.shape[2:]) for v in part]
        else:
            part = [v[:1, 0] for v in part]  # one shared row: an unbroadcast merged tape
        chunks.append((stop - start, part, broadcast))
    _record_and_collect(device, measurements, chunks, beff, per_group)
    return n_circ


# From this many amplitudes (rows × 2^wires) a merged chunk's rows are split between threads:
# numpy releases the GIL in its array operations, each row evolves independently (the values
# are bitwise those of one call), and two threads ran an 8-qubit exact-law chunk 1.6× faster
# on two cores; below it the threads' overhead is larger than the gain.
_THREADED_AMPLITUDES = 2**17
# Amplitudes of one suffix sweep's state (blocks × rows × 2^wires) per thread: rows beyond it
# are swept in turn (16 qubits at batch 54: 3 rows per sweep, two 256 MiB buffers per thread).
_SHIFT_SWEEP_AMPLITUDES = 2**24
_POOL: list = []


def _workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _simulate_rows(template, stacked, start: int, stop: int, measurements):
    """:func:`simulate_stacked` of the rows ``start:stop`` (split between threads when the
    chunk is large)."""
    return _in_threads(lambda rows: simulate_stacked(template, stacked, rows, measurements),
                       start, stop, 2 ** max(len(template.wires), 1), row_axis=0)


def _in_threads(simulate, start: int, stop: int, amplitudes_per_row: int, *, row_axis: int):
    """``simulate(rows)`` (``(values, broadcast)`` or ``None``) of the rows ``start:stop``,
    split between threads from :data:`_THREADED_AMPLITUDES` amplitudes; the parts' values are
    joined along ``row_axis`` (an unbroadcast result is one row shared by every part)."""
    workers = min(_workers(), 4)
    if workers < 2 or stop - start < workers or \
            (stop - start) * amplitudes_per_row < _THREADED_AMPLITUDES:
        return simulate(slice(start, stop))
    if not _POOL:
        _POOL.append(ThreadPoolExecutor(max_workers=workers,
                                        thread_name_prefix="qshiftdp-kernels"))
    bounds = np.linspace(start, stop, workers + 1).astype(int)
    parts = list(_POOL[0].map(lambda ab: simulate(slice(*ab)),
                              zip(bounds[:-1], bounds[1:], strict=True)))
    if any(part is None for part in parts):
        return None
    if not parts[0][1]:
        return parts[0]
    return [np.concatenate([part[0][i] for part in parts], axis=row_axis)
            for i in range(len(parts[0][0]))], True


def simulates_with_kernels(device) -> bool:
    """Whether the analytic circuits of exact-law sampling and analytic parameter shift on
    ``device`` are simulated by the product's batched state-vector kernels
    (:mod:`._state_vector`) rather than executed by the device: on PennyLane's state-vector
    simulators default.qubit and lightning.qubit (the exact classes: a subclass could add noise
    in its preprocessing). Both compute the same exact state and outcome law (to float
    rounding); lightning.qubit does not vectorise broadcast tapes, so its own execution of the
    2P + 1 circuits per example was 20 times slower than the kernels (benchmarks/RESULTS.md
    §12). The device's own sampling (``shot_sampling="device"``) is never replaced."""
    if type(device) is qml.devices.DefaultQubit:
        return True
    try:
        from pennylane_lightning.lightning_qubit import LightningQubit
    except ImportError:  # pragma: no cover - lightning is a dependency
        return False
    return type(device) is LightningQubit


def _run(device, tapes) -> list:
    """Analytic results of ``tapes`` on ``device``: on default.qubit and lightning.qubit (the
    exact classes, :func:`simulates_with_kernels`) by the batched kernels of
    :func:`~pennylane_qshiftdp.sampling._state_vector.simulate_tapes` (recorded on the device's
    tracker as default.qubit's own execution would be), elsewhere, or for what the kernels do
    not cover, by :func:`pennylane.execute`."""
    if simulates_with_kernels(device):
        results = simulate_tapes(tapes)
        if results is not None:
            track_execution(device, tapes, results)
            return results
    return qml.execute(tapes, device, diff_method=None)
