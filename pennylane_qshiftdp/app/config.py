r"""The settings of ``qshiftdp train`` (:class:`TrainConfig`), importable without torch.

Part of the application: ``qshiftdp --help`` builds its parser from these defaults without
importing torch, PennyLane or Opacus. :mod:`pennylane_qshiftdp.app.job` re-exports the class.
"""

from __future__ import annotations

import dataclasses
import math

__all__ = ["TrainConfig", "check_input_center", "flag_name", "saved_settings"]


@dataclasses.dataclass
class TrainConfig:
    """Settings of ``qshiftdp train`` (defaults: digits 0 vs 1, ε = 1, δ = 1e-5)."""

    dataset: str = "digits"
    csv_path: str | None = None
    label_column: str | None = None
    preprocessing: str = "fixed"
    epsilon: float = 1.0  # math.inf: non-private baseline (same loader, no noise)
    delta: float = 1e-5
    # "auto" (here and below): chosen per task family by app.defaults.resolve_settings from the
    # data's public shape (training examples, classes), never from feature values
    epochs: int | str = "auto"
    expected_batch_size: int | str = "auto"
    shots: int | str | None = 1000  # "auto": the fewest shots adding ≤ 1 % of the DP variance
    device: str = "auto"  # "auto": default.qubit (lightning from 10 qubits, device sampling)
    eval_shots: int | None = None  # shots for test accuracy; None: analytic (simulators)
    shot_sampling: str = "auto"  # "exact_law" on simulators ("auto"), "device" otherwise
    layers: int | str = "auto"  # quantum/hybrid: 2 StronglyEntanglingLayers
    qubits: int | str = "auto"  # quantum/hybrid: 4; neuron: its number of outputs
    lr: float | str = "auto"
    # "auto": "linear" (quantum) or "logistic" (neuron) for two classes, "cross_entropy"
    # (softmax of logit_scale × the K readouts) for K >= 3; or "linear", "mse", "logistic"
    # (two classes), "cross_entropy" (K >= 3)
    loss: str = "auto"
    # s of the logits s·f (cross-entropy, logistic; Δ and the clip bounds grow linearly in s).
    # "auto": 5 (cross-entropy: with outputs in [-1, 1] a small s keeps the softmax near
    # uniform); the neuron's logistic loss 20 with noise, 10 without
    logit_scale: float | str = "auto"
    # model="neuron": the public centre c (radians) of its input angles, a = W(x - c) + b.
    # "auto": pi/2 (the middle of the angle range); 1.0 for breast_cancer through its shipped
    # ranges (app.defaults.SHIPPED_CENTERS)
    input_center: float | str = "auto"
    credit: str = "none"
    beta: float = 0.0
    depolarizing: float = 0.0  # device noise: PennyLane DepolarizingChannel q (default.mixed)
    variance_floor: float | None = None  # None: proven from the device noise (certify_device)
    accountant: str = "pld"  # accountants.DEFAULT_ACCOUNTANT (a test checks they agree)
    adjacency: str = "add_remove"
    seed: int = 0  # data split and initialisation; with secure_mode=False also shot sampling,
    # Poisson sampling and DP noise (repeatable: not for release)
    secure_mode: bool = True  # DP noise, Poisson and shot sampling from the OS's CSPRNG
    init_scale: float = 0.01
    output_dir: str | None = None
    test_size: float = 0.25
    # "auto": "public" (the largest gradient norm over the input domain at the current weights,
    # no data used), or "certified" (the a-priori Δ) with a shot-noise credit or a hybrid model;
    # or "public", "certified", "adaptive", a float (DP-SGD).
    # model="neuron": "auto" is a fixed clip norm (0.3 for two classes, 1.0 for more).
    max_grad_norm: str | float = "auto"
    # "auto": "quantum" for digits with two classes (or with --credit, --depolarizing,
    # --shots auto, an explicit --layers or --qubits), "neuron" otherwise (app.defaults); or
    # "quantum", "hybrid" (Linear -> angles -> TorchLayer -> Linear), "neuron" (Linear on all
    # features -> one qubit per output: QuantumNeuronClassifier)
    model: str = "auto"
    classical_max_grad_norm: float = 1.0  # clip norm of a hybrid model's classical layers
    proven_epsilon_factor: float = 1.5  # credit modes: proven ε <= factor × target ε
    # a (negative, positive) pair (binary), a list of >= 3 classes or "all" (labels 0..K-1);
    # None: the data set's default (digits, breast_cancer: (0, 1); iris, wine, csv: all)
    classes: tuple | list | str | None = None
    # declared raw feature ranges for preprocessing="fixed": (lo, hi) for all columns or one
    # pair per column; None: the shipped defaults (iris, wine, breast_cancer)
    feature_range: tuple | list | None = None
    diagnostics: bool = False  # write per-step statistics of the private batches (not protected)
    # a qiskit_ibm_runtime.fake_provider backend (e.g. "FakeManilaV2") whose noise model
    # qiskit.aer applies (NoiseModel.from_backend); needs device="qiskit.aer"
    noise_model: str | None = None
    # per-step shot budget of the shifted circuits, split over them ∝ |shift coefficient|
    # (sampling.allocation); None: every circuit has `shots`
    shot_budget: int | None = None
    # refuse a plan whose expected total shots / circuits exceed these (before any circuit runs)
    max_shots: int | None = None
    max_circuits: int | None = None


#: The ``qshiftdp train`` flags of the :class:`TrainConfig` fields not set by ``--<field>``.
_FLAG_NAMES = {
    "csv_path": "--csv",
    "expected_batch_size": "--batch-size",
    "secure_mode": "--seeded-noise (its opposite)",
    "init_scale": "init_scale (no flag; the Python API's TrainConfig)",
}


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
    return _FLAG_NAMES.get(field, "--" + field.replace("_", "-"))
