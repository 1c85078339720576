"""Run every benchmark script and regenerate ``benchmarks/RESULTS.md`` from the JSON files.

    python benchmarks/run_all.py --quick          # every script in quick mode (≤ 15 min, 2 cores)
    python benchmarks/run_all.py                  # full mode (hours: see RESULTS.md)
    OMP_NUM_THREADS=1 python benchmarks/run_all.py --jobs 2   # full, utility sweep sharded
    python benchmarks/run_all.py --only bench_noise bench_accounting
    python benchmarks/run_all.py --report-only    # only regenerate RESULTS.md

Each script runs in its own process (``--quick`` passed through); their wall-clock times are
written to ``results/run_all[_quick].json``. RESULTS.md is produced *only* from the JSON files in
the results directory: for every benchmark the full-mode file is used when it exists, otherwise
the quick one, and the mode is stated. Nothing in it is typed by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import RESULTS_DIR, table, write_result  # noqa: E402

#: script -> extra arguments (full mode); the quick run appends ``--quick``.
SCRIPTS = {
    "bench_transform": [["--sweep"], []],  # issue #5 sweep, and the issue #2 default
    "bench_training": [[]],
    "bench_noise": [[]],
    "bench_accounting": [[]],
    "bench_qprldp": [[]],
    "bench_utility": [[], ["--defaults"]],
    "bench_reliability": [[]],
    "bench_shots": [[]],
    "bench_variance_bound": [[]],
    "bench_audit": [[]],
    "bench_hybrid": [[]],
}
CLAIM_LOW, CLAIM_HIGH = 0.10, 0.16


#: Full-mode shards of bench_utility (data set, shots), balanced for two workers.
UTILITY_SHARDS = [("digits", 100), ("breast_cancer", 1000), ("digits", 1000),
                  ("breast_cancer", 100)]


def run_utility_sharded(*, out: Path, jobs: int) -> dict:
    """Full bench_utility as one process per (data set, shots), ``jobs`` at a time, merged."""
    t0 = time.perf_counter()
    pending = [[sys.executable, str(HERE / "bench_utility.py"), "--datasets", ds, "--shots",
                str(ns), "--name", f"bench_utility_shard_{ds}_{ns}", "--out", str(out)]
               for ds, ns in UTILITY_SHARDS]
    running, codes = [], []
    while pending or running:
        while pending and len(running) < jobs:
            cmd = pending.pop(0)
            print("$", " ".join(cmd), flush=True)
            running.append(subprocess.Popen(cmd))
        time.sleep(1.0)
        for proc in [p for p in running if p.poll() is not None]:
            codes.append(proc.returncode)
            running.remove(proc)
    rc = max(codes, default=0)
    if rc == 0:
        shards = [str(out / f"bench_utility_shard_{ds}_{ns}.json") for ds, ns in UTILITY_SHARDS]
        rc = subprocess.run([sys.executable, str(HERE / "bench_utility.py"), "--merge", *shards,
                             "--out", str(out)], check=False).returncode
    return {"script": "bench_utility", "args": f"{len(UTILITY_SHARDS)} shards, --jobs {jobs}, "
            "--merge", "returncode": rc, "seconds": time.perf_counter() - t0}


def run_scripts(names, *, quick: bool, out: Path, extra=(), jobs: int = 1) -> list[dict]:
    rows = []
    for name in names:
        variants = SCRIPTS[name]
        if name == "bench_utility" and not quick and jobs > 1:
            rows.append(run_utility_sharded(out=out, jobs=jobs))
            variants = [a for a in variants if a]  # --defaults still runs, in one process
        for args in variants:
            if quick and args == [] and name == "bench_transform":
                continue  # quick: the sweep only (the issue #2 default has its own full file)
            cmd = [sys.executable, str(HERE / f"{name}.py"), *args, "--out", str(out), *extra]
            if quick:
                cmd.append("--quick")
            print("$", " ".join(cmd), flush=True)
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, check=False)
            rows.append({"script": name, "args": " ".join(args + (["--quick"] if quick else [])),
                         "returncode": proc.returncode, "seconds": time.perf_counter() - t0})
            print(f"  {name}: {rows[-1]['seconds']:.0f} s (rc={proc.returncode})", flush=True)
    return rows


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------


def _load(out: Path, stem: str):
    """(data, mode) from the full file if present, else the quick file; (None, None)."""
    for suffix, mode in (("", "full"), ("_quick", "quick")):
        path = out / f"{stem}{suffix}.json"
        if path.exists():
            return json.loads(path.read_text()), mode
    return None, None


def _pct(x):
    return "n/a" if x is None else f"{100 * x:.3g} %"


def _fmt_eps(e):
    return "∞" if (isinstance(e, float) and math.isinf(e)) or e == "Infinity" else f"{e:g}"


def _img(lines, stem, mode):
    suffix = "" if mode == "full" else "_quick"
    lines.append(f"![{stem}](results/{stem}{suffix}.png)\n")


def _env_line(data):
    env = data.get("environment", {})
    pk = env.get("packages", {})
    return (f"Environment: Python {env.get('python')}, {env.get('cpu_count')} CPUs, "
            f"PennyLane {pk.get('pennylane')}, lightning {pk.get('pennylane_lightning')}, "
            f"torch {pk.get('torch')}, Opacus {pk.get('opacus')}.")


def section_transform(out, lines):
    lines.append("## 1. Gradient transform overhead (`bench_transform.py`)\n")
    cols = ["device", "qubits", "shots", "batch", "tapes_per_gradient", "circuits_executed",
            "median_ours_s", "median_pennylane_s", "median_ratio"]
    for stem, what in (("bench_transform_sweep", "issue #5 sweep"),
                       ("bench_transform", "issue #2 default configuration")):
        data, mode = _load(out, stem)
        if data is None:
            lines.append(f"*{what}: no result file yet.*\n")
            continue
        lines.append(f"**{what}** ({mode} mode; ratio = ours / `qml.gradients.param_shift`, "
                     f"same device, shots and batch, alternated; median of "
                     f"{data['rows'][0]['repeats']} repeats).\n")
        lines.append(table(data["rows"], cols) + "\n")
        _img(lines, stem, mode)


def section_training(out, lines):
    lines.append("## 2. Training epoch cost (`bench_training.py`)\n")
    data, mode = _load(out, "bench_training")
    if data is None:
        lines.append("*No result file yet.*\n")
        return
    c = data["config"]
    qubits = c["qubits"] if isinstance(c["qubits"], int) else \
        ", ".join(str(q) for q in c["qubits"])
    lines.append(f"{mode} mode. One private epoch (Q-ShiftDP, ε = {c['epsilon']}; exact-law "
                 f"shot sampling unless the table says otherwise) against one non-private "
                 f"epoch with PennyLane's `qml.gradients.param_shift` (device sampling), "
                 f"alternated in one process: {c['dataset']}, {qubits} qubits, "
                 f"{c['layers']} layers, expected batch {c['expected_batch_size']}, same Poisson "
                 f"batches; per-step seconds are epoch seconds over steps, ratio = private / "
                 f"non-private (median over epochs).\n")
    cols = ["qubits", "device", "shots", "credit", "shot_sampling", "n_train",
            "private_step_s", "nonprivate_step_s", "median_ratio", "median_private_s",
            "median_nonprivate_s", "private_samples_per_s", "nonprivate_samples_per_s"]
    lines.append(table(data["rows"], [k for k in cols if k in data["rows"][0]]) + "\n")
    _img(lines, "bench_training", mode)


def _clipped_fractions(settings):
    """Fraction of per-example gradients clipped in each run of the selected DP-SGD clip."""
    return [r["clipped_fraction"] for e in settings
            for r in e["methods"].get("dpsgd_clip", {"runs": []})["runs"]
            if r.get("clipped_fraction") is not None]


def section_utility(out, lines):
    lines.append("## 3. Privacy-utility (`bench_utility.py`)\n")
    data, mode = _load(out, "bench_utility")
    if data is None:
        lines.append("*No result file yet.*\n")
        return None
    c = data["config"]
    lines.append(
        f"{mode} mode: data sets {', '.join(c['datasets'])}; ε ∈ "
        f"{{{', '.join(_fmt_eps(e) for e in c['epsilons'])}}}; Ns ∈ {c['shots_list']}; seeds "
        f"{c['seeds']}; {c['epochs']} epochs; test fraction {c['test_size']}; "
        f"{c['qubits']} qubits, {c['layers']} layers, "
        f"expected batch {c['expected_batch_size']}, δ = {c['delta']}, RDP accountant. "
        f"Device: {c['device']}. Search budget per method: {len(c['lr_grid'])} values "
        f"(Q-ShiftDP and non-private: lr ∈ {c['lr_grid']}; DP-SGD: clip C = c·Δ with c ∈ "
        f"{c['clip_grid']} at lr {c['lr_base_dpsgd']}·Δ/C). Selection: {c['selection']}. "
        f"Credit variants reuse the lr selected for `qshiftdp_none`; adaptive β = "
        f"{c['beta_adaptive']} (guarantee (ε, δ + β)). {c['preprocessing_note']}.\n")
    # One row per (data set, Ns, ε), one column per method: mean ± std over the seeds, with
    # the selected hyperparameter of the tuned methods.
    rank = {"nonprivate": 0, "qshiftdp_none": 1, "qshiftdp_adaptive": 2, "dpsgd_clip": 9}
    methods = sorted(dict.fromkeys(r["method"] for r in data["summary"]),
                     key=lambda m: (rank.get(m, 5), m))
    pivot = {}
    for r in data["summary"]:
        row = pivot.setdefault((r["dataset"], r["shots"], r["epsilon"]), {
            "dataset": r["dataset"], "Ns": r["shots"], "ε": _fmt_eps(r["epsilon"])})
        tuned = r["method"] in ("nonprivate", "qshiftdp_none", "dpsgd_clip")
        row[r["method"]] = (f"{r['mean_accuracy']:.3f} ± {r['std_accuracy']:.3f}"
                            + (f" ({r['hyperparameter']})" if tuned else ""))
    lines.append(f"Test accuracy, mean ± standard deviation over {len(c['seeds'])} seeds "
                 f"(selected hyperparameter in brackets):\n")
    lines.append(table(list(pivot.values()), ["dataset", "Ns", "ε", *methods]) + "\n")
    fr = _clipped_fractions(data["settings"])
    if fr:
        lines.append(f"DP-SGD (selected clip): fraction of per-example gradients clipped "
                     f"{min(fr):.2f}–{max(fr):.2f} across runs.\n")
    _img(lines, "bench_utility", mode)
    return data


def _weight_scales(c):
    scales = c.get("weight_scales")
    if scales is None:  # results written before the weights axis existed
        return f"0.01 ({c.get('weights', 'initialisation')})"
    return ", ".join(f"{v:.3g} ({k})" for k, v in scales.items())


def section_noise(out, lines):
    lines.append("## 4. Artificial noise per step (`bench_noise.py`)\n")
    data, mode = _load(out, "bench_noise")
    if data is None:
        lines.append("*No result file yet.*\n")
        return None
    c = data["config"]
    lines.append(
        f"{mode} mode: {c['dataset']}, {c['qubits']} qubits, {c['layers']} layers, weights "
        f"drawn N(0, s²) with s = {_weight_scales(c)} (`init`: the training initialisation, "
        f"a near-identity circuit; `random`: effectively uniform angles, shot variance near its "
        f"maximum), δ = {c['delta']}, β = {c['beta']}, T = {c['epochs_for_T']} epochs "
        f"of q = B/N, RDP. Device noise: {c['device_noise']}. Every credit mode evaluated on "
        f"the same recorded statistics; seeds {c['seeds']}. Columns: `saved` = 1 − "
        f"added_adaptive/added_none = credit/σ²Δ² (summed gradient); `vs_dep` = 1 − "
        f"added_adaptive/added_depolarizing; `isotropic`, `depolarizing` = their savings vs "
        f"none; `V̂/σ²Δ²` = point-estimated shot variance (upper bound on any credit); "
        f"`mismatched` = min(1, B·V̂/σ²Δ²) (one example's shot noise against the averaged "
        f"gradient's DP noise; not a valid credit); `ε@10%` = ε at which the adaptive credit "
        f"would reach 10 % of σ²Δ².\n")
    rows = [{"weights": r.get("weights", "init"), "p": r["device_p"], "Ns": r["shots"],
             "B": r["batch"], "ε": r["epsilon"],
             "σ": r["sigma"], "saved": _pct(r["reduction_vs_none"]),
             "vs_dep": _pct(r["reduction_vs_depolarizing"]),
             "isotropic": _pct(r["reduction_isotropic_vs_none"]),
             "depolarizing": _pct(r["reduction_depolarizing_vs_none"]),
             "V̂/σ²Δ²": _pct(r["estimate_ratio"]), "mismatched": _pct(r["mismatched_ratio"]),
             "ε@10%": r["epsilon_for_10pct"]} for r in data["summary"]]
    lines.append(table(rows, list(rows[0])) + "\n")
    _img(lines, "bench_noise", mode)
    return data


def section_accounting(out, lines):
    lines.append("## 5. Accounting (`bench_accounting.py`)\n")
    data, mode = _load(out, "bench_accounting")
    if data is None:
        lines.append("*No result file yet.*\n")
        return
    if data.get("shipped_tasks"):
        lines.append(
            f"{mode} mode, δ = {data['config']['delta']}. **The shipped tasks** (`qshiftdp "
            f"train` at its \"auto\" batch size B and epochs; q = 1/⌈N/B⌉, T steps): the σ "
            f"each accountant calibrates for ε (RDP and PRV: Opacus; PLD: dp-accounting's "
            f"pessimistic privacy loss distributions, registered with Opacus as \"pld\"), the "
            f"calibration time in seconds, the noise PLD saves against RDP, and the ε each "
            f"gives at the RDP-calibrated σ:\n")
        lines.append(table(data["shipped_tasks"], [
            "task", "N", "B", "sample_rate", "steps", "epsilon", "sigma_rdp", "sigma_prv",
            "sigma_pld", "sigma_saving_pld", "seconds_rdp", "seconds_prv", "seconds_pld",
            "epsilon_prv_at_rdp_sigma", "epsilon_pld_at_rdp_sigma"]) + "\n")
        lines.append("Accounting cost per training step over a whole run at ε = 1 (the budget "
                     "check before the step, the step, the proven ε of the step record; "
                     "milliseconds):\n")
        lines.append(table(data["per_step"], ["task", "steps", "ms_per_step_rdp",
                                              "ms_per_step_prv", "ms_per_step_pld",
                                              "final_epsilon_rdp", "final_epsilon_prv",
                                              "final_epsilon_pld"]) + "\n")
        lines.append("PLD discretisation at the RDP σ for ε = 1 (both pessimistic: the "
                     "product's interval, 2^⌊log₂(10⁻³ ε_RDP)⌋ nats, reports a larger ε than a "
                     "ten times finer grid, by `relative_excess`):\n")
        lines.append(table(data["pld_discretisation"], [
            "task", "steps", "interval", "epsilon_product", "epsilon_finer", "relative_excess",
            "seconds_product", "seconds_finer"]) + "\n")
    lines.append(f"{mode} mode, δ = {data['config']['delta']}. Calibration (Opacus bisection + "
                 f"conservative re-check):\n")
    lines.append(table(data["calibration"], ["accountant", "epsilon", "sample_rate", "steps",
                                             "sigma", "seconds"]) + "\n")
    ev = data["config"]["epsilon_vs_steps"]
    lines.append(f"ε against steps at σ = {ev['sigma']}, q = {ev['sample_rate']}:\n")
    lines.append(table(data["epsilon_vs_steps"], [
        c for c in ("steps", "epsilon_rdp", "epsilon_prv", "epsilon_pld", "seconds_rdp",
                    "seconds_prv", "seconds_pld") if c in data["epsilon_vs_steps"][0]]) + "\n")
    ad = data["config"]["adaptivity"]
    lines.append(
        f"Cost of adaptivity against β (q = {ad['sample_rate']:.4g}, T = {ad['steps']}, "
        f"K = {ad['coordinates']}, σ = {ad['sigma']:.4g} for ε = {ad['target_epsilon']}): "
        f"the guarantee becomes (ε, δ + β); z is the Bonferroni confidence multiplier; "
        f"`epsilon_fixed_total` is ε when the total δ_tot = {ad['delta_total']} is split as "
        f"δ = δ_tot − β.\n")
    lines.append(table(data["adaptivity_cost"], ["beta", "z_gaussian", "z_cantelli",
                                                 "delta_plus_beta", "epsilon_at_delta",
                                                 "epsilon_fixed_total",
                                                 "epsilon_increase_fixed_total"]) + "\n")
    _img(lines, "bench_accounting", mode)


def section_qprldp(out, lines):
    lines.append("## 6. qprldp_core certificates and search (`bench_qprldp.py`)\n")
    data, mode = _load(out, "bench_qprldp")
    if data is None:
        lines.append("*No result file yet.*\n")
        return
    lines.append(f"{mode} mode, p = {data['config']['p']}, ε = {data['config']['epsilon']}.\n")
    lines.append(table(data["global_certificates"], ["d", "seconds"]) + "\n")
    loc = data["local_certificates"]
    keep = [r for r in loc if r["n"] in (1, 2, 5, 10, 20, 50)] or loc
    lines.append(table(keep, ["n", "qldp_seconds", "qprldp_seconds", "qldp_delta_lower",
                              "qldp_delta_upper", "qprldp_delta_lower",
                              "qprldp_delta_upper"]) + "\n")
    lines.append(table(data["worst_case_search"], ["d", "channel", "notion", "seconds", "found",
                                                   "closed_form", "gap"]) + "\n")
    _img(lines, "bench_qprldp", mode)


def _section_start(out, lines, title, stem):
    """Append the section title; return (data, mode), noting a missing result."""
    lines.append(f"## {title} (`{stem}.py`)\n")
    data, mode = _load(out, stem)
    if data is None:
        lines.append("No result yet.\n")
    return data, mode


def section_reliability(out, lines):
    data, mode = _section_start(out, lines, "8. Reliability of the main job",
                                "bench_reliability")
    if data is None:
        return
    rows = []
    for stem, what in (("bench_reliability", "the job's defaults"),
                       ("bench_reliability_certified", "certified clip (Δ)")):
        d, m = _load(out, stem)
        if d is None:
            continue
        cfg = d["config"]
        rows.append({"run set": what, "max_grad_norm": cfg.get("max_grad_norm"),
                     "device": cfg.get("device"), "shot sampling": cfg.get("shot_sampling",
                                                                            "device"),
                     "runs": d["runs"], "mean ± sd": f"{d['mean_accuracy']:.3f} ± "
                     f"{d['sd_accuracy']:.3f}", "worst": f"{d['worst_accuracy']:.3f}",
                     "runs ≥ 0.95": d["runs_at_least_0.95"],
                     "s per run": f"{d['mean_seconds']:.0f}", "mode": m})
    cfg = data["config"]
    lines.append(
        f"`qshiftdp train` (digits 0 vs 1, ε = {cfg.get('epsilon')}, {cfg.get('epochs')} epochs) "
        f"repeated with DP noise and Poisson sampling from the OS's CSPRNG (as a user gets it); "
        f"split, initialisation and shot seed at the default. Test accuracy per run set "
        f"(seconds per run were measured on a shared 2-core machine):\n")
    lines.append(table(rows, ["run set", "max_grad_norm", "device", "shot sampling", "runs",
                              "mean ± sd", "worst", "runs ≥ 0.95", "s per run", "mode"]) + "\n")
    lines.append("Hyperparameters (the default clip strategy among these) were chosen by looking "
                 "at test accuracy; that choice is not privacy-accounted. The `public` clip norm "
                 "itself uses no data.\n")


def section_shots(out, lines):
    data, mode = _section_start(out, lines, "11. Test accuracy against training shots",
                                "bench_shots")
    if data is None:
        return
    lines.append(f"The main job at ε = 1 with seeded, paired noise and sampling, seeds "
                 f"{data['seeds']} ({mode}); test accuracy analytic. `auto` picks the fewest "
                 f"shots whose noise adds at most 1 % of the DP noise variance.\n")
    lines.append(table(data["rows"], ["shots", "shots_per_circuit", "mean_accuracy",
                                      "sd_accuracy", "mean_training_shots",
                                      "share_of_ns1000_shots"]) + "\n")
    _img(lines, "bench_shots", mode)


def section_step(out, lines):
    data, mode = _section_start(out, lines, "12. One private training step",
                                "bench_transform_step")
    if data is None:
        return
    lines.append(f"`bench_transform.py --step` ({mode}): one step of `make_private`'s triple "
                 f"(fused evaluation: the forward and every shifted circuit of every example in "
                 f"one execution) with the device's own sampling and with exact-law sampling, "
                 f"against one non-private step with PennyLane's `diff_method=\"parameter-shift\"` "
                 f"on the same device, alternated in one process; seconds are medians, batch "
                 f"{data['rows'][0]['batch']}, Ns = {data['rows'][0]['shots']}, 2 layers.\n")
    loads = [v for r in data["rows"] for pair in r.get("load_average", []) for v in pair[:1]]
    if loads:
        lines.append(f"Measured on this project's shared 2-core machine while other work ran: "
                     f"the 1-minute load average (`uptime`) was {min(loads):.1f} to "
                     f"{max(loads):.1f} over the configurations (2.0 keeps both cores busy), "
                     f"so single steps vary by tens of percent; the ratios below are taken "
                     f"within each round, whose steps share the load. torch ran one intra-op "
                     f"thread (`--torch-threads 1`): with its default two, its threads wait "
                     f"for busy cores, and the Opacus + backprop alternative took 0.10–0.40 s "
                     f"per step at 4 qubits against 0.05 s with one (alternated, load average "
                     f"2.5).\n")
    lines.append(data["markdown"] + "\n")
    if any("opacus_backprop_s" in r for r in data["rows"]):
        lines.append(
            "With `--alternative` (default.qubit rows): `private_analytic_s` is the private "
            "step with `shots=None` (the adjoint simulator route, per-example gradients equal "
            "to parameter shift's to 1e-10); `opacus_backprop_s` is what a user would write "
            "without this library, Opacus's per-sample gradients by `torch.func` (vmap) over "
            "an analytic backprop QNode of the same circuit (made to work: a plain backprop "
            "TorchLayer gives all-zero per-sample gradients under functorch); "
            "`backprop_over_exact_law` and `backprop_over_analytic` are its time over the "
            "private step's (above 1: the private step is faster). The exact-law step is "
            "shot-faithful (2P + 1 circuits per example, P weights); the alternative and "
            "the analytic route are not. `numpy_limit_s` is the same exact-law work written "
            "by hand in numpy (`_numpy_limit_step_fn`: one batched state vector of the forward "
            "and shifted circuits of every example, batched 2×2 products and index swaps, the "
            "embedding fused into the first rotation, binomial draws, clipping, noise, update; "
            "no PennyLane, torch or Opacus; one thread, no light cone), and "
            "`exact_law_over_numpy` the private exact-law step's time over it (below 1 from 8 "
            "qubits: the private step drops the gates outside the readout's light cone and "
            "splits its rows between two threads). The numpy limit runs in its own process "
            "with its BLAS and OpenMP pools pinned to one thread (`threadpoolctl`), one step "
            "per round: run in the same process its BLAS threads kept spinning after each call "
            "and slowed the step timed next (the alternative's 0.03–0.08 s became 0.28–0.40 s "
            "at 4 qubits). `lightning_exact_law_s` is the same private exact-law step on "
            "lightning.qubit, alternated in the same rounds, and `lightning_over_exact_law` its "
            "time over default.qubit's: lightning.qubit's exact-law draws and analytic "
            "circuits are simulated by the same state-vector kernels (its own execution of "
            "every broadcast-expanded circuit was 20 times slower), its own sampling is kept "
            "for `--shot-sampling device` (the lightning rows' `private_device_s`).\n")
        spread = [{"qubits": r["qubits"], "rounds": r["repeats"],
                   "backprop / exact-law step": f"{r['backprop_over_exact_law']:.2f} "
                   f"[{r['backprop_over_exact_law_range'][0]:.2f}, "
                   f"{r['backprop_over_exact_law_range'][1]:.2f}]",
                   "backprop / analytic step": f"{r['backprop_over_analytic']:.2f} "
                   f"[{r['backprop_over_analytic_range'][0]:.2f}, "
                   f"{r['backprop_over_analytic_range'][1]:.2f}]",
                   "exact-law step / numpy": (
                       f"{r['exact_law_over_numpy']:.2f} "
                       f"[{r['exact_law_over_numpy_range'][0]:.2f}, "
                       f"{r['exact_law_over_numpy_range'][1]:.2f}]"
                       if "exact_law_over_numpy_range" in r else "–"),
                   "lightning.qubit / default.qubit exact-law step": (
                       f"{r['lightning_over_exact_law']:.2f} "
                       f"[{r['lightning_over_exact_law_range'][0]:.2f}, "
                       f"{r['lightning_over_exact_law_range'][1]:.2f}]"
                       if "lightning_over_exact_law_range" in r else "–")}
                  for r in data["rows"] if "backprop_over_analytic_range" in r]
        if spread:
            lines.append("Per-round ratios, median [min, max] over the alternated rounds:\n")
            lines.append(table(spread, ["qubits", "rounds", "backprop / exact-law step",
                                        "backprop / analytic step", "exact-law step / numpy",
                                        "lightning.qubit / default.qubit exact-law step"])
                         + "\n")
    cross = data.get("crossover_qubits", {})
    if cross:
        lines.append("lightning.qubit is faster than default.qubit from "
                     + ", ".join(f"{q} qubits ({k.removesuffix('_s').replace('_', ' ')})"
                                 for k, q in cross.items()
                                 if q is not None and k != "private_exact_law_s")
                     + "; with exact-law draws both devices' circuits run on the same "
                     "state-vector kernels, so their steps are equal up to the machine's noise "
                     "(the per-round ratios above). `device=\"auto\"` keeps default.qubit "
                     "with exact-law draws at every size the job accepts "
                     "(`app.job.LIGHTNING_QUBITS`) and switches at 10 qubits with the device's "
                     "own sampling (`app.job.LIGHTNING_QUBITS_DEVICE_SAMPLING`).\n")
    _img(lines, "bench_transform_step", mode)
    versus, _ = _load(out, "bench_transform_versus")
    if versus is not None:
        lines.append("Against the library before issue #12 (`--versus`, commit "
                     f"{versus['rows'][0]['old_version']}: its `PrivateModel.loss_backward` "
                     "step, device sampling), each version in its own interpreter, alternated; "
                     "the new step is the exact-law step on the same device (medians over all "
                     "steps of each version, 3 rounds of 5 steps below 10 qubits, one step "
                     "from 10 on; both versions share whatever else runs on the machine, so "
                     "single rounds vary by up to ±30 % but the ratio within a round much "
                     "less):\n")
        lines.append(versus["markdown"] + "\n")


def section_clip(out, lines):
    data, mode = _section_start(out, lines, "13. Clip-norm strategies at equal tuning budgets",
                                "bench_clip")
    if data is None:
        return
    cfg = data["config"]
    lines.append(
        f"The training job's defaults (10 epochs, expected batch 64, Ns = 1000 exact-law, "
        f"δ = 1e-5, RDP; {mode}), seeds {cfg['seeds']}, seeded noise. Each strategy gets the "
        f"same budget: 3 values of one hyperparameter (learning rate {cfg['lr_grid']} for "
        f"certified, public and adaptive; c {cfg['clip_fractions']} with C = c·Δ and lr "
        f"0.2·Δ/C for fixed), best mean test accuracy reported with its value (`tuned`); "
        f"`untuned` = the first value of the grid (the job's default, no search). Δ = "
        f"{data['delta']:.4g}. **The search looks at test accuracy and is not "
        f"privacy-accounted** (the same optimistic protocol for every strategy). "
        f"breast_cancer uses standardize_pca (data-dependent statistics, not protected).\n")
    lines.append(data["markdown"] + "\n")
    lines.append("Best untuned strategy against tuned fixed-C DP-SGD (accuracy points; "
                 "positive = untuned better):\n")
    lines.append(data["gap_markdown"] + "\n")
    _img(lines, "bench_clip", mode)


def section_multiclass(out, lines):
    data, mode = _section_start(out, lines, "14. Multi-class tasks", "bench_multiclass")
    if data is None:
        return
    lines.append(
        f"The quantum model for K ≥ 3 classes (`--model quantum`, the default before the "
        f"per-family defaults of §15, which train the neuron model on these tasks) ({mode}): "
        f"preprocessing 'fixed' (the "
        f"shipped, published feature ranges of iris and wine, rounded outward; the digits "
        f"pooling grid), K commuting Pauli-Z readouts, softmax cross-entropy, public clip, "
        f"Ns = 1000 exact-law, δ = 1e-5; seeded noise, seeds {data.get('seeds')} "
        f"(digits: {data.get('seeds_digits')}); ε = ∞ is the non-private baseline. Chance: "
        f"1/K and the majority class's share of the test split. {data.get('note') or ''}\n")
    lines.append(data["markdown"] + "\n")


def section_defaults(out, lines):
    """§15: the product's default configuration against linear DP-SGD (bench_utility --defaults)."""
    lines.append("## 15. Utility against linear DP-SGD: the defaults of `qshiftdp train` "
                 "(`bench_utility.py --defaults`)\n")
    data, mode = _load(out, "bench_utility_defaults")
    if data is None:
        lines.append("No result yet.\n")
        return None
    seeds = data.get("seeds") or []
    lines.append(
        f"Protocol ({mode}; {len(seeds)} seeds, seeded noise, δ = 1e-5; the product accounts "
        f"with PLD, the job's default, the linear anchor with Opacus's RDP): for each task, "
        f"ε and seed, the same stratified 75/25 split and the same features (the job's "
        f"data-independent angles of every raw column, from the declared ranges) feed two "
        f"runs. **product**: `qshiftdp train` with every setting at `auto` — digits 0 vs 1 is "
        f"the flagship quantum model (4 stroke features, 2 StronglyEntanglingLayers, public "
        f"clip, Ns = 1000 exact-law); every other task the neuron model "
        f"(`QuantumNeuronClassifier`: a linear layer on all features feeding one qubit per "
        f"output, RY then Rot, ⟨Z⟩; inputs centred at π/2, breast cancer at 1 rad; two "
        f"classes: logistic loss on 20·f (10·f without noise); more: softmax cross-entropy "
        f"on 5·f; "
        f"fixed clip 0.3 or 1.0; Ns = 1000 exact-law), one setting per task family chosen on "
        f"validation splits. **linear**: logistic/softmax regression through Opacus's own "
        f"`make_private_with_epsilon` (Poisson sampling, flat clip), settings chosen per data "
        f"set on validation splits (lr, C, epochs, batch: {data.get('anchor_settings')}); "
        f"ε = ∞ is plain SGD for both. Neither search is charged to ε. Cells: median test "
        f"accuracy [quartiles]; `at majority`: runs of the product within one point of the "
        f"majority-class rate.\n")
    rows = data["rows"]
    table_rows = []
    for task in dict.fromkeys(r["task"] for r in rows):
        for eps in sorted({r["epsilon"] for r in rows if r["task"] == task}):
            cell = {r["method"]: r for r in rows if r["task"] == task and r["epsilon"] == eps}
            prod, lin = cell.get("product"), cell.get("linear")
            if prod is None or lin is None:
                continue
            table_rows.append({
                "task": task, "ε": _fmt_eps(eps),
                "product": f"{prod['median_accuracy']:.3f} [{prod['q1']:.3f}, {prod['q3']:.3f}]",
                "linear DP-SGD": f"{lin['median_accuracy']:.3f} [{lin['q1']:.3f}, "
                                 f"{lin['q3']:.3f}]",
                "product − linear": f"{prod['median_accuracy'] - lin['median_accuracy']:+.3f}",
                "product balanced": f"{prod['median_balanced']:.3f}",
                "majority rate": f"{prod.get('majority_rate', float('nan')):.3f}",
                "at majority": f"{prod.get('at_majority', 0)}/{prod['seeds']}"})
    lines.append(table(table_rows, ["task", "ε", "product", "linear DP-SGD",
                                    "product − linear", "product balanced", "majority rate",
                                    "at majority"]) + "\n")
    _img(lines, "bench_utility_defaults", mode)
    return data


def section_hybrid(out, lines):
    """§16: user-style hybrid models through make_private (bench_hybrid)."""
    data, mode = _section_start(out, lines, "16. User-style hybrid models: clip modes against "
                                "linear DP-SGD", "bench_hybrid")
    if data is None:
        return
    import bench_hybrid

    lines.append(
        f"The README's hybrid written as a user writes it ({mode}): `Linear(d, 3)` → angles "
        f"π/2·(1 + tanh) → 3-qubit angle embedding and one `BasicEntanglerLayers` layer "
        f"(RY, N(0, 0.1²) start) → three ⟨Z_i⟩ → `Linear(3, K)`; `reupload` embeds the angles "
        f"again after the entangling layer (two layers); `quanv` (digits 0 vs 1) is a "
        f"quanvolution: every 2×2 patch of the 8×8 image through one 4-qubit circuit "
        f"(⟨Z_0⟩), then `Linear(16, 2)`. Features from the shipped published ranges (pixels: "
        f"[0, 16]) mapped to [−2, 2]; stratified 75/25 split; cross-entropy, SGD lr "
        f"{bench_hybrid.LR:g}, batch {bench_hybrid.BATCH}, {bench_hybrid.EPOCHS} epochs, "
        f"δ = 1e-5, PLD, seeded noise. `automatic`: `make_private` with no clip argument (the "
        f"default for hybrids: automatic clipping); `flat`: one clip C = 1 on the whole "
        f"gradient; `per_layer`: the certified Δ on the quantum weights and C = 1 on the "
        f"classical layers; `linear`: softmax regression on the same features through "
        f"`make_private` (C = 1); `nonprivate`: the hybrid with plain SGD (backprop). No "
        f"setting is tuned per method or data set. Cells: median test accuracy [quartiles].\n")
    lines.append(data["markdown"] + "\n")
    runs = data["runs"]
    acc = {(r["task"], r["model"], r["method"], r["epsilon"], r["seed"]): r["test_accuracy"]
           for r in runs}
    pairs = {}
    for (task, model, method, eps, seed), a in acc.items():
        if method == "automatic" and (task, model, "flat", eps, seed) in acc:
            b = acc[(task, model, "flat", eps, seed)]
            won = pairs.setdefault(task, [0, 0, 0])
            won[0 if a > b else 1 if a == b else 2] += 1
    if pairs:
        lines.append("Paired by seed and ε, automatic against flat clipping (runs where "
                     "automatic is better / equal / worse): "
                     + "; ".join(f"{t} {w[0]}/{w[1]}/{w[2]}" for t, w in pairs.items())
                     + ".\n")
    _img(lines, "bench_hybrid", mode)


def section_variance_bound(out, lines):
    data, mode = _section_start(out, lines, "9. Adaptive credit's variance bound",
                                "bench_variance_bound")
    if data is None:
        return
    cfg = data["config"]
    lines.append(
        f"Failure rate of the lower confidence bound on the batch's shot-noise variance at "
        f"α = β = {cfg['alpha']:g}, {cfg['trials']} batches per cell, worst over the p "
        f"configurations ({mode}). `new` is the distribution-free bound now used by "
        f"`adaptive`/`isotropic`; `old` the normal-approximation bound it replaced.\n")
    lines.append(table(data["failure_worst_over_p"],
                       ["shots", "examples", "trials", "new_free", "new_two", "old_normal",
                        "old_cantelli"]) + "\n")


def section_audit(out, lines):
    data, mode = _section_start(out, lines, "10. Privacy audit of one step", "bench_audit")
    if data is None:
        return
    rows = data.get("rows") or data.get("results") or []
    if rows:
        lines.append(f"Canary audit of one step ({mode}; one qubit, q = 1, target ε = 2); "
                     f"`claimed_epsilon` is the ledger's proven ε, `credited_epsilon` the "
                     f"credited Q-ShiftDP ε, `epsilon_lower_bound` the audited 95 % lower bound "
                     f"(docs/audit.md).\n")
        lines.append(table(rows, ["label", "shots", "trials", "claimed_epsilon",
                                  "credited_epsilon", "delta", "beta", "epsilon_lower_bound",
                                  "max_certifiable_epsilon", "verdict"]) + "\n")


def _range(vals):
    vals = [v for v in vals if v is not None and math.isfinite(v)]
    return (min(vals), max(vals)) if vals else (float("nan"), float("nan"))


def claims(noise, utility, lines):
    lines.append("## 7. Seed claims: verdicts\n")
    lines.append("Computed from the JSON files above by `run_all.py`; the thresholds are "
                 "stated with each verdict.\n")
    # Claim 1: 10–16 % artificial-noise reduction at Ns = 100, 1000.
    lines.append("### C1. “Adaptive credit cuts the artificial noise by 10–16 % at Ns = 100 "
                 "and 1000”\n")
    if noise is None:
        lines.append("No `bench_noise` result.\n")
    else:
        s = [r for r in noise["summary"] if r["shots"] in (100, 1000)]
        defs = [("credit / σ²Δ² of the summed gradient (adaptive vs none; the optimizer's "
                 "saving)", "reduction_vs_none"),
                ("adaptive vs non-adaptive (`depolarizing`) artificial variance",
                 "reduction_vs_depolarizing"),
                ("noise standard deviation instead of variance", "std_reduction"),
                ("point estimate V̂/σ²Δ² (no confidence bound, nobody left out)",
                 "estimate_ratio"),
                ("mismatched per-example/averaged normalisation min(1, B·V̂/σ²Δ²)",
                 "mismatched_ratio")]
        hits = []
        for text, key in defs:
            rows = [r for r in s if not (key == "reduction_vs_depolarizing"
                                         and r["device_p"] == 0)]
            lo, hi = _range([r[key] for r in rows])
            inside = [r for r in rows if CLAIM_LOW <= r[key] <= CLAIM_HIGH]
            where = ", ".join(f"(p={r['device_p']}, Ns={r['shots']}, B={r['batch']}, "
                              f"ε={r['epsilon']})" for r in inside[:6])
            spans = lo <= CLAIM_HIGH and hi >= CLAIM_LOW
            lines.append(f"- {text}: {_pct(lo)} – {_pct(hi)} over the grid"
                         + (f"; within 10–16 % at {where}" if inside else
                            "; the range spans 10–16 % (it moves continuously with B and ε)"
                            if spans else "") + ".")
            hits.append((key, spans, lo, hi, text))
        e10 = _range([r["epsilon_for_10pct"] for r in s])
        lines.append(f"- ε at which the adaptive credit would reach 10 % of σ²Δ²: "
                     f"{e10[0]:.3g} – {e10[1]:.3g}.\n")
        main_hit = hits[0]
        if main_hit[1] and main_hit[2] >= CLAIM_LOW * 0.5:
            verdict = "**reproduced**"
        elif any(h[1] for h in hits):
            names = [f"“{h[4]}”" for h in hits if h[1]]
            verdict = (f"**depends on** the definition: not reproduced as a saving of the "
                       f"privacy-relevant artificial variance (max {_pct(main_hit[3])}); values "
                       f"of 10–16 % are reached only under {', '.join(names)}, and there only "
                       f"for some (B, ε, Ns)")
        else:
            verdict = (f"**not reproduced**: at most {_pct(main_hit[3])} under the optimizer's "
                       f"definition")
        lines.append(f"Verdict: {verdict}.\n")
        # Claim 2: grows with depolarizing noise, vanishes with Ns.
        lines.append("### C2. “The gain grows with hardware depolarizing noise and vanishes "
                     "for very large Ns”\n")
        by = {}
        for r in noise["summary"]:
            by.setdefault((r.get("weights", "init"), r["batch"], r["epsilon"]), []).append(r)
        ns_ok, p_ok, n_cmp, p_cmp = 0, 0, 0, 0
        for rows in by.values():
            for p in {r["device_p"] for r in rows}:
                rr = sorted([r for r in rows if r["device_p"] == p], key=lambda r: r["shots"])
                for a, b in zip(rr, rr[1:], strict=False):
                    n_cmp += 1
                    ns_ok += b["reduction_vs_none"] < a["reduction_vs_none"]
            for ns in {r["shots"] for r in rows}:
                rr = sorted([r for r in rows if r["shots"] == ns], key=lambda r: r["device_p"])
                for a, b in zip(rr, rr[1:], strict=False):
                    p_cmp += 1
                    p_ok += b["reduction_vs_none"] > a["reduction_vs_none"]
        lines.append(f"- saving decreases when Ns grows in {ns_ok}/{n_cmp} comparisons "
                     f"(same weights, p, B, ε); increases with device p in {p_ok}/{p_cmp}.")
        mx = _range([r["reduction_vs_none"] for r in noise["summary"]])[1]
        direction = n_cmp and ns_ok == n_cmp and p_cmp and p_ok == p_cmp
        lines.append("Verdict: " + ("**depends on** what is claimed: the direction is "
                                    "reproduced (saving ∝ 1/Ns, larger with device noise) but "
                                    f"the magnitude is small (max {_pct(mx)})"
                                    if direction else "**not reproduced** (direction not "
                                    "consistent)") + ".\n")
    # Claim 3: +10 % accuracy adaptive vs non-adaptive; Claim 4: clipping-free beats DP-SGD.
    lines.append("### C3. “Adaptive gains about 10 % accuracy over the non-adaptive variant”\n")
    if utility is None:
        lines.append("No `bench_utility` result.\n")
        return
    diffs_dep, paired, comp = [], [], []
    for e in utility["settings"]:
        m = e["methods"]
        if "qshiftdp_adaptive" not in m:
            continue
        ad, no = m["qshiftdp_adaptive"], m["qshiftdp_none"]
        paired.append((e["dataset"], e["shots"], e["epsilon"],
                       ad["mean_accuracy"] - no["mean_accuracy"],
                       math.hypot(ad["std_accuracy"], no["std_accuracy"])))
        for k, v in m.items():
            if k.startswith("qshiftdp_depolarizing"):
                diffs_dep.append(ad["mean_accuracy"] - v["mean_accuracy"])
        if "dpsgd_clip" in m:
            comp.append((e["dataset"], e["shots"], e["epsilon"], no["mean_accuracy"],
                         m["dpsgd_clip"]["mean_accuracy"], m["dpsgd_clip"]["std_accuracy"],
                         no["std_accuracy"]))
    diffs_none = [d[3] for d in paired]
    lo, hi = _range(diffs_dep)
    lo2, hi2 = _range(diffs_none)
    base = [e["methods"]["nonprivate"]["mean_accuracy"] for e in utility["settings"]
            if "nonprivate" in e["methods"]]
    learns = bool(base) and min(base) >= 0.6
    if not learns:
        lines.append(f"*Caveat: the non-private baseline reaches only "
                     f"{', '.join(f'{b:.3f}' for b in base)} in this run, so accuracy "
                     f"comparisons between private methods are not informative here; the "
                     f"verdicts below are 'not reproduced' for that reason as well.*\n")
    ahead = [d for d in paired if d[3] > d[4]]
    behind = [d for d in paired if -d[3] > d[4]]
    big = [d for d in paired if d[3] >= 0.05 and d[3] > d[4]]
    lines.append(f"- adaptive − none (same device default.qubit, same learning rate, seeds and "
                 f"data; the non-adaptive credit on a noiseless device is 0): "
                 f"{lo2:+.3f} to {hi2:+.3f} over {len(paired)} settings (mean "
                 f"{sum(diffs_none) / max(len(diffs_none), 1):+.3f}); beyond the combined seed "
                 f"spread: adaptive ahead in {len(ahead)}, behind in {len(behind)}; "
                 f"≥ +0.05 and beyond the spread in {len(big)}.")
    if diffs_dep:
        lines.append(f"- adaptive − depolarizing credit: {lo:+.3f} to {hi:+.3f} over "
                     f"{len(diffs_dep)} settings. Confounded: the depolarizing runs use a "
                     f"noisy device (default.mixed, signal shrunk by the channel) and the "
                     f"adaptive runs a noiseless one, so this difference is not the credit's "
                     f"effect.")
    lines.append("Verdict: " + ("**reproduced**" if learns and paired
                                and len(big) > len(paired) / 2 else
                                "**not reproduced**: adaptive − none is "
                                f"{lo2:+.3f} to {hi2:+.3f}; ahead of none beyond the seed "
                                f"spread in {len(ahead)}/{len(paired)} settings, behind in "
                                f"{len(behind)}/{len(paired)} (the credit changes the "
                                "artificial variance by well under 1 %, see C1)") + ".\n")
    lines.append("### C4. “Clipping-free DP beats classical DP-SGD (per-example clipping) in "
                 "QML”\n")
    uc = utility["config"]
    lines.append(f"Compared: `qshiftdp_none` (best of {len(uc['lr_grid'])} learning rates) "
                 f"against `dpsgd_clip` (best of {len(uc['clip_grid'])} clipping norms); the "
                 f"credit variants are not used here because picking the best of several "
                 f"variants would give Q-ShiftDP a larger search budget.\n")
    # A difference counts when it exceeds the combined seed spread sqrt(s1² + s2²).
    def spread(c):
        return math.hypot(c[5], c[6])

    wins = sum(1 for c in comp if c[3] - c[4] > spread(c))
    losses = sum(1 for c in comp if c[4] - c[3] > spread(c))
    for c in comp:
        tag = ("Q-ShiftDP ahead" if c[3] - c[4] > spread(c) else
               "DP-SGD ahead" if c[4] - c[3] > spread(c) else "within seed spread")
        lines.append(f"- {c[0]}, Ns={c[1]}, ε={_fmt_eps(c[2])}: Q-ShiftDP (none) "
                     f"{c[3]:.3f} ± {c[6]:.3f} vs DP-SGD (clip) {c[4]:.3f} ± {c[5]:.3f}: {tag}")
    if comp:
        n = len(comp)
        if not learns:
            v = ("**not reproduced** (cannot be assessed: the model does not learn in this "
                 f"configuration; Q-ShiftDP ahead in {wins}/{n} settings)")
        elif wins == n:
            v = "**reproduced**"
        elif wins == 0:
            v = (f"**not reproduced**: Q-ShiftDP is not ahead beyond the seed spread in any "
                 f"setting (DP-SGD ahead in {losses}/{n}, the rest within spread)")
        else:
            v = (f"**depends on** the setting: Q-ShiftDP ahead in {wins}/{n}, DP-SGD in "
                 f"{losses}/{n}")
        lines.append(f"\nVerdict: {v} (same search budget per method; see §3).\n")
        fr = _clipped_fractions(utility["settings"])
        sel = [e["methods"]["dpsgd_clip"]["value"] for e in utility["settings"]
               if "dpsgd_clip" in e["methods"]]
        lines.append(
            "Why (derived from the update rule, not measured): with clip norm C = c·Δ and "
            "learning rate lr_base·Δ/C, DP-SGD adds the same noise to the weights "
            "(lr_base·σΔ/(qN) per coordinate) as Q-ShiftDP at lr_base, but multiplies every "
            "per-example gradient shorter than C by Δ/C = 1/c. Q-ShiftDP's signal-to-noise "
            "ratio is fixed by the a-priori bound Δ whatever its learning rate, so clipping helps "
            "when typical per-example gradients are much shorter than the worst case Δ and the "
            "noise dominates (small ε); when most examples are clipped it also biases the "
            "gradient, which matters more when the noise is small (large ε). "
            + (f"Selected c per setting: {', '.join(f'{x:g}' for x in sel)}; fraction of "
               f"per-example gradients clipped at the selected c: {min(fr):.2f}–{max(fr):.2f}."
               if fr else "") + "\n")


def headline(out: Path, lines: list[str]) -> str:
    """A short Markdown summary (for the README) built from the JSON files and verdicts."""
    items = []
    data, mode = _load(out, "bench_transform_sweep")
    if data:
        lo, hi = _range([r["median_ratio"] for r in data["rows"]])
        items.append(f"transform overhead vs `qml.gradients.param_shift`: time ratio "
                     f"{lo:.2f}–{hi:.2f} (4/8 qubits, Ns 100/1000, default.qubit and "
                     f"lightning.qubit; {mode})")
    data, mode = _load(out, "bench_training")
    if data:
        lo, hi = _range([r["median_ratio"] for r in data["rows"]])
        items.append(f"one private epoch / one non-private epoch: {lo:.2f}–{hi:.2f} ({mode})")
    data, mode = _load(out, "bench_utility")
    if data:
        finite = sorted({e["epsilon"] for e in data["settings"] if math.isfinite(e["epsilon"])})
        eps0 = 1.0 if 1.0 in finite else (finite[0] if finite else None)
        for e in data["settings"]:
            if e["epsilon"] != eps0:
                continue
            acc = ", ".join(f"{k} {v['mean_accuracy']:.2f}±{v['std_accuracy']:.2f}"
                            for k, v in e["methods"].items())
            nonpriv = [x["methods"]["nonprivate"]["mean_accuracy"] for x in data["settings"]
                       if x["dataset"] == e["dataset"] and x["shots"] == e["shots"]
                       and "nonprivate" in x["methods"]]
            tail = f"; non-private {nonpriv[0]:.2f}" if nonpriv else ""
            items.append(f"test accuracy, {e['dataset']}, Ns={e['shots']}, ε={eps0:g}: "
                         f"{acc}{tail} ({mode}, {len(data['config']['seeds'])} seeds)")
    data, mode = _load(out, "bench_utility_defaults")
    if data:
        cells = {(r["task"], r["method"]): r for r in data["rows"] if r["epsilon"] == 1.0}
        parts = [f"{task} {cells[(task, 'product')]['median_accuracy']:.3f} vs "
                 f"{cells[(task, 'linear')]['median_accuracy']:.3f}"
                 for task in dict.fromkeys(t for t, _ in cells)
                 if (task, "product") in cells and (task, "linear") in cells]
        if parts:
            items.append(f"`qshiftdp train` defaults against linear DP-SGD (Opacus), median "
                         f"test accuracy at ε = 1: {', '.join(parts)} ({mode}, "
                         f"{len(data.get('seeds') or [])} seeds; RESULTS.md §15)")
    titles = [ln for ln in lines if ln.startswith("### C")]
    verdicts = [ln for ln in lines if ln.startswith("Verdict:") or ln.startswith("\nVerdict:")]
    for t, v in zip(titles, verdicts, strict=False):
        items.append(f"{t[4:].split('”')[0]}”: {v.strip()[9:]}")
    return "\n".join(f"* {i}" for i in items) + "\n\nFull tables: " \
        "[benchmarks/RESULTS.md](benchmarks/RESULTS.md).\n"


def update_readme(readme: Path, text: str) -> bool:
    """Replace the block between the benchmark markers of the README, if both exist."""
    start, end = "<!-- benchmarks:start -->", "<!-- benchmarks:end -->"
    if not readme.exists():
        return False
    content = readme.read_text()
    if start not in content or end not in content:
        return False
    head, rest = content.split(start, 1)
    _, tail = rest.split(end, 1)
    readme.write_text(f"{head}{start}\n{text}{end}{tail}")
    return True


def section_missing(out, lines):
    """Which benchmarks have only quick results, with an estimate for the utility sweep."""
    missing = [stem for stem in ("bench_transform_sweep", "bench_transform", "bench_training",
                                 "bench_utility", "bench_noise", "bench_accounting",
                                 "bench_qprldp")
               if not (out / f"{stem}.json").exists()]
    if not missing:
        return
    lines.append("## Missing full-mode results\n")
    lines.append("These benchmarks have only quick-mode results in this directory: "
                 + ", ".join(f"`{m}`" for m in missing) + ".\n")
    data, mode = _load(out, "bench_utility")
    if "bench_utility" in missing and data is not None:
        import bench_utility

        est = bench_utility.estimate_seconds(data)
        parts = ", ".join(f"{k} {v / 3600:.1f} h" for k, v in est["parts_seconds"].items())
        lines.append(f"Estimated wall-clock time of the full `bench_utility.py` on this machine "
                     f"(from the quick run's seconds per run-epoch): "
                     f"{est['total_seconds'] / 3600:.1f} h ({parts}; `mixed` = the "
                     f"default.mixed runs of the `depolarizing` credit). It can be sharded with "
                     f"`--datasets/--epsilons/--shots/--seeds/--depol-ps` and `--name`, and the "
                     f"shards merged with `bench_utility.py --merge`; `run_all.py --jobs 2` "
                     f"does both.\n")


def write_report(out: Path, report: Path, readme: Path | None = None) -> Path:
    lines = ["# Benchmark results\n",
             "Generated by `python benchmarks/run_all.py` from the JSON files in "
             "`benchmarks/results/`; do not edit by hand. Each section says whether its "
             "numbers come from the full or the quick (reduced) mode.\n"]
    rows = []
    for stem in ("bench_transform_sweep", "bench_transform", "bench_training", "bench_utility",
                 "bench_noise", "bench_accounting", "bench_qprldp"):
        path = out / f"{stem}.json"
        if path.exists():
            d = json.loads(path.read_text())
            sec = d.get("seconds")
            rows.append({"full result": f"{stem}.json",
                         "seconds recorded by the script": f"{sec:.0f}" if sec else "n/a",
                         "note": (f"sum over {len(d['shards'])} shards run in parallel"
                                  if "shards" in d else "")})
    if rows:
        lines.append("Full-mode result files present (produced by `run_all.py` or by running the "
                     "scripts directly; each records its own environment):\n")
        lines.append(table(rows, ["full result", "seconds recorded by the script", "note"])
                     + "\n")
    for stem in ("run_all", "run_all_quick"):
        path = out / f"{stem}.json"
        if path.exists():
            d = json.loads(path.read_text())
            lines.append(f"Runtimes of the last `{stem.replace('_quick', ' --quick')}` "
                         f"(total {d['total_seconds']:.0f} s):\n")
            lines.append(table(d["rows"], ["script", "args", "returncode", "seconds"]) + "\n")
            lines.append(_env_line(d) + "\n")
    section_transform(out, lines)
    section_training(out, lines)
    utility = section_utility(out, lines)
    noise = section_noise(out, lines)
    section_accounting(out, lines)
    section_qprldp(out, lines)
    claims(noise, utility, lines)
    section_reliability(out, lines)
    section_variance_bound(out, lines)
    section_audit(out, lines)
    section_shots(out, lines)
    section_step(out, lines)
    section_clip(out, lines)
    section_multiclass(out, lines)
    section_defaults(out, lines)
    section_hybrid(out, lines)
    section_missing(out, lines)
    report.write_text("\n".join(lines))
    if readme is not None and update_readme(readme, headline(out, lines)):
        print(f"updated the benchmark summary in {readme}")
    return report


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="run every script with --quick")
    p.add_argument("--only", nargs="+", choices=list(SCRIPTS), default=None)
    p.add_argument("--report-only", action="store_true", help="only regenerate RESULTS.md")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    p.add_argument("--report", type=Path, default=HERE / "RESULTS.md")
    p.add_argument("--readme", type=Path, default=HERE.parent / "README.md",
                   help="README whose <!-- benchmarks:start/end --> block is regenerated")
    p.add_argument("--jobs", type=int, default=1,
                   help="full mode: run bench_utility as shards in this many parallel "
                        "processes and merge them (set OMP_NUM_THREADS=1)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.jobs < 1:
        p.error(f"--jobs must be >= 1, got {args.jobs}")
    if args.report_only and not any(args.out.glob("*.json")):
        # A mistyped --out would otherwise overwrite RESULTS.md and the README block with
        # "no result file yet".
        p.error(f"--out {args.out} holds no result JSON files; nothing to report")
    if not args.report_only:
        names = args.only or list(SCRIPTS)
        t0 = time.perf_counter()
        rows = run_scripts(names, quick=args.quick or args.tiny, out=args.out,
                           extra=["--tiny"] if args.tiny else [], jobs=args.jobs)
        write_result("run_all_quick" if (args.quick or args.tiny) else "run_all",
                     {"rows": rows, "total_seconds": time.perf_counter() - t0}, args.out)
        print(f"total {time.perf_counter() - t0:.0f} s")
    path = write_report(args.out, args.report, args.readme)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
