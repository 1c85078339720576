r"""Which route computes a TorchLayer's per-example gradients: parameter shift or adjoint.

* ``"parameter_shift"``: the forward and all shifted circuits of the batch in one execution
  (:func:`~pennylane_qshiftdp.param_shift`'s rules on broadcast tapes); the only route with
  shots, since it gives each shifted circuit's shot statistics (device or exact-law sampling).
* ``"adjoint"``: for ``shots=None`` on a state-vector simulator (``default.qubit``,
  ``lightning.qubit``), the analytic derivative from one forward and one backward sweep over a
  batched state (:mod:`pennylane_qshiftdp.qnn._adjoint`); equal to the parameter-shift gradient
  to float precision, so the certified bound and the clipping are unchanged.

``"auto"`` (default) takes the adjoint route where it applies and parameter shift elsewhere.
The choice depends on the QNode (shots, device, measurements, gates), never on the data; it is
an attribute of the QNode, like the shot-sampling mode (:mod:`pennylane_qshiftdp.sampling`).
"""

from __future__ import annotations

import pennylane as qml

from ..gradients.parameter_shift import param_shift

__all__ = ["GRADIENT_ROUTES", "gradient_route_setting", "set_gradient_route"]

#: Accepted routes: ``"auto"`` chooses adjoint where it applies.
GRADIENT_ROUTES = ("auto", "parameter_shift", "adjoint")

# Attribute of a QNode holding its route (absent means "auto").
_ROUTE_ATTR = "_qshiftdp_gradient_route"

# State-vector simulators whose analytic results the adjoint sweep reproduces (exact classes:
# a subclass could add noise in its preprocessing).
_STATE_VECTOR = (qml.devices.DefaultQubit,)


def _is_state_vector_simulator(device) -> bool:
    if type(device) in _STATE_VECTOR:
        return True
    try:
        from pennylane_lightning.lightning_qubit import LightningQubit
    except ImportError:  # pragma: no cover - lightning is a dependency
        return False
    return type(device) is LightningQubit


def set_gradient_route(target, route: str) -> list:
    """Set the per-example gradient route of every private QNode in ``target``.

    Args:
        target: a QNode, a TorchLayer, or a ``torch.nn.Module`` containing TorchLayers.
        route: one of :data:`GRADIENT_ROUTES`.

    Returns:
        list: the QNodes whose route was set.

    Raises:
        ValueError: for an unknown ``route``, or a target without a private QNode.
    """
    if route not in GRADIENT_ROUTES:
        raise ValueError(f"`route` must be one of {GRADIENT_ROUTES}. Found {route!r}.")
    from ..sampling.modes import qnodes_of

    qnodes = qnodes_of(target)
    for qnode in qnodes:
        setattr(qnode, _ROUTE_ATTR, route)
    return qnodes


def gradient_route_setting(qnode) -> str:
    """The route set on ``qnode`` (``"auto"`` unless :func:`set_gradient_route` changed it)."""
    return getattr(qnode, _ROUTE_ATTR, "auto")


def choose_route(qnode, tape, diff_idx, *, recorder) -> str:
    """The route :func:`~pennylane_qshiftdp.qnn.evaluation.evaluate_layer` takes for ``tape``.

    Raises:
        ValueError: if ``"adjoint"`` was asked for where it does not apply.
    """
    from ._adjoint import supports_adjoint

    setting = gradient_route_setting(qnode)
    if setting == "parameter_shift":
        return "parameter_shift"
    applies = (not tape.shots and recorder is None and qnode.diff_method is param_shift
               and _is_state_vector_simulator(qnode.device) and bool(diff_idx)
               and supports_adjoint(tape, diff_idx))
    if setting == "adjoint" and not applies:
        raise ValueError(
            "gradient route 'adjoint' needs shots=None, no ShotRecorder, a state-vector "
            "simulator (default.qubit, lightning.qubit) and expval measurements of a circuit "
            "whose differentiated gates have a generator (or are Rot); this QNode has "
            f"shots={tape.shots}, device {qnode.device.name!r}. Use route 'auto'.")
    return "adjoint" if applies else "parameter_shift"
