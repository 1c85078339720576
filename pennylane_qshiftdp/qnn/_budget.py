r"""A layer's shot budget applied to its shifted circuits, and execution by shot count.

:func:`shifted_shots` reads the QNode's per-example budget
(:func:`~pennylane_qshiftdp.sampling.set_shot_budget`) and splits it over the shifted circuits
of the batch's shift rule in proportion to their largest absolute coefficient
(:func:`~pennylane_qshiftdp.sampling.split_shots`; the coefficients are the transform's own,
:func:`~pennylane_qshiftdp.gradients.shift_rules.coefficient_matrix`). Circuits with different
shots go to the device in one :func:`pennylane.execute` call per shot count
(:func:`execute_by_shots`): a device that runs one job per batch (Qiskit, Braket) then runs one
job per shot count instead of one per circuit (PennyLane's facade for older devices splits a
batch of mixed shots into single circuits). On a pennylane-qiskit device (``qiskit.aer``,
``qiskit.remote``) the batch runs instead as one Qiskit ``SamplerV2`` job, whatever its shot
counts (:func:`pennylane_qshiftdp.hardware.execute_batched`: one transpile per circuit
structure, cached in the layer).
"""

from __future__ import annotations

import numpy as np

from ..gradients.shift_rules import coefficient_matrix
from ..hardware.batched import (
    device_execute,
    execute_batched,
    job_caps,
    sampler_of,
    uses_batched_route,
)
from ..sampling.allocation import shot_budget, split_shots

__all__: list[str] = []


def shifted_shots(qnode, rule, rep) -> list[int] | None:
    """Per shifted circuit of ``rule`` (the shift rule of the representative tape ``rep``), its
    shots under the QNode's budget, or ``None`` without a budget.

    Raises:
        ValueError: for a budget on an analytic QNode (``shots=None``), or one too small to
            give every shifted circuit a shot.
    """
    budget = shot_budget(qnode)
    if budget is None or rule.num_tapes == 0:
        return None
    if not rep.shots:
        raise ValueError(
            "A shot budget splits finite shots over the shifted circuits; this QNode is "
            "analytic (shots=None). Set finite shots or remove the budget "
            "(set_shot_budget(model, None)).")
    weights = np.abs(coefficient_matrix(rule.fn, rep, rule.num_tapes)).max(axis=0)
    return split_shots(budget, weights).tolist()


def shot_counts(tapes) -> list:
    """The distinct shot counts of ``tapes`` in order of first appearance (one device batch
    each under :func:`execute_by_shots`)."""
    return list(dict.fromkeys(t.shots for t in tapes))


def execute_by_shots(tapes, device, *, qnode=None, cache: dict | None = None) -> list:
    """``qml.execute(tapes, device)`` with one call per distinct shot count (results in the
    order of ``tapes``); with ``qnode`` on a pennylane-qiskit device, the batched Qiskit route
    instead (one job; ``cache`` holds its transpiled templates)."""
    if qnode is not None and uses_batched_route(qnode):
        return execute_batched(tapes, device, sampler=sampler_of(qnode), cache=cache,
                               **job_caps(qnode))
    return device_execute(tapes, device)
