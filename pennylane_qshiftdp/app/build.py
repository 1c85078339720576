r"""The build phase's pieces of ``qshiftdp train``: device, shots, loss and model factory.

:class:`~.run.TrainingRun` builds its run from these (:meth:`~.run.TrainingRun.build`):
``"auto"`` resolved to a device (:func:`resolve_device`) and its options
(:func:`device_options`), the shots (``shots="auto"`` planned against the DP noise), the loss
(:func:`make_loss`) and fresh models (:func:`model_factory`); and what a run records of its
settings (the resolved settings, the ledger's provenance, the checkpoint's ``task``).
:mod:`.job` re-exports the public names (they lived there).
"""

from __future__ import annotations

import math

import torch

from ..losses import LinearLoss, LogisticLoss, MSELoss, SoftmaxCrossEntropyLoss
from .checks import check_loss
from .config import TrainConfig

__all__ = ["AUTO_SHOTS_FRACTION", "LIGHTNING_QUBITS", "LIGHTNING_QUBITS_DEVICE_SAMPLING",
           "RESOLVED_SETTINGS", "device_options", "make_loss", "model_factory",
           "resolve_device", "task_record"]


#: From this many qubits on, ``device="auto"`` picks lightning.qubit for exact-law sampling (the
#: job's default with shots) and analytic training: never, within ``MAX_QUBITS``. Both
#: devices' exact-law and analytic circuits run on the same batched state-vector kernels
#: (``sampling.exact_law.simulates_with_kernels``), so lightning gains nothing there
#: (benchmarks/RESULTS.md §12: its exact-law step 0.98 and 1.00 times default.qubit's at 4 and 8
#: qubits, alternated).
LIGHTNING_QUBITS = 15

#: The same crossover with the device's own sampling (``shot_sampling="device"``), where
#: default.qubit runs each shifted tape through PennyLane (RESULTS.md §12: 2.40 s against
#: lightning.qubit's 1.94 s at 10 qubits).
LIGHTNING_QUBITS_DEVICE_SAMPLING = 10



#: Simulators on which ``shot_sampling="auto"`` draws shot estimates from the exact law.
_EXACT_LAW_DEVICES = ("default.qubit", "lightning.qubit", "default.mixed")


#: ``shots="auto"``: the shot noise of a step adds at most this fraction of the DP noise variance.
AUTO_SHOTS_FRACTION = 0.01


#: PennyLane's simulators, on which the test metrics are computed analytically (``eval_shots``
#: ``None``); on any other training device they are computed on default.qubit (the noiseless
#: circuit), so no evaluation circuit runs on hardware unless ``eval_shots`` is given.
_SIMULATORS = ("default.qubit", "lightning.qubit", "lightning.gpu", "lightning.kokkos",
               "default.mixed")


def evaluation_device(config, device: str) -> str:
    """The device of the test metrics: the training ``device`` if it is one of PennyLane's
    simulators or ``eval_shots`` is given, else default.qubit (the noiseless circuit)."""
    return device if config.eval_shots is not None or device in _SIMULATORS \
        else "default.qubit"


def device_options(config, device: str) -> dict:
    """Keyword arguments of the training device: the noise model of ``config.noise_model``
    for qiskit.aer (:func:`~.noise_spec.load_noise_model`: a backend of
    ``qiskit_ibm_runtime.fake_provider``, read offline, or ``MODULE:NAME`` naming a Qiskit Aer
    ``NoiseModel``).

    Raises:
        ValueError: for a noise model on another device, without pennylane-qiskit, naming no
            fake backend (the message lists a few) or no Qiskit Aer noise model, or a backend
            with fewer qubits than the model.
    """
    name = config.noise_model
    if name is None:
        return {}
    if device != "qiskit.aer":
        raise ValueError(f"`noise_model` is a noise model of Qiskit's simulator; it needs "
                         f"device='qiskit.aer'. Found device={device!r}.")
    from .noise_spec import is_qiskit_noise_model, load_noise_model

    wires = config.qubits if isinstance(config.qubits, int) else 1
    model = load_noise_model(name, qubits=wires)  # the same forms as `qshiftdp certify`
    if not is_qiskit_noise_model(model):
        raise ValueError(f"--noise-model {name!r} names a PennyLane NoiseModel; training "
                         f"simulates a Qiskit Aer NoiseModel (or a fake backend's) on "
                         f"device='qiskit.aer'. `qshiftdp certify` takes both.")
    return {"noise_model": model}


def noise_model_text(name: str) -> str:
    """The ledger's description of ``--noise-model name``."""
    from .noise_spec import is_fake_backend_name

    if is_fake_backend_name(name):
        return f"{name} (qiskit_ibm_runtime.fake_provider; qiskit_aer NoiseModel.from_backend)"
    return f"{name} (a Qiskit Aer NoiseModel)"


def shot_sampling(config, device: str, shots) -> str:
    """``shot_sampling``: ``"auto"`` means exact-law draws on the simulators that support them."""
    mode = config.shot_sampling
    if mode not in ("auto", "exact_law", "device"):
        raise ValueError(f"`shot_sampling` must be 'auto', 'exact_law' or 'device'. Found "
                         f"{mode!r}.")
    if mode == "auto":
        mode = "exact_law" if shots is not None and device in _EXACT_LAW_DEVICES else "device"
    return mode


def resolve_device(config) -> str:
    """The device name for ``config.device`` (``"auto"`` picks by size and device noise; the
    neuron model's circuits have one qubit each, so default.qubit whatever its outputs)."""
    if config.device != "auto":
        return config.device
    if config.depolarizing > 0:
        return "default.mixed"
    if config.model == "neuron" or not isinstance(config.qubits, int):
        return "default.qubit"
    crossover = LIGHTNING_QUBITS_DEVICE_SAMPLING if config.shot_sampling == "device" \
        else LIGHTNING_QUBITS
    return "lightning.qubit" if config.qubits >= crossover else "default.qubit"


def certified_sensitivity(config, model_cls, data, loss_fn):
    """The certified a-priori bound (:func:`~pennylane_qshiftdp.sensitivity`) of
    the job's model at its initial weights, analytically on default.qubit."""
    from ..gradients.sensitivity_bound import sensitivity

    probe = model_cls(config.qubits, config.layers, device="default.qubit", shots=None,
                      init_seed=config.seed, n_classes=data.n_classes)
    weights = probe.qlayer.weights.detach().double().requires_grad_(True)
    return sensitivity(probe.qnode, inputs=torch.zeros(config.qubits, dtype=torch.float64),
                       weights=weights, loss=loss_fn)


def auto_shots(config, model_cls, data, loss_fn) -> int:
    """``shots="auto"``: plan Ns from σ, the clip norm and the certified per-weight bounds."""
    from ..accountants.calibration import calibrate_noise_multiplier, epochs_to_steps, plan_shots

    if not math.isfinite(config.epsilon):
        raise ValueError("`shots`='auto' plans the shots against the DP noise and needs a "
                         "finite `epsilon`.")
    sens = certified_sensitivity(config, model_cls, data, loss_fn)
    n = len(data.y_train)
    q = 1.0 / math.ceil(n / config.expected_batch_size)
    sigma = calibrate_noise_multiplier(target_epsilon=config.epsilon, target_delta=config.delta,
                                       sample_rate=q, steps=epochs_to_steps(
                                           epochs=config.epochs, sample_rate=q),
                                       accountant=config.accountant)
    clip = (float(config.max_grad_norm) if not isinstance(config.max_grad_norm, str)
            else sens.delta)  # public/adaptive start at most at Δ: planning at Δ is safe
    v1 = (sens.loss_grad_bounds[0] * float(sens.per_weight.max())) ** 2
    # the public divisor B: at least the expected batch q·n, since q = 1/⌈n/B⌉
    return plan_shots(per_example_shot_variance=v1, noise_multiplier=sigma, clip_norm=clip,
                      expected_batch_size=config.expected_batch_size,
                      fraction=AUTO_SHOTS_FRACTION)


#: The settings a run resolves from "auto" (recorded in its outputs).
RESOLVED_SETTINGS = ("model", "qubits", "layers", "lr", "epochs", "expected_batch_size", "loss",
                     "logit_scale", "input_center", "max_grad_norm")


def resolved_settings(config) -> dict:
    """The resolved settings that act on the run: no logit scale for a loss without logits,
    no clip norm without privacy (the non-private baseline does not clip), an input centre
    only for the neuron model."""
    skip = set()
    if config.model != "neuron":
        skip.add("input_center")
    if config.loss not in ("logistic", "cross_entropy"):
        skip.add("logit_scale")
    if not math.isfinite(config.epsilon):
        skip.add("max_grad_norm")
    return {k: getattr(config, k) for k in RESOLVED_SETTINGS if k not in skip}


def provenance(data, config) -> dict:
    """Command line, data set name, size and label mapping (ledger provenance; no data hash)."""
    import sys

    return {"command_line": list(sys.argv), "dataset": data.name,
            "settings": resolved_settings(config),
            "training_examples": int(len(data.y_train)),
            "n_classes": data.n_classes, "label_mapping": data.label_mapping_text(),
            "feature_ranges": [list(r) for r in data.feature_ranges] or None}


def task_record(data, config) -> dict:
    """What a finished run's model needs to read new data (the checkpoint's ``task``): the
    data set, its raw columns, the preprocessing and its declared ranges, the classes."""
    return {"dataset": data.name, "preprocessing": config.preprocessing,
            "raw_feature_names": list(data.raw_feature_names),
            "n_features": int(data.n_features),
            "feature_ranges": [list(map(float, r)) for r in data.feature_ranges],
            "classes": [c if isinstance(c, (str, int, float)) else str(c) for c in data.classes],
            "class_names": [str(n) for n in data.class_names]}


def make_loss(name: str, n_classes: int, logit_scale: float = 5.0):
    r"""The job's loss for ``name`` and the number of classes.

    Args:
        name: ``"auto"`` (``"linear"`` for two classes, ``"cross_entropy"`` for more),
            ``"linear"``, ``"mse"``, ``"logistic"`` (two classes), or ``"cross_entropy"``
            (three or more).
        n_classes: number of classes :math:`K \ge 2`.
        logit_scale: :math:`s > 0` of :class:`~.SoftmaxCrossEntropyLoss` and
            :class:`~.LogisticLoss` (logits :math:`s f`).

    Returns:
        BoundedLoss: the loss.

    Raises:
        ValueError: for an unknown ``name`` or one that does not fit ``n_classes``.

    Example:
        >>> make_loss("auto", 3).name, make_loss("auto", 2).name
        ('softmax cross-entropy', 'linear loss')
    """
    name = check_loss(name, n_classes)
    if name == "cross_entropy":
        return SoftmaxCrossEntropyLoss(logit_scale=logit_scale)
    if name == "logistic":
        return LogisticLoss(logit_scale=logit_scale)
    return LinearLoss() if name == "linear" else MSELoss(target_bound=1.0)


def model_factory(config: TrainConfig, data, model_cls: type, device: str,
                  options: dict | None = None):
    """``make(shots, seed, recorder=None, device=device)``: a fresh model of ``config.model``
    for ``data`` (``model_cls`` for the quantum and hybrid models), on ``device`` with the
    device ``options`` (only on ``device`` itself: another device gets none)."""
    from .models import QuantumNeuronClassifier

    default = device

    def opts(name):
        return options if name == default else None

    if config.model == "neuron":
        def make_neuron(shots, seed, recorder=None, device=default):
            return QuantumNeuronClassifier(data.n_features, data.n_classes, device=device,
                                           shots=shots, seed=seed, recorder=recorder,
                                           init_scale=config.init_scale, init_seed=config.seed,
                                           device_options=opts(device),
                                           input_center=config.input_center)
        return make_neuron

    def make(shots, seed, recorder=None, device=default):
        return model_cls(config.qubits, config.layers, device=device, shots=shots, seed=seed,
                         recorder=recorder, init_scale=config.init_scale, init_seed=config.seed,
                         depolarizing=config.depolarizing, n_classes=data.n_classes,
                         device_options=opts(device))
    return make


def check_job_limits(config) -> None:
    """``max_shots`` / ``max_circuits``: positive integers (or ``None``).

    Raises:
        ValueError: for another value (the message names the setting).
    """
    for name in ("max_shots", "max_circuits"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"`{name}` must be a positive integer. Found {value!r}.")


def apply_job_limits(config, model) -> None:
    """``--max-circuits`` / ``--max-shots`` per job as well as in total: the batched Qiskit
    route splits a batch above either into several jobs."""
    from ..hardware import set_job_limits

    check_job_limits(config)
    set_job_limits(model, max_circuits=config.max_circuits, max_shots=config.max_shots)


def qpu_backend(config):
    """The backend whose target durations give the plan's QPU time: the fake backend whose
    noise model qiskit.aer simulates (``--noise-model FakeManilaV2``), else ``None``."""
    from .noise_spec import is_fake_backend_name

    name = config.noise_model
    if name is None or not is_fake_backend_name(name):
        return None
    from qiskit_ibm_runtime import fake_provider

    return getattr(fake_provider, name)()


def training_device(config, model):
    """The device the job trains on (the neuron model's outputs share one)."""
    return model.device if config.model == "neuron" else model.qlayer.qnode.device


def expected_batch(config, n: int) -> float:
    """qN with Opacus's rate q = 1/ceil(N/B) (what make_private and the loader use)."""
    return n / math.ceil(n / config.expected_batch_size)


def apply_shot_budget(config, model, data, shots) -> None:
    """``shot_budget``: shots per step for the shifted circuits, split over the expected batch
    (make_private sets the same and records the split in the ledger)."""
    from ..sampling.allocation import set_step_shot_budget

    if shots is None:
        raise ValueError("`shot_budget` splits finite shots over the shifted circuits; the run "
                         "is analytic (shots 0). Give --shots.")
    set_step_shot_budget(model, config.shot_budget,
                         expected_batch_size=expected_batch(config, len(data.y_train)))
