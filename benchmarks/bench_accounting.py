r"""Accounting benchmark: RDP, PRV and PLD on the shipped tasks; calibration time; adaptivity.

All through the accountants of ``pennylane_qshiftdp.accountants`` (Opacus's RDP and PRV, and
dp-accounting's PLD registered with Opacus as ``"pld"``):

1. ``shipped_tasks``: for every task ``qshiftdp train`` ships (digits 0 vs 1, breast cancer,
   iris, wine, digits-10, each at its ``"auto"`` batch size and epochs, q = 1/⌈N/B⌉), the σ
   calibrated for ε ∈ {0.5, 1, 2, 4, 8} (δ = 1e-5) under each accountant with its calibration
   time, and the ε each accountant gives at the RDP-calibrated σ.
2. ``per_step``: the accounting cost of one training step (the budget check before the step,
   the step, and the proven ε of the step record) over a whole default run, and the budget
   check's share.
3. ``pld_discretisation``: the PLD's ε at the product's discretisation interval (about
   1e-3 × ε) and at a ten times finer one, both pessimistic, on the shipped tasks.
4. ``calibration``: wall-clock time of :func:`calibrate_noise_multiplier` (bisection plus the
   conservative re-check) over (ε, q, T), with the σ found.
5. ``epsilon_vs_steps``: ε(T) at fixed σ and q for every accountant.
6. ``adaptivity_cost``: the adaptive credit modes report (ε, δ + β). Two readings:
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
epochs_to_steps = PrivacyLedger = pld_epsilon = pld_interval = clear_caches = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global calibrate_noise_multiplier, compute_epsilon, confidence_multiplier
    global epochs_to_steps, PrivacyLedger, pld_epsilon, pld_interval, clear_caches
    from pennylane_qshiftdp.accountants.calibration import (
        calibrate_noise_multiplier,
        compute_epsilon,
        epochs_to_steps,
    )
    from pennylane_qshiftdp.accountants.composition import clear_caches
    from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
    from pennylane_qshiftdp.accountants.pld import pld_epsilon, pld_interval
    from pennylane_qshiftdp.credit.shot_noise import confidence_multiplier


ACCOUNTANTS = ("rdp", "prv", "pld")

#: The tasks ``qshiftdp train`` ships, at their "auto" settings (app/defaults.py): training
#: examples N (75 % split, seed 0), batch size B, epochs.
SHIPPED_TASKS = (
    ("digits 0 vs 1", 270, 64, 10),
    ("breast cancer", 426, 64, 20),
    ("iris", 112, 64, 10),
    ("wine", 133, 64, 10),
    ("digits-10", 1347, 128, 8),
)


def _task_schedule(n, batch, epochs):
    """q = 1/⌈N/B⌉ (the loader's convention) and T = ⌈epochs/q⌉."""
    q = 1.0 / -(-n // batch)
    return q, epochs_to_steps(epochs=epochs, sample_rate=q)


def shipped_task_rows(tasks, epsilons, delta):
    rows = []
    for name, n, batch, epochs in tasks:
        q, steps = _task_schedule(n, batch, epochs)
        for eps in epsilons:
            row = {"task": name, "N": n, "B": batch, "epochs": epochs, "sample_rate": q,
                   "steps": steps, "epsilon": eps}
            for acc in ACCOUNTANTS:
                t0 = time.perf_counter()
                row[f"sigma_{acc}"] = calibrate_noise_multiplier(
                    target_epsilon=eps, target_delta=delta, sample_rate=q, steps=steps,
                    accountant=acc)
                row[f"seconds_{acc}"] = time.perf_counter() - t0
            for acc in ACCOUNTANTS:  # ε of each accountant at the RDP-calibrated σ
                row[f"epsilon_{acc}_at_rdp_sigma"] = compute_epsilon(
                    noise_multiplier=row["sigma_rdp"], sample_rate=q, steps=steps,
                    delta=delta, accountant=acc)
            row["sigma_saving_pld"] = 1.0 - row["sigma_pld"] / row["sigma_rdp"]
            row["sigma_saving_prv"] = 1.0 - row["sigma_prv"] / row["sigma_rdp"]
            rows.append(row)
    return rows


def per_step_rows(tasks, epsilon, delta):
    """Accounting seconds per training step of a whole run (as the optimizer drives the
    ledger: the budget check ``would_exceed`` and ``charge``, then the proven ε of the step
    record), total and the budget check alone (``ms_check_*``: O(1) once the ledger knows
    K*, with RDP and PLD; issue 43)."""
    rows = []
    for name, n, batch, epochs in tasks:
        q, steps = _task_schedule(n, batch, epochs)
        row = {"task": name, "steps": steps}
        for acc in ACCOUNTANTS:
            sigma = calibrate_noise_multiplier(target_epsilon=epsilon, target_delta=delta,
                                               sample_rate=q, steps=steps, accountant=acc)
            clear_caches()  # this accountant's run pays what a lone run pays
            ledger = PrivacyLedger(target_epsilon=epsilon, target_delta=delta,
                                   noise_multiplier=sigma, sample_rate=q, sensitivity=1.0,
                                   accountant=acc)
            check = 0.0
            t0 = time.perf_counter()
            for _ in range(steps):
                t1 = time.perf_counter()
                ledger.would_exceed(1, noise_multiplier=sigma)
                ledger.charge(noise_multiplier=sigma, proven_noise_multiplier=sigma)
                check += time.perf_counter() - t1
                _ = ledger.epsilon
            row[f"ms_per_step_{acc}"] = 1e3 * (time.perf_counter() - t0) / steps
            row[f"ms_check_{acc}"] = 1e3 * check / steps
            row[f"final_epsilon_{acc}"] = ledger.epsilon
        rows.append(row)
    return rows


def discretisation_rows(tasks, epsilon, delta):
    """The PLD's ε at the product's interval (relative to ε) and at a ten times finer one."""
    rows = []
    for name, n, batch, epochs in tasks:
        q, steps = _task_schedule(n, batch, epochs)
        sigma = calibrate_noise_multiplier(target_epsilon=epsilon, target_delta=delta,
                                           sample_rate=q, steps=steps, accountant="rdp")
        history = [(sigma, q, steps)]
        interval = pld_interval(history, delta=delta)
        row = {"task": name, "sigma": sigma, "steps": steps, "interval": interval}
        for label, value in (("product", interval), ("finer", interval / 10)):
            t0 = time.perf_counter()
            row[f"epsilon_{label}"] = pld_epsilon(history, delta=delta,
                                                  value_discretization_interval=value)
            row[f"seconds_{label}"] = time.perf_counter() - t0
        row["relative_excess"] = row["epsilon_product"] / row["epsilon_finer"] - 1.0
        rows.append(row)
    return rows


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
        tasks, task_eps = SHIPPED_TASKS[:1], [1.0]
        cal = ([1.0], [0.1], [50])
        steps_list = [10, 100]
        betas = [1e-6, 1e-3]
    elif args.quick:
        tasks, task_eps = SHIPPED_TASKS, [1.0]
        cal = ([1.0, 8.0], [0.1], [100, 1000])
        steps_list = [10, 30, 100, 300, 1000]
        betas = [1e-9, 1e-7, 1e-6, 5e-6, 1e-4, 1e-3]
    else:
        tasks, task_eps = SHIPPED_TASKS, [0.5, 1.0, 2.0, 4.0, 8.0]
        cal = ([0.5, 1.0, 2.0, 4.0, 8.0], [0.01, 0.1], [100, 1000, 10000])
        steps_list = [10, 30, 100, 300, 1000, 3000, 10000]
        betas = [1e-12, 1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 2e-6, 5e-6, 9e-6, 1e-5, 1e-4, 1e-3,
                 1e-2]
    # Adaptivity at the utility benchmark's digits setting: N=270, B=32 -> q≈0.119, 10 epochs.
    q_ad, steps_ad, k_ad = 32 / 270, 85, 24
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shipped = shipped_task_rows(tasks, task_eps, delta)
        per_step = per_step_rows(tasks, 1.0, delta)
        discretisation = discretisation_rows(tasks, 1.0, delta)
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
        "shipped_tasks": shipped,
        "per_step": per_step,
        "pld_discretisation": discretisation,
        "calibration": calibration,
        "epsilon_vs_steps": eps_rows,
        "adaptivity_cost": ad_rows,
    }
    print(table(shipped, ["task", "sample_rate", "steps", "epsilon", "sigma_rdp", "sigma_prv",
                          "sigma_pld", "sigma_saving_pld", "seconds_rdp", "seconds_prv",
                          "seconds_pld", "epsilon_prv_at_rdp_sigma",
                          "epsilon_pld_at_rdp_sigma"]))
    print(table(per_step, ["task", "steps", "ms_per_step_rdp", "ms_per_step_prv",
                           "ms_per_step_pld", "ms_check_rdp", "ms_check_prv", "ms_check_pld"]))
    print(table(discretisation, ["task", "interval", "epsilon_product", "epsilon_finer",
                                 "relative_excess", "seconds_product", "seconds_finer"]))
    print(table(calibration, ["accountant", "epsilon", "sample_rate", "steps", "sigma",
                              "seconds"]))
    print(table(eps_rows, ["steps", "epsilon_rdp", "epsilon_prv", "epsilon_pld",
                           "seconds_rdp", "seconds_prv", "seconds_pld"]))
    print(table(ad_rows, ["beta", "z_gaussian", "z_cantelli", "delta_plus_beta",
                          "epsilon_fixed_total", "epsilon_increase_fixed_total"]))
    path = write_result(result_name("bench_accounting", args.quick), result, args.out)
    figure(result, path)
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
