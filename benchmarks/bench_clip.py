r"""Clip-norm strategies at equal tuning budgets: certified, tuned fixed C, adaptive, public.

Every run is the training job (``pennylane_qshiftdp.app.job.train``, the defaults of
``qshiftdp train``: 4 qubits, 2 layers, 10 epochs, expected batch 64, Ns = 1000 drawn from the
exact outcome law, δ = 1e-5, RDP accountant) with seeded noise and sampling
(``secure_mode=False``), so a seed gives every strategy the same split, initialisation and
Poisson batches' seeds. Strategies (``max_grad_norm`` of the job):

* ``certified``: C = Δ, the a-priori bound of the parameter-shift gradient; nothing is clipped
  (Q-ShiftDP).
* ``public``: C_t = the largest per-example gradient norm over the declared input domain
  [0, π]^n at the current weights (no data used; clipped at C_t).
* ``adaptive``: Andrew et al.'s private quantile clipping (its budget share is accounted).
* ``fixed``: DP-SGD with per-example clipping at C = c·Δ, learning rate lr_default·Δ/C (the
  same noise on the weights per unit lr as certified; c tuned).

Equal tuning budgets: each strategy gets G = 3 values of ONE hyperparameter (learning rate for
certified, public and adaptive, c for fixed), the value with the best mean test accuracy over
the seeds is reported with the selection. The first value of each grid is the job's default, so
the ``untuned`` columns (the default value, no search) come from the same runs. The search
looks at test accuracy and is NOT privacy-accounted (the same, optimistic, protocol for every
strategy); a deployment that tunes on private data must account for it.

    python benchmarks/bench_clip.py [--quick] [--datasets ...] [--epsilons ...] [--seeds ...]
                                    [--name STEM] [--out DIR]
    python benchmarks/bench_clip.py --merge SHARD.json ... [--name STEM]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_std, pyplot, result_name, save_figure, table, write_result  # noqa: E402

PREPROCESSING = {"digits": "fixed", "breast_cancer": "standardize_pca"}
LR_GRID = [0.2, 0.05, 0.8]  # first value: the job's default learning rate
CLIP_FRACTIONS = [0.25, 0.0625, 0.015625]  # fixed C = c·Δ; the first is the untuned choice
STRATEGIES = ("certified", "public", "adaptive", "fixed")
FULL = {"datasets": ["digits", "breast_cancer"], "epsilons": [0.5, 1.0, 2.0, 4.0, 8.0],
        "seeds": [0, 1, 2, 3, 4]}
QUICK = {"datasets": ["digits"], "epsilons": [1.0], "seeds": [0, 1], "epochs": 2}


def _delta() -> float:
    """Δ of the job's circuit and loss (the certified clip norm)."""
    import torch

    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.gradients.sensitivity_bound import sensitivity
    from pennylane_qshiftdp.losses import LinearLoss

    model = QuantumClassifier(4, 2, device="default.qubit", shots=None)
    return sensitivity(model.qnode, inputs=torch.zeros(4, dtype=torch.float64),
                       weights=model.qlayer.weights.detach().double().requires_grad_(True),
                       loss=LinearLoss()).delta


def _run(base, *, strategy, value, delta_bound):
    from pennylane_qshiftdp.app.job import train

    if strategy == "fixed":
        clip = value * delta_bound
        cfg = dataclasses.replace(base, max_grad_norm=clip, lr=base.lr * delta_bound / clip)
    elif strategy == "nonprivate":
        cfg = dataclasses.replace(base, epsilon=math.inf, lr=value)
    else:
        cfg = dataclasses.replace(base, max_grad_norm=strategy, lr=value)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(cfg, progress=False)
    recs = res.step_records
    seen = sum(r.get("batch_examples", 0) for r in recs)
    clipped = sum(r.get("clipped", 0) for r in recs)
    out = {"test_accuracy": res.test_accuracy, "epsilon_spent": res.epsilon,
           "steps": res.steps, "clipped_fraction": clipped / seen if seen else 0.0,
           "seconds": time.perf_counter() - t0}
    print(f"  {cfg.dataset} eps={base.epsilon} {strategy}={value} seed={cfg.seed}: "
          f"{res.test_accuracy:.3f} ({out['seconds']:.0f} s)", flush=True)
    return out


def _summary(strategy, hyper, value, runs):
    m, s = mean_std([r["test_accuracy"] for r in runs])
    return {"strategy": strategy, "hyperparameter": hyper, "value": value,
            "mean_accuracy": m, "std_accuracy": s,
            "accuracies": [r["test_accuracy"] for r in runs],
            "clipped_fraction": sum(r["clipped_fraction"] for r in runs) / len(runs),
            "seconds": sum(r["seconds"] for r in runs), "runs": runs}


def run(*, datasets, epsilons, seeds, epochs=None):
    from pennylane_qshiftdp.app.job import TrainConfig

    delta_bound = _delta()
    cells = []
    for ds in datasets:
        base0 = TrainConfig(dataset=ds, preprocessing=PREPROCESSING[ds], secure_mode=False,
                            model="quantum")  # the clip strategies of the quantum model
        if epochs:
            base0 = dataclasses.replace(base0, epochs=epochs)
        for eps in [*epsilons, math.inf]:
            cell = {"dataset": ds, "epsilon": eps, "candidates": {}}
            plan = ({"nonprivate": ("lr", LR_GRID)} if math.isinf(eps) else
                    {s: (("clip_fraction", CLIP_FRACTIONS) if s == "fixed" else ("lr", LR_GRID))
                     for s in STRATEGIES})
            for strategy, (hyper, grid) in plan.items():
                cell["candidates"][strategy] = [
                    _summary(strategy, hyper, v,
                             [_run(dataclasses.replace(base0, epsilon=eps, seed=s),
                                   strategy=strategy, value=v, delta_bound=delta_bound)
                              for s in seeds])
                    for v in grid]
            cells.append(cell)
    return {"delta": delta_bound, "cells": cells}


def _best(cands):
    return max(cands, key=lambda c: c["mean_accuracy"])


def _fmt(c, with_value=True):
    s = f"{c['mean_accuracy']:.3f} ± {c['std_accuracy']:.3f}"
    return f"{s} ({c['hyperparameter']}={c['value']:g})" if with_value else s


def rows(cells):
    """One row per (data set, ε): tuned (best of 3) and untuned (default value) per strategy."""
    out = []
    for cell in cells:
        row = {"dataset": cell["dataset"],
               "epsilon": "∞" if math.isinf(cell["epsilon"]) else f"{cell['epsilon']:g}"}
        for strategy, cands in cell["candidates"].items():
            row[f"{strategy} tuned"] = _fmt(_best(cands))
            row[f"{strategy} untuned"] = _fmt(cands[0], with_value=False)
        out.append(row)
    return out


def gaps(cells):
    """Per private cell: best untuned strategy minus tuned fixed-C DP-SGD (accuracy points)."""
    out = []
    for cell in cells:
        c = cell["candidates"]
        if "fixed" not in c:
            continue
        untuned = {s: c[s][0]["mean_accuracy"] for s in ("certified", "public", "adaptive")}
        best = max(untuned, key=untuned.get)
        out.append({"dataset": cell["dataset"], "epsilon": cell["epsilon"],
                    "best_untuned": best, "best_untuned_accuracy": untuned[best],
                    "tuned_fixed_accuracy": _best(c["fixed"])["mean_accuracy"],
                    "gap_points": 100 * (untuned[best] - _best(c["fixed"])["mean_accuracy"])})
    return out


COLUMNS = ["dataset", "epsilon", "certified untuned", "public untuned", "adaptive untuned",
           "fixed untuned", "certified tuned", "public tuned", "adaptive tuned", "fixed tuned",
           "nonprivate tuned"]


def figure(cells, json_path):
    """Test accuracy against ε per strategy (untuned solid, tuned dashed), per data set,
    with the non-private and chance levels."""
    plt = pyplot()
    datasets = list(dict.fromkeys(c["dataset"] for c in cells))
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4), squeeze=False)
    for ax, ds in zip(axes[0], datasets, strict=True):
        mine = [c for c in cells if c["dataset"] == ds]
        priv = [c for c in mine if not math.isinf(c["epsilon"])]
        eps = [c["epsilon"] for c in priv]
        for k, s in enumerate(STRATEGIES):
            color = f"C{k}"
            ax.errorbar(eps, [c["candidates"][s][0]["mean_accuracy"] for c in priv],
                        yerr=[c["candidates"][s][0]["std_accuracy"] for c in priv],
                        fmt="o-", color=color, capsize=3, label=f"{s} (untuned)")
            ax.plot(eps, [_best(c["candidates"][s])["mean_accuracy"] for c in priv], "--",
                    color=color, alpha=0.6, label=f"{s} (tuned)")
        for c in mine:
            if math.isinf(c["epsilon"]):
                ax.axhline(_best(c["candidates"]["nonprivate"])["mean_accuracy"], color="k",
                           ls=":", label="non-private (tuned)")
        ax.axhline(0.5, color="grey", ls="-.", label="chance")
        ax.set_xscale("log", base=2)
        ax.set(xlabel="ε (nats, δ = 1e-5)", ylabel="test accuracy", title=ds)
    axes[0][0].legend(fontsize=6, loc="lower right")
    return save_figure(fig, json_path)


def _finish(result, *, config, quick, name, out, seconds):
    md = table(rows(result["cells"]), COLUMNS)
    gap_rows = gaps(result["cells"])
    gmd = table(gap_rows, ["dataset", "epsilon", "best_untuned", "best_untuned_accuracy",
                           "tuned_fixed_accuracy", "gap_points"])
    path = write_result(result_name(name, quick),
                        {"quick": quick, "config": config, "seconds": seconds,
                         "markdown": md, "gap_markdown": gmd, "gaps": gap_rows, **result}, out)
    figure(result["cells"], path)
    print(md)
    print(gmd)
    print(f"wrote {path}")
    return path


def merge(paths, *, name, out):
    shards = [json.loads(Path(p).read_text()) for p in paths]
    cells = [c for s in shards for c in s["cells"]]
    config = {"datasets": [d for s in shards for d in s["config"]["datasets"]],
              **{k: v for k, v in shards[0]["config"].items() if k != "datasets"}}
    return _finish({"delta": shards[0]["delta"], "cells": cells}, config=config,
                   quick=any(s["quick"] for s in shards), name=name, out=out,
                   seconds=sum(s["seconds"] for s in shards))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="digits, ε = 1, 2 seeds, 2 epochs")
    p.add_argument("--datasets", nargs="+", default=None, choices=sorted(PREPROCESSING))
    p.add_argument("--epsilons", nargs="+", type=float, default=None)
    p.add_argument("--seeds", nargs="+", type=int, default=None)
    p.add_argument("--epochs", type=int, default=None, help="default: the job's (10)")
    p.add_argument("--name", default="bench_clip", help="result file stem (shards)")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--merge", nargs="+", type=Path, default=None, metavar="SHARD_JSON")
    args = p.parse_args(argv)
    if args.merge:
        merge(args.merge, name=args.name, out=args.out)
        return 0
    config = dict(QUICK if args.quick else FULL)
    for k in ("datasets", "epsilons", "seeds", "epochs"):
        if getattr(args, k) is not None:
            config[k] = getattr(args, k)
    config.update(lr_grid=LR_GRID, clip_fractions=CLIP_FRACTIONS)
    t0 = time.perf_counter()
    result = run(datasets=config["datasets"], epsilons=config["epsilons"],
                 seeds=config["seeds"], epochs=config.get("epochs"))
    _finish(result, config=config, quick=args.quick, name=args.name, out=args.out,
            seconds=time.perf_counter() - t0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
