r"""Whether a QNode's gradient is the private parameter-shift transform."""

from __future__ import annotations

import pennylane as qml

from ..exceptions import SensitivityError
from ..gradients.parameter_shift import param_shift

__all__ = ["check_private_qnode", "pennylane_layer_message", "uses_private_transform"]

def _diff_method_name(qnode) -> str:
    dm = qnode.diff_method
    return getattr(dm, "__name__", None) or str(dm)


def check_private_qnode(qnode: qml.QNode) -> None:
    r"""Refuse a QNode whose gradient is not the private parameter-shift transform.

    Only :func:`~pennylane_qshiftdp.param_shift` gives per-example gradients with an a-priori
    bound and shot statistics; ``finite-diff``, ``backprop``, ``adjoint``, ``spsa`` and
    PennyLane's own ``param_shift`` do not (a finite-difference gradient of a shot estimate
    scales like 1/h).

    Args:
        qnode: a :class:`pennylane.QNode`.

    Raises:
        TypeError: if ``qnode`` is not a QNode.
        SensitivityError: if its ``diff_method`` is not ``pennylane_qshiftdp.param_shift``, or
            its gradient keyword arguments ask for a finite-difference fallback.

    Example:
        >>> dev = qml.device("default.qubit", wires=1)
        >>> qn = qml.QNode(lambda inputs, w: qml.expval(qml.Z(0)), dev,
        ...                diff_method="finite-diff")
        >>> check_private_qnode(qn)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        pennylane_qshiftdp.exceptions.SensitivityError: ...
    """
    if not isinstance(qnode, qml.QNode):
        raise TypeError(f"`qnode` must be a pennylane.QNode. Found {type(qnode).__name__}.")
    if qnode.diff_method is not param_shift:
        raise SensitivityError(
            f"The QNode uses diff_method={_diff_method_name(qnode)!r}, whose per-example "
            f"gradients have no a-priori bound and no shot statistics. Construct it with "
            f"`diff_method=pennylane_qshiftdp.param_shift` (a drop-in replacement for "
            f"qml.gradients.param_shift)."
        )
    if qnode.gradient_kwargs.get("fallback_fn") is not None:
        raise SensitivityError(
            "The QNode's gradient_kwargs set `fallback_fn`: a finite-difference fallback has "
            "no a-priori bound. Remove it."
        )


def uses_private_transform(qnode) -> bool:
    """Whether ``qnode`` is differentiated by :func:`~pennylane_qshiftdp.param_shift`."""
    return getattr(qnode, "diff_method", None) is param_shift


def pennylane_layer_message(layer) -> str:
    """Why Opacus cannot train PennyLane's ``layer`` as it is, and the conversion to use."""
    if not uses_private_transform(layer.qnode):
        try:
            check_private_qnode(layer.qnode)
        except SensitivityError as err:
            return str(err)
    return (
        "A pennylane.qnn.TorchLayer has no per-example gradients in Opacus (torch.func cannot "
        "trace a quantum device). Convert it to pennylane_qshiftdp.qnn.TorchLayer first: "
        "`pennylane_qshiftdp.qnn.convert_torch_layers(model)` (in place, keeping the Parameter "
        "objects), or `model = opacus.validators.ModuleValidator.fix(model)`, which clones the "
        "model with torch.save and so fails for a QNode function that cannot be pickled by name "
        "(one made with the @qml.qnode decorator). pennylane_qshiftdp.make_private converts "
        "in place itself."
    )
