r"""Resume and randomness of ``qshiftdp train``: the output directory, the checkpoint read back,
and the run's generators (reseeded per epoch, saved and restored mid-epoch).

* :func:`open_output_dir` checks ``--output-dir`` before training (a ledger is never
  overwritten; ``--resume`` continues the run it holds).
* :func:`restore_run` reads ``checkpoint.pt`` (:func:`~.outputs.read_checkpoint`: the same
  settings; :func:`~.resume_check.check_same_data`: the same training data) and restores the
  model, the optimizer and the ledger; it returns the :class:`ResumePoint` to continue from.
* :class:`RunRandomness` holds the Poisson sampler's, the DP noise's and the simulator's shot
  generators: reseeded every epoch from the public ``--seed`` (a seeded resumed run repeats the
  uninterrupted one exactly) or, in secure mode, the shots from the OS's CSPRNG; their states
  are saved in an interrupted epoch's checkpoint and restored by the resumed run.

The checkpoint's format is :mod:`.outputs`'s (``write_checkpoint``).
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from pathlib import Path

import numpy as np

from .. import _compat
from .outputs import merge_diagnostics, read_checkpoint
from .records import PUBLIC_EPOCH_FIELDS, public_record
from .resume_check import check_same_data

__all__ = ["ResumePoint", "RunRandomness", "open_output_dir", "restore_run", "seed_for"]


def seed_for(seed, epoch, stream) -> int:
    """The seed of ``stream`` (0: the model, 1: shots, 2: the sampler, 3: the noise, 4: the
    evaluation model) in ``epoch`` of a run seeded with ``seed``."""
    return int(np.random.SeedSequence([seed, epoch, stream]).generate_state(1, np.uint64)[0]
               % (2**63))


def open_output_dir(config, resume: bool) -> Path | None:
    """Check the output directory before training (never overwrite a ledger).

    Args:
        config: the run's :class:`~.config.TrainConfig` (``output_dir``).
        resume: the run continues the one the directory holds.

    Returns:
        Path | None: the output directory (created), or ``None`` without ``output_dir``.

    Raises:
        ValueError: if the directory holds a run and ``resume`` is false, or cannot be created
            or written.
    """
    out_dir = Path(config.output_dir) if config.output_dir else None
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
    return out_dir


@dataclasses.dataclass
class ResumePoint:
    """Where an interrupted run continues: its epoch, the steps of that epoch already taken,
    the generators' states at the interruption (seeded runs), its records and metrics."""

    epoch: int
    step_in_epoch: int
    rngs: dict | None
    records: list
    metrics: list
    training_shots: int = 0


def restore_run(out_dir: Path, config, data, facts: dict, *, model, opt, sgd,
                private: bool) -> ResumePoint:
    """Restore the model, optimizer, ledger and records of an interrupted run.

    Args:
        out_dir: the run's output directory (``checkpoint.pt``, ``diagnostics.json``).
        config: this run's (resolved) settings; they must be the checkpoint's.
        data: the training data read now (checked against the run's).
        facts: :func:`~.resume_check.data_facts` of ``data`` (N, q, B, ranges).
        model: the model, whose weights are restored.
        opt: the private optimizer (its state and ledger restored) when ``private``.
        sgd: the plain SGD of the non-private baseline (its state restored otherwise).
        private: the run is private.

    Returns:
        ResumePoint: the epoch, offset, generator states, records and metrics to continue from.

    Raises:
        ValueError: if the checkpoint's settings or data differ from this run's, or its ledger
            samples at another rate q or divides by another expected batch size.
    """
    def check_data(ckpt, settings_differ):  # before anything is restored or trained
        check_same_data(out_dir, ckpt, data, facts, settings_differ=settings_differ)

    ckpt, diag = read_checkpoint(out_dir, config, check_data)
    model.load_state_dict(ckpt["model"])
    point = ResumePoint(epoch=ckpt["epoch"],
                        # an interrupted epoch's steps
                        step_in_epoch=int(ckpt.get("step_in_epoch") or 0),
                        rngs=ckpt.get("rngs"),
                        records=[public_record(r) for r in ckpt["step_records"]],
                        metrics=[public_record(m, PUBLIC_EPOCH_FIELDS) for m in ckpt["metrics"]])
    if diag is not None:  # the data-dependent part, NOT protected, from diagnostics.json
        point.records = merge_diagnostics(point.records, diag.get("per_step", []), "step")
        point.metrics = merge_diagnostics(point.metrics, diag.get("per_epoch", []), "epoch")
        point.training_shots = (int(point.metrics[-1].get("training_shots", 0))
                                if point.metrics else 0)
    if private:
        _restore_private(ckpt, diag, opt, facts, point.records)
    else:
        sgd.load_state_dict(ckpt["optimizer"])
    return point


def _restore_private(ckpt: dict, diag: dict | None, opt, facts: dict, records: list) -> None:
    """The ledger and the private optimizer's state, refused if the ledger's q or b differ."""
    ledger_state = ckpt["ledger"]
    if diag is not None and diag.get("credited_history") is not None:
        ledger_state = {**ledger_state, "credited_history": diag["credited_history"]}
    saved_q = ledger_state.get("sample_rate")
    if saved_q is not None and float(saved_q) != facts["sample_rate"]:
        # check_same_data compared the checkpoint's own record; never record the ledger's
        # old q for new steps either
        raise ValueError(f"--resume: the run's ledger samples at q = {float(saved_q):.6g}, "
                         f"this run's loader at q = {facts['sample_rate']:.6g}; resume "
                         f"with the run's own training data and settings.")
    saved_b = ledger_state.get("expected_batch_size")
    if saved_b is not None and float(saved_b) != float(opt.expected_batch_size):
        raise ValueError(f"--resume: the run's ledger divides the noisy sum by b = "
                         f"{float(saved_b):g}, this configuration by "
                         f"{float(opt.expected_batch_size):g}; resume with the run's "
                         f"own settings.")
    opt.ledger.load_state_dict(ledger_state)
    # through the optimizer's own load_state_dict, so whatever it restores (clip norm,
    # history length for the public clip's refresh) is restored here too
    # the clip groups' norms too: the examples are clipped at those, and a run interrupted
    # between two refreshes of the public clip must not clip at make_private's initial one
    opt.load_state_dict({"optimizer": ckpt["optimizer"], "history": records,
                         "max_grad_norm": ckpt["clip_norm"],
                         "clip_norms": ckpt.get("clip_norms"), "generator": None,
                         **(ckpt.get("released_running") or {})})


class RunRandomness:
    """The generators of a run's randomness: the Poisson sampler's, the DP noise's (``None``
    for the non-private baseline) and the training device's shot sampling (``device`` is
    ``None`` for an analytic run; a device without a numpy generator, such as hardware or
    qiskit.aer, samples with its own, neither seeded nor saved).

    Args:
        config: the run's settings (``seed``, ``secure_mode``).
        sampler: the Poisson sampler's ``torch.Generator``.
        noise: the optimizer's noise ``torch.Generator``, or ``None``.
        device: the training device, or ``None`` when the run takes no shots.
    """

    def __init__(self, config, *, sampler, noise, device):
        self.seed, self.secure_mode = config.seed, config.secure_mode
        self.sampler, self.noise, self.device = sampler, noise, device

    def _device_rng(self):
        return _compat.device_rng(self.device) if self.device is not None else None

    def reseed(self, epoch: int) -> None:
        """Per-epoch reseeding makes a seeded resumed run repeat the uninterrupted one exactly.

        In secure mode the shot noise comes from the OS's CSPRNG: a credit mode counts it as
        privacy noise, which a public seed would let anyone reproduce.
        """
        if self._device_rng() is not None:
            # a device without a numpy generator (hardware, qiskit.aer) samples with its own:
            # not seeded, and the statement's Randomness line says so (make_private)
            _compat.reseed_device(self.device, secrets.randbits(128) if self.secure_mode
                                  else [self.seed, epoch, 1])
        if not self.secure_mode:
            self.sampler.manual_seed(seed_for(self.seed, epoch, 2))
        if self.noise is not None:
            self.noise.manual_seed(seed_for(self.seed, epoch, 3))

    def states(self) -> dict | None:
        """Seeded runs: the states of the sampler, noise and shot generators (for an exact
        resume of an interrupted epoch). Secure mode keeps none: its randomness is never
        repeated."""
        if self.secure_mode:
            return None
        states = {"sampler": self.sampler.get_state()}
        if self.noise is not None:
            states["noise"] = self.noise.get_state()
        rng = self._device_rng()
        if rng is not None:
            states["device"] = rng.bit_generator.state
        return states

    def restore(self, states: dict | None, epoch: int) -> None:
        """Continue an interrupted ``epoch``: the seeded generators where they stopped; in
        secure mode fresh CSPRNG seeds (as every epoch gets)."""
        states = states or {}
        if self.secure_mode or not states:
            self.reseed(epoch)
            return
        self.sampler.set_state(states["sampler"])
        if self.noise is not None and "noise" in states:
            self.noise.set_state(states["noise"])
        rng = self._device_rng()
        if rng is not None and "device" in states:
            rng.bit_generator.state = states["device"]
