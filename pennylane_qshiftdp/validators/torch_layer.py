r"""Opacus ``ModuleValidator`` rule and fixer for PennyLane's TorchLayer (public registries).

* :func:`opacus.validators.register_module_validator`: ``ModuleValidator.validate`` reports a
  PennyLane :class:`pennylane.qnn.TorchLayer` whose QNode uses the private transform (it must
  be converted first), a product :class:`~pennylane_qshiftdp.qnn.TorchLayer` whose QNode is
  not private, and a product layer validated by Opacus's own
  :class:`opacus.PrivacyEngine`, whose optimizer divides the noisy sum by
  ``int(q·N)`` (opacus#819; :class:`pennylane_qshiftdp.PrivacyEngine` is the same engine with
  a public divisor). A PennyLane layer with any other diff method (``backprop``,
  ``adjoint``, ...) is left to Opacus exactly as without this package: importing it changes
  no decision of Opacus's about modules it does not own;
* :func:`opacus.validators.register_module_fixer`: ``ModuleValidator.fix`` turns a PennyLane
  layer whose QNode uses the private transform into the product's layer, as Opacus turns
  ``nn.LSTM`` into ``DPLSTM``.

:func:`convert_torch_layers` does the same in place, keeping the Parameter objects (an
optimizer built before the conversion stays valid); :func:`~pennylane_qshiftdp.make_private`
calls it.
"""

from __future__ import annotations

import inspect

import pennylane as qml
import torch
from opacus.validators import register_module_fixer, register_module_validator
from opacus.validators.errors import UnsupportedModuleError

from ..exceptions import SensitivityError
from ..qnn.private_qnode import (
    check_private_qnode,
    pennylane_layer_message,
    uses_private_transform,
)
from ..qnn.torch_layer import TorchLayer

__all__ = ["OPACUS_DIVISOR_MESSAGE", "convert_torch_layers", "fix_torch_layer",
           "validate_torch_layer"]

#: Why Opacus's own engine is refused on the product's layers, and the safe calls.
OPACUS_DIVISOR_MESSAGE = (
    "opacus.PrivacyEngine divides the noisy gradient sum by expected_batch_size = "
    "int(q·N), with N the private data set size (opacus#819, unfixed in Opacus 1.6): a "
    "neighbouring data set then releases a sum divided by another constant, and the "
    "guarantee Opacus reports does not hold (exact ε 18.4 where 5.09 is claimed, for "
    "N = 29 vs 30, batch 10, σ = 2, 30 steps). Use pennylane_qshiftdp.PrivacyEngine (a "
    "subclass of opacus.PrivacyEngine with the same make_private and "
    "make_private_with_epsilon, dividing by the loader's public batch size), or "
    "pennylane_qshiftdp.make_private.")

# Opacus's engine methods that validate a module for training with its own optimizer.
_ENGINE_METHODS = frozenset({"make_private", "make_private_with_epsilon", "_prepare_model",
                             "validate", "is_compatible", "get_compatible_module"})
_MAX_FRAMES = 64


def _opacus_engine_caller():
    """The :class:`opacus.PrivacyEngine` validating the module (an instance that is not the
    product's subclass), found among the callers' frames, or ``None``.

    Opacus's engine calls ``ModuleValidator.validate`` from ``make_private`` (through
    ``_prepare_model``/``validate``) and from ``is_compatible``/``get_compatible_module``;
    the validator is given the module only, so the engine is read from the call stack. A
    direct ``ModuleValidator.validate(model)`` has no such caller.
    """
    import opacus

    frame = inspect.currentframe()
    try:
        for _ in range(_MAX_FRAMES):
            if frame is None:
                return None
            if frame.f_code.co_name in _ENGINE_METHODS:
                owner = frame.f_locals.get("self", frame.f_locals.get("cls"))
                kind = owner if isinstance(owner, type) else type(owner)
                if isinstance(kind, type) and issubclass(kind, opacus.PrivacyEngine):
                    return None if getattr(kind, "public_divisor", False) else owner
            frame = frame.f_back
        return None
    finally:
        del frame


@register_module_validator(qml.qnn.TorchLayer)
def _validate_pennylane_layer(layer) -> list:
    # Only a layer differentiated by the private transform is this package's concern; any
    # other (backprop, adjoint, ...) gets Opacus's own decision, as without this package.
    if not uses_private_transform(layer.qnode):
        return []
    return [UnsupportedModuleError(pennylane_layer_message(layer))]


@register_module_validator(TorchLayer)
def validate_torch_layer(layer: TorchLayer) -> list[UnsupportedModuleError]:
    """Opacus ``ModuleValidator`` rule for the product's :class:`TorchLayer`.

    The layer is refused when its QNode is not differentiated by the private transform, and
    when Opacus's own :class:`opacus.PrivacyEngine` validates it (its optimizer divides by the
    data-dependent ``int(q·N)``: :data:`OPACUS_DIVISOR_MESSAGE`); the product's
    :class:`pennylane_qshiftdp.PrivacyEngine` and :func:`~pennylane_qshiftdp.make_private`
    divide by a public constant and accept it.

    Args:
        layer: a :class:`TorchLayer`.

    Returns:
        list: Opacus ``UnsupportedModuleError``\\ s (empty when Opacus can train the layer).

    Example:
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> validate_torch_layer(TorchLayer(circuit, {"weights": (1, 2, 3)}))
        []
    """
    try:
        check_private_qnode(layer.qnode)
    except SensitivityError as err:
        return [UnsupportedModuleError(str(err))]
    if _opacus_engine_caller() is not None:
        return [UnsupportedModuleError(OPACUS_DIVISOR_MESSAGE)]
    return []


@register_module_fixer(qml.qnn.TorchLayer)
def fix_torch_layer(layer: qml.qnn.TorchLayer, **kwargs) -> torch.nn.Module:
    """Opacus ``ModuleValidator`` fixer: PennyLane's TorchLayer -> the product's layer.

    A layer whose QNode uses :func:`~pennylane_qshiftdp.param_shift` becomes a
    :class:`TorchLayer` holding the same Parameter objects; any other layer is returned
    unchanged (``ModuleValidator.validate`` then reports it).

    Args:
        layer: a :class:`pennylane.qnn.TorchLayer`.
        **kwargs: ignored (Opacus passes its ``fix`` keyword arguments to every fixer).

    Returns:
        torch.nn.Module: the product's layer, or ``layer``.

    Example:
        >>> from opacus.validators import ModuleValidator
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> plain = qml.qnn.TorchLayer(circuit, {"weights": (1, 2, 3)})
        >>> type(fix_torch_layer(plain)).__module__
        'pennylane_qshiftdp.qnn.torch_layer'
    """
    del kwargs
    if type(layer) is not qml.qnn.TorchLayer or not uses_private_transform(layer.qnode):
        return layer
    return TorchLayer.from_torch_layer(layer)


def convert_torch_layers(module: torch.nn.Module) -> torch.nn.Module:
    """Replace, in place, every PennyLane TorchLayer with a private QNode by the product's.

    Unlike ``ModuleValidator.fix`` (which first clones the model), the Parameter objects are
    kept, so an optimizer built from ``module.parameters()`` stays valid.

    Args:
        module: any ``torch.nn.Module`` (or a TorchLayer itself).

    Returns:
        torch.nn.Module: ``module`` (changed in place), or the converted layer when ``module``
        itself is a PennyLane TorchLayer.

    Example:
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> plain = qml.qnn.TorchLayer(circuit, {"weights": (1, 2, 3)})
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), plain)
        >>> params = list(model.parameters())
        >>> model = convert_torch_layers(model)
        >>> type(model[1]).__module__, all(a is b for a, b in zip(params, model.parameters()))
        ('pennylane_qshiftdp.qnn.torch_layer', True)
    """
    if not isinstance(module, torch.nn.Module):
        raise TypeError(f"`module` must be a torch.nn.Module. Found {type(module).__name__}.")
    if type(module) is qml.qnn.TorchLayer:
        return fix_torch_layer(module)
    for parent in list(module.modules()):
        for name, child in list(parent._modules.items()):
            if child is not None and type(child) is qml.qnn.TorchLayer:
                parent._modules[name] = fix_torch_layer(child)
    return module
