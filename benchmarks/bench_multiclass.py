r"""Multi-class test accuracy: iris (3 classes), wine (3), digits (10, 8 qubits) at ε ∈ {1, 4, ∞}.

Every run is ``train(TrainConfig(..., model="quantum"))`` with the quantum model's defaults
(preprocessing 'fixed' with the shipped feature ranges or the digits pooling grid, K commuting
Pauli-Z readouts, softmax cross-entropy with the default logit scale, public clip, Ns = 1000 shots
drawn from the exact law, δ = 1e-5, lr, batch size 64), seeded DP noise and Poisson sampling
(research mode, so a seed pairs the ε values: same split, initialisation and batches); ε = ∞
is the non-private baseline (same loader, no noise, no clipping). Only the epochs differ per
data set (``--epochs-small``, ``--epochs-digits``). Test accuracy is analytic. Reported per data
set: mean ± sd over the seeds (n runs), the chance level (1/K and the majority class's share of the
test split) and the seconds per run. The JSON is rewritten after every run.

    python benchmarks/bench_multiclass.py [--seeds 0 1 2 3 4] [--seeds-digits 0 1 2]
        [--epsilons 1 4 inf] [--epochs-small 10] [--epochs-digits 3] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_std, result_name, table, write_result  # noqa: E402

#: (label, TrainConfig fields) of the three tasks.
# The quantum model (angle embedding + StronglyEntanglingLayers, K readouts): the job's default
# for these tasks before the per-family defaults (the neuron model; bench_utility --defaults).
TASKS = {
    "iris": {"dataset": "iris", "classes": "all", "qubits": 4, "model": "quantum"},
    "wine": {"dataset": "wine", "classes": "all", "qubits": 4, "model": "quantum"},
    "digits10": {"dataset": "digits", "classes": "all", "qubits": 8, "model": "quantum"},
}


def _chance(task: dict, seed: int) -> tuple[int, float, float]:
    from pennylane_qshiftdp.app.data import load_dataset

    ds = load_dataset(task["dataset"], classes=task["classes"], n_features=task["qubits"],
                      seed=seed)
    counts = [int((ds.y_test == k).sum()) for k in range(ds.n_classes)]
    return ds.n_classes, 1.0 / ds.n_classes, max(counts) / len(ds.y_test)


def _fmt(mean: float, sd: float) -> str:
    return f"{mean:.3f} ± {sd:.3f}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4],
                   help="seeds of iris and wine")
    p.add_argument("--seeds-digits", type=int, nargs="+", default=[0, 1, 2],
                   help="seeds of digits-10 (the expensive task)")
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0, math.inf])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    p.add_argument("--epochs-small", type=int, default=10,
                   help="epochs of iris and wine (the job's default 10)")
    p.add_argument("--epochs-digits", type=int, default=3,
                   help="epochs of digits-10 (1347 training examples, 8 qubits)")
    p.add_argument("--quick", action="store_true", help="1 seed, 1 epoch each")
    p.add_argument("--out", default=None, help="result directory (default benchmarks/results)")
    args = p.parse_args(argv)

    from pennylane_qshiftdp.app.job import TrainConfig, train

    if args.quick:
        args.seeds, args.seeds_digits = args.seeds[:1], args.seeds_digits[:1]
        args.epochs_small, args.epochs_digits = 1, 1
    out_dir = Path(args.out) if args.out else None
    name = result_name("bench_multiclass", args.quick)
    runs, rows, t_start = [], [], time.perf_counter()

    def summarise():
        rows.clear()
        for label in args.tasks:
            sel = [r for r in runs if r["task"] == label]
            if not sel:
                continue
            seeds = args.seeds_digits if label == "digits10" else args.seeds
            k, inv_k, majority = _chance(TASKS[label], seeds[0])
            row = {"task": label, "classes": k, "qubits": TASKS[label]["qubits"],
                   "epochs": sel[0]["epochs"], "chance": f"{inv_k:.3f} / {majority:.3f}",
                   "seconds_per_run": sum(r["seconds"] for r in sel) / len(sel)}
            for eps in args.epsilons:
                accs = [r["test_accuracy"] for r in sel if r["epsilon_target"] == eps]
                key = f"eps={'inf' if math.isinf(eps) else f'{eps:g}'}"
                row[key] = _fmt(*mean_std(accs)) + f" (n={len(accs)})"
                row[f"{key}_mean"], row[f"{key}_sd"] = mean_std(accs) if accs else (None, None)
            rows.append(row)
        cols = (["task", "classes", "qubits", "epochs", "chance"]
                + [f"eps={'inf' if math.isinf(e) else f'{e:g}'}" for e in args.epsilons]
                + ["seconds_per_run"])
        md = table(rows, cols)
        path = write_result(name, {
            "quick": args.quick, "seeds": args.seeds, "seeds_digits": args.seeds_digits,
            "epsilons": [str(e) for e in
                                                                   args.epsilons],
            "note": "test accuracy mean ± sd over seeds; chance = 1/K / majority-class share "
                    "of the test split; eps=inf is the non-private baseline",
            "rows": rows, "runs": runs, "markdown": md,
            "total_seconds": time.perf_counter() - t_start}, out_dir)
        return md, path

    for label in args.tasks:
        epochs = args.epochs_digits if label == "digits10" else args.epochs_small
        for eps in args.epsilons:
            for seed in (args.seeds_digits if label == "digits10" else args.seeds):
                cfg = TrainConfig(**TASKS[label], epsilon=eps, epochs=epochs, seed=seed,
                                  secure_mode=False)
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = train(cfg, progress=False)
                recs = res.step_records
                runs.append({"task": label, "epsilon_target": eps, "seed": seed,
                             "epochs": epochs, "test_accuracy": res.test_accuracy,
                             "epsilon": res.epsilon, "steps": res.steps,
                             "n_classes": res.n_classes, "logit_scale": cfg.logit_scale,
                             "first_clip_norm": recs[0]["clip_norm"] if recs else None,
                             "last_clip_norm": recs[-1]["clip_norm"] if recs else None,
                             "per_epoch_accuracy": [m["test_accuracy"] for m in res.metrics],
                             "seconds": time.perf_counter() - t0})
                print(f"{label} eps={eps:g} seed={seed}: acc {res.test_accuracy:.4f}, "
                      f"ε spent {res.epsilon:.3f}, {runs[-1]['seconds']:.0f} s", flush=True)
                summarise()
    md, path = summarise()
    print(md)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
