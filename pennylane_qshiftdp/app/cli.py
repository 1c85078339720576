r"""The ``qshiftdp`` command line.

Subcommands:

- ``qshiftdp noise``: the noise multiplier σ meeting an (ε, δ) budget
  (:func:`~pennylane_qshiftdp.calibrate_noise_multiplier`).
- ``qshiftdp epsilon``: the ε spent by σ, q, steps at δ
  (:func:`~pennylane_qshiftdp.compute_epsilon`).
- ``qshiftdp train``: private training of the quantum classifier (:func:`~.job.train`).
- ``qshiftdp predict``: a finished run's model on new data (:func:`~.predict.load_run`).
- ``qshiftdp audit``: empirical privacy audit of one step or of a finished run.
- ``qshiftdp certify``: QPrLDP/QLDP certificates of the training device's depolarizing noise
  (:func:`~.certify.certify_job_device`). The separate ``qprldp`` command certifies a
  depolarizing channel given by its parameter.

Every subcommand registers a handler ``func(args) -> int`` with ``set_defaults(func=...)``.
Errors print ``qshiftdp <cmd>: error: <message>`` on stderr and return 2, like argparse.

Example:
    >>> main(["epsilon", "--noise-multiplier", "1.0", "--sample-rate", "0.01",
    ...       "--steps", "1000", "--delta", "1e-5"])
    epsilon = 1.83092 (nats) at delta = 1e-05
      noise multiplier sigma = 1, sample rate q = 0.01, steps = 1000, accountant = pld
    0
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["build_parser", "main"]

# The parser is built without importing torch, PennyLane or Opacus: ``qshiftdp --help`` and
# argument errors are fast, and each handler imports what it runs. ACCOUNTANT_CHOICES: the
# ``--accountant`` choices (re-exported from app.config; a test checks the registry's agree).
from .config import ACCOUNTANT_CHOICES as ACCOUNTANT_CHOICES
from .flags import add_flags
from .flags import positive_int as _positive_int

PROG = "qshiftdp"


class _CLIError(Exception):
    """A usage error detected after parsing (reported like an argparse error)."""


class _Parser(argparse.ArgumentParser):
    """The ``qshiftdp`` parser: an ``ArgumentParser`` whose subcommands' action is
    ``subparsers`` (set by :func:`build_parser`)."""

    subparsers: argparse._SubParsersAction


def build_parser() -> _Parser:
    r"""The ``qshiftdp`` argument parser with all subcommands registered.

    The subparsers action is stored as ``parser.subparsers`` (also returned by
    :func:`_add_train_parser`'s argument), so another module can add a subcommand with
    ``build_parser().subparsers.add_parser(...)``.

    Returns:
        The parser.

    Example:
        >>> sorted(build_parser().subparsers.choices)
        ['audit', 'certify', 'epsilon', 'noise', 'predict', 'train']
    """
    parser = _Parser(
        prog=PROG,
        description=(
            "Differentially private training of parameterized quantum circuits with the "
            "parameter-shift rule (Q-ShiftDP), accounted with Opacus. All epsilons in nats."
        ),
        epilog="See also the `qprldp` command (installed with this package): `qprldp certify` "
        "prints QLDP/QPrLDP certificates of a depolarizing channel given by its parameter "
        "(global on any dimension, or local on n qubits); `qshiftdp certify` certifies the "
        "training circuit's device noise.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    parser.subparsers = subparsers  # hook for other modules
    _add_noise_parser(subparsers)
    _add_epsilon_parser(subparsers)
    _add_train_parser(subparsers)
    _add_predict_parser(subparsers)
    _add_audit_parser(subparsers)
    _add_certify_parser(subparsers)
    return parser


# --------------------------------------------------------------------------- train (hook)
def _add_train_parser(subparsers) -> None:
    """Register ``qshiftdp train``: private training of the quantum classifier."""
    from .config import TrainConfig

    p = subparsers.add_parser(
        "train",
        help="train a quantum classifier with (ε, δ)-differential privacy",
        description="Train a quantum classifier privately on Opacus (per-example "
        "parameter-shift gradients, clipped, Gaussian noise) on a bundled data set or a CSV "
        "file; print the privacy statement and test accuracy, and write the ledger, metrics "
        "and plots to --output-dir. Settings left at 'auto' are chosen per task family from "
        "the data's public shape (examples, classes): digits with two classes trains the "
        "angle-embedding + StronglyEntanglingLayers classifier (4 qubits) clipped at a public "
        "clip norm (the largest analytic gradient norm found at sampled points of the input "
        "domain: an estimate, a clip may bind; --max-grad-norm certified clips at the "
        "a-priori bound Δ, where no clip binds: Q-ShiftDP); every other task trains the "
        "neuron model (a linear layer on all features feeding one qubit per output) with a "
        "fixed clip norm. The statement lists the settings used.",
    )
    add_flags(p, TrainConfig)  # every TrainConfig field's flag (app.config, app.flags)
    p.add_argument("--resume", action="store_true", help="continue from --output-dir")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan as one JSON object (circuits_per_step, shots_per_step, "
                   "device_batches_per_step, steps, total_circuits, total_shots, "
                   "seconds_per_step, total_seconds, jobs_per_step, qpu_seconds_per_step: the "
                   "estimated QPU time from the durations of --noise-model's fake backend) and "
                   "exit without training or writing "
                   "anything (also in an --output-dir that holds a run); the count is printed "
                   "on stderr first, then the time comes from one probe step on a synthetic "
                   "batch of at most 4 rows (zeros, no training example), scaled linearly to "
                   "the expected batch, which runs those circuits on the device (--no-probe "
                   "skips it; --no-progress hides the stderr lines)")
    p.add_argument("--no-probe", action="store_true",
                   help="with --dry-run: count only, run no circuit (the seconds are null)")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress bar (and --dry-run's progress lines)")
    p.add_argument("--skip-plan-check", action="store_true",
                   help="train even when the plan is refused as absurd: its noise multiplier σ "
                   "above the expected batch size qN (every step mostly noise) or its estimated "
                   "time (steps x a probe step's time) above 24 hours")
    p.set_defaults(func=_run_train)


#: Parameter names in library messages that are not TrainConfig fields (or are read by the
#: ``name=``/``classes=`` rewrite below) -> the ``qshiftdp train`` flag; a field's own flag
#: comes from its declaration (``config.flag_name``).
_TRAIN_FLAGS = {"n_features": "--qubits", "name": "--dataset", "classes": "--classes",
                "n_classes": "--classes", "target_epsilon": "--epsilon",
                "target_delta": "--delta", "n_qubits": "--qubits",
                "skip_plan_check": "--skip-plan-check", "shots_per_step": "--shot-budget"}


def _flag_names(message: str) -> str:
    """Replace backticked parameter names by the flags of ``qshiftdp train``."""
    import re

    from .config import TrainConfig, flag_name

    fields = set(TrainConfig.__dataclass_fields__)

    def sub(m):
        name = m.group(1)
        if name in _TRAIN_FLAGS:
            return f"`{_TRAIN_FLAGS[name]}`"
        return f"`{flag_name(name)}`" if name in fields else f"`{name}`"

    message = re.sub(r"`([a-z_]+)`", sub, message)
    return re.sub(r"\b(name|classes)='", lambda m: f"{_TRAIN_FLAGS[m.group(1)]}='", message)


def _train_config(args):
    """The :class:`~.config.TrainConfig` of ``qshiftdp train``'s arguments."""
    from .config import TrainConfig

    fields = {k: getattr(args, k) for k in TrainConfig.__dataclass_fields__ if hasattr(args, k)}
    fields["secure_mode"] = not args.seeded_noise
    if fields.get("shots") == 0:
        fields["shots"] = None
    if fields.get("eval_shots") == 0:
        fields["eval_shots"] = None
    return TrainConfig(**fields)


#: The job's result warnings, printed as WARNING lines from the result (not twice).
_RESULT_WARNINGS = ("the classifier (predicts the majority|barely separates|is systematically "
                    "wrong)|the feature ranges clip the data")


def _run_train(args) -> int:
    from .checks import check_train_config

    if args.output_dir is not None and not str(args.output_dir).strip():
        raise _CLIError("--output-dir must name a directory. Found ''.")
    if args.eval_shots is not None and args.eval_shots < 0:
        raise _CLIError(f"--eval-shots must be a positive shot count, or 0 for analytic "
                        f"evaluation. Found {args.eval_shots}.")
    if args.no_probe and not args.dry_run:
        raise _CLIError("--no-probe goes with --dry-run.")
    if args.dry_run and args.resume:
        raise _CLIError("--dry-run plans a new run; drop --resume (a dry run continues nothing).")
    config = _train_config(args)
    # a dry run writes nothing: the output directory is not checked (it may hold a run)
    checked = dataclasses.replace(config, output_dir=None) if args.dry_run else config
    try:  # every value error before torch, PennyLane or Opacus is imported
        check_train_config(checked, resume=args.resume)
    except (ValueError, TypeError) as err:
        raise _CLIError(_flag_names(str(err))) from err
    from .job import TrainingInterrupted, dry_run, train

    if args.dry_run:
        try:
            plan = dry_run(config, probe=not args.no_probe,
                           report=None if args.no_progress
                           else (lambda line: print(line, file=sys.stderr, flush=True)))
        except (ValueError, TypeError, NotImplementedError) as err:
            raise _CLIError(_flag_names(str(err))) from err
        print(json.dumps(plan))
        return 0
    try:
        with warnings.catch_warnings():  # printed below as a WARNING line, not twice
            warnings.filterwarnings("ignore", message=_RESULT_WARNINGS, category=UserWarning)
            result = train(config, progress=not args.no_progress, resume=args.resume,
                           skip_plan_check=args.skip_plan_check)
    except TrainingInterrupted as stop:
        _print_train_result(stop.result, config)
        return 130
    except (ValueError, TypeError, NotImplementedError) as err:
        raise _CLIError(_flag_names(str(err))) from err
    _print_train_result(result, config)
    return 0


def _print_train_result(result, config) -> None:
    """The run's results; the privacy statement's headline (the whole statement is in the
    run directory); the one-line privacy summary last."""
    from .summary import format_epsilon, summary_line

    statement_path = None
    print()
    if result.output_dir is not None:
        from pathlib import Path

        statement_path = Path(result.output_dir) / "privacy_statement.txt"
        print(result.statement.splitlines()[0])
        print(f"(the full privacy statement, with what is protected, sampling, mechanism, "
              f"accountant and assumptions: {statement_path})")
    else:
        print(result.statement)
    print()
    if result.stopped_early:
        print(f"Stopped early: {result.stopped_early}")
    print(f"classes: {result.n_classes}; label mapping: {result.label_mapping}")
    if result.settings:  # the "auto" settings as resolved for this task
        from .config import flag_name

        print("settings: " + ", ".join(f"{flag_name(k)} {v}"
                                       for k, v in result.settings.items()))
    k = max(result.n_classes, 2)
    imbalanced = result.test_majority_rate > 1.0 / k + 0.05  # NaN (no test split): False
    print(f"test accuracy: {result.test_accuracy:.4f}"
          + (f", balanced accuracy: {result.test_balanced_accuracy:.4f} (imbalanced test split: "
             f"majority-class rate {result.test_majority_rate:.4f})" if imbalanced else "")
          + f" (evaluated "
          f"{'analytically' if config.eval_shots is None else f'with {config.eval_shots} shots'}"
          f" on {result.eval_device or result.device}, on the {result.test_examples} held-out "
          f"test examples)")
    if result.majority_warning:
        print(f"WARNING: {result.majority_warning}")
    if result.feature_warning:
        print(f"WARNING: {result.feature_warning}")
    diag = config.diagnostics  # data-dependent numbers only when asked for, marked
    if result.shots is None:
        print("training shots: 0 (analytic)")
    elif diag:
        print(f"training shots: {result.training_shots} ({result.shots} per circuit) "
              f"[diagnostic, NOT protected: the total grows with the private batch sizes]")
    else:
        print(f"training shots: {result.shots} per circuit (the total grows with the private "
              f"batch sizes: reported only with --diagnostics)")
    credit = config.credit != "none" and math.isfinite(result.epsilon)
    print(f"ε spent: {format_epsilon(result.epsilon)} (target {config.epsilon}) after "
          f"{result.steps} steps"
          + (f"; credited Q-ShiftDP ε (Gaussian approximation; diagnostic, NOT protected): "
             f"{format_epsilon(result.credited_epsilon)}" if credit and diag else ""))
    if math.isfinite(result.epsilon) and result.epsilon > config.epsilon * (1 + 1e-9):
        why = (f" With --credit {config.credit} the added noise is a floor that keeps the "
               f"proven ε within {config.proven_epsilon_factor} x the target; only the credited "
               f"ε (an approximation, computed from the private batches) aims at the target"
               + (f", and here it is above it as well "
                  f"({format_epsilon(result.credited_epsilon)})"
                  if diag and result.credited_epsilon > config.epsilon * (1 + 1e-9) else "")
               + "." if config.credit != "none" else "")
        print(f"WARNING: the proven ε {format_epsilon(result.epsilon)} exceeds the target "
              f"--epsilon {config.epsilon}.{why}")
    print(f"outputs: {result.output_dir}")
    if result.interrupted:
        print(f"interrupted after {result.steps} of {result.planned_steps} planned steps: the "
              f"ledger, statement and checkpoint of these steps are written; continue with the "
              f"same command and --resume.")
    print(summary_line(
        epsilon=result.epsilon, delta=config.delta, adjacency=config.adjacency,
        accountant=config.accountant, steps=result.steps, credit=config.credit,
        beta=config.beta, credited_epsilon=result.credited_epsilon if diag else None,
        planned_steps=result.planned_steps, interrupted=result.interrupted,
        statement_path=statement_path))


# --------------------------------------------------------------------------- noise
def _add_noise_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "noise",
        help="noise multiplier sigma for an (epsilon, delta) budget",
        description=(
            "Compute the noise multiplier sigma (noise std / sensitivity) such that Poisson "
            "sampling at rate q for the given number of steps satisfies (epsilon, delta)-DP "
            "according to Opacus's accountant. Conservative: the epsilon of the result is at "
            "most the target."
        ),
    )
    p.add_argument("--epsilon", type=float, required=True, help="target epsilon (nats), > 0")
    p.add_argument("--delta", type=float, default=1e-5, help="target delta in (0, 1) [1e-5]")
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument("--sample-rate", type=float, help="Poisson sampling rate q in (0, 1]")
    rate.add_argument(
        "--batch-size",
        type=int,
        help="expected batch size B (needs --dataset-size; q = B / N). Not the same as "
        "`qshiftdp train --batch-size`, the loader batch size with q = 1/ceil(N/B) (Opacus's "
        "convention): to reproduce a training run's sigma pass its --sample-rate and --steps",
    )
    p.add_argument("--dataset-size", type=int, help="number of training examples N")
    length = p.add_mutually_exclusive_group(required=True)
    length.add_argument("--steps", type=int, help="number of steps T")
    length.add_argument(
        "--epochs", type=float, help="number of epochs E (T = ceil(E / q), rounded up)"
    )
    _add_accountant_arg(p)
    p.add_argument(
        "--epsilon-tolerance",
        type=float,
        default=0.01,
        help="absolute tolerance of the bisection on epsilon [0.01]",
    )
    _add_json_arg(p)
    p.set_defaults(func=_run_noise)


def _sample_rate_from(args) -> float:
    if args.batch_size is not None:
        if args.dataset_size is None:
            raise _CLIError("--batch-size needs --dataset-size (q = batch size / dataset size).")
        if args.batch_size < 1:
            raise _CLIError(f"--batch-size must be a positive integer. Found {args.batch_size}.")
        if args.dataset_size < 1:
            raise _CLIError(
                f"--dataset-size must be a positive integer. Found {args.dataset_size}."
            )
        if args.batch_size > args.dataset_size:
            raise _CLIError(
                f"--batch-size must be at most --dataset-size ({args.dataset_size}). "
                f"Found {args.batch_size}."
            )
        return args.batch_size / args.dataset_size
    return args.sample_rate


def _run_noise(args) -> int:
    from ..accountants.calibration import (
        calibrate_noise_multiplier,
        compute_epsilon,
        epochs_to_steps,
    )

    q = _sample_rate_from(args)
    if args.epochs is not None:
        steps = epochs_to_steps(epochs=args.epochs, sample_rate=q)
    else:
        steps = args.steps
    sigma = calibrate_noise_multiplier(
        target_epsilon=args.epsilon,
        target_delta=args.delta,
        sample_rate=q,
        steps=steps,
        accountant=args.accountant,
        epsilon_tolerance=args.epsilon_tolerance,
    )
    eps = compute_epsilon(
        noise_multiplier=sigma,
        sample_rate=q,
        steps=steps,
        delta=args.delta,
        accountant=args.accountant,
    )
    result = {
        "noise_multiplier": sigma,
        "epsilon": eps,
        "target_epsilon": args.epsilon,
        "delta": args.delta,
        "sample_rate": q,
        "steps": steps,
        "accountant": args.accountant,
    }
    if args.dataset_size is not None:
        result["dataset_size"] = args.dataset_size
        result["expected_batch_size"] = q * args.dataset_size
    if args.epochs is not None:
        result["epochs"] = args.epochs
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    from .._formatting import format_up

    print(f"noise multiplier sigma = {sigma:.6g}")
    print(  # ε and δ rounded up: never printed below the value
        f"  spends epsilon = {format_up(eps)} <= target {args.epsilon:g} (nats) at delta = "
        f"{format_up(args.delta)}"
    )
    batch = ""
    if args.dataset_size is not None:
        batch = f" (expected batch {q * args.dataset_size:g} of N = {args.dataset_size})"
    epochs = f" ({args.epochs:g} epochs)" if args.epochs is not None else ""
    print(
        f"  sample rate q = {q:.6g}{batch}, steps = {steps}{epochs}, accountant = {args.accountant}"
    )
    print("  noise std on the summed gradient = sigma x sensitivity Delta")
    if args.dataset_size is not None and args.delta >= 1.0 / args.dataset_size:
        print(
            f"warning: delta = {args.delta:g} is not below 1/N = {1.0 / args.dataset_size:.3g};"
            f" choose delta well below 1/N.",
            file=sys.stderr,
        )
    return 0


# --------------------------------------------------------------------------- epsilon
def _add_epsilon_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "epsilon",
        help="epsilon spent by sigma, q and steps at delta",
        description=(
            "Compute the epsilon (nats, an upper bound) spent by the given number of steps of "
            "the Poisson-subsampled Gaussian mechanism, with Opacus's accountant."
        ),
    )
    p.add_argument(
        "--noise-multiplier", type=float, required=True, help="noise multiplier sigma > 0"
    )
    p.add_argument(
        "--sample-rate", type=float, required=True, help="Poisson sampling rate q in (0, 1]"
    )
    p.add_argument("--steps", type=int, required=True, help="number of steps T >= 1")
    p.add_argument("--delta", type=float, default=1e-5, help="delta in (0, 1) [1e-5]")
    _add_accountant_arg(p)
    _add_json_arg(p)
    p.set_defaults(func=_run_epsilon)


def _run_epsilon(args) -> int:
    from ..accountants.calibration import compute_epsilon

    eps = compute_epsilon(
        noise_multiplier=args.noise_multiplier,
        sample_rate=args.sample_rate,
        steps=args.steps,
        delta=args.delta,
        accountant=args.accountant,
    )
    if args.json:
        print(
            json.dumps(
                {
                    "epsilon": eps if math.isfinite(eps) else None,
                    "noise_multiplier": args.noise_multiplier,
                    "sample_rate": args.sample_rate,
                    "steps": args.steps,
                    "delta": args.delta,
                    "accountant": args.accountant,
                },
                indent=2,
            )
        )
        return 0
    from .._formatting import format_up

    print(f"epsilon = {format_up(eps)} (nats) at delta = {format_up(args.delta)}")
    print(
        f"  noise multiplier sigma = {args.noise_multiplier:g}, sample rate q = "
        f"{args.sample_rate:g}, steps = {args.steps}, accountant = {args.accountant}"
    )
    return 0


# --------------------------------------------------------------------------- audit
class _Seen(argparse.Action):
    """A store action that records that its flag was given (``args._seen``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        seen = set(getattr(namespace, "_seen", ()))
        seen.add(option_string)
        namespace._seen = seen


def _add_audit_parser(subparsers) -> None:
    """Register ``qshiftdp audit``: empirical privacy audit of one private step."""
    p = subparsers.add_parser(
        "audit",
        help="audit one private step empirically (full-sensitivity canary; Clopper-Pearson "
        "and Gaussian-DP lower bounds on ε, with their ceilings)",
        description="Run one private step (make_private, q = 1) many times on a data set D and "
        "on D plus a canary, in the one-qubit setting RY(x) RY(θ), <Z>, θ = 0.3, 30 examples "
        "of maximal shot variance (background 'shot') or of zero gradient (background "
        "'zero'), and a zero-variance canary whose clipped gradient is (almost) the full "
        "sensitivity C; score every release (projection on the canary's gradient, distance "
        "from the shot lattice) and print split-half Clopper-Pearson and Gaussian-DP lower "
        "bounds on ε beside the claimed proven and credited ε, and the CEILING: the largest ε "
        "the trials could certify. A crashing or non-finite release is reported as a finding. "
        "Exit status 1 if a proven claim is refuted. With --run DIR: audit a finished "
        "`qshiftdp train` run instead, end to end in one re-run of its configuration with "
        "--canaries white-box gradient canaries (Steinke et al.'s one-run audit); writes "
        "audit_run.json and audit_run.png to --output-dir.",
    )
    p.add_argument("--run", default=None, metavar="DIR",
                   help="audit the finished `qshiftdp train` run in DIR (its --output-dir): its "
                   "saved configuration is trained again with gradient canaries and scored by "
                   "the one-run estimator; DIR is only read. Not combinable with the one-step "
                   "flags (--credit, --shots, --trials, ...)")
    p.add_argument("--canaries", type=int, default=None,
                   help="with --run: the number m of canaries, each included by a fair coin "
                   "(default: L orthonormal layers of the model's dimension d, "
                   "L = 1 + floor(steps x q / 2), at most 1000: 144 for the default train "
                   "job)")
    p.add_argument("--credit", action=_Seen, default="none",
                   choices=["none", "depolarizing", "adaptive", "isotropic", "all"],
                   help="shot-noise credit mode; 'all' audits every credit mode and Opacus's "
                   "fixed (--clip-norm) and adaptive clipping (default: %(default)s)")
    p.add_argument("--max-grad-norm", action=_Seen, default="certified",
                   help="'certified', 'adaptive' or a positive number (default: %(default)s)")
    p.add_argument("--clip-norm", action=_Seen, type=float, default=0.5,
                   help="fixed clip norm audited by --credit all (default: %(default)s)")
    p.add_argument("--shots", action=_Seen, type=int, nargs="+", default=[2],
                   help="shots Ns per shifted circuit; several values audit each (default: 2)")
    p.add_argument("--background", action=_Seen, nargs="+", choices=["shot", "zero"],
                   default=["shot", "zero"],
                   help="the other examples: 'shot' (maximal shot variance; the lattice score) "
                   "and/or 'zero' (zero gradients: the release on D is the DP noise alone); "
                   "default both")
    p.add_argument("--trials", action=_Seen, type=int, default=2000,
                   help="trials per data set (default: %(default)s)")
    p.add_argument("--epsilon", action=_Seen, type=float, default=2.0,
                   help="target ε in nats (default: %(default)s)")
    p.add_argument("--delta", action=_Seen, type=float, default=1e-5,
                   help="target δ (default: %(default)s)")
    p.add_argument("--beta", action=_Seen, type=float, default=1e-3,
                   help="β of the adaptive and isotropic credits (default: %(default)s)")
    p.add_argument("--depolarizing", action=_Seen, type=float, default=None,
                   help="PennyLane DepolarizingChannel q before the measurement (default.mixed; "
                   "v_min proven by qprldp_core.certify_device); default 0.25 with --credit "
                   "depolarizing, else 0")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="joint confidence of the lower bounds (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seeds every trial (default: %(default)s)")
    p.add_argument("--output-dir", default=None,
                   help="write audit.json and one score histogram (PNG) per configuration here "
                   "(with --run: audit_run.json and audit_run.png)")
    p.add_argument("--no-progress", action="store_true",
                   help="hide the progress lines and bars on stderr (one per configuration "
                   "and its trials; with --run the re-run's training bar)")
    _add_json_arg(p)
    p.set_defaults(func=_run_audit)


def _run_audit_run(args) -> int:
    """``qshiftdp audit --run DIR``: the one-run audit of a finished training run."""
    from pathlib import Path

    from ..audit import plot_one_run
    from .audit_run import audit_run

    seen = sorted(getattr(args, "_seen", ()))
    if seen:
        raise _CLIError(f"--run audits the finished run's own configuration; drop "
                        f"{', '.join(seen)} (one-step audit flags).")
    canaries = args.canaries
    if canaries is not None and canaries < 2:
        raise _CLIError(f"--canaries must be at least 2. Found {canaries}.")
    if not 0.0 < args.confidence < 1.0:
        raise _CLIError(f"--confidence must be in (0, 1). Found {args.confidence}.")
    if args.output_dir is not None and not str(args.output_dir).strip():
        raise _CLIError("--output-dir must name a directory. Found ''.")
    r = audit_run(args.run, canaries=canaries, seed=args.seed, confidence=args.confidence,
                  progress=not args.no_progress)
    doc = r.as_dict()
    if args.output_dir is not None:
        out = Path(args.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "audit_run.json").write_text(json.dumps(doc, indent=2) + "\n",
                                            encoding="utf-8")
        plot_one_run(r, out / "audit_run.png")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(str(r))
        # OneRunResult is a dict (its attribute access is untyped): read its keys
        rate = "n/a (no step ran)" if r["sample_rate"] is None else f"{r['sample_rate']:.4g}"
        from .._formatting import format_up

        print(f"  δ = {format_up(r['delta'])}; {r['steps']} steps at q = {rate}; "
              f"{r['parameters']} parameters ({r['layers']} {r['directions']} layer(s) of "
              f"canary directions); "
              f"canaries sampled {r['canaries_sampled']} times")
        if r.get("limits"):
            print(f"  {r['limits']['text']}")
        if args.output_dir is not None:
            print(f"outputs: {args.output_dir}")
    return 1 if r.proven_refuted else 0


def _run_audit(args) -> int:
    from pathlib import Path

    from ..audit import SETTING_MODES, SettingSpec, TrialSpec, audit_setting

    if args.run is not None:
        return _run_audit_run(args)
    if args.canaries is not None:
        raise _CLIError("--canaries needs --run DIR (the one-run audit of a training run).")
    if args.trials < 4:
        raise _CLIError(f"--trials must be at least 4 (half select the threshold, half "
                        f"evaluate it). Found {args.trials}.")
    if any(s < 1 for s in args.shots):
        raise _CLIError(f"--shots must be positive integers. Found {args.shots}.")
    if not 0.0 < args.confidence < 1.0:
        raise _CLIError(f"--confidence must be in (0, 1). Found {args.confidence}.")
    if args.depolarizing is not None and not 0.0 <= args.depolarizing <= 0.75:
        raise _CLIError(f"--depolarizing must be in [0, 0.75]. Found {args.depolarizing}.")
    if not (args.epsilon > 0 and math.isfinite(args.epsilon)):
        raise _CLIError(f"--epsilon must be a positive finite number. Found {args.epsilon}.")
    if not 0.0 < args.delta < 1.0:
        raise _CLIError(f"--delta must be in (0, 1). Found {args.delta}.")
    clip = args.max_grad_norm
    if clip not in ("certified", "adaptive"):
        try:
            clip = float(clip)
        except ValueError:
            clip = None
        if clip is None or not (clip > 0 and math.isfinite(clip)):
            raise _CLIError(f"--max-grad-norm must be 'certified', 'adaptive' or a positive "
                            f"number. Found {args.max_grad_norm!r}.")
    if not (0.0 < args.beta < 1.0):  # used by the adaptive and isotropic credit modes
        raise _CLIError(f"--beta must be in (0, 1). Found {args.beta}.")
    if args.credit == "all":
        if args.max_grad_norm != "certified":
            raise _CLIError(f"--credit all audits every mode with its own clipping; drop "
                            f"--max-grad-norm. Found {args.max_grad_norm!r}.")
        if not (args.clip_norm > 0 and math.isfinite(args.clip_norm)):
            raise _CLIError(f"--clip-norm must be a positive finite number. Found "
                            f"{args.clip_norm}.")
        configs: list[dict[str, Any]] = [{"mode": m} for m in SETTING_MODES]
    else:
        configs = [{"credit": args.credit, "max_grad_norm": clip}]
    out_dir = Path(args.output_dir) if args.output_dir is not None else None
    results = []
    runs = [(shots, background, cfg) for shots in args.shots
            for background in dict.fromkeys(args.background) for cfg in configs]
    for i, (shots, background, cfg) in enumerate(runs, 1):
        with _audit_progress(args, i, len(runs), cfg, shots, background) as progress:
            spec = SettingSpec(**cfg, shots=shots, target_epsilon=args.epsilon,
                               target_delta=args.delta, beta=args.beta,
                               depolarizing=args.depolarizing, clip_norm=args.clip_norm,
                               background=background)
            r = audit_setting(spec=spec, trial_spec=TrialSpec(
                args.trials, seed=args.seed, confidence=args.confidence, progress=progress))
        if out_dir is not None and not r.refused:
            from ..audit import plot_audit

            name = "".join(c if c.isalnum() or c in "._-" else "_" for c in r.label)
            tail = "" if background == "shot" else "_zero"
            plot_audit(r, out_dir / f"audit_{name}_Ns{shots}{tail}.png")
        results.append((shots, r))
        if not args.json:
            print(f"  {r}", file=sys.stderr)
    rows = [{"shots": s, **r.as_dict()} for s, r in results]
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "audit.json").write_text(json.dumps({"results": rows}, indent=2))
    if args.json:
        print(json.dumps({"results": rows}, indent=2))
    else:
        _print_audit_table(results)
        if out_dir is not None:
            print(f"outputs: {out_dir}")
    return 1 if any(r.proven_refuted for _, r in results) else 0


@contextlib.contextmanager
def _audit_progress(args, i: int, n: int, cfg: dict, shots: int, background: str):
    """Progress of audit ``i`` of ``n`` on stderr: a line when it starts (building the step,
    calibrating σ), a tqdm bar over its trials, a line with its seconds when it ends; yields
    the ``progress(done, total)`` callback of :func:`~pennylane_qshiftdp.audit.audit_setting`
    (``None`` with --no-progress). The bar reads nothing the audit computes from."""
    if args.no_progress:
        yield None
        return
    import time

    from tqdm.auto import tqdm

    what = cfg.get("mode") or f"credit {cfg['credit']}, --max-grad-norm {cfg['max_grad_norm']}"
    print(f"audit {i}/{n}: {what}, Ns = {shots}, background {background}: building the private "
          f"step and calibrating its noise, then {args.trials} trials on D and on D' ...",
          file=sys.stderr, flush=True)
    bar = tqdm(total=args.trials, desc=f"audit {i}/{n} trials", unit="trial", file=sys.stderr,
               leave=False, mininterval=0.5)
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield progress
    finally:
        bar.close()
    print(f"audit {i}/{n}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr,
          flush=True)


def _print_audit_table(results) -> None:
    def f(x):
        return "-" if x is None else f"{x:.3f}"

    print("| mode | Ns | trials | background | claimed proven ε | claimed credited ε | δ (+β) | "
          "audited ε ≥ (Clopper-Pearson / Gaussian DP) | CEILING (CP / GDP) | verdict | s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for shots, r in results:
        est = r.estimator_bounds
        per = " / ".join(f(est.get(k)) for k in ("clopper_pearson", "gdp"))
        ceil = " / ".join(f(r.ceilings.get(k)) for k in ("clopper_pearson", "gdp"))
        dlt = f"{r.delta:g}" + (f" + {r.beta:g}" if r.beta else "")
        verdict = r.verdict if not r.refused else f"refused: {r.message}"
        if r.findings:
            verdict += " — FINDING: " + "; ".join(r.findings)
        audited = "-" if r.refused else f(r.epsilon_lower_bound)
        print(f"| {r.label} | {shots} | {r.trials} | {r.settings.get('background', '-')} | "
              f"{f(r.claimed_epsilon)} | {f(r.credited_epsilon)} | {dlt} | {audited} ({per}) | "
              f"{ceil} | {verdict} | {r.seconds:.1f} |")


# --------------------------------------------------------------------------- predict
def _add_predict_parser(subparsers) -> None:
    """Register ``qshiftdp predict``: a finished run's model on new data."""
    p = subparsers.add_parser(
        "predict",
        help="predict new data with a finished `qshiftdp train` run's model",
        description="Load the model of a finished (or interrupted) `qshiftdp train` run from "
        "its output directory (checkpoint.pt, read with weights_only) and predict every row "
        "of a CSV file of raw features (with a header row; the run's own preprocessing is "
        "applied). Columns are matched by name when the header names the run's features, "
        "else taken in order. Predictions are post-processing of the DP release: they cost "
        "no privacy. Prints a CSV (one `prediction` per row) or writes it to --output.",
    )
    p.add_argument("--run", required=True, metavar="DIR",
                   help="the run's --output-dir (it holds checkpoint.pt)")
    p.add_argument("--csv", required=True, metavar="FILE", help="CSV file of raw features")
    p.add_argument("--label-column", default=None,
                   help="a column of true labels: left out of the features, and the accuracy is "
                   "printed")
    p.add_argument("--output", default=None, metavar="FILE",
                   help="write the input rows with a `prediction` column here instead of "
                   "printing the predictions")
    p.set_defaults(func=_run_predict)


def _run_predict(args) -> int:
    import csv
    import os

    if not os.path.isfile(os.path.join(args.run, "checkpoint.pt")):
        raise _CLIError(f"--run must be a `qshiftdp train` output directory holding "
                        f"checkpoint.pt. Found none in {args.run!r}.")
    if not os.path.isfile(args.csv):
        raise _CLIError(f"--csv must be an existing file. Found {args.csv!r}.")
    from .predict import accuracy, load_run

    run = load_run(args.run)
    predicted, true = run.predict_csv(args.csv, label_column=args.label_column)
    if args.output is not None:
        with open(args.csv, newline="", encoding="utf-8") as fh:
            rows = [r for r in csv.reader(fh) if any(c.strip() for c in r)]
        with open(args.output, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow([*rows[0], "prediction"])
            writer.writerows([*r, y] for r, y in zip(rows[1:], predicted, strict=True))
        print(f"{len(predicted)} predictions written to {args.output}")
    else:
        print("prediction")
        for y in predicted:
            print(y)
    if true is not None:
        print(f"accuracy: {accuracy(predicted, true, run):.4f} on {len(true)} rows "
              f"(--label-column {args.label_column})", file=sys.stderr if args.output is None
              else sys.stdout)
    return 0


# --------------------------------------------------------------------------- certify
def _add_certify_parser(subparsers) -> None:
    """Register ``qshiftdp certify``: certificates of the training device's noise."""
    p = subparsers.add_parser(
        "certify",
        help="QPrLDP/QLDP certificates of the training device's depolarizing noise (and the "
        "variance floor --credit depolarizing uses)",
        description="Certify the depolarizing noise of the device `qshiftdp train` trains on: "
        "the job's circuit on --qubits qubits with PennyLane's DepolarizingChannel(q) on "
        "every qubit after the last gate (--depolarizing q, as `qshiftdp train "
        "--depolarizing`), or with a noise model (--noise-model: a fake backend such as "
        "FakeManilaV2, or MODULE:NAME naming a PennyLane or Qiskit Aer NoiseModel, as `qshiftdp "
        "train --noise-model`; each of its channels counts through its depolarizing part, the "
        "largest p with N = D_p o M, and the report lists what is not covered: thermal "
        "relaxation, reset and readout errors). Prints the QPrLDP and QLDP "
        "certificates (ε, δ) of every noise channel and of the final noise layer, and the "
        "proven variance floor v_min. These certify the device channel, not the training "
        "data. For a depolarizing channel given by its parameter see `qprldp certify`.",
    )
    noise = p.add_mutually_exclusive_group(required=True)
    noise.add_argument("--depolarizing", type=float, default=None, metavar="Q",
                       help="PennyLane DepolarizingChannel q in [0, 0.75] on every qubit "
                       "(D_p with p = 4q/3)")
    _add_noise_model_arg(noise)
    p.add_argument("--epsilon", type=float, required=True, help="ε in nats, >= 0")
    p.add_argument("--delta", type=float, default=None,
                   help="also print the smallest certified ε for this δ in [0, 1]")
    p.add_argument("--qubits", type=_positive_int, default=4,
                   help="qubits of the job's circuit (default: %(default)s)")
    p.add_argument("--layers", type=_positive_int, default=2,
                   help="StronglyEntanglingLayers of the job's circuit (default: %(default)s)")
    _add_json_arg(p)
    p.set_defaults(func=_run_certify)


def _run_certify(args) -> int:
    from .checks import MAX_QUBITS

    if not (math.isfinite(args.epsilon) and args.epsilon >= 0):
        raise _CLIError(f"--epsilon must be a finite number >= 0 (nats). Found {args.epsilon}.")
    if args.delta is not None and not 0.0 <= args.delta <= 1.0:
        raise _CLIError(f"--delta must be in [0, 1]. Found {args.delta}.")
    if args.depolarizing is not None and not 0.0 <= args.depolarizing <= 0.75:
        raise _CLIError(f"--depolarizing (PennyLane's q) must be in [0, 0.75]. Found "
                        f"{args.depolarizing}.")
    if args.qubits > MAX_QUBITS:
        raise _CLIError(f"--qubits must be at most {MAX_QUBITS}. Found {args.qubits}.")
    from .certify import certify_job_device, format_report, load_noise_model, report_dict

    model = (None if args.noise_model is None
             else load_noise_model(args.noise_model, qubits=args.qubits))
    cert = certify_job_device(epsilon=args.epsilon, delta=args.delta, qubits=args.qubits,
                              layers=args.layers, depolarizing=args.depolarizing,
                              noise_model=model)
    if args.json:
        print(json.dumps(report_dict(cert), indent=2))
        return 0
    source = (f"DepolarizingChannel(q={args.depolarizing:g}) on every qubit after the last gate"
              if args.noise_model is None else f"noise model {args.noise_model}")
    print(format_report(cert, source=source, qubits=args.qubits, layers=args.layers))
    return 0


# --------------------------------------------------------------------------- shared
def _default_accountant() -> str:
    from .config import TrainConfig

    return TrainConfig.accountant


def _add_accountant_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--accountant",
        choices=ACCOUNTANT_CHOICES,
        default=_default_accountant(),
        help="accountant: pld (dp-accounting's privacy loss distributions, pessimistic; "
        "default), rdp (Opacus) or prv (Opacus; slower)",
    )


def _add_noise_model_arg(p) -> None:
    """``--noise-model`` (train and certify: one parser, one help text)."""
    from .noise_spec import NOISE_MODEL_HELP, NOISE_MODEL_METAVAR, parse_noise_model

    p.add_argument("--noise-model", default=None, metavar=NOISE_MODEL_METAVAR,
                   type=parse_noise_model, help=NOISE_MODEL_HELP)


def _add_json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def _is_device_error(err: Exception) -> bool:
    """A PennyLane ``DeviceError`` (a usage error: the device cannot run the request)."""
    exceptions = sys.modules.get("pennylane.exceptions")
    return exceptions is not None and isinstance(err, exceptions.DeviceError)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"WARNING ({category.__name__}): {message}", file=sys.stderr if file is None else file)


def main(argv: Sequence[str] | None = None) -> int:
    r"""Run the ``qshiftdp`` command line.

    Args:
        argv: arguments without the program name; ``None`` reads ``sys.argv[1:]``.

    Returns:
        The exit status: 0 on success, 2 on a usage or value error (message on stderr).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        with warnings.catch_warnings():
            # warnings as command-line messages ("WARNING (PrivacyWarning): ..."), not as
            # Python's "file:line: Category: ..." with a line of our source code; only as the
            # console command (argv None): a caller passing argv may record them itself
            if argv is None:
                warnings.showwarning = _show_warning
            return int(args.func(args))
    except (_CLIError, ValueError, TypeError, NotImplementedError) as err:
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
        return 2
    except Exception as err:
        if not _is_device_error(err):
            raise
        print(f"{PROG} {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        hint = (" Whatever was written to --output-dir is kept; after a second Ctrl-C during "
                "training the steps since the last checkpoint are not recorded there (the first "
                "Ctrl-C writes them)." if args.command == "train" else "")
        print(f"\n{PROG} {args.command}: interrupted.{hint}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
