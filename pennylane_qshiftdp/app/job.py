r"""The application: ``qshiftdp train``'s job (data set, model, private training loop, outputs).

Library code (:func:`~pennylane_qshiftdp.make_private`, the optimizer, the ledger) never imports
this module. :func:`train` and :func:`dry_run` drive one :class:`~.run.TrainingRun` through its
phases (build, plan, privatise, run the epochs, finish); the device, shots, loss and model
factory are :mod:`.build`'s, resume and the run's generators :mod:`.resume`'s. The loop is the
standard Opacus one::

    model, optimizer, loader = make_private(model, optimizer, loader, ...)
    for x, y in loader:
        optimizer.zero_grad()
        loss_fn(model(x), y).mean().backward()
        optimizer.step()
"""

from __future__ import annotations

import time

# re-exported: they lived here (other modules, tests and benchmarks import them from here)
from .build import AUTO_SHOTS_FRACTION as AUTO_SHOTS_FRACTION
from .build import LIGHTNING_QUBITS as LIGHTNING_QUBITS
from .build import LIGHTNING_QUBITS_DEVICE_SAMPLING as LIGHTNING_QUBITS_DEVICE_SAMPLING
from .build import RESOLVED_SETTINGS as RESOLVED_SETTINGS
from .build import device_options as device_options
from .build import make_loss as make_loss
from .build import model_factory as model_factory
from .build import resolve_device as resolve_device
from .build import task_record as task_record
from .checks import MAX_QUBITS as MAX_QUBITS  # re-exported: the job's qubit limit
from .checks import check_train_config
from .config import TrainConfig
from .defaults import resolved
from .interrupt import deferred_interrupt
from .result import TrainResult as TrainResult  # re-exported: it lived here
from .resume import seed_for as _seed_for  # noqa: F401  (re-exported: benchmarks use it)
from .run import COST_NOTE as COST_NOTE
from .run import TrainingRun

__all__ = ["COST_NOTE", "TrainConfig", "TrainResult", "TrainingInterrupted", "TrainingRun",
           "device_options", "dry_run", "make_loss", "train"]


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped :func:`train` after a whole step; the outputs of the steps taken are
    written (ledger, statement, metrics, a checkpoint that ``resume=True`` continues).

    Attributes:
        result: the :class:`TrainResult` of the steps taken (``interrupted=True``).
    """

    def __init__(self, result: TrainResult):
        super().__init__(f"training interrupted after {result.steps} steps")
        self.result = result


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
    def say(line: str) -> None:
        if report is not None:
            report(line)

    say("dry run: loading the data set's shape and building the model (nothing is written)")
    run = TrainingRun(config).build().plan()
    plan = run.estimate
    assert plan is not None  # plan() sets it
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
        f"training example): about {per_row * rows:,.0f} circuits on {run.device}; its time "
        f"is scaled x{scale:.3g} to the expected batch {expected:.4g}")
    t0 = time.perf_counter()
    plan = run.probe_plan(rows)
    say(f"dry run: probe done in {time.perf_counter() - t0:.1f} s: about "
        f"{plan.seconds_per_step:.3g} s per step, {plan.total_seconds:.3g} s in all")
    return plan.as_dict()


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
    run = TrainingRun(config).build().plan()  # the plan: before any circuit runs
    run.privatise(private_hook)
    epochs = resolved(run.config.epochs, "epochs")  # build() resolved "auto"
    last = epochs if stop_after_epochs is None else min(epochs, stop_after_epochs)
    if not resume and not skip_plan_check:
        run.check_plan(last)  # before the output directory is created
    run.open_outputs(resume)  # a resumed run: restored from its checkpoint
    if resume and not skip_plan_check:
        run.check_plan(last)
    with deferred_interrupt("qshiftdp train") as run.interrupt:
        run.run_epochs(last, progress)
        result = run.finish(last)
    if run.interrupted:
        raise TrainingInterrupted(result)
    return result
