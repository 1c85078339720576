r"""A circuit's duration on a backend, from the durations in its ``target``.

The estimate of a job's QPU time is :math:`\sum_c N_c\,(d_c + r)`: per circuit its shots
times the duration of one shot, :math:`d_c` the longest path through the transpiled circuit
with every instruction's duration from the backend's ``target`` (Qiskit's
:meth:`qiskit.circuit.QuantumCircuit.estimate_duration`; the fake backends carry their
device's calibrated durations), and :math:`r` the backend's default repetition delay between
shots (``default_rep_delay``: 250 µs on the fake backends, far longer than these circuits; 0
where the backend gives none). Not included: compilation, queueing and the classical round
trips of a job.
"""

from __future__ import annotations

from typing import Any

__all__ = ["circuit_seconds", "has_durations", "shot_seconds"]


def has_durations(backend) -> bool:
    """Whether ``backend``'s ``target`` gives the duration of its measurement (a simulator's
    does not).

    Example:
        >>> from qiskit_ibm_runtime.fake_provider import FakeManilaV2  # doctest: +SKIP
        >>> has_durations(FakeManilaV2())  # doctest: +SKIP
        True
    """
    target = getattr(backend, "target", None)
    if target is None or "measure" not in target.operation_names:
        return False
    props = target["measure"]
    return any(p is not None and p.duration for p in props.values())


def circuit_seconds(circuit: Any, backend: Any) -> float:
    """Duration in seconds of one shot of ``circuit`` (transpiled for ``backend``) on
    ``backend``: the longest path of instruction durations of its ``target``.

    Args:
        circuit: a Qiskit circuit in the backend's instruction set (free parameters allowed).
        backend: a ``BackendV2`` whose ``target`` holds durations.

    Returns:
        float: seconds.

    Raises:
        ValueError: if the backend's target has no durations (a simulator).
    """
    if not has_durations(backend):
        raise ValueError(f"Backend {getattr(backend, 'name', backend)!r} gives no instruction "
                         f"durations in its target; no QPU time can be estimated.")
    return float(circuit.estimate_duration(backend.target, unit="s"))


def shot_seconds(circuit: Any, backend: Any) -> float:
    """QPU seconds of one shot of ``circuit`` on ``backend``: :func:`circuit_seconds` plus the
    backend's ``default_rep_delay`` (0 where it gives none).

    Raises:
        ValueError: as :func:`circuit_seconds`.
    """
    delay = getattr(backend, "default_rep_delay", None)
    return circuit_seconds(circuit, backend) + (float(delay) if delay else 0.0)
