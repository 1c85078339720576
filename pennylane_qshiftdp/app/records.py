r"""What ``qshiftdp train`` writes by default and what only with ``--diagnostics``.

Step and epoch records are filtered by allow-lists (:data:`PUBLIC_STEP_FIELDS`,
:data:`PUBLIC_EPOCH_FIELDS`): nothing computed from the private batches is written unless
``diagnostics=True``, and then only to ``diagnostics.json``, labelled :data:`NOT_PROTECTED`.
"""

from __future__ import annotations

import json

import numpy as np
import torch

from ..accountants.ledger import PrivacyLedger

__all__ = ["DIAGNOSTIC_EPOCH_FIELDS", "DIAGNOSTIC_STEP_FIELDS", "NOT_PROTECTED",
           "PUBLIC_EPOCH_FIELDS", "PUBLIC_STEP_FIELDS", "TEST_SPLIT_NOTE", "diagnostic_record",
           "plain", "public_ledger_state", "public_record"]

#: Step-record fields written by default. None is computed from the private batches: the
#: step count, the proven ε and σ_t, the planned and added noise variance (the added noise never
#: depends on the batch), the clip norm (certified Δ, a fixed number, the public clip, a function
#: of the released weights, or the adaptive clip, released with its own noise).
PUBLIC_STEP_FIELDS = ("step", "epoch", "credit_mode", "certified", "epsilon",
                      "proven_noise_multiplier", "target_variance", "artificial_variance_mean",
                      "clip_norm", "next_clip_norm")


#: The optimizer's step-record fields computed from the private batches (batch size, clipping
#: counts, shot statistics, the credited claim, ‖Σ clipped gradients‖ / ‖noise‖): written only
#: with ``diagnostics=True``, to ``diagnostics.json``. Any field not in
#: :data:`PUBLIC_STEP_FIELDS` is treated the same way.
DIAGNOSTIC_STEP_FIELDS = ("batch_examples", "clipped", "clipped_fraction",
                          "certified_bound_violations", "largest_certified_norm_ratio",
                          "credited_epsilon", "credited_noise_multiplier",
                          "credited_variance_mean", "shot_variance_estimate_mean",
                          "shot_variance_lower_bound_mean", "gradient_snr")


#: Per-epoch fields written by default: the step count and proven ε (data-independent), and the
#: test accuracy, balanced accuracy and loss of the released weights on the held-out split
#: (post-processing).
PUBLIC_EPOCH_FIELDS = ("epoch", "steps", "epsilon", "test_accuracy", "test_balanced_accuracy",
                       "test_loss")


#: What the test-split numbers of ``metrics.json`` are computed on (its ``"test_split"`` key).
TEST_SPLIT_NOTE = (
    "held out: a stratified, seeded train/test split made before training; its examples are "
    "never trained on. test_accuracy, test_balanced_accuracy (sklearn.metrics."
    "balanced_accuracy_score: the mean per-class recall) and test_loss are the released "
    "weights evaluated on it (post-processing of the DP release); test_majority_rate is the "
    "share of its most frequent class, a property of the held-out labels. The guarantee covers "
    "the training examples only, not the test examples: these numbers are not protected for "
    "them (and, the split being stratified, the test class shares equal the whole data set's "
    "up to rounding)")


#: Per-epoch fields computed from the private batches (``diagnostics.json`` only): the credited
#: ε, the shots executed (they grow with the Poisson batch sizes) and the wall time.
DIAGNOSTIC_EPOCH_FIELDS = ("credited_epsilon", "training_shots", "elapsed_s")


#: The label of every diagnostics file and key.
NOT_PROTECTED = ("NOT protected by the privacy guarantee: computed from the private training "
                 "batches, these values can reveal individual training examples; do not "
                 "publish them")


def public_record(record: dict, fields: tuple = PUBLIC_STEP_FIELDS) -> dict:
    """The fields of a step (or epoch) record that may be written without ``--diagnostics``.

    Args:
        record: one step record (:attr:`QShiftDPOptimizer.last_record` plus ``epoch``) or one
            per-epoch metrics row.
        fields: the allowed keys (:data:`PUBLIC_STEP_FIELDS` or :data:`PUBLIC_EPOCH_FIELDS`).

    Returns:
        dict: ``record`` restricted to ``fields`` (an allow-list: an unknown field is dropped).

    Example:
        >>> public_record({"step": 1, "epsilon": 0.5, "batch_examples": 31, "gradient_snr": 2.0})
        {'step': 1, 'epsilon': 0.5}
    """
    return {k: v for k, v in record.items() if k in fields}


def diagnostic_record(record: dict, fields: tuple = PUBLIC_STEP_FIELDS) -> dict:
    """The data-dependent part of a record, keyed by its ``step`` / ``epoch`` (NOT protected).

    Example:
        >>> diagnostic_record({"step": 1, "epoch": 1, "epsilon": 0.5, "batch_examples": 31})
        {'step': 1, 'epoch': 1, 'batch_examples': 31}
    """
    index = {k: record[k] for k in ("step", "epoch") if k in record}
    return {**index, **{k: v for k, v in record.items() if k not in fields}}


def plain(obj):
    """Built-in floats/ints/lists only (what ``torch.load(weights_only=True)`` reads back)."""
    def default(x):
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, torch.Tensor) and x.numel() == 1:
            return x.item()
        raise TypeError(f"cannot write {type(x).__name__}")

    return json.loads(json.dumps(obj, default=default))


def public_ledger_state(ledger: PrivacyLedger) -> dict:
    """The ledger's state without anything computed from the private batches.

    With a credit mode the credited history (σ_t from each batch's shot statistics) is replaced
    by the proven one, i.e. *nothing credited* (data-independent, and conservative: the
    credited ε read back from it equals the proven ε); ``"credited_history_note"`` says so.
    The real credited history goes to ``diagnostics.json`` with ``diagnostics=True``.

    Returns:
        dict: a JSON-able state that :meth:`PrivacyLedger.load_state_dict` reads.
    """
    state = plain(ledger.state_dict())
    if ledger.credit_mode != "none":
        state["credited_history"] = [list(h) for h in state["proven_history"]]
        state["credited_history_note"] = (
            "withheld: the credited σ_t are computed from the private batches' shot statistics "
            "(NOT protected); here nothing is credited (credited σ_t = proven σ_t). With "
            "--diagnostics the real credited history is in diagnostics.json.")
    return state
