r"""The quantum layer: :class:`TorchLayer`, PennyLane's layer with one-execution steps.

* :mod:`.torch_layer`: :class:`TorchLayer` (same constructor, parameters and outputs as
  :class:`pennylane.qnn.TorchLayer`);
* :mod:`.evaluation`: :func:`~.evaluation.evaluate_layer`, outputs and per-example
  parameter-shift Jacobians of a batch in one execution;
* :mod:`.private_qnode`: :func:`~.private_qnode.check_private_qnode`.

Importing this package registers, through Opacus's public registries, the grad sampler
(:mod:`pennylane_qshiftdp.grad_sample`) and the ``ModuleValidator`` rule and fixer
(:mod:`pennylane_qshiftdp.validators`), whose public functions it re-exports.
"""

from typing import TYPE_CHECKING

from .torch_layer import GRAD_SAMPLE_MODES, TorchLayer

if TYPE_CHECKING:  # the static view (type checkers, the API docs); at run time: __getattr__
    from ..validators.torch_layer import (
        convert_torch_layers,
        fix_torch_layer,
        validate_torch_layer,
    )

# The Opacus registrations. Imported as modules (they import this package's modules in turn,
# whichever of the three is imported first); their functions are re-exported on first access.
from .. import grad_sample as _grad_sample  # noqa: E402,F401  (registers the grad sampler)
from .. import validators as _validators  # noqa: E402  (registers the rule and the fixer)

_VALIDATOR_NAMES = ("convert_torch_layers", "fix_torch_layer", "validate_torch_layer")

__all__ = [
    "GRAD_SAMPLE_MODES",
    "TorchLayer",
    "convert_torch_layers",
    "fix_torch_layer",
    "validate_torch_layer",
]


def __getattr__(name: str):
    if name in _VALIDATOR_NAMES:
        return getattr(_validators, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
