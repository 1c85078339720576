r"""Load a finished ``qshiftdp train`` run's model and predict on new data.

:func:`load_run` rebuilds the run's classifier from its directory (``checkpoint.pt``, read with
``torch.load(..., weights_only=True)``) with the trained weights, and the run's feature map:
the same data-independent preprocessing (``fixed``: digits pooling or the declared feature
ranges) turns new raw feature rows into the angles the model was trained on. Predictions are the
released weights applied to new data: post-processing of the DP release, so they cost no
privacy. They are analytic (``shots=None``), as the job's test accuracy is on simulators.

A run with ``--preprocessing standardize_pca`` has no saved feature map: its statistics are
computed from the training data (not protected, so not saved with the model); :func:`load_run`
refits them from the run's own data set (a scikit-learn set, or its CSV file if it is still
where the run read it), as the run did.

Example (command line)::

    qshiftdp train --dataset iris --output-dir runs/iris
    qshiftdp predict --run runs/iris --csv new_flowers.csv --output predictions.csv
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from .config import TrainConfig, saved_settings
from .defaults import resolved

__all__ = ["RunModel", "accuracy", "load_run"]


@dataclasses.dataclass(frozen=True, eq=False)
class RunModel:
    """A finished run's classifier, ready to predict.

    Attributes:
        model: the trained model (``torch.nn.Module``; analytic, float64).
        config: the run's settings, its ``"auto"`` ones resolved.
        feature_names: the raw columns the model reads, in order.
        classes: the original class labels in model-label order.
        class_names: their names as the run printed them.
        transform: raw feature rows (n, raw columns) → angles (n, features).
    """

    model: torch.nn.Module
    config: TrainConfig
    feature_names: tuple[str, ...]
    classes: tuple
    class_names: tuple[str, ...]
    transform: Callable[[np.ndarray], np.ndarray]

    def predict(self, X) -> list[str]:
        """Predicted class names for raw feature rows.

        Args:
            X: raw features of shape (n, len(feature_names)), in the run's column order and
                units (before any preprocessing).

        Returns:
            list[str]: one class name (:attr:`class_names`) per row.

        Raises:
            ValueError: for a wrong number of columns or non-finite values.
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.feature_names):
            raise ValueError(f"`X` must have shape (n, {len(self.feature_names)}): the run "
                             f"reads {len(self.feature_names)} raw features. Found shape "
                             f"{X.shape}.")
        if not np.all(np.isfinite(X)):
            raise ValueError("`X` must have finite values. Found NaN or inf.")
        angles = torch.as_tensor(self.transform(X), dtype=torch.float64)
        with torch.no_grad():
            out = self.model(angles)
        if out.ndim == 1:  # two classes: sign of the readout, -1 -> first class
            index = (out >= 0).long().tolist()
        else:
            index = out.argmax(dim=1).tolist()
        return [self.class_names[i] for i in index]

    def predict_csv(self, path: str | os.PathLike, *,
                    label_column: str | None = None) -> tuple[list[str], list[str] | None]:
        """Predict every row of a CSV file with a header row.

        The feature columns are the file's columns other than ``label_column``: matched by
        name when the header names every column the run reads (in any order), else taken in
        file order (their number must match).

        Args:
            path: the CSV file.
            label_column: a column of true labels (optional: then returned, for accuracy).

        Returns:
            tuple: the predicted class names and the true labels (``None`` without
            ``label_column``), one per row.

        Raises:
            ValueError: for a missing file, column or value, or a non-numeric feature.
        """
        rows, header = _read_rows(path)
        if label_column is not None and label_column not in header:
            raise ValueError(f"`label_column` {label_column!r} is not a column of {str(path)!r}. "
                             f"Columns: {', '.join(repr(h) for h in header)}.")
        features = [h for h in header if h != label_column]
        if set(self.feature_names) <= set(features):
            features = list(self.feature_names)
        elif len(features) != len(self.feature_names):
            raise ValueError(
                f"The CSV file {str(path)!r} has {len(features)} feature columns; the run "
                f"reads {len(self.feature_names)} ({', '.join(self.feature_names)}). Give "
                f"those columns, by name or in this order (and name the label column, if "
                f"any, with --label-column).")
        index = [header.index(h) for h in features]
        X = np.empty((len(rows), len(index)))
        for i, row in enumerate(rows):
            for k, j in enumerate(index):
                try:
                    X[i, k] = float(row[j])
                except ValueError:
                    raise ValueError(f"Column {header[j]!r} of {str(path)!r} must be numeric. "
                                     f"Found {row[j]!r} on line {i + 2}.") from None
        labels = None
        if label_column is not None:
            li = header.index(label_column)
            labels = [row[li].strip() for row in rows]
        return self.predict(X), labels


def _read_rows(path) -> tuple[list[list[str]], list[str]]:
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"`csv` must be an existing file. Found {path!r}.")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise ValueError(f"The CSV file {path!r} needs a header row and at least one data row.")
    header = [h.strip() for h in rows[0]]
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise ValueError(f"Line {i} of {path!r} has {len(r)} fields; the header has "
                             f"{len(header)}.")
    return rows[1:], header


def _task(config: TrainConfig, ckpt: dict,
          run_dir: Path | None = None) -> tuple[dict, Callable | None]:
    """The checkpoint's task record, and for standardize_pca the refitted feature map.

    The refit reads the training data again from the run's path: when the run recorded which
    data it trained on (:mod:`.resume_check`), data that differ are refused, as on resume.
    """
    task = ckpt.get("task")
    if task is not None and config.preprocessing == "fixed":
        return task, None
    from .data import load_dataset  # refit from the run's own data (or an older checkpoint)

    # the checkpoint's settings are the resolved ones (no "auto" left)
    n_features = None if config.model == "neuron" else resolved(config.qubits, "qubits")
    try:
        data = load_dataset(config.dataset, n_features=n_features, seed=config.seed,
                            test_size=config.test_size, preprocessing=config.preprocessing,
                            csv_path=config.csv_path, label_column=config.label_column,
                            classes=config.classes, feature_range=config.feature_range)
    except ValueError as err:
        raise ValueError(f"the run's feature map needs its training data set, which cannot be "
                         f"read again: {err}") from err
    if run_dir is not None and ckpt.get("data") is not None:  # older runs: nothing to check
        from .resume_check import check_same_data, loader_facts

        check_same_data(run_dir, ckpt, data, loader_facts(data, config.expected_batch_size),
                        what="predict (refitting the run's feature map)",
                        fix="the feature map is refitted from the run's training data: restore "
                            "them at the path the run read")
    from .build import task_record

    return task_record(data, config), data.transform


def load_run(run_dir: str | os.PathLike) -> RunModel:
    """The classifier of a finished (or interrupted) ``qshiftdp train`` run.

    Args:
        run_dir: the run's ``--output-dir`` (it holds ``checkpoint.pt``).

    Returns:
        RunModel: the model with the run's last weights and its feature map.

    Raises:
        ValueError: no checkpoint in ``run_dir``, or one that cannot be read.

    Example::

        from pennylane_qshiftdp.app.predict import load_run

        run = load_run("runs/iris")
        run.predict([[5.1, 3.5, 1.4, 0.2]])         # ['setosa']
        predicted, true = run.predict_csv("flowers.csv", label_column="species")
    """
    from .build import model_factory, resolve_device
    from .data import fixed_feature_map
    from .models import HybridClassifier, QuantumClassifier
    from .outputs import load_checkpoint

    path = Path(run_dir) / "checkpoint.pt"
    if not path.is_file():
        raise ValueError(f"`run` must be a qshiftdp train output directory holding "
                         f"checkpoint.pt. Found none in {os.fspath(run_dir)!r}.")
    ckpt = load_checkpoint(path, what="predict")
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    saved = saved_settings(ckpt["config"])  # a run from before input_center: centred at π/2
    config = TrainConfig(**{k: v for k, v in saved.items() if k in fields})
    for key in ("classes", "feature_range"):  # lists after the round trip: tuples again
        value = getattr(config, key)
        if isinstance(value, list):
            setattr(config, key, tuple(tuple(v) if isinstance(v, list) else v for v in value))
    task, transform = _task(config, ckpt, Path(run_dir))
    if transform is None:
        transform = fixed_feature_map(task["dataset"], task["n_features"],
                                      task["feature_ranges"])
    shape = dataclasses.make_dataclass("Shape", ["n_features", "n_classes"])(
        task["n_features"], len(task["classes"]))
    model_cls = HybridClassifier if config.model == "hybrid" else QuantumClassifier
    evaluation = dataclasses.replace(config, device="auto", shot_sampling="auto")
    make = model_factory(config, shape, model_cls, resolve_device(evaluation))
    model = make(None, 0)
    model.load_state_dict(ckpt["model"])
    model.eval()
    names = tuple(task["class_names"]) or tuple(str(c) for c in task["classes"])
    return RunModel(model=model, config=config,
                    feature_names=tuple(task["raw_feature_names"]),
                    classes=tuple(task["classes"]), class_names=names, transform=transform)


def accuracy(predicted: Sequence[str], true: Sequence[str], run: RunModel) -> float:
    """Share of rows whose prediction names the true label (by class name or label).

    Example:
        >>> class R: classes, class_names = (0, 1), ("no", "yes")
        >>> accuracy(["yes", "no"], ["1", "no"], R())
        1.0
    """
    aliases = {}
    for c, n in zip(run.classes, run.class_names, strict=True):
        for a in (str(c), n, f"{float(c):g}" if isinstance(c, (int, float)) else n):
            aliases[a] = n
    hits = [aliases.get(t.strip(), t.strip()) == p for p, t in zip(predicted, true, strict=True)]
    return float(np.mean(hits)) if hits else math.nan
