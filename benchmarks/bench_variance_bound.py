r"""Failure rate and tightness of the adaptive credit's lower bound on the shot-noise variance.

The adaptive credit needs a lower confidence bound on V = Σ_t u_t v_t (u_t = w_j² a_t² / Ns,
v_t the single-shot variance of circuit t) that fails with probability at most α. Simulated
setting (the audit's): every example has four two-outcome (±1) circuits with coefficients ±1/2
and loss weight 1 (u_t = 1/(4 Ns)), for Ns ∈ {2, 10, 100} shots and 4, 30, 130 examples, with
three sets of outcome probabilities (``half``: p = 1/2; ``edge``: p near 0 and 1; ``mixed``).

Two measurements, each per cell, with α = β = 1e-3 (one step, one coordinate):

1. ``failure``: the fraction of trials (≥ 20 000 per cell in full mode) in which each bound
   exceeds the true V, with a one-sided 95 % Clopper–Pearson upper limit. Bounds:
   ``new_free`` (:func:`pennylane_qshiftdp.credit.variance_bounds.variance_lower_bound`, any bounded
   outcome), ``new_two`` (with the exact Clopper–Pearson part, two-outcome circuits),
   ``old_normal`` (V̄ − z·SE with the plug-in Var(s²) = max(m̂₄ − s⁴, 0)/Ns and
   z = Φ⁻¹(1 − α), the previous adaptive bound) and ``old_cantelli`` (same SE,
   z = √((1 − α)/α)).
2. ``credit``: at Ns ∈ {100, 1000}, the mean share of the true V kept by each lower bound
   (``lower/V``) and by the credit itself (``credit/V``: the bound minus the subtracted largest
   single-example term; the new credit subtracts the data-independent maximum
   Σ_t u_t (hi − lo)²/4, the old one max_j V̄_j + z·SE_j), at α = 1e-3 and at α = 1e-7
   (β = 1e-3 over T·K = 10⁴ steps × coordinates).

    python benchmarks/bench_variance_bound.py [--quick] [--trials N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import result_name, table, write_result  # noqa: E402

# Heavy libraries (NumPy, SciPy and pennylane_qshiftdp, which imports torch and PennyLane) are
# bound by _import_heavy(), called by main() after the arguments are parsed, so that `--help`
# answers without loading them.
np = beta_dist = norm = variance_lower_bound = two_point_moments = None

BETA = 1e-3
SHOTS = (2, 10, 100)
EXAMPLES = (4, 30, 130)
CREDIT_SHOTS = (100, 1000)
CREDIT_ALPHAS = (1e-3, 1e-7)
P_CONFIGS = {  # probability of +1 of an example's four circuits (coefficients ±1/2)
    "half": (0.5, 0.5, 0.5, 0.5),
    "edge": (0.01, 0.99, 0.05, 0.95),
    "mixed": (0.5, 0.02, 0.98, 0.3),
}
METHODS = ("new_free", "new_two", "old_normal", "old_cantelli")
CIRCUITS_PER_EXAMPLE = 4
CHUNK_ENTRIES = 2_000_000  # trials × circuits per chunk (memory)


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global np, beta_dist, norm, variance_lower_bound, two_point_moments
    import numpy as np
    from scipy.stats import beta as beta_dist
    from scipy.stats import norm

    from pennylane_qshiftdp.credit.variance_bounds import variance_lower_bound
    from pennylane_qshiftdp.gradients.shot_statistics import two_point_moments


def _bounds(rng, shots, examples, probs, trials, alpha):
    """Lower bounds and subtracted largest terms of every method for ``trials`` batches."""
    p = np.tile(np.asarray(probs, dtype=float), examples)
    k = rng.binomial(shots, p, size=(trials, p.size))
    means = -1.0 + 2.0 * k / shots
    s2, m4 = two_point_moments(means, shots, -1.0, 1.0)
    u = 0.25 / shots
    true_v = float(np.sum(u * 4.0 * p * (1.0 - p)))
    out = {
        "new_free": variance_lower_bound(s2, weights=u, shots=shots, low=-1.0, high=1.0,
                                         alpha=alpha),
        "new_two": variance_lower_bound(s2, weights=u, shots=shots, low=-1.0, high=1.0,
                                        alpha=alpha, means=means),
    }
    new_largest = CIRCUITS_PER_EXAMPLE * u * 1.0  # data-independent: Σ_t u (hi − lo)²/4
    largest = {"new_free": new_largest, "new_two": new_largest}
    var_var = np.maximum(m4 - s2**2, 0.0) / shots  # the old plug-in Var(s²)
    v_j = (u * s2).reshape(trials, examples, CIRCUITS_PER_EXAMPLE).sum(axis=2)
    se2_j = (u**2 * var_var).reshape(trials, examples, CIRCUITS_PER_EXAMPLE).sum(axis=2)
    for name, z in (("old_normal", float(norm.isf(alpha))),
                    ("old_cantelli", float(np.sqrt((1.0 - alpha) / alpha)))):
        out[name] = v_j.sum(axis=1) - z * np.sqrt(se2_j.sum(axis=1))
        largest[name] = (v_j + z * np.sqrt(se2_j)).max(axis=1)
    return out, largest, true_v


def _chunks(trials, circuits):
    size = max(1, CHUNK_ENTRIES // circuits)
    done = 0
    while done < trials:
        yield min(size, trials - done)
        done += size


def _upper95(failures, trials):
    return 1.0 if failures == trials else float(beta_dist.ppf(0.95, failures + 1,
                                                               trials - failures))


def failure_rows(trials, seed):
    rows = []
    for shots in SHOTS:
        for examples in EXAMPLES:
            for name, probs in P_CONFIGS.items():
                rng = np.random.default_rng([seed, shots, examples, len(rows)])
                failures = dict.fromkeys(METHODS, 0)
                t0 = time.perf_counter()
                for n in _chunks(trials, examples * CIRCUITS_PER_EXAMPLE):
                    bounds, _, true_v = _bounds(rng, shots, examples, probs, n, BETA)
                    for m in METHODS:
                        failures[m] += int(np.sum(bounds[m] > true_v))
                row = {"shots": shots, "examples": examples, "p_config": name,
                       "trials": trials, "alpha": BETA}
                for m in METHODS:
                    row[f"failures_{m}"] = failures[m]
                    row[f"rate_{m}"] = failures[m] / trials
                    row[f"rate_{m}_upper95"] = _upper95(failures[m], trials)
                row["seconds"] = time.perf_counter() - t0
                rows.append(row)
    return rows


def credit_rows(trials, seed):
    rows = []
    for alpha in CREDIT_ALPHAS:
        for shots in CREDIT_SHOTS:
            for examples in EXAMPLES:
                for name in ("half", "mixed"):
                    rng = np.random.default_rng([seed, shots, examples, len(rows), 7])
                    sums = {m: [0.0, 0.0] for m in METHODS}
                    for n in _chunks(trials, examples * CIRCUITS_PER_EXAMPLE):
                        bounds, largest, true_v = _bounds(rng, shots, examples,
                                                          P_CONFIGS[name], n, alpha)
                        for m in METHODS:
                            lower = np.maximum(bounds[m], 0.0)
                            sums[m][0] += float(np.sum(lower))
                            sums[m][1] += float(np.sum(np.maximum(lower - largest[m], 0.0)))
                    row = {"alpha": alpha, "shots": shots, "examples": examples,
                           "p_config": name, "trials": trials}
                    for m in METHODS:
                        row[f"lower_over_V_{m}"] = sums[m][0] / trials / true_v
                        row[f"credit_over_V_{m}"] = sums[m][1] / trials / true_v
                    rows.append(row)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="2 000 trials per cell (seconds)")
    p.add_argument("--trials", type=int, default=None,
                   help="trials per failure-rate cell (default 20 000; 2 000 with --quick)")
    p.add_argument("--credit-trials", type=int, default=None,
                   help="trials per credit cell (default 2 000; 200 with --quick)")
    p.add_argument("--seed", type=int, default=2026, help="seed of the simulation")
    p.add_argument("--out", type=Path, default=None, help="output directory")
    args = p.parse_args(argv)
    trials = args.trials or (2_000 if args.quick else 20_000)
    credit_trials = args.credit_trials or (200 if args.quick else 2_000)
    if trials < 1 or credit_trials < 1:
        p.error("--trials and --credit-trials must be positive")
    _import_heavy()

    t0 = time.perf_counter()
    failure = failure_rows(trials, args.seed)
    credit = credit_rows(credit_trials, args.seed)
    worst = []
    for shots in SHOTS:
        for examples in EXAMPLES:
            cell = [r for r in failure if r["shots"] == shots and r["examples"] == examples]
            row = {"shots": shots, "examples": examples, "trials": trials}
            for m in METHODS:
                w = max(cell, key=lambda r, m=m: r[f"rate_{m}"])
                row[m] = w[f"rate_{m}"]
                row[f"{m}_at"] = w["p_config"]
            worst.append(row)
    result = {
        "config": {"beta": BETA, "alpha": BETA, "shots": SHOTS, "examples": EXAMPLES,
                   "p_configs": P_CONFIGS, "circuits_per_example": CIRCUITS_PER_EXAMPLE,
                   "coefficients": "±1/2", "loss_weight": 1.0, "trials": trials,
                   "credit_trials": credit_trials, "credit_alphas": CREDIT_ALPHAS,
                   "credit_shots": CREDIT_SHOTS, "seed": args.seed, "quick": args.quick},
        "failure": failure,
        "failure_worst_over_p": worst,
        "credit": credit,
        "seconds": time.perf_counter() - t0,
    }
    print(f"## Failure rate of the lower bound on V at β = α = {BETA:g} "
          f"({trials} trials per cell; worst over the p configurations)\n")
    print(table(worst, ["shots", "examples", "new_free", "new_two", "old_normal",
                        "old_normal_at", "old_cantelli"]))
    print("\n## All cells (rate and one-sided 95 % upper limit)\n")
    print(table(failure, ["shots", "examples", "p_config", "rate_new_free",
                          "rate_new_free_upper95", "rate_new_two", "rate_new_two_upper95",
                          "rate_old_normal", "rate_old_cantelli"]))
    print(f"\n## Share of the true V kept ({credit_trials} trials per cell)\n")
    print(table(credit, ["alpha", "shots", "examples", "p_config", "lower_over_V_old_normal",
                         "lower_over_V_new_free", "lower_over_V_new_two",
                         "credit_over_V_old_normal", "credit_over_V_new_free",
                         "credit_over_V_new_two"]))
    path = write_result(result_name("bench_variance_bound", args.quick), result, args.out)
    print(f"\nwrote {path} ({result['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
