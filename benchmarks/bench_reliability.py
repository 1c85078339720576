r"""Reliability of the main job: ``qshiftdp train`` repeated with fresh CSPRNG noise.

Each run is the CLI's default job (digits 0 vs 1, ε = 1, δ = 1e-5, 10 epochs, certified clip
norm) with DP noise and Poisson sampling drawn from the OS's CSPRNG (the default, as a user gets
it); the data split, initialisation and shot-sampling seed stay at the default ``--seed 0``, so
the spread is the spread a user sees between runs. Reported: every run's test accuracy, the
mean ± sd, the worst run and how many runs reach 0.95.

    python benchmarks/bench_reliability.py [--runs 20] [--device default.qubit] [--out DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import result_name, write_result  # noqa: E402

THRESHOLD = 0.95


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--device", default=None, help="default: the job's default device")
    p.add_argument("--epochs", type=int, default=None, help="default: the job's default")
    p.add_argument("--max-grad-norm", default=None,
                   help="clip strategy (default: the job's default)")
    p.add_argument("--name", default="bench_reliability", help="result file stem")
    p.add_argument("--quick", action="store_true", help="3 runs of 2 epochs")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help="result directory (default benchmarks/results)")
    args = p.parse_args(argv)

    import warnings

    from pennylane_qshiftdp.app.job import TrainConfig, train

    if args.tiny:
        args.quick, args.runs, args.epochs = True, 1, 1
        args.device = args.device or "default.qubit"
    runs = args.runs if args.tiny else (3 if args.quick else args.runs)
    overrides = {}
    if args.device:
        overrides["device"] = args.device
    if args.epochs or args.quick:
        overrides["epochs"] = args.epochs or 2
    if args.max_grad_norm:
        mgn = args.max_grad_norm
        overrides["max_grad_norm"] = mgn if mgn in ("certified", "public", "adaptive") \
            else float(mgn)
    rows = []
    for i in range(runs):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = train(TrainConfig(**overrides), progress=False)  # secure mode: CSPRNG noise
        rows.append({"run": i, "test_accuracy": res.test_accuracy, "epsilon": res.epsilon,
                     "steps": res.steps, "seconds": time.perf_counter() - t0})
        print(f"run {i}: accuracy {res.test_accuracy:.4f}, ε {res.epsilon:.4f}, "
              f"{rows[-1]['seconds']:.0f} s", flush=True)
    accs = [r["test_accuracy"] for r in rows]
    summary = {
        "runs": runs, "config": {**TrainConfig().__dict__, **overrides},
        "mean_accuracy": statistics.fmean(accs),
        "sd_accuracy": statistics.stdev(accs) if len(accs) > 1 else 0.0,
        "worst_accuracy": min(accs), "best_accuracy": max(accs),
        "runs_at_least_0.95": sum(a >= THRESHOLD for a in accs),
        "mean_seconds": statistics.fmean(r["seconds"] for r in rows),
        "per_run": rows,
    }
    path = write_result(result_name(args.name, args.quick), summary,
                        Path(args.out) if args.out else None)
    print(f"mean {summary['mean_accuracy']:.4f} ± {summary['sd_accuracy']:.4f}, worst "
          f"{summary['worst_accuracy']:.4f}, {summary['runs_at_least_0.95']}/{runs} runs ≥ "
          f"{THRESHOLD}; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
