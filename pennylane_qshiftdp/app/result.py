"""The outcome of ``qshiftdp train``: :class:`TrainResult` (what :func:`~.job.train` returns).

Its own module so that the orchestrator (:mod:`.job`) and the writers of its outputs
(:mod:`.outputs`) both import it and neither imports the other back.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["TrainResult"]


@dataclasses.dataclass
class TrainResult:
    """Outcome of :func:`~pennylane_qshiftdp.app.job.train`."""

    test_accuracy: float
    epsilon: float
    steps: int
    statement: str
    metrics: list
    step_records: list
    # the trained quantum weights: (layers, qubits, 3) for the quantum and hybrid models; for
    # model="neuron" every parameter flattened (linear weight, linear bias, rotations)
    weights: np.ndarray
    output_dir: str | None
    stopped_early: str | None = None
    credited_epsilon: float = math.inf
    shots: int | None = None  # shots per circuit used in training (after "auto")
    training_shots: int = 0  # shots executed by the training device in all
    device: str | None = None
    n_classes: int = 2
    label_mapping: str = ""  # e.g. "'setosa' → 0, 'versicolor' → 1, 'virginica' → 2"
    # with diagnostics=True: what the statement reports from the private batches (NOT protected)
    diagnostics: dict | None = None
    # sklearn.metrics.balanced_accuracy_score of the final weights on the held-out test split
    test_balanced_accuracy: float = math.nan
    # share of the held-out test split's most frequent class (what always predicting it scores)
    test_majority_rate: float = math.nan
    test_examples: int = 0  # size of the held-out test split
    # set when the final test accuracy is within MAJORITY_TOLERANCE of test_majority_rate, or
    # the balanced accuracy within CHANCE_TOLERANCE of 1/K (majority_class_warning)
    majority_warning: str | None = None
    # the settings the run used, its "auto" ones resolved (app.defaults.resolve_settings)
    settings: dict = dataclasses.field(default_factory=dict)
    planned_steps: int | None = None  # the steps the plan has (epochs x steps per epoch)
    # most held-out feature values (or whole columns) lie outside the declared ranges, in a run
    # that is not otherwise flagged (app.metrics.clipping_cause; from the test split only)
    feature_warning: str | None = None
    # Ctrl-C stopped the run after `steps` steps; its ledger, statement and checkpoint hold
    # them, and resume=True continues it
    interrupted: bool = False
    # the device the test metrics were computed on (default.qubit, analytically, for a
    # training device that is not one of PennyLane's simulators unless eval_shots is given)
    eval_device: str | None = None
    # metrics.json's "cost": the plan ("estimated", public) and, with diagnostics, what the
    # devices' trackers counted ("measured", NOT protected)
    cost: dict | None = None
