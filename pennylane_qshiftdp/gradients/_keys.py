r"""Exact keys of operators and measurements, for comparing circuits and keying caches.

PennyLane's ``Operator.hash`` and ``MeasurementProcess.hash`` hash a printed representation,
and numpy elides arrays of more than 1000 entries when printing: two 5-qubit ``Hermitian``
observables that differ in one interior entry have the same hash. Every key here holds
arrays by their dtype, shape and bytes, so two keys are equal only if the data are equal bit
for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["measurement_key", "operation_key", "value_key"]


def _array_key(arr: np.ndarray) -> tuple:
    if arr.dtype == object:  # not a plain number or array (a sparse matrix, say)
        raise TypeError(f"not a numeric array: {arr.dtype}")
    return ("array", arr.dtype.str, arr.shape, arr.tobytes())


def value_key(value: Any) -> Any:
    """An exact, hashable key of a parameter, hyperparameter or observable datum: arrays and
    tensors by their bytes, containers recursively, operators by :func:`operation_key`.

    Raises:
        TypeError: for a value that has no exact key (an object array, a sparse matrix).
    """
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        return _array_key(np.asarray(value.detach().cpu().numpy()))
    if isinstance(value, (np.ndarray, np.generic)):
        return _array_key(np.asarray(value))
    if isinstance(value, (bool, int, float, complex, str, type(None))):
        return (type(value).__name__, value)
    if isinstance(value, type):  # an operator class as a hyperparameter (``imprimitive``)
        return ("type", value.__module__, value.__qualname__)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(value_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), value_key(v)) for k, v in value.items())))
    if hasattr(value, "wires") and hasattr(value, "data") and hasattr(value, "hyperparameters"):
        return operation_key(value)
    if hasattr(value, "tolist") and hasattr(value, "labels"):  # pennylane.wires.Wires
        return ("wires", tuple(value.tolist()))
    if hasattr(value, "__array__") and not hasattr(value, "toarray"):
        return _array_key(np.asarray(value))
    raise TypeError(f"no exact key for a value of type {type(value).__name__}")


def operation_key(op: Any) -> tuple:
    """An exact key of an operator: its type, wires, every datum and every hyperparameter
    (nested operators included, recursively)."""
    return (type(op).__module__, type(op).__qualname__, tuple(op.wires.tolist()),
            tuple(value_key(d) for d in op.data), value_key(dict(op.hyperparameters)))


def measurement_key(mp: Any) -> tuple:
    """An exact key of a measurement process: its type, wires and observable
    (:func:`operation_key`), or its eigenvalue map for measurements of wires."""
    obs = None if mp.obs is None else operation_key(mp.obs)
    return (type(mp).__module__, type(mp).__qualname__, tuple(mp.wires.tolist()), obs,
            None if mp.mv is None else repr(mp.mv))
