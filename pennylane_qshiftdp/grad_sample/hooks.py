r"""Torch's warning about Opacus's backward hooks on a first layer, handled where it arises.

Opacus computes per-example gradients from hooks it registers on every trainable module with
:meth:`torch.nn.Module.register_full_backward_hook`. For a module none of whose inputs
requires a gradient — the first layer of any model, fed by the data: a
:class:`~pennylane_qshiftdp.qnn.TorchLayer` on angle-encoded features, a ``Linear`` on raw
features — torch calls the hook with the gradient of the module's *outputs* only, and warns
(``torch/utils/hooks.py``, ``BackwardHook.setup_output_hook``) on every backward pass:
"Full backward hook is firing when gradients are computed with respect to module outputs since
no inputs require gradients". That is exactly what Opacus needs (its hook reads the output
gradient, never the input one), so the warning says nothing wrong; Python shows it once per
calling line by default, and again whenever the warning filters change (as they do between
steps of a training job).

:func:`ignore_output_hook_warning` ignores that one message for the duration of a backward
pass, leaving every other warning (and that one outside the block) as it was. Nothing is
changed at import: the package installs no process-wide warning filter.
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator

__all__ = ["OUTPUT_HOOK_MESSAGE", "ignore_output_hook_warning"]

#: The start of torch's warning (torch 2.x, ``torch/utils/hooks.py``).
OUTPUT_HOOK_MESSAGE = ("Full backward hook is firing when gradients are computed with respect "
                       "to module outputs since no inputs require gradients")


@contextlib.contextmanager
def ignore_output_hook_warning() -> Iterator[None]:
    """Ignore torch's output-hook warning (:data:`OUTPUT_HOOK_MESSAGE`) inside the block.

    Use it around the backward pass of a model made private with Opacus (the ``qshiftdp
    train`` job does); other warnings raised in the block are shown as usual.

    Example:
        >>> import torch
        >>> from opacus import GradSampleModule
        >>> model = GradSampleModule(torch.nn.Linear(2, 1))
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     with ignore_output_hook_warning():
        ...         model(torch.ones(3, 2)).sum().backward()
        >>> [str(w.message) for w in seen]
        []
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=re.escape(OUTPUT_HOOK_MESSAGE),
                                category=UserWarning)
        yield
