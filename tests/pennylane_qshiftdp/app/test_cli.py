"""Tests for pennylane_qshiftdp.app.cli (the ``noise`` and ``epsilon`` subcommands)."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.app.cli import build_parser, main


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
        assert "steps = 100" in out and "accountant = pld" in out  # the default

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
        # rounded up (issue 42): `.6g` printed 1.57727, below the ε it stands for
        assert "epsilon = 1.57728 (nats) at delta = 1e-06" in out
        assert 1.57727 < eps <= 1.57728

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
        assert set(parser.subparsers.choices) == {"noise", "epsilon", "train", "audit",
                                                  "predict", "certify"}
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
                "pennylane_qshiftdp.app.cli",
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
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("epsilon = 1.83092 (nats)")  # PLD (RDP: 2.10137)


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
    # fields whose flag is not --<field>: the message names the flag a user types
    assert main([*_TINY_ARGS, "--output-dir", out, "--resume", "--batch-size", "7"]) == 2
    err = capsys.readouterr().err
    assert "--batch-size: " in err and "--expected-batch-size" not in err
    ledger = json.loads((tmp_path / "run" / "ledger.json").read_text())
    prov = ledger["extra"]["provenance"]
    # a hash of the training data is a function of every private example: diagnostics only
    assert "training_data_sha256" not in prov and prov["command_line"]
    assert ledger["extra"]["versions"]["opacus"] == "1.6.0"


def test_train_bad_paths_and_sizes_fail_before_training(capsys, tmp_path):
    a_file = tmp_path / "file.csv"
    a_file.write_text("x\n")
    for out_dir, message in [(str(a_file), "cannot be created"),
                             (str(a_file / "sub"), "cannot be created"),
                             ("", "--output-dir must name a directory")]:
        assert main([*_TINY_ARGS, "--output-dir", out_dir]) == 2
        assert message in capsys.readouterr().err
    assert main([*_TINY_ARGS, "--qubits", "16", "--output-dir", str(tmp_path / "q")]) == 2
    assert "`--qubits` must be at most 14" in capsys.readouterr().err
    assert not (tmp_path / "q").exists()
    assert main([*_TINY_ARGS, "--eval-shots", "-3", "--output-dir", str(tmp_path / "e")]) == 2
    assert "--eval-shots must be a positive shot count" in capsys.readouterr().err


def test_train_corrupt_checkpoint_is_a_clear_error(capsys, tmp_path):
    out = tmp_path / "run"
    assert main([*_TINY_ARGS, "--output-dir", str(out)]) == 0
    capsys.readouterr()
    ckpt = out / "checkpoint.pt"
    ckpt.write_bytes(ckpt.read_bytes()[:500])  # truncated
    assert main([*_TINY_ARGS, "--output-dir", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert "checkpoint" in err and "cannot be read (corrupt or truncated?)" in err
    ckpt.write_bytes(np.random.default_rng(0).bytes(2000))  # random bytes
    assert main([*_TINY_ARGS, "--output-dir", str(out), "--resume"]) == 2
    assert "cannot be read" in capsys.readouterr().err


def test_train_analytic_shots_and_credit_overspend_are_stated(capsys, tmp_path):
    code = main([*_TINY_ARGS, "--shots", "0", "--output-dir", str(tmp_path / "a")])
    out = capsys.readouterr().out
    assert code == 0 and "training shots: 0 (analytic)" in out
    with pytest.warns(UserWarning):  # the credit mode's floor warning
        code = main([*_TINY_ARGS, "--credit", "adaptive", "--beta", "1e-6",
                     "--output-dir", str(tmp_path / "b")])
    out = capsys.readouterr().out
    eps = float(re.search(r"ε spent: ([0-9.]+) \(target 1.0\)", out).group(1))
    assert code == 0 and eps > 1.0
    assert f"WARNING: the proven ε {eps:.4f} exceeds the target --epsilon 1.0." in out
    assert "With --credit adaptive the added noise is a floor" in out
    # the credited ε and the shots executed are computed from the private batches: not shown
    assert "credited Q-ShiftDP ε" not in out and "and here it is above it" not in out
    assert ("training shots: 50 per circuit (the total grows with the private batch sizes: "
            "reported only with --diagnostics)") in out
    with pytest.warns(UserWarning):
        code = main([*_TINY_ARGS, "--credit", "adaptive", "--beta", "1e-6", "--diagnostics",
                     "--output-dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert code == 0
    credited = float(re.search(r"credited Q-ShiftDP ε \(Gaussian approximation; diagnostic, "
                               r"NOT protected\): ([0-9.]+)", out).group(1))
    diag = json.loads((tmp_path / "c" / "diagnostics.json").read_text())
    # printed with four decimals, rounded up (an upper bound stays one)
    assert 0 <= credited - diag["credited_epsilon"] < 1e-4
    shots = int(re.search(r"training shots: (\d+) \(50 per circuit\) \[diagnostic, NOT "
                          r"protected", out).group(1))
    assert shots == diag["summary"]["training_shots"] > 0


def test_train_classes_flag_selects_two_classes(capsys, tmp_path):
    with pytest.warns(UserWarning, match="Data-dependent preprocessing"):
        code = main([*_TINY_ARGS, "--dataset", "iris", "--preprocessing", "standardize_pca",
                     "--classes", "versicolor,virginica", "--output-dir", str(tmp_path / "r")])
    out = capsys.readouterr()
    assert code == 0, out.err
    # the console shows the statement's first line (with its caveat), the file the whole
    assert "NOT for those statistics" in out.out.splitlines()[1]
    statement = (tmp_path / "r" / "privacy_statement.txt").read_text()
    assert "Preprocessing (NOT protected)" in statement
    assert "These data-dependent statistics" not in out.out


# ------------------------------------------------------------------ train: every data set
_MULTI_ARGS = ["train", "--epochs", "1", "--layers", "1", "--shots", "100", "--test-size",
               "0.8", "--seeded-noise", "--no-progress"]


def _train_outputs(capsys, tmp_path, *argv):
    out_dir = tmp_path / "run"
    code = main([*_MULTI_ARGS, *argv, "--output-dir", str(out_dir)])
    out = capsys.readouterr()
    assert code == 0, out.err
    metrics = json.loads((out_dir / "metrics.json").read_text())
    ledger = json.loads((out_dir / "ledger.json").read_text())
    acc = float(re.search(r"test accuracy: ([0-9.]+)", out.out).group(1))
    assert 0.0 <= acc <= 1.0 and acc == pytest.approx(metrics["test_accuracy"], abs=5e-5)
    eps = float(re.search(r"ε spent: ([0-9.]+) \(target 1.0\)", out.out).group(1))
    assert 0 < eps <= 1.0 and metrics["epsilon"] <= ledger["target_epsilon"] == 1.0
    assert ledger["preprocessing_note"] is None  # fixed ranges: data-independent
    assert "NOT protected" not in out.out
    # the statement (in the run directory; the console has its first line) describes the
    # preprocessing, without the data-dependent clipped count
    statement = (out_dir / "privacy_statement.txt").read_text(encoding="utf-8")
    assert "(data-independent); fixed before seeing the data, so the guarantee covers the " \
        "raw training examples." in statement
    assert "values outside clipped:" not in statement + out.out
    return out.out, metrics, ledger


@pytest.mark.parametrize("dataset, n_classes, mapping, n_train", [
    ("iris", 3, "'setosa' → 0, 'versicolor' → 1, 'virginica' → 2", 30),
    ("wine", 3, "'class_0' → 0, 'class_1' → 1, 'class_2' → 2", 35),
    ("breast_cancer", 2, "'malignant' → -1, 'benign' → +1", 113),
])
def test_train_sklearn_sets_with_fixed_ranges(capsys, tmp_path, dataset, n_classes, mapping,
                                              n_train):
    out, _, ledger = _train_outputs(capsys, tmp_path, "--dataset", dataset)
    assert f"classes: {n_classes}; label mapping: {mapping}" in out
    prov = ledger["extra"]["provenance"]
    assert prov["n_classes"] == n_classes and prov["label_mapping"] == mapping
    assert prov["training_examples"] == ledger["dataset_size"] == n_train
    loss = "softmax cross-entropy" if n_classes > 2 else "linear loss"
    assert ledger["extra"]["sensitivity"]["loss"] == loss
    assert len(ledger["extra"]["sensitivity"]["measurement_bounds"]) == (
        n_classes if n_classes > 2 else 1)


def test_train_digits_ten_classes_on_eight_qubits(capsys, tmp_path):
    out, _, ledger = _train_outputs(capsys, tmp_path, "--dataset", "digits", "--classes", "all",
                                    "--qubits", "8", "--test-size", "0.9")
    assert "classes: 10; label mapping: '0' → 0, '1' → 1," in out and "'9' → 9" in out
    sens = ledger["extra"]["sensitivity"]
    assert len(sens["measurement_bounds"]) == 10 and sens["loss_grad_bounds"][0] == 2 * 5.0
    assert ledger["extra"]["clipping"]["mode"] == "public"
    assert ledger["extra"]["clipping"]["initial_clip_norm"] <= sens["delta"]


def test_train_digits_ten_classes_needs_qubits(capsys, tmp_path):
    code = main([*_MULTI_ARGS, "--dataset", "digits", "--classes", "all",
                 "--output-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "`--classes` = 10 needs at least 8 qubits (K <= 2 * qubits - 1" in err
    assert "Found `--qubits`=4." in err
    code = main([*_MULTI_ARGS, "--dataset", "iris", "--qubits", "1", "--feature-range", "0:8",
                 "--output-dir", str(tmp_path / "r2")])
    err = capsys.readouterr().err
    assert code == 2 and "`--classes` = 3 needs at least 2 qubits" in err


def test_train_csv_string_labels_and_feature_range(capsys, tmp_path):
    rng = np.random.default_rng(0)
    lines = ["width,species,height,depth"]
    for i in range(90):
        k = i % 3
        lines.append(f"{rng.uniform(0, 4) + 3 * k:.3f},{('oak', 'ash', 'elm')[k]},"
                     f"{rng.uniform(0, 10):.3f},{rng.uniform(-1, 1):.3f}")
    path = tmp_path / "trees.csv"
    path.write_text("\n".join(lines) + "\n")
    out, _, ledger = _train_outputs(
        capsys, tmp_path, "--dataset", "csv", "--csv", str(path), "--label-column", "species",
        "--feature-range", "0:12,0:10,-1:1", "--qubits", "3", "--classes", "oak,ash,elm")
    assert "classes: 3; label mapping: 'oak' → 0, 'ash' → 1, 'elm' → 2" in out
    assert ledger["extra"]["provenance"]["feature_ranges"] == [[0, 12], [0, 10], [-1, 1]]
    # one range for every column, sorted labels by default
    capsys.readouterr()
    code = main([*_MULTI_ARGS, "--dataset", "csv", "--csv", str(path), "--label-column",
                 "species", "--feature-range=-1:12", "--qubits", "2", "--output-dir",
                 str(tmp_path / "r2")])  # a negative LO needs the = form (argparse)
    out = capsys.readouterr().out
    assert code == 0 and "label mapping: 'ash' → 0, 'elm' → 1, 'oak' → 2" in out


@pytest.mark.parametrize("argv, message", [
    (["--feature-range", "1:0"], "argument --feature-range: needs finite LO < HI in every pair"),
    (["--feature-range", "a:b"], "argument --feature-range: must be LO:HI or LO1:HI1,LO2:HI2"),
    (["--classes", "setosa"], "argument --classes: must be two classes NEGATIVE,POSITIVE, "
                              "three or more A,B,C,... or 'all'"),
    (["--feature-range", "0:1,0:2"], "`--feature-range` must be a pair (low, high) or a "
                                     "sequence of 4 pairs"),
    (["--loss", "linear"], "`--loss`='linear' is for two classes"),
])
def test_train_multiclass_flag_errors(capsys, tmp_path, argv, message):
    code = main([*_MULTI_ARGS, "--dataset", "iris", *argv, "--output-dir", str(tmp_path / "r")])
    assert code == 2 and message in capsys.readouterr().err


def test_version(capsys):
    import pennylane_qshiftdp

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"qshiftdp {pennylane_qshiftdp.__version__}"


def test_train_clip_above_the_certified_bound_warns(capsys, tmp_path):
    # 2 qubits, 1 layer, <Z0>, linear loss: Δ = sqrt(6) (6 weights, each |∂f/∂θ| ≤ 1)
    with pytest.warns(UserWarning, match=r"--max-grad-norm 1000000000.0 is above the certified "
                                         r"bound Δ = 2.44949 .* 4.08e\+08 times"):
        code = main([*_TINY_ARGS, "--max-grad-norm", "1e9", "--skip-plan-check",
                     "--output-dir", str(tmp_path)])
    assert code == 0, capsys.readouterr().err


def test_help_and_argument_errors_import_no_heavy_package():
    """``qshiftdp --help``, each subcommand's --help and a usage error need neither torch,
    PennyLane, Opacus nor SciPy (they answer in well under a second)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from pennylane_qshiftdp.app.cli import main\n"
            "codes = [main(a) for a in (['--help'], ['train', '--help'], ['audit', '--help'],"
            " ['noise', '--help'], ['epsilon', '--help'], ['certify', '--help'],"
            " ['predict', '--help'], ['train', '--bogus'])]\n"
            "print(codes, [m for m in ('torch', 'pennylane', 'opacus', 'scipy') "
            "if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0, 0, 0, 0, 2] []"


def test_accountant_choices_are_the_calibration_accountants():
    from pennylane_qshiftdp.accountants import calibration
    from pennylane_qshiftdp.app import cli

    assert cli.ACCOUNTANT_CHOICES == tuple(calibration.ACCOUNTANTS)


def test_train_warns_when_it_predicts_the_majority_class(capsys, tmp_path):
    """breast_cancer (test split 90 of 143 benign) with the tiny settings ends predicting one
    class: the result line adds the balanced accuracy, and a WARNING line says so (once)."""
    code = main([*_TINY_ARGS, "--dataset", "breast_cancer", "--output-dir",
                 str(tmp_path / "r")])
    out = capsys.readouterr()
    assert code == 0, out.err
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    line = next(s for s in out.out.splitlines() if s.startswith("test accuracy:"))
    assert (f"balanced accuracy: {metrics['test_balanced_accuracy']:.4f} (imbalanced test "
            f"split: majority-class rate {90 / 143:.4f})") in line
    assert "on the 143 held-out test examples" in line
    warning = [s for s in out.out.splitlines() if s.startswith("WARNING:")]
    assert warning == [f"WARNING: {metrics['majority_class_warning']}"]
    assert "the classifier predicts the majority class" in warning[0]
    assert f"majority-class rate {90 / 143:.4f}" in warning[0]
    assert "predicts the majority class" not in out.err  # not printed a second time


def test_train_balanced_split_prints_no_balanced_accuracy(capsys, tmp_path):
    """digits 0 vs 1 (45/45 test examples): the result line is the plain accuracy."""
    code = main([*_TINY_ARGS, "--qubits", "4", "--layers", "2", "--output-dir",
                 str(tmp_path / "r")])
    out = capsys.readouterr()
    assert code == 0, out.err
    line = next(s for s in out.out.splitlines() if s.startswith("test accuracy:"))
    assert "balanced accuracy" not in line and "WARNING: the classifier" not in out.out


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_batch_size_must_be_a_positive_integer_naming_the_flag(value, capsys):
    assert main(["train", "--batch-size", value]) == 2
    err = capsys.readouterr().err
    assert "argument --batch-size: must be a positive integer" in err and repr(value) in err


def test_audit_reports_progress_on_stderr_with_the_same_results(capsys):
    """issue 45 item 5: `qshiftdp audit` says what it runs (a line per configuration, a bar
    over its trials, its time) on stderr; stdout's JSON is that of --no-progress (but for the
    wall times)."""
    argv = ["audit", "--trials", "8", "--background", "zero", "shot", "--json"]
    docs, errs = [], []
    for extra in ([], ["--no-progress"]):
        assert main([*argv, *extra]) == 0
        out = capsys.readouterr()
        docs.append(json.loads(out.out))
        errs.append(out.err)
    for doc in docs:
        for row in doc["results"]:
            row.pop("seconds")
    assert docs[0] == docs[1] and len(docs[0]["results"]) == 2
    err = errs[0]
    first = ("audit 1/2: credit none, --max-grad-norm certified, Ns = 2, background zero: "
             "building the private step and calibrating its noise, then 8 trials on D and on "
             "D' ...")
    second = "audit 2/2: credit none, --max-grad-norm certified, Ns = 2, background shot"
    assert first in err and second in err and err.index(first) < err.index(second)
    assert "audit 1/2 trials:" in err and "/8 [" in err  # the tqdm bar over the trials
    assert "audit 1/2: done in " in err and "audit 2/2: done in " in err
    assert "audit " not in errs[1]
