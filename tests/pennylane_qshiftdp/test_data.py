"""Tests for pennylane_qshiftdp.data."""

import dataclasses
import math
import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pennylane_qshiftdp.data import DIGITS_POOLING_GRIDS, Dataset, load_dataset
from pennylane_qshiftdp.exceptions import PrivacyWarning

pytestmark = pytest.mark.filterwarnings("ignore::pennylane_qshiftdp.exceptions.PrivacyWarning")


def check_dataset(ds: Dataset, n_features: int):
    for X in (ds.X_train, ds.X_test):
        assert X.dtype == np.float64 and X.ndim == 2 and X.shape[1] == n_features
        assert np.all(X >= 0.0) and np.all(X <= math.pi)
    for y in (ds.y_train, ds.y_test):
        assert y.dtype == np.float64
        assert set(np.unique(y).tolist()) == {-1.0, 1.0}
    assert len(ds.X_train) == len(ds.y_train) and len(ds.X_test) == len(ds.y_test)
    assert len(ds.feature_names) == n_features
    assert ds.n_features == n_features and ds.n_train == len(ds.y_train)


class TestDigitsFixed:
    def test_default(self):
        ds = load_dataset()
        check_dataset(ds, 4)
        assert ds.name == "digits" and ds.classes == (0, 1)
        assert ds.n_train == 270 and ds.n_test == 90
        assert ds.data_dependent_preprocessing is False and ds.preprocessing_note is None
        assert "a-priori pixel range [0, 16]" in ds.description

    def test_frozen(self):
        ds = load_dataset()
        with pytest.raises(dataclasses.FrozenInstanceError):
            ds.name = "x"

    @pytest.mark.parametrize("n", sorted(DIGITS_POOLING_GRIDS))
    def test_pooling_sizes(self, n):
        check_dataset(load_dataset(n_features=n), n)

    def test_pooling_values_are_block_means(self):
        """Independent check: rebuild the features from the raw images (no split shuffling)."""
        ds = load_dataset(n_features=4, test_size=0.5, seed=3)
        raw = load_digits()
        mask = raw.target < 2
        imgs = raw.images[mask]
        quads = (
            np.stack(
                [
                    imgs[:, 2:6, 3:5].mean((1, 2)),
                    imgs[:, :, 0:3].mean((1, 2)),
                    imgs[:, :, 5:8].mean((1, 2)),
                    imgs[:, [0, 1, 6, 7], 2:6].mean((1, 2)),
                ],
                axis=1,
            )
            * math.pi
            / 16
        )
        labels = np.where(raw.target[mask] == 1, 1.0, -1.0)
        all_rows = {tuple(r) + (l,) for r, l in zip(np.round(quads, 12), labels, strict=True)}
        got = np.concatenate([ds.X_train, ds.X_test])
        got_y = np.concatenate([ds.y_train, ds.y_test])
        for r, l in zip(np.round(got, 12), got_y, strict=True):
            assert tuple(r) + (l,) in all_rows
        assert len(got) == mask.sum()

    def test_64_features_is_the_image(self):
        ds = load_dataset(n_features=64, test_size=0.5)
        assert ds.X_train.max() == pytest.approx(math.pi)

    def test_other_classes(self):
        ds = load_dataset(classes=(3, 8))
        check_dataset(ds, 4)
        assert ds.classes == (3, 8)
        assert "3 (-1) vs 8 (+1)" in ds.description

    def test_seeded_and_stratified(self):
        a, b = load_dataset(seed=5), load_dataset(seed=5)
        np.testing.assert_array_equal(a.X_train, b.X_train)
        np.testing.assert_array_equal(a.y_test, b.y_test)
        c = load_dataset(seed=6)
        assert not np.array_equal(a.X_train, c.X_train)
        # stratified: class balance equal in both splits up to rounding
        assert abs(np.mean(a.y_train == 1) - np.mean(a.y_test == 1)) < 0.02

    @pytest.mark.parametrize("n", [3, 5, 12, 128])
    def test_unsupported_n_features(self, n):
        msg = (
            "`n_features` must be one of 1, 2, 4, 8, 16, 32, 64 for preprocessing='fixed' on "
            f"'digits' (average pooling of the 8x8 image over a grid). Found {n}."
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(n_features=n)

    def test_non_positive_n_features(self):
        msg = "`n_features` must be a positive integer. Found 0."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(n_features=0)


class TestOtherSets:
    @pytest.mark.parametrize("name", ["breast_cancer", "iris", "wine"])
    def test_fixed_refused(self, name):
        msg = (
            f"preprocessing='fixed' needs an a-priori range for every feature, and {name!r} has "
            "none (its feature ranges would have to be estimated from the data). Use "
            "preprocessing='standardize_pca'"
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(name)

    @pytest.mark.parametrize(
        "name, n_train", [("breast_cancer", 426), ("iris", 75), ("wine", 97), ("digits", 270)]
    )
    def test_standardize_pca(self, name, n_train):
        with pytest.warns(PrivacyWarning, match="NOT protected"):
            ds = load_dataset(name, preprocessing="standardize_pca")
        check_dataset(ds, 4)
        assert ds.n_train == n_train
        assert ds.data_dependent_preprocessing is True
        assert "principal components" in ds.preprocessing_note
        assert "NOT protected" in ds.preprocessing_note
        # fitted on the training split: the training range is exactly [0, π] per component
        np.testing.assert_allclose(ds.X_train.min(0), 0.0, atol=1e-12)
        np.testing.assert_allclose(ds.X_train.max(0), math.pi, atol=1e-12)

    def test_pca_uses_training_split_only(self):
        """Changing test examples must not change the training features."""
        a = load_dataset("wine", preprocessing="standardize_pca", seed=1, test_size=0.25)
        b = load_dataset("wine", preprocessing="standardize_pca", seed=1, test_size=0.25)
        np.testing.assert_array_equal(a.X_train, b.X_train)

    def test_class_names(self):
        ds = load_dataset(
            "iris", preprocessing="standardize_pca", classes=("versicolor", "virginica")
        )
        assert ds.classes == (1, 2)
        assert "versicolor (-1) vs virginica (+1)" in ds.description

    def test_breast_cancer_label_mapping(self):
        ds = load_dataset("breast_cancer", preprocessing="standardize_pca")
        assert "malignant (-1) vs benign (+1)" in ds.description

    def test_too_many_pca_features(self):
        msg = (
            "`n_features` must be at most 4 (the number of features of 'iris') for "
            "preprocessing='standardize_pca'. Found 5."
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("iris", preprocessing="standardize_pca", n_features=5)

    @pytest.mark.parametrize("classes", [(0, 5), (0, "tulip")])
    def test_classes_not_in_data_set(self, classes):
        msg = (
            f"`classes` must be two distinct classes of 'iris'; {classes[1]!r} is not one. "
            "Classes present: 0 (setosa), 1 (versicolor), 2 (virginica)."
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("iris", preprocessing="standardize_pca", classes=classes)

    def test_classes_not_a_pair(self):
        msg = "`classes` must be a pair (negative, positive) of classes. Found (0, 1, 2)."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(classes=(0, 1, 2))
        msg = "`classes` must be two distinct classes. Found (1, 1)."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(classes=(1, 1))


class TestArguments:
    def test_unknown_name(self):
        msg = (
            "`name` must be one of 'digits', 'breast_cancer', 'iris', 'wine', 'csv'. Found 'mnist'."
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("mnist")

    def test_unknown_preprocessing(self):
        msg = "`preprocessing` must be one of 'fixed', 'standardize_pca'. Found 'pca'."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(preprocessing="pca")

    @pytest.mark.parametrize("test_size", [0.0, 1.0])
    def test_bad_test_size(self, test_size):
        msg = f"`test_size` must be in (0, 1). Found {test_size}."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(test_size=test_size)

    def test_bad_seed(self):
        msg = "`seed` must be a non-negative integer. Found -1."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(seed=-1)
        msg = "`seed` must be a non-negative integer. Found 1.5."
        with pytest.raises(TypeError, match=re.escape(msg)):
            load_dataset(seed=1.5)

    def test_csv_args_on_builtin(self):
        msg = "`csv_path` and `label_column` are only used with name='csv'. Found name='digits'."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(csv_path="x.csv")


def write_csv(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def make_csv_text(n=40, labels=("a", "b")):
    rng = np.random.default_rng(0)
    lines = ["f1,label,f2"]
    for i in range(n):
        lab = labels[i % len(labels)]
        lines.append(f"{rng.normal():.4f},{lab},{rng.normal() + (i % 2):.4f}")
    return "\n".join(lines) + "\n"


class TestCSV:
    def test_loads(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text())
        ds = load_dataset(
            "csv",
            csv_path=path,
            label_column="label",
            preprocessing="standardize_pca",
            n_features=2,
        )
        check_dataset(ds, 2)
        assert ds.classes == ("a", "b") and ds.name == "csv"
        assert ds.n_train == 30 and ds.n_test == 10

    def test_numeric_labels(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text(labels=("0", "1", "2")))
        ds = load_dataset(
            "csv",
            csv_path=path,
            label_column="label",
            preprocessing="standardize_pca",
            n_features=1,
            classes=(2, 0),
        )
        assert ds.classes == (2.0, 0.0)

    def test_fixed_refused(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text())
        msg = "preprocessing='fixed' needs an a-priori range"
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=path, label_column="label", n_features=2)

    def test_missing_values(self, tmp_path):
        text = make_csv_text().splitlines()
        text[3] = ",a,0.5"
        text[5] = "0.1,b,NA"
        path = write_csv(tmp_path / "d.csv", "\n".join(text))
        msg = f"The CSV file {str(path)!r} has missing values: column 'f1' on line 4 and 1 more."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(
                "csv", csv_path=path, label_column="label", preprocessing="standardize_pca"
            )

    def test_label_column_absent(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text())
        msg = f"`label_column` 'y' is not a column of {str(path)!r}. Columns: 'f1', 'label', 'f2'."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=path, label_column="y", preprocessing="standardize_pca")

    def test_label_column_not_binary(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text(labels=("a", "b", "c")))
        msg = (
            "The label column must be binary, but 3 classes were found: 'a', 'b', 'c'. "
            "Select two of them with `classes=(negative, positive)` (command line: "
            "--classes NEGATIVE,POSITIVE)."
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(
                "csv", csv_path=path, label_column="label", preprocessing="standardize_pca"
            )

    def test_label_column_single_class(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text(labels=("a",)))
        msg = "The label column must be binary, but 1 class was found: 'a'."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(
                "csv", csv_path=path, label_column="label", preprocessing="standardize_pca"
            )

    def test_non_numeric_feature(self, tmp_path):
        text = make_csv_text().splitlines()
        text[2] = "abc,a,0.5"
        path = write_csv(tmp_path / "d.csv", "\n".join(text))
        msg = f"Column 'f1' of {str(path)!r} must be numeric. Found 'abc' on line 3."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(
                "csv", csv_path=path, label_column="label", preprocessing="standardize_pca"
            )

    def test_ragged_row(self, tmp_path):
        text = make_csv_text().splitlines()
        text[2] = "0.1,a"
        path = write_csv(tmp_path / "d.csv", "\n".join(text))
        msg = f"Line 3 of {str(path)!r} has 2 fields; the header has 3."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(
                "csv", csv_path=path, label_column="label", preprocessing="standardize_pca"
            )

    def test_path_and_label_required(self, tmp_path):
        msg = "`csv_path` is required when name='csv'. Found None."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", label_column="y")
        msg = "`label_column` is required when name='csv'. Found None."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=tmp_path / "d.csv")
        missing = tmp_path / "nope.csv"
        msg = f"`csv_path` must be an existing file. Found {str(missing)!r}."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=missing, label_column="y")
