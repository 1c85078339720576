r"""Test accuracy against total training shots: the main job at Ns ∈ {1, 10, 100, 1000, auto}.

Every run is the CLI's default job (ε = 1) with seeded DP noise and Poisson sampling, so a seed
pairs the shot counts (same split, initialisation, batches and noise draws); test accuracy is
analytic (never with the training Ns). Reported per Ns: mean ± sd of the test accuracy over the
seeds, the total training shots, and the share of the Ns = 1000 shots.

    python benchmarks/bench_shots.py [--seeds 0 1 2 3 4] [--shots 1 10 100 1000 auto] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pyplot, result_name, save_figure, table, write_result  # noqa: E402


def _shots(text):
    return text if text == "auto" else int(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    p.add_argument("--shots", type=_shots, nargs="+", default=[1, 10, 100, 1000, "auto"])
    p.add_argument("--epochs", type=int, default=None, help="default: the job's default")
    p.add_argument("--quick", action="store_true", help="2 seeds, Ns 10 and auto, 2 epochs")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help="result directory (default benchmarks/results)")
    args = p.parse_args(argv)

    import warnings

    from pennylane_qshiftdp.app.job import TrainConfig, train

    if args.tiny or args.quick:
        args.seeds, args.shots = args.seeds[:2], [10, "auto"]
        args.epochs = args.epochs or (1 if args.tiny else 2)
    runs = []
    for shots in args.shots:
        for seed in args.seeds:
            cfg = TrainConfig(shots=shots, seed=seed, secure_mode=False,
                              **({"epochs": args.epochs} if args.epochs else {}))
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = train(cfg, progress=False)
            runs.append({"shots": str(shots), "shots_per_circuit": res.shots, "seed": seed,
                         "test_accuracy": res.test_accuracy, "training_shots": res.training_shots,
                         "epsilon": res.epsilon, "seconds": time.perf_counter() - t0})
            print(f"Ns={shots} ({res.shots}) seed={seed}: {res.test_accuracy:.4f}, "
                  f"{res.training_shots} shots", flush=True)
    rows = []
    for shots in args.shots:
        sel = [r for r in runs if r["shots"] == str(shots)]
        accs = [r["test_accuracy"] for r in sel]
        rows.append({"shots": str(shots), "shots_per_circuit": sel[0]["shots_per_circuit"],
                     "mean_accuracy": statistics.fmean(accs),
                     "sd_accuracy": statistics.stdev(accs) if len(accs) > 1 else 0.0,
                     "mean_training_shots": statistics.fmean(r["training_shots"] for r in sel)})
    ref = next((r for r in rows if r["shots"] == "1000"), rows[-1])
    for r in rows:
        r["share_of_ns1000_shots"] = r["mean_training_shots"] / ref["mean_training_shots"]
    quick = args.quick or args.tiny
    path = write_result(result_name("bench_shots", quick),
                        {"quick": quick, "seeds": args.seeds, "rows": rows, "runs": runs},
                        Path(args.out) if args.out else None)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar([r["mean_training_shots"] for r in rows], [r["mean_accuracy"] for r in rows],
                yerr=[r["sd_accuracy"] for r in rows], fmt="o")
    for r in rows:
        ax.annotate(f"Ns={r['shots']}", (r["mean_training_shots"], r["mean_accuracy"]),
                    fontsize=7)
    ax.set(xscale="log", xlabel="total training shots", ylabel="test accuracy",
           title="Test accuracy against training shots (ε = 1)")
    save_figure(fig, path)
    print(table(rows, ["shots", "shots_per_circuit", "mean_accuracy", "sd_accuracy",
                       "mean_training_shots", "share_of_ns1000_shots"]))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
