r"""One private (Q-ShiftDP) training epoch against one non-private parameter-shift epoch.

Same model (angle embedding + StronglyEntanglingLayers, n qubits = 4, 8 or 12, 2 layers,
⟨Z₀⟩, linear loss), same data (digits 0 vs 1, fixed preprocessing, n features, 270 training
examples), same device, shots and Poisson-sampled batches (Opacus ``DPDataLoader``, expected
batch 32, same sampler seed). The device is ``auto`` by default, as in ``qshiftdp train``:
default.qubit below 10 qubits, lightning.qubit from 10 on. The private epoch is the standard
Opacus loop on ``make_private``'s triple (per-example gradients from the TorchLayer grad
sampler: forward and every shifted circuit of every example in one execution; exact-law shot
sampling as in ``qshiftdp train``, or ``--shot-sampling device``; clipping at the certified
bound; credit ``none``, and ``adaptive`` which also records shot statistics and computes the
credit); the non-private epoch back-propagates the mean loss through PennyLane's own
``qml.gradients.param_shift`` (device sampling) and steps plain SGD. Epochs are alternated in
one process; reported: median seconds per epoch and per step, time ratio (private /
non-private), samples per second, and simulated circuits (broadcast tapes) per epoch.

    python benchmarks/bench_training.py [--quick] [--qubits ...] [--devices ...] [--shots ...]
                                        [--shot-sampling exact_law|device] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pyplot, result_name, save_figure, table, write_result  # noqa: E402

# Heavy libraries (torch, PennyLane, Opacus, SciPy; pennylane_qshiftdp and qprldp_core import
# them) are bound by _import_heavy(), which main() calls after parsing the arguments, so that
# `--help` and argument errors answer without loading them. Module-level names stay None
# until then.
torch = DPDataLoader = load_dataset = make_private = LinearLoss = QuantumClassifier = None
ShotRecorder = use_exact_law = resolve_device = TrainConfig = clear_caches = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global torch, DPDataLoader, load_dataset, make_private, LinearLoss, QuantumClassifier
    global ShotRecorder, use_exact_law, resolve_device, TrainConfig, clear_caches
    import torch
    from opacus.data_loader import DPDataLoader

    from pennylane_qshiftdp.accountants.composition import clear_caches
    from pennylane_qshiftdp.app.config import TrainConfig
    from pennylane_qshiftdp.app.data import load_dataset
    from pennylane_qshiftdp.app.job import resolve_device
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.gradients.shot_statistics import ShotRecorder
    from pennylane_qshiftdp.losses import LinearLoss
    from pennylane_qshiftdp.privacy_engine import make_private
    from pennylane_qshiftdp.sampling import use_exact_law


def _dataset(n_train, n_qubits):
    from pennylane_qshiftdp.app.data import DIGITS_POOLING_GRIDS

    # The digits pooling grids give 1, 2, 4, 8, 16, ... features; other counts (12 qubits) use
    # PCA features (a timing run: the preprocessing's privacy does not matter here).
    fixed = n_qubits in DIGITS_POOLING_GRIDS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = load_dataset("digits", n_features=n_qubits, seed=0, test_size=0.25,
                            preprocessing="fixed" if fixed else "standardize_pca")
    x = torch.as_tensor(data.X_train[:n_train], dtype=torch.float64)
    y = torch.as_tensor(data.y_train[:n_train], dtype=torch.float64)
    return torch.utils.data.TensorDataset(x, y)


def run_config(device, shots, credit, *, batch, repeats, n_train, n_qubits=4,
               shot_sampling="exact_law", seed=0):
    if device == "auto":  # qshiftdp train's choice
        device = resolve_device(TrainConfig(qubits=n_qubits, shot_sampling=shot_sampling))
    dataset = _dataset(n_train, n_qubits)
    loss = LinearLoss()
    rec = ShotRecorder() if credit != "none" else None
    dp_model = QuantumClassifier(n_qubits, 2, device=device, shots=shots, seed=seed,
                                 recorder=rec, init_seed=seed)
    if shot_sampling == "exact_law":
        use_exact_law(dp_model)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch)
    clear_caches()  # this configuration pays its own accounting, as a lone run (issue 43)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, opt, dp_loader = make_private(
            dp_model, torch.optim.SGD(dp_model.parameters(), lr=0.2), loader,
            target_epsilon=1.0, target_delta=1e-5, epochs=repeats + 2, loss=loss,
            credit=credit, beta=1e-3 if credit == "adaptive" else 0.0, recorder=rec, seed=seed)
    np_model = QuantumClassifier(n_qubits, 2, device=device, shots=shots, seed=seed,
                                 init_seed=seed)
    np_model.qlayer.qnode.diff_method = "parameter-shift"  # PennyLane's own, non-private
    sgd = torch.optim.SGD(np_model.parameters(), lr=0.2)
    np_gen = torch.Generator()
    np_loader = DPDataLoader.from_data_loader(loader, generator=np_gen)
    dp_gen = dp_loader.batch_sampler.generator

    def private_epoch():
        n = steps = 0
        for xb, yb in dp_loader:
            opt.zero_grad()
            if xb.shape[0]:
                loss(pmodel(xb), yb).mean().backward()
            opt.step()
            n += xb.shape[0]
            steps += 1
        return n, steps

    def plain_epoch():
        n = steps = 0
        for xb, yb in np_loader:
            sgd.zero_grad()
            if xb.shape[0]:
                loss(np_model(xb), yb).sum().div(batch).backward()
                sgd.step()
            n += xb.shape[0]
            steps += 1
        return n, steps

    import pennylane as qml

    t_dp, t_np, n_dp, n_np, sims_dp, sims_np, steps = [], [], 0, 0, [], [], 0
    for r in range(repeats):
        dp_gen.manual_seed(seed + 100 + r)
        np_gen.manual_seed(seed + 100 + r)
        with qml.Tracker(dp_model.qlayer.qnode.device) as tracker:
            t0 = time.perf_counter()
            n, k = private_epoch()
            t_dp.append(time.perf_counter() - t0)
        n_dp += n
        steps += k
        sims_dp.append(tracker.totals.get("simulations", 0))
        with qml.Tracker(np_model.qlayer.qnode.device) as tracker:
            t0 = time.perf_counter()
            n, k = plain_epoch()  # the same batches (same sampler seed): k steps as well
            t_np.append(time.perf_counter() - t0)
        n_np += n
        sims_np.append(tracker.totals.get("simulations", 0))
    ratios = [a / b for a, b in zip(t_dp, t_np, strict=True)]
    return {"device": device, "qubits": n_qubits, "shots": shots, "credit": credit,
            "shot_sampling": shot_sampling, "batch": batch,
            "n_train": len(dataset), "repeats": repeats,
            "private_step_s": sum(t_dp) / steps, "nonprivate_step_s": sum(t_np) / steps,
            "median_private_s": statistics.median(t_dp),
            "median_nonprivate_s": statistics.median(t_np),
            "median_ratio": statistics.median(ratios),
            "private_samples_per_s": n_dp / sum(t_dp),
            "nonprivate_samples_per_s": n_np / sum(t_np),
            "private_simulations_per_epoch": statistics.median(sims_dp),
            "nonprivate_simulations_per_epoch": statistics.median(sims_np)}


def figure(rows, json_path):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['qubits']}q {r['device'].split('.')[0]}\nNs={r['shots']}\n{r['credit']}"
              for r in rows]
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["private_samples_per_s"] for r in rows], 0.4,
           label="private epoch")
    ax.bar([x + 0.2 for x in xs], [r["nonprivate_samples_per_s"] for r in rows], 0.4,
           label="non-private epoch")
    ax.set_xticks(list(xs), labels, fontsize=7)
    ax.set(ylabel="samples / s", title="Training throughput (one epoch)")
    ax.legend()
    return save_figure(fig, json_path)


_COLUMNS = ["qubits", "device", "shots", "credit", "shot_sampling", "private_step_s",
            "nonprivate_step_s", "median_ratio", "median_private_s", "median_nonprivate_s",
            "private_samples_per_s", "nonprivate_samples_per_s"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="reduced configuration (a minute)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--qubits", nargs="+", type=int, default=None,
                   help="qubit counts (default 4 8 12; 4 with --quick)")
    p.add_argument("--devices", nargs="+", default=None,
                   help="PennyLane devices, or auto (default: auto, as qshiftdp train)")
    p.add_argument("--shot-sampling", choices=["exact_law", "device"], default="exact_law",
                   help="the private epoch's shot sampling (default: %(default)s, as qshiftdp "
                   "train on simulators)")
    p.add_argument("--shots", nargs="+", type=int, default=None)
    p.add_argument("--credits", nargs="+", default=None)
    p.add_argument("--out", type=Path, default=None, help="output directory")
    args = p.parse_args(argv)
    _import_heavy()
    args.quick = args.quick or args.tiny
    if args.tiny:
        qubits, devices, shots, credits, repeats, batch, n_train = (
            [4], ["default.qubit"], [100], ["adaptive"], 1, 8, 16)
    elif args.quick:
        qubits, devices, shots, credits, repeats, batch, n_train = (
            [4], ["auto"], [100], ["none", "adaptive"], 2, 32, 270)
    else:
        qubits, devices, shots, credits, repeats, batch, n_train = (
            [4, 8, 12], ["auto"], [1000], ["none", "adaptive"], 3, 32, 270)
    qubits = args.qubits or qubits
    devices = args.devices or devices
    shots = args.shots or shots
    credits = args.credits or credits
    rows = []
    for q in qubits:
        for d in devices:
            for s in shots:
                for c in credits:
                    # 12 qubits: one epoch of each kind is minutes on this machine
                    reps = repeats if q < 12 or args.quick else 1
                    rows.append(run_config(d, s, c, batch=batch, repeats=reps,
                                           n_train=n_train, n_qubits=q,
                                           shot_sampling=args.shot_sampling))
                    print(table(rows[-1:], _COLUMNS), flush=True)
    print(table(rows, _COLUMNS))
    result = {"quick": args.quick,
              "config": {"dataset": "digits (0 vs 1, fixed preprocessing; PCA features at 12 "
                                    "qubits)", "qubits": qubits,
                         "layers": 2, "expected_batch_size": batch, "epsilon": 1.0,
                         "delta": 1e-5, "beta_adaptive": 1e-3, "loss": "linear"},
              "rows": rows}
    path = write_result(result_name("bench_training", args.quick), result, args.out)
    figure(rows, path)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
