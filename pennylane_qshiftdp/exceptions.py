r"""Exceptions and warnings raised by :mod:`pennylane_qshiftdp`: one per kind of refusal.

Every error names the argument and the offending value, in the shape
``ValueError("`shots` must be positive integers. Found -3.")``. The same case raises the same
type whichever entry point meets it (the transform, :func:`~pennylane_qshiftdp.sensitivity`,
the quantum layer, :func:`~pennylane_qshiftdp.make_private`):

* :class:`PrivacyBudgetExceededError`: a step would take the spent ε above the target (raised
  before the step; nothing changes);
* :class:`SensitivityError`: a per-example gradient without an a-priori bound or without
  per-example gradients in Opacus (a QNode whose diff method is not the private transform, a
  gate parameter that depends on both data and weights, a module Opacus refuses, a loss whose
  declared bound is violated, a model ``strict=True`` finds uncovered);
* :class:`UnsupportedMeasurementError`: a return without a parameter-shift gradient
  (``sample``, ``counts``, ``state``, a variance PennyLane's rule gets wrong);
* ``NotImplementedError``: a valid combination this package does not support (shot vectors in
  the layer, a credit mode with distributed training, ...);
* ``ValueError`` / ``TypeError``: an argument out of its domain or of the wrong type, and a
  training loop the guarantee cannot cover (several backward passes before a step).

:class:`PrivacyWarning` marks an honest caveat about a guarantee.
"""

__all__ = [
    "PrivacyWarning",
    "PrivacyBudgetExceededError",
    "SensitivityError",
    "UnsupportedMeasurementError",
]


class PrivacyWarning(UserWarning):
    """An honest caveat about a privacy guarantee (e.g. a data-dependent preprocessing step)."""


class PrivacyBudgetExceededError(RuntimeError):
    """Raised *before* a step that would take the spent budget above the target ε."""


class SensitivityError(ValueError):
    """The per-example gradient of a model cannot be bounded a priori.

    Raised, for instance, when the classical Jacobian from trainable weights to gate
    parameters depends on the input data (``RX(w * x)``) and no explicit bound was supplied,
    or when a loss's gradient bound is violated at run time.
    """


class UnsupportedMeasurementError(ValueError):
    """A measurement that has no parameter-shift gradient (``sample``, ``counts``, ``state``)."""
