r"""Reusing a layer's expanded circuit between batches, when it provably does not change.

Every batch, :func:`~pennylane_qshiftdp.qnn.evaluation.evaluate_layer` builds the QNode's tape
at PennyLane's ``"gradient"`` level (the templates decomposed into gates with shift rules) with
torch leaves for the inputs and the weights, and reads the classical Jacobians of the gate
parameters off torch's autograd (:func:`~._shift_plan.param_dependencies`). At four qubits
this costs as much as simulating every shifted circuit. It need not be redone when the
circuit's structure cannot have changed:

* the QNode's function is recorded again every batch (cheap: nothing is decomposed), and its
  recorded structure is the cache key — gate and template types, wires, hyperparameters,
  parameter shapes, measurements, shots, device, the private transform and its options, the
  batch shape — so Python control flow on the values, a different device or shots, or a new
  batch size all miss the cache;
* every recorded parameter is one of the leaves or a view of one (``weights[0]``,
  ``inputs[..., 1]``, ``weights.reshape(2, 4, 3)``: it shares the leaf's storage, and its
  storage offset, shape and strides — which say which elements it holds — are part of the
  key), or a constant, whose value is part of the key; a parameter computed from the weights
  or inputs (``RX(2 * w)``, ``RX(torch.sin(w))``) is not cached;
* every recorded operation is one of PennyLane's own gates and templates listed in
  :data:`SELECTION_OPS`, whose decomposition is a fixed function of its type, wires and
  hyperparameters and places *elements* of its parameters in the gates (``AngleEmbedding``
  puts ``x[..., i]`` in ``RY``; ``StronglyEntanglingLayers`` puts ``w[l, i, k]`` in ``Rot``);
* no two weights share a storage (tied weights), and the measurements' observables are keyed
  by their exact data (an operator's ``hash`` prints its arrays, and numpy elides long ones);
* the QNode has no transforms of its own.

Under these conditions every gate parameter of the expanded tape is an element of an input
column or of a weight, at the same position every batch. When the structure is first seen
(:func:`record`), the full construction runs, each gate parameter's source is read off its
autograd Jacobian (a single entry equal to one, and the value equal to that element) and the
replay (:func:`replay`) is checked to give the full construction's parameters exactly, at the
batch's values and at a second, perturbed point built from scratch; if any check fails, the
structure is not kept and every batch takes the full construction (so is one whose function
raises at the second point). The QNode's function is called once more when a structure is
first seen (a function with side effects sees that call). Derived here; the tests compare the
evaluations with and without the cache, batch after batch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pennylane as qml
import torch

from ..gradients._keys import measurement_key, value_key
from ._caches import layer_cache

__all__ = ["SELECTION_OPS", "Structure", "flat_weights", "lookup", "numpy_params", "record",
           "replay", "structure_key"]

#: PennyLane gates and templates whose decomposition places elements of their parameters in
#: gates, with a structure fixed by type, wires and hyperparameters (not by values).
SELECTION_OPS = frozenset({
    qml.AngleEmbedding, qml.StronglyEntanglingLayers, qml.BasicEntanglerLayers,
    qml.RX, qml.RY, qml.RZ, qml.Rot, qml.PhaseShift, qml.CRX, qml.CRY, qml.CRZ, qml.CRot,
    qml.IsingXX, qml.IsingYY, qml.IsingZZ,
    qml.CNOT, qml.CZ, qml.SWAP, qml.Hadamard, qml.PauliX, qml.PauliY, qml.PauliZ, qml.S,
    qml.T, qml.SX, qml.Identity,
})

# Largest number of structures a layer keeps.
_MAX_STRUCTURES = 8

# Scale of the perturbation of the second point at which a new structure is checked.
_PROBE_SCALE = 0.5


@dataclasses.dataclass
class Structure:
    """A layer's expanded tape and where each of its parameters comes from.

    Attributes:
        template: the expanded forward tape of the batch that recorded it (numpy parameters).
        sources: per tape parameter, ``("x", column)``, ``("w", flat index)`` into the
            concatenated flattened weights, or ``("c", value)`` for a constant.
        deps: per tape parameter, the classical dependencies
            (:func:`~._shift_plan.param_dependencies`), which do not change between batches.
    """

    template: qml.tape.QuantumScript
    sources: list
    deps: list


def _constant_key(value):
    arr = np.asarray(value)
    if arr.dtype == object:  # not a plain number or array (a sparse matrix, say)
        raise TypeError(f"not a numeric constant: {type(value).__name__}")
    return (arr.dtype.str, arr.shape, arr.tobytes())


def structure_key(qnode, raw_tape, leaves, input_grad: bool) -> tuple | None:
    """The cache key of the recorded tape ``raw_tape`` (the QNode's function recorded with the
    torch ``leaves``: inputs first, then the weights), or ``None`` if its expanded tape must be
    built afresh (see the module docstring)."""
    if len(qnode.compile_pipeline):
        return None
    storages: dict[int, tuple[int, torch.Tensor]] = {}
    for i, leaf in enumerate(leaves):
        storages.setdefault(leaf.untyped_storage().data_ptr(), (i, leaf))
    if len(storages) != len(leaves):
        return None  # tied weights share a storage: a view would not say whose it is
    ops = []
    for op in raw_tape.operations:
        if type(op) not in SELECTION_OPS:
            return None
        params = []
        for d in op.data:
            if isinstance(d, torch.Tensor):
                view = _view_of(d, storages)
                if view is None:
                    return None  # computed from the leaves (classical processing)
                params.append(view)
            elif isinstance(d, (float, int, np.ndarray, np.generic)):
                try:
                    params.append(("c", _constant_key(d)))
                except TypeError:
                    return None
            else:
                return None
        try:
            hyper = value_key(dict(op.hyperparameters))
        except TypeError:
            return None
        ops.append((type(op), tuple(op.wires), hyper, tuple(params)))
    for mp in raw_tape.measurements:
        if mp.obs is not None and any(isinstance(d, torch.Tensor) for d in mp.obs.data):
            return None  # an observable built from tensors: its key would change every batch
    try:
        measurements = tuple(measurement_key(mp) for mp in raw_tape.measurements)
    except TypeError:
        return None
    # The expansion at PennyLane's "gradient" level is the transform's own (the QNode's
    # transforms are refused above, its gradient options other than a recorder are refused by
    # the layer), so it depends on the device only through its wires; the device's type and
    # name are kept as well. Nothing is keyed by an object's identity.
    device = qnode.device
    return (tuple(ops), measurements, qnode.shots, type(device).__qualname__, device.name,
            tuple((device.wires or qml.wires.Wires([])).tolist()),
            tuple((tuple(leaf.shape), leaf.dtype) for leaf in leaves), bool(input_grad))


def _view_of(tensor, storages) -> tuple | None:
    """``("view", leaf, offset, shape, stride)`` if ``tensor`` is a leaf or a view of one (it
    shares the leaf's storage: its elements are the leaf's elements at the positions its
    offset, shape and strides give, whatever the values), else ``None``."""
    found = storages.get(tensor.untyped_storage().data_ptr())
    if found is None:
        return None
    i, leaf = found
    if tensor.dtype != leaf.dtype:
        return None
    return ("view", i, tensor.storage_offset() - leaf.storage_offset(), tuple(tensor.shape),
            tuple(tensor.stride()))


def numpy_params(params) -> list:
    """A tape's parameters as numpy arrays (torch tensors detached)."""
    return [np.asarray(p.detach().numpy() if isinstance(p, torch.Tensor) else p)
            for p in params]


def _sources(params, deps, x_np, w_flat) -> list | None:
    """Per tape parameter its source, read off its dependencies and checked on its value."""
    sources: list[tuple] = []
    for p, value, (on_x, row, gx) in zip(params, numpy_params(params), deps, strict=True):
        if on_x:
            g = gx.reshape(gx.shape[0], -1).numpy()
            cols = np.flatnonzero(np.any(g != 0, axis=0))
            if len(cols) != 1 or not np.all(g[:, cols[0]] == 1.0) or \
                    value.shape != (x_np.shape[0],) or \
                    not np.array_equal(value, x_np[:, cols[0]]):
                return None
            sources.append(("x", int(cols[0])))
        elif row is not None:
            r = row.numpy()
            nz = np.flatnonzero(r)
            if len(nz) != 1 or r[nz[0]] != 1.0 or value.shape != () or \
                    float(value) != w_flat[nz[0]]:
                return None
            sources.append(("w", int(nz[0])))
        elif isinstance(p, torch.Tensor) and p.requires_grad:
            return None  # tracked but constant: not a selection
        else:
            sources.append(("c", value))
    return sources


def replay(structure: Structure, x_np: np.ndarray, w_flat: np.ndarray) -> list:
    """The expanded tape's parameters for the inputs ``x_np`` ``(B, n_in)`` and the
    concatenated flattened weights ``w_flat``."""
    out = []
    for kind, where in structure.sources:
        if kind == "x":
            out.append(x_np[:, where].copy())
        elif kind == "w":
            out.append(np.asarray(w_flat[where]))
        else:
            out.append(where)
    return out


def flat_weights(w_leaves) -> np.ndarray:
    """The weights, flattened and concatenated (float64)."""
    return np.concatenate([w.detach().reshape(-1).numpy() for w in w_leaves]) if w_leaves \
        else np.zeros(0)


#: Kept under a key whose structure failed a check (built in full every batch, not re-checked).
_REFUSED = object()


def lookup(layer, key) -> Structure | None:
    """The structure kept for ``layer`` under ``key`` (``None`` if none)."""
    if key is None:
        return None
    kept = layer_cache(layer, "structures").get(key)
    return kept if isinstance(kept, Structure) else None


def record(layer, key, params, deps, fwd, x_np, w_leaves, build) -> None:
    """Keep the structure of a batch built in full (its tape parameters ``params``, their
    ``deps``, the numpy tape ``fwd``) if every check of the module docstring passes.

    ``build(x, weights)`` builds ``(numpy parameters, fwd tape)`` in full for other values (the
    second point)."""
    if key is None:
        return
    kept = layer_cache(layer, "structures")
    if key in kept:
        return
    if len(kept) >= _MAX_STRUCTURES:
        kept.clear()
    kept[key] = _checked(params, deps, fwd, x_np, w_leaves, build)


def _checked(params, deps, fwd, x_np, w_leaves, build):
    """The :class:`Structure` of a batch built in full, or :data:`_REFUSED` if a check fails."""
    w_flat = flat_weights(w_leaves)
    sources = _sources(params, deps, x_np, w_flat)
    if sources is None:
        return _REFUSED
    structure = Structure(fwd, sources, deps)
    full = numpy_params(params)
    if not _same(replay(structure, x_np, w_flat), full):
        return _REFUSED
    rng = np.random.default_rng(len(full))
    x2 = x_np + _PROBE_SCALE * rng.standard_normal(x_np.shape)
    w2 = [w.detach() + _PROBE_SCALE * torch.as_tensor(rng.standard_normal(tuple(w.shape)))
          for w in w_leaves]
    try:
        params2, fwd2 = build(x2, w2)
    except Exception:  # noqa: BLE001 - the QNode refuses other values: not replayable
        return _REFUSED
    if _signature(fwd2) != _signature(fwd) or \
            not _same(replay(structure, x2, flat_weights(w2)), params2):
        return _REFUSED
    return structure


def _signature(tape) -> tuple:
    return (tuple((type(op), tuple(op.wires), tuple(np.shape(d) for d in op.data))
                  for op in tape.operations),
            tuple(measurement_key(mp) for mp in tape.measurements), tape.shots)


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        np.shape(u) == np.shape(v) and np.array_equal(np.asarray(u), np.asarray(v))
        for u, v in zip(a, b, strict=True))
