r"""Differentially private training of parameterized quantum circuits (Q-ShiftDP).

The parameter-shift gradient of an expectation value is bounded a priori, so no clipping is
needed: :func:`param_shift` computes it from finite shots and records per-circuit shot
statistics, :func:`sensitivity` bounds each example's gradient, and the optimizer adds Gaussian
noise calibrated by an Opacus accountant (arXiv:2602.02962).
"""

from . import losses
from .accountant import PrivacyLedger
from .calibration import calibrate_noise_multiplier, compute_epsilon
from .data import Dataset, load_dataset
from .engine import PrivateModel, TrainConfig, TrainResult, make_private, train
from .exceptions import (
    PrivacyBudgetExceededError,
    PrivacyWarning,
    SensitivityError,
    UnsupportedMeasurementError,
)
from .models import QuantumClassifier, make_qnode
from .noise import CREDIT_MODES, confidence_multiplier, shot_noise_credit
from .optimizer import QShiftDPOptimizer
from .sensitivity import Sensitivity, sensitivity
from .shot_statistics import ShotRecorder, ShotStatistics
from .transform import observable_range, param_shift, shift_rule_coefficients, validate_shots

__version__ = "0.1.0.dev0"

__all__ = [
    "CREDIT_MODES",
    "Dataset",
    "PrivacyLedger",
    "PrivateModel",
    "QShiftDPOptimizer",
    "QuantumClassifier",
    "Sensitivity",
    "TrainConfig",
    "TrainResult",
    "calibrate_noise_multiplier",
    "compute_epsilon",
    "confidence_multiplier",
    "load_dataset",
    "make_private",
    "make_qnode",
    "sensitivity",
    "shot_noise_credit",
    "train",
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
