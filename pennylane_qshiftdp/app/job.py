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

import dataclasses
import itertools
import math
import os
import secrets
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from opacus.data_loader import DPDataLoader

from .. import _compat
from ..exceptions import PrivacyBudgetExceededError, PrivacyWarning
from ..grad_sample import ignore_output_hook_warning
from ..gradients.shot_statistics import ShotRecorder
from ..losses import LinearLoss, LogisticLoss, MSELoss, SoftmaxCrossEntropyLoss
from ..optimizers.diagnosis import stuck_run_cause
from ..privacy_engine import make_private
from .checks import MAX_QUBITS as MAX_QUBITS  # re-exported: the job's qubit limit
from .checks import check_classes_fit, check_loss, check_train_config
from .config import TrainConfig
from .interrupt import deferred_interrupt
from .metrics import clipping_cause, evaluate, majority_class_warning, majority_rate
from .outputs import (
    diagnostics_document,
    merge_diagnostics,
    read_checkpoint,
    write_checkpoint,
    write_json,
    write_outputs,
)
from .plan import Plan, check_plan, probe_step_seconds, steps_left
from .records import PUBLIC_EPOCH_FIELDS, public_record
from .result import TrainResult as TrainResult  # re-exported: it lived here
from .resume_check import check_same_data, data_facts, write_resume_check

__all__ = ["COST_NOTE", "TrainConfig", "TrainResult", "TrainingInterrupted", "device_options",
           "dry_run", "make_loss", "train"]


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`train` after a whole step; the outputs of the steps taken are
    written (ledger, statement, metrics, a checkpoint that ``resume=True`` continues).

    Attributes:
        result: the :class:`TrainResult` of the steps taken (``interrupted=True``).
    """

    def __init__(self, result: TrainResult):
        super().__init__(f"training interrupted after {result.steps} steps")
        self.result = result


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


def _noise_model_text(name: str) -> str:
    """The ledger's description of ``--noise-model name``."""
    from .noise_spec import is_fake_backend_name

    if is_fake_backend_name(name):
        return f"{name} (qiskit_ibm_runtime.fake_provider; qiskit_aer NoiseModel.from_backend)"
    return f"{name} (a Qiskit Aer NoiseModel)"


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


def _certified_sensitivity(config, model_cls, data, loss_fn):
    """The certified a-priori bound (:func:`~pennylane_qshiftdp.sensitivity`) of
    the job's model at its initial weights, analytically on default.qubit."""
    from ..gradients.sensitivity_bound import sensitivity

    probe = model_cls(config.qubits, config.layers, device="default.qubit", shots=None,
                      init_seed=config.seed, n_classes=data.n_classes)
    weights = probe.qlayer.weights.detach().double().requires_grad_(True)
    return sensitivity(probe.qnode, inputs=torch.zeros(config.qubits, dtype=torch.float64),
                       weights=weights, loss=loss_fn)


def _auto_shots(config, model_cls, data, loss_fn) -> int:
    """``shots="auto"``: plan Ns from σ, the clip norm and the certified per-weight bounds."""
    from ..accountants.calibration import calibrate_noise_multiplier, epochs_to_steps, plan_shots

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
    # the public divisor B: at least the expected batch q·n, since q = 1/⌈n/B⌉
    return plan_shots(per_example_shot_variance=v1, noise_multiplier=sigma, clip_norm=clip,
                      expected_batch_size=config.expected_batch_size,
                      fraction=AUTO_SHOTS_FRACTION)


#: The settings a run resolves from "auto" (recorded in its outputs).
RESOLVED_SETTINGS = ("model", "qubits", "layers", "lr", "epochs", "expected_batch_size", "loss",
                     "logit_scale", "input_center", "max_grad_norm")


def _settings(config) -> dict:
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


def _provenance(data, config) -> dict:
    """Command line, data set name, size and label mapping (ledger provenance; no data hash)."""
    import sys

    return {"command_line": list(sys.argv), "dataset": data.name, "settings": _settings(config),
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


def _seed_for(seed, epoch, stream):
    return int(np.random.SeedSequence([seed, epoch, stream]).generate_state(1, np.uint64)[0]
               % (2**63))


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



@dataclasses.dataclass
class _Job:
    """Everything one run of the job holds: data, models, optimizer, loaders, outputs."""

    config: TrainConfig
    data: object
    loss_fn: object
    model_cls: type
    model: torch.nn.Module
    eval_model: torch.nn.Module
    sgd: torch.optim.Optimizer
    shots: int | None
    device: str
    sampling: str
    recorder: ShotRecorder | None
    private: bool
    pmodel: torch.nn.Module = None
    opt: object = None
    train_loader: object = None
    noise_gen: torch.Generator | None = None
    sampler_gen: torch.Generator | None = None
    out_dir: Path | None = None
    start_epoch: int = 0
    metrics: list = dataclasses.field(default_factory=list)
    records: list = dataclasses.field(default_factory=list)
    training_shots: int = 0
    stopped: str | None = None
    epoch: int = 0  # the epoch being trained
    make: object = None  # make(shots, seed, recorder=None): a fresh model (the plan's probe)
    # steps of epoch `start_epoch` taken before an interruption (a resumed run takes the rest)
    resume_offset: int = 0
    resume_rngs: dict | None = None  # seeded runs: the generators' states at the interruption
    step_in_epoch: int = 0  # steps of the current epoch taken so far
    interrupt: object = None  # the deferred-SIGINT flag of the training loop
    interrupted: bool = False
    eval_device: str | None = None
    estimate: object = None  # the cost plan (cost.CostEstimate)
    meter: object = None  # the measured cost (cost.CostMeter)
    facts: dict | None = None  # N, q, B, ranges, preprocessing (resume_check.data_facts)

    @property
    def ledger(self):
        return self.opt.ledger if self.private else None


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
        def make(shots, seed, recorder=None, device=default):
            return QuantumNeuronClassifier(data.n_features, data.n_classes, device=device,
                                           shots=shots, seed=seed, recorder=recorder,
                                           init_scale=config.init_scale, init_seed=config.seed,
                                           device_options=opts(device),
                                           input_center=config.input_center)
        return make

    def make(shots, seed, recorder=None, device=default):
        return model_cls(config.qubits, config.layers, device=device, shots=shots, seed=seed,
                         recorder=recorder, init_scale=config.init_scale, init_seed=config.seed,
                         depolarizing=config.depolarizing, n_classes=data.n_classes,
                         device_options=opts(device))
    return make


def _build(config: TrainConfig) -> _Job:
    """Data set, settings ("auto" resolved), loss, models (trained, evaluated), shots, SGD."""
    from .data import load_dataset
    from .defaults import feature_count, resolve_model, resolve_settings
    from .models import HybridClassifier, QuantumClassifier

    model_name = resolve_model(config)
    data = load_dataset(config.dataset, n_features=feature_count(config, model_name),
                        seed=config.seed, test_size=config.test_size,
                        preprocessing=config.preprocessing, csv_path=config.csv_path,
                        label_column=config.label_column, classes=config.classes,
                        feature_range=config.feature_range)
    config = resolve_settings(config, model_name, n_train=len(data.y_train),
                              n_classes=data.n_classes)
    if math.isnan(config.epsilon):
        raise ValueError("`epsilon` must be a positive number or inf (no noise). Found nan.")
    if isinstance(config.lr, str) or not (math.isfinite(config.lr) and config.lr > 0):
        raise ValueError(f"`lr` must be positive and finite (or 'auto'). Found {config.lr!r}.")
    model_cls = QuantumClassifier if config.model != "hybrid" else HybridClassifier
    check_classes_fit(config, config.model, data.n_classes)  # a CSV's classes: known only now
    loss_fn = make_loss(config.loss, data.n_classes, config.logit_scale)
    shots = config.shots
    if shots == "auto":
        shots = _auto_shots(config, model_cls, data, loss_fn)
    elif isinstance(shots, str):
        raise ValueError(f"`shots` must be a positive integer, None or 'auto'. Found {shots!r}.")
    device = resolve_device(config)
    make = model_factory(config, data, model_cls, device, device_options(config, device))
    if config.credit != "none" and shots is not None and shots < 30:
        warnings.warn(f"credit={config.credit!r} with shots={shots}: crediting treats "
                      f"each sample mean as Gaussian (central limit theorem), which is a poor "
                      f"approximation for so few shots.", PrivacyWarning, stacklevel=3)
    recorder = ShotRecorder() if config.credit != "none" else None
    if config.diagnostics:
        warnings.warn("diagnostics=True writes per-step statistics of the private training "
                      "batches (batch sizes, clipped fractions, shot variances, gradient "
                      "signal-to-noise ratio, credited ε) to diagnostics.json and "
                      "diagnostics.png; they are NOT covered by the differential-privacy "
                      "guarantee. Do not publish them.", PrivacyWarning, stacklevel=3)
    model = make(shots, _seed_for(config.seed, 0, 0), recorder)
    if shots is not None and _compat.device_rng(_training_device(config, model)) is None \
            and config.credit != "none":
        raise ValueError(
            f"`credit`={config.credit!r} counts shot noise as privacy noise; device {device!r} "
            f"samples its shots with a generator the job cannot seed or reseed (from the OS's "
            f"CSPRNG in secure mode), so its shot noise is not credited. Use --credit none.")
    sampling = _shot_sampling(config, device, shots)
    if sampling != "device":
        from ..sampling import set_shot_sampling

        set_shot_sampling(model, sampling)
    if config.shot_budget is not None:
        _apply_shot_budget(config, model, data, shots)
    if (config.max_circuits is not None or config.max_shots is not None) \
            and device.startswith("qiskit."):
        _apply_job_limits(config, model)
    eval_device = device if config.eval_shots is not None or device in _SIMULATORS \
        else "default.qubit"
    eval_model = make(config.eval_shots, _seed_for(config.seed, 0, 4), device=eval_device)
    sgd = torch.optim.SGD(model.parameters(), lr=config.lr)
    return _Job(config, data, loss_fn, model_cls, model, eval_model, sgd, shots, device,
                sampling, recorder, private=math.isfinite(config.epsilon), make=make,
                eval_device=eval_device)


def _apply_job_limits(config, model) -> None:
    """``--max-circuits`` / ``--max-shots`` per job as well as in total: the batched Qiskit
    route splits a batch above either into several jobs."""
    from ..hardware import set_job_limits

    for name in ("max_shots", "max_circuits"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"`{name}` must be a positive integer. Found {value!r}.")
    set_job_limits(model, max_circuits=config.max_circuits, max_shots=config.max_shots)


def _qpu_backend(config):
    """The backend whose target durations give the plan's QPU time: the fake backend whose
    noise model qiskit.aer simulates (``--noise-model FakeManilaV2``), else ``None``."""
    from .noise_spec import is_fake_backend_name

    name = config.noise_model
    if name is None or not is_fake_backend_name(name):
        return None
    from qiskit_ibm_runtime import fake_provider

    return getattr(fake_provider, name)()


def _training_device(config, model):
    """The device the job trains on (the neuron model's outputs share one)."""
    return model.device if config.model == "neuron" else model.qlayer.qnode.device


def _expected_batch_size(config, n: int) -> float:
    """qN with Opacus's rate q = 1/ceil(N/B) (what make_private and the loader use)."""
    return n / math.ceil(n / config.expected_batch_size)


def _apply_shot_budget(config, model, data, shots) -> None:
    """``shot_budget``: shots per step for the shifted circuits, split over the expected batch
    (make_private sets the same and records the split in the ledger)."""
    from ..sampling.allocation import set_step_shot_budget

    if shots is None:
        raise ValueError("`shot_budget` splits finite shots over the shifted circuits; the run "
                         "is analytic (shots 0). Give --shots.")
    set_step_shot_budget(model, config.shot_budget,
                         expected_batch_size=_expected_batch_size(config, len(data.y_train)))


def _clip_mode(job: _Job):
    """``max_grad_norm``: ``"auto"`` is the public clip for the quantum model and the certified
    one with a credit mode or a hybrid model; a float above Δ warns."""
    config = job.config
    clip_mode = config.max_grad_norm
    if clip_mode == "auto":
        clip_mode = ("certified" if config.credit != "none" or config.model == "hybrid"
                     else "public")
    if job.private and config.model == "quantum" and not isinstance(clip_mode, str):
        delta = _certified_sensitivity(config, job.model_cls, job.data, job.loss_fn).delta
        if float(clip_mode) > delta:
            warnings.warn(
                f"--max-grad-norm {clip_mode} is above the certified bound Δ = {delta:.6g} of "
                f"every per-example gradient: the clip never binds, and the noise σC is "
                f"{float(clip_mode) / delta:.3g} times what --max-grad-norm certified adds for "
                f"the same clipping.", UserWarning, stacklevel=4)
    return clip_mode


def _variance_floor(job: _Job) -> float:
    """The proven variance floor of the device noise, or the one the user declared."""
    config = job.config
    floor = (job.model.variance_floor() if config.variance_floor is None
             else config.variance_floor)
    if config.variance_floor is not None and config.credit != "none":
        warnings.warn(f"variance_floor={config.variance_floor} is declared by you, not proven "
                      f"from device noise; the privacy statement says so.", PrivacyWarning,
                      stacklevel=4)
    if config.credit == "depolarizing" and floor == 0.0:
        warnings.warn("credit='depolarizing' with no proven variance floor (no device "
                      "depolarizing noise): no shot noise is credited.", PrivacyWarning,
                      stacklevel=4)
    return floor


def _make_private(job: _Job, loader, private_hook) -> None:
    """``make_private`` on the job's model (or the non-private baseline's loader)."""
    config, data = job.config, job.data
    clip_mode = _clip_mode(job)
    floor = _variance_floor(job)
    if not job.private:
        job.pmodel, job.opt = job.model, job.sgd
        job.sampler_gen = torch.Generator()
        job.train_loader = DPDataLoader.from_data_loader(loader, generator=job.sampler_gen)
        return
    hybrid = config.model == "hybrid"
    job.pmodel, job.opt, job.train_loader = make_private(
        job.model, job.sgd, loader, target_epsilon=config.epsilon, target_delta=config.delta,
        epochs=config.epochs,
        loss=job.loss_fn if clip_mode in ("certified", "public") else None,
        max_grad_norm=clip_mode,
        input_range=(0.0, math.pi) if clip_mode == "public" else None,
        classical_max_grad_norm=config.classical_max_grad_norm if hybrid else None,
        proven_epsilon_factor=config.proven_epsilon_factor,
        credit=config.credit, beta=config.beta,
        adjacency=config.adjacency, accountant=config.accountant,
        variance_floor=floor, recorder=job.recorder,
        variance_floor_source="proven" if config.variance_floor is None else "declared",
        seed=None if config.secure_mode else config.seed, secure_mode=config.secure_mode,
        preprocessing_note=data.preprocessing_note, shot_budget=config.shot_budget,
    )
    ledger = job.opt.ledger
    ledger.extra_update({"provenance": {**(ledger.extra or {}).get("provenance", {}),
                                        **_provenance(data, config)}})
    if job.shots is not None and _compat.device_rng(_training_device(config, job.model)) \
            is not None:
        randomness = ledger.extra.get("randomness", "").rstrip(".")
        ledger.extra_update({"randomness": randomness + (
            "; the simulator's shot sampling reseeded from the OS's CSPRNG (secrets) every "
            "epoch" if config.secure_mode else
            "; the simulator's shot sampling seeded from the public --seed (an adversary "
            "who knows it can reproduce the shot noise: a credited ε then holds only "
            "against one who does not)") + "."})
    if data.preprocessing and (config.preprocessing == "fixed"
                               or not data.data_dependent_preprocessing):
        # the feature map, when it is data-independent (a label set read from a CSV is
        # reported apart, by the preprocessing note)
        ledger.extra_update({"preprocessing": data.preprocessing})
    job.noise_gen, job.sampler_gen = job.opt.generator, job.train_loader.batch_sampler.generator
    if private_hook is not None:
        private_hook(job.pmodel, job.opt, job.train_loader)


def _open_output_dir(job: _Job, resume: bool) -> None:
    """Check the output directory before training (never overwrite a ledger)."""
    config = job.config
    out_dir = Path(config.output_dir) if config.output_dir else None
    job.out_dir = out_dir
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


def _resume(job: _Job) -> None:
    """Restore the model, optimizer, ledger and records of an interrupted run."""
    def check_data(ckpt, settings_differ):  # before anything is restored or trained
        check_same_data(job.out_dir, ckpt, job.data, job.facts,
                        settings_differ=settings_differ)

    ckpt, diag = read_checkpoint(job.out_dir, job.config, check_data)
    job.model.load_state_dict(ckpt["model"])
    job.records = [public_record(r) for r in ckpt["step_records"]]
    job.metrics = [public_record(m, PUBLIC_EPOCH_FIELDS) for m in ckpt["metrics"]]
    if diag is not None:  # the data-dependent part, NOT protected, from diagnostics.json
        job.records = merge_diagnostics(job.records, diag.get("per_step", []), "step")
        job.metrics = merge_diagnostics(job.metrics, diag.get("per_epoch", []), "epoch")
        job.training_shots = (int(job.metrics[-1].get("training_shots", 0)) if job.metrics
                              else 0)
    if job.private:
        ledger_state = ckpt["ledger"]
        if diag is not None and diag.get("credited_history") is not None:
            ledger_state = {**ledger_state, "credited_history": diag["credited_history"]}
        saved_q = ledger_state.get("sample_rate")
        if saved_q is not None and float(saved_q) != job.facts["sample_rate"]:
            # check_same_data compared the checkpoint's own record; never record the ledger's
            # old q for new steps either
            raise ValueError(f"--resume: the run's ledger samples at q = {float(saved_q):.6g}, "
                             f"this run's loader at q = {job.facts['sample_rate']:.6g}; resume "
                             f"with the run's own training data and settings.")
        saved_b = ledger_state.get("expected_batch_size")
        if saved_b is not None and float(saved_b) != float(job.opt.expected_batch_size):
            raise ValueError(f"--resume: the run's ledger divides the noisy sum by b = "
                             f"{float(saved_b):g}, this configuration by "
                             f"{float(job.opt.expected_batch_size):g}; resume with the run's "
                             f"own settings.")
        job.opt.ledger.load_state_dict(ledger_state)
        # through the optimizer's own load_state_dict, so whatever it restores (clip norm,
        # history length for the public clip's refresh) is restored here too
        # the clip groups' norms too: the examples are clipped at those, and a run interrupted
        # between two refreshes of the public clip must not clip at make_private's initial one
        job.opt.load_state_dict({"optimizer": ckpt["optimizer"], "history": job.records,
                                 "max_grad_norm": ckpt["clip_norm"],
                                 "clip_norms": ckpt.get("clip_norms"), "generator": None,
                                 **(ckpt.get("released_running") or {})})
    else:
        job.sgd.load_state_dict(ckpt["optimizer"])
    job.start_epoch = ckpt["epoch"]
    job.resume_offset = int(ckpt.get("step_in_epoch") or 0)  # an interrupted epoch's steps
    job.resume_rngs = ckpt.get("rngs")


def _reseed(job: _Job, epoch: int, dev) -> None:
    """Per-epoch reseeding makes a seeded resumed run repeat the uninterrupted one exactly.

    In secure mode the shot noise comes from the OS's CSPRNG: a credit mode counts it as
    privacy noise, which a public seed would let anyone reproduce.
    """
    config = job.config
    if job.shots is not None and _compat.device_rng(dev) is not None:
        # a device without a numpy generator (hardware, qiskit.aer) samples with its own: not
        # seeded, and the statement's Randomness line says so (make_private)
        _compat.reseed_device(dev, secrets.randbits(128) if config.secure_mode
                              else [config.seed, epoch, 1])
    if not config.secure_mode:
        job.sampler_gen.manual_seed(_seed_for(config.seed, epoch, 2))
    if job.noise_gen is not None:
        job.noise_gen.manual_seed(_seed_for(config.seed, epoch, 3))


def _rng_states(job: _Job, dev) -> dict | None:
    """Seeded runs: the states of the sampler, noise and shot generators (for an exact resume
    of an interrupted epoch). Secure mode keeps none: its randomness is never repeated."""
    if job.config.secure_mode:
        return None
    states = {"sampler": job.sampler_gen.get_state()}
    if job.noise_gen is not None:
        states["noise"] = job.noise_gen.get_state()
    rng = _compat.device_rng(dev) if job.shots is not None else None
    if rng is not None:
        states["device"] = rng.bit_generator.state
    return states


def _restore_rngs(job: _Job, dev) -> None:
    """Continue an interrupted epoch: the seeded generators where they stopped; in secure mode
    fresh CSPRNG seeds (as every epoch gets)."""
    states = job.resume_rngs or {}
    if job.config.secure_mode or not states:
        _reseed(job, job.epoch, dev)
        return
    job.sampler_gen.set_state(states["sampler"])
    if job.noise_gen is not None and "noise" in states:
        job.noise_gen.set_state(states["noise"])
    rng = _compat.device_rng(dev) if job.shots is not None else None
    if rng is not None and "device" in states:
        rng.bit_generator.state = states["device"]


def _train_epoch(job: _Job, bar, skip: int = 0) -> None:
    """One pass over the Poisson loader (a private step per batch, empty ones included), each
    step's circuits, shots and device batches counted by the device's tracker; an interrupted
    epoch resumed after ``skip`` steps takes the rest. A Ctrl-C (deferred by
    :func:`~.interrupt.deferred_interrupt`) stops the loop after the step in progress."""
    config = job.config
    job.step_in_epoch = skip
    if job.interrupt is not None and job.interrupt.requested:
        job.interrupted = True
        return
    for xb, yb in itertools.islice(job.train_loader, max(0, len(job.train_loader) - skip)):
        with job.meter.step():
            job.opt.zero_grad()
            if job.private:
                if xb.shape[0]:  # an empty Poisson batch still gets a (noise-only) step
                    with ignore_output_hook_warning():
                        job.loss_fn(job.pmodel(xb), yb).mean().backward()
                try:
                    job.opt.step()
                except PrivacyBudgetExceededError as err:  # checked before the step
                    job.stopped = str(err)
                    return
                job.records.append(dict(job.opt.last_record, epoch=job.epoch + 1))
            else:
                if xb.shape[0]:
                    job.loss_fn(job.model(xb), yb).sum().div(
                        config.expected_batch_size).backward()
                    job.sgd.step()
        job.training_shots += job.meter.records[-1]["shots"]
        job.step_in_epoch += 1
        bar.update(1)
        bar.set_postfix_str(_shots_text(job), refresh=False)
        if job.interrupt is not None and job.interrupt.requested:
            job.interrupted = True
            return


def _shots_text(job: _Job) -> str:
    """The progress bar's shots: measured with ``diagnostics`` (they grow with the private
    batch sizes), otherwise the plan's for the steps done (public)."""
    if job.shots is None:
        return "analytic"
    if job.config.diagnostics:
        return f"shots {job.training_shots:,}"
    planned = job.estimate.shots_per_step * len(job.meter.records)
    return f"shots ≈ {planned:,.0f} (planned)"


def _run_epochs(job: _Job, last: int, progress: bool, x_test, y_test) -> None:
    """Train epochs ``start_epoch..last``, evaluating and checkpointing after each; on a
    Ctrl-C, checkpoint the steps taken (mid-epoch) and stop."""
    from tqdm.auto import tqdm

    config = job.config
    dev = _training_device(config, job.model)  # the neuron's outputs share one device
    bar = tqdm(total=max(0, len(job.train_loader) * (last - job.start_epoch) - job.resume_offset),
               disable=not progress, desc="qshiftdp train")
    t0 = time.perf_counter()
    for epoch in range(job.start_epoch, last):
        job.epoch = epoch
        skip = job.resume_offset if epoch == job.start_epoch else 0
        if skip:
            _restore_rngs(job, dev)
        else:
            _reseed(job, epoch, dev)
        # each step counted by the device's tracker (exact-law sampling executes
        # analytically: the shots are those its draws stand for)
        _train_epoch(job, bar, skip)
        if job.interrupted:
            if job.out_dir is not None and job.step_in_epoch:  # else: the epoch's checkpoint
                write_checkpoint(job.out_dir, config=config, epoch=epoch, model=job.model,
                                 sgd=job.sgd, opt=job.opt if job.private else None,
                                 metrics=job.metrics, records=job.records,
                                 step_in_epoch=job.step_in_epoch, rngs=_rng_states(job, dev),
                                 task=task_record(job.data, config), data=job.facts)
            break
        job.eval_model.load_state_dict(job.model.state_dict())
        acc, balanced, test_loss = evaluate(job.eval_model, x_test, y_test, job.loss_fn)
        ledger = job.ledger
        row = {"epoch": epoch + 1,
               "steps": len(job.records) if job.private else (epoch + 1) * len(job.train_loader),
               "epsilon": ledger.epsilon if ledger else math.inf,
               "credited_epsilon": ledger.credited_epsilon if ledger else math.inf,
               "test_accuracy": acc, "test_balanced_accuracy": balanced,
               "test_loss": test_loss, "training_shots": job.training_shots,
               "elapsed_s": time.perf_counter() - t0}
        job.metrics.append(row)
        bar.set_postfix(acc=f"{acc:.3f}", eps=f"{row['epsilon']:.3f}")
        if job.out_dir is not None:  # created (and checked) before training
            write_checkpoint(job.out_dir, config=config, epoch=epoch + 1, model=job.model,
                             sgd=job.sgd, opt=job.opt if job.private else None,
                             metrics=job.metrics, records=job.records,
                             task=task_record(job.data, config), data=job.facts)
        if job.out_dir is not None and config.diagnostics:
            write_json(job.out_dir / "diagnostics.json", diagnostics_document(
                job.metrics, job.records, ledger, job.data))
        if job.stopped:
            break
    if job.interrupted and job.out_dir is not None and config.diagnostics:
        write_json(job.out_dir / "diagnostics.json", diagnostics_document(
            job.metrics, job.records, job.ledger, job.data))
    bar.close()


def _diagnostics_summary(job: _Job) -> dict | None:
    """What the statement reports from the private batches with ``--diagnostics``."""
    if not job.config.diagnostics:
        return None
    records = job.records
    written = ["diagnostics.json"] + (["diagnostics.png"] if records else [])
    summary = {"written_to": written if job.out_dir is not None else [],
               "per_example_gradients": int(sum(r.get("batch_examples", 0) for r in records)),
               "training_shots": int(job.training_shots)}
    if job.private and (job.ledger.extra or {}).get("clipping", {}).get("mode") == "certified":
        summary["certified_clip_binding"] = int(sum(
            r.get("certified_bound_violations", 0) for r in records))
    return summary


def _result(job: _Job, last: int, x_test, y_test) -> TrainResult:
    """The final test metrics, the stuck-run warning and the statement."""
    data, ledger = job.data, job.ledger
    summary = _diagnostics_summary(job)
    if ledger is not None:
        ledger.extra_update({"shots_per_circuit": job.shots, "device": job.device,
                             "shot_sampling": job.sampling}
                            | ({"noise_model": _noise_model_text(job.config.noise_model)}
                               if job.config.noise_model else {}))
    metrics = job.metrics
    mid_epoch = job.interrupted and job.step_in_epoch > 0  # the weights moved since metrics[-1]
    if metrics and metrics[-1].get("test_balanced_accuracy") is not None and not mid_epoch:
        final_acc, final_bal = metrics[-1]["test_accuracy"], metrics[-1]["test_balanced_accuracy"]
    else:  # no epoch ran (or a checkpoint written before balanced accuracy was recorded)
        job.eval_model.load_state_dict(job.model.state_dict())
        final_acc, final_bal, _ = evaluate(job.eval_model, x_test, y_test)
    rate = majority_rate(data.y_test)
    cause = clipping_cause(data)  # from the held-out split only
    # else what the run released says (noisy sums and parameters: no privacy cost)
    train_cause = (stuck_run_cause(getattr(job.opt, "history", ()),
                                   batch_argument="--batch-size", lr_argument="--lr",
                                   epsilon_argument="--epsilon", clip_argument="--max-grad-norm",
                                   epochs_argument="--epochs",
                                   public_gradient_norm=getattr(job.opt, "public_gradient_norm",
                                                                None))
                   if ledger else None)
    stuck = majority_class_warning(final_acc, rate, final_bal, data.n_classes,
                                   history=[m["test_accuracy"] for m in metrics],
                                   cause=cause or train_cause)
    if stuck is not None:
        warnings.warn(stuck, UserWarning, stacklevel=3)
    feature_warning = None
    if cause is not None and stuck is None:
        feature_warning = f"the feature ranges clip the data: {cause}"
        warnings.warn(feature_warning, UserWarning, stacklevel=3)
    return TrainResult(
        test_accuracy=final_acc, test_balanced_accuracy=final_bal, test_majority_rate=rate,
        test_examples=int(len(data.y_test)), majority_warning=stuck,
        epsilon=ledger.epsilon if ledger else math.inf,
        credited_epsilon=ledger.credited_epsilon if ledger else math.inf,
        steps=ledger.steps if ledger else last * len(job.train_loader),
        statement=(ledger.statement(diagnostics=summary) if ledger else
                   "Non-private baseline: no differential privacy guarantee."),
        metrics=metrics, step_records=job.records,
        weights=_trained_weights(job),
        output_dir=str(job.out_dir) if job.out_dir else None, stopped_early=job.stopped,
        shots=job.shots, training_shots=job.training_shots, device=job.device,
        n_classes=data.n_classes, label_mapping=data.label_mapping_text(),
        diagnostics=summary, settings=_settings(job.config),
        planned_steps=len(job.train_loader) * job.config.epochs,
        interrupted=job.interrupted, feature_warning=feature_warning,
        eval_device=job.eval_device, cost=_cost_section(job),
    )


#: What metrics.json says of its "cost" key.
COST_NOTE = (
    "estimated: the plan, known before the run (public: the model, device, shots, expected "
    "batch size qN and steps; circuits and shots as the device's tracker counts them; an "
    "empty Poisson batch sends nothing); measured: what the devices' trackers counted in "
    "this run's steps (means per step and totals), which grow with the realised Poisson "
    "batch sizes: written only with --diagnostics, NOT protected by the privacy guarantee")


def _cost_section(job: _Job) -> dict:
    """metrics.json's ``"cost"``: the plan and, with diagnostics, the measured counts."""
    from ..cost import COST_KEYS

    estimated = job.estimate.as_dict() if job.estimate is not None else dict.fromkeys(COST_KEYS)
    measured = job.meter.summary() if job.config.diagnostics and job.meter is not None else None
    # who runs each quantum layer's circuits (the batched Qiskit route: one job per layer)
    route = ([f"{p.name or 'model'}: {p.cost.execution}" for p in job.estimate.layers]
             if job.estimate is not None else None)
    return {"estimated": estimated, "measured": measured, "route": route, "note": COST_NOTE}


def _plan(job: _Job, loader, *, probe: bool):
    """The run's cost plan (cost.estimate_cost on the job's model), refused over the budgets
    ``max_shots`` / ``max_circuits`` before any circuit runs (the plan depends on public
    quantities only, so the refusal does too)."""
    from ..cost import estimate_cost

    config = job.config
    for name in ("max_shots", "max_circuits"):
        value = getattr(config, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ValueError(f"`{name}` must be a positive integer. Found {value!r}.")
    qpu_backend = _qpu_backend(config)
    estimate = estimate_cost(job.model, loader, epochs=config.epochs, qpu_backend=qpu_backend)
    over = []
    if config.max_circuits is not None and estimate.total_circuits > config.max_circuits:
        over.append(f"{estimate.total_circuits:,.0f} circuits (--max-circuits "
                    f"{config.max_circuits:,})")
    if config.max_shots is not None and estimate.total_shots > config.max_shots:
        over.append(f"{estimate.total_shots:,.0f} shots (--max-shots {config.max_shots:,})")
    if over:
        raise ValueError(
            f"The planned run needs {' and '.join(over)}: {estimate.steps} steps of "
            f"{estimate.circuits_per_step:,.1f} circuits and {estimate.shots_per_step:,.0f} "
            f"shots each (expected batch {estimate.expected_batch_size:.4g}). Nothing was run. "
            f"Lower --epochs, --shots or --batch-size, or raise the budget.")
    if probe:
        estimate = estimate_cost(job.model, loader, epochs=config.epochs, probe=True,
                                 qpu_backend=qpu_backend)
    return estimate


def _loader(job: _Job):
    """The training loader make_private receives (Poisson sampling replaces its sampler)."""
    data, config = job.data, job.config
    x_train = torch.as_tensor(data.X_train, dtype=torch.float64)
    y_train = torch.as_tensor(data.y_train, dtype=torch.float64)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                       batch_size=config.expected_batch_size)


#: ``dry_run``'s probe batch: at most this many synthetic rows, the time scaled to qN.
DRY_RUN_PROBE_ROWS = 4


def dry_run(config: TrainConfig, *, probe: bool = True, report=None,
            probe_rows: int | None = DRY_RUN_PROBE_ROWS) -> dict:
    r"""What ``train(config)`` would cost, without training: ``qshiftdp train --dry-run``.

    The data set is loaded (for its size) and the model built, but nothing is trained and
    nothing is written (the output directory is not read either). The circuits are counted,
    not run (:func:`~pennylane_qshiftdp.cost.estimate_cost`); with ``probe`` one step of a
    synthetic batch (zero inputs, no training example) of at most ``probe_rows`` rows is run
    and timed on the training device, and the time scaled linearly to the expected batch.

    Args:
        config: the run's settings (``max_shots`` / ``max_circuits`` are checked).
        probe: time one step (runs its circuits on the device).
        report: ``report(line)`` receives one line per phase (the count as soon as it is
            known, then the probe's start and end); ``None``: silent.
        probe_rows: the probe's synthetic batch (``None``: the whole expected batch).

    Returns:
        dict: ``circuits_per_step``, ``shots_per_step``, ``device_batches_per_step``,
        ``steps``, ``total_circuits``, ``total_shots``, ``seconds_per_step``,
        ``total_seconds`` (the last two ``None`` without ``probe``).

    Raises:
        ValueError: for invalid settings, or a plan over ``max_shots`` / ``max_circuits``.
    """
    from ..cost import estimate_cost

    def say(line: str) -> None:
        if report is not None:
            report(line)

    say("dry run: loading the data set's shape and building the model (nothing is written)")
    job = _build(config)
    loader = _loader(job)
    plan = _plan(job, loader, probe=False)
    say(f"dry run: counted {plan.circuits_per_step:,.6g} circuits and "
        f"{plan.shots_per_step:,.6g} shots per step x {plan.steps} steps = "
        f"{plan.total_circuits:,.6g} circuits, {plan.total_shots:,.6g} shots "
        f"(expected batch {plan.expected_batch_size:.4g}; no circuit run)")
    if not probe:
        return plan.as_dict()
    expected = plan.expected_batch_size
    rows = max(1, round(expected)) if probe_rows is None else min(max(1, round(expected)),
                                                                 probe_rows)
    scale = max(1.0, expected / rows)
    per_row = plan.circuits_per_step / expected if expected else 0.0
    say(f"dry run: probe: one step on a synthetic batch of {rows} public rows (zeros, no "
        f"training example): about {per_row * rows:,.0f} circuits on {job.device}; its time "
        f"is scaled x{scale:.3g} to the expected batch {expected:.4g}")
    t0 = time.perf_counter()
    plan = estimate_cost(job.model, loader, epochs=job.config.epochs, probe=True,
                         probe_rows=rows, qpu_backend=_qpu_backend(job.config))
    say(f"dry run: probe done in {time.perf_counter() - t0:.1f} s: about "
        f"{plan.seconds_per_step:.3g} s per step, {plan.total_seconds:.3g} s in all")
    return plan.as_dict()


def _trained_weights(job: _Job) -> np.ndarray:
    if job.config.model == "neuron":
        return torch.cat([p.detach().reshape(-1).double()
                          for p in job.model.parameters()]).numpy().copy()
    return job.model.qlayer.weights.detach().numpy().copy()


def _probe_step(job: _Job):
    """``step(batch)``: one forward and backward pass of a fresh copy of the job's model on
    ``batch`` public inputs (the middle of the input domain; no training example)."""
    model = job.make(job.shots, 0)
    if job.sampling != "device":
        from ..sampling import set_shot_sampling

        set_shot_sampling(model, job.sampling)
    binary = job.data.n_classes == 2

    def step(batch: int) -> None:
        x = torch.full((batch, job.data.n_features), math.pi / 2, dtype=torch.float64)
        y = (torch.ones if binary else torch.zeros)(batch, dtype=torch.float64)
        model.zero_grad()
        job.loss_fn(model(x), y).mean().backward()

    return step


def _check_plan(job: _Job, last: int) -> None:
    """Refuse a plan whose noise or time is absurd (:mod:`.plan`), before its first step."""
    steps_per_epoch = len(job.train_loader)
    steps = steps_left(last, steps_per_epoch, start_epoch=job.start_epoch,
                       done_in_epoch=job.resume_offset)
    if steps == 0:
        return
    n_train = len(job.data.y_train)
    expected = (job.ledger.expected_batch_size if job.private
                and job.ledger.expected_batch_size else n_train / steps_per_epoch)
    sigma = job.ledger.noise_multiplier if job.private else None
    clip = job.opt.max_grad_norm if job.private else None
    plan = Plan(steps=steps, noise_multiplier=sigma, expected_batch_size=expected,
                clip_norm=float(clip) if isinstance(clip, (int, float)) else None,
                lr=float(job.config.lr))
    probe = _probe_step(job)  # two steps of public inputs: a time per step
    plan.seconds_per_step = probe_step_seconds(
        probe, batch=max(1, min(8, math.ceil(expected))), expected_batch_size=expected)
    check_plan(plan)


def _interruption_note(result: TrainResult) -> str:
    return (f"Interrupted (Ctrl-C) after {result.steps} of {result.planned_steps} planned "
            f"steps: this statement covers the steps taken, which are recorded in ledger.json "
            f"and checkpoint.pt; the same command with --resume (resume=True) continues the run "
            f"from there.")


def train(config: TrainConfig, *, progress: bool = True, resume: bool = False,
          stop_after_epochs: int | None = None, private_hook=None,
          skip_plan_check: bool = False) -> TrainResult:
    """Train the default quantum classifier privately; write ledger, metrics and plots.

    Settings that are wrong whatever the data hold are refused first, before any data are
    read (:func:`~.checks.check_train_config`); a plan whose noise or time is absurd is refused
    before its first step (:mod:`.plan`). A Ctrl-C (SIGINT) stops the run after the step in
    progress: the ledger, privacy statement, metrics and a checkpoint of the steps taken are
    written, then :class:`TrainingInterrupted` (a ``KeyboardInterrupt``) is raised; the same
    call with ``resume=True`` continues from that step. A second Ctrl-C aborts at once.

    Args:
        config: the :class:`TrainConfig`.
        progress: show a tqdm progress bar.
        resume: continue from ``config.output_dir``'s checkpoint (same config required).
        stop_after_epochs: stop after this many epochs in total (simulates an interruption).
        private_hook: ``None`` in normal use. A callable ``hook(model, optimizer, loader)``
            called once with what :func:`~pennylane_qshiftdp.make_private` returned, before the
            first step (private runs only): the seam through which
            :func:`~pennylane_qshiftdp.app.audit_run.audit_run` injects its gradient canaries
            into the job's own optimizer. Whatever it changes is outside the privacy guarantee.
        skip_plan_check: train even when the plan's σ or estimated time is above the
            thresholds of :mod:`.plan`.

    Returns:
        TrainResult: test accuracy, spent ε, the privacy statement, per-epoch metrics.

    Raises:
        ValueError: for a setting or plan that is refused (the message names it).
        TrainingInterrupted: after a Ctrl-C, once the outputs of the steps taken are written.
    """
    check_train_config(config, resume=resume)  # before any data is read or circuit built
    from ..cost import CostMeter

    job = _build(config)
    config, data = job.config, job.data
    x_test = torch.as_tensor(data.X_test, dtype=torch.float64)
    y_test = torch.as_tensor(data.y_test, dtype=torch.float64)
    loader = _loader(job)
    job.estimate = _plan(job, loader, probe=False)  # before any circuit runs
    job.meter = CostMeter(job.model, job.estimate.layers)
    _make_private(job, loader, private_hook)
    job.facts = data_facts(data, sample_rate=job.train_loader.sample_rate,
                           expected_batch_size=config.expected_batch_size)
    last = config.epochs if stop_after_epochs is None else min(config.epochs, stop_after_epochs)
    if not resume and not skip_plan_check:
        _check_plan(job, last)  # before the output directory is created
    _open_output_dir(job, resume)
    if job.out_dir is not None and not resume:  # the keyed digest of the rows (NOT protected)
        write_resume_check(job.out_dir, data)
    if resume:
        _resume(job)
        if not skip_plan_check:
            _check_plan(job, last)
    with deferred_interrupt("qshiftdp train") as job.interrupt:
        _run_epochs(job, last, progress, x_test, y_test)
        result = _result(job, last, x_test, y_test)
        if job.interrupted:
            result.statement += "\n" + _interruption_note(result)
        if job.out_dir is not None:
            write_outputs(result, job.ledger, job.out_dir, diagnostics=config.diagnostics,
                          credit=config.credit != "none")
            if config.diagnostics:
                write_json(job.out_dir / "diagnostics.json", diagnostics_document(
                    job.metrics, job.records, job.ledger, data, summary=result.diagnostics))
    if job.interrupted:
        raise TrainingInterrupted(result)
    return result
