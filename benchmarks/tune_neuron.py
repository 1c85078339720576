r"""The validation search behind the two-class neuron defaults of ``qshiftdp train``.

An analytic twin of the job's private training of
:class:`~pennylane_qshiftdp.app.models.QuantumNeuronClassifier` with two classes: the same
features (the shipped ranges, every column), the same model written in closed form
(:math:`f = \cos\theta\cos a - \sin\theta\cos\phi\sin a`,
:math:`a = w\cdot(x - c) + b`, exact :math:`\langle Z\rangle`, no shots), the same logistic
loss on :math:`s f`, Poisson sampling at :math:`q = B/N` (the job's loader samples at
:math:`1/\lceil N/B\rceil`, a slightly smaller rate), flat per-example clipping at C, and
Gaussian noise of the σ the product calibrates (``calibrate_noise_multiplier``, PLD,
δ = 1e-5) for ``epochs_to_steps(E, q)`` steps, divided by the expected batch B (Opacus's
mean). Each configuration is scored by the mean validation accuracy over validation splits:
25 % of the training split of seed ``s`` held out (stratified, ``random_state=s``), seeds
100–115, and ``--draws`` noise draws each. The test split is never read.

The twin is a search tool, not the product: the chosen setting is then measured with
``qshiftdp train`` itself (``bench_utility.py --defaults``, RESULTS.md §15).

    python benchmarks/tune_neuron.py                 # the searches quoted in app.defaults
    python benchmarks/tune_neuron.py --tiny          # one configuration, two splits
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import table, write_result  # noqa: E402

#: The job's two-class private defaults before this search (centre π/2, logits 10 f).
BASE = {"center": math.pi / 2, "scale": 10.0, "lr": 0.5, "clip": 0.3, "epochs": 20, "batch": 64}


def searches() -> list[dict]:
    """The configurations of the search (app.defaults quotes them), in order."""
    out = [dict(BASE, center=c) for c in (0.0, 0.8, 1.0, 1.2, math.pi / 2)]
    for lr, clip, ep, b, sc in itertools.product((0.25, 0.5, 1.0), (0.1, 0.3, 1.0), (20, 40),
                                                 (64, 128), (10.0, 20.0)):
        out.append(dict(BASE, center=1.0, lr=lr, clip=clip, epochs=ep, batch=b, scale=sc))
    for c, sc, (lr, clip) in itertools.product((0.8, 1.0, 1.2), (20.0, 30.0),
                                               ((0.25, 0.3), (0.5, 0.1), (0.5, 0.3))):
        out.append(dict(BASE, center=c, scale=sc, lr=lr, clip=clip))
    for b, ep, lr in itertools.product((64, 128), (20, 40), (0.15, 0.25, 0.4)):
        out.append(dict(BASE, center=1.0, scale=20.0, lr=lr, batch=b, epochs=ep))
    return out


@functools.lru_cache(None)
def _sigma(epsilon: float, q: float, steps: int) -> float:
    from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier

    return calibrate_noise_multiplier(target_epsilon=epsilon, target_delta=1e-5,
                                      sample_rate=q, steps=steps)


@functools.lru_cache(None)
def _split(seed: int):
    import torch
    from sklearn.model_selection import train_test_split

    from pennylane_qshiftdp.app.data import load_dataset

    ds = load_dataset("breast_cancer", n_features=None, seed=seed)
    x_tr, x_va, y_tr, y_va = train_test_split(ds.X_train, ds.y_train, test_size=0.25,
                                              stratify=ds.y_train, random_state=seed)
    return tuple(torch.as_tensor(a, dtype=torch.float64) for a in (x_tr, y_tr, x_va, y_va))


def twin_output(params, x, center: float):
    """The neuron's closed form f(x) for params (w, b, φ, θ); x of shape (n, d) or (d,)."""
    import torch

    w, b, phi, theta = params
    a = (x - center) @ w + b
    return torch.cos(theta) * torch.cos(a) - torch.sin(theta) * torch.cos(phi) * torch.sin(a)


def run(cfg: dict, seed: int, draw: int = 0, epsilon: float = 1.0) -> float:
    """Validation accuracy of one private run of the twin (split ``seed``, noise ``draw``)."""
    import torch
    from torch.func import grad, vmap

    from pennylane_qshiftdp.accountants.calibration import epochs_to_steps

    x, y, x_va, y_va = _split(seed)
    n, d = x.shape
    gen = torch.Generator().manual_seed(1000 + seed + 7919 * draw)
    params = [torch.zeros(d, dtype=torch.float64), torch.zeros((), dtype=torch.float64),
              0.01 * torch.randn((), generator=gen, dtype=torch.float64),
              math.pi / 2 + 0.01 * torch.randn((), generator=gen, dtype=torch.float64)]
    q = cfg["batch"] / n
    steps = epochs_to_steps(epochs=cfg["epochs"], sample_rate=q)
    sigma = _sigma(epsilon, q, steps)
    clip, lr = cfg["clip"], cfg["lr"]

    def loss(p, xi, yi):
        return torch.nn.functional.softplus(-yi * cfg["scale"] * twin_output(p, xi, cfg["center"]))

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))
    for _ in range(steps):
        mask = torch.rand(n, generator=gen) < q
        total = torch.zeros(d + 3, dtype=torch.float64)
        if mask.any():
            g = torch.cat([t.reshape(int(mask.sum()), -1)
                           for t in per_example(params, x[mask], y[mask])], dim=1)
            g = g * (clip / (g.norm(dim=1, keepdim=True) + 1e-6)).clamp(max=1.0)
            total = g.sum(0)
        total = total + sigma * clip * torch.randn(d + 3, generator=gen, dtype=torch.float64)
        step = lr * total / cfg["batch"]
        params = [params[0] - step[:d], params[1] - step[d], params[2] - step[d + 1],
                  params[3] - step[d + 2]]
    pred = torch.where(twin_output(params, x_va, cfg["center"]) >= 0, 1.0, -1.0)
    return float((pred == y_va).double().mean())


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiny", action="store_true", help="one configuration, two splits")
    p.add_argument("--draws", type=int, default=3, help="noise draws per split")
    p.add_argument("--out", type=Path, default=None, help="output directory")
    args = p.parse_args(argv)
    configs, seeds, draws = searches(), list(range(100, 116)), args.draws
    if args.tiny:
        configs, seeds, draws = [BASE], [100, 101], 1
    t0 = time.perf_counter()
    rows = []
    for cfg in configs:
        accs = [run(cfg, s, r) for s in seeds for r in range(draws)]
        rows.append({**cfg, "mean_validation": statistics.fmean(accs),
                     "sem": statistics.stdev(accs) / math.sqrt(len(accs))
                     if len(accs) > 1 else 0.0, "runs": len(accs)})
    rows.sort(key=lambda r: -r["mean_validation"])
    print(table(rows[:20], ["center", "scale", "lr", "clip", "epochs", "batch",
                            "mean_validation", "sem", "runs"]))
    result = {"seeds": seeds, "draws": draws, "rows": rows,
              "seconds": time.perf_counter() - t0, "protocol": __doc__}
    write_result("tune_neuron_tiny" if args.tiny else "tune_neuron", result, args.out)
    return result


if __name__ == "__main__":
    main()
