r"""Execution on Qiskit backends: a step's circuits as templates, one ``SamplerV2`` job.

* :mod:`.batched`: :func:`~.batched.execute_batched` runs a batch of tapes on a
  pennylane-qiskit device (``qiskit.aer``, ``qiskit.remote``) as one Qiskit ``SamplerV2`` job:
  the circuits grouped by structure, each structure converted and transpiled once, its
  parameter rows in one parameter array per shot count (docs/hardware.md);
  :func:`~.batched.set_sampler` chooses the sampler (or switches the route off),
  :func:`~.batched.set_job_limits` caps a job's circuits and shots;
  :func:`~.batched.route_refusal` says why a batch cannot take the route.
* :mod:`.qpu_time`: :func:`~.qpu_time.circuit_seconds` and :func:`~.qpu_time.shot_seconds`,
  a circuit's duration on a backend from its ``target`` (the dry run's estimated QPU time).
"""

from .batched import (
    TEMPLATE_CACHE,
    BatchedRouteFallback,
    execute_batched,
    job_caps,
    route_refusal,
    sampler_of,
    set_job_limits,
    set_sampler,
    uses_batched_route,
)
from .qpu_time import circuit_seconds, shot_seconds

__all__ = ["TEMPLATE_CACHE", "BatchedRouteFallback", "circuit_seconds", "execute_batched",
           "job_caps", "route_refusal", "sampler_of", "set_job_limits", "set_sampler",
           "shot_seconds", "uses_batched_route"]
