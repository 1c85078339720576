r"""Opacus ``ModuleValidator`` rule and fixer for PennyLane's TorchLayer (public registries).

* :func:`opacus.validators.register_module_validator`: ``ModuleValidator.validate`` reports a
  PennyLane :class:`pennylane.qnn.TorchLayer` (Opacus cannot compute its per-example gradients)
  and a product :class:`~pennylane_qshiftdp.qnn.TorchLayer` whose QNode is not private;
* :func:`opacus.validators.register_module_fixer`: ``ModuleValidator.fix`` turns a PennyLane
  layer whose QNode uses the private transform into the product's layer, as Opacus turns
  ``nn.LSTM`` into ``DPLSTM``.

:func:`convert_torch_layers` does the same in place, keeping the Parameter objects (an
optimizer built before the conversion stays valid); :func:`~pennylane_qshiftdp.make_private`
calls it.
"""

from __future__ import annotations

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

__all__ = ["convert_torch_layers", "fix_torch_layer", "validate_torch_layer"]


@register_module_validator(qml.qnn.TorchLayer)
def _validate_pennylane_layer(layer) -> list:
    return [UnsupportedModuleError(pennylane_layer_message(layer))]


@register_module_validator(TorchLayer)
def validate_torch_layer(layer: TorchLayer) -> list[UnsupportedModuleError]:
    """Opacus ``ModuleValidator`` rule for the product's :class:`TorchLayer`.

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
