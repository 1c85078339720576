"""Opacus ``ModuleValidator`` rules and fixers for quantum layers (registered on import)."""

from .torch_layer import convert_torch_layers, fix_torch_layer, validate_torch_layer

__all__ = ["convert_torch_layers", "fix_torch_layer", "validate_torch_layer"]
