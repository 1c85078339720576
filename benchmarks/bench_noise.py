r"""Artificial noise variance per step: ``adaptive`` vs ``none``, ``isotropic``, ``depolarizing``.

For one Poisson-sized batch of B digits examples (0 vs 1, fixed preprocessing, 4 qubits,
2 StronglyEntanglingLayers, linear loss), the script
records the parameter-shift shot statistics once and evaluates every credit mode on the *same*
statistics (``pennylane_qshiftdp.shot_noise_credit``), with σ calibrated by Opacus's RDP
accountant for (ε, δ = 1e-5, q = B/N, T = 10 epochs) and β = 1e-3 (Bonferroni over T and the
K = 24 coordinates). Device noise: none (default.qubit) or PennyLane ``DepolarizingChannel(q)``
with q = 3p/4 for p ∈ {0.01, 0.05} (default.mixed). Weights: ``init`` (the training
initialisation, N(0, 0.01²): a near-identity circuit whose ⟨Z₀⟩ is close to ±1, so the shot
variance 1 − ⟨Z₀⟩² is small) and ``random`` (N(0, π²): effectively uniform angles, ⟨Z₀⟩ near 0,
shot variance near its maximum 1): the credit at any point of training lies between what such
circuits give, and ``random`` is the favourable case for the seed's claim.

Definitions reported (mean over the K coordinates, all variances of the *summed* gradient):

* ``reduction_vs_none`` = 1 − added_adaptive / added_none = credit / σ²Δ² (what the optimizer
  saves; includes the lower confidence bound and the leave-the-differing-example-out term);
* ``reduction_vs_depolarizing`` = 1 − added_adaptive / added_depolarizing (vs non-adaptive);
* ``estimate_ratio`` = V̂ / σ²Δ²: the batch's point-estimated shot-noise variance (no confidence
  bound, nothing left out): an upper bound on what any credit could save;
* ``std_reduction`` = 1 − sqrt(added_adaptive / added_none) (noise *standard deviation*);
* ``mismatched_ratio`` = min(1, B · V̂ / σ²Δ²): shot variance of the *averaged* gradient if it
  were not divided by B (one example's shot noise) against the averaged gradient's DP noise
  σ²Δ²/B²; a normalisation the paper's σ_B might mean. It is not a valid privacy credit.
* ``epsilon_for_10pct``: the ε at which the adaptive credit would reach 10 % of σ²Δ² (same q, T).

    python benchmarks/bench_noise.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import itertools
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
torch = calibrate_noise_multiplier = compute_epsilon = epochs_to_steps = load_dataset = None
make_private = LinearLoss = QuantumClassifier = artificial_variance = None
confidence_multiplier = shot_noise_credit = ShotRecorder = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global torch, calibrate_noise_multiplier, compute_epsilon, epochs_to_steps, load_dataset
    global make_private, LinearLoss, QuantumClassifier, artificial_variance
    global confidence_multiplier, shot_noise_credit, ShotRecorder
    import torch

    from pennylane_qshiftdp.accountants.calibration import (
        calibrate_noise_multiplier,
        compute_epsilon,
        epochs_to_steps,
    )
    from pennylane_qshiftdp.app.data import load_dataset
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.credit.shot_noise import (
        artificial_variance,
        confidence_multiplier,
        shot_noise_credit,
    )
    from pennylane_qshiftdp.gradients.shot_statistics import ShotRecorder
    from pennylane_qshiftdp.losses import LinearLoss
    from pennylane_qshiftdp.privacy_engine import make_private


MODES = ("none", "depolarizing", "adaptive", "isotropic")
DELTA, BETA, EPOCHS = 1e-5, 1e-3, 10


WEIGHT_SCALES = {"init": 0.01, "random": math.pi}


def record_batch(data, *, p_dev, shots, batch, seed, qubits=4, layers=2, init_scale=0.01):
    """Shot statistics, loss weights, Jacobian, Δ and floor for one batch."""
    q_pl = 3.0 * p_dev / 4.0
    device = "default.mixed" if p_dev > 0 else "default.qubit"
    rec = ShotRecorder()
    model = QuantumClassifier(qubits, layers, device=device, shots=shots, seed=seed,
                              recorder=rec, init_scale=init_scale, init_seed=seed,
                              depolarizing=q_pl)
    floor = model.variance_floor()
    x = torch.as_tensor(data.X_train, dtype=torch.float64)
    y = torch.as_tensor(data.y_train, dtype=torch.float64)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, opt, _ = make_private(model, sgd, loader, target_epsilon=1.0, target_delta=DELTA,
                                      epochs=EPOCHS, loss=LinearLoss(), credit="adaptive",
                                      beta=BETA, variance_floor=floor, recorder=rec, seed=seed)
    idx = np.random.default_rng(seed).choice(len(x), size=min(batch, len(x)), replace=False)
    opt.zero_grad()
    t0 = time.perf_counter()
    LinearLoss()(pmodel(x[idx]), y[idx]).mean().backward()  # Opacus computes grad samples
    seconds = time.perf_counter() - t0
    layer = model.qlayer
    sample = layer.evaluations.last_grad_sample  # what the grad sampler used
    weights = sample.backprops[:, 0].numpy()  # ∂ℓ_j/∂f_j
    jacobian = sample.evaluation.tape_to_weight_jacobian()
    return {"stats": rec.statistics, "weights": weights, "jacobian": jacobian,
            "delta": opt.sensitivity.delta, "floor": floor, "device": device,
            "q_pennylane": q_pl, "seconds": seconds}


_SIGMA_CACHE: dict = {}


def evaluate(rb, *, epsilon, batch, n):
    q = batch / n
    steps = epochs_to_steps(epochs=EPOCHS, sample_rate=q)
    k = rb["jacobian"].shape[1]
    key = (epsilon, q, steps)
    if key not in _SIGMA_CACHE:
        _SIGMA_CACHE[key] = calibrate_noise_multiplier(target_epsilon=epsilon,
                                                       target_delta=DELTA, sample_rate=q,
                                                       steps=steps)
    sigma = _SIGMA_CACHE[key]
    z = confidence_multiplier(beta=BETA, steps=steps, coordinates=k)
    target = sigma**2 * rb["delta"] ** 2
    out = {"sigma": sigma, "z": z, "steps": steps, "target_variance": target}
    credits = {}
    for mode in MODES:
        cr = shot_noise_credit(rb["stats"], jacobian=rb["jacobian"], loss_weights=rb["weights"],
                               mode=mode, variance_floor=rb["floor"], z=z)
        added = artificial_variance(cr.credit, noise_multiplier=sigma, sensitivity=rb["delta"])
        out[f"added_{mode}"] = float(added.mean())
        credits[mode] = cr
    est = float(credits["adaptive"].estimate.mean())
    a, nn = out["added_adaptive"], out["added_none"]
    out["reduction_vs_none"] = 1.0 - a / nn
    out["reduction_isotropic_vs_none"] = 1.0 - out["added_isotropic"] / nn
    out["reduction_depolarizing_vs_none"] = 1.0 - out["added_depolarizing"] / nn
    out["reduction_vs_depolarizing"] = 1.0 - a / out["added_depolarizing"]
    out["estimate_ratio"] = est / target
    out["std_reduction"] = 1.0 - math.sqrt(a / nn)
    out["mismatched_ratio"] = min(1.0, batch * est / target)
    credit = float(credits["adaptive"].credit.mean())
    # σ at which the credit equals 10 % of σ²Δ², and the ε it would buy.
    if credit > 0:
        sigma10 = math.sqrt(credit / (0.1 * rb["delta"] ** 2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out["epsilon_for_10pct"] = compute_epsilon(noise_multiplier=sigma10, sample_rate=q,
                                                       steps=steps, delta=DELTA)
        out["sigma_for_10pct"] = sigma10
    else:
        out["epsilon_for_10pct"], out["sigma_for_10pct"] = math.inf, 0.0
    return out


def run(*, device_ps, shots_list, batches, epsilons, seeds, weights=("init",)):
    data = load_dataset("digits", n_features=4, seed=0, test_size=0.25, preprocessing="fixed")
    n = data.n_train
    raw = []
    for wname, p_dev, shots, batch, seed in itertools.product(weights, device_ps, shots_list,
                                                              batches, seeds):
        rb = record_batch(data, p_dev=p_dev, shots=shots, batch=batch, seed=seed,
                          init_scale=WEIGHT_SCALES[wname])
        for eps in epsilons:
            row = {"weights": wname, "device_p": p_dev, "device": rb["device"],
                   "q_pennylane": rb["q_pennylane"], "shots": shots,
                   "batch": batch, "seed": seed, "epsilon": eps,
                   "delta_sensitivity": rb["delta"], "variance_floor": rb["floor"],
                   "record_seconds": rb["seconds"]}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row.update(evaluate(rb, epsilon=eps, batch=batch, n=n))
            raw.append(row)
    # Aggregate over seeds.
    keys = ["added_none", "added_depolarizing", "added_adaptive", "added_isotropic",
            "reduction_vs_none", "reduction_vs_depolarizing", "reduction_isotropic_vs_none",
            "reduction_depolarizing_vs_none", "estimate_ratio", "std_reduction",
            "mismatched_ratio", "epsilon_for_10pct"]
    summary = []

    def key(r):
        return (r["weights"], r["device_p"], r["shots"], r["batch"], r["epsilon"])

    groups = sorted({key(r) for r in raw})
    for g in groups:
        rows = [r for r in raw if key(r) == g]
        s = {"weights": g[0], "device_p": g[1], "shots": g[2], "batch": g[3], "epsilon": g[4],
             "target_variance": rows[0]["target_variance"], "sigma": rows[0]["sigma"],
             "seeds": len(rows)}
        for k in keys:
            m, sd = mean_std([r[k] for r in rows])
            s[k], s[k + "_std"] = m, sd
        summary.append(s)
    return {"dataset_size": n, "rows": raw, "summary": summary}


def figure(result, json_path):
    plt = pyplot()
    summ = result["summary"]
    eps0 = max(r["epsilon"] for r in summ)  # largest ε: smallest σ, largest credit share
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    combos = sorted({(r.get("weights", "init"), r["device_p"], r["shots"]) for r in summ})
    for wname, p_dev, shots in combos:
        rows = sorted([r for r in summ if r.get("weights", "init") == wname
                       and r["device_p"] == p_dev and r["shots"] == shots
                       and r["epsilon"] == eps0], key=lambda r: r["batch"])
        lab = f"{wname} weights, p={p_dev}, Ns={shots}"
        ax[0].plot([r["batch"] for r in rows],
                   [max(100 * r["reduction_vs_none"], 1e-6) for r in rows], "o-", label=lab)
        ax[1].plot([r["batch"] for r in rows],
                   [max(100 * r["mismatched_ratio"], 1e-6) for r in rows], "s--", label=lab)
    ax[0].axhspan(10, 16, color="grey", alpha=0.2, label="claimed 10–16 %")
    ax[0].set(xscale="log", yscale="log", xlabel="batch size B",
              ylabel="artificial variance saved (%)",
              title=f"adaptive vs none (credit / σ²Δ²), ε={eps0}")
    ax[1].axhspan(10, 16, color="grey", alpha=0.2)
    ax[1].set(xscale="log", yscale="log", xlabel="batch size B", ylabel="%",
              title="mismatched normalisation B·V̂/σ²Δ² (not a valid credit)")
    ax[0].legend(fontsize=7)
    return save_figure(fig, json_path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="reduced configuration (a minute)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=None, help="output directory")
    args = p.parse_args(argv)
    _import_heavy()
    args.quick = args.quick or args.tiny
    if args.tiny:
        cfg = {"device_ps": [0.0], "shots_list": [100], "batches": [8], "epsilons": [1.0],
               "seeds": [0], "weights": ["init", "random"]}
    elif args.quick:
        cfg = {"device_ps": [0.0, 0.05], "shots_list": [100, 1000], "batches": [16, 64, 256],
               "epsilons": [1.0, 8.0], "seeds": [0], "weights": ["init", "random"]}
    else:
        cfg = {"device_ps": [0.0, 0.01, 0.05], "shots_list": [100, 1000, 10000],
               "batches": [16, 64, 256], "epsilons": [0.5, 1.0, 8.0], "seeds": [0, 1, 2],
               "weights": ["init", "random"]}
    t0 = time.perf_counter()
    res = run(**cfg)
    result = {"quick": args.quick,
              "config": {**cfg, "dataset": "digits (0 vs 1, fixed preprocessing)",
                         "qubits": 4, "layers": 2, "loss": "linear", "delta": DELTA,
                         "beta": BETA, "epochs_for_T": EPOCHS, "accountant": "rdp",
                         "weight_scales": {k: WEIGHT_SCALES[k] for k in cfg.get(
                             "weights", ["init"])},
                         "device_noise": "DepolarizingChannel(q=3p/4) on every qubit, "
                                         "default.mixed; p=0: default.qubit"},
              **res, "seconds": time.perf_counter() - t0}
    print(table(res["summary"], ["weights", "device_p", "shots", "batch", "epsilon", "sigma",
                                 "reduction_vs_none", "reduction_vs_depolarizing",
                                 "estimate_ratio", "mismatched_ratio", "epsilon_for_10pct"]))
    path = write_result(result_name("bench_noise", args.quick), result, args.out)
    figure(result, path)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
