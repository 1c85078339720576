r"""The settings of ``qshiftdp train`` (:class:`TrainConfig`), importable without torch.

Part of the application: each field set by a ``qshiftdp train`` flag is declared with
:func:`~.flags.flag`, so its default, help text, parser and choices are in one place, and
``qshiftdp --help`` builds its parser from them without importing torch, PennyLane or Opacus.
:mod:`pennylane_qshiftdp.app.job` re-exports the class.
"""

from __future__ import annotations

import dataclasses
import math

from .flags import (
    auto_or,
    flag,
    flag_of,
    parse_classes,
    parse_clip_norm,
    parse_feature_range,
    parse_shots,
    positive_int,
)
from .noise_spec import NOISE_MODEL_HELP, NOISE_MODEL_METAVAR, parse_noise_model

__all__ = ["ACCOUNTANT_CHOICES", "TrainConfig", "check_input_center", "flag_name",
           "saved_settings"]

#: ``--accountant`` choices: the accountants shipped (the keys of
#: ``accountants.registry.ACCOUNTANTS``; a test checks they agree). Any other name of Opacus's
#: registry is for the Python API (``make_private(accountant=...)``).
ACCOUNTANT_CHOICES = ("rdp", "prv", "pld")


@dataclasses.dataclass
class TrainConfig:
    """Settings of ``qshiftdp train`` (defaults: digits 0 vs 1, ε = 1, δ = 1e-5)."""

    dataset: str = flag("digits",
        help="digits, breast_cancer, iris, wine or csv (default: %(default)s)")
    csv_path: str | None = flag(None, "CSV file (with --dataset csv)", name="--csv")
    label_column: str | None = flag(None, "label column of the CSV file")
    preprocessing: str = flag("fixed",
        help="fixed (data-independent) or standardize_pca (default: %(default)s)")
    # math.inf: non-private baseline (same loader, no noise)
    epsilon: float = flag(1.0,
        help="target ε in nats; 'inf' trains without noise (default: %(default)s)",
        type=float)
    delta: float = flag(1e-5, "target δ (default: %(default)s)", type=float)
    # "auto" (here and below): chosen per task family by app.defaults.resolve_settings from the
    # data's public shape (training examples, classes), never from feature values
    epochs: int | str = flag("auto",
        help="'auto': 10 (quantum; neuron: 20 for two classes, else 10 below 1000 training "
        "examples and 8 from 1000 on; 40 or 20 without noise) (default: %(default)s)",
        type=auto_or(int))
    expected_batch_size: int | str = flag("auto",
        help="loader batch size B; as in Opacus, Poisson sampling uses q = 1/ceil(N/B), so the "
        "expected batch qN can be below B; 'auto': 64 (neuron: 128 from 1000 training "
        "examples on, 32 without noise) (default: %(default)s)",
        name="--batch-size", type=auto_or(positive_int))
    shots: int | str | None = flag(1000,
        help="shots per circuit Ns; 0 for analytic; 'auto' for the fewest shots whose noise adds "
        "at most 1 %% of the DP noise variance (default: %(default)s)",
        type=parse_shots)
    device: str = flag("auto",
        help="PennyLane device; 'auto' picks default.qubit (lightning.qubit from 10 qubits with "
        "--shot-sampling device; default.mixed with --depolarizing) (default: %(default)s)")
    eval_shots: int | None = flag(None,
        help="shots per circuit for the test accuracy (default: analytic on simulators; on "
        "hardware give a count)",
        type=int)
    shot_sampling: str = flag("auto",
        help="how shot estimates are drawn: exact_law draws each circuit's Ns-shot estimate from "
        "its exact outcome law (simulators; same distribution, much faster), device lets the "
        "device sample shot by shot; auto = exact_law on simulators (default: %(default)s)",
        choices=("auto", "exact_law", "device"))
    layers: int | str = flag("auto",
        help="StronglyEntanglingLayers of the quantum and hybrid models; 'auto': 2 (default: "
        "%(default)s)",
        type=auto_or(int))
    qubits: int | str = flag("auto",
        help="'auto': 4 (quantum, hybrid); the neuron model has one qubit per output (default: "
        "%(default)s)",
        type=auto_or(int))
    lr: float | str = flag("auto",
        help="SGD step; 'auto': 0.2 (quantum and hybrid, with or without noise); neuron 0.25 (two "
        "classes) or 0.3 (more), and without noise (--epsilon inf) 0.01 or 0.03 (default: "
        "%(default)s)",
        type=auto_or(float))
    # "auto": "linear" (quantum) or "logistic" (neuron) for two classes, "cross_entropy"
    # (softmax of logit_scale × the K readouts) for K >= 3; or "linear", "mse", "logistic"
    # (two classes), "cross_entropy" (K >= 3)
    loss: str = flag("auto",
        help="auto: linear (quantum) or logistic (neuron) for two classes, cross_entropy (softmax "
        "of the logits s·f over the K readouts) for three or more (default: %(default)s)",
        choices=("auto", "linear", "mse", "logistic", "cross_entropy"))
    # s of the logits s·f (cross-entropy, logistic; Δ and the clip bounds grow linearly in s).
    # "auto": 5 (cross-entropy: with outputs in [-1, 1] a small s keeps the softmax near
    # uniform); the neuron's logistic loss 20 with noise, 10 without
    logit_scale: float | str = flag("auto",
        help="s of the logits s·f of cross_entropy and logistic; the certified bound grows "
        "linearly in s; 'auto': 5 (the neuron's logistic loss: 20 with noise, 10 without) "
        "(default: %(default)s)",
        type=auto_or(float))
    # model="neuron": the public centre c (radians) of its input angles, a = W(x - c) + b.
    # "auto": pi/2 (the middle of the angle range); 1.0 for breast_cancer through its shipped
    # ranges (app.defaults.SHIPPED_CENTERS)
    input_center: float | str = flag("auto",
        help="neuron model: the public centre c (radians) of its input angles, a = W(x - c) + b; "
        "'auto': pi/2, 1.0 for breast_cancer (its shipped ranges) (default: %(default)s)",
        type=auto_or(float))
    credit: str = flag("none",
        help="shot-noise credit mode (default: %(default)s)",
        choices=("none", "depolarizing", "adaptive", "isotropic"))
    beta: float = flag(0.0,
        help="failure probability of the adaptive bound (reported as δ + β); required with "
        "--credit adaptive, in (0, 1), well below 1/N",
        type=float)
    depolarizing: float = flag(0.0,
        help="device noise: PennyLane DepolarizingChannel q on every qubit before measurement "
        "(D_p, p = 4q/3); needs --device default.mixed",
        type=float)
    variance_floor: float | None = flag(None,
        help="override the single-shot variance floor v_min (default: proven from the device "
        "noise by qprldp_core.certify_device)",
        type=float)
    # accountants.DEFAULT_ACCOUNTANT (a test checks they agree)
    accountant: str = flag("pld",
        help="accountant of σ and the proven ε: pld (dp-accounting's privacy loss distributions, "
        "pessimistic, registered with Opacus), rdp (Opacus) or prv (Opacus; slower) "
        "(default: %(default)s)",
        choices=ACCOUNTANT_CHOICES)
    adjacency: str = flag("add_remove",
        help="neighbouring data sets: add_remove (one example added or removed, Opacus's "
        "convention) or replace_one (one example replaced: the noise is calibrated for twice "
        "the clip norm) (default: %(default)s)",
        choices=("add_remove", "replace_one"))
    # data split and initialisation; with secure_mode=False also shot sampling,
    # Poisson sampling and DP noise (repeatable: not for release)
    seed: int = flag(0, "default: %(default)s", type=int)
    # DP noise, Poisson and shot sampling from the OS's CSPRNG (--seeded-noise: False)
    secure_mode: bool = flag(True,
        help="seed DP noise, Poisson sampling and the simulator's shot sampling from --seed so "
        "runs repeat exactly (research only: anyone who knows the seed can remove the noise, "
        "and a credited ε then counts shot noise they can reproduce). By default all three "
        "come from the OS's CSPRNG and --seed only fixes the data split and the "
        "initialisation",
        name="--seeded-noise", action="store_true", inverted=True)
    init_scale: float = 0.01
    output_dir: str | None = flag(None,
        help="where the ledger, metrics and plots go (default: %(default)s)",
        cli_default="runs/qshiftdp-train")
    test_size: float = flag(0.25,
        help="fraction of the examples held out for the test accuracy, in (0, 1) (stratified, "
        "seeded split) (default: %(default)s)",
        type=float)
    # "auto": "public" (the largest gradient norm over the input domain at the current weights,
    # no data used), or "certified" (the a-priori Δ) with a shot-noise credit or a hybrid model;
    # or "public", "certified", "adaptive", a float (DP-SGD).
    # model="neuron": "auto" is a fixed clip norm (0.3 for two classes, 1.0 for more).
    max_grad_norm: str | float = flag("auto",
        help="per-example clip norm: 'auto' (public; certified with a shot-noise credit or "
        "--model hybrid), 'certified' (the a-priori bound Δ of the parameter-shift gradient, "
        "never binds for the declared loss), 'public' (the largest analytic gradient norm "
        "found at 256 sampled points of the input domain [0, π], its centre and corners, at "
        "the current weights, recomputed every epoch; no data used; an estimate, so a clip "
        "may bind), 'adaptive' (quantile clipping) or a positive number (DP-SGD); with "
        "--model neuron 'auto' is 0.3 (two classes) or 1.0 (default: %(default)s)",
        type=parse_clip_norm)
    # "auto": "quantum" for digits with two classes (or with --credit, --depolarizing,
    # --shots auto, an explicit --layers or --qubits), "neuron" otherwise (app.defaults); or
    # "quantum", "hybrid" (Linear -> angles -> TorchLayer -> Linear), "neuron" (Linear on all
    # features -> one qubit per output: QuantumNeuronClassifier)
    model: str = flag("auto",
        help="quantum: angle embedding + StronglyEntanglingLayers, one TorchLayer; hybrid: Linear "
        "-> angles -> TorchLayer -> Linear; neuron: Linear on all features -> one qubit per "
        "output (RY, Rot, <Z>); auto: quantum for digits with two classes (and for --credit, "
        "--depolarizing, --shots auto, --layers, --qubits), neuron otherwise (default: "
        "%(default)s)",
        choices=("auto", "quantum", "hybrid", "neuron"))
    classical_max_grad_norm: float = flag(1.0,
        help="clip norm of the hybrid model's classical layers with --max-grad-norm certified "
        "(default: %(default)s)",
        type=float)
    proven_epsilon_factor: float = flag(1.5,
        help="with a credit mode, the artificial noise never drops below the level whose proven ε "
        "is this factor × --epsilon (default: %(default)s)",
        type=float)
    # a (negative, positive) pair (binary), a list of >= 3 classes or "all" (labels 0..K-1);
    # None: the data set's default (digits, breast_cancer: (0, 1); iris, wine, csv: all)
    classes: tuple | list | str | None = flag(None,
        help="two classes NEGATIVE,POSITIVE (binary, labels -1/+1; labels or names, e.g. 1,2 or "
        "versicolor,virginica), three or more A,B,C,... (labels 0..K-1 in this order), or "
        "'all' (every class, sorted); default: digits and breast_cancer 0,1; iris, wine and "
        "csv all",
        type=parse_classes)
    # declared raw feature ranges for preprocessing="fixed": (lo, hi) for all columns or one
    # pair per column; None: the shipped defaults (iris, wine, breast_cancer)
    feature_range: tuple | list | None = flag(None,
        help="declared raw feature ranges for --preprocessing fixed: LO:HI for every column or "
        "LO1:HI1,LO2:HI2,... one per column (from domain knowledge, never from the data; "
        "values outside are clipped; write --feature-range=-1:1 when LO is negative); "
        "default: shipped ranges for iris, wine and breast_cancer",
        type=parse_feature_range)
    diagnostics: bool = flag(False,
        help="also write what is computed from the private batches (batch sizes, fraction clipped "
        "and certified clips that bound, shot variance and its lower bound, credited share "
        "and credited ε, gradient signal-to-noise ratio, shots executed, wall time, a hash "
        "of the training data) to diagnostics.json and diagnostics.png, and report them in "
        "the statement; they are NOT protected by the guarantee. By default nothing written "
        "depends on the private batches",
        action="store_true")
    # a qiskit_ibm_runtime.fake_provider backend (e.g. "FakeManilaV2") whose noise model
    # qiskit.aer applies (NoiseModel.from_backend); needs device="qiskit.aer"
    noise_model: str | None = flag(None, NOISE_MODEL_HELP, type=parse_noise_model,
                                   metavar=NOISE_MODEL_METAVAR)
    # per-step shot budget of the shifted circuits, split over them ∝ |shift coefficient|
    # (sampling.allocation); None: every circuit has `shots`
    shot_budget: int | None = flag(None,
        help="shots per step for the parameter-shift circuits, split over the expected batch and "
        "over each example's shifted circuits in proportion to |shift coefficient| (recorded "
        "per circuit in the ledger); the forward circuit keeps --shots (default: every "
        "circuit has --shots)",
        type=positive_int, metavar="SHOTS")
    # refuse a plan whose expected total shots / circuits exceed these (before any circuit runs)
    max_shots: int | None = flag(None,
        help="refuse, before any circuit runs, a plan expecting more shots in all; on qiskit "
        "devices also the most shots of one job (a batch above it runs as several jobs)",
        type=positive_int)
    max_circuits: int | None = flag(None,
        help="refuse, before any circuit runs, a plan expecting more circuits in all; on qiskit "
        "devices also the most circuits of one job",
        type=positive_int)


def check_input_center(value, name: str = "input_center") -> float:
    """Check the neuron model's input centre: a real number of radians in [−π, 2π].

    The input angles lie in [0, π]; a centre more than π outside them only moves where training
    starts far away, and beyond about 1e16 float64 rounds the features away (x − c = −c).

    Returns:
        float: the value as a Python float.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if it is not finite or lies outside [−π, 2π] (the message names ``name``).

    Example:
        >>> check_input_center(1)
        1.0
    """
    from numbers import Real

    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"`{name}` must be a real number (radians). Found {value!r}.")
    x = float(value)
    if not -math.pi <= x <= 2 * math.pi:
        raise ValueError(f"`{name}` must be a finite number of radians in [-pi, 2*pi] (the "
                         f"input angles lie in [0, pi]). Found {value!r}.")
    return x


def saved_settings(saved: dict) -> dict:
    """A checkpoint's settings with the fields added since it was written filled in with what
    that run used: ``input_center`` π/2 for the neuron model (its only centre before the
    setting existed) and ``"auto"`` for the others (the setting does not apply to them).

    Example:
        >>> saved_settings({"model": "neuron"})["input_center"] == math.pi / 2
        True
        >>> saved_settings({"model": "quantum"})["input_center"]
        'auto'
    """
    out = dict(saved)
    if "input_center" not in out:
        out["input_center"] = math.pi / 2 if out.get("model") == "neuron" else "auto"
    return out


def flag_name(field: str) -> str:
    """The ``qshiftdp train`` flag that sets the :class:`TrainConfig` field ``field``.

    Example:
        >>> flag_name("expected_batch_size"), flag_name("epochs")
        ('--batch-size', '--epochs')
    """
    if field not in TrainConfig.__dataclass_fields__:
        return "--" + field.replace("_", "-")
    spec = flag_of(TrainConfig.__dataclass_fields__[field])
    if spec is None:
        return f"{field} (no flag; the Python API's TrainConfig)"
    return spec.option(field) + (" (its opposite)" if spec.inverted else "")
