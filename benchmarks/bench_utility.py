r"""Privacy-utility: test accuracy against ε for Q-ShiftDP credit modes, DP-SGD and no privacy.

Model: angle embedding + 2 StronglyEntanglingLayers on 4 qubits, output ⟨Z₀⟩, linear loss
ℓ = −y f, SGD, expected batch 32 with Poisson sampling, δ = 1e-5, RDP accountant, 4 features.
Data sets: ``digits`` (0 vs 1, fixed data-independent preprocessing; 25 % test split in full
mode) and ``breast_cancer`` (``standardize_pca``: the standardisation/PCA statistics are
data-dependent and *not* protected; 50 % test split in full mode, which halves its training cost
on default.mixed and gives a 285-example test set).
Simulator: default.qubit with input broadcasting (≈5× faster than lightning.qubit here);
the ``depolarizing`` credit runs on default.mixed with PennyLane ``DepolarizingChannel(q)``,
q = 3p/4, on every qubit (device depolarizing probability p ∈ {0.01, 0.05}); default.mixed is
≈17× slower per epoch than default.qubit here, so ``--quick`` runs it on digits only.

Methods (each gets the same search budget: a grid of G values of *one* hyperparameter, the
value with the best mean test accuracy over the seeds is reported — the same, optimistic,
protocol for every method; the search itself is not privacy-accounted):

* ``nonprivate``: ε = ∞, no noise; learning rate tuned on the grid.
* ``qshiftdp_none``: Q-ShiftDP without shot-noise credit; learning rate tuned on the grid.
* ``qshiftdp_adaptive`` (β = 1e-3; reported guarantee (ε, δ + β)) and
  ``qshiftdp_depolarizing_p<p>``: the same algorithm with less artificial noise, at the
  learning rate selected for ``qshiftdp_none`` (no extra tuning).
* ``dpsgd_clip``: DP-SGD with per-example clipping on the *same* circuit, shots and Poisson
  batches, through the product: the training job with ``max_grad_norm=C`` (``make_private``'s
  Opacus optimizer clips every example's parameter-shift gradient at C and adds N(0, σ²C²)
  with σ calibrated for the same (ε, δ, q, T)). The clipping norm C = c·Δ is tuned on the grid
  of c, with learning rate lr_base·Δ/C (lr_base = 0.2, the Q-ShiftDP default): c = 1 never
  clips and equals ``qshiftdp_none`` at lr_base. The full grids are matched: c ∈ {1, 1/4, 1/16}
  gives DP-SGD the learning rates {0.2, 0.8, 3.2}, the grid of ``qshiftdp_none``.

Full mode (``FULL_CONFIG``): both data sets, ε ∈ {0.5, 1, 2, 4, 8, ∞}, Ns ∈ {100, 1000},
seeds {0, 1, 2}, 2 epochs as in ``--quick`` (576 training runs, 120 of them on default.mixed;
the epoch count is what keeps the sweep to hours on 2 cores; the JSON records its seconds). It
can be split into shards by ``--datasets``/``--shots`` with ``--name`` and merged with
``--merge``; ``run_all.py --jobs 2`` does both. Every run is seeded (``secure_mode=False``: DP
noise, Poisson sampling, shots, initialisation and data split from the seed), so a seed gives
every method the same split and initialisation and the sweep repeats exactly.

    python benchmarks/bench_utility.py [--quick] [--datasets ...] [--epsilons ...] [--shots ...]
                                       [--seeds ...] [--epochs N] [--name STEM] [--out DIR]
    python benchmarks/bench_utility.py --merge SHARD.json ... [--name STEM] [--out DIR]

``--defaults`` runs the other study (:mod:`_anchor`): the product's default configuration of
``qshiftdp train`` against linear DP-SGD through Opacus on the same splits and features, on
breast cancer, wine, iris, digits-10 and digits 0 vs 1, ε ∈ {0.5, 1, 2, 4, 8, ∞}, 10 seeds
(result ``bench_utility_defaults``; ``--defaults-merge`` joins shards run with ``--datasets``
and ``--name``)::

    python benchmarks/bench_utility.py --defaults [--datasets TASK ...] [--epsilons ...]
                                       [--seeds ...] [--name STEM] [--out DIR]
    python benchmarks/bench_utility.py --defaults-merge SHARD.json ... [--out DIR]
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_std, pyplot, result_name, save_figure, table, write_result  # noqa: E402

# Heavy libraries (torch, PennyLane, Opacus, SciPy; pennylane_qshiftdp and qprldp_core import
# them) are bound by _import_heavy(), which main() calls after parsing the arguments, so that
# `--help` and argument errors answer without loading them. Module-level names stay None
# until then.
torch = TrainConfig = _seed_for = train = QuantumClassifier = sensitivity = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global torch, TrainConfig, _seed_for, train, QuantumClassifier, sensitivity
    import torch

    from pennylane_qshiftdp.app.job import TrainConfig, _seed_for, train
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.gradients.sensitivity_bound import sensitivity


PREPROCESSING = {"digits": "fixed", "breast_cancer": "standardize_pca", "iris": "standardize_pca",
                 "wine": "standardize_pca"}
DELTA, BETA, BATCH, QUBITS, LAYERS, LR_BASE = 1e-5, 1e-3, 32, 4, 2, 0.2
FULL_CONFIG = {"datasets": ["digits", "breast_cancer"],
               "epsilons": [0.5, 1.0, 2.0, 4.0, 8.0, math.inf], "shots_list": [100, 1000],
               "seeds": [0, 1, 2], "epochs": 2, "lr_grid": [0.2, 0.8, 3.2],
               "clip_grid": [1.0, 0.25, 0.0625], "depol_ps": [0.01, 0.05],
               "test_size": {"digits": 0.25, "breast_cancer": 0.5, "iris": 0.25, "wine": 0.25}}


def estimate_seconds(quick_result: dict, config: dict = FULL_CONFIG) -> dict:
    """Wall-clock estimate of ``config`` from a quick run's per-run-epoch times."""
    per = {}
    for e in quick_result["settings"]:
        for cands in [*e["candidates"].values(), *[[m] for m in e["methods"].values()]]:
            for c in cands:
                kind = "mixed" if c["method"].startswith("qshiftdp_depol") else (
                    "dpsgd" if c["method"] == "dpsgd_clip" else "qubit")
                for r in c["runs"]:
                    per.setdefault((e["dataset"], kind), []).append(
                        r["seconds"] / quick_result["config"]["epochs"])
    per = {k: float(np.mean(v)) for k, v in per.items()}
    total, parts = 0.0, {}
    n_priv = sum(math.isfinite(x) for x in config["epsilons"])
    n_inf = len(config["epsilons"]) - n_priv
    def lookup(ds, kind):
        # A data set or run kind absent from the quick run: the mean over the other data sets.
        if (ds, kind) in per:
            return per[(ds, kind)]
        same = [v for (d, k), v in per.items() if k == kind]
        return float(np.mean(same)) if same else float("nan")

    for ds in config["datasets"]:
        runs = {"qubit": len(config["shots_list"]) * len(config["seeds"]) * (
                    n_priv * (len(config["lr_grid"]) + 1) + n_inf * len(config["lr_grid"])),
                "dpsgd": len(config["shots_list"]) * len(config["seeds"]) * n_priv
                * len(config["clip_grid"]),
                "mixed": len(config["shots_list"]) * len(config["seeds"]) * n_priv
                * len(config["depol_ps"])}
        for kind, n in runs.items():
            sec = n * config["epochs"] * lookup(ds, kind)
            parts[f"{ds}/{kind}"] = sec
            total += sec
    return {"total_seconds": total, "parts_seconds": parts}


def _config(dataset, *, epsilon, shots, seed, epochs, lr, test_size, credit="none", beta=0.0,
            device="default.qubit", depolarizing=0.0):
    return TrainConfig(dataset=dataset, preprocessing=PREPROCESSING[dataset], epsilon=epsilon,
                       delta=DELTA, epochs=epochs, expected_batch_size=BATCH, shots=shots,
                       device=device, layers=LAYERS, qubits=QUBITS, lr=lr, loss="linear",
                       credit=credit, beta=beta, depolarizing=depolarizing, seed=seed,
                       test_size=test_size, secure_mode=False)  # seeded noise: repeatable


def run_qshiftdp(cfg: TrainConfig) -> dict:
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(cfg, progress=False)
    print(f"  {cfg.dataset} Ns={cfg.shots} eps={cfg.epsilon} lr={cfg.lr} credit={cfg.credit} "
          f"seed={cfg.seed}: {res.test_accuracy:.3f} ({time.perf_counter() - t0:.0f} s)",
          flush=True)
    art = [r["artificial_variance_mean"] for r in res.step_records]
    tgt = res.step_records[0]["target_variance"] if res.step_records else None
    return {"test_accuracy": res.test_accuracy, "epsilon_spent": res.epsilon,
            "steps": res.steps, "seconds": time.perf_counter() - t0,
            "artificial_variance_saved": (1 - float(np.mean(art)) / tgt) if tgt else None}


_DELTA_CACHE: dict = {}


def _certified_delta() -> float:
    """Δ of the default circuit (QUBITS, LAYERS, ⟨Z0⟩, linear loss): the certified clip norm."""
    if "delta" not in _DELTA_CACHE:
        model = QuantumClassifier(QUBITS, LAYERS, device="default.qubit", shots=None)
        sens = sensitivity(model.qnode, inputs=torch.zeros(QUBITS, dtype=torch.float64),
                           weights=model.qlayer.weights.detach().double().requires_grad_(True))
        _DELTA_CACHE["delta"] = sens.delta
    return _DELTA_CACHE["delta"]


def run_dpsgd(dataset, *, epsilon, shots, seed, epochs, clip_fraction, test_size,
              device="default.qubit") -> dict:
    """DP-SGD at C = c·Δ through the product: ``make_private(max_grad_norm=C)`` in the job."""
    t0 = time.perf_counter()
    delta_bound = _certified_delta()
    clip = clip_fraction * delta_bound
    cfg = dataclasses.replace(
        _config(dataset, epsilon=epsilon, shots=shots, seed=seed, epochs=epochs,
                lr=LR_BASE * delta_bound / clip, test_size=test_size, device=device),
        max_grad_norm=clip)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train(cfg, progress=False)
    recs = res.step_records
    seen = sum(r["batch_examples"] for r in recs)
    clipped = sum(r["clipped"] for r in recs)
    sigma = math.sqrt(recs[0]["target_variance"]) / clip if recs else None
    print(f"  {dataset} Ns={shots} eps={epsilon} dpsgd c={clip_fraction} seed={seed}: "
          f"{res.test_accuracy:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return {"test_accuracy": res.test_accuracy, "steps": res.steps, "sigma": sigma,
            "clip_norm": clip, "sensitivity": delta_bound,
            "clipped_fraction": clipped / max(seen, 1), "seconds": time.perf_counter() - t0}


def _summarise(runs, method, hyper, value):
    accs = [r["test_accuracy"] for r in runs]
    m, s = mean_std(accs)
    return {"method": method, "hyperparameter": hyper, "value": value, "mean_accuracy": m,
            "std_accuracy": s, "accuracies": accs, "seeds": len(runs),
            "seconds": sum(r["seconds"] for r in runs), "runs": runs}


def _best(cands):
    return max(cands, key=lambda c: (c["mean_accuracy"], -c["value"]))


def _test_size(test_size, dataset):
    """The test fraction of ``dataset``: ``test_size`` is one float or a per-data-set dict."""
    if isinstance(test_size, dict):
        if dataset not in test_size:
            raise ValueError(f"test_size has no entry for dataset={dataset!r}: {test_size}")
        return test_size[dataset]
    return test_size


def run(*, datasets, epsilons, shots_list, seeds, epochs, lr_grid, clip_grid, depol_ps,
        test_size, depol_datasets=None, log=print):
    settings = []
    for dataset in datasets:
        for shots in shots_list:
            for eps in epsilons:
                common = {"epsilon": eps, "shots": shots, "epochs": epochs,
                          "test_size": _test_size(test_size, dataset)}
                entry = {"dataset": dataset, "preprocessing": PREPROCESSING[dataset],
                         "shots": shots, "epsilon": eps, "methods": {}, "candidates": {}}
                if math.isinf(eps):
                    cands = [_summarise([run_qshiftdp(_config(dataset, seed=s, lr=lr, **common))
                                         for s in seeds], "nonprivate", "lr", lr)
                             for lr in lr_grid]
                    entry["candidates"]["nonprivate"] = cands
                    entry["methods"]["nonprivate"] = _best(cands)
                else:
                    cands = [_summarise([run_qshiftdp(_config(dataset, seed=s, lr=lr, **common))
                                         for s in seeds], "qshiftdp_none", "lr", lr)
                             for lr in lr_grid]
                    best = _best(cands)
                    entry["candidates"]["qshiftdp_none"] = cands
                    entry["methods"]["qshiftdp_none"] = best
                    lr = best["value"]
                    entry["methods"]["qshiftdp_adaptive"] = _summarise(
                        [run_qshiftdp(_config(dataset, seed=s, lr=lr, credit="adaptive",
                                              beta=BETA, **common)) for s in seeds],
                        "qshiftdp_adaptive", "lr", lr)
                    for p in (depol_ps if depol_datasets is None or dataset in depol_datasets
                              else []):
                        name = f"qshiftdp_depolarizing_p{p}"
                        entry["methods"][name] = _summarise(
                            [run_qshiftdp(_config(dataset, seed=s, lr=lr, credit="depolarizing",
                                                  device="default.mixed",
                                                  depolarizing=0.75 * p, **common))
                             for s in seeds], name, "lr", lr)
                    cands = [_summarise([run_dpsgd(dataset, seed=s, clip_fraction=c, **common)
                                         for s in seeds], "dpsgd_clip", "clip_fraction", c)
                             for c in clip_grid]
                    entry["candidates"]["dpsgd_clip"] = cands
                    entry["methods"]["dpsgd_clip"] = _best(cands)
                settings.append(entry)
                log(f"{dataset} Ns={shots} eps={eps}: " + ", ".join(
                    f"{k}={v['mean_accuracy']:.3f}±{v['std_accuracy']:.3f}"
                    for k, v in entry["methods"].items()))
    return settings


def summary_rows(settings):
    rows = []
    for e in settings:
        for name, m in e["methods"].items():
            rows.append({"dataset": e["dataset"], "shots": e["shots"], "epsilon": e["epsilon"],
                         "method": name, "hyperparameter": f"{m['hyperparameter']}={m['value']}",
                         "mean_accuracy": m["mean_accuracy"], "std_accuracy": m["std_accuracy"],
                         "seeds": m["seeds"]})
    return rows


def figure(settings, json_path):
    plt = pyplot()
    panels = sorted({(e["dataset"], e["shots"]) for e in settings})
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (ds, shots) in zip(axes[0], panels, strict=True):
        entries = [e for e in settings if e["dataset"] == ds and e["shots"] == shots]
        finite = sorted(e["epsilon"] for e in entries if math.isfinite(e["epsilon"]))
        x_inf = (max(finite) * 2) if finite else 1.0
        methods = sorted({m for e in entries for m in e["methods"]})
        for i, name in enumerate(methods):
            pts = sorted((e["epsilon"] if math.isfinite(e["epsilon"]) else x_inf,
                          e["methods"][name]["mean_accuracy"], e["methods"][name]["std_accuracy"])
                         for e in entries if name in e["methods"])
            xs, ys, es = zip(*pts, strict=True)
            ax.errorbar([x * (1 + 0.03 * i) for x in xs], ys, yerr=es, marker="o",
                        capsize=3, label=name)
        ax.set(xscale="log", xlabel="ε (rightmost point: ε = ∞)", ylabel="test accuracy",
               title=f"{ds}, Ns={shots}")
        ax.legend(fontsize=7)
    return save_figure(fig, json_path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="reduced configuration (minutes)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--datasets", nargs="+", default=None)
    p.add_argument("--epsilons", nargs="+", type=float, default=None)
    p.add_argument("--shots", nargs="+", type=int, default=None)
    p.add_argument("--seeds", nargs="+", type=int, default=None)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--depol-ps", nargs="*", type=float, default=None,
                   help="device depolarizing probabilities p (empty: skip default.mixed runs)")
    p.add_argument("--name", default=None, help="result file stem (to shard the full run)")
    p.add_argument("--out", type=Path, default=None, help="output directory")
    p.add_argument("--defaults", action="store_true",
                   help="the product's defaults against linear DP-SGD (see the module docstring)")
    p.add_argument("--defaults-merge", nargs="+", type=Path, default=None, metavar="SHARD_JSON",
                   help="merge --defaults shards into bench_utility_defaults; runs nothing")
    p.add_argument("--merge", nargs="+", type=Path, default=None, metavar="SHARD_JSON",
                   help="merge shard results (runs with --datasets/--shots/--epsilons subsets and "
                        "--name) "
                        "into one result named --name (default bench_utility); runs nothing")
    args = p.parse_args(argv)
    if args.defaults or args.defaults_merge:
        return _defaults(args)
    _import_heavy()
    args.quick = args.quick or args.tiny
    if args.tiny:
        cfg = {"datasets": ["digits"], "epsilons": [1.0, math.inf], "shots_list": [100],
               "seeds": [0], "epochs": 1, "lr_grid": [0.2], "clip_grid": [0.5],
               "depol_ps": [0.05], "test_size": 0.9}
    elif args.quick:
        cfg = {"datasets": ["digits", "breast_cancer"], "epsilons": [1.0, math.inf],
               "shots_list": [100], "seeds": [0, 1], "epochs": 2, "lr_grid": [0.2, 1.0],
               "clip_grid": [1.0, 0.125], "depol_ps": [0.05], "depol_datasets": ["digits"],
               "test_size": 0.25}
    else:
        cfg = dict(FULL_CONFIG)
    for key, arg in (("datasets", args.datasets), ("epsilons", args.epsilons),
                     ("shots_list", args.shots), ("seeds", args.seeds),
                     ("epochs", args.epochs), ("depol_ps", args.depol_ps)):
        if arg is not None:
            cfg[key] = arg
    if args.merge:
        try:
            return merge(args.merge, name=args.name or "bench_utility", out=args.out)
        except ValueError as err:
            p.error(str(err))
    t0 = time.perf_counter()
    settings = run(**cfg)
    return _finish(cfg, settings, quick=args.quick, seconds=time.perf_counter() - t0,
                   name=args.name or result_name("bench_utility", args.quick), out=args.out)


def _defaults(args) -> dict:
    """``--defaults`` / ``--defaults-merge``: the product's defaults against the linear anchor."""
    import _anchor

    if args.defaults_merge:
        rows, seconds, seeds = [], 0.0, None
        for path in args.defaults_merge:
            shard = json.loads(Path(path).read_text())
            if seeds is not None and shard["seeds"] != seeds:
                raise SystemExit(f"--defaults-merge: {path} ran seeds {shard['seeds']}, the "
                                 f"others {seeds}")
            rows += shard["rows"]
            seconds += shard["seconds"]
            seeds = shard["seeds"]
        tasks = list(dict.fromkeys(r["task"] for r in rows))
    else:
        tasks = args.datasets or list(_anchor.TASKS)
        unknown = sorted(set(tasks) - set(_anchor.TASKS))
        if unknown:
            raise SystemExit(f"--datasets: unknown task(s) {unknown}; choose from "
                             f"{list(_anchor.TASKS)}")
        epsilons = args.epsilons or _anchor.EPSILONS
        seeds = args.seeds or list(range(10))
        if args.tiny:
            epsilons, seeds = [1.0], [0]
        elif args.quick:
            epsilons, seeds = args.epsilons or [1.0, math.inf], args.seeds or [0, 1]
        t0 = time.perf_counter()
        rows = _anchor.run(tasks, epsilons, seeds)
        seconds = time.perf_counter() - t0
    print(table([{k: v for k, v in r.items() if k != "runs"} for r in rows],
                ["task", "epsilon", "method", "median_accuracy", "q1", "q3", "min_accuracy",
                 "median_balanced", "seeds"]))
    result = {"tasks": tasks, "seeds": seeds, "rows": rows, "seconds": seconds,
              "protocol": _anchor.__doc__, "anchor_settings": _anchor.ANCHOR}
    name = args.name or result_name("bench_utility_defaults", args.quick or args.tiny)
    path = write_result(name, result, args.out)
    _anchor.plot(rows, path)
    return result


def _finish(cfg, settings, *, quick, seconds, name, out, extra=None):
    rows = summary_rows(settings)
    print(table(rows, ["dataset", "shots", "epsilon", "method", "hyperparameter",
                       "mean_accuracy", "std_accuracy", "seeds"]))
    result = {"quick": quick,
              "config": {**cfg, "qubits": QUBITS, "layers": LAYERS, "expected_batch_size": BATCH,
                         "delta": DELTA, "beta_adaptive": BETA, "lr_base_dpsgd": LR_BASE,
                         "accountant": "rdp", "loss": "linear", "device": "default.qubit "
                         "(input broadcasting); depolarizing credit on default.mixed with "
                         "DepolarizingChannel(q=3p/4) on every qubit",
                         "selection": "best mean test accuracy over seeds on each method's "
                                      "grid (same budget per method; not privacy-accounted)",
                         "preprocessing_note": "breast_cancer uses standardize_pca: "
                                               "data-dependent statistics, not protected"},
              "summary": rows, "settings": settings, "seconds": seconds, **(extra or {})}
    path = write_result(name, result, out)
    figure(settings, path)
    print(f"wrote {path} ({seconds:.0f} s)")
    return result


#: Configuration keys that every shard of one sweep must share.
_SHARED_KEYS = ("seeds", "epochs", "lr_grid", "clip_grid", "depol_ps")


def _read_shard(path) -> dict:
    """One shard result, or ValueError naming the file if it is absent or not a utility result."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ValueError(f"merge: cannot read shard {path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise ValueError(f"merge: shard {path} is not valid JSON ({err.msg})") from err
    missing = [k for k in ("quick", "config", "settings", "seconds") if k not in data] + [
        k for k in ("datasets", "shots_list", "epsilons", "test_size")
        if k not in data.get("config", {})]
    if missing:
        raise ValueError(f"merge: {path} is not a bench_utility result (no {', '.join(missing)})")
    return data


def merge(paths, *, name="bench_utility", out=None) -> dict:
    """Merge shard results (``--datasets``/``--shots``/``--epsilons`` subsets of one sweep).

    Raises:
        ValueError: if a shard file is unreadable or not a bench_utility result, or if the
            shards differ in any setting other than data sets, shot counts and
            ε values (or in a data set's test fraction), mix quick and full mode, overlap
            (the same data set, shot count and ε twice) or leave a hole in the grid (a data set,
            shot count and ε that no shard ran while the others did).
    """
    shards = [_read_shard(p) for p in paths]
    if not shards:
        raise ValueError("merge: no shard files given")
    base = shards[0]["config"]
    for path, sh in zip(paths, shards, strict=True):
        diff = [k for k in _SHARED_KEYS if sh["config"].get(k) != base.get(k)]
        if diff or sh["quick"] != shards[0]["quick"]:
            raise ValueError(f"merge: shard {path} differs from {paths[0]} in "
                             f"{diff or ['quick']}; only datasets, shots and epsilons may differ")
    test_size = {}
    for path, sh in zip(paths, shards, strict=True):
        for d in sh["config"]["datasets"]:
            t = _test_size(sh["config"]["test_size"], d)
            if test_size.setdefault(d, t) != t:
                raise ValueError(f"merge: shard {path} uses test_size={t} for dataset={d!r}, "
                                 f"another shard {test_size[d]}")
    seen, settings = set(), []
    for path, sh in zip(paths, shards, strict=True):
        for e in sh["settings"]:
            key = (e["dataset"], e["shots"], e["epsilon"])
            if key in seen:
                raise ValueError(f"merge: shard {path} repeats dataset={e['dataset']!r}, "
                                 f"shots={e['shots']}, epsilon={e['epsilon']}")
            seen.add(key)
            settings.append(e)
    order = {d: i for i, d in enumerate(FULL_CONFIG["datasets"])}
    settings.sort(key=lambda e: (order.get(e["dataset"], len(order)), e["dataset"], e["shots"],
                                 e["epsilon"]))
    cfg = {k: base[k] for k in (*_SHARED_KEYS, "depol_datasets") if k in base}
    cfg["datasets"] = list(dict.fromkeys(e["dataset"] for e in settings))
    cfg["shots_list"] = sorted({e["shots"] for e in settings})
    cfg["epsilons"] = sorted({e["epsilon"] for e in settings})
    cfg["test_size"] = {d: test_size[d] for d in cfg["datasets"] if d in test_size}
    missing = [(d, n, e) for d in cfg["datasets"] for n in cfg["shots_list"]
               for e in cfg["epsilons"] if (d, n, e) not in seen]
    if missing:
        raise ValueError(f"merge: the shards leave {len(missing)} (dataset, shots, epsilon) "
                         f"cells of the grid empty, e.g. {missing[:3]}; run them as another shard")
    shard_info = [{"file": Path(p).name, "seconds": sh["seconds"],
                   "datasets": sh["config"]["datasets"], "shots_list": sh["config"]["shots_list"],
                   "epsilons": sh["config"]["epsilons"]}
                  for p, sh in zip(paths, shards, strict=True)]
    return _finish(cfg, settings, quick=shards[0]["quick"],
                   seconds=sum(sh["seconds"] for sh in shards), name=name, out=out,
                   extra={"shards": shard_info})


if __name__ == "__main__":
    main()
