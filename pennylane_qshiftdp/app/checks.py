r"""The value checks of ``qshiftdp train`` that need no data: made before any heavy import.

:func:`check_train_config` refuses every setting that is wrong whatever the data hold, before
torch, PennyLane, Opacus or scikit-learn is imported (this module imports numpy at most), so a
mistyped flag costs well under a second instead of the seconds those imports take. It is the
first thing :func:`pennylane_qshiftdp.app.job.train` does, and ``qshiftdp train`` calls it
before it imports the job.

Messages name the :class:`~.config.TrainConfig` field in backticks
(``ValueError("`delta` must be in (0, 1). Found 1.5.")``); the command line replaces each by
its flag. The checks that need the data (the classes of a CSV file, its values) stay with the
data loader, and :func:`check_classes_fit` is shared with the job for those.
"""

from __future__ import annotations

import math
import numbers
import os
from pathlib import Path

from .._validation import (
    check_beta,
    check_choice,
    check_delta,
    check_epsilon,
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    check_probability,
)
from .config import TrainConfig, check_input_center
from .defaults import AUTO, check_center_applies, feature_count, resolve_model

__all__ = ["CREDIT_MODES", "LOSSES", "MAX_QUBITS", "check_classes_fit", "check_loss",
           "check_train_config"]

#: Largest qubit count the training job accepts (a state vector of 2^n amplitudes per circuit;
#: at 16 qubits the public clip norm's batched Jacobian alone needs tens of GiB).
MAX_QUBITS = 14

#: ``loss`` values of the job.
LOSSES = ("auto", "linear", "mse", "logistic", "cross_entropy")

#: ``credit`` values of the job (shot-noise credit modes of ``make_private``).
CREDIT_MODES = ("none", "depolarizing", "adaptive", "isotropic")

_CLIP_MODES = ("auto", "certified", "public", "adaptive")


def _is_auto(value) -> bool:
    return isinstance(value, str) and value == AUTO


def _auto_or(value, check, name: str):
    """``value`` is ``"auto"`` or passes ``check(value, name)``."""
    if isinstance(value, str):
        if value != AUTO:
            raise ValueError(f"`{name}` must be 'auto' or a number. Found {value!r}.")
        return
    check(value, name)


def _check_epsilon(value) -> None:
    """A positive ε in nats, or inf (the non-private baseline)."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(value):
        raise ValueError("`epsilon` must be a positive number or inf (no noise). Found nan.")
    if not (isinstance(value, numbers.Real) and math.isinf(value) and float(value) > 0):
        check_epsilon(value, "epsilon")


def _check_shots(value, name: str, *, auto: bool) -> None:
    if value is None or (auto and _is_auto(value)):
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        allowed = "a positive integer, None (analytic)" + (" or 'auto'" if auto else "")
        raise ValueError(f"`{name}` must be {allowed}. Found {value!r}.")


def check_loss(name: str, n_classes: int) -> str:
    """The loss ``name`` resolved for ``n_classes`` (``"auto"``: linear for two classes,
    cross-entropy for more), or a ``ValueError`` naming what fits.

    Example:
        >>> check_loss("auto", 2), check_loss("auto", 3)
        ('linear', 'cross_entropy')
    """
    if name not in LOSSES:
        raise ValueError(f"`loss` must be 'auto', 'linear', 'mse', 'logistic' or "
                         f"'cross_entropy'. Found {name!r}.")
    if name == AUTO:
        name = "linear" if n_classes == 2 else "cross_entropy"
    if n_classes == 2 and name == "cross_entropy":
        raise ValueError("`loss`='cross_entropy' needs at least 3 classes (the binary model has "
                         "one output ⟨Z0⟩); use 'linear', 'logistic' or 'mse' for two classes.")
    if n_classes > 2 and name != "cross_entropy":
        raise ValueError(f"`loss`={name!r} is for two classes (labels ±1); a {n_classes}-class "
                         f"task needs 'cross_entropy' (or 'auto').")
    return name


def check_classes_fit(config: TrainConfig, model: str, n_classes: int) -> None:
    r"""The settings that depend on the number of classes :math:`K` only.

    The loss must fit :math:`K` (:func:`check_loss`); a circuit model has at most
    :math:`2n - 1` readouts on :math:`n` qubits (one Z per qubit, one ZZ per neighbouring pair);
    a shot-noise credit supports one output per example.

    Args:
        config: the job's settings (``qubits`` may still be ``"auto"``: 4).
        model: ``"quantum"``, ``"hybrid"`` or ``"neuron"`` (:func:`~.defaults.resolve_model`).
        n_classes: :math:`K \ge 2`.

    Raises:
        ValueError: naming the setting.
    """
    check_loss(config.loss, n_classes)
    if model != "neuron":
        qubits = feature_count(config, model)
        if qubits is not None and n_classes > 2 * qubits - 1:
            need = (n_classes + 2) // 2  # K <= 2n - 1
            if config.dataset == "digits" and config.preprocessing == "fixed":
                from .data import DIGITS_POOLING_GRIDS

                need = min(k for k in DIGITS_POOLING_GRIDS if k >= need)
            raise ValueError(
                f"`n_classes` = {n_classes} needs at least {need} qubits (K <= 2 * qubits - 1 "
                f"readouts: one Z per qubit and one ZZ per neighbouring pair). Found "
                f"`qubits`={qubits}.")
    if n_classes > 2 and config.credit != "none":
        raise ValueError(f"`credit`={config.credit!r} supports one output per example; a "
                         f"{n_classes}-class model has {n_classes}. Use credit='none'.")


def _check_scalars(config: TrainConfig) -> None:
    """Every setting on its own (ranges, types, choices)."""
    _check_epsilon(config.epsilon)
    check_delta(config.delta, "delta")
    check_probability(config.test_size, "test_size", open_low=True, open_high=True)
    _auto_or(config.epochs, check_positive_float, "epochs")
    _auto_or(config.expected_batch_size, check_positive_int, "expected_batch_size")
    _check_shots(config.shots, "shots", auto=True)
    _check_shots(config.eval_shots, "eval_shots", auto=False)
    check_choice(config.shot_sampling, "shot_sampling", ("auto", "exact_law", "device"))
    _auto_or(config.layers, check_positive_int, "layers")
    _auto_or(config.qubits, check_positive_int, "qubits")  # any string but "auto" refused
    if not isinstance(config.qubits, str) and config.qubits > MAX_QUBITS:
        raise ValueError(
            f"`qubits` must be at most {MAX_QUBITS} in the training job. Found {config.qubits}. "
            f"Simulation memory and time grow as 2^qubits (one private step at 12 qubits takes "
            f"seconds to tens of seconds on two cores, and the public clip norm evaluates "
            f"hundreds of states at once); build larger models with the Python API "
            f"(make_private) on a device that can hold them.")
    _auto_or(config.lr, check_positive_float, "lr")
    _auto_or(config.logit_scale, check_positive_float, "logit_scale")
    _auto_or(config.input_center, check_input_center, "input_center")
    check_choice(config.loss, "loss", LOSSES)
    check_choice(config.credit, "credit", CREDIT_MODES)
    check_beta(config.beta, "beta", required=config.credit in ("adaptive", "isotropic"))
    check_probability(config.depolarizing, "depolarizing")
    if config.depolarizing > 0.75:
        raise ValueError(f"`depolarizing` (PennyLane's q) must be in [0, 0.75]. "
                         f"Found {config.depolarizing!r}.")
    if config.depolarizing > 0 and config.device not in (AUTO, "default.mixed"):
        raise ValueError(f"`depolarizing` > 0 needs a mixed-state simulator: pass "
                         f"device='default.mixed' (or leave it at 'auto'). Found "
                         f"device={config.device!r}.")
    if config.variance_floor is not None:
        check_nonnegative_float(config.variance_floor, "variance_floor")
    clip = config.max_grad_norm
    if isinstance(clip, str):
        check_choice(clip, "max_grad_norm", _CLIP_MODES)
    else:
        check_positive_float(clip, "max_grad_norm")
    check_positive_float(config.classical_max_grad_norm, "classical_max_grad_norm")
    if config.credit != "none":
        factor = check_positive_float(config.proven_epsilon_factor, "proven_epsilon_factor")
        if factor <= 1.0:
            raise ValueError(
                f"`proven_epsilon_factor` must be a finite number above 1 (the proven ε may "
                f"exceed the target by at most this factor when shot noise is credited). Found "
                f"{config.proven_epsilon_factor!r}.")
    check_choice(config.adjacency, "adjacency", ("add_remove", "replace_one"))
    seed = config.seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer. Found {seed!r}.")


def _check_output_dir(config: TrainConfig, resume: bool) -> None:
    """An output directory that names one, holds no other run, or holds the one to resume."""
    out = config.output_dir
    if out is None:
        if resume:
            raise ValueError("--resume needs a checkpoint in `output_dir`. Found None.")
        return
    if not str(out).strip():
        raise ValueError("`output_dir` must name a directory. Found ''.")
    out_dir = Path(out)
    if resume:
        if not (out_dir / "checkpoint.pt").is_file():
            raise ValueError(f"--resume needs a checkpoint in `output_dir`. Found none in "
                             f"{out_dir}.")
    elif any((out_dir / f).exists() for f in ("ledger.json", "checkpoint.pt")):
        raise ValueError(
            f"`output_dir` {out_dir} already holds a run (ledger.json or checkpoint.pt). Pass "
            f"--resume to continue it, or choose a new `output_dir`; a ledger is never "
            f"overwritten.")
    parent = next((p for p in [out_dir, *out_dir.parents] if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise ValueError(f"`output_dir` {out_dir} cannot be created: {parent} is a file.")
    if parent is not None and not os.access(parent, os.W_OK):
        raise ValueError(f"`output_dir` {out_dir} is not writable.")


def check_train_config(config: TrainConfig, *, resume: bool = False) -> int | None:
    r"""Refuse every setting of ``config`` that is wrong whatever the data hold.

    Checks each setting's range and type, the combinations that need no data (a credit mode
    and its ``beta``, device noise and its device, the neuron model and the settings it does
    not support), the task's public shape through :func:`~.data.check_task` (data set,
    columns, feature ranges, the classes of a scikit-learn set), the settings that depend on
    the number of classes where it is known (:func:`check_classes_fit`), and the output
    directory (never another run's; with ``resume``, one holding a checkpoint).

    Imports nothing heavier than numpy: no torch, PennyLane, Opacus, SciPy or scikit-learn.

    Args:
        config: the job's settings, ``"auto"`` values unresolved.
        resume: the run continues the checkpoint in ``config.output_dir``.

    Returns:
        int | None: the number of classes when the data set's shape tells it (the
        scikit-learn sets), else ``None``.

    Raises:
        ValueError: naming the setting (a field of :class:`~.config.TrainConfig` in
            backticks, or ``name`` for the data set as :func:`~.data.load_dataset` names it).
        TypeError: for a value of the wrong type.

    Example:
        >>> check_train_config(TrainConfig(dataset="iris"))
        3
        >>> check_train_config(TrainConfig(delta=1.5))
        Traceback (most recent call last):
        ...
        ValueError: `delta` must be in (0, 1). Found 1.5.
    """
    from .data import check_task

    _check_scalars(config)
    model = resolve_model(config)
    check_center_applies(config, model)
    n_classes = check_task(config.dataset, n_features=feature_count(config, model),
                           preprocessing=config.preprocessing, classes=config.classes,
                           csv_path=config.csv_path, label_column=config.label_column,
                           feature_range=config.feature_range)
    if n_classes is not None:
        check_classes_fit(config, model, n_classes)
    _check_output_dir(config, resume)
    return n_classes
