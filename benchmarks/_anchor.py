r"""``bench_utility.py --defaults``: the product's defaults against linear DP-SGD, same work.

For each data set (breast cancer, wine, iris, digits-10, digits 0 vs 1), ε ∈ {0.5, 1, 2, 4, 8,
∞} and seed (10 by default), two runs on the same stratified split of the same seed (75/25) and
the same features (the job's ``preprocessing="fixed"`` angles in :math:`[0, \pi]`: every raw
column from its declared range, or for digits 0 vs 1 the flagship's 4 stroke regions):

* ``product``: ``qshiftdp train`` with every setting at ``"auto"`` (``train(TrainConfig(
  dataset, classes, epsilon, seed))``), i.e. what a user's first run gets. digits 0 vs 1 is the
  flagship quantum model (4 stroke features); every other task the neuron model on all features.
* ``linear``: the anchor, logistic (two classes) or softmax (K classes) regression on the same
  features rescaled to :math:`[-1/2, 1/2]` (angle / π − 1/2), trained with Opacus's own
  ``PrivacyEngine(accountant="rdp").make_private_with_epsilon`` (Poisson sampling, flat clip,
  the same δ = 1e-5); at ε = ∞ plain SGD without clipping. Its settings (lr, clip, epochs, batch)
  were chosen per data set on validation splits carved from the training splits (``ANCHOR``):
  the anchor is tuned per data set, the product once per task family.

Both are seeded (``secure_mode=False`` for the product, a seeded generator for Opacus), so the
sweep repeats exactly. The search for either's settings is not charged to ε.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings

#: The tasks: name → (``dataset``, ``classes``).
TASKS = {"breast_cancer": ("breast_cancer", None), "wine": ("wine", None),
         "iris": ("iris", None), "digits10": ("digits", "all"), "digits01": ("digits", None)}

#: Linear DP-SGD settings per task (validation-picked): lr, clip norm C, epochs, batch.
ANCHOR = {"breast_cancer": (4.0, 0.5, 20, 128), "iris": (2.0, 0.5, 30, 64),
          "wine": (0.5, 0.5, 30, 32), "digits10": (1.0, 0.5, 20, 128),
          "digits01": (4.0, 0.5, 20, 128)}

EPSILONS = [0.5, 1.0, 2.0, 4.0, 8.0, math.inf]
DELTA = 1e-5


def _features(task: str, seed: int):
    """The product's features: every raw column's angle (the neuron model), or for digits 0 vs
    1 the flagship's 4 stroke regions."""
    from pennylane_qshiftdp.app.data import load_dataset

    dataset, classes = TASKS[task]
    n_features = 4 if task == "digits01" else None
    return load_dataset(dataset, n_features=n_features, seed=seed, classes=classes)


def run_product(task: str, epsilon: float, seed: int) -> dict:
    from pennylane_qshiftdp.app.job import TrainConfig, train

    dataset, classes = TASKS[task]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = train(TrainConfig(dataset=dataset, classes=classes, epsilon=epsilon, seed=seed,
                              secure_mode=False), progress=False)
    return {"test_accuracy": r.test_accuracy, "balanced_accuracy": r.test_balanced_accuracy,
            "majority_rate": r.test_majority_rate, "epsilon_spent": r.epsilon,
            "settings": r.settings, "seconds": time.perf_counter() - t0}


def run_linear(task: str, epsilon: float, seed: int) -> dict:
    """Logistic/softmax regression with Opacus DP-SGD on the job's features and split."""
    import torch
    from opacus import PrivacyEngine
    from sklearn.metrics import balanced_accuracy_score

    t0 = time.perf_counter()
    data = _features(task, seed)
    lr, clip, epochs, batch = ANCHOR[task]
    binary = data.n_classes == 2
    x = torch.as_tensor(data.X_train / math.pi - 0.5, dtype=torch.float32)
    xt = torch.as_tensor(data.X_test / math.pi - 0.5, dtype=torch.float32)
    if binary:
        y = torch.as_tensor((data.y_train > 0).astype("float32"))
        yt = (data.y_test > 0).astype("int64")
    else:
        y = torch.as_tensor(data.y_train.astype("int64"))
        yt = data.y_test.astype("int64")
    torch.manual_seed(seed)
    model = torch.nn.Linear(x.shape[1], 1 if binary else data.n_classes)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                         batch_size=batch, shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    spent = math.inf
    if math.isfinite(epsilon):
        engine = PrivacyEngine(accountant="rdp")
        model, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=opt, data_loader=loader, target_epsilon=epsilon,
            target_delta=DELTA, epochs=epochs, max_grad_norm=clip, poisson_sampling=True,
            noise_generator=torch.Generator().manual_seed(seed + 10_000))
    loss_fn = (torch.nn.BCEWithLogitsLoss() if binary else torch.nn.CrossEntropyLoss())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                if len(xb):
                    out = model(xb)
                    loss_fn(out.reshape(-1) if binary else out, yb).backward()
                opt.step()
        if math.isfinite(epsilon):
            spent = engine.get_epsilon(DELTA)
    with torch.no_grad():
        out = model(xt)
        pred = ((out.reshape(-1) > 0).long() if binary else out.argmax(1)).numpy()
    return {"test_accuracy": float((pred == yt).mean()),
            "balanced_accuracy": float(balanced_accuracy_score(yt, pred)),
            "epsilon_spent": spent, "seconds": time.perf_counter() - t0}


def run(tasks, epsilons, seeds) -> list[dict]:
    rows = []
    for task in tasks:
        for eps in epsilons:
            for method, fn in (("product", run_product), ("linear", run_linear)):
                runs = [dict(fn(task, eps, s), seed=s) for s in seeds]
                accs = [r["test_accuracy"] for r in runs]
                row = {"task": task, "epsilon": eps, "method": method,
                       "median_accuracy": statistics.median(accs),
                       "q1": _quantile(accs, 0.25), "q3": _quantile(accs, 0.75),
                       "min_accuracy": min(accs), "seeds": len(runs),
                       "median_balanced": statistics.median(r["balanced_accuracy"]
                                                            for r in runs),
                       "seconds": sum(r["seconds"] for r in runs), "runs": runs}
                if method == "product":
                    row["majority_rate"] = runs[0]["majority_rate"]
                    row["settings"] = runs[0]["settings"]
                    row["at_majority"] = sum(abs(r["test_accuracy"] - r["majority_rate"]) <= 0.01
                                             for r in runs)
                rows.append(row)
                print(f"  {task} eps={eps} {method}: median {row['median_accuracy']:.3f} "
                      f"[{row['q1']:.3f}, {row['q3']:.3f}] ({row['seconds']:.0f} s)", flush=True)
    return rows


def _quantile(values, q):
    import numpy as np

    return float(np.quantile(np.asarray(values, dtype=float), q))


def plot(rows, json_path):
    from _common import pyplot, save_figure

    plt = pyplot()
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.6 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        finite = sorted({r["epsilon"] for r in rows if r["task"] == task
                         and math.isfinite(r["epsilon"])})
        inf_x = (finite[-1] * 2.5) if finite else 1.0
        for method, style in (("product", "o-"), ("linear", "s--")):
            sel = sorted((r for r in rows if r["task"] == task and r["method"] == method),
                         key=lambda r: r["epsilon"])
            xs = [r["epsilon"] if math.isfinite(r["epsilon"]) else inf_x for r in sel]
            ax.plot(xs, [r["median_accuracy"] for r in sel], style,
                    label="product default" if method == "product" else "linear DP-SGD (Opacus)")
            ax.fill_between(xs, [r["q1"] for r in sel], [r["q3"] for r in sel], alpha=0.2)
        majority = [r.get("majority_rate") for r in rows if r["task"] == task
                    and r.get("majority_rate") is not None]
        if majority:
            ax.axhline(majority[0], ls="-.", c="grey", label="majority class")
        ax.set(xscale="log", title=task, xlabel="ε (rightmost: ∞)", ylabel="test accuracy")
        ax.legend(fontsize=7)
    return save_figure(fig, json_path)
