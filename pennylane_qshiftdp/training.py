r"""Private training end to end: ``make_private`` (Opacus-style) and the ``train`` loop.

``make_private`` takes a ``torch.nn.Module`` whose only trainable parameters are the weights of
one :class:`pennylane.qnn.TorchLayer` (with fixed classical pre- and post-processing), bounds
its per-example gradient a priori (:func:`~pennylane_qshiftdp.sensitivity`), calibrates σ with
Opacus's accountant, and returns the model, a :class:`~.QShiftDPOptimizer` and a
Poisson-sampling loader (Opacus's ``DPDataLoader``). Opacus itself cannot hook quantum layers;
no per-example gradients are needed here because the bound holds without clipping.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pennylane as qml
import torch
from opacus.data_loader import DPDataLoader

from . import _compat
from .accountant import PrivacyLedger
from .calibration import calibrate_noise_multiplier, epochs_to_steps
from .exceptions import PrivacyBudgetExceededError, PrivacyWarning, SensitivityError
from .losses import BoundedLoss, LinearLoss, MSELoss
from .optimizer import QShiftDPOptimizer, StepRecord
from .sensitivity import Sensitivity, sensitivity
from .shot_statistics import ShotRecorder

__all__ = ["PrivateModel", "make_private", "TrainConfig", "TrainResult", "train"]


def _quantum_layer(module: torch.nn.Module) -> qml.qnn.TorchLayer:
    layers = [m for m in module.modules() if isinstance(m, qml.qnn.TorchLayer)]
    if len(layers) != 1:
        raise ValueError(
            f"`module` must contain exactly one pennylane.qnn.TorchLayer. Found {len(layers)}."
        )
    layer = layers[0]
    quantum = {id(p) for p in layer.parameters()}
    classical = [name for name, p in module.named_parameters()
                 if p.requires_grad and id(p) not in quantum]
    if classical:
        raise SensitivityError(
            f"Trainable classical parameters {classical} have no a-priori gradient bound "
            f"(only parameter-shift gradients of bounded observables do), so they cannot be "
            f"trained without clipping. Freeze them (requires_grad=False) or use Opacus's "
            f"DP-SGD for the classical part."
        )
    return layer


class PrivateModel(torch.nn.Module):
    r"""A model made private: computes the summed batch gradient and the loss weights.

    :meth:`loss_backward` runs the forward pass, computes per-example losses,
    :math:`w_j = \partial\ell_j/\partial f_j` through any fixed post-processing (checked against
    the loss's certified bound; a violation raises before any step), hands :math:`w` to the
    optimizer, and back-propagates the *sum* of the losses.
    """

    def __init__(self, module, *, loss: BoundedLoss, sensitivity: Sensitivity):
        super().__init__()
        self._module = module
        self.qlayer = _quantum_layer(module)
        self.loss = loss
        self.sensitivity = sensitivity
        lo = min(r[0] for r in sensitivity.observable_ranges)
        hi = max(r[1] for r in sensitivity.observable_ranges)
        self.output_range = (lo, hi)
        self._captured = None
        self.qlayer.register_forward_hook(self._capture)

    def _capture(self, _module, _inputs, output):
        self._captured = output

    def forward(self, x):
        return self._module(x)

    def loss_backward(self, x, y, optimizer: QShiftDPOptimizer | None = None) -> torch.Tensor:
        """Forward, certify ∂ℓ/∂f, backward the summed loss; returns per-example losses."""
        if x.shape[0] == 0:
            if optimizer is not None:
                optimizer.set_loss_weights(np.zeros(0))
            return torch.zeros(0)
        out = self._module(x)
        f = self._captured
        losses = self.loss(out, y)
        (a,) = torch.autograd.grad(losses.sum(), f, retain_graph=True)
        a2 = self.loss.verify(
            a.detach().reshape(x.shape[0], -1).double(), output_range=self.output_range,
            hint="with classical post-processing, declare the composed bound with "
            "losses.DeclaredLoss",
        )
        if optimizer is not None:
            optimizer.set_loss_weights(a2[:, 0].numpy() if a2.shape[1] == 1 else a2.numpy())
        losses.sum().backward()
        return losses.detach()


def _randomness(secure_mode: bool, seed) -> str:
    if secure_mode:
        return ("DP noise drawn from the OS's CSPRNG (random.SystemRandom) and the Poisson "
                "sampling seeded from it (secure mode).")
    if seed is None:
        return ("DP noise from torch's generator seeded from the OS (not a CSPRNG); use "
                "secure mode for a real release.")
    return (f"DP noise and Poisson sampling seeded (seed {seed}): repeatable for research, "
            f"but anyone who knows the seed can remove the noise; NOT for a real release.")


def make_private(module: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 data_loader: torch.utils.data.DataLoader, *, target_epsilon: float,
                 target_delta: float, epochs: float, loss: BoundedLoss | None = None,
                 credit: str = "none", beta: float = 0.0, adjacency: str = "add_remove",
                 accountant: str = "rdp", variance_floor: float = 0.0,
                 recorder: ShotRecorder | None = None, seed: int | None = None,
                 secure_mode: bool = False, jacobian_bound=None,
                 variance_floor_source: str = "declared",
                 preprocessing_note: str | None = None):
    r"""Make a TorchLayer model, optimizer and data loader private (Opacus-style).

    Args:
        module: a ``torch.nn.Module`` with exactly one :class:`~pennylane.qnn.TorchLayer`
            whose QNode uses :func:`~pennylane_qshiftdp.param_shift`; every other parameter
            must be frozen.
        optimizer: a ``torch.optim.Optimizer`` over the TorchLayer's weights.
        data_loader: a loader over a map-style dataset of ``(x, y)``; its ``batch_size`` is
            the expected batch size :math:`qN`.
        target_epsilon: ε > 0 (nats). target_delta: δ ∈ (0, 1).
        epochs: training epochs (T = epochs / q steps).
        loss: a :class:`~pennylane_qshiftdp.losses.BoundedLoss` (default linear).
        credit: shot-noise credit mode; beta: its failure probability (adaptive/isotropic).
        adjacency: ``"add_remove"`` or ``"replace_one"``.
        accountant: ``"rdp"`` (default) or ``"prv"``.
        variance_floor: lower bound :math:`v_{\min}` on every circuit's single-shot variance
            (``depolarizing``; floor for ``adaptive``); at most :math:`(\lambda_+ -
            \lambda_-)^2/4`, the largest variance of the observable.
        variance_floor_source: ``"proven"`` (from :func:`qprldp_core.certify_device`) or
            ``"declared"`` (the user's word); stated in the privacy statement.
        recorder: the :class:`~.ShotRecorder` attached to the QNode (required for a credit).
        seed: seeds Poisson sampling and DP noise (the device carries its own seed).
        secure_mode: draw DP noise from the OS's CSPRNG (refuses ``seed``).
        jacobian_bound: passed to :func:`~pennylane_qshiftdp.sensitivity`.
        preprocessing_note: what data-dependent preprocessing is not protected.

    Returns:
        tuple: ``(PrivateModel, QShiftDPOptimizer, DPDataLoader)``; the optimizer's ``ledger``
        holds the accounting.

    Raises:
        ValueError: for invalid privacy parameters or credit settings (e.g. ``adaptive`` with
            ``shots=None``).
        SensitivityError: if the gradient cannot be bounded a priori.
    """
    loss = LinearLoss() if loss is None else loss
    layer = _quantum_layer(module)
    qnode = layer.qnode
    if credit in ("adaptive", "isotropic") and not qnode.shots:
        raise ValueError(f"credit={credit!r} needs finite shots; the QNode has shots=None.")
    if secure_mode and seed is not None:
        raise ValueError("secure_mode draws DP noise from the OS's CSPRNG and refuses `seed`.")
    if variance_floor_source not in ("proven", "declared"):
        raise ValueError(f"`variance_floor_source` must be 'proven' or 'declared'. Found "
                         f"{variance_floor_source!r}.")
    dataset = data_loader.dataset
    n = len(dataset)
    batch_size = data_loader.batch_size
    if batch_size is None or batch_size < 1:
        raise ValueError(f"`data_loader` must have a positive batch_size. Found {batch_size}.")
    sample_rate = 1.0 / len(data_loader)
    expected_batch_size = sample_rate * n
    steps = epochs_to_steps(epochs=epochs, sample_rate=sample_rate)
    x0 = dataset[0][0]
    weights = {k: v.detach().clone().double().requires_grad_(True)
               for k, v in layer.qnode_weights.items()}
    sens = sensitivity(qnode, adjacency=adjacency, loss=loss, jacobian_bound=jacobian_bound,
                       inputs=torch.as_tensor(x0, dtype=torch.float64), **weights)
    max_variance = max(((hi - lo) / 2.0) ** 2 for lo, hi in sens.observable_ranges)
    if not (0.0 <= variance_floor <= max_variance):
        raise ValueError(
            f"`variance_floor` must be in [0, {max_variance:g}] (no single-shot variance of the "
            f"measured observables can exceed (λmax − λmin)²/4). Found {variance_floor!r}."
        )
    sigma = calibrate_noise_multiplier(target_epsilon=target_epsilon, target_delta=target_delta,
                                       sample_rate=sample_rate, steps=steps,
                                       accountant=accountant)
    extra = {
        "sensitivity": sens.as_dict(),
        "variance_floor": variance_floor,
        "variance_floor_source": variance_floor_source,
        "randomness": _randomness(secure_mode, seed),
        "planned_steps": steps,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("always", PrivacyWarning)
        ledger = PrivacyLedger(
            target_epsilon=target_epsilon, target_delta=target_delta, noise_multiplier=sigma,
            sample_rate=sample_rate, sensitivity=sens.delta, adjacency=adjacency,
            credit_mode=credit, beta=beta, accountant=accountant, dataset_size=n,
            preprocessing_note=preprocessing_note, extra=extra,
        )
    gen = None
    if not secure_mode:
        gen = torch.Generator()
        gen.manual_seed(seed if seed is not None else int.from_bytes(os.urandom(8), "big") >> 1)
    # Secure mode (or no seed): the Poisson-sampling seed comes from the OS's CSPRNG.
    loader_seed = seed + 1 if seed is not None else int.from_bytes(os.urandom(8), "big") >> 1
    loader_gen = torch.Generator().manual_seed(loader_seed)
    dp_loader = DPDataLoader.from_data_loader(data_loader, generator=loader_gen)
    private_opt = QShiftDPOptimizer(
        optimizer, noise_multiplier=sigma, sensitivity=sens,
        expected_batch_size=expected_batch_size, credit=credit, beta=beta, steps=steps,
        variance_floor=variance_floor, recorder=recorder, generator=gen,
        secure_mode=secure_mode, ledger=ledger,
    )
    return PrivateModel(module, loss=loss, sensitivity=sens), private_opt, dp_loader


# ------------------------------------------------------------------------------------------
# The training job
# ------------------------------------------------------------------------------------------


@dataclasses.dataclass
class TrainConfig:
    """Settings of ``qshiftdp train`` (defaults: digits 0 vs 1, ε = 1, δ = 1e-5)."""

    dataset: str = "digits"
    csv_path: str | None = None
    label_column: str | None = None
    preprocessing: str = "fixed"
    epsilon: float = 1.0  # math.inf: non-private baseline (same loader, no noise)
    delta: float = 1e-5
    epochs: int = 10
    expected_batch_size: int = 64
    shots: int | None = 1000
    device: str = "lightning.qubit"
    layers: int = 2
    qubits: int = 4
    lr: float = 0.2
    loss: str = "linear"
    credit: str = "none"
    beta: float = 0.0
    depolarizing: float = 0.0  # device noise: PennyLane DepolarizingChannel q (default.mixed)
    variance_floor: float | None = None  # None: proven from the device noise (certify_device)
    accountant: str = "rdp"
    adjacency: str = "add_remove"
    seed: int = 0  # shot sampling, Poisson sampling and DP noise (repeatable: not for release)
    secure_mode: bool = True  # DP noise and Poisson sampling from the OS's CSPRNG; False: seeded
    init_scale: float = 0.01
    output_dir: str | None = None
    test_size: float = 0.25


@dataclasses.dataclass
class TrainResult:
    """Outcome of :func:`train`."""

    test_accuracy: float
    epsilon: float
    steps: int
    statement: str
    metrics: list
    step_records: list
    weights: np.ndarray
    output_dir: str | None
    stopped_early: str | None = None


def _seed_for(seed, epoch, stream):
    return int(np.random.SeedSequence([seed, epoch, stream]).generate_state(1, np.uint64)[0]
               % (2**63))


def _accuracy(model, x, y):
    with torch.no_grad():
        pred = torch.where(model(x) >= 0, 1.0, -1.0)
    return float((pred == y).double().mean())


def train(config: TrainConfig, *, progress: bool = True, resume: bool = False,
          stop_after_epochs: int | None = None) -> TrainResult:
    """Train the default quantum classifier privately; write ledger, metrics and plots.

    Args:
        config: the :class:`TrainConfig`.
        progress: show a tqdm progress bar.
        resume: continue from ``config.output_dir``'s checkpoint (same config required).
        stop_after_epochs: stop after this many epochs in total (simulates an interruption).

    Returns:
        TrainResult: test accuracy, spent ε, the privacy statement, per-epoch metrics.
    """
    from tqdm.auto import tqdm

    from .data import load_dataset
    from .models import QuantumClassifier

    data = load_dataset(config.dataset, n_features=config.qubits, seed=config.seed,
                        test_size=config.test_size, preprocessing=config.preprocessing,
                        csv_path=config.csv_path, label_column=config.label_column)
    if math.isnan(config.epsilon):
        raise ValueError("`epsilon` must be a positive number or inf (no noise). Found nan.")
    if not (math.isfinite(config.lr) and config.lr > 0):
        raise ValueError(f"`lr` must be positive and finite. Found {config.lr}.")
    private = math.isfinite(config.epsilon)
    if config.credit != "none" and config.shots is not None and config.shots < 30:
        warnings.warn(f"credit={config.credit!r} with shots={config.shots}: crediting treats "
                      f"each sample mean as Gaussian (central limit theorem), which is a poor "
                      f"approximation for so few shots.", PrivacyWarning, stacklevel=2)
    recorder = ShotRecorder() if config.credit != "none" else None
    model = QuantumClassifier(config.qubits, config.layers, device=config.device,
                              shots=config.shots, seed=_seed_for(config.seed, 0, 0),
                              recorder=recorder, init_scale=config.init_scale,
                              init_seed=config.seed, depolarizing=config.depolarizing)
    floor = model.variance_floor() if config.variance_floor is None else config.variance_floor
    if config.variance_floor is not None and config.credit != "none":
        warnings.warn(f"variance_floor={config.variance_floor} is declared by you, not proven "
                      f"from device noise; the privacy statement says so.", PrivacyWarning,
                      stacklevel=2)
    if config.credit == "depolarizing" and floor == 0.0:
        warnings.warn("credit='depolarizing' with no proven variance floor (no device "
                      "depolarizing noise): no shot noise is credited.", PrivacyWarning,
                      stacklevel=2)
    x_train = torch.as_tensor(data.X_train, dtype=torch.float64)
    y_train = torch.as_tensor(data.y_train, dtype=torch.float64)
    x_test = torch.as_tensor(data.X_test, dtype=torch.float64)
    y_test = torch.as_tensor(data.y_test, dtype=torch.float64)
    dataset = torch.utils.data.TensorDataset(x_train, y_train)
    loader = torch.utils.data.DataLoader(dataset, batch_size=config.expected_batch_size)
    sgd = torch.optim.SGD(model.parameters(), lr=config.lr)
    loss_fn = {"linear": LinearLoss(), "mse": MSELoss(target_bound=1.0)}[config.loss]
    if private:
        pmodel, opt, train_loader = make_private(
            model, sgd, loader, target_epsilon=config.epsilon, target_delta=config.delta,
            epochs=config.epochs, loss=loss_fn, credit=config.credit, beta=config.beta,
            adjacency=config.adjacency, accountant=config.accountant,
            variance_floor=floor, recorder=recorder,
            variance_floor_source="proven" if config.variance_floor is None else "declared",
            seed=None if config.secure_mode else config.seed, secure_mode=config.secure_mode,
            preprocessing_note=data.preprocessing_note,
        )
        noise_gen, sampler_gen = opt.generator, train_loader.batch_sampler.generator
    else:
        pmodel, opt = model, sgd
        sampler_gen = torch.Generator()
        train_loader = DPDataLoader.from_data_loader(loader, generator=sampler_gen)
        noise_gen = None

    out_dir = Path(config.output_dir) if config.output_dir else None
    start_epoch, metrics, records = 0, [], []
    if resume:
        if out_dir is None or not (out_dir / "checkpoint.pt").exists():
            raise ValueError(f"--resume needs a checkpoint in `output_dir`. Found none in "
                             f"{out_dir}.")
        ckpt = torch.load(out_dir / "checkpoint.pt", weights_only=False)
        if ckpt["config"] != dataclasses.asdict(config):
            raise ValueError("--resume needs the same settings as the interrupted run.")
        model.load_state_dict(ckpt["model"])
        sgd.load_state_dict(ckpt["optimizer"])
        if private:
            opt.ledger.load_state_dict(ckpt["ledger"])
            opt.history = [StepRecord(r) for r in ckpt["step_records"]]
        start_epoch, metrics, records = ckpt["epoch"], ckpt["metrics"], ckpt["step_records"]

    stopped = None
    dev = model.qnode.device
    last = config.epochs if stop_after_epochs is None else min(config.epochs, stop_after_epochs)
    bar = tqdm(total=len(train_loader) * (last - start_epoch), disable=not progress,
               desc="qshiftdp train")
    t0 = time.perf_counter()
    for epoch in range(start_epoch, last):
        # Per-epoch reseeding makes a resumed run repeat the uninterrupted one exactly.
        if config.shots is not None:
            _compat.reseed_device(dev, [config.seed, epoch, 1])
        if not config.secure_mode:
            sampler_gen.manual_seed(_seed_for(config.seed, epoch, 2))
        if noise_gen is not None:
            noise_gen.manual_seed(_seed_for(config.seed, epoch, 3))
        for xb, yb in train_loader:
            opt.zero_grad()
            if private:
                pmodel.loss_backward(xb, yb, opt)
                try:
                    rec = opt.step()
                except PrivacyBudgetExceededError as err:  # checked before the step
                    stopped = str(err)
                    break
                records.append(dict(rec, epoch=epoch + 1, epsilon=opt.ledger.epsilon))
            else:
                if xb.shape[0]:
                    loss_fn(model(xb), yb).sum().div(config.expected_batch_size).backward()
                    sgd.step()
            bar.update(1)
        acc = _accuracy(model, x_test, y_test)
        row = {"epoch": epoch + 1, "steps": (epoch + 1) * len(train_loader) if not private
               else len(records),
               "epsilon": opt.ledger.epsilon if private else math.inf,
               "test_accuracy": acc, "elapsed_s": time.perf_counter() - t0}
        metrics.append(row)
        bar.set_postfix(acc=f"{acc:.3f}", eps=f"{row['epsilon']:.3f}")
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            torch.save({"config": dataclasses.asdict(config), "epoch": epoch + 1,
                        "model": model.state_dict(), "optimizer": sgd.state_dict(),
                        "ledger": opt.ledger.state_dict() if private else None,
                        "metrics": metrics, "step_records": records},
                       out_dir / "checkpoint.pt")
        if stopped:
            break
    bar.close()
    statement = opt.ledger.statement() if private else (
        "Non-private baseline: no differential privacy guarantee.")
    result = TrainResult(
        test_accuracy=metrics[-1]["test_accuracy"] if metrics else _accuracy(model, x_test,
                                                                             y_test),
        epsilon=opt.ledger.epsilon if private else math.inf,
        steps=opt.ledger.steps if private else last * len(train_loader),
        statement=statement, metrics=metrics, step_records=records,
        weights=model.qlayer.weights.detach().numpy().copy(),
        output_dir=str(out_dir) if out_dir else None, stopped_early=stopped,
    )
    if out_dir is not None:
        write_outputs(result, opt.ledger if private else None, out_dir)
    return result


def write_outputs(result: TrainResult, ledger: PrivacyLedger | None, out_dir: Path) -> None:
    """Ledger JSON, metrics CSV/JSON, step records and PNG plots into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    if ledger is not None:
        ledger.save(out_dir / "ledger.json")
    (out_dir / "privacy_statement.txt").write_text(result.statement + "\n")
    (out_dir / "metrics.json").write_text(json.dumps(
        {"test_accuracy": result.test_accuracy, "epsilon": result.epsilon,
         "steps": result.steps, "per_epoch": result.metrics, "per_step": result.step_records,
         "stopped_early": result.stopped_early}, indent=2, default=float))
    if result.metrics:
        with open(out_dir / "metrics.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(result.metrics[0]))
            writer.writeheader()
            writer.writerows(result.metrics)
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    steps_at_epoch = [m["steps"] or 0 for m in result.metrics]
    ax[0].plot(steps_at_epoch, [m["test_accuracy"] for m in result.metrics], "o-")
    ax[0].set(xlabel="steps", ylabel="test accuracy", title="Test accuracy")
    if result.step_records:
        ax[1].plot([r["step"] for r in result.step_records],
                   [r["epsilon"] for r in result.step_records])
    else:
        ax[1].text(0.5, 0.5, "non-private run: ε = ∞", ha="center", va="center",
                   transform=ax[1].transAxes)
    ax[1].set(xlabel="steps", ylabel="ε spent (nats)", title="Privacy spent")
    fig.tight_layout()
    fig.savefig(out_dir / "accuracy_epsilon.png", dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    if result.step_records:
        s = [r["step"] for r in result.step_records]
        added = np.array([r["artificial_variance_mean"] for r in result.step_records])
        credited = np.array([r["credited_variance_mean"] for r in result.step_records])
        target = result.step_records[0]["target_variance"]
        ax[0].stackplot(s, added, credited, labels=["artificial noise added",
                                                     "shot noise credited"])
        ax[0].axhline(target, ls="--", c="k", label="σ²Δ² (required total)")
        ax[0].set_ylim(0, 1.1 * target)
        ax[1].plot(s, 100 * credited / target, "o-", ms=3)
        mode = result.step_records[0]["credit_mode"]
        ax[1].set_title(f"Shot noise credited (mode: {mode})")
    ax[0].set(xlabel="step", ylabel="variance per coordinate (mean)",
              title="Noise per coordinate: added + credited")
    if result.step_records:
        ax[0].legend(fontsize=7, loc="lower right")
    else:
        ax[0].text(0.5, 0.5, "non-private run: no noise", ha="center", va="center",
                   transform=ax[0].transAxes)
    ax[1].set(xlabel="step", ylabel="credited share of σ²Δ² (%)")
    ax[1].xaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    fig.savefig(out_dir / "noise.png", dpi=100)
    plt.close(fig)
