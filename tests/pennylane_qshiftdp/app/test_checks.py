"""Every value error of ``qshiftdp train`` before the heavy imports (app.checks, issue 35).

The command line refuses a wrong setting before torch, PennyLane, Opacus, SciPy or
scikit-learn is imported: each case runs ``qshiftdp train`` in a fresh interpreter and checks
the message, the exit status and that none of those modules was loaded (no timing: the module
list is the proof). The in-process cases check that the job itself (``train``, the Python API)
gives the same refusals.
"""

import json
import re
import subprocess
import sys

import pytest

from pennylane_qshiftdp.app.checks import CREDIT_MODES, check_train_config
from pennylane_qshiftdp.app.config import TrainConfig

HEAVY = ("torch", "pennylane", "opacus", "scipy", "sklearn", "matplotlib")

#: (arguments of `qshiftdp train`, the message on stderr)
CASES = [
    (["--epsilon", "-1"], "`--epsilon` must be positive. Found -1.0."),
    (["--epsilon", "nan"], "`--epsilon` must be a positive number or inf (no noise). Found nan."),
    (["--delta", "1.5"], "`--delta` must be in (0, 1). Found 1.5."),
    (["--dataset", "nope"], "`--dataset` must be one of 'digits', 'breast_cancer', 'iris', "
                            "'wine', 'csv'. Found 'nope'."),
    (["--epochs", "0"], "`--epochs` must be positive and finite. Found 0.0."),
    (["--credit", "adaptive"], "`--beta` must be in (0, 1) for the adaptive and isotropic "
                               "credit modes (e.g. 1e-6, well below 1/N). Found 0.0."),
    (["--beta", "0.1"], "`--beta` must be 0 unless the credit mode is 'adaptive' or "
                        "'isotropic'. Found 0.1."),
    (["--credit", "depolarizing", "--proven-epsilon-factor", "1"],
     "`--proven-epsilon-factor` must be a finite number above 1"),
    (["--lr", "-0.5"], "`--lr` must be positive and finite. Found -0.5."),
    (["--test-size", "1.5"], "`--test-size` must be in (0, 1). Found 1.5."),
    (["--qubits", "16"], "`--qubits` must be at most 14 in the training job. Found 16."),
    (["--qubits", "5"], "`--qubits` must be one of 1, 2, 4, 8, 16, 32, 64 for "
                        "preprocessing='fixed' on 'digits'"),
    (["--depolarizing", "1.5"], "`--depolarizing` must be in [0, 1]. Found 1.5."),
    (["--depolarizing", "0.8"], "`--depolarizing` (PennyLane's q) must be in [0, 0.75]."),
    (["--depolarizing", "0.1", "--device", "default.qubit"],
     "`--depolarizing` > 0 needs a mixed-state simulator"),
    (["--variance-floor", "-1"], "`--variance-floor` must be non-negative and finite."),
    (["--classical-max-grad-norm", "0"], "`--classical-max-grad-norm` must be positive and "
                                         "finite. Found 0.0."),
    (["--seed", "-1"], "`--seed` must be a non-negative integer. Found -1."),
    (["--dataset", "iris", "--classes", "setosa,rose"],
     "`--classes` must be distinct classes of 'iris'; 'rose' is not one. Classes present: "
     "0 (setosa), 1 (versicolor), 2 (virginica)."),
    (["--dataset", "iris", "--loss", "linear"], "`--loss`='linear' is for two classes"),
    (["--dataset", "iris", "--feature-range", "0:1,0:2"],
     "`--feature-range` must be a pair (low, high) or a sequence of 4 pairs"),
    (["--feature-range", "0:16"], "`--feature-range` is not used with --dataset='digits'"),
    (["--dataset", "digits", "--classes", "all", "--model", "quantum"],
     "`--classes` = 10 needs at least 8 qubits"),
    (["--dataset", "wine", "--model", "quantum", "--credit", "adaptive", "--beta", "1e-6"],
     "`--credit`='adaptive' supports one output per example; a 3-class model has 3."),
    (["--model", "neuron", "--credit", "adaptive", "--beta", "1e-6"],
     "`--model`='neuron' does not support --credit 'adaptive'"),
    (["--dataset", "csv"], "`--csv` is required when --dataset='csv'. Found None."),
    (["--dataset", "csv", "--csv", "no-such.csv", "--label-column", "y"],
     "`--csv` must be an existing file. Found 'no-such.csv'."),
    (["--csv", "x.csv"], "`--csv` and `--label-column` are only used with --dataset='csv'."),
    (["--resume"], "--resume needs a checkpoint in `--output-dir`. Found none in"),
]


def _run_cli(argvs, tmp_path):
    """Run `qshiftdp train` once per argument list in one fresh interpreter; per case: exit
    status, stderr, stdout and the heavy modules loaded so far."""
    code = f"""
import contextlib, io, json, sys
from pennylane_qshiftdp.app.cli import main
out = []
for argv in {argvs!r}:
    err, std = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(std):
        status = main(["train", *argv, "--output-dir", {str(tmp_path / "run")!r}])
    out.append([status, err.getvalue(), std.getvalue(),
                [m for m in {HEAVY!r} if m in sys.modules]])
print(json.dumps(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_value_error_comes_before_any_heavy_import(tmp_path):
    results = _run_cli([argv for argv, _ in CASES], tmp_path)
    for (argv, message), (status, err, out, heavy) in zip(CASES, results, strict=True):
        assert status == 2, (argv, err)
        assert err.startswith("qshiftdp train: error: ") and message in err, (argv, err)
        assert len(err.strip().splitlines()) == 1, (argv, err)  # one line, no warning first
        assert out == "", (argv, out)
        assert heavy == [], (argv, heavy)  # refused before torch, PennyLane, Opacus, ...
    assert not (tmp_path / "run").exists()  # nothing created


def test_an_existing_run_is_refused_before_any_heavy_import(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "ledger.json").write_text("{}")
    [(status, err, _, heavy)] = _run_cli([[]], tmp_path)
    assert status == 2 and heavy == []
    assert "`--output-dir` " in err and "already holds a run (ledger.json or checkpoint.pt)" in err


def test_csv_header_checks_need_no_data_import(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,label\n1,2,x\n3,4,y\n")
    results = _run_cli([["--dataset", "csv", "--csv", str(path), "--label-column", "lab"],
                        ["--dataset", "csv", "--csv", str(path), "--label-column", "label",
                         "--feature-range", "0:1,0:1,0:1"]], tmp_path)
    (s1, e1, _, h1), (s2, e2, _, h2) = results
    assert s1 == s2 == 2 and h1 == h2 == []
    assert "`--label-column` 'lab' is not a column of" in e1 and "Columns: 'a', 'b', 'label'" in e1
    assert "a sequence of 2 pairs, one per column" in e2


@pytest.mark.parametrize("argv, message", CASES[:8])
def test_the_python_api_refuses_the_same_settings_first(argv, message, tmp_path):
    """train() runs the same checks first (the messages name the fields there)."""
    from pennylane_qshiftdp.app.cli import _flag_names, build_parser

    args = build_parser().parse_args(["train", *argv, "--output-dir", str(tmp_path / "r")])
    from pennylane_qshiftdp.app.cli import _train_config

    config = _train_config(args)
    with pytest.raises(ValueError) as err:
        check_train_config(config)
    assert message in _flag_names(str(err.value))


def test_valid_settings_pass_and_tell_the_number_of_classes(tmp_path):
    assert check_train_config(TrainConfig()) == 2
    assert check_train_config(TrainConfig(dataset="wine")) == 3
    assert check_train_config(TrainConfig(dataset="digits", classes="all", qubits=8)) == 10
    assert check_train_config(TrainConfig(epsilon=float("inf"))) == 2
    path = tmp_path / "t.csv"
    path.write_text("a,b,label\n1,2,x\n3,4,y\n")
    assert check_train_config(TrainConfig(dataset="csv", csv_path=str(path),
                                          label_column="label", feature_range=(0, 5))) is None


def test_credit_modes_are_the_library_modes():
    from pennylane_qshiftdp.credit.shot_noise import CREDIT_MODES as LIBRARY

    assert CREDIT_MODES == LIBRARY


def test_bundled_shapes_are_the_data_sets():
    """check_task's a-priori shapes of the scikit-learn sets are those sets' shapes."""
    from sklearn import datasets

    from pennylane_qshiftdp.app import data

    for name, (columns, names) in data._BUNDLED_SHAPES.items():
        bunch = getattr(datasets, f"load_{name}")()
        assert bunch.data.shape[1] == columns
        assert names == {int(i): str(t) for i, t in enumerate(bunch.target_names)}
        assert sorted(set(bunch.target.tolist())) == sorted(names)


def test_check_task_and_load_dataset_give_the_same_message():
    from pennylane_qshiftdp.app.data import check_task, load_dataset

    for kwargs in ({"name": "iris", "classes": ("setosa", "rose")},
                   {"name": "wine", "feature_range": ((0, 1),) * 3},
                   {"name": "digits", "n_features": 3}):
        with pytest.raises(ValueError) as a:
            check_task(**kwargs)
        with pytest.raises(ValueError, match=re.escape(str(a.value))):
            load_dataset(**kwargs)
