"""The one-line privacy summary that ends every `qshiftdp train` run (issue 35)."""

import json
import math

import pytest

from pennylane_qshiftdp.app.cli import main
from pennylane_qshiftdp.app.summary import format_epsilon, summary_line


@pytest.mark.parametrize("eps, text", [(0.99301, "0.9931"), (1.0, "1.0000"), (0.4, "0.4000"),
                                       (2.00000001, "2.0001"), (math.inf, "inf")])
def test_epsilon_is_rounded_up(eps, text):
    assert format_epsilon(eps) == text
    if math.isfinite(eps):
        assert float(text) >= eps - 1e-12  # an upper bound printed stays one


def test_summary_names_epsilon_delta_adjacency_accountant_and_the_claim():
    line = summary_line(epsilon=1.49479, delta=1e-5, adjacency="replace_one", accountant="prv",
                        steps=50, credit="adaptive", beta=1e-6)
    assert line == ("privacy: (ε = 1.4948, δ = 1e-05) proven; credited (adaptive) ε withheld "
                    "(δ + β = 1.1e-05; --diagnostics releases it, NOT protected) · replace-one "
                    "adjacency · Opacus PRV accountant · 50 steps")
    line = summary_line(epsilon=1.49479, delta=1e-5, adjacency="add_remove", accountant="rdp",
                        steps=50, credit="adaptive", beta=1e-6, credited_epsilon=0.98)
    assert "credited (adaptive) (ε = 0.9800, δ + β = 1.1e-05): Gaussian approximation" in line
    assert "\n" not in line
    assert summary_line(epsilon=math.inf, delta=1e-5, adjacency="add_remove", accountant="rdp",
                        steps=10).startswith("privacy: none (--epsilon inf")


def test_every_run_ends_with_the_summary_of_its_ledger(tmp_path, capsys):
    out_dir = tmp_path / "run"
    assert main(["train", "--device", "default.qubit", "--qubits", "2", "--layers", "1",
                 "--epochs", "1", "--batch-size", "32", "--shots", "50", "--seeded-noise",
                 "--no-progress", "--adjacency", "replace_one",
                 "--output-dir", str(out_dir)]) == 0
    out = capsys.readouterr().out
    ledger = json.loads((out_dir / "ledger.json").read_text())
    metrics = json.loads((out_dir / "metrics.json").read_text())
    last = out.rstrip("\n").splitlines()[-1]
    assert last == (f"privacy: (ε = {format_epsilon(metrics['epsilon'])}, δ = 1e-05) proven · "
                    f"replace-one adjacency · dp-accounting PLD accountant · "
                    f"{ledger['steps']} steps · "
                    f"full statement: {out_dir / 'privacy_statement.txt'}")
    # the full statement is in the run directory; the console has its first line only
    statement = (out_dir / "privacy_statement.txt").read_text().splitlines()
    assert statement[0] in out and "Details: {" in "\n".join(statement)
    assert "Details: {" not in out and "Accountant: Opacus" not in out
