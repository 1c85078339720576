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
Opacus, and the library's names never import the application (``data``, ``models``,
``training``, ``cli``: the ``qshiftdp`` command and its job).
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the static view (type checkers, the API docs); at run time: __getattr__
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

#: public name -> the module that defines it (loaded on first access, PEP 562).
_LIBRARY = {
    "audit": None, "losses": None, "qnn": None, "sampling": None,
    "PrivacyLedger": "accountant",
    "calibrate_noise_multiplier": "calibration", "compute_epsilon": "calibration",
    "plan_shots": "calibration",
    "make_private": "engine",
    "PrivacyBudgetExceededError": "exceptions", "PrivacyWarning": "exceptions",
    "SensitivityError": "exceptions", "UnsupportedMeasurementError": "exceptions",
    "CREDIT_MODES": "noise", "confidence_multiplier": "noise", "shot_noise_credit": "noise",
    "QShiftDPOptimizer": "optimizer",
    "domain_gradient_bound": "public_clip",
    "check_private_qnode": "quantum_layer", "evaluate_layer": "quantum_layer",
    "torch_layer_grad_sampler": "quantum_layer",
    "set_shot_sampling": "sampling", "use_exact_law": "sampling",
    "Sensitivity": "sensitivity", "sensitivity": "sensitivity",
    "ShotRecorder": "shot_statistics", "ShotStatistics": "shot_statistics",
    "observable_range": "transform", "param_shift": "transform",
    "shift_rule_coefficients": "transform", "validate_shots": "transform",
}
#: the application (``qshiftdp train``'s job): loaded only when one of these is asked for.
_APPLICATION = {
    "Dataset": "data", "load_dataset": "data",
    "HybridClassifier": "models", "QuantumClassifier": "models", "make_qnode": "models",
    "readout_observables": "models",
    "TrainConfig": "training", "TrainResult": "training", "train": "training",
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


class _Package(types.ModuleType):
    """The package module: the submodule :mod:`.sensitivity` shares its name with the public
    function :func:`sensitivity`; when the import system binds the submodule on the package
    (whoever imports it first), the function is bound instead, as the eager import did."""

    def __setattr__(self, name, value):
        if name == "sensitivity" and isinstance(value, types.ModuleType):
            value = value.sensitivity
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
