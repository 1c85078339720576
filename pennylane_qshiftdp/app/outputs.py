r"""The files of a ``qshiftdp train`` run: ledger, statement, metrics, plots, checkpoint.

Nothing written here is computed from the private batches unless ``diagnostics`` is on
(:mod:`.records`): the checkpoint holds tensors and built-in containers only and is read back
with ``torch.load(..., weights_only=True)``.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..accountants.ledger import PrivacyLedger
from .config import flag_name, saved_settings
from .records import (
    NOT_PROTECTED,
    PUBLIC_EPOCH_FIELDS,
    TEST_SPLIT_NOTE,
    diagnostic_record,
    plain,
    public_ledger_state,
    public_record,
)

if TYPE_CHECKING:
    from .result import TrainResult

__all__ = ["CHECKPOINT_FORMAT", "diagnostics_document", "diagnostics_figure", "load_checkpoint",
           "merge_diagnostics", "noise_figure", "read_checkpoint", "write_checkpoint",
           "write_json", "write_outputs"]

#: ``checkpoint.pt`` layout tag (read back with ``torch.load(..., weights_only=True)``).
CHECKPOINT_FORMAT = "qshiftdp-train-checkpoint-2"


def _training_data_sha256(data) -> str:
    """SHA-256 of the training data: a function of every private example (diagnostics only)."""
    import hashlib

    digest = hashlib.sha256()
    for arr in (data.X_train, data.y_train):
        digest.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    return digest.hexdigest()


def write_json(path: Path, obj) -> None:
    """Write ``obj`` as JSON atomically (temporary file, then rename)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(plain(obj), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def merge_diagnostics(public: list, diagnostic: list, key: str) -> list:
    """Join public rows with their diagnostics rows (same ``key``) for a resumed run."""
    extra = {d[key]: d for d in diagnostic if key in d}
    return [{**row, **extra.get(row.get(key), {})} for row in public]


def diagnostics_document(metrics, records, ledger, data, summary=None) -> dict:
    """``diagnostics.json``: everything computed from the private batches (NOT protected)."""
    doc: dict[str, Any] = {"NOT_PROTECTED": NOT_PROTECTED,
                           "per_step": [diagnostic_record(r) for r in records],
                           "per_epoch": [diagnostic_record(m, PUBLIC_EPOCH_FIELDS)
                                         for m in metrics],
                           "training_data_sha256": _training_data_sha256(data)}
    if ledger is not None and ledger.credit_mode != "none":
        doc["credited_history"] = [list(h) for h in ledger.credited_history]
        doc["credited_epsilon"] = ledger.credited_epsilon
    if summary is not None:
        doc["summary"] = {k: v for k, v in summary.items() if k != "written_to"}
    return doc


def write_checkpoint(out_dir: Path, *, config, epoch, model, sgd, opt, metrics, records,
                     step_in_epoch: int = 0, rngs: dict | None = None, task: dict | None = None,
                     data: dict | None = None):
    """``checkpoint.pt``: tensors and built-in containers only, nothing from the private batches.

    The model and optimizer state (functions of the released noisy gradients), the public
    ledger state (:func:`~.records.public_ledger_state`), the clip norm, and the public
    per-epoch and per-step fields; the data-dependent fields are in ``diagnostics.json`` (with
    ``diagnostics=True``) and are read back from there on resume. An interrupted run's
    checkpoint also holds ``step_in_epoch`` (the steps of epoch ``epoch + 1`` already taken)
    and, for a seeded run, ``rngs`` (the sampler, noise and shot generators' states, public
    seeds' continuations), so that a resumed run takes exactly the remaining steps. ``task``
    is what :func:`~.predict.load_run` needs to read new data (the data set's name, raw column
    names, classes, declared feature ranges: public settings, or the label set a run without
    declared classes read and stated). ``data`` is :func:`~.resume_check.data_facts`: N, q, the
    public batch size B, the declared ranges and the preprocessing's description (public; the
    keyed digest of the rows a resume also checks is in ``resume_check.json``, never here).
    Written to a temporary file, then renamed: an interruption never leaves half a checkpoint.
    """
    path = out_dir / "checkpoint.pt"
    tmp = path.with_name(path.name + ".tmp")
    torch.save({"format": CHECKPOINT_FORMAT, "config": dataclasses.asdict(config),
                "epoch": epoch, "model": model.state_dict(), "optimizer": sgd.state_dict(),
                "ledger": public_ledger_state(opt.ledger) if opt is not None else None,
                "clip_norm": plain(opt.max_grad_norm) if opt is not None else None,
                # every clip group's norm: the one each example is clipped at
                "clip_norms": ([plain(c) for _, c in opt.clip_groups] if opt is not None
                               else None),
                "metrics": plain([public_record(m, PUBLIC_EPOCH_FIELDS) for m in metrics]),
                "step_records": plain([public_record(r) for r in records]),
                # the running sums of the released noisy sums (DP releases; the diagnosis)
                "released_running": (opt.running_release_state() if opt is not None
                                     else None),
                "step_in_epoch": int(step_in_epoch), "rngs": rngs, "task": task,
                "data": data}, tmp)
    os.replace(tmp, path)


def load_checkpoint(path: Path, *, what: str = "the run") -> dict:
    """``checkpoint.pt`` loaded with ``weights_only=True`` (tensors and built-in containers
    only: a file holding any other pickled object is refused, never executed).

    Raises:
        ValueError: for such a file, or one that cannot be read or is not a ``qshiftdp train``
            checkpoint; ``what`` names the reader in the message.
    """
    import pickle
    import re

    try:
        ckpt = torch.load(path, weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+)", str(err))  # torch names the refused callable
        if found:
            raise ValueError(
                f"{what} refused {path}: it holds pickled objects other than tensors and "
                f"built-in containers, and loading them could run arbitrary code (it names "
                f"{found.group(1)}). qshiftdp train never writes such a checkpoint (it may have "
                f"been replaced or tampered with); it was not loaded. Start a new run in a new "
                f"--output-dir.") from None
        raise ValueError(f"{what}: the checkpoint {path} cannot be read (corrupt or "
                         f"truncated?): {type(err).__name__}: {err}") from err
    except Exception as err:  # any unreadable file is reported the same way
        raise ValueError(f"{what}: the checkpoint {path} cannot be read (corrupt or "
                         f"truncated?): {type(err).__name__}: {err}") from err
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("config"), dict) or any(
            k not in ckpt for k in ("epoch", "model", "optimizer", "ledger", "metrics",
                                    "step_records")):
        raise ValueError(f"{what}: the checkpoint {path} cannot be read (corrupt or "
                         f"truncated?): not a qshiftdp train checkpoint.")
    return ckpt


def read_checkpoint(out_dir: Path | None, config, check_data=None) -> tuple[dict, dict | None]:
    """Load ``checkpoint.pt`` with ``weights_only=True`` and check it matches ``config``.

    ``check_data(ckpt, settings_differ)``, if given, is called before the settings are
    compared (:func:`~.resume_check.check_same_data`: the training data must be the run's).

    Returns:
        tuple: the checkpoint and, with ``config.diagnostics``, ``diagnostics.json``.

    Raises:
        ValueError: no checkpoint; a checkpoint holding anything but tensors and built-in
            containers (a pickled object could run code: refused, never executed); an
            unreadable one; settings that differ from the interrupted run; whatever
            ``check_data`` raises.
    """
    if out_dir is None or not (out_dir / "checkpoint.pt").exists():
        raise ValueError(f"--resume needs a checkpoint in `output_dir`. Found none in "
                         f"{out_dir}.")
    path = out_dir / "checkpoint.pt"
    ckpt = load_checkpoint(path, what="--resume")
    saved, now = saved_settings(ckpt["config"]), dataclasses.asdict(config)
    differ = [f"{flag_name(k)}: {saved.get(k)!r} (interrupted run) vs "
              f"{now.get(k)!r} (now)" for k in sorted(set(saved) | set(now))
              if saved.get(k) != now.get(k) and k != "output_dir"]  # a moved run resumes
    if check_data is not None:
        check_data(ckpt, differ)
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
    ledger state is :func:`~.records.public_ledger_state`, the step and epoch records are
    restricted to :data:`~.records.PUBLIC_STEP_FIELDS` and :data:`~.records.PUBLIC_EPOCH_FIELDS`
    (:func:`~.records.public_record`), and the plots show only those. With ``diagnostics`` a
    ``diagnostics.png`` is added (the job writes ``diagnostics.json`` itself), and the credited
    ε is plotted.

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
        write_json(out_dir / "ledger.json", public_ledger_state(ledger))
    (out_dir / "privacy_statement.txt").write_text(result.statement + "\n", encoding="utf-8")
    records = [public_record(r) for r in result.step_records]
    epochs = [public_record(m, PUBLIC_EPOCH_FIELDS) for m in result.metrics]
    write_json(out_dir / "metrics.json", {
        "protected": "every value here is data-independent (step counts, the proven ε, the "
                     "noise added, the clip norm, the planned cost) or computed from the "
                     "released weights (test-split metrics); data-dependent diagnostics are "
                     "only written with --diagnostics: to diagnostics.json, and the measured "
                     "cost to cost.measured (NOT protected)",
        "test_split": {"examples": result.test_examples, "note": TEST_SPLIT_NOTE},
        "test_accuracy": result.test_accuracy,
        "test_balanced_accuracy": result.test_balanced_accuracy,
        "test_majority_rate": result.test_majority_rate,
        "majority_class_warning": result.majority_warning, "epsilon": result.epsilon,
        "steps": result.steps, "shots_per_circuit": result.shots, "device": result.device,
        "per_epoch": epochs, "per_step": records, "diagnostics": diagnostics,
        "stopped_early": result.stopped_early, "cost": result.cost})
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
    # The noise plot only where it carries information: the added noise changes between steps
    # (a clip norm that follows the weights or the quantile, or a credit mode); with the
    # certified clip it is the constant σC printed in the statement.
    noise = out_dir / "noise.png"
    variances = [r["artificial_variance_mean"] for r in records
                 if r.get("artificial_variance_mean") is not None]
    if variances and max(variances) - min(variances) > 1e-12 * max(variances):
        fig = noise_figure(records, plt)
        fig.savefig(noise, dpi=100)
        plt.close(fig)
    elif noise.exists():
        noise.unlink()  # a resumed run that no longer varies: no stale plot
    if diagnostics and result.step_records:
        fig = diagnostics_figure(result.step_records, plt)
        fig.savefig(out_dir / "diagnostics.png", dpi=90)
        plt.close(fig)


def noise_figure(records, plt):
    """``noise.png``: σ_t (the noise relative to the clip norm, what ε is computed from) against
    the plan, and the absolute noise std beside the clip norm C it follows.

    Args:
        records: public step records (:data:`~.records.PUBLIC_STEP_FIELDS`).
        plt: ``matplotlib.pyplot``.

    Returns:
        matplotlib.figure.Figure: the figure (the caller saves and closes it).
    """
    rows = [r for r in records if r.get("artificial_variance_mean") is not None]
    steps = [r["step"] for r in rows]
    clip = np.array([r["clip_norm"] for r in rows], dtype=float)
    std = np.sqrt([r["artificial_variance_mean"] for r in rows])
    planned = np.sqrt([r["target_variance"] for r in rows]) / clip
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(steps, [r["proven_noise_multiplier"] for r in rows], "o-", ms=3,
               label="σ_t = added noise std / C (proven)")
    ax[0].plot(steps, planned, "k--", label="σ planned for the target ε")
    ax[0].set_ylim(0, 1.15 * max(float(planned.max()),
                                 max(r["proven_noise_multiplier"] for r in rows)))
    ax[0].set(xlabel="step", ylabel="noise multiplier σ (std / clip norm)",
              title="Noise relative to the clip: sets ε")
    ax[0].legend(fontsize=7, loc="lower right")
    ax[1].plot(steps, std, "o-", ms=3, c="tab:orange",
               label="added noise std per coordinate (σ_t·C)")
    ax[1].plot(steps, clip, "s-", ms=3, c="tab:green", label="clip norm C")
    ax[1].set_ylim(0, 1.15 * max(float(std.max()), float(clip.max())))
    ax[1].set(xlabel="step", ylabel="gradient units",
              title="Absolute noise: follows the clip norm C")
    ax[1].legend(fontsize=7, loc="lower right")
    fig.suptitle("Noise added per step. A smaller clip norm C means less absolute noise, "
                 "never less privacy: σ = std / C stays as planned", fontsize=9)
    fig.tight_layout()
    return fig


def _not_collected(ax, title: str, text: str) -> None:
    """A panel for a quantity the run did not collect (rather than a line at 0)."""
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, fontsize=8,
            transform=ax.transAxes)
    ax.set(title=title, xticks=[], yticks=[])


def diagnostics_figure(records, plt):
    """``diagnostics.png``: σ_t, clipping, shot variance and its bound, credited share, SNR, ε
    (computed from the private batches: NOT protected). A quantity the run did not collect
    (shot statistics and credit without a credit mode) is a labelled empty panel, not a line
    at 0.

    Args:
        records: full step records (with the diagnostic fields).
        plt: ``matplotlib.pyplot``.

    Returns:
        matplotlib.figure.Figure: the figure (the caller saves and closes it).
    """
    s = [r["step"] for r in records]
    credit = any(r.get("credit_mode", "none") != "none" for r in records)
    fig, ax = plt.subplots(2, 3, figsize=(13, 7))
    ax[0, 0].plot(s, [r["proven_noise_multiplier"] for r in records], label="proven σ_t")
    if credit:
        ax[0, 0].plot(s, [r["credited_noise_multiplier"] for r in records], "--",
                      label="credited σ_t")
    ax[0, 0].set(title="noise multiplier", xlabel="step", ylabel="σ (std / clip norm)")
    ax[0, 0].legend(fontsize=7)
    left = ax[0, 1].plot(s, [r["clip_norm"] for r in records], label="clip norm C (left axis)")
    ax2 = ax[0, 1].twinx()
    right = ax2.plot(s, [r["clipped_fraction"] for r in records], "r.",
                     label="fraction of the batch clipped (right axis)")
    ax[0, 1].set(title="clipping", xlabel="step", ylabel="clip norm C")
    ax2.set_ylabel("fraction clipped", color="r")
    ax2.set_ylim(-0.02, 1.02)
    ax[0, 1].legend(handles=left + right, fontsize=7, loc="center right")
    shot = [(r["step"], r.get("shot_variance_estimate_mean"),
             r.get("shot_variance_lower_bound_mean")) for r in records
            if r.get("shot_variance_estimate_mean") is not None]
    title = "shot-noise variance per coordinate (mean)"
    if shot:
        ax[0, 2].plot([t[0] for t in shot], [t[1] for t in shot], label="estimate")
        ax[0, 2].plot([t[0] for t in shot], [t[2] for t in shot], "--", label="lower bound")
        ax[0, 2].set(title=title, xlabel="step")
        ax[0, 2].legend(fontsize=7)
    else:
        _not_collected(ax[0, 2], title, "not collected: shot statistics are recorded only "
                       "with a shot-noise\ncredit mode (this run: --credit none)")
    target = np.array([r["target_variance"] for r in records])
    title = "credited share of σ²C² (%)"
    if credit:
        ax[1, 0].plot(s, 100 * np.array([r["credited_variance_mean"] for r in records]) / target)
        ax[1, 0].set(title=title, xlabel="step")
    else:
        _not_collected(ax[1, 0], title, "no shot-noise credit mode (--credit none):\n"
                       "nothing is credited")
    ax[1, 1].plot(s, [r["gradient_snr"] for r in records])
    ax[1, 1].set(title="gradient signal-to-noise ratio ‖ΣCLIP(g)‖/‖z‖", xlabel="step")
    ax[1, 2].plot(s, [r["epsilon"] for r in records], label="proven ε")
    if credit:
        ax[1, 2].plot(s, [r["credited_epsilon"] for r in records], "--", label="credited ε")
    ax[1, 2].set(title="ε spent (nats)", xlabel="step")
    ax[1, 2].legend(fontsize=7)
    fig.suptitle("Diagnostics computed from the private batches: NOT protected")
    fig.tight_layout()
    return fig
