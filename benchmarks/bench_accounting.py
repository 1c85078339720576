r"""Accounting benchmark: calibration time, ε against steps (RDP vs PRV), cost of adaptivity.

Three measurements, all through Opacus's accountants
(``pennylane_qshiftdp.accountants.calibration``):

1. ``calibration``: wall-clock time of :func:`calibrate_noise_multiplier` (bisection plus the
   conservative re-check) for RDP and PRV over (ε, q, T), with the σ found.
2. ``epsilon_vs_steps``: ε(T) at fixed σ and q for RDP and PRV (PRV is tighter).
3. ``adaptivity_cost``: the adaptive credit modes report (ε, δ + β). Two readings:
   (a) β on top of δ: the total failure probability δ + β and the confidence multiplier
   z = Φ⁻¹(1 − β/(T K)) that makes the variance bound conservative; (b) a fixed total budget
   δ_tot: accounting at δ = δ_tot − β costs ε(δ_tot − β) − ε(δ_tot) at the same σ.

    python benchmarks/bench_accounting.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pyplot, result_name, save_figure, table, write_result  # noqa: E402

# Heavy libraries (torch, PennyLane, Opacus, SciPy; pennylane_qshiftdp and qprldp_core import
# them) are bound by _import_heavy(), which main() calls after parsing the arguments, so that
# `--help` and argument errors answer without loading them. Module-level names stay None
# until then.
calibrate_noise_multiplier = compute_epsilon = confidence_multiplier = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global calibrate_noise_multiplier, compute_epsilon, confidence_multiplier
    from pennylane_qshiftdp.accountants.calibration import (
        calibrate_noise_multiplier,
        compute_epsilon,
    )
    from pennylane_qshiftdp.credit.shot_noise import confidence_multiplier


ACCOUNTANTS = ("rdp", "prv")


def calibration_rows(epsilons, rates, steps_list, delta):
    rows = []
    for acc in ACCOUNTANTS:
        for eps in epsilons:
            for q in rates:
                for steps in steps_list:
                    t0 = time.perf_counter()
                    sigma = calibrate_noise_multiplier(target_epsilon=eps, target_delta=delta,
                                                       sample_rate=q, steps=steps,
                                                       accountant=acc)
                    rows.append({"accountant": acc, "epsilon": eps, "sample_rate": q,
                                 "steps": steps, "sigma": sigma,
                                 "seconds": time.perf_counter() - t0})
    return rows


def epsilon_rows(sigma, q, steps_list, delta):
    rows = []
    for steps in steps_list:
        row = {"steps": steps, "sigma": sigma, "sample_rate": q}
        for acc in ACCOUNTANTS:
            t0 = time.perf_counter()
            row[f"epsilon_{acc}"] = compute_epsilon(noise_multiplier=sigma, sample_rate=q,
                                                    steps=steps, delta=delta, accountant=acc)
            row[f"seconds_{acc}"] = time.perf_counter() - t0
        rows.append(row)
    return rows


def adaptivity_rows(betas, *, sigma, q, steps, coordinates, delta_total):
    eps_ref = compute_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps,
                              delta=delta_total)
    rows = []
    for beta in betas:
        row = {"beta": beta, "z_gaussian": confidence_multiplier(
                   beta=beta, steps=steps, coordinates=coordinates),
               "z_cantelli": confidence_multiplier(beta=beta, steps=steps,
                                                   coordinates=coordinates, method="cantelli"),
               "delta_plus_beta": delta_total + beta, "epsilon_at_delta": eps_ref}
        if beta < delta_total:
            eps = compute_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps,
                                  delta=delta_total - beta)
            row["epsilon_fixed_total"] = eps
            row["epsilon_increase_fixed_total"] = eps - eps_ref
        else:
            row["epsilon_fixed_total"] = None
            row["epsilon_increase_fixed_total"] = None
        rows.append(row)
    return rows


def figure(result, json_path):
    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    ev = result["epsilon_vs_steps"]
    for acc in ACCOUNTANTS:
        ax[0].plot([r["steps"] for r in ev], [r[f"epsilon_{acc}"] for r in ev], "o-",
                   label=acc.upper())
    ax[0].set(xscale="log", xlabel="steps T", ylabel="ε (nats)",
              title=f"ε vs steps (σ={ev[0]['sigma']}, q={ev[0]['sample_rate']})")
    ax[0].legend()
    cal = result["calibration"]
    for acc in ACCOUNTANTS:
        rows = [r for r in cal if r["accountant"] == acc]
        ax[1].plot(range(len(rows)), [r["seconds"] for r in rows], "o", label=acc.upper())
    ax[1].set(yscale="log", xlabel="configuration index", ylabel="seconds",
              title="calibration time")
    ax[1].legend()
    ad = result["adaptivity_cost"]
    ax[2].plot([r["beta"] for r in ad], [r["z_gaussian"] for r in ad], "o-", label="z (Gaussian)")
    ax2 = ax[2].twinx()
    pts = [(r["beta"], r["epsilon_increase_fixed_total"]) for r in ad
           if r["epsilon_increase_fixed_total"] is not None]
    if pts:
        ax2.plot(*zip(*pts, strict=True), "s--", c="C1", label="Δε at fixed δ+β")
    ax2.set_ylabel("ε increase at fixed δ+β")
    ax[2].set(xscale="log", xlabel="β", ylabel="z multiplier", title="cost of adaptivity")
    ax[2].legend(loc="upper right", fontsize=7)
    return save_figure(fig, json_path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="reduced configuration (seconds)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=None, help="output directory")
    args = p.parse_args(argv)
    _import_heavy()
    args.quick = args.quick or args.tiny
    delta = 1e-5
    if args.tiny:
        cal = ([1.0], [0.1], [50])
        steps_list = [10, 100]
        betas = [1e-6, 1e-3]
    elif args.quick:
        cal = ([1.0, 8.0], [0.1], [100, 1000])
        steps_list = [10, 30, 100, 300, 1000]
        betas = [1e-9, 1e-7, 1e-6, 5e-6, 1e-4, 1e-3]
    else:
        cal = ([0.5, 1.0, 2.0, 4.0, 8.0], [0.01, 0.1], [100, 1000, 10000])
        steps_list = [10, 30, 100, 300, 1000, 3000, 10000]
        betas = [1e-12, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 2e-6, 5e-6, 9e-6, 1e-5, 1e-4, 1e-3,
                 1e-2]
    # Adaptivity at the utility benchmark's digits setting: N=270, B=32 -> q≈0.119, 10 epochs.
    q_ad, steps_ad, k_ad = 32 / 270, 85, 24
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        calibration = calibration_rows(*cal, delta)
        eps_rows = epsilon_rows(1.0, 0.1, steps_list, delta)
        sigma_ad = calibrate_noise_multiplier(target_epsilon=1.0, target_delta=delta,
                                              sample_rate=q_ad, steps=steps_ad)
        ad_rows = adaptivity_rows(betas, sigma=sigma_ad, q=q_ad, steps=steps_ad,
                                  coordinates=k_ad, delta_total=delta)
    result = {
        "quick": args.quick,
        "config": {"delta": delta, "epsilon_vs_steps": {"sigma": 1.0, "sample_rate": 0.1},
                   "adaptivity": {"sample_rate": q_ad, "steps": steps_ad, "coordinates": k_ad,
                                  "sigma": sigma_ad, "target_epsilon": 1.0,
                                  "delta_total": delta}},
        "calibration": calibration,
        "epsilon_vs_steps": eps_rows,
        "adaptivity_cost": ad_rows,
    }
    print(table(calibration, ["accountant", "epsilon", "sample_rate", "steps", "sigma",
                              "seconds"]))
    print(table(eps_rows, ["steps", "epsilon_rdp", "epsilon_prv", "seconds_rdp",
                           "seconds_prv"]))
    print(table(ad_rows, ["beta", "z_gaussian", "z_cantelli", "delta_plus_beta",
                          "epsilon_fixed_total", "epsilon_increase_fixed_total"]))
    path = write_result(result_name("bench_accounting", args.quick), result, args.out)
    figure(result, path)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
