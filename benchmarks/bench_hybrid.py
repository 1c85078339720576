r"""User-style hybrid models under ``make_private``: clip modes, linear DP-SGD, no privacy.

The models are written as a user writes them (the README's hybrid), not the job's:

* ``readme``: ``Linear(d, 3)`` → angles π/2·(1 + tanh) → 3-qubit ``AngleEmbedding`` (RY) and one
  ``BasicEntanglerLayers`` layer (RY, weights initialised N(0, 0.1²)) → three ⟨Z_i⟩ →
  ``Linear(3, K)``;
* ``reupload``: the same, with the angles embedded again after the entangling layer (data
  re-uploading, two layers);
* ``quanv`` (digits 0 vs 1, 8×8 images): a quanvolution — every 2×2 patch (stride 2) through one
  4-qubit circuit (one ``BasicEntanglerLayers`` layer, ⟨Z_0⟩), then ``Linear(16, 2)``.

Features: the shipped published ranges of each data set (public; pixels: [0, 16]), each column
mapped to [−2, 2]; the stratified 75/25 split of the seed. Training: cross-entropy, SGD lr 0.5,
batch 32, 5 epochs, δ = 1e-5, PLD, seeded noise (research mode: a seed pairs the methods).
Methods:

* ``automatic``: ``make_private`` with no clip argument (the default for hybrids: automatic
  clipping, Bu et al., arXiv:2206.07136);
* ``flat``: DP-SGD clipping of the whole gradient at C = 1 (``max_grad_norm=1.0``);
* ``per_layer``: the certified Δ on the quantum weights and C = 1 on the classical layers
  (``max_grad_norm="certified", classical_max_grad_norm=1.0``);
* ``linear``: logistic/softmax regression ``Linear(d, K)`` on the same features through
  ``make_private`` (flat clip C = 1, lr 0.5, batch 32, 5 epochs);
* ``nonprivate``: the hybrid without privacy (backprop, plain SGD, same settings, shuffled).

No setting is tuned per method or data set (lr 0.5 and batch 32 were chosen on wine seeds 0–4 at
ε = 2 for the README, and are charged nowhere: a benchmark, not a release). Cells: median test
accuracy [quartiles] over the seeds.

    python benchmarks/bench_hybrid.py [--tasks wine iris breast_cancer digits01]
        [--models readme reupload quanv]
        [--epsilons 1 2 4] [--seeds 0 1 2 3 4 5 6 7 8 9] [--quick] [--name N] [--merge F ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pyplot, result_name, save_figure, table, write_result  # noqa: E402

TASKS = ("wine", "iris", "breast_cancer", "digits01")
MODELS = ("readme", "reupload", "quanv")
METHODS = ("automatic", "flat", "per_layer", "linear", "nonprivate")
LR, BATCH, EPOCHS, DELTA = 0.5, 32, 5, 1e-5


def _data(task: str, seed: int):
    import numpy as np
    import torch
    from sklearn import datasets
    from sklearn.model_selection import train_test_split

    from pennylane_qshiftdp.app.data import FEATURE_RANGES

    if task == "digits01":  # 8×8 images of 0 and 1, pixel intensities in [0, 16] (public)
        X, y = datasets.load_digits(n_class=2, return_X_y=True)
        lo, hi = np.zeros(64), np.full(64, 16.0)
    else:
        X, y = getattr(datasets, f"load_{task}")(return_X_y=True)
        lo, hi = np.array(FEATURE_RANGES[task]).T
    X = 4 * (X - lo) / (hi - lo) - 2
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, stratify=y,
                                              random_state=seed)
    f = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    return f(X_tr), torch.tensor(y_tr), f(X_te), torch.tensor(y_te), int(y.max()) + 1


def _hybrid(model: str, n_in: int, n_classes: int, private: bool):
    import pennylane as qml
    import torch

    import pennylane_qshiftdp as qs

    dev = qml.device("default.qubit", wires=3)

    @qml.qnode(dev, diff_method=qs.param_shift if private else "backprop")
    def circuit(inputs, weights):
        for layer in range(weights.shape[0]):
            if layer == 0 or model == "reupload":
                qml.AngleEmbedding(inputs, wires=range(3), rotation="Y")
            qml.BasicEntanglerLayers(weights[layer:layer + 1], wires=range(3), rotation=qml.RY)
        return [qml.expval(qml.Z(i)) for i in range(3)]

    layers = 2 if model == "reupload" else 1

    class Hybrid(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Linear(n_in, 3)
            self.quantum = qml.qnn.TorchLayer(
                circuit, {"weights": (layers, 3)},
                init_method=lambda w: torch.nn.init.normal_(w, std=0.1))
            self.post = torch.nn.Linear(3, n_classes)

        def forward(self, x):
            return self.post(self.quantum(math.pi / 2 * (1 + torch.tanh(self.pre(x)))))

    return Hybrid()


def _quanvolution(n_classes: int, private: bool):
    """A quanvolution: every 2×2 patch of the 8×8 image (stride 2, 16 patches) through one
    4-qubit circuit (angles π·pixel/16, one ``BasicEntanglerLayers`` layer, ⟨Z_0⟩), then
    ``Linear(16, K)``."""
    import pennylane as qml
    import torch

    import pennylane_qshiftdp as qs

    dev = qml.device("default.qubit", wires=4)

    @qml.qnode(dev, diff_method=qs.param_shift if private else "backprop")
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(4), rotation="Y")
        qml.BasicEntanglerLayers(weights, wires=range(4), rotation=qml.RY)
        return qml.expval(qml.Z(0))

    class Quanvolution(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.quantum = qml.qnn.TorchLayer(
                circuit, {"weights": (1, 4)},
                init_method=lambda w: torch.nn.init.normal_(w, std=0.1))
            self.head = torch.nn.Linear(16, n_classes)

        def forward(self, x):
            images = (x + 2) / 4 * math.pi  # the features back to angles in [0, π]
            patches = images.reshape(-1, 1, 8, 8).unfold(2, 2, 2).unfold(3, 2, 2)
            patches = patches.reshape(-1, 16, 4)
            return self.head(self.quantum(patches).reshape(-1, 16))

    return Quanvolution()


def run_one(task: str, model: str, method: str, epsilon: float, seed: int) -> dict:
    """One training run; returns its test accuracy and what it cost."""
    import torch

    import pennylane_qshiftdp as qs

    x_tr, y_tr, x_te, y_te, k = _data(task, seed)
    torch.manual_seed(seed)
    private = method != "nonprivate"
    net = (torch.nn.Linear(x_tr.shape[1], k) if method == "linear"
           else _quanvolution(k, private) if model == "quanv"
           else _hybrid(model, x_tr.shape[1], k, private))
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_tr, y_tr),
                                         batch_size=BATCH, shuffle=not private,
                                         generator=torch.Generator().manual_seed(seed))
    t0 = time.perf_counter()
    clip = {"automatic": {}, "flat": {"max_grad_norm": 1.0}, "linear": {"max_grad_norm": 1.0},
            "per_layer": {"max_grad_norm": "certified", "classical_max_grad_norm": 1.0}}
    spent = math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if private:
            net, opt, loader = qs.make_private(net, opt, loader, target_epsilon=epsilon,
                                               target_delta=DELTA, epochs=EPOCHS, seed=seed,
                                               **clip[method])
        for _ in range(EPOCHS):
            for xb, yb in loader:
                opt.zero_grad()
                if len(xb):
                    torch.nn.functional.cross_entropy(net(xb), yb).backward()
                opt.step()
        if private:
            spent = opt.ledger.epsilon
    with torch.no_grad():
        acc = float((net(x_te).argmax(1) == y_te).float().mean())
    return {"task": task, "model": "linear" if method == "linear" else model, "method": method,
            "epsilon": epsilon if private else math.inf, "seed": seed, "test_accuracy": acc,
            "epsilon_spent": spent, "seconds": time.perf_counter() - t0}


def _cell(values: list[float]) -> str:
    if not values:
        return ""
    q = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [
        values[0]] * 3
    return f"{statistics.median(values):.3f} [{q[0]:.3f}, {q[2]:.3f}]"


def summarise(rows: list[dict]) -> tuple[list[dict], str]:
    """One table row per (task, model, ε): the median [quartiles] of every method."""
    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        models = dict.fromkeys(r["model"] for r in rows if r["task"] == task
                               and r["model"] != "linear")
        base = {m: [r["test_accuracy"] for r in rows if r["task"] == task
                    and r["model"] == m and r["method"] == "nonprivate"] for m in models}
        for model in models:
            for eps in sorted({r["epsilon"] for r in rows if r["task"] == task
                               and math.isfinite(r["epsilon"])}):
                row = {"task": task, "model": model, "ε": eps}
                for method in METHODS[:3]:
                    row[method] = _cell([r["test_accuracy"] for r in rows if r["task"] == task
                                         and r["model"] == model and r["method"] == method
                                         and r["epsilon"] == eps])
                row["linear"] = _cell([r["test_accuracy"] for r in rows if r["task"] == task
                                       and r["method"] == "linear" and r["epsilon"] == eps])
                row["nonprivate"] = _cell(base[model])
                row["n"] = len({r["seed"] for r in rows if r["task"] == task
                                and r["epsilon"] == eps})
                out.append(row)
    return out, table(out, ["task", "model", "ε", *METHODS, "n"])


def plot(rows: list[dict], json_path: Path) -> Path:
    plt = pyplot()
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.6), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        for (model, method), style in (
                (("readme", "automatic"), "o-"), (("readme", "flat"), "s--"),
                (("readme", "per_layer"), "^:"), (("reupload", "automatic"), "d-"),
                (("quanv", "automatic"), "o-"), (("quanv", "flat"), "s--"),
                (("linear", "linear"), "x-.")):
            pts = sorted({r["epsilon"] for r in rows if r["task"] == task
                          and r["model"] == model and r["method"] == method})
            if not pts:
                continue
            med = [statistics.median(r["test_accuracy"] for r in rows if r["task"] == task
                                     and r["model"] == model and r["method"] == method
                                     and r["epsilon"] == e) for e in pts]
            ax.plot(pts, med, style, label=f"{model} {method}" if model != "linear"
                    else "linear DP-SGD")
        for model, color in (("readme", "k"), ("reupload", "grey"), ("quanv", "k")):
            base = [r["test_accuracy"] for r in rows if r["task"] == task
                    and r["model"] == model and r["method"] == "nonprivate"]
            if base:
                ax.axhline(statistics.median(base), color=color, lw=0.8, ls="--",
                           label=f"{model} non-private")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ε (nats)")
        ax.set_ylabel("median test accuracy")
        ax.set_title(task)
        ax.set_ylim(0, 1.02)
        ax.legend(fontsize=6, loc="lower right")
    return save_figure(fig, json_path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--models", nargs="+", default=["readme"], choices=MODELS)
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    p.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    p.add_argument("--quick", action="store_true", help="wine, ε = 2, seeds 0 1")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--name", default=None, help="result file stem")
    p.add_argument("--merge", nargs="+", type=Path, default=None,
                   help="merge these result files into one (no run)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    name = args.name or result_name("bench_hybrid", args.quick or args.tiny)
    if args.merge:
        rows = [r for f in args.merge for r in json.loads(f.read_text())["runs"]]
        config = {"merged": [str(f.name) for f in args.merge]}
    else:
        if args.quick or args.tiny:
            args.tasks, args.epsilons, args.seeds = ["wine"], [2.0], [0, 1]
            if args.tiny:
                args.seeds = [0]
        rows = []
        config = vars(args) | {"lr": LR, "batch": BATCH, "epochs": EPOCHS, "delta": DELTA}
        config = {k: (str(v) if isinstance(v, Path) else v) for k, v in config.items()}
        for task in args.tasks:
            for seed in args.seeds:
                if "nonprivate" in args.methods:
                    for model in args.models:
                        rows.append(run_one(task, model, "nonprivate", math.inf, seed))
                for eps in args.epsilons:
                    for method in args.methods:
                        if method == "nonprivate":
                            continue
                        models = ["linear"] if method == "linear" else args.models
                        for model in models:
                            rows.append(run_one(task, model, method, eps, seed))
                            print(rows[-1], flush=True)
                write_result(name, {"runs": rows, "config": config}, args.out)
    summary, markdown = summarise(rows)
    path = write_result(name, {"runs": rows, "config": config, "summary": summary,
                               "markdown": markdown}, args.out)
    plot(rows, path)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
