r"""The product's quantum layer: a :class:`pennylane.qnn.TorchLayer` with one-execution steps.

:class:`TorchLayer` subclasses PennyLane's layer and changes one thing: with gradients enabled,
its forward pass runs the forward circuit and every parameter-shift circuit of every example
in one :func:`pennylane.execute` call (:func:`~pennylane_qshiftdp.qnn.evaluation.evaluate_layer`)
and keeps the per-example Jacobians for the backward pass and for Opacus's grad sampler. The
shifted circuits and their post-processing are those of
:func:`~pennylane_qshiftdp.param_shift` (PennyLane's rules, applied to broadcast tapes), and the
output has the shape and values of PennyLane's own layer with ``diff_method="parameter-shift"``.
Without gradients (``torch.no_grad()``, frozen layers) it runs the forward circuit of the
batch only (under :func:`~pennylane_qshiftdp.sampling.use_exact_law`, by exact-law sampling),
in the same layout.

Nothing of PennyLane's or Opacus's is replaced: the grad sampler
(:mod:`pennylane_qshiftdp.grad_sample`) and the ModuleValidator rule and fixer
(:mod:`pennylane_qshiftdp.validators`) are registered through Opacus's public registries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pennylane as qml
import torch

from .. import _compat
from . import _outputs, circuit_count
from ._caches import CACHE_SLOT
from .evaluation import PendingEvaluations, finite_rows
from .private_qnode import check_private_qnode, uses_private_transform

__all__ = ["GRAD_SAMPLE_MODES", "TorchLayer"]

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
        >>> from pennylane_qshiftdp import param_shift
        >>> @qml.qnode(qml.device("default.qubit", wires=2), diff_method=param_shift)
        ... def circuit(inputs, weights):
        ...     qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        ...     qml.StronglyEntanglingLayers(weights, wires=range(2))
        ...     return qml.expval(qml.Z(0))
        >>> layer = TorchLayer(circuit,
        ...                    {"weights": (1, 2, 3)}).double()
        >>> tuple(layer(torch.zeros(4, 2, dtype=torch.float64)).shape)
        (4,)
    """

    def __init__(self, qnode: qml.QNode, weight_shapes: dict,
                 init_method: Callable | dict[str, Callable | Any] | None = None):
        check_private_qnode(qnode)
        super().__init__(qnode, weight_shapes, init_method=init_method)
        #: Evaluations of training forward passes awaiting Opacus's grad sampler, and the
        #: last grad sample (read by the optimizer's shot-noise credit).
        self.evaluations = PendingEvaluations()

    def __getstate__(self) -> dict:
        """The layer's state for pickling, without its caches (rebuilt on first use)."""
        state = super().__getstate__()
        return {k: v for k, v in state.items() if k != CACHE_SLOT}

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

    def register_parameter(self, name: str, param: torch.nn.Parameter | None) -> None:
        """Register ``param`` (torch's), keeping the QNode's weight in step with it.

        Assigning another layer's Parameter to a weight (``layer2.weights =
        layer1.weights``, weight tying) registers it here; the QNode is then evaluated with the
        shared Parameter, and Opacus sums the per-example gradients of every layer using it.
        """
        super().register_parameter(name, param)
        weights = self.__dict__.get("qnode_weights")
        if weights is not None and name in weights and type(param) is torch.nn.Parameter:
            weights[name] = param

    def _weights(self) -> list:
        """The weights, refusing functional substitutes (torch.func / expanded weights).

        A weight replaced by another ``torch.nn.Parameter`` (weight tying,
        ``layer2.weights = layer1.weights``) is adopted: the QNode is then evaluated with the
        shared Parameter, and Opacus sums the per-example gradients every layer using it
        contributes.
        """
        out = []
        for name, w in list(self.qnode_weights.items()):
            current = self._parameters.get(name)
            if current is not w and type(current) is torch.nn.Parameter:
                self.qnode_weights[name] = w = current  # tied to another layer's Parameter
            if current is not w:
                raise NotImplementedError(_mode_message(
                    f"The weight {name!r} of {type(self).__module__}.TorchLayer was replaced "
                    f"by a functional substitute ({type(current).__name__})"))
            out.append(w)
        return out

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
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
        planned = circuit_count.planned_forward(self, inputs)  # counting, nothing runs
        if planned is not None:
            return planned
        grad = torch.is_grad_enabled() and (inputs.requires_grad
                                            or any(w.requires_grad for w in weights))
        batched = inputs.ndim > 1
        x = inputs.reshape(-1, inputs.shape[-1]) if batched else inputs.reshape(1, -1)
        if x.shape[0] == 0:
            parts, layout = _outputs.empty_parts(self, x)
        elif grad:
            parts, layout = _outputs.fused_parts(self, x, weights,
                                                 input_grad=bool(inputs.requires_grad))
        else:
            found = _outputs.forward_parts(self, x)
            if found is None:
                return self._pennylane_forward(inputs, x)
            parts, layout = found
        return _outputs.torch_layer_output(layout, parts, inputs)

    def _pennylane_forward(self, inputs, x):
        """PennyLane's forward; a row with a non-finite entry runs as zeros and reads NaN (as
        on the gradient path: the other rows, and sampling, never see it)."""
        clean, bad = finite_rows(x)
        if not bad.any():
            return super().forward(inputs)
        out = super().forward(clean.reshape(inputs.shape)).clone()
        if inputs.ndim == 1:
            return out.fill_(float("nan"))
        mask = torch.as_tensor(bad).reshape(inputs.shape[:-1])
        if _outputs.output_layout(self, x).stacked:
            out[:, mask] = float("nan")
        else:
            out[mask] = float("nan")
        return out
