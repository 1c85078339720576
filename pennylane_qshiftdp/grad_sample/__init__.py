"""Opacus grad samplers for quantum layers (registered on import, through Opacus's registry)."""

from .torch_layer import torch_layer_grad_sampler

__all__ = ["torch_layer_grad_sampler"]
