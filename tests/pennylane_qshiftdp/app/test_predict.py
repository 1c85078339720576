"""A finished run's model on new data: `qshiftdp predict` and `load_run` (issue 35)."""

import csv
import json

import numpy as np
import pytest
from sklearn import datasets
from sklearn.model_selection import train_test_split

from pennylane_qshiftdp.app.cli import main
from pennylane_qshiftdp.app.predict import load_run

ARGS = ["train", "--epochs", "2", "--seeded-noise", "--no-progress"]


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


@pytest.fixture(scope="module")
def iris_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("predict") / "iris"
    assert main([*ARGS, "--dataset", "iris", "--output-dir", str(out)]) == 0
    bunch = datasets.load_iris()
    # the job's own held-out split (stratified, seed 0, test_size 0.25): raw rows
    _, x_test, _, y_test = train_test_split(bunch.data, bunch.target, test_size=0.25,
                                            random_state=0, stratify=bunch.target)
    return out, bunch, x_test, y_test


def test_predict_reproduces_the_runs_test_accuracy_from_raw_rows(iris_run, tmp_path, capsys):
    out, bunch, x_test, y_test = iris_run
    capsys.readouterr()
    path = tmp_path / "test.csv"
    names = list(bunch.target_names)
    # columns by name, in another order, with the label column last
    header = [*reversed(bunch.feature_names), "species"]
    _write_csv(path, header, [[*reversed(row), names[t]] for row, t in zip(x_test, y_test,
                                                                               strict=True)])
    assert main(["predict", "--run", str(out), "--csv", str(path), "--label-column",
                 "species"]) == 0
    captured = capsys.readouterr()
    predicted = captured.out.split()
    assert predicted[0] == "prediction" and len(predicted) == len(y_test) + 1
    metrics = json.loads((out / "metrics.json").read_text())
    accuracy = np.mean([p == names[t] for p, t in zip(predicted[1:], y_test, strict=True)])
    assert accuracy == pytest.approx(metrics["test_accuracy"], abs=1e-12)
    assert f"accuracy: {metrics['test_accuracy']:.4f} on {len(y_test)} rows" in captured.err


def test_library_call_and_output_file(iris_run, tmp_path, capsys):
    out, bunch, x_test, _ = iris_run
    run = load_run(out)
    assert run.class_names == ("setosa", "versicolor", "virginica")
    assert run.feature_names == tuple(bunch.feature_names)
    direct = run.predict(x_test)
    path = tmp_path / "new.csv"
    _write_csv(path, ["a", "b", "c", "d"], x_test.tolist())  # unnamed columns: in order
    assert main(["predict", "--run", str(out), "--csv", str(path), "--output",
                 str(tmp_path / "p.csv")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "p.csv", encoding="utf-8")))
    assert [r["prediction"] for r in rows] == direct
    assert "predictions written to" in capsys.readouterr().out


def test_binary_digits_run(tmp_path):
    out = tmp_path / "digits"
    assert main([*ARGS, "--qubits", "2", "--layers", "1", "--shots", "50",
                 "--output-dir", str(out)]) == 0
    bunch = datasets.load_digits()
    keep = bunch.target < 2
    run = load_run(out)
    assert run.class_names == ("0", "1") and len(run.feature_names) == 64
    predicted = run.predict(bunch.data[keep])
    assert set(predicted) <= {"0", "1"}
    assert np.mean([p == str(t) for p, t in zip(predicted, bunch.target[keep],
                                                 strict=True)]) > 0.5


@pytest.mark.parametrize("argv, message", [
    (["--run", "nowhere", "--csv", "x.csv"], "--run must be a `qshiftdp train` output "
                                             "directory holding checkpoint.pt"),
])
def test_errors_name_the_argument(argv, message, capsys):
    assert main(["predict", *argv]) == 2
    assert message in capsys.readouterr().err


def test_wrong_columns_are_refused(iris_run, tmp_path, capsys):
    out = iris_run[0]
    path = tmp_path / "bad.csv"
    _write_csv(path, ["a", "b"], [[1, 2]])
    assert main(["predict", "--run", str(out), "--csv", str(path)]) == 2
    err = capsys.readouterr().err
    assert "has 2 feature columns; the run reads 4" in err
