r"""The product's quantum layer: a :class:`pennylane.qnn.TorchLayer` with one-execution steps.

:class:`TorchLayer` subclasses PennyLane's layer and changes one thing: with gradients enabled,
its forward pass runs the forward circuit and every parameter-shift circuit of every example
in one :func:`pennylane.execute` call (:func:`~pennylane_qshiftdp.quantum_layer.evaluate_layer`)
and keeps the per-example Jacobians for the backward pass and for Opacus's grad sampler. The
shifted circuits and their post-processing are those of
:func:`~pennylane_qshiftdp.param_shift` (PennyLane's rules, applied to broadcast tapes), and the
output has the shape and values of PennyLane's own layer with ``diff_method="parameter-shift"``.
Without gradients (``torch.no_grad()``, frozen layers) it runs the forward circuit of the
batch only (under :func:`~pennylane_qshiftdp.sampling.use_exact_law`, by exact-law sampling),
in the same layout.

Nothing of PennyLane's or Opacus's is replaced. The layer plugs into Opacus through its public
registries:

* :func:`opacus.grad_sample.register_grad_sampler` for :class:`TorchLayer` (per-example
  gradients of the quantum weights, ``grad_sample_mode="hooks"``);
* :func:`opacus.validators.register_module_validator` and ``register_module_fixer`` for
  PennyLane's :class:`pennylane.qnn.TorchLayer`: ``ModuleValidator.validate`` reports a
  PennyLane layer (Opacus cannot compute its per-example gradients), and
  ``ModuleValidator.fix`` turns one whose QNode uses the private transform into
  :class:`TorchLayer`, as Opacus turns ``nn.LSTM`` into ``DPLSTM``.

:func:`convert_torch_layers` does the same in place, keeping the Parameter objects (an
optimizer built before the conversion stays valid); :func:`~pennylane_qshiftdp.make_private`
calls it.
"""

from __future__ import annotations

import pennylane as qml
import torch
from opacus.grad_sample import register_grad_sampler
from opacus.validators import register_module_fixer, register_module_validator
from opacus.validators.errors import UnsupportedModuleError

from . import _compat, quantum_layer
from .exceptions import SensitivityError
from .quantum_layer import check_private_qnode, uses_private_transform

__all__ = [
    "GRAD_SAMPLE_MODES",
    "TorchLayer",
    "convert_torch_layers",
    "fix_torch_layer",
    "validate_torch_layer",
]

#: Opacus ``grad_sample_mode`` values that give per-example gradients of :class:`TorchLayer`.
GRAD_SAMPLE_MODES = ("hooks",)


def _mode_message(what: str) -> str:
    return (
        f"{what}: the quantum layer's per-example gradients come from the private "
        f"parameter-shift transform through Opacus's grad sampler, which only "
        f"grad_sample_mode='hooks' (Opacus's default) uses; 'functorch' and 'ew' trace the "
        f"layer with torch.func, which cannot see through a quantum device. Use "
        f"grad_sample_mode='hooks'."
    )


class TorchLayer(qml.qnn.TorchLayer):
    r"""PennyLane's ``TorchLayer`` for a QNode that uses :func:`~pennylane_qshiftdp.param_shift`.

    Same constructor, parameters, ``state_dict`` and outputs as :class:`pennylane.qnn.TorchLayer`
    (shape and values of ``diff_method="parameter-shift"``); a training forward pass executes
    all circuits of the batch at once and keeps per-example Jacobians for Opacus.

    Args:
        qnode: a QNode whose ``diff_method`` is :func:`~pennylane_qshiftdp.param_shift`.
        weight_shapes: shape of every weight argument (as for PennyLane's layer).
        init_method: initialisation (as for PennyLane's layer).

    Raises:
        SensitivityError: if the QNode does not use the private transform.

    Example:
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> layer = TorchLayer(make_qnode(2, 1, device="default.qubit", shots=None),
        ...                    {"weights": (1, 2, 3)}).double()
        >>> tuple(layer(torch.zeros(4, 2, dtype=torch.float64)).shape)
        (4,)
    """

    def __init__(self, qnode, weight_shapes: dict, init_method=None):
        check_private_qnode(qnode)
        super().__init__(qnode, weight_shapes, init_method=init_method)

    @classmethod
    def from_torch_layer(cls, layer: qml.qnn.TorchLayer) -> TorchLayer:
        """The product's layer for PennyLane's ``layer``, sharing its Parameter objects.

        Args:
            layer: a :class:`pennylane.qnn.TorchLayer` whose QNode uses the private transform.

        Returns:
            TorchLayer: a new layer holding the *same* ``torch.nn.Parameter`` objects (an
            optimizer over ``layer.parameters()`` keeps optimising it) in the same mode.

        Raises:
            TypeError: if ``layer`` is not a PennyLane TorchLayer.
            SensitivityError: if its QNode does not use the private transform.
        """
        if not isinstance(layer, qml.qnn.TorchLayer):
            raise TypeError(f"`layer` must be a pennylane.qnn.TorchLayer. Found "
                            f"{type(layer).__name__}.")
        weights = dict(layer.qnode_weights)
        new = cls(layer.qnode, {k: tuple(w.shape) for k, w in weights.items()},
                  init_method={k: w.detach() for k, w in weights.items()})
        for name, w in weights.items():
            new.qnode_weights[name] = w
            new.register_parameter(name, w)
        new.train(layer.training)
        return new

    def _weights(self) -> list:
        """The weights, refusing functional substitutes (torch.func / expanded weights)."""
        out = []
        for name, w in self.qnode_weights.items():
            current = self._parameters.get(name)
            if current is not w:
                raise NotImplementedError(_mode_message(
                    f"The weight {name!r} of {type(self).__module__}.TorchLayer was replaced "
                    f"by a functional substitute ({type(current).__name__})"))
            out.append(w)
        return out

    def forward(self, inputs):
        """The layer's output, in PennyLane's TorchLayer layout.

        Args:
            inputs: shape ``(..., n_in)`` (leading batch dimensions as for PennyLane's layer).

        Returns:
            torch.Tensor: PennyLane's TorchLayer output for these inputs.

        Raises:
            NotImplementedError: under ``torch.func`` transforms (Opacus's ``functorch`` or
                ``ew`` modes; use ``grad_sample_mode="hooks"``), or for a circuit the
                per-example evaluation does not support (the message says what is).
        """
        weights = self._weights()
        if _compat.prepared_for_functorch(self) and torch.is_grad_enabled():
            raise NotImplementedError(_mode_message(
                "Opacus prepared this pennylane_qshiftdp TorchLayer for torch.func "
                "(grad_sample_mode='functorch')"))
        if not uses_private_transform(self.qnode):  # changed after construction: PennyLane's
            return super().forward(inputs)
        grad = torch.is_grad_enabled() and (inputs.requires_grad
                                            or any(w.requires_grad for w in weights))
        batched = inputs.ndim > 1
        x = inputs.reshape(-1, inputs.shape[-1]) if batched else inputs.reshape(1, -1)
        if x.shape[0] == 0:
            parts = quantum_layer.empty_parts(self, x)
        elif grad:
            parts = quantum_layer.fused_parts(self, x, weights,
                                              input_grad=bool(inputs.requires_grad))
        else:
            parts = quantum_layer.forward_parts(self, x)
            if parts is None:
                return self._pennylane_forward(inputs, x)
        return quantum_layer.torch_layer_output(self, parts, inputs)

    def _pennylane_forward(self, inputs, x):
        """PennyLane's forward; a row with a non-finite entry runs as zeros and reads NaN (as
        on the gradient path: the other rows, and sampling, never see it)."""
        clean, bad = quantum_layer.finite_rows(x)
        if not bad.any():
            return super().forward(inputs)
        out = super().forward(clean.reshape(inputs.shape)).clone()
        if inputs.ndim == 1:
            return out.fill_(float("nan"))
        mask = torch.as_tensor(bad).reshape(inputs.shape[:-1])
        if quantum_layer.stacked_parts(self, x):
            out[:, mask] = float("nan")
        else:
            out[mask] = float("nan")
        return out


@register_grad_sampler(TorchLayer)
def _grad_sampler(layer, activations, backprops):
    return quantum_layer.torch_layer_grad_sampler(layer, activations, backprops)


@register_grad_sampler(qml.qnn.TorchLayer)
def _refuse_pennylane_layer(layer, activations, backprops):
    del activations, backprops
    raise NotImplementedError(_pennylane_layer_message(layer))


def _pennylane_layer_message(layer) -> str:
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


@register_module_validator(qml.qnn.TorchLayer)
def _validate_pennylane_layer(layer) -> list:
    return [UnsupportedModuleError(_pennylane_layer_message(layer))]


@register_module_validator(TorchLayer)
def validate_torch_layer(layer) -> list:
    """Opacus ``ModuleValidator`` rule for the product's :class:`TorchLayer`.

    Args:
        layer: a :class:`TorchLayer`.

    Returns:
        list: Opacus ``UnsupportedModuleError``\\ s (empty when Opacus can train the layer).

    Example:
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> validate_torch_layer(TorchLayer(make_qnode(2, 1, shots=None), {"weights": (1, 2, 3)}))
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
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> plain = qml.qnn.TorchLayer(make_qnode(2, 1, shots=None), {"weights": (1, 2, 3)})
        >>> type(fix_torch_layer(plain)).__module__
        'pennylane_qshiftdp.qnn'
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
        >>> from pennylane_qshiftdp.models import make_qnode
        >>> plain = qml.qnn.TorchLayer(make_qnode(2, 1, shots=None), {"weights": (1, 2, 3)})
        >>> model = torch.nn.Sequential(torch.nn.Linear(2, 2), plain)
        >>> params = list(model.parameters())
        >>> model = convert_torch_layers(model)
        >>> type(model[1]).__module__, all(a is b for a, b in zip(params, model.parameters()))
        ('pennylane_qshiftdp.qnn', True)
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
