"""Opacus grad samplers for quantum layers (registered on import, through Opacus's registry),
and the scope in which torch's warning about Opacus's output hooks is ignored."""

from .hooks import OUTPUT_HOOK_MESSAGE, ignore_output_hook_warning
from .torch_layer import torch_layer_grad_sampler

__all__ = ["OUTPUT_HOOK_MESSAGE", "ignore_output_hook_warning", "torch_layer_grad_sampler"]
