r"""Differentially private training of parameterized quantum circuits (Q-ShiftDP).

The parameter-shift gradient of an expectation value is bounded a priori: :func:`param_shift`
computes it from finite shots and records per-circuit shot statistics, and :func:`sensitivity`
bounds each example's gradient. :class:`qnn.TorchLayer` is the quantum layer (PennyLane's, with
one circuit execution per training step); importing this package registers its Opacus grad
sampler and an Opacus ``ModuleValidator`` rule and fixer for :class:`pennylane.qnn.TorchLayer`
(nothing of PennyLane's or Opacus's is replaced), so Opacus trains quantum and hybrid models;
:func:`make_private` is the Q-ShiftDP front end of Opacus (clipping at the certified bound by
default, noise calibrated by an Opacus accountant; arXiv:2602.02962).
"""

from . import audit, losses, qnn, sampling
from .accountant import PrivacyLedger
from .calibration import calibrate_noise_multiplier, compute_epsilon, plan_shots
from .data import Dataset, load_dataset
from .engine import make_private
from .exceptions import (
    PrivacyBudgetExceededError,
    PrivacyWarning,
    SensitivityError,
    UnsupportedMeasurementError,
)
from .models import HybridClassifier, QuantumClassifier, make_qnode, readout_observables
from .noise import CREDIT_MODES, confidence_multiplier, shot_noise_credit
from .optimizer import QShiftDPOptimizer
from .public_clip import domain_gradient_bound
from .quantum_layer import check_private_qnode, evaluate_layer, torch_layer_grad_sampler
from .sampling import set_shot_sampling, use_exact_law
from .sensitivity import Sensitivity, sensitivity
from .shot_statistics import ShotRecorder, ShotStatistics
from .training import TrainConfig, TrainResult, train
from .transform import observable_range, param_shift, shift_rule_coefficients, validate_shots

__version__ = "0.1.0.dev0"

__all__ = [
    "CREDIT_MODES",
    "Dataset",
    "PrivacyLedger",
    "HybridClassifier",
    "QShiftDPOptimizer",
    "QuantumClassifier",
    "Sensitivity",
    "TrainConfig",
    "TrainResult",
    "calibrate_noise_multiplier",
    "domain_gradient_bound",
    "plan_shots",
    "qnn",
    "sampling",
    "set_shot_sampling",
    "use_exact_law",
    "check_private_qnode",
    "evaluate_layer",
    "compute_epsilon",
    "confidence_multiplier",
    "load_dataset",
    "make_private",
    "make_qnode",
    "readout_observables",
    "sensitivity",
    "shot_noise_credit",
    "train",
    "PrivacyBudgetExceededError",
    "PrivacyWarning",
    "SensitivityError",
    "ShotRecorder",
    "ShotStatistics",
    "UnsupportedMeasurementError",
    "audit",
    "losses",
    "observable_range",
    "param_shift",
    "shift_rule_coefficients",
    "torch_layer_grad_sampler",
    "validate_shots",
]
