r"""Differentially private training of parameterized quantum circuits (Q-ShiftDP).

The parameter-shift gradient of an expectation value is bounded a priori: :func:`param_shift`
computes it from finite shots and records per-circuit shot statistics, and :func:`sensitivity`
bounds each example's gradient. :class:`qnn.TorchLayer` is the quantum layer (PennyLane's, with
one circuit execution per training step); the package registers its Opacus grad sampler and
an Opacus ``ModuleValidator`` rule and fixer for :class:`pennylane.qnn.TorchLayer` (nothing of
PennyLane's or Opacus's is replaced) when any of its names is first used, so Opacus trains
quantum and hybrid models;
:func:`make_private` is the Q-ShiftDP front end of Opacus (clipping at the certified bound by
default, noise calibrated by an Opacus accountant; arXiv:2602.02962).

Names load on first access: ``import pennylane_qshiftdp`` imports neither torch, PennyLane nor
Opacus, and the library's names never import the application (:mod:`pennylane_qshiftdp.app`:
the ``qshiftdp`` command, its training job, data sets and models).
"""

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the static view (type checkers, the API docs); at run time: __getattr__
    from . import audit, losses, qnn, sampling
    from .accountants.calibration import calibrate_noise_multiplier, compute_epsilon, plan_shots
    from .accountants.ledger import PrivacyLedger
    from .accountants.selection import PrivateSelection
    from .app.data import Dataset, load_dataset
    from .app.job import TrainConfig, TrainResult, train
    from .app.models import HybridClassifier, QuantumClassifier, make_qnode, readout_observables
    from .cost import CostEstimate, estimate_cost
    from .credit.shot_noise import CREDIT_MODES, confidence_multiplier, shot_noise_credit
    from .exceptions import (
        PrivacyBudgetExceededError,
        PrivacyWarning,
        SensitivityError,
        UnsupportedMeasurementError,
    )
    from .grad_sample.torch_layer import torch_layer_grad_sampler
    from .gradients.observables import observable_range
    from .gradients.parameter_shift import param_shift, validate_shots
    from .gradients.sensitivity_bound import Sensitivity, sensitivity
    from .gradients.shift_rules import shift_rule_coefficients
    from .gradients.shot_statistics import ShotRecorder, ShotStatistics
    from .opacus_engine import PrivacyEngine
    from .optimizers.optimizer import QShiftDPOptimizer
    from .optimizers.public_clip import domain_gradient_bound
    from .optimizers.selection import build_optimizer, get_optimizer_class
    from .privacy_engine import default_clip_mode, make_private
    from .qnn.evaluation import evaluate_layer
    from .qnn.private_qnode import check_private_qnode
    from .sampling.modes import set_shot_sampling, use_exact_law
    from .specs import AccountingSpec, ClipSpec, CreditSpec, RandomnessSpec, SamplingSpec

#: public name -> the module that defines it (loaded on first access, PEP 562).
_LIBRARY = {
    "audit": None, "losses": None, "qnn": None, "sampling": None,
    "PrivacyLedger": "accountants.ledger",
    "calibrate_noise_multiplier": "accountants.calibration",
    "compute_epsilon": "accountants.calibration", "plan_shots": "accountants.calibration",
    "make_private": "privacy_engine", "default_clip_mode": "privacy_engine",
    "PrivacyEngine": "opacus_engine",
    "PrivateSelection": "accountants.selection",
    "CostEstimate": "cost", "estimate_cost": "cost",
    "PrivacyBudgetExceededError": "exceptions", "PrivacyWarning": "exceptions",
    "SensitivityError": "exceptions", "UnsupportedMeasurementError": "exceptions",
    "CREDIT_MODES": "credit.shot_noise", "confidence_multiplier": "credit.shot_noise",
    "shot_noise_credit": "credit.shot_noise",
    "QShiftDPOptimizer": "optimizers.optimizer",
    "domain_gradient_bound": "optimizers.public_clip",
    "build_optimizer": "optimizers.selection", "get_optimizer_class": "optimizers.selection",
    "check_private_qnode": "qnn.private_qnode", "evaluate_layer": "qnn.evaluation",
    "torch_layer_grad_sampler": "grad_sample.torch_layer",
    "set_shot_sampling": "sampling.modes", "use_exact_law": "sampling.modes",
    "Sensitivity": "gradients.sensitivity_bound", "sensitivity": "gradients.sensitivity_bound",
    "ShotRecorder": "gradients.shot_statistics", "ShotStatistics": "gradients.shot_statistics",
    "observable_range": "gradients.observables", "param_shift": "gradients.parameter_shift",
    "shift_rule_coefficients": "gradients.shift_rules",
    "validate_shots": "gradients.parameter_shift",
    "AccountingSpec": "specs", "ClipSpec": "specs", "CreditSpec": "specs",
    "RandomnessSpec": "specs", "SamplingSpec": "specs",
}
#: the application (``qshiftdp train``'s job): loaded only when one of these is asked for.
_APPLICATION = {
    "Dataset": "app.data", "load_dataset": "app.data",
    "HybridClassifier": "app.models", "QuantumClassifier": "app.models",
    "make_qnode": "app.models", "readout_observables": "app.models",
    "TrainConfig": "app.job", "TrainResult": "app.job", "train": "app.job",
}


def __getattr__(name: str):
    """Load a public name on first access (PEP 562).

    The first access to any public name also imports :mod:`pennylane_qshiftdp.qnn`, which
    registers the Opacus grad sampler and ``ModuleValidator`` rule and fixer, so they are in
    place before any model can be made private. ``import pennylane_qshiftdp`` alone loads
    neither torch, PennyLane nor Opacus (``qshiftdp --help`` stays fast), and a library name
    never loads the application modules (data sets, models, the training job).
    """
    if name in _LIBRARY:
        module = _LIBRARY[name] or name
    elif name in _APPLICATION:
        module = _APPLICATION[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module(".qnn", __name__)  # Opacus registrations first
    mod = importlib.import_module(f".{module}", __name__)
    value = mod if _LIBRARY.get(name, "") is None else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0.dev0"

__all__ = [
    "AccountingSpec",
    "CREDIT_MODES",
    "ClipSpec",
    "CreditSpec",
    "CostEstimate",
    "Dataset",
    "PrivacyEngine",
    "PrivacyLedger",
    "PrivateSelection",
    "HybridClassifier",
    "QShiftDPOptimizer",
    "QuantumClassifier",
    "RandomnessSpec",
    "SamplingSpec",
    "Sensitivity",
    "TrainConfig",
    "TrainResult",
    "calibrate_noise_multiplier",
    "default_clip_mode",
    "domain_gradient_bound",
    "estimate_cost",
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
    "build_optimizer",
    "get_optimizer_class",
]
