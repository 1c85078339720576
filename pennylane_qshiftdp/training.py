r"""The application: ``qshiftdp train``'s job (data set, model, private training loop, outputs).

Library code (:func:`~pennylane_qshiftdp.make_private`, the optimizer, the ledger) never imports
this module. The loop is the standard Opacus one::

    model, optimizer, loader = make_private(model, optimizer, loader, ...)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).mean().backward()
        optimizer.step()
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import secrets
import time
import warnings
from pathlib import Path

import numpy as np
import pennylane as qml
import torch
from opacus.data_loader import DPDataLoader

from . import _compat
from .accountant import PrivacyLedger
from .engine import make_private
from .exceptions import PrivacyBudgetExceededError, PrivacyWarning
from .losses import LinearLoss, MSELoss, SoftmaxCrossEntropyLoss
from .shot_statistics import ShotRecorder
from .train_config import TrainConfig

__all__ = ["TrainConfig", "TrainResult", "make_loss", "train", "write_outputs"]


@dataclasses.dataclass
class TrainResult:
    """Outcome of :func:`train`."""

    test_accuracy: float
    epsilon: float
    steps: int
    statement: str
    metrics: list
    step_records: list
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


#: From this many qubits on, ``device="auto"`` picks lightning.qubit: the measured crossover of
#: the exact-law private step (benchmarks/RESULTS.md §12: default.qubit 2.96 s against 4.43 s at
#: 10 qubits, 6.64 s against 5.90 s at 11, 16.3 s against 7.37 s at 12; batch 54, 2 layers).
LIGHTNING_QUBITS = 11
#: Largest qubit count the training job accepts (a state vector of 2^n amplitudes per circuit;
#: at 16 qubits the public clip norm's batched Jacobian alone needs tens of GiB).
MAX_QUBITS = 14
#: Simulators on which ``shot_sampling="auto"`` draws shot estimates from the exact law.
_EXACT_LAW_DEVICES = ("default.qubit", "lightning.qubit", "default.mixed")
#: ``shots="auto"``: the shot noise of a step adds at most this fraction of the DP noise variance.
AUTO_SHOTS_FRACTION = 0.01


def _shot_sampling(config, device: str, shots) -> str:
    """``shot_sampling``: ``"auto"`` means exact-law draws on the simulators that support them."""
    mode = config.shot_sampling
    if mode not in ("auto", "exact_law", "device"):
        raise ValueError(f"`shot_sampling` must be 'auto', 'exact_law' or 'device'. Found "
                         f"{mode!r}.")
    if mode == "auto":
        mode = "exact_law" if shots is not None and device in _EXACT_LAW_DEVICES else "device"
    return mode


def resolve_device(config) -> str:
    """The device name for ``config.device`` (``"auto"`` picks by size and device noise)."""
    if config.device != "auto":
        return config.device
    if config.depolarizing > 0:
        return "default.mixed"
    return "lightning.qubit" if config.qubits >= LIGHTNING_QUBITS else "default.qubit"


def _certified_sensitivity(config, model_cls, data, loss_fn):
    """The certified a-priori bound (:func:`~pennylane_qshiftdp.sensitivity.sensitivity`) of
    the job's model at its initial weights, analytically on default.qubit."""
    from .sensitivity import sensitivity

    probe = model_cls(config.qubits, config.layers, device="default.qubit", shots=None,
                      init_seed=config.seed, n_classes=data.n_classes)
    weights = probe.qlayer.weights.detach().double().requires_grad_(True)
    return sensitivity(probe.qnode, inputs=torch.zeros(config.qubits, dtype=torch.float64),
                       weights=weights, loss=loss_fn)


def _auto_shots(config, model_cls, data, loss_fn) -> int:
    """``shots="auto"``: plan Ns from σ, the clip norm and the certified per-weight bounds."""
    from .calibration import calibrate_noise_multiplier, epochs_to_steps, plan_shots

    if not math.isfinite(config.epsilon):
        raise ValueError("`shots`='auto' plans the shots against the DP noise and needs a "
                         "finite `epsilon`.")
    sens = _certified_sensitivity(config, model_cls, data, loss_fn)
    n = len(data.y_train)
    q = 1.0 / math.ceil(n / config.expected_batch_size)
    sigma = calibrate_noise_multiplier(target_epsilon=config.epsilon, target_delta=config.delta,
                                       sample_rate=q, steps=epochs_to_steps(
                                           epochs=config.epochs, sample_rate=q),
                                       accountant=config.accountant)
    clip = (float(config.max_grad_norm) if not isinstance(config.max_grad_norm, str)
            else sens.delta)  # public/adaptive start at most at Δ: planning at Δ is safe
    v1 = (sens.loss_grad_bounds[0] * float(sens.per_weight.max())) ** 2
    return plan_shots(per_example_shot_variance=v1, noise_multiplier=sigma, clip_norm=clip,
                      expected_batch_size=q * n, fraction=AUTO_SHOTS_FRACTION)


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
#: A final test accuracy within this of the test split's majority-class rate warns that the
#: classifier predicts the majority class (does no better than always answering it).
MAJORITY_TOLERANCE = 0.01
#: A final balanced accuracy within this of 1/K (what any constant answer scores) warns that the
#: classifier barely separates the classes, even when its accuracy is above the majority rate
#: (a classifier that answers the majority class for all but a few examples).
CHANCE_TOLERANCE = 0.05
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
#: ``checkpoint.pt`` layout tag (read back with ``torch.load(..., weights_only=True)``).
CHECKPOINT_FORMAT = "qshiftdp-train-checkpoint-2"


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


def _plain(obj):
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
    state = _plain(ledger.state_dict())
    if ledger.credit_mode != "none":
        state["credited_history"] = [list(h) for h in state["proven_history"]]
        state["credited_history_note"] = (
            "withheld: the credited σ_t are computed from the private batches' shot statistics "
            "(NOT protected); here nothing is credited (credited σ_t = proven σ_t). With "
            "--diagnostics the real credited history is in diagnostics.json.")
    return state


def _provenance(data) -> dict:
    """Command line, data set name, size and label mapping (ledger provenance; no data hash)."""
    import sys

    return {"command_line": list(sys.argv), "dataset": data.name,
            "training_examples": int(len(data.y_train)),
            "n_classes": data.n_classes, "label_mapping": data.label_mapping_text(),
            "feature_ranges": [list(r) for r in data.feature_ranges] or None}


def _training_data_sha256(data) -> str:
    """SHA-256 of the training data: a function of every private example (diagnostics only)."""
    import hashlib

    digest = hashlib.sha256()
    for arr in (data.X_train, data.y_train):
        digest.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    return digest.hexdigest()


def _seed_for(seed, epoch, stream):
    return int(np.random.SeedSequence([seed, epoch, stream]).generate_state(1, np.uint64)[0]
               % (2**63))


def _accuracy(model, x, y):
    """Fraction of correct predictions: sign for one output (labels ±1), else argmax."""
    return _evaluate(model, x, y)[0]


def _predict(model, x, dtype=torch.float64):
    """Predicted labels: the sign for one output (labels ±1), else the argmax (indices)."""
    with torch.no_grad():
        out = model(x)
    pred = torch.where(out >= 0, 1.0, -1.0) if out.ndim == 1 else out.argmax(dim=1).to(dtype)
    return out, pred


def _evaluate(model, x, y, loss_fn=None):
    """Test accuracy, balanced accuracy and, with ``loss_fn``, the mean test loss, from one
    forward pass (balanced accuracy: :func:`sklearn.metrics.balanced_accuracy_score`)."""
    from sklearn.metrics import balanced_accuracy_score

    out, pred = _predict(model, x, y.dtype)
    with torch.no_grad():
        loss = float(loss_fn(out, y).mean()) if loss_fn is not None and len(y) else None
    if not len(y):
        return math.nan, math.nan, loss
    with warnings.catch_warnings():  # a class never predicted / absent: sklearn's own warning
        warnings.simplefilter("ignore", UserWarning)
        balanced = float(balanced_accuracy_score(y.numpy(), pred.numpy()))
    return float((pred == y).double().mean()), balanced, loss


def majority_rate(y) -> float:
    """Share of the most frequent label in ``y`` (the accuracy of always predicting it).

    Example:
        >>> majority_rate(np.array([1.0, -1.0, 1.0, 1.0]))
        0.75
    """
    y = np.asarray(y)
    if not y.size:
        return math.nan
    return float(np.unique(y, return_counts=True)[1].max() / y.size)


def majority_class_warning(test_accuracy: float, rate: float,
                           balanced_accuracy: float = math.nan,
                           n_classes: int | None = None) -> str | None:
    """The warning text for a classifier that has learned little: its final ``test_accuracy``
    is within :data:`MAJORITY_TOLERANCE` of the test split's majority-class ``rate``, or its
    ``balanced_accuracy`` is within :data:`CHANCE_TOLERANCE` of ``1 / n_classes``; ``None``
    otherwise.

    Example:
        >>> majority_class_warning(0.63, 0.627)[:44]
        'the classifier predicts the majority class: '
        >>> majority_class_warning(0.65, 0.629, 0.528, 2)[:43]
        'the classifier barely separates the classes'
        >>> majority_class_warning(0.9, 0.627, 0.88, 2) is None
        True
    """
    hint = ("It has learned little or nothing; try more epochs, a larger learning rate or a "
            "larger epsilon.")
    bal = (f" (balanced accuracy {balanced_accuracy:.4f})"
           if math.isfinite(balanced_accuracy) else "")
    if math.isfinite(test_accuracy) and math.isfinite(rate) and \
            abs(test_accuracy - rate) <= MAJORITY_TOLERANCE + 1e-12:
        return (f"the classifier predicts the majority class: the final test accuracy "
                f"{test_accuracy:.4f}{bal} is within {MAJORITY_TOLERANCE} of the held-out "
                f"test split's majority-class rate {rate:.4f}, what always answering the most "
                f"frequent class scores. {hint}")
    if n_classes and math.isfinite(balanced_accuracy) and \
            balanced_accuracy <= 1.0 / n_classes + CHANCE_TOLERANCE + 1e-12:
        return (f"the classifier barely separates the classes: the final balanced accuracy "
                f"{balanced_accuracy:.4f} (mean per-class recall on the held-out test split) is "
                f"within {CHANCE_TOLERANCE} of 1/{n_classes} = {1.0 / n_classes:.4f}, what any "
                f"constant answer scores, although the accuracy {test_accuracy:.4f} is above "
                f"the majority-class rate {rate:.4f}. {hint}")
    return None


def make_loss(name: str, n_classes: int, logit_scale: float = 5.0):
    r"""The job's loss for ``name`` and the number of classes.

    Args:
        name: ``"auto"`` (``"linear"`` for two classes, ``"cross_entropy"`` for more),
            ``"linear"``, ``"mse"`` (two classes), or ``"cross_entropy"`` (three or more).
        n_classes: number of classes :math:`K \ge 2`.
        logit_scale: :math:`s > 0` of :class:`~.SoftmaxCrossEntropyLoss` (logits :math:`s f`).

    Returns:
        BoundedLoss: the loss.

    Raises:
        ValueError: for an unknown ``name`` or one that does not fit ``n_classes``.

    Example:
        >>> make_loss("auto", 3).name, make_loss("auto", 2).name
        ('softmax cross-entropy', 'linear loss')
    """
    if name not in ("auto", "linear", "mse", "cross_entropy"):
        raise ValueError(f"`loss` must be 'auto', 'linear', 'mse' or 'cross_entropy'. Found "
                         f"{name!r}.")
    if name == "auto":
        name = "linear" if n_classes == 2 else "cross_entropy"
    if n_classes == 2 and name == "cross_entropy":
        raise ValueError("`loss`='cross_entropy' needs at least 3 classes (the binary model has "
                         "one output ⟨Z0⟩); use 'linear' or 'mse' for two classes.")
    if n_classes > 2 and name != "cross_entropy":
        raise ValueError(f"`loss`={name!r} is for two classes (labels ±1); a {n_classes}-class "
                         f"task needs 'cross_entropy' (or 'auto').")
    if name == "cross_entropy":
        return SoftmaxCrossEntropyLoss(logit_scale=logit_scale)
    return LinearLoss() if name == "linear" else MSELoss(target_bound=1.0)


def train(config: TrainConfig, *, progress: bool = True, resume: bool = False,
          stop_after_epochs: int | None = None, private_hook=None) -> TrainResult:
    """Train the default quantum classifier privately; write ledger, metrics and plots.

    Args:
        config: the :class:`TrainConfig`.
        progress: show a tqdm progress bar.
        resume: continue from ``config.output_dir``'s checkpoint (same config required).
        stop_after_epochs: stop after this many epochs in total (simulates an interruption).
        private_hook: ``None`` in normal use. A callable ``hook(model, optimizer, loader)``
            called once with what :func:`~pennylane_qshiftdp.make_private` returned, before the
            first step (private runs only): the seam through which
            :func:`~pennylane_qshiftdp.audit.audit_run` injects its gradient canaries into
            the job's own optimizer. Whatever it changes is outside the privacy guarantee.

    Returns:
        TrainResult: test accuracy, spent ε, the privacy statement, per-epoch metrics.
    """
    from tqdm.auto import tqdm

    from .data import load_dataset
    from .models import HybridClassifier, QuantumClassifier

    if isinstance(config.qubits, int) and not isinstance(config.qubits, bool) \
            and config.qubits > MAX_QUBITS:
        raise ValueError(
            f"`qubits` must be at most {MAX_QUBITS} in the training job. Found {config.qubits}. "
            f"Simulation memory and time grow as 2^qubits (one private step at 12 qubits takes "
            f"seconds to tens of seconds on two cores, and the public clip norm evaluates "
            f"hundreds of states at once); build larger models with the Python API "
            f"(make_private) on a device that can hold them.")
    data = load_dataset(config.dataset, n_features=config.qubits, seed=config.seed,
                        test_size=config.test_size, preprocessing=config.preprocessing,
                        csv_path=config.csv_path, label_column=config.label_column,
                        classes=config.classes, feature_range=config.feature_range)
    if math.isnan(config.epsilon):
        raise ValueError("`epsilon` must be a positive number or inf (no noise). Found nan.")
    if not (math.isfinite(config.lr) and config.lr > 0):
        raise ValueError(f"`lr` must be positive and finite. Found {config.lr}.")
    private = math.isfinite(config.epsilon)
    if config.model not in ("quantum", "hybrid"):
        raise ValueError(f"`model` must be 'quantum' or 'hybrid'. Found {config.model!r}.")
    model_cls = QuantumClassifier if config.model == "quantum" else HybridClassifier
    from .data import DIGITS_POOLING_GRIDS
    from .models import max_classes

    if data.n_classes > max_classes(config.qubits):
        need = (data.n_classes + 2) // 2  # K <= 2n - 1
        if config.dataset == "digits" and config.preprocessing == "fixed":
            need = min(k for k in DIGITS_POOLING_GRIDS if k >= need)
        raise ValueError(
            f"`n_classes` = {data.n_classes} needs at least {need} qubits (K <= 2 * qubits - 1 "
            f"readouts: one Z per qubit and one ZZ per neighbouring pair). Found "
            f"`qubits`={config.qubits}.")
    loss_fn = make_loss(config.loss, data.n_classes, config.logit_scale)
    if data.n_classes > 2 and config.credit != "none":
        raise ValueError(f"`credit`={config.credit!r} supports one output per example; a "
                         f"{data.n_classes}-class model has {data.n_classes}. Use credit='none'.")
    shots = config.shots
    if shots == "auto":
        shots = _auto_shots(config, model_cls, data, loss_fn)
    elif isinstance(shots, str):
        raise ValueError(f"`shots` must be a positive integer, None or 'auto'. Found {shots!r}.")
    device = resolve_device(config)
    if config.credit != "none" and shots is not None and shots < 30:
        warnings.warn(f"credit={config.credit!r} with shots={shots}: crediting treats "
                      f"each sample mean as Gaussian (central limit theorem), which is a poor "
                      f"approximation for so few shots.", PrivacyWarning, stacklevel=2)
    recorder = ShotRecorder() if config.credit != "none" else None
    if config.diagnostics:
        warnings.warn("diagnostics=True writes per-step statistics of the private training "
                      "batches (batch sizes, clipped fractions, shot variances, gradient "
                      "signal-to-noise ratio, credited ε) to diagnostics.json and "
                      "diagnostics.png; they are NOT covered by the differential-privacy "
                      "guarantee. Do not publish them.", PrivacyWarning, stacklevel=2)
    model = model_cls(config.qubits, config.layers, device=device,
                      shots=shots, seed=_seed_for(config.seed, 0, 0),
                      recorder=recorder, init_scale=config.init_scale,
                      init_seed=config.seed, depolarizing=config.depolarizing,
                      n_classes=data.n_classes)
    clip_mode = config.max_grad_norm
    if clip_mode == "auto":
        clip_mode = ("certified" if config.credit != "none" or config.model == "hybrid"
                     else "public")
    if private and config.model == "quantum" and not isinstance(clip_mode, str):
        delta = _certified_sensitivity(config, model_cls, data, loss_fn).delta
        if float(clip_mode) > delta:
            warnings.warn(
                f"--max-grad-norm {clip_mode} is above the certified bound Δ = {delta:.6g} of "
                f"every per-example gradient: the clip never binds, and the noise σC is "
                f"{float(clip_mode) / delta:.3g} times what --max-grad-norm certified adds for "
                f"the same clipping.", UserWarning, stacklevel=2)
    sampling = _shot_sampling(config, device, shots)
    if sampling != "device":
        from .sampling import set_shot_sampling

        set_shot_sampling(model, sampling)
    floor = model.variance_floor() if config.variance_floor is None else config.variance_floor
    if config.variance_floor is not None and config.credit != "none":
        warnings.warn(f"variance_floor={config.variance_floor} is declared by you, not proven "
                      f"from device noise; the privacy statement says so.", PrivacyWarning,
                      stacklevel=2)
    if config.credit == "depolarizing" and floor == 0.0:
        warnings.warn("credit='depolarizing' with no proven variance floor (no device "
                      "depolarizing noise): no shot noise is credited.", PrivacyWarning,
                      stacklevel=2)
    x_train = torch.as_tensor(data.X_train, dtype=torch.float64)
    y_train = torch.as_tensor(data.y_train, dtype=torch.float64)
    x_test = torch.as_tensor(data.X_test, dtype=torch.float64)
    y_test = torch.as_tensor(data.y_test, dtype=torch.float64)
    dataset = torch.utils.data.TensorDataset(x_train, y_train)
    loader = torch.utils.data.DataLoader(dataset, batch_size=config.expected_batch_size)
    sgd = torch.optim.SGD(model.parameters(), lr=config.lr)
    eval_model = model_cls(config.qubits, config.layers, device=device,
                           shots=config.eval_shots, seed=_seed_for(config.seed, 0, 4),
                           init_seed=config.seed, depolarizing=config.depolarizing,
                           n_classes=data.n_classes)
    if private:
        hybrid = config.model == "hybrid"
        pmodel, opt, train_loader = make_private(
            model, sgd, loader, target_epsilon=config.epsilon, target_delta=config.delta,
            epochs=config.epochs,
            loss=loss_fn if clip_mode in ("certified", "public") else None,
            max_grad_norm=clip_mode,
            input_range=(0.0, math.pi) if clip_mode == "public" else None,
            classical_max_grad_norm=config.classical_max_grad_norm if hybrid else None,
            proven_epsilon_factor=config.proven_epsilon_factor,
            credit=config.credit, beta=config.beta,
            adjacency=config.adjacency, accountant=config.accountant,
            variance_floor=floor, recorder=recorder,
            variance_floor_source="proven" if config.variance_floor is None else "declared",
            seed=None if config.secure_mode else config.seed, secure_mode=config.secure_mode,
            preprocessing_note=data.preprocessing_note,
        )
        opt.ledger.extra_update({"provenance": _provenance(data)})
        if shots is not None:
            randomness = opt.ledger.extra.get("randomness", "").rstrip(".")
            opt.ledger.extra_update({"randomness": randomness + (
                "; the simulator's shot sampling reseeded from the OS's CSPRNG (secrets) every "
                "epoch" if config.secure_mode else
                "; the simulator's shot sampling seeded from the public --seed (an adversary "
                "who knows it can reproduce the shot noise: a credited ε then holds only "
                "against one who does not)") + "."})
        if not data.data_dependent_preprocessing and data.preprocessing:
            opt.ledger.extra_update({"preprocessing": data.preprocessing})
        noise_gen, sampler_gen = opt.generator, train_loader.batch_sampler.generator
        if private_hook is not None:
            private_hook(pmodel, opt, train_loader)
    else:
        pmodel, opt = model, sgd
        sampler_gen = torch.Generator()
        train_loader = DPDataLoader.from_data_loader(loader, generator=sampler_gen)
        noise_gen = None

    out_dir = Path(config.output_dir) if config.output_dir else None
    start_epoch, metrics, records, training_shots = 0, [], [], 0
    if not resume and out_dir is not None and any(
            (out_dir / f).exists() for f in ("ledger.json", "checkpoint.pt")):
        raise ValueError(
            f"--output-dir {out_dir} already holds a run (ledger.json or checkpoint.pt). Pass "
            f"--resume to continue it, or choose a new --output-dir; a ledger is never "
            f"overwritten.")
    if out_dir is not None:  # fail before training, not after the first epoch
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"--output-dir {out_dir} cannot be created: {err}") from err
        if not os.access(out_dir, os.W_OK):
            raise ValueError(f"--output-dir {out_dir} is not writable.")
    if resume:
        ckpt, diag = _read_checkpoint(out_dir, config)
        model.load_state_dict(ckpt["model"])
        records = [public_record(r) for r in ckpt["step_records"]]
        metrics = [public_record(m, PUBLIC_EPOCH_FIELDS) for m in ckpt["metrics"]]
        if diag is not None:  # the data-dependent part, NOT protected, from diagnostics.json
            records = _merge(records, diag.get("per_step", []), "step")
            metrics = _merge(metrics, diag.get("per_epoch", []), "epoch")
            training_shots = int(metrics[-1].get("training_shots", 0)) if metrics else 0
        if private:
            ledger_state = ckpt["ledger"]
            if diag is not None and diag.get("credited_history") is not None:
                ledger_state = {**ledger_state, "credited_history": diag["credited_history"]}
            opt.ledger.load_state_dict(ledger_state)
            # through the optimizer's own load_state_dict, so whatever it restores (clip norm,
            # history length for the public clip's refresh) is restored here too
            opt.load_state_dict({"optimizer": ckpt["optimizer"], "history": records,
                                 "max_grad_norm": ckpt["clip_norm"], "generator": None})
        else:
            sgd.load_state_dict(ckpt["optimizer"])
        start_epoch = ckpt["epoch"]

    stopped = None
    dev = model.qlayer.qnode.device

    last = config.epochs if stop_after_epochs is None else min(config.epochs, stop_after_epochs)
    bar = tqdm(total=len(train_loader) * (last - start_epoch), disable=not progress,
               desc="qshiftdp train")
    t0 = time.perf_counter()
    for epoch in range(start_epoch, last):
        # Per-epoch reseeding makes a seeded resumed run repeat the uninterrupted one exactly.
        # In secure mode the shot noise comes from the OS's CSPRNG: a credit mode counts it as
        # privacy noise, which a public seed would let anyone reproduce.
        if shots is not None:
            _compat.reseed_device(dev, secrets.randbits(128) if config.secure_mode
                                  else [config.seed, epoch, 1])
        if not config.secure_mode:
            sampler_gen.manual_seed(_seed_for(config.seed, epoch, 2))
        if noise_gen is not None:
            noise_gen.manual_seed(_seed_for(config.seed, epoch, 3))
        tracker = qml.Tracker(dev)
        tracker.__enter__()
        for xb, yb in train_loader:
            opt.zero_grad()
            if private:
                if xb.shape[0]:  # an empty Poisson batch still gets a (noise-only) step
                    loss_fn(pmodel(xb), yb).mean().backward()
                try:
                    opt.step()
                except PrivacyBudgetExceededError as err:  # checked before the step
                    stopped = str(err)
                    break
                records.append(dict(opt.last_record, epoch=epoch + 1))
            else:
                if xb.shape[0]:
                    loss_fn(model(xb), yb).sum().div(config.expected_batch_size).backward()
                    sgd.step()
            bar.update(1)
        tracker.__exit__(None, None, None)
        # exact-law sampling executes analytically: Ns shots per circuit it stands in for
        training_shots += int(tracker.totals.get("shots", 0) if sampling == "device" else
                              tracker.totals.get("executions", 0) * (shots or 0))
        eval_model.load_state_dict(model.state_dict())
        acc, balanced, test_loss = _evaluate(eval_model, x_test, y_test, loss_fn)
        row = {"epoch": epoch + 1, "steps": (epoch + 1) * len(train_loader) if not private
               else len(records),
               "epsilon": opt.ledger.epsilon if private else math.inf,
               "credited_epsilon": opt.ledger.credited_epsilon if private else math.inf,
               "test_accuracy": acc, "test_balanced_accuracy": balanced,
               "test_loss": test_loss, "training_shots": training_shots,
               "elapsed_s": time.perf_counter() - t0}
        metrics.append(row)
        bar.set_postfix(acc=f"{acc:.3f}", eps=f"{row['epsilon']:.3f}")
        if out_dir is not None:  # created (and checked) before training
            _write_checkpoint(out_dir, config=config, epoch=epoch + 1, model=model, sgd=sgd,
                              opt=opt if private else None, metrics=metrics, records=records)
            if config.diagnostics:
                _write_json(out_dir / "diagnostics.json", _diagnostics_document(
                    metrics, records, opt.ledger if private else None, data))
        if stopped:
            break
    bar.close()
    diag_summary = None
    if config.diagnostics:
        written = ["diagnostics.json"] + (["diagnostics.png"] if records else [])
        diag_summary = {"written_to": written if out_dir is not None else [],
                        "per_example_gradients": int(sum(r.get("batch_examples", 0)
                                                         for r in records)),
                        "training_shots": int(training_shots)}
        if private and (opt.ledger.extra or {}).get("clipping", {}).get("mode") == "certified":
            diag_summary["certified_clip_binding"] = int(sum(
                r.get("certified_bound_violations", 0) for r in records))
    if private:
        opt.ledger.extra_update({"shots_per_circuit": shots, "device": device,
                                 "shot_sampling": sampling})
    if metrics and metrics[-1].get("test_balanced_accuracy") is not None:
        final_acc, final_bal = metrics[-1]["test_accuracy"], metrics[-1]["test_balanced_accuracy"]
    else:  # no epoch ran (or a checkpoint written before balanced accuracy was recorded)
        eval_model.load_state_dict(model.state_dict())
        final_acc, final_bal, _ = _evaluate(eval_model, x_test, y_test)
    rate = majority_rate(data.y_test)
    stuck = majority_class_warning(final_acc, rate, final_bal, data.n_classes)
    if stuck is not None:
        warnings.warn(stuck, UserWarning, stacklevel=2)
    result = TrainResult(
        test_accuracy=final_acc, test_balanced_accuracy=final_bal, test_majority_rate=rate,
        test_examples=int(len(data.y_test)), majority_warning=stuck,
        epsilon=opt.ledger.epsilon if private else math.inf,
        credited_epsilon=opt.ledger.credited_epsilon if private else math.inf,
        steps=opt.ledger.steps if private else last * len(train_loader),
        statement=(opt.ledger.statement(diagnostics=diag_summary) if private else
                   "Non-private baseline: no differential privacy guarantee."),
        metrics=metrics, step_records=records,
        weights=model.qlayer.weights.detach().numpy().copy(),
        output_dir=str(out_dir) if out_dir else None, stopped_early=stopped,
        shots=shots, training_shots=training_shots, device=device,
        n_classes=data.n_classes, label_mapping=data.label_mapping_text(),
        diagnostics=diag_summary,
    )
    if out_dir is not None:
        write_outputs(result, opt.ledger if private else None, out_dir,
                      diagnostics=config.diagnostics, credit=config.credit != "none")
        if config.diagnostics:
            _write_json(out_dir / "diagnostics.json", _diagnostics_document(
                metrics, records, opt.ledger if private else None, data, summary=diag_summary))
    return result


def _write_json(path: Path, obj) -> None:
    """Write ``obj`` as JSON atomically (temporary file, then rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(_plain(obj), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _merge(public: list, diagnostic: list, key: str) -> list:
    """Join public rows with their diagnostics rows (same ``key``) for a resumed run."""
    extra = {d[key]: d for d in diagnostic if key in d}
    return [{**row, **extra.get(row.get(key), {})} for row in public]


def _diagnostics_document(metrics, records, ledger, data, summary=None) -> dict:
    """``diagnostics.json``: everything computed from the private batches (NOT protected)."""
    doc = {"NOT_PROTECTED": NOT_PROTECTED,
           "per_step": [diagnostic_record(r) for r in records],
           "per_epoch": [diagnostic_record(m, PUBLIC_EPOCH_FIELDS) for m in metrics],
           "training_data_sha256": _training_data_sha256(data)}
    if ledger is not None and ledger.credit_mode != "none":
        doc["credited_history"] = [list(h) for h in ledger.credited_history]
        doc["credited_epsilon"] = ledger.credited_epsilon
    if summary is not None:
        doc["summary"] = {k: v for k, v in summary.items() if k != "written_to"}
    return doc


def _write_checkpoint(out_dir: Path, *, config, epoch, model, sgd, opt, metrics, records):
    """``checkpoint.pt``: tensors and built-in containers only, nothing from the private batches.

    The model and optimizer state (functions of the released noisy gradients), the public
    ledger state (:func:`public_ledger_state`), the clip norm, and the public per-epoch and
    per-step fields; the data-dependent fields are in ``diagnostics.json`` (with
    ``diagnostics=True``) and are read back from there on resume.
    """
    torch.save({"format": CHECKPOINT_FORMAT, "config": dataclasses.asdict(config),
                "epoch": epoch, "model": model.state_dict(), "optimizer": sgd.state_dict(),
                "ledger": public_ledger_state(opt.ledger) if opt is not None else None,
                "clip_norm": _plain(opt.max_grad_norm) if opt is not None else None,
                "metrics": _plain([public_record(m, PUBLIC_EPOCH_FIELDS) for m in metrics]),
                "step_records": _plain([public_record(r) for r in records])},
               out_dir / "checkpoint.pt")


def _read_checkpoint(out_dir: Path | None, config) -> tuple[dict, dict | None]:
    """Load ``checkpoint.pt`` with ``weights_only=True`` and check it matches ``config``.

    Returns:
        tuple: the checkpoint and, with ``config.diagnostics``, ``diagnostics.json``.

    Raises:
        ValueError: no checkpoint; a checkpoint holding anything but tensors and built-in
            containers (a pickled object could run code: refused, never executed); an
            unreadable one; settings that differ from the interrupted run.
    """
    import pickle
    import re

    path = None if out_dir is None else out_dir / "checkpoint.pt"
    if path is None or not path.exists():
        raise ValueError(f"--resume needs a checkpoint in `output_dir`. Found none in "
                         f"{out_dir}.")
    try:
        ckpt = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+)", str(err))  # torch names the refused callable
        if found:
            raise ValueError(
                f"--resume refused {path}: it holds pickled objects other than tensors and "
                f"built-in containers, and loading them could run arbitrary code (it names "
                f"{found.group(1)}). qshiftdp train never writes such a checkpoint (it may have "
                f"been replaced or tampered with); it was not loaded. Start a new run in a new "
                f"--output-dir.") from None
        raise ValueError(f"--resume: the checkpoint {path} cannot be read (corrupt or "
                         f"truncated?): {type(err).__name__}: {err}") from err
    except Exception as err:  # any unreadable file is reported the same way
        raise ValueError(f"--resume: the checkpoint {path} cannot be read (corrupt or "
                         f"truncated?): {type(err).__name__}: {err}") from err
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("config"), dict) or any(
            k not in ckpt for k in ("epoch", "model", "optimizer", "ledger", "metrics",
                                    "step_records")):
        raise ValueError(f"--resume: the checkpoint {path} cannot be read (corrupt or "
                         f"truncated?): not a qshiftdp train checkpoint.")
    saved, now = ckpt["config"], dataclasses.asdict(config)
    differ = [f"--{k.replace('_', '-')}: {saved.get(k)!r} (interrupted run) vs "
              f"{now.get(k)!r} (now)" for k in sorted(set(saved) | set(now))
              if saved.get(k) != now.get(k) and k != "output_dir"]  # a moved run resumes
    if differ:
        raise ValueError("--resume needs the same settings as the interrupted run; these "
                         "differ: " + "; ".join(differ) + ".")
    diag = None
    if config.diagnostics:
        try:
            diag = json.loads((out_dir / "diagnostics.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"--resume with --diagnostics needs the interrupted run's "
                             f"{out_dir / 'diagnostics.json'}: {type(err).__name__}: "
                             f"{err}") from err
    return ckpt, diag


def write_outputs(result: TrainResult, ledger: PrivacyLedger | None, out_dir: Path, *,
                  diagnostics: bool = False, credit: bool = False) -> None:
    """Ledger JSON, privacy statement, metrics CSV/JSON and PNG plots into ``out_dir``.

    Nothing written here is computed from the private batches unless ``diagnostics``: the
    ledger state is :func:`public_ledger_state`, the step and epoch records are restricted to
    :data:`PUBLIC_STEP_FIELDS` and :data:`PUBLIC_EPOCH_FIELDS` (:func:`public_record`), and the
    plots show only those. With ``diagnostics`` a ``diagnostics.png`` is added (the job writes
    ``diagnostics.json`` itself), and the credited ε is plotted.

    Args:
        result: the :class:`TrainResult`.
        ledger: the run's ledger, or ``None`` for the non-private baseline.
        out_dir: the output directory (created if needed).
        diagnostics: also write the data-dependent diagnostics plot.
        credit: a shot-noise credit mode was on (the credited ε is plotted with
            ``diagnostics``).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    if ledger is not None:
        _write_json(out_dir / "ledger.json", public_ledger_state(ledger))
    (out_dir / "privacy_statement.txt").write_text(result.statement + "\n", encoding="utf-8")
    records = [public_record(r) for r in result.step_records]
    epochs = [public_record(m, PUBLIC_EPOCH_FIELDS) for m in result.metrics]
    _write_json(out_dir / "metrics.json", {
        "protected": "every value here is data-independent (step counts, the proven ε, the "
                     "noise added, the clip norm) or computed from the released weights "
                     "(test-split metrics); data-dependent diagnostics are only ever in "
                     "diagnostics.json",
        "test_split": {"examples": result.test_examples, "note": TEST_SPLIT_NOTE},
        "test_accuracy": result.test_accuracy,
        "test_balanced_accuracy": result.test_balanced_accuracy,
        "test_majority_rate": result.test_majority_rate,
        "majority_class_warning": result.majority_warning, "epsilon": result.epsilon,
        "steps": result.steps, "shots_per_circuit": result.shots, "device": result.device,
        "per_epoch": epochs, "per_step": records, "diagnostics": diagnostics,
        "stopped_early": result.stopped_early})
    if epochs:
        with open(out_dir / "metrics.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(PUBLIC_EPOCH_FIELDS))
            writer.writeheader()
            writer.writerows(epochs)
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    steps_at_epoch = [m["steps"] or 0 for m in epochs]
    k = max(result.n_classes, 2)
    ax[0].plot(steps_at_epoch, [m["test_accuracy"] for m in epochs], "o-",
               label="test accuracy")
    if any(m.get("test_balanced_accuracy") is not None for m in epochs):
        ax[0].plot(steps_at_epoch, [m.get("test_balanced_accuracy") for m in epochs], "s--",
                   ms=4, label="test balanced accuracy")
    if math.isfinite(result.test_majority_rate):  # what always answering one class scores
        ax[0].axhline(result.test_majority_rate, ls="-.", c="grey",
                      label=f"majority class of the test split ({result.test_majority_rate:.3f})")
    ax[0].axhline(1.0 / k, ls=":", c="silver",
                  label=f"1/{k} (balanced accuracy of any constant answer)")
    ax[0].set(xlabel="steps", ylabel="accuracy on the held-out test split",
              title="Test accuracy", ylim=(0, 1.02))
    ax[0].legend(fontsize=7, loc="lower right")
    losses = [(st, m.get("test_loss")) for st, m in zip(steps_at_epoch, epochs, strict=True)
              if m.get("test_loss") is not None]
    if losses:
        ax[1].plot(*zip(*losses, strict=True), "o-")
    ax[1].set(xlabel="steps", ylabel="mean test loss", title="Test loss (held-out split)")
    if records:
        steps = [r["step"] for r in records]
        ax[2].plot(steps, [r["epsilon"] for r in records],
                   label="proven ε (noise actually added)")
        if credit and diagnostics:  # the credited ε is computed from the private batches
            ax[2].plot(steps, [r.get("credited_epsilon") for r in result.step_records], "--",
                       label="credited ε (Gaussian approximation; NOT protected)")
        ax[2].legend(fontsize=7)
    else:
        ax[2].text(0.5, 0.5, "non-private run: ε = ∞", ha="center", va="center",
                   transform=ax[2].transAxes)
    ax[2].set(xlabel="steps", ylabel="ε spent (nats)", title="Privacy spent")
    fig.tight_layout()
    fig.savefig(out_dir / "accuracy_epsilon.png", dpi=100)
    plt.close(fig)
    # The noise plot only where it carries information: the added variance changes between
    # steps (a clip norm that follows the weights or the quantile, or a credit mode); with the
    # certified clip it is the constant σ²C² printed in the statement.
    noise = (out_dir / "noise.png")
    variances = [r["artificial_variance_mean"] for r in records
                 if r.get("artificial_variance_mean") is not None]
    if variances and max(variances) - min(variances) > 1e-12 * max(variances):
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([r["step"] for r in records if r.get("artificial_variance_mean") is not None],
                variances, "o-", ms=3, label="Gaussian noise added (mean per coordinate)")
        ax.axhline(records[0]["target_variance"], ls="--", c="k", label="σ²C² (planned)")
        ax.set_ylim(0, 1.1 * max(max(variances), records[0]["target_variance"]))
        ax.legend(fontsize=7, loc="lower right")
        ax.set(xlabel="step", ylabel="variance per coordinate", title="Noise added per step")
        fig.tight_layout()
        fig.savefig(noise, dpi=100)
        plt.close(fig)
    elif noise.exists():
        noise.unlink()  # a resumed run that no longer varies: no stale plot
    if diagnostics and result.step_records:
        _diagnostics_figure(result.step_records, out_dir / "diagnostics.png", plt)


def _diagnostics_figure(records, path, plt) -> None:
    """σ_t, clipping, shot variance and its bound, credited share, SNR, ε (private data!)."""
    s = [r["step"] for r in records]
    fig, ax = plt.subplots(2, 3, figsize=(13, 7))
    ax[0, 0].plot(s, [r["proven_noise_multiplier"] for r in records], label="proven σ_t")
    ax[0, 0].plot(s, [r["credited_noise_multiplier"] for r in records], "--",
                  label="credited σ_t")
    ax[0, 0].set(title="noise multiplier", xlabel="step")
    ax[0, 0].legend(fontsize=7)
    ax[0, 1].plot(s, [r["clip_norm"] for r in records], label="clip norm C")
    ax2 = ax[0, 1].twinx()
    ax2.plot(s, [r["clipped_fraction"] for r in records], "r.", label="fraction clipped")
    ax[0, 1].set(title="clipping", xlabel="step")
    ax[0, 2].plot(s, [r["shot_variance_estimate_mean"] for r in records], label="estimate")
    ax[0, 2].plot(s, [r["shot_variance_lower_bound_mean"] for r in records], "--",
                  label="lower bound")
    ax[0, 2].set(title="shot-noise variance per coordinate (mean)", xlabel="step")
    ax[0, 2].legend(fontsize=7)
    target = np.array([r["target_variance"] for r in records])
    ax[1, 0].plot(s, 100 * np.array([r["credited_variance_mean"] for r in records]) / target)
    ax[1, 0].set(title="credited share of σ²C² (%)", xlabel="step")
    ax[1, 1].plot(s, [r["gradient_snr"] for r in records])
    ax[1, 1].set(title="gradient signal-to-noise ratio ‖ΣCLIP(g)‖/‖z‖", xlabel="step")
    ax[1, 2].plot(s, [r["epsilon"] for r in records], label="proven ε")
    ax[1, 2].plot(s, [r["credited_epsilon"] for r in records], "--", label="credited ε")
    ax[1, 2].set(title="ε spent (nats)", xlabel="step")
    ax[1, 2].legend(fontsize=7)
    fig.suptitle("Diagnostics computed from the private batches: NOT protected")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
