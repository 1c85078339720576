r"""Choosing how a QNode's shots are sampled: by the device, or from the exact outcome law.

The per-example evaluation of a :class:`pennylane_qshiftdp.qnn.TorchLayer`
(:mod:`~pennylane_qshiftdp.qnn.evaluation`) reads the QNode's mode, set with
:func:`use_exact_law` or :func:`set_shot_sampling` on a QNode, a TorchLayer or any module
containing TorchLayers (also the module returned by :func:`~pennylane_qshiftdp.make_private`).
The mode is an attribute of the QNode rather than a gradient keyword argument because
PennyLane passes every gradient keyword to the transform, which would then refuse the QNode
elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pennylane as qml

from .. import _compat
from ..gradients.parameter_shift import param_shift

if TYPE_CHECKING:
    import torch

__all__ = ["SHOT_SAMPLING_MODES", "device_generator", "set_shot_sampling", "shot_sampling",
           "use_exact_law"]

#: Accepted shot-sampling modes: the device samples every shot, or estimates are drawn from the
#: exact outcome law of an analytic simulation.
SHOT_SAMPLING_MODES = ("device", "exact_law")


# What use_exact_law takes and returns: a QNode, a TorchLayer or a module containing them.
_Target = TypeVar("_Target", bound="qml.QNode | torch.nn.Module")

# Attribute of a QNode holding its mode (absent means "device").
_MODE_ATTR = "_qshiftdp_shot_sampling"


def device_generator(device: qml.devices.Device) -> np.random.Generator:
    r"""The numpy ``Generator`` with which a simulator samples shots (``device._rng``).

    Args:
        device: a PennyLane device.

    Returns:
        numpy.random.Generator: the device's own generator (not a copy).

    Raises:
        NotImplementedError: if the device keeps no numpy ``Generator`` (hardware, remote or
            other non-simulator devices): its outcome law is not available to draw from.

    Example:
        >>> dev = qml.device("default.qubit", seed=1)
        >>> device_generator(dev) is dev._rng
        True
    """
    rng = _compat.device_rng(device)
    if rng is None:
        raise NotImplementedError(
            f"Exact-law shot sampling needs a simulator that samples with a numpy Generator "
            f"(default.qubit, lightning.qubit, default.mixed); device "
            f"{getattr(device, 'name', device)!r} has none. Use shot_sampling='device'."
        )
    return rng


def qnodes_of(target) -> list:
    """The QNodes of ``target``: a QNode, a TorchLayer or a module holding TorchLayers."""
    if isinstance(target, qml.QNode):
        return [target]
    if isinstance(target, qml.qnn.TorchLayer):
        return [target.qnode]
    modules = getattr(target, "modules", None)
    if callable(modules):
        qnodes = [m.qnode for m in modules() if isinstance(m, qml.qnn.TorchLayer)]
        if qnodes:
            return qnodes
        raise ValueError(f"`target` must contain a pennylane.qnn.TorchLayer. Found a "
                         f"{type(target).__name__} without one.")
    raise TypeError(f"`target` must be a QNode, a TorchLayer or a torch.nn.Module. Found "
                    f"{type(target).__name__}.")


def _check_seed(seed) -> None:
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return
    items = seed if isinstance(seed, (list, tuple)) else [seed]
    for s in items:
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"`seed` must be None, a non-negative integer, a sequence of them "
                            f"or a numpy SeedSequence. Found {seed!r}.")
        if s < 0:
            raise ValueError(f"`seed` must be non-negative. Found {seed!r}.")


def set_shot_sampling(target: qml.QNode | torch.nn.Module, mode: str, *,
                      seed: int | Sequence[int] | np.random.SeedSequence | None = None
                      ) -> list[qml.QNode]:
    r"""Choose how the per-example evaluation of TorchLayers draws shot estimates.

    ``"device"`` (default): the device samples every shot of every circuit.
    ``"exact_law"``: the circuits run analytically and each :math:`N_s`-shot estimate is drawn
    from the exact outcome law with the device's own generator (module docstring); same law,
    much faster on simulators. The mode belongs to the QNode and applies to every evaluation of
    its TorchLayer (training steps, Opacus's grad sampler and ``torch.no_grad()`` evaluation);
    with ``shots=None`` both modes are analytic.

    Args:
        target: a QNode using :func:`~pennylane_qshiftdp.param_shift`, a TorchLayer of one, or
            a ``torch.nn.Module`` containing such TorchLayers (all are set).
        mode: one of :data:`SHOT_SAMPLING_MODES`.
        seed: if given, reseeds the generator of every device involved in place (an integer
            seed repeats the shot noise exactly); ``None`` keeps the device's current state.

    Returns:
        list: the QNodes whose mode was set.

    Raises:
        ValueError: for an unknown ``mode``, a module without TorchLayer, a QNode whose diff
            method is not the private transform, or a negative ``seed``.
        TypeError: for a ``target`` or ``seed`` of the wrong type.
        NotImplementedError: for ``"exact_law"`` (or a ``seed``) on a device without a numpy
            generator (not a simulator).

    Example:
        >>> from pennylane_qshiftdp import param_shift
        >>> dev = qml.device("default.qubit", wires=1, seed=0)
        >>> qn = qml.set_shots(qml.QNode(lambda inputs, w: qml.expval(qml.Z(0)), dev,
        ...                              diff_method=param_shift), shots=100)
        >>> [shot_sampling(q) for q in set_shot_sampling(qn, "exact_law", seed=3)]
        ['exact_law']
    """
    if mode not in SHOT_SAMPLING_MODES:
        raise ValueError(f"`mode` must be one of {SHOT_SAMPLING_MODES}. Found {mode!r}.")
    _check_seed(seed)
    qnodes = qnodes_of(target)
    for qnode in qnodes:
        if qnode.diff_method is not param_shift:
            name = getattr(qnode.diff_method, "__name__", qnode.diff_method)
            raise ValueError(
                f"Shot sampling modes apply to QNodes differentiated by "
                f"pennylane_qshiftdp.param_shift. Found diff_method={name!r}."
            )
        if mode == "exact_law":
            device_generator(qnode.device)
    if seed is not None:
        seen = set()
        for qnode in qnodes:
            if id(qnode.device) not in seen:
                seen.add(id(qnode.device))
                _compat.reseed_device(qnode.device, seed)
    for qnode in qnodes:
        setattr(qnode, _MODE_ATTR, mode)
    return qnodes


def use_exact_law(target: _Target, *,
                  seed: int | Sequence[int] | np.random.SeedSequence | None = None) -> _Target:
    r"""Switch ``target``'s TorchLayers to exact-law shot sampling; return ``target``.

    Shorthand for ``set_shot_sampling(target, "exact_law", seed=seed)``.

    Args:
        target: a QNode, TorchLayer or module containing TorchLayers (see
            :func:`set_shot_sampling`).
        seed: optional reseed of the device generators (an integer repeats the shot noise).

    Returns:
        ``target``, for chaining.

    Raises:
        ValueError: as :func:`set_shot_sampling` (no TorchLayer, a QNode not differentiated by
            the private transform, a negative ``seed``).
        TypeError: for a ``target`` or ``seed`` of the wrong type.
        NotImplementedError: for a device without a numpy generator (hardware, remote).

    Example:
        >>> import torch
        >>> from pennylane_qshiftdp import param_shift
        >>> from pennylane_qshiftdp.qnn import TorchLayer
        >>> dev = qml.device("default.qubit", wires=1, seed=0)
        >>> @qml.set_shots(shots=100)
        ... @qml.qnode(dev, diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.RY(inputs[..., 0], wires=0)
        ...     qml.RY(weights[0], wires=0)
        ...     return qml.expval(qml.Z(0))
        >>> model = use_exact_law(torch.nn.Sequential(TorchLayer(circuit, {"weights": (1,)})))
        >>> shot_sampling(model[0].qnode)
        'exact_law'
    """
    set_shot_sampling(target, "exact_law", seed=seed)
    return target


def shot_sampling(qnode: qml.QNode) -> str:
    """The shot-sampling mode of a QNode: ``"device"`` unless set otherwise.

    Args:
        qnode: a :class:`pennylane.QNode`.

    Returns:
        str: one of :data:`SHOT_SAMPLING_MODES`.

    Example:
        >>> shot_sampling(qml.QNode(lambda: qml.expval(qml.Z(0)), qml.device("default.qubit")))
        'device'
    """
    return getattr(qnode, _MODE_ATTR, "device")
