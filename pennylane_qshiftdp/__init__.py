r"""Differentially private training of parameterized quantum circuits (Q-ShiftDP).

The parameter-shift gradient of an expectation value is bounded a priori, so no clipping is
needed: :func:`param_shift` computes it from finite shots and records per-circuit shot
statistics, :func:`sensitivity` bounds each example's gradient, and the optimizer adds Gaussian
noise calibrated by an Opacus accountant (arXiv:2602.02962).
"""

from . import losses
from .exceptions import (
    PrivacyBudgetExceededError,
    PrivacyWarning,
    SensitivityError,
    UnsupportedMeasurementError,
)
from .shot_statistics import ShotRecorder, ShotStatistics
from .transform import observable_range, param_shift, shift_rule_coefficients, validate_shots

__version__ = "0.1.0.dev0"

__all__ = [
    "PrivacyBudgetExceededError",
    "PrivacyWarning",
    "SensitivityError",
    "ShotRecorder",
    "ShotStatistics",
    "UnsupportedMeasurementError",
    "losses",
    "observable_range",
    "param_shift",
    "shift_rule_coefficients",
    "validate_shots",
]
