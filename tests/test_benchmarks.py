"""Every benchmark script runs on a tiny configuration and writes its JSON and PNG.

Timings are measured by the scripts, never asserted here.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name):
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _result(tmp_path, stem, keys):
    path = tmp_path / f"{stem}.json"
    assert path.exists()
    assert path.with_suffix(".png").exists()
    data = json.loads(path.read_text())
    assert data["environment"]["cpu_count"] >= 1
    assert "packages" in data["environment"]
    for key in keys:
        assert key in data, key
    return data


def test_bench_accounting(tmp_path):
    _module("bench_accounting").main(["--tiny", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_accounting_quick",
                   ["calibration", "epsilon_vs_steps", "adaptivity_cost", "config"])
    assert {r["accountant"] for r in data["calibration"]} == {"rdp", "prv", "pld"}
    row = data["epsilon_vs_steps"][0]
    assert {"epsilon_rdp", "epsilon_prv", "epsilon_pld"} <= set(row)
    task = data["shipped_tasks"][0]
    assert task["task"] == "digits 0 vs 1" and task["steps"] == 50
    assert task["sigma_pld"] < task["sigma_rdp"]  # PLD is tighter: less noise at the same ε
    assert task["epsilon_pld_at_rdp_sigma"] < task["epsilon"]
    assert data["per_step"][0]["ms_per_step_pld"] > 0
    assert 0 <= data["pld_discretisation"][0]["relative_excess"] < 0.01
    assert data["adaptivity_cost"][0]["z_gaussian"] > 0


def test_bench_transform(tmp_path):
    _module("bench_transform").main(["--tiny", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_transform_quick", ["rows", "quick"])
    assert {"median_ratio", "tapes_per_gradient", "circuits_executed"} <= set(data["rows"][0])


@pytest.mark.slow
def test_bench_transform_step_alternative(tmp_path):
    """The step comparison with the alternative, the numpy limit (in its own process, one
    thread) and the lightning.qubit exact-law step, each timed once per round."""
    _module("bench_transform").main(["--step", "--alternative", "--qubits", "2", "--batch", "3",
                                     "--repeats", "2", "--devices", "default.qubit", "--out",
                                     str(tmp_path)])
    data = _result(tmp_path, "bench_transform_step", ["rows", "markdown"])
    [row] = data["rows"]
    assert {"numpy_limit", "lightning_exact_law", "opacus_backprop"} <= set(row["times_s"])
    assert all(len(v) == 2 for v in row["times_s"].values())
    assert len(row["lightning_over_exact_law_range"]) == 2 and len(row["load_average"]) == 2


@pytest.mark.slow
def test_bench_transform_scaling(tmp_path):
    """The scaling table: each variant's steps in a process of its own, alternated in rounds,
    with its peak memory and the load average."""
    mod = _module("bench_transform")
    mod.main(["--scaling", "--qubits", "2", "--batch", "3", "--rounds-scaling", "2",
              "--repeats", "1", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_transform_scaling", ["rows", "markdown"])
    [row] = data["rows"]
    assert set(row["runs"]) == set(mod.SCALING_VARIANTS)
    assert all(len(runs) == 2 for runs in row["runs"].values())
    for v in mod.SCALING_VARIANTS:
        assert row[f"{v}_s"] > 0 and row[f"{v}_peak_gb"] >= row[f"{v}_step_memory_gb"] >= 0
    assert len(row["alternative_over_exact_law_range"]) == 2 and len(row["load_average"]) == 2


def test_bench_qprldp(tmp_path):
    _module("bench_qprldp").main(["--tiny", "--out", str(tmp_path)])
    _result(tmp_path, "bench_qprldp_quick",
            ["global_certificates", "local_certificates", "worst_case_search"])


@pytest.mark.slow
def test_bench_training(tmp_path):
    _module("bench_training").main(["--tiny", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_training_quick", ["rows", "config"])
    row = data["rows"][0]
    assert {"median_ratio", "private_samples_per_s", "nonprivate_samples_per_s",
            "private_step_s", "nonprivate_step_s"} <= set(row)
    assert row["qubits"] == 4 and row["shot_sampling"] == "exact_law"
    # per-step seconds are the epoch seconds spread over the same number of steps
    assert row["private_step_s"] / row["nonprivate_step_s"] == pytest.approx(
        row["median_private_s"] / row["median_nonprivate_s"], rel=1e-9)


@pytest.mark.slow
def test_bench_noise(tmp_path):
    _module("bench_noise").main(["--tiny", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_noise_quick", ["rows", "summary", "config"])
    row = data["summary"][0]
    for key in ("added_none", "added_adaptive", "added_isotropic", "added_depolarizing",
                "reduction_vs_none", "mismatched_ratio", "epsilon_for_10pct"):
        assert key in row, key
    # The artificial variance never exceeds σ²Δ² and never falls below 0.
    assert 0 <= row["added_adaptive"] <= row["added_none"] + 1e-12


@pytest.mark.slow
def test_bench_utility(tmp_path):
    _module("bench_utility").main(["--tiny", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_utility_quick", ["summary", "settings", "config"])
    methods = {r["method"] for r in data["summary"]}
    assert {"nonprivate", "qshiftdp_none", "qshiftdp_adaptive", "dpsgd_clip"} <= methods
    for row in data["summary"]:
        assert 0.0 <= row["mean_accuracy"] <= 1.0
    est = _module("bench_utility").estimate_seconds(data)
    assert est["total_seconds"] > 0


@pytest.mark.slow
def test_bench_utility_defaults_against_the_anchor(tmp_path):
    """--defaults: per task, ε and seed one product run and one linear DP-SGD run, on the same
    split; the merge joins shards; run_all's §15 reads the result."""
    bu = _module("bench_utility")
    bu.main(["--defaults", "--tiny", "--datasets", "iris", "--name", "a", "--out",
             str(tmp_path)])
    bu.main(["--defaults", "--tiny", "--datasets", "breast_cancer", "--name", "b", "--out",
             str(tmp_path)])
    data = _result(tmp_path, "a", ["rows", "seeds", "protocol", "anchor_settings"])
    assert {(r["task"], r["method"]) for r in data["rows"]} == {("iris", "product"),
                                                               ("iris", "linear")}
    for row in data["rows"]:
        assert 0.0 <= row["median_accuracy"] <= 1.0 and row["seeds"] == 1
        assert row["runs"][0]["epsilon_spent"] <= 1.0 + 1e-9
    product = next(r for r in data["rows"] if r["method"] == "product")
    assert product["settings"]["model"] == "neuron" and product["majority_rate"] > 0.3
    merged = bu.main(["--defaults-merge", str(tmp_path / "a.json"), str(tmp_path / "b.json"),
                      "--out", str(tmp_path)])
    assert [r["task"] for r in merged["rows"]] == ["iris", "iris", "breast_cancer",
                                                   "breast_cancer"]
    _result(tmp_path, "bench_utility_defaults", ["rows"])
    lines: list[str] = []
    _module("run_all").section_defaults(tmp_path, lines)
    text = "\n".join(lines)
    assert "| breast_cancer | 1 |" in text and "linear DP-SGD" in text


def test_bench_hybrid(tmp_path):
    """The tiny run (wine, ε = 2, seed 0, every method) writes its rows, table and plot; every
    private run spent at most its ε; the report renders its section."""
    _module("bench_hybrid").main(["--tiny", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_hybrid_quick", ["runs", "summary", "markdown", "config"])
    methods = {r["method"] for r in data["runs"]}
    assert methods == {"automatic", "flat", "per_layer", "linear", "nonprivate"}
    for r in data["runs"]:
        assert 0.0 <= r["test_accuracy"] <= 1.0
        if r["method"] != "nonprivate":
            assert r["epsilon_spent"] <= r["epsilon"] == 2.0
    run_all = _module("run_all")
    report = tmp_path / "RESULTS.md"
    run_all.main(["--report-only", "--out", str(tmp_path), "--report", str(report),
                  "--readme", str(tmp_path / "README.md")])
    assert "16. User-style hybrid models" in report.read_text()


def test_bench_hybrid_quanvolution_run():
    """The quanvolution (16 patches of each image through one circuit) trains through
    make_private with no clip argument and spends at most its ε."""
    row = _module("bench_hybrid").run_one("digits01", "quanv", "automatic", 2.0, 0)
    assert row["model"] == "quanv" and 0.5 < row["test_accuracy"] <= 1.0
    assert row["epsilon_spent"] <= 2.0


def test_run_all_report(tmp_path):
    """RESULTS.md is generated from whatever JSON files exist (here: one tiny run)."""
    run_all = _module("run_all")
    _module("bench_accounting").main(["--tiny", "--out", str(tmp_path)])
    report = tmp_path / "RESULTS.md"
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- benchmarks:start -->\nold\n<!-- benchmarks:end -->\nend\n")
    assert run_all.main(["--report-only", "--out", str(tmp_path), "--report", str(report),
                         "--readme", str(readme)]) == 0
    text = report.read_text()
    assert "## 5. Accounting" in text
    assert "## 7. Seed claims" in text
    assert "No result file yet" in text  # the other benchmarks are absent
    new = readme.read_text()
    assert "old" not in new and new.endswith("<!-- benchmarks:end -->\nend\n")
    assert "RESULTS.md" in new


@pytest.mark.slow
def test_run_all_tiny(tmp_path):
    """run_all drives every script (in subprocesses) and writes its runtime table."""
    run_all = _module("run_all")
    report = tmp_path / "RESULTS.md"
    assert run_all.main(["--tiny", "--only", "bench_accounting", "bench_qprldp",
                         "--out", str(tmp_path), "--report", str(report),
                         "--readme", str(tmp_path / "README.md")]) == 0
    data = json.loads((tmp_path / "run_all_quick.json").read_text())
    assert [r["returncode"] for r in data["rows"]] == [0, 0]
    assert "C1." in report.read_text()


def _fake_shard(path, *, dataset, shots, epochs=3, quick=False, epsilons=(1.0, 8.0)):
    method = {"method": "qshiftdp_none", "hyperparameter": "lr", "value": 0.2,
              "mean_accuracy": 0.9, "std_accuracy": 0.01, "seeds": 3, "accuracies": [0.9] * 3,
              "seconds": 1.0, "runs": []}
    settings = [{"dataset": dataset, "shots": shots, "epsilon": eps, "methods": {
        "qshiftdp_none": method}, "candidates": {}} for eps in epsilons]
    cfg = {"datasets": [dataset], "shots_list": [shots], "epsilons": list(epsilons),
           "seeds": [0, 1, 2], "epochs": epochs, "lr_grid": [0.2], "clip_grid": [1.0],
           "depol_ps": [0.01], "test_size": 0.25}
    path.write_text(json.dumps({"quick": quick, "config": cfg, "settings": settings,
                                "seconds": 10.0}))
    return path


def test_bench_utility_merge(tmp_path):
    """Shards of one sweep merge into one result; incompatible, overlapping or holey shard sets
    are refused."""
    bu = _module("bench_utility")
    shards = [_fake_shard(tmp_path / f"{ds}_{ns}.json", dataset=ds, shots=ns)
              for ds, ns in (("breast_cancer", 1000), ("digits", 100), ("digits", 1000),
                             ("breast_cancer", 100))]
    out = tmp_path / "merged"
    res = bu.main(["--merge", *map(str, shards), "--name", "merged_utility", "--out", str(out)])
    data = _result(out, "merged_utility", ["summary", "settings", "config", "shards"])
    assert data["config"]["datasets"] == ["digits", "breast_cancer"]  # FULL_CONFIG order
    assert data["config"]["shots_list"] == [100, 1000]
    assert [(e["dataset"], e["shots"]) for e in data["settings"]] == [
        ("digits", 100), ("digits", 100), ("digits", 1000), ("digits", 1000),
        ("breast_cancer", 100), ("breast_cancer", 100), ("breast_cancer", 1000),
        ("breast_cancer", 1000)]
    assert data["seconds"] == 40.0 and len(res["summary"]) == 8
    a, b = shards[0], shards[1]
    with pytest.raises(ValueError, match=r"leave 4 \(dataset, shots, epsilon\) cells"):
        bu.merge([a, b], out=out)  # digits/1000 and breast_cancer/100 never ran
    c = _fake_shard(tmp_path / "c.json", dataset="digits", shots=1000, epochs=5)
    with pytest.raises(ValueError, match="epochs"):
        bu.merge([a, c], out=out)
    with pytest.raises(ValueError, match="repeats dataset='digits'"):
        bu.merge([b, b], out=out)
    d = _fake_shard(tmp_path / "d.json", dataset="wine", shots=100, quick=True)
    with pytest.raises(ValueError, match="quick"):
        bu.merge([a, d], out=out)
    # Per-data-set test fractions merge; the same data set with two fractions is refused.
    e = _fake_shard(tmp_path / "e.json", dataset="breast_cancer", shots=100)
    cfg = json.loads(e.read_text())
    cfg["config"]["test_size"] = {"breast_cancer": 0.5}
    e.write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="test_size=0.5 for dataset='breast_cancer'"):
        bu.merge([shards[3], e], out=out)
    res = bu.merge([b, e], name="merged2", out=out)
    assert res["config"]["test_size"] == {"digits": 0.25, "breast_cancer": 0.5}
    assert bu._test_size({"digits": 0.25}, "digits") == 0.25
    with pytest.raises(ValueError, match="no entry for dataset='wine'"):
        bu._test_size({"digits": 0.25}, "wine")
    # A shard split by ε merges with the rest of its (data set, shots) cell.
    f = _fake_shard(tmp_path / "f.json", dataset="digits", shots=100, epsilons=(0.5, math.inf))
    res = bu.merge([b, f], name="merged3", out=out)
    assert res["config"]["epsilons"] == [0.5, 1.0, 8.0, math.inf]
    assert [e["epsilon"] for e in res["settings"]] == [0.5, 1.0, 8.0, math.inf]


def test_bench_utility_merge_bad_files(tmp_path, capsys):
    """Unreadable or foreign files are refused with a one-line error naming the file."""
    bu = _module("bench_utility")
    with pytest.raises(ValueError, match="cannot read shard .*absent.json"):
        bu.merge([tmp_path / "absent.json"], out=tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{x")
    with pytest.raises(ValueError, match="bad.json is not valid JSON"):
        bu.merge([bad], out=tmp_path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"quick": False, "config": {}, "rows": []}))
    with pytest.raises(ValueError, match="other.json is not a bench_utility result"):
        bu.merge([other], out=tmp_path)
    with pytest.raises(SystemExit) as exc:
        bu.main(["--merge", str(bad), "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_run_all_report_refuses_empty_out(tmp_path):
    """A mistyped --out must not overwrite RESULTS.md and the README block with nothing."""
    run_all = _module("run_all")
    report, readme = tmp_path / "RESULTS.md", tmp_path / "README.md"
    readme.write_text("<!-- benchmarks:start -->\nkeep\n<!-- benchmarks:end -->\n")
    with pytest.raises(SystemExit) as exc:
        run_all.main(["--report-only", "--out", str(tmp_path / "typo"), "--report", str(report),
                      "--readme", str(readme)])
    assert exc.value.code == 2
    assert not report.exists() and "keep" in readme.read_text()


def test_bench_reliability(tmp_path):
    _module("bench_reliability").main(["--runs", "2", "--epochs", "1", "--device",
                                       "default.qubit", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "bench_reliability.json").read_text())
    assert data["runs"] == 2 and len(data["per_run"]) == 2
    accs = [r["test_accuracy"] for r in data["per_run"]]
    assert data["worst_accuracy"] == min(accs)
    assert data["runs_at_least_0.95"] == sum(a >= 0.95 for a in accs)
    assert all(r["epsilon"] <= 1.0 for r in data["per_run"])


def test_bench_shots(tmp_path):
    _module("bench_shots").main(["--tiny", "--seeds", "0", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_shots_quick", ["rows", "runs"])
    by = {r["shots"]: r for r in data["rows"]}
    assert set(by) == {"10", "auto"} and by["10"]["shots_per_circuit"] == 10
    assert by["auto"]["shots_per_circuit"] >= 2
    # training shots scale with Ns: the same circuits at 10 shots each
    run = next(r for r in data["runs"] if r["shots"] == "10")
    assert run["training_shots"] % 10 == 0 and run["training_shots"] > 0


@pytest.mark.slow
def test_bench_job(tmp_path):
    """One round of one epoch: both processes run, the ratio is their wall times' ratio."""
    _module("bench_job").main(["--rounds", "1", "--epochs", "1", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "bench_job.json").read_text())
    [row] = data["rounds"]
    assert row["private_s"] > 0 and row["reference_s"] > 0
    assert data["median_ratio"] == pytest.approx(row["private_s"] / row["reference_s"])


def test_tune_neuron_twin_is_the_products_model_and_runs(tmp_path):
    """The search's analytic twin computes the product's QuantumNeuronClassifier (shots=None)
    for the same weights and centre; the tiny search writes its rows."""
    import torch

    from pennylane_qshiftdp.app.models import QuantumNeuronClassifier

    tune = _module("tune_neuron")
    gen = torch.Generator().manual_seed(3)
    x = torch.rand(7, 5, generator=gen, dtype=torch.float64) * math.pi
    for center in (math.pi / 2, 1.0):
        model = QuantumNeuronClassifier(5, 2, shots=None, init_scale=0.4, init_seed=1,
                                        input_center=center)
        with torch.no_grad():
            model.pre.weight.copy_(torch.randn(1, 5, generator=gen, dtype=torch.float64))
            model.pre.bias.fill_(0.3)
            phi, theta, _ = model.qlayers[0].weights.detach().double()
            want = model(x)
        params = [model.pre.weight.detach()[0].double(), model.pre.bias.detach()[0].double(),
                  phi, theta]
        torch.testing.assert_close(tune.twin_output(params, x, center), want, atol=1e-6,
                                   rtol=0)
    data = tune.main(["--tiny", "--out", str(tmp_path)])
    (row,) = data["rows"]
    assert row["runs"] == 2 and 0.5 <= row["mean_validation"] <= 1.0
    assert (tmp_path / "tune_neuron_tiny.json").exists()
    assert len(tune.searches()) == 5 + 72 + 18 + 12


def test_bench_user_models(tmp_path):
    """The quick run (two users' models, ε = 4, seed 0, 2 epochs on 96 rows, every method)
    writes its rows, table, criteria and plot; every private run spent at most its ε."""
    _module("bench_user_models").main(["--quick", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_user_models_quick",
                   ["runs", "summary", "markdown", "config", "criteria"])
    assert {r["method"] for r in data["runs"]} == {"defaults", "opacus", "linear", "nonprivate"}
    for r in data["runs"]:
        assert 0.0 <= r["test_accuracy"] <= 1.0
        if r["method"] != "nonprivate":
            assert r["epsilon_spent"] <= r["epsilon"] == 4.0
    assert data["criteria"]["epsilon"] == 4.0
    assert set(data["criteria"]["nonprivate_minus_opacus_points"]) == {
        "reupload_moons", "wine_hybrid"}


def test_bench_user_models_paired_difference_is_the_t_interval():
    """The paired column: the mean of the per-seed differences and scipy's one-sample t
    interval of them (an independent computation); seeds one method lacks are left out."""
    from scipy import stats

    users = _module("bench_user_models")
    ours, theirs = [0.9, 0.8, 0.85, 0.7, 0.95], [0.85, 0.82, 0.8, 0.75, 0.9]
    last = {("m", "defaults", 4.0, s): {"test_accuracy": a} for s, a in enumerate(ours)}
    last |= {("m", "opacus", 4.0, s): {"test_accuracy": a} for s, a in enumerate(theirs)}
    last[("m", "defaults", 4.0, 9)] = {"test_accuracy": 0.0}  # no Opacus run at seed 9
    mean, lo, hi = users.paired_difference(last, "m", 4.0)
    diffs = [100 * (a - b) for a, b in zip(ours, theirs, strict=True)]
    ci = stats.ttest_1samp(diffs, 0.0).confidence_interval(0.95)
    assert mean == pytest.approx(sum(diffs) / 5)
    assert (lo, hi) == pytest.approx((ci.low, ci.high))


def test_bench_user_models_mechanisms(tmp_path):
    """The quick run writes the averaging and bias-correction variants of one model, each
    paired with the same run's last iterate."""
    _module("bench_user_models_mechanisms").main(["--quick", "--out", str(tmp_path)])
    data = _result(tmp_path, "bench_user_models_mechanisms_quick", ["runs", "markdown"])
    (row,) = data["runs"]
    assert {"raw", "tail0.5", "ema0.1", "bc0.01", "bc1"} <= set(row)
    assert all(0.0 <= v <= 1.0 for k, v in row.items() if k not in ("model", "seed"))
