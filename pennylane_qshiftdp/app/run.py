r"""One run of ``qshiftdp train`` as explicit phases: :class:`TrainingRun`.

:func:`~.job.train` and :func:`~.job.dry_run` drive it::

    run = TrainingRun(config).build().plan()      # dry_run stops here (and may probe a step)
    run.privatise(private_hook)                   # make_private
    run.check_plan(last)                          # σ and time not absurd
    run.open_outputs(resume)                      # --output-dir; --resume restores the run
    run.run_epochs(last, progress)                # the Opacus loop, evaluated per epoch
    result = run.finish(last)                     # TrainResult, ledger, statement, metrics

The loop of :meth:`TrainingRun.run_epochs` is the standard Opacus one::

    model, optimizer, loader = make_private(model, optimizer, loader, ...)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).mean().backward()
        optimizer.step()

Resume and the run's generators are :mod:`.resume`'s; the device, shots, loss and models
:mod:`.build`'s.
"""

from __future__ import annotations

import itertools
import math
import time
import warnings
from typing import TYPE_CHECKING, cast

import numpy as np
import torch
from opacus.data_loader import DPDataLoader

from .. import _compat
from ..exceptions import PrivacyBudgetExceededError, PrivacyWarning
from ..grad_sample import ignore_output_hook_warning
from ..gradients.shot_statistics import ShotRecorder
from ..optimizers.diagnosis import stuck_run_cause
from ..privacy_engine import make_private
from .build import (
    apply_job_limits,
    apply_shot_budget,
    auto_shots,
    certified_sensitivity,
    check_job_limits,
    device_options,
    evaluation_device,
    make_loss,
    model_factory,
    noise_model_text,
    provenance,
    qpu_backend,
    resolve_device,
    resolved_settings,
    shot_sampling,
    task_record,
    training_device,
)
from .checks import check_classes_fit
from .config import TrainConfig
from .defaults import resolved
from .metrics import clipping_cause, evaluate, majority_class_warning, majority_rate
from .outputs import diagnostics_document, write_checkpoint, write_json, write_outputs
from .plan import Plan, check_plan, probe_step_seconds, steps_left
from .result import TrainResult
from .resume import RunRandomness, open_output_dir, restore_run, seed_for
from .resume_check import data_facts, write_resume_check

if TYPE_CHECKING:
    from pathlib import Path

    from ..cost import CostEstimate, CostMeter
    from ..optimizers.optimizer import QShiftDPOptimizer
    from .interrupt import InterruptRequest

__all__ = ["COST_NOTE", "TrainingRun"]


#: What metrics.json says of its "cost" key.
COST_NOTE = (
    "estimated: the plan, known before the run (public: the model, device, shots, expected "
    "batch size qN and steps; circuits and shots as the device's tracker counts them; an "
    "empty Poisson batch sends nothing); measured: what the devices' trackers counted in "
    "this run's steps (means per step and totals), which grow with the realised Poisson "
    "batch sizes: written only with --diagnostics, NOT protected by the privacy guarantee")


class TrainingRun:
    """One run of the training job, phase by phase; each phase sets the attributes below.

    Every phase method returns the run (``TrainingRun(config).build().plan()``), but
    :meth:`finish`, which returns the :class:`~.result.TrainResult`. Warnings point at the
    caller of the phase's caller (:func:`~.job.train` or :func:`~.job.dry_run`): call the
    phases from there.

    * ``__init__``: ``config`` (as given), and the training state's starting values:
      ``records`` and ``metrics`` (empty), ``training_shots`` (0), ``start_epoch``,
      ``resume_offset``, ``epoch``, ``step_in_epoch`` (0), ``resume_rngs``, ``stopped``,
      ``interrupt``, ``out_dir`` (``None``), ``interrupted`` (``False``).
    * :meth:`build`: ``config`` ("auto" resolved), ``data``, ``loss_fn``, ``model_cls``,
      ``make`` (a fresh model: :func:`~.build.model_factory`), ``shots``, ``device``,
      ``sampling``, ``recorder``, ``model`` (trained), ``eval_model`` and ``eval_device``,
      ``sgd``, ``private``, ``loader`` (what make_private receives), ``x_test``, ``y_test``.
    * :meth:`plan`: ``estimate`` (the cost plan, refused over ``max_shots`` /
      ``max_circuits``).
    * :meth:`privatise`: ``meter`` (the measured cost), ``pmodel``, ``opt``, ``train_loader``
      (the Poisson loader), ``noise_gen``, ``sampler_gen``, ``facts``
      (:func:`~.resume_check.data_facts`).
    * :meth:`open_outputs`: ``out_dir``; with ``resume``: ``start_epoch``, ``resume_offset``,
      ``resume_rngs``, ``records``, ``metrics``, ``training_shots`` (the model, optimizer and
      ledger restored).
    * the caller: ``interrupt`` (the deferred-SIGINT request of the training loop).
    * :meth:`run_epochs`: ``epoch``, ``step_in_epoch``, ``records``, ``metrics``,
      ``training_shots``, ``stopped``, ``interrupted``.
    * :meth:`finish`: nothing (it writes the outputs).

    Args:
        config: the run's :class:`~.config.TrainConfig`.
    """

    # privatise's optimizer: the SGD itself (the baseline) or make_private's
    # QShiftDPOptimizer (read as such through _private_opt)
    opt: torch.optim.Optimizer

    def __init__(self, config: TrainConfig):
        self.config = config
        self.out_dir: Path | None = None
        self.start_epoch = 0
        self.resume_offset = 0  # steps of epoch `start_epoch` taken before an interruption
        self.resume_rngs: dict | None = None  # seeded runs: the generators' states then
        self.metrics: list = []
        self.records: list = []
        self.training_shots = 0
        self.stopped: str | None = None
        self.epoch = 0  # the epoch being trained
        self.step_in_epoch = 0  # steps of the current epoch taken so far
        self.interrupt: InterruptRequest | None = None
        self.interrupted = False
        self.estimate: CostEstimate | None = None
        self.meter: CostMeter | None = None

    @property
    def ledger(self):
        """The private optimizer's ledger (``None`` for the non-private baseline)."""
        return self.opt.ledger if self.private else None

    @property
    def _private_opt(self) -> QShiftDPOptimizer:
        """``opt`` of a private run: make_private's optimizer (typing only)."""
        return cast("QShiftDPOptimizer", self.opt)

    # -- build -----------------------------------------------------------------------------

    def build(self) -> TrainingRun:
        """Data set, settings ("auto" resolved), loss, models (trained, evaluated), shots, SGD.

        Raises:
            ValueError: for a setting the data set or device refuses (the message names it).
        """
        from .data import load_dataset
        from .defaults import feature_count, resolve_model, resolve_settings
        from .models import HybridClassifier, QuantumClassifier

        config = self.config
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
            raise ValueError(f"`lr` must be positive and finite (or 'auto'). Found "
                             f"{config.lr!r}.")
        model_cls = QuantumClassifier if config.model != "hybrid" else HybridClassifier
        check_classes_fit(config, config.model, data.n_classes)  # a CSV's classes: known now
        loss_fn = make_loss(config.loss, data.n_classes,
                            resolved(config.logit_scale, "logit_scale"))
        shots = config.shots
        if shots == "auto":
            shots = auto_shots(config, model_cls, data, loss_fn)
        elif isinstance(shots, str):
            raise ValueError(f"`shots` must be a positive integer, None or 'auto'. Found "
                             f"{shots!r}.")
        device = resolve_device(config)
        make = model_factory(config, data, model_cls, device, device_options(config, device))
        if config.credit != "none" and shots is not None and shots < 30:
            warnings.warn(f"credit={config.credit!r} with shots={shots}: crediting treats "
                          f"each sample mean as Gaussian (central limit theorem), which is a "
                          f"poor approximation for so few shots.", PrivacyWarning, stacklevel=3)
        recorder = ShotRecorder() if config.credit != "none" else None
        if config.diagnostics:
            warnings.warn("diagnostics=True writes per-step statistics of the private training "
                          "batches (batch sizes, clipped fractions, shot variances, gradient "
                          "signal-to-noise ratio, credited ε) to diagnostics.json and "
                          "diagnostics.png; they are NOT covered by the differential-privacy "
                          "guarantee. Do not publish them.", PrivacyWarning, stacklevel=3)
        self.config, self.data, self.loss_fn, self.model_cls = config, data, loss_fn, model_cls
        self.shots, self.device, self.make, self.recorder = shots, device, make, recorder
        self.model = make(shots, seed_for(config.seed, 0, 0), recorder)
        self._build_device()
        self.eval_device = evaluation_device(config, device)
        self.eval_model = make(config.eval_shots, seed_for(config.seed, 0, 4),
                               device=self.eval_device)
        self.sgd = torch.optim.SGD(self.model.parameters(), lr=config.lr)
        self.private = math.isfinite(config.epsilon)
        self._build_loader()
        return self

    def _build_device(self) -> None:
        """The training model's shot sampling, shot budget and per-job limits (``sampling``)."""
        config, model, shots, device = self.config, self.model, self.shots, self.device
        if shots is not None and _compat.device_rng(training_device(config, model)) is None \
                and config.credit != "none":
            raise ValueError(
                f"`credit`={config.credit!r} counts shot noise as privacy noise; device "
                f"{device!r} samples its shots with a generator the job cannot seed or reseed "
                f"(from the OS's CSPRNG in secure mode), so its shot noise is not credited. "
                f"Use --credit none.")
        self.sampling = shot_sampling(config, device, shots)
        if self.sampling != "device":
            from ..sampling import set_shot_sampling

            set_shot_sampling(model, self.sampling)
        if config.shot_budget is not None:
            apply_shot_budget(config, model, self.data, shots)
        if (config.max_circuits is not None or config.max_shots is not None) \
                and device.startswith("qiskit."):
            apply_job_limits(config, model)

    def _build_loader(self) -> None:
        """The training loader make_private receives (Poisson sampling replaces its sampler),
        and the held-out split's tensors."""
        data, config = self.data, self.config
        self.x_test = torch.as_tensor(data.X_test, dtype=torch.float64)
        self.y_test = torch.as_tensor(data.y_test, dtype=torch.float64)
        x_train = torch.as_tensor(data.X_train, dtype=torch.float64)
        y_train = torch.as_tensor(data.y_train, dtype=torch.float64)
        self.loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x_train, y_train),
            batch_size=resolved(config.expected_batch_size, "expected_batch_size"))

    # -- plan ------------------------------------------------------------------------------

    def plan(self) -> TrainingRun:
        """The run's cost plan (cost.estimate_cost on the run's model), refused over the
        budgets ``max_shots`` / ``max_circuits`` before any circuit runs (the plan depends on
        public quantities only, so the refusal does too).

        Raises:
            ValueError: for a budget that is not a positive integer, or a plan over it.
        """
        from ..cost import estimate_cost

        config = self.config
        check_job_limits(config)
        estimate = estimate_cost(self.model, self.loader,
                                 epochs=resolved(config.epochs, "epochs"),
                                 qpu_backend=qpu_backend(config))
        over = []
        if config.max_circuits is not None and estimate.total_circuits > config.max_circuits:
            over.append(f"{estimate.total_circuits:,.0f} circuits (--max-circuits "
                        f"{config.max_circuits:,})")
        if config.max_shots is not None and estimate.total_shots > config.max_shots:
            over.append(f"{estimate.total_shots:,.0f} shots (--max-shots "
                        f"{config.max_shots:,})")
        if over:
            raise ValueError(
                f"The planned run needs {' and '.join(over)}: {estimate.steps} steps of "
                f"{estimate.circuits_per_step:,.1f} circuits and {estimate.shots_per_step:,.0f} "
                f"shots each (expected batch {estimate.expected_batch_size:.4g}). Nothing was "
                f"run. Lower --epochs, --shots or --batch-size, or raise the budget.")
        self.estimate = estimate
        return self

    def probe_plan(self, rows: int):
        """The plan with one step of a synthetic batch of ``rows`` rows run and timed on the
        training device (``cost.estimate_cost(..., probe=True)``; ``dry_run``'s probe)."""
        from ..cost import estimate_cost

        return estimate_cost(self.model, self.loader,
                             epochs=resolved(self.config.epochs, "epochs"), probe=True,
                             probe_rows=rows, qpu_backend=qpu_backend(self.config))

    def _probe_step(self):
        """``step(batch)``: one forward and backward pass of a fresh copy of the run's model on
        ``batch`` public inputs (the middle of the input domain; no training example)."""
        model = self.make(self.shots, 0)
        if self.sampling != "device":
            from ..sampling import set_shot_sampling

            set_shot_sampling(model, self.sampling)
        binary = self.data.n_classes == 2
        n_features, loss_fn = self.data.n_features, self.loss_fn

        def step(batch: int) -> None:
            x = torch.full((batch, n_features), math.pi / 2, dtype=torch.float64)
            y = (torch.ones if binary else torch.zeros)(batch, dtype=torch.float64)
            model.zero_grad()
            loss_fn(model(x), y).mean().backward()

        return step

    def check_plan(self, last: int) -> TrainingRun:
        """Refuse a plan whose noise or time is absurd (:mod:`.plan`), before its first step
        (the steps left until epoch ``last``; none left: nothing to check).

        Raises:
            ValueError: for a plan :func:`~.plan.check_plan` refuses.
        """
        steps_per_epoch = len(self.train_loader)
        steps = steps_left(last, steps_per_epoch, start_epoch=self.start_epoch,
                           done_in_epoch=self.resume_offset)
        if steps == 0:
            return self
        n_train = len(self.data.y_train)
        expected = (self.ledger.expected_batch_size if self.private
                    and self.ledger.expected_batch_size else n_train / steps_per_epoch)
        sigma = self.ledger.noise_multiplier if self.private else None
        clip = self._private_opt.max_grad_norm if self.private else None
        plan = Plan(steps=steps, noise_multiplier=sigma, expected_batch_size=expected,
                    clip_norm=float(clip) if isinstance(clip, (int, float)) else None,
                    lr=float(self.config.lr))
        probe = self._probe_step()  # two steps of public inputs: a time per step
        plan.seconds_per_step = probe_step_seconds(
            probe, batch=max(1, min(8, math.ceil(expected))), expected_batch_size=expected)
        check_plan(plan)
        return self

    # -- privatise -------------------------------------------------------------------------

    def _clip_mode(self):
        """``max_grad_norm``: ``"auto"`` is the public clip for the quantum model and the
        certified one with a credit mode or a hybrid model; a float above Δ warns."""
        config = self.config
        clip_mode = config.max_grad_norm
        if clip_mode == "auto":
            clip_mode = ("certified" if config.credit != "none" or config.model == "hybrid"
                         else "public")
        if self.private and config.model == "quantum" and not isinstance(clip_mode, str):
            delta = certified_sensitivity(config, self.model_cls, self.data, self.loss_fn).delta
            if float(clip_mode) > delta:
                warnings.warn(
                    f"--max-grad-norm {clip_mode} is above the certified bound Δ = {delta:.6g} "
                    f"of every per-example gradient: the clip never binds, and the noise σC is "
                    f"{float(clip_mode) / delta:.3g} times what --max-grad-norm certified adds "
                    f"for the same clipping.", UserWarning, stacklevel=4)
        return clip_mode

    def _variance_floor(self) -> float:
        """The proven variance floor of the device noise, or the one the user declared."""
        config = self.config
        floor = (self.model.variance_floor() if config.variance_floor is None
                 else config.variance_floor)
        if config.variance_floor is not None and config.credit != "none":
            warnings.warn(f"variance_floor={config.variance_floor} is declared by you, not "
                          f"proven from device noise; the privacy statement says so.",
                          PrivacyWarning, stacklevel=4)
        if config.credit == "depolarizing" and floor == 0.0:
            warnings.warn("credit='depolarizing' with no proven variance floor (no device "
                          "depolarizing noise): no shot noise is credited.", PrivacyWarning,
                          stacklevel=4)
        return floor

    def privatise(self, private_hook=None) -> TrainingRun:
        """``make_private`` on the run's model (or the non-private baseline's Poisson loader),
        then ``private_hook(model, optimizer, loader)`` (private runs only).

        Raises:
            ValueError: for settings make_private refuses.
        """
        from ..cost import CostMeter

        config, data = self.config, self.data
        if self.estimate is None:
            raise RuntimeError("TrainingRun.privatise() needs the cost plan: call plan() first.")
        self.meter = CostMeter(self.model, self.estimate.layers)
        clip_mode = self._clip_mode()
        floor = self._variance_floor()
        if not self.private:
            self.pmodel, self.opt = self.model, self.sgd
            self.sampler_gen = torch.Generator()
            self.noise_gen = None
            self.train_loader = DPDataLoader.from_data_loader(self.loader,
                                                              generator=self.sampler_gen)
        else:
            hybrid = config.model == "hybrid"
            self.pmodel, self.opt, self.train_loader = make_private(
                self.model, self.sgd, self.loader, target_epsilon=config.epsilon,
                target_delta=config.delta, epochs=resolved(config.epochs, "epochs"),
                loss=self.loss_fn if clip_mode in ("certified", "public") else None,
                max_grad_norm=clip_mode,
                input_range=(0.0, math.pi) if clip_mode == "public" else None,
                classical_max_grad_norm=config.classical_max_grad_norm if hybrid else None,
                proven_epsilon_factor=config.proven_epsilon_factor,
                credit=config.credit, beta=config.beta,
                adjacency=config.adjacency, accountant=config.accountant,
                variance_floor=floor, recorder=self.recorder,
                variance_floor_source="proven" if config.variance_floor is None else "declared",
                seed=None if config.secure_mode else config.seed, secure_mode=config.secure_mode,
                preprocessing_note=data.preprocessing_note, shot_budget=config.shot_budget,
            )
            self._describe_ledger()
            self.noise_gen = self.opt.generator
            self.sampler_gen = self.train_loader.batch_sampler.generator
            if private_hook is not None:
                private_hook(self.pmodel, self.opt, self.train_loader)
        self.facts = data_facts(data, sample_rate=self.train_loader.sample_rate,
                                expected_batch_size=config.expected_batch_size)
        return self

    def _describe_ledger(self) -> None:
        """The ledger's provenance, randomness and (data-independent) preprocessing."""
        config, data, ledger = self.config, self.data, self._private_opt.ledger
        assert ledger is not None  # make_private attaches the ledger to its optimizer
        ledger.extra_update({"provenance": {**(ledger.extra or {}).get("provenance", {}),
                                            **provenance(data, config)}})
        if self.shots is not None and _compat.device_rng(training_device(config, self.model)) \
                is not None:
            randomness = (ledger.extra or {}).get("randomness", "").rstrip(".")
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

    # -- outputs and resume ----------------------------------------------------------------

    def open_outputs(self, resume: bool) -> TrainingRun:
        """Check (and create) the output directory; a new run writes its resume check, a
        resumed one restores the model, optimizer, ledger and records of its checkpoint.

        Raises:
            ValueError: for an output directory that holds a run (without ``resume``) or
                cannot be written, or a checkpoint whose settings or data differ.
        """
        self.out_dir = open_output_dir(self.config, resume)
        if self.out_dir is not None and not resume:  # the keyed digest of the rows (NOT
            write_resume_check(self.out_dir, self.data)  # protected)
        if resume:
            if self.out_dir is None:  # check_train_config refuses this before any data is read
                # (outputs.read_checkpoint's refusal, word for word)
                raise ValueError("--resume needs a checkpoint in `output_dir`. Found none in "
                                 "None.")
            point = restore_run(self.out_dir, self.config, self.data, self.facts,
                                model=self.model, opt=self.opt, sgd=self.sgd,
                                private=self.private)
            self.records, self.metrics = point.records, point.metrics
            self.training_shots = point.training_shots
            self.start_epoch, self.resume_offset = point.epoch, point.step_in_epoch
            self.resume_rngs = point.rngs
        return self

    def _checkpoint(self, epoch: int, *, step_in_epoch: int = 0, rngs: dict | None = None):
        assert self.out_dir is not None  # callers checkpoint only with an output directory
        write_checkpoint(self.out_dir, config=self.config, epoch=epoch, model=self.model,
                         sgd=self.sgd, opt=self.opt if self.private else None,
                         metrics=self.metrics, records=self.records,
                         step_in_epoch=step_in_epoch, rngs=rngs,
                         task=task_record(self.data, self.config), data=self.facts)

    def _write_diagnostics(self, summary=None) -> None:
        assert self.out_dir is not None  # callers write only with an output directory
        write_json(self.out_dir / "diagnostics.json", diagnostics_document(
            self.metrics, self.records, self.ledger, self.data, summary=summary))

    # -- run epochs ------------------------------------------------------------------------

    def _train_epoch(self, bar, skip: int = 0) -> None:
        """One pass over the Poisson loader (a private step per batch, empty ones included),
        each step's circuits, shots and device batches counted by the device's tracker; an
        interrupted epoch resumed after ``skip`` steps takes the rest. A Ctrl-C (deferred by
        :func:`~.interrupt.deferred_interrupt`) stops the loop after the step in progress."""
        config = self.config
        self.step_in_epoch = skip
        if self.interrupt is not None and self.interrupt.requested:
            self.interrupted = True
            return
        meter = self.meter
        assert meter is not None  # privatise() sets it (and the train_loader read below)
        for xb, yb in itertools.islice(self.train_loader,
                                       max(0, len(self.train_loader) - skip)):
            with meter.step():
                self.opt.zero_grad()
                if self.private:
                    if xb.shape[0]:  # an empty Poisson batch still gets a (noise-only) step
                        with ignore_output_hook_warning():
                            self.loss_fn(self.pmodel(xb), yb).mean().backward()
                    try:
                        self.opt.step()
                    except PrivacyBudgetExceededError as err:  # checked before the step
                        self.stopped = str(err)
                        return
                    record = self._private_opt.last_record
                    assert record is not None  # set by the step just taken
                    self.records.append(dict(record, epoch=self.epoch + 1))
                else:
                    if xb.shape[0]:
                        self.loss_fn(self.model(xb), yb).sum().div(
                            config.expected_batch_size).backward()
                        self.sgd.step()
            self.training_shots += meter.records[-1]["shots"]
            self.step_in_epoch += 1
            bar.update(1)
            bar.set_postfix_str(self._shots_text(), refresh=False)
            if self.interrupt is not None and self.interrupt.requested:
                self.interrupted = True
                return

    def _shots_text(self) -> str:
        """The progress bar's shots: measured with ``diagnostics`` (they grow with the private
        batch sizes), otherwise the plan's for the steps done (public)."""
        if self.shots is None:
            return "analytic"
        if self.config.diagnostics:
            return f"shots {self.training_shots:,}"
        estimate, meter = self.estimate, self.meter
        assert estimate is not None and meter is not None  # set by plan() and privatise()
        planned = estimate.shots_per_step * len(meter.records)
        return f"shots ≈ {planned:,.0f} (planned)"

    def _epoch_row(self, epoch: int, t0: float) -> dict:
        """The finished ``epoch``'s metrics (the test split evaluated on the trained weights)."""
        self.eval_model.load_state_dict(self.model.state_dict())
        acc, balanced, test_loss = evaluate(self.eval_model, self.x_test, self.y_test,
                                            self.loss_fn)
        ledger = self.ledger
        return {"epoch": epoch + 1,
                "steps": (len(self.records) if self.private
                          else (epoch + 1) * len(self.train_loader)),
                "epsilon": ledger.epsilon if ledger else math.inf,
                "credited_epsilon": ledger.credited_epsilon if ledger else math.inf,
                "test_accuracy": acc, "test_balanced_accuracy": balanced,
                "test_loss": test_loss, "training_shots": self.training_shots,
                "elapsed_s": time.perf_counter() - t0}

    def run_epochs(self, last: int, progress: bool) -> TrainingRun:
        """Train epochs ``start_epoch..last``, evaluating and checkpointing after each; on a
        Ctrl-C, checkpoint the steps taken (mid-epoch) and stop."""
        from tqdm.auto import tqdm

        config = self.config
        dev = training_device(config, self.model)  # the neuron's outputs share one device
        rngs = RunRandomness(config, sampler=self.sampler_gen, noise=self.noise_gen,
                             device=dev if self.shots is not None else None)
        bar = tqdm(total=max(0, len(self.train_loader) * (last - self.start_epoch)
                             - self.resume_offset),
                   disable=not progress, desc="qshiftdp train")
        t0 = time.perf_counter()
        for epoch in range(self.start_epoch, last):
            self.epoch = epoch
            skip = self.resume_offset if epoch == self.start_epoch else 0
            if skip:
                rngs.restore(self.resume_rngs, epoch)
            else:
                rngs.reseed(epoch)
            # each step counted by the device's tracker (exact-law sampling executes
            # analytically: the shots are those its draws stand for)
            self._train_epoch(bar, skip)
            if self.interrupted:
                if self.out_dir is not None and self.step_in_epoch:  # else: the epoch's
                    self._checkpoint(epoch, step_in_epoch=self.step_in_epoch,  # checkpoint
                                     rngs=rngs.states())
                break
            row = self._epoch_row(epoch, t0)
            self.metrics.append(row)
            bar.set_postfix(acc=f"{row['test_accuracy']:.3f}", eps=f"{row['epsilon']:.3f}")
            if self.out_dir is not None:  # created (and checked) before training
                self._checkpoint(epoch + 1)
            if self.out_dir is not None and config.diagnostics:
                self._write_diagnostics()
            if self.stopped:
                break
        if self.interrupted and self.out_dir is not None and config.diagnostics:
            self._write_diagnostics()
        bar.close()
        return self

    # -- finish ----------------------------------------------------------------------------

    def _diagnostics_summary(self) -> dict | None:
        """What the statement reports from the private batches with ``--diagnostics``."""
        if not self.config.diagnostics:
            return None
        records = self.records
        written = ["diagnostics.json"] + (["diagnostics.png"] if records else [])
        summary = {"written_to": written if self.out_dir is not None else [],
                   "per_example_gradients": int(sum(r.get("batch_examples", 0)
                                                    for r in records)),
                   "training_shots": int(self.training_shots)}
        if self.private and (self.ledger.extra or {}).get("clipping", {}).get("mode") \
                == "certified":
            summary["certified_clip_binding"] = int(sum(
                r.get("certified_bound_violations", 0) for r in records))
        return summary

    def _final_accuracy(self) -> tuple[float, float]:
        """The final test accuracy and balanced accuracy: the last epoch's, or evaluated now
        (no epoch ran, the run stopped mid-epoch, or an old checkpoint had no balanced one)."""
        metrics = self.metrics
        mid_epoch = self.interrupted and self.step_in_epoch > 0  # weights moved since then
        if metrics and metrics[-1].get("test_balanced_accuracy") is not None and not mid_epoch:
            return metrics[-1]["test_accuracy"], metrics[-1]["test_balanced_accuracy"]
        self.eval_model.load_state_dict(self.model.state_dict())
        final_acc, final_bal, _ = evaluate(self.eval_model, self.x_test, self.y_test)
        return final_acc, final_bal

    def _train_cause(self):
        """Why a private run is stuck, from what it released (noisy sums and parameters: no
        privacy cost); ``None`` for the baseline."""
        if self.ledger is None:
            return None
        return stuck_run_cause(getattr(self.opt, "history", ()),
                               batch_argument="--batch-size", lr_argument="--lr",
                               epsilon_argument="--epsilon", clip_argument="--max-grad-norm",
                               epochs_argument="--epochs",
                               public_gradient_norm=getattr(self.opt, "public_gradient_norm",
                                                            None))

    def _trained_weights(self) -> np.ndarray:
        if self.config.model == "neuron":
            return torch.cat([p.detach().reshape(-1).double()
                              for p in self.model.parameters()]).numpy().copy()
        return self.model.qlayer.weights.detach().numpy().copy()

    def _cost_section(self) -> dict:
        """metrics.json's ``"cost"``: the plan and, with diagnostics, the measured counts."""
        from ..cost import COST_KEYS

        estimate = self.estimate
        estimated = estimate.as_dict() if estimate is not None else dict.fromkeys(COST_KEYS)
        measured = (self.meter.summary() if self.config.diagnostics and self.meter is not None
                    else None)
        # who runs each quantum layer's circuits (the batched Qiskit route: one job per layer)
        route = ([f"{p.name or 'model'}: {p.cost.execution}" for p in estimate.layers]
                 if estimate is not None else None)
        return {"estimated": estimated, "measured": measured, "route": route, "note": COST_NOTE}

    def finish(self, last: int) -> TrainResult:
        """The final test metrics, the stuck-run warning and the statement (with the
        interruption's note after a Ctrl-C); the outputs written to ``out_dir``.

        Returns:
            TrainResult: the run's result.
        """
        data, ledger, config = self.data, self.ledger, self.config
        summary = self._diagnostics_summary()
        if ledger is not None:
            ledger.extra_update({"shots_per_circuit": self.shots, "device": self.device,
                                 "shot_sampling": self.sampling}
                                | ({"noise_model": noise_model_text(config.noise_model)}
                                   if config.noise_model else {}))
        final_acc, final_bal = self._final_accuracy()
        rate = majority_rate(data.y_test)
        cause = clipping_cause(data)  # from the held-out split only
        train_cause = self._train_cause()  # else what the run released says
        stuck = majority_class_warning(final_acc, rate, final_bal, data.n_classes,
                                       history=[m["test_accuracy"] for m in self.metrics],
                                       cause=cause or train_cause)
        if stuck is not None:
            warnings.warn(stuck, UserWarning, stacklevel=3)
        feature_warning = None
        if cause is not None and stuck is None:
            feature_warning = f"the feature ranges clip the data: {cause}"
            warnings.warn(feature_warning, UserWarning, stacklevel=3)
        result = TrainResult(
            test_accuracy=final_acc, test_balanced_accuracy=final_bal, test_majority_rate=rate,
            test_examples=int(len(data.y_test)), majority_warning=stuck,
            epsilon=ledger.epsilon if ledger else math.inf,
            credited_epsilon=ledger.credited_epsilon if ledger else math.inf,
            steps=ledger.steps if ledger else last * len(self.train_loader),
            statement=(ledger.statement(diagnostics=summary) if ledger else
                       "Non-private baseline: no differential privacy guarantee."),
            metrics=self.metrics, step_records=self.records, weights=self._trained_weights(),
            output_dir=str(self.out_dir) if self.out_dir else None, stopped_early=self.stopped,
            shots=self.shots, training_shots=self.training_shots, device=self.device,
            n_classes=data.n_classes, label_mapping=data.label_mapping_text(),
            diagnostics=summary, settings=resolved_settings(config),
            planned_steps=len(self.train_loader) * resolved(config.epochs, "epochs"),
            interrupted=self.interrupted, feature_warning=feature_warning,
            eval_device=self.eval_device, cost=self._cost_section(),
        )
        if self.interrupted:
            result.statement += "\n" + _interruption_note(result)
        if self.out_dir is not None:
            write_outputs(result, ledger, self.out_dir, diagnostics=config.diagnostics,
                          credit=config.credit != "none")
            if config.diagnostics:
                self._write_diagnostics(summary=result.diagnostics)
        return result


def _interruption_note(result: TrainResult) -> str:
    return (f"Interrupted (Ctrl-C) after {result.steps} of {result.planned_steps} planned "
            f"steps: this statement covers the steps taken, which are recorded in ledger.json "
            f"and checkpoint.pt; the same command with --resume (resume=True) continues the run "
            f"from there.")
