"""Messages that name the cause: feature ranges that clip the data (issue 35)."""

from types import SimpleNamespace

import numpy as np
import pytest

from pennylane_qshiftdp.app.cli import main
from pennylane_qshiftdp.app.data import load_dataset
from pennylane_qshiftdp.app.metrics import clipping_cause, majority_class_warning

ARGS = ["train", "--epochs", "2", "--seeded-noise", "--no-progress"]


def test_test_split_clipping_is_counted_on_held_out_rows_only():
    data = load_dataset("iris", feature_range=((5.0, 7.0), (2.5, 4.0), (2.0, 6.0), (0.5, 2.0)))
    raw = load_dataset("iris", feature_range=(0, 100))
    assert raw.test_clipped_fraction == 0.0 and raw.test_clipped_columns == ()
    assert 0.0 < data.test_clipped_fraction < 0.5 and data.test_clipped_columns == ()
    wrong = load_dataset("iris", feature_range=(100, 200))
    assert wrong.test_clipped_fraction == 1.0
    assert wrong.test_clipped_columns == tuple(wrong.raw_feature_names)
    assert np.allclose(wrong.X_train, 0.0)  # every angle at the bound: nothing to learn


def test_the_cause_replaces_the_generic_advice():
    cause = clipping_cause(SimpleNamespace(test_clipped_fraction=1.0, test_clipped_columns=()))
    text = majority_class_warning(0.333, 0.333, 0.333, 3, cause=cause)
    assert "Likely cause: every feature value of the held-out test split" in text
    assert "try more epochs" not in text
    assert clipping_cause(SimpleNamespace(test_clipped_fraction=0.1,
                                          test_clipped_columns=())) is None
    partial = clipping_cause(SimpleNamespace(test_clipped_fraction=0.25,
                                             test_clipped_columns=("petal width (cm)",)))
    assert partial.startswith("25 % of the held-out test split's feature values lie outside "
                              "their declared ranges (every value of 1 column(s): "
                              "'petal width (cm)')")


def test_wrong_ranges_are_named_in_the_stuck_run_warning(tmp_path, capsys):
    assert main([*ARGS, "--dataset", "iris", "--feature-range=100:200",
                 "--output-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    warning = [line for line in out.splitlines() if line.startswith("WARNING:")]
    assert len(warning) == 1
    assert "every feature value of the held-out test split lies outside its declared range" \
        in warning[0]
    assert "--feature-range" in warning[0] and "try more epochs" not in warning[0]


@pytest.mark.parametrize("ranges", ["4:8,2:4.5,1:7,3:5"])
def test_a_column_wholly_outside_its_range_is_reported_even_when_the_run_learns(
        ranges, tmp_path, capsys):
    assert main([*ARGS, "--dataset", "iris", "--feature-range", ranges,
                 "--output-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "the feature ranges clip the data" in line]
    assert len(lines) == 1 and "'petal width (cm)'" in lines[0]
