"""Runs benchmarks/bench_qprldp.py --quick on a tiny configuration (no timing assertions)."""

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_qprldp.py"


def test_bench_quick(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_qprldp", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--quick", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "bench_qprldp_quick.json").read_text())
    assert data["quick"] is True
    assert data["environment"]["cpu_count"] >= 1 and "numpy" in data["environment"]["packages"]
    assert {r["n"] for r in data["local_certificates"]} >= {50}
    for row in data["worst_case_search"]:
        if row["gap"] is not None:
            assert row["gap"] >= -1e-9  # the search never beats the closed form
    assert "Worst-case search" in capsys.readouterr().out
