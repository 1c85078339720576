"""Tests for pennylane_qshiftdp.cli (the ``noise`` and ``epsilon`` subcommands)."""

import json
import subprocess
import sys

import pytest

from pennylane_qshiftdp.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.cli import build_parser, main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class TestNoise:
    def test_sample_rate_steps(self, capsys):
        code, out, err = run(
            capsys,
            "noise",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--sample-rate",
            "0.1",
            "--steps",
            "100",
        )
        assert code == 0 and err == ""
        sigma = calibrate_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=0.1, steps=100
        )
        assert f"noise multiplier sigma = {sigma:.6g}" in out
        assert "steps = 100" in out and "accountant = rdp" in out

    def test_batch_size_epochs_json(self, capsys):
        code, out, _ = run(
            capsys,
            "noise",
            "--epsilon",
            "1",
            "--batch-size",
            "64",
            "--dataset-size",
            "270",
            "--epochs",
            "10",
            "--json",
        )
        assert code == 0
        data = json.loads(out)
        assert data["sample_rate"] == 64 / 270
        assert data["steps"] == 43  # ceil(10 * 270 / 64)
        assert data["expected_batch_size"] == pytest.approx(64)
        assert data["noise_multiplier"] == calibrate_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=64 / 270, steps=43
        )
        assert data["epsilon"] <= 1.0

    def test_large_delta_warning(self, capsys):
        code, _, err = run(
            capsys,
            "noise",
            "--epsilon",
            "1",
            "--delta",
            "0.01",
            "--batch-size",
            "10",
            "--dataset-size",
            "100",
            "--steps",
            "5",
        )
        assert code == 0
        assert "warning: delta = 0.01 is not below 1/N = 0.01" in err

    @pytest.mark.parametrize(
        "argv, message",
        [
            (
                ["--epsilon", "0", "--sample-rate", "0.1", "--steps", "10"],
                "qshiftdp noise: error: `target_epsilon` must be positive. Found 0.0.",
            ),
            (
                ["--epsilon", "1", "--delta", "1", "--sample-rate", "0.1", "--steps", "10"],
                "qshiftdp noise: error: `target_delta` must be in (0, 1). Found 1.0.",
            ),
            (
                ["--epsilon", "1", "--sample-rate", "1.5", "--steps", "10"],
                "qshiftdp noise: error: `sample_rate` must be in (0, 1]. Found 1.5.",
            ),
            (
                ["--epsilon", "1", "--sample-rate", "0.1", "--steps", "0"],
                "qshiftdp noise: error: `steps` must be a positive integer. Found 0.",
            ),
            (
                ["--epsilon", "1", "--batch-size", "10", "--steps", "5"],
                "qshiftdp noise: error: --batch-size needs --dataset-size",
            ),
            (
                ["--epsilon", "1", "--batch-size", "500", "--dataset-size", "100", "--steps", "5"],
                "qshiftdp noise: error: --batch-size must be at most --dataset-size (100). "
                "Found 500.",
            ),
            (
                ["--epsilon", "1", "--sample-rate", "0.1", "--steps", "5", "--accountant", "gdp"],
                "invalid choice: 'gdp'",
            ),
            (
                ["--epsilon", "1", "--sample-rate", "0.1"],
                "one of the arguments --steps --epochs is required",
            ),
            (
                ["--epsilon", "1", "--sample-rate", "0.1", "--batch-size", "3", "--steps", "2"],
                "not allowed with argument",
            ),
        ],
    )
    def test_errors(self, capsys, argv, message):
        code, out, err = run(capsys, "noise", *argv)
        assert code == 2
        assert message in err
        assert out == ""


class TestEpsilon:
    def test_value(self, capsys):
        code, out, _ = run(
            capsys,
            "epsilon",
            "--noise-multiplier",
            "1.5",
            "--sample-rate",
            "0.02",
            "--steps",
            "500",
            "--delta",
            "1e-6",
        )
        assert code == 0
        eps = compute_epsilon(noise_multiplier=1.5, sample_rate=0.02, steps=500, delta=1e-6)
        assert f"epsilon = {eps:.6g} (nats) at delta = 1e-06" in out

    def test_json_prv(self, capsys):
        code, out, _ = run(
            capsys,
            "epsilon",
            "--noise-multiplier",
            "2",
            "--sample-rate",
            "0.05",
            "--steps",
            "50",
            "--accountant",
            "prv",
            "--json",
        )
        assert code == 0
        data = json.loads(out)
        assert data["epsilon"] == compute_epsilon(
            noise_multiplier=2.0, sample_rate=0.05, steps=50, delta=1e-5, accountant="prv"
        )
        assert data["accountant"] == "prv"

    def test_error(self, capsys):
        code, _, err = run(
            capsys, "epsilon", "--noise-multiplier", "0", "--sample-rate", "0.1", "--steps", "10"
        )
        assert code == 2
        assert (
            "qshiftdp epsilon: error: `noise_multiplier` must be positive and finite. Found 0.0."
            in err
        )


class TestParser:
    def test_subcommands_and_hook(self):
        parser = build_parser()
        assert set(parser.subparsers.choices) == {"noise", "epsilon", "train", "audit"}
        args = parser.parse_args(["train", "--epsilon", "2", "--credit", "adaptive"])
        assert args.command == "train" and args.epsilon == 2.0 and args.credit == "adaptive"

    def test_no_command(self, capsys):
        code, _, err = run(capsys)
        assert code == 2 and "required: COMMAND" in err

    def test_help(self, capsys):
        code, out, _ = run(capsys, "--help")
        assert code == 0 and "noise" in out and "epsilon" in out

    def test_module_entry_point(self):
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pennylane_qshiftdp.cli",
                "epsilon",
                "--noise-multiplier",
                "1",
                "--sample-rate",
                "0.01",
                "--steps",
                "1000",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("epsilon = 2.10137 (nats)")


# ------------------------------------------------------------------ train: flags and footguns
_TINY_ARGS = ["train", "--device", "default.qubit", "--qubits", "2", "--layers", "1",
              "--epochs", "1", "--batch-size", "32", "--shots", "50", "--seeded-noise",
              "--no-progress"]


def test_train_errors_name_the_flag(capsys, tmp_path):
    code = main([*_TINY_ARGS, "--dataset", "nope", "--output-dir", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert code == 2 and "`--dataset` must be one of" in err
    code = main([*_TINY_ARGS, "--dataset", "csv", "--output-dir", str(tmp_path / "b")])
    assert code == 2 and "`--csv` is required" in capsys.readouterr().err
    code = main([*_TINY_ARGS, "--max-grad-norm", "-1", "--output-dir", str(tmp_path / "c")])
    assert code == 2 and "--max-grad-norm" in capsys.readouterr().err


def test_train_refuses_to_overwrite_a_ledger_and_resume_lists_differences(capsys, tmp_path):
    out = str(tmp_path / "run")
    assert main([*_TINY_ARGS, "--output-dir", out]) == 0
    capsys.readouterr()
    assert main([*_TINY_ARGS, "--output-dir", out]) == 2
    assert "already holds a run" in capsys.readouterr().err
    assert main([*_TINY_ARGS, "--output-dir", out, "--resume", "--lr", "0.3"]) == 2
    err = capsys.readouterr().err
    assert "--lr: 0.2 (interrupted run) vs 0.3 (now)" in err
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    prov = ledger["extra"]["provenance"]
    assert len(prov["training_data_sha256"]) == 64 and prov["command_line"]
    assert ledger["extra"]["versions"]["opacus"] == "1.6.0"


def test_train_classes_flag_selects_two_classes(capsys, tmp_path):
    with pytest.warns(UserWarning, match="Data-dependent preprocessing"):
        code = main([*_TINY_ARGS, "--dataset", "iris", "--preprocessing", "standardize_pca",
                     "--classes", "versicolor,virginica", "--output-dir", str(tmp_path / "r")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "NOT protected" in out.out and "These data-dependent statistics" not in out.out
