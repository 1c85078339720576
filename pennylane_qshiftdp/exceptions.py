r"""Exceptions and warnings raised by :mod:`pennylane_qshiftdp`.

Every error names the argument and the offending value, in the shape
``ValueError("`shots` must be positive integers. Found -3.")``.
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
