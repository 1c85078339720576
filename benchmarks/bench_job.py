r"""The default job against a non-private reference training, whole process, alternated.

* private: ``qshiftdp train`` with all defaults (digits 0 vs 1, 4 qubits, 2 layers, 10 epochs,
  expected batch 64, Ns = 1000, ε = 1), in its own interpreter, wall time from start to exit
  (imports, data, the public clip, training, evaluation, outputs);
* reference: the same data set, model (the job's ``QuantumClassifier``, same initial weights),
  loss, optimizer (SGD, lr 0.2), epochs and batch size, trained without privacy with
  PennyLane's own ``diff_method="parameter-shift"`` on the same device with its own shot
  sampling (Ns = 1000), shuffled batches of 64, analytic test accuracy; its own interpreter,
  wall time from start to exit.

The two alternate for ``--rounds`` rounds; the reported ratio is the median of the per-round
ratios private / reference (a ratio below 1 means the private job is faster). Each run's wall
time and CPU time (user + system over all its threads, ``getrusage`` of the child) are printed
with the 1-minute load average before and after it (2.0 keeps both cores of a 2-core machine
busy: wall time above CPU time means the job waited for a core).

Usage::

    python benchmarks/bench_job.py [--rounds 3] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _reference(epochs: int | None) -> None:
    """The non-private reference training (run in its own interpreter by ``main``)."""
    import torch

    from pennylane_qshiftdp.app.config import TrainConfig
    from pennylane_qshiftdp.app.data import load_dataset
    from pennylane_qshiftdp.app.defaults import resolve_model, resolve_settings
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.losses import LinearLoss

    # the default job's settings as it resolves them (digits 0 vs 1: the quantum model; the
    # training-set size and classes only matter for the neuron model)
    cfg = resolve_settings(TrainConfig(), resolve_model(TrainConfig()), n_train=270,
                           n_classes=2)
    epochs = cfg.epochs if epochs is None else epochs
    data = load_dataset(cfg.dataset, n_features=cfg.qubits, seed=cfg.seed,
                        test_size=cfg.test_size)
    model = QuantumClassifier(cfg.qubits, cfg.layers, device="default.qubit", shots=cfg.shots,
                              seed=cfg.seed, init_seed=cfg.seed, init_scale=cfg.init_scale)
    # PennyLane's own parameter-shift gradient: the product's layer defers to PennyLane's
    # TorchLayer for a QNode that does not use the private transform.
    model.qlayer.qnode = model.qnode = model.qnode.update(diff_method="parameter-shift")
    x = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train, dtype=torch.float64)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                         batch_size=cfg.expected_batch_size, shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    loss = LinearLoss()
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss(model(xb), yb).mean().backward()
            opt.step()
    evaluator = QuantumClassifier(cfg.qubits, cfg.layers, device="default.qubit", shots=None)
    evaluator.load_state_dict(model.state_dict())
    pred = evaluator.predict(torch.as_tensor(data.X_test, dtype=torch.float64))
    acc = float((pred == torch.as_tensor(data.y_test, dtype=torch.float64)).double().mean())
    print(json.dumps({"test_accuracy": acc}))


def _timed(cmd) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, all its threads) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _load() -> float:
    """The 1-minute load average (2.0 keeps both cores of the project's machine busy)."""
    return os.getloadavg()[0]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="alternated rounds (default 3)")
    p.add_argument("--epochs", type=int, default=None,
                   help="epochs of both trainings (default: the job's, 10)")
    p.add_argument("--out", default=None, help="write bench_job.json here")
    p.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.reference:
        _reference(args.epochs)
        return 0
    if args.rounds < 1:
        p.error(f"--rounds must be positive. Found {args.rounds}.")
    extra = [] if args.epochs is None else ["--epochs", str(args.epochs)]
    rows = []
    for r in range(args.rounds):
        load = _load()
        with tempfile.TemporaryDirectory() as tmp:
            private, private_cpu = _timed([sys.executable, "-m", "pennylane_qshiftdp.app.cli",
                                           "train", "--output-dir", str(Path(tmp) / "run"),
                                           *extra])
        reference, reference_cpu = _timed([sys.executable, str(Path(__file__).resolve()),
                                           "--reference", *extra])
        rows.append({"round": r, "private_s": private, "private_cpu_s": private_cpu,
                     "reference_s": reference, "reference_cpu_s": reference_cpu,
                     "ratio": private / reference, "load_before": load,
                     "load_after": _load()})
        print(f"round {r} (load {load:.2f} -> {rows[-1]['load_after']:.2f}): private "
              f"{private:.1f} s wall, {private_cpu:.1f} s CPU; reference {reference:.1f} s "
              f"wall, {reference_cpu:.1f} s CPU; ratio {private / reference:.3f}", flush=True)
    ratios = [row["ratio"] for row in rows]
    summary = {"epochs": args.epochs or "default (10)", "rounds": rows,
               "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
               "max_ratio": max(ratios),
               "median_private_s": statistics.median(row["private_s"] for row in rows),
               "median_private_cpu_s": statistics.median(row["private_cpu_s"] for row in rows),
               "load": [min(row["load_before"] for row in rows),
                        max(row["load_after"] for row in rows)]}
    print(f"the default job: {summary['median_private_s']:.1f} s wall, "
          f"{summary['median_private_cpu_s']:.1f} s CPU (medians; load average "
          f"{summary['load'][0]:.2f}-{summary['load'][1]:.2f})")
    print(f"median ratio private / reference: {summary['median_ratio']:.3f} "
          f"(range {summary['min_ratio']:.3f}-{summary['max_ratio']:.3f})")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "bench_job.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
