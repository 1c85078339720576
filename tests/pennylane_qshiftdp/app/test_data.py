"""Tests for pennylane_qshiftdp.data."""

import dataclasses
import math
import re

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pennylane_qshiftdp.app.data import (
    DIGITS_POOLING_GRIDS,
    FEATURE_RANGES,
    IRIS_FEATURE_RANGES,
    LABEL_SET_NOTE,
    WINE_FEATURE_RANGES,
    Dataset,
    load_dataset,
)
from pennylane_qshiftdp.exceptions import PrivacyWarning

pytestmark = pytest.mark.filterwarnings("ignore::pennylane_qshiftdp.exceptions.PrivacyWarning")


def check_dataset(ds: Dataset, n_features: int, labels: int = 2):
    for X in (ds.X_train, ds.X_test):
        assert X.dtype == np.float64 and X.ndim == 2 and X.shape[1] == n_features
        assert np.all(X >= 0.0) and np.all(X <= math.pi)
    for y in (ds.y_train, ds.y_test):
        assert y.dtype == np.float64
        expected = {-1.0, 1.0} if labels == 2 else {float(k) for k in range(labels)}
        assert set(np.unique(y).tolist()) == expected
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
    @pytest.mark.parametrize("name, n_train, n_classes, n_values",
                             [("breast_cancer", 426, 2, 569 * 30), ("iris", 112, 3, 150 * 4),
                              ("wine", 133, 3, 178 * 13)])
    def test_fixed_with_shipped_ranges(self, name, n_train, n_classes, n_values):
        """Default ranges (published DESCR extremes, rounded outward) contain every value."""
        ds = load_dataset(name)
        check_dataset(ds, 4, labels=n_classes)
        assert ds.n_train == n_train and ds.n_classes == n_classes
        assert ds.preprocessing_note is None and ds.data_dependent_preprocessing is False
        assert ds.clipped_values == 0
        assert f"(values outside clipped: 0 of {n_values} values)" in ds.description
        assert "(data-independent)" in ds.description
        assert len(ds.feature_ranges) == {"breast_cancer": 30, "iris": 4, "wine": 13}[name]
        assert ds.feature_ranges == FEATURE_RANGES[name]

    def test_wine_fixed_values_are_group_means(self):
        """13 wine columns → 4 features: groups of 4/3/3/3 consecutive scaled columns."""
        from sklearn.datasets import load_wine

        ds = load_dataset("wine", test_size=0.25, seed=0)
        raw = load_wine().data
        lo = np.array([r[0] for r in WINE_FEATURE_RANGES])
        hi = np.array([r[1] for r in WINE_FEATURE_RANGES])
        unit = (raw - lo) / (hi - lo)
        expected = np.stack([unit[:, 0:4].mean(1), unit[:, 4:7].mean(1), unit[:, 7:10].mean(1),
                             unit[:, 10:13].mean(1)], axis=1) * math.pi
        # every training row is one of the expected rows (the split only permutes/subsets)
        dist = np.abs(ds.X_train[:, None, :] - expected[None]).max(axis=2).min(axis=1)
        assert dist.max() < 1e-12
        assert ds.feature_names[0] == "mean(alcohol, malic_acid, ash, alcalinity_of_ash)"
        assert ds.feature_names[3] == "mean(hue, od280/od315_of_diluted_wines, proline)"
        assert "13 columns averaged in 4 consecutive groups of 4/3/3/3" in ds.description

    def test_iris_all_classes_mapping(self):
        ds = load_dataset("iris")
        assert ds.classes == (0, 1, 2)
        assert ds.class_names == ("setosa", "versicolor", "virginica")
        assert ds.label_mapping == {0: 0, 1: 1, 2: 2}
        assert ds.label_mapping_text() == "'setosa' → 0, 'versicolor' → 1, 'virginica' → 2"
        assert sorted(set(ds.y_train.tolist())) == [0.0, 1.0, 2.0]
        assert "3-class task setosa (0), versicolor (1), virginica (2)" in ds.description

    def test_class_order_and_names(self):
        ds = load_dataset("iris", classes=("virginica", 0, "versicolor"))
        assert ds.classes == (2, 0, 1)
        assert ds.label_mapping_text() == "'virginica' → 0, 'setosa' → 1, 'versicolor' → 2"
        from sklearn.datasets import load_iris

        # the first training example's label follows the declared order
        raw = load_iris()
        row = np.where(np.all(np.isclose(
            np.clip((raw.data - np.array([r[0] for r in IRIS_FEATURE_RANGES]))
                    / np.array([r[1] - r[0] for r in IRIS_FEATURE_RANGES]), 0, 1) * math.pi,
            ds.X_train[0]), axis=1))[0][0]
        assert ds.y_train[0] == {2: 0.0, 0: 1.0, 1: 2.0}[int(raw.target[row])]

    def test_binary_mapping_text(self):
        ds = load_dataset("breast_cancer")
        assert ds.label_mapping == {0: -1, 1: 1}
        assert ds.label_mapping_text() == "'malignant' → -1, 'benign' → +1"

    def test_digits_ten_classes_eight_features(self):
        ds = load_dataset("digits", classes="all", n_features=8)
        check_dataset(ds, 8, labels=10)
        assert ds.n_train + ds.n_test == 1797 and ds.n_classes == 10
        assert np.bincount(ds.y_train.astype(int)).min() >= 130  # stratified
        assert ds.preprocessing_note is None

    @pytest.mark.parametrize(
        "name, n_train", [("breast_cancer", 426), ("iris", 112), ("wine", 133), ("digits", 270)]
    )
    def test_standardize_pca(self, name, n_train):
        with pytest.warns(PrivacyWarning, match="NOT protected"):
            ds = load_dataset(name, preprocessing="standardize_pca")
        check_dataset(ds, 4, labels=ds.n_classes)
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

    @pytest.mark.parametrize("classes", [(0, 5), (0, "tulip"), (0, 1, 7)])
    def test_classes_not_in_data_set(self, classes):
        msg = (
            f"`classes` must be distinct classes of 'iris'; {classes[-1]!r} is not one. "
            "Classes present: 0 (setosa), 1 (versicolor), 2 (virginica)."
        )
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("iris", preprocessing="standardize_pca", classes=classes)

    @pytest.mark.parametrize("classes", [(1,), "some", 3])
    def test_classes_malformed(self, classes):
        msg = ("`classes` must be a pair (negative, positive), a list of three or more "
               f"classes, or 'all'. Found {classes!r}.")
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset(classes=classes)

    def test_classes_not_distinct(self):
        for classes in ((1, 1), (0, 1, 0)):
            msg = f"`classes` must be distinct classes. Found {classes!r}."
            with pytest.raises(ValueError, match=re.escape(msg)):
                load_dataset(classes=classes)

    def test_three_digit_classes(self):
        ds = load_dataset(classes=(3, 1, 2))
        assert ds.classes == (3, 1, 2) and ds.n_classes == 3
        assert sorted(set(ds.y_train.tolist())) == [0.0, 1.0, 2.0]


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
        msg = ("preprocessing='fixed' needs an a-priori range for every feature, and 'csv' has "
               "none: declare them with `feature_range=(low, high)`")
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=path, label_column="label", n_features=2)

    @pytest.mark.parametrize("classes", [None, "all"])
    def test_a_label_set_read_from_the_data_is_stated_as_not_protected(self, tmp_path, classes):
        """One example of an otherwise absent label changes K, the loss and the label mapping:
        read from the data, the label set is treated as public and stated as NOT protected."""
        text = "a,y\n" + "".join(f"{v},{c}\n" for v, c in [(0, "u"), (1, "v")] * 6)
        path = write_csv(tmp_path / "l.csv", text)
        with pytest.warns(PrivacyWarning, match="Data-dependent label set"):
            ds = load_dataset("csv", csv_path=path, label_column="y", feature_range=(0, 1),
                              n_features=1, test_size=0.5, classes=classes)
        assert ds.preprocessing_note == LABEL_SET_NOTE
        assert "NOT protected" in ds.preprocessing_note
        declared = load_dataset("csv", csv_path=path, label_column="y", feature_range=(0, 1),
                                n_features=1, test_size=0.5, classes=("u", "v"))
        assert declared.preprocessing_note is None

    def test_feature_range_exact_values_and_clipping(self, tmp_path):
        text = "a,b,c,y\n" + "".join(
            f"{a},{b},{c},{y}\n" for a, b, c, y in
            [(0, 10, 5, "u"), (2, 30, -1, "v"), (1, 20, 12, "u"), (4, 50, 0, "v")] * 4)
        path = write_csv(tmp_path / "r.csv", text)
        ranges = [(0, 4), (10, 50), (0, 10)]
        ds = load_dataset("csv", csv_path=path, label_column="y", feature_range=ranges,
                          n_features=3, test_size=0.5, classes=("u", "v"))
        assert ds.feature_names == ("a", "b", "c") and ds.classes == ("u", "v")
        rows = {(0.0, 0.0, 0.5): -1.0, (0.5, 0.5, 0.0): 1.0, (0.25, 0.25, 1.0): -1.0,
                (1.0, 1.0, 0.0): 1.0}
        for X, y in ((ds.X_train, ds.y_train), (ds.X_test, ds.y_test)):
            for xi, yi in zip(X / math.pi, y, strict=True):
                key = tuple(round(v, 12) for v in xi)
                assert rows[key] == yi
        # c = -1 (4 rows) and c = 12 (4 rows) are outside [0, 10]: clipped and counted
        assert ds.clipped_values == 8
        assert "(values outside clipped: 8 of 48 values)" in ds.description
        assert ds.preprocessing_note is None  # declared ranges and declared classes
        # grouping: 3 columns into 2 features = mean(a, b), c
        ds2 = load_dataset("csv", csv_path=path, label_column="y", feature_range=ranges,
                           n_features=2, test_size=0.5)
        assert ds2.feature_names == ("mean(a, b)", "c")
        got = {tuple(round(v, 12) for v in xi) for xi in np.vstack([ds2.X_train,
                                                                    ds2.X_test]) / math.pi}
        assert got == {(0.0, 0.5), (0.5, 0.0), (0.25, 1.0), (1.0, 0.0)}
        # one pair for all columns
        ds3 = load_dataset("csv", csv_path=path, label_column="y", feature_range=(0, 100),
                           n_features=1, test_size=0.5)
        got = {round(float(v), 12) for v in np.concatenate([ds3.X_train, ds3.X_test]).ravel()}
        assert got == {round(v * math.pi, 12) for v in
                       ((0 + 0.1 + 0.05) / 3, (0.02 + 0.3 + 0) / 3, (0.01 + 0.2 + 0.12) / 3,
                        (0.04 + 0.5 + 0) / 3)}

    @pytest.mark.parametrize("feature_range, detail", [
        ((1, 1), "found the pair (1, 1), which is not finite with low < high"),
        ([(0, 1)], "found 1 pairs for 2 columns"),
        ([(0, 1), (2, 1)], "found the pair (2, 1), which is not finite with low < high"),
        ([(0, 1), (0, math.inf)], "found the pair (0, inf), which is not finite with low < high"),
        ([(0, 1), ("a", 2)], "found the pair ('a', 2), which is not finite with low < high"),
    ])
    def test_bad_feature_range(self, tmp_path, feature_range, detail):
        path = write_csv(tmp_path / "d.csv", make_csv_text())
        msg = ("`feature_range` must be a pair (low, high) or a sequence of 2 pairs, one per "
               f"column, with finite low < high; {detail}")
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=path, label_column="label", n_features=2,
                         feature_range=feature_range)

    def test_feature_range_refusals(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text())
        msg = "`n_features` must be at most 2 (the number of features of 'csv') for " \
              "preprocessing='fixed'. Found 3."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=path, label_column="label", n_features=3,
                         feature_range=(0, 1))
        msg = "`feature_range` is only used with preprocessing='fixed'. Found (0, 1)."
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("csv", csv_path=path, label_column="label", n_features=2,
                         feature_range=(0, 1), preprocessing="standardize_pca")
        msg = "`feature_range` is not used with name='digits'"
        with pytest.raises(ValueError, match=re.escape(msg)):
            load_dataset("digits", feature_range=(0, 16))

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

    def test_string_labels_multi_class_sorted(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text(n=60, labels=("c", "a", "b")))
        ds = load_dataset(
            "csv", csv_path=path, label_column="label", preprocessing="standardize_pca",
            n_features=2,
        )
        check_dataset(ds, 2, labels=3)
        assert ds.classes == ("a", "b", "c")
        assert ds.label_mapping == {"a": 0, "b": 1, "c": 2}
        assert ds.label_mapping_text() == "'a' → 0, 'b' → 1, 'c' → 2"

    def test_string_labels_in_given_order(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text(n=60, labels=("c", "a", "b")))
        ds = load_dataset("csv", csv_path=path, label_column="label", classes=["c", "a", "b"],
                          feature_range=(-5, 5), n_features=2)
        assert ds.label_mapping == {"c": 0, "a": 1, "b": 2}
        # row i of the file has label ("c", "a", "b")[i % 3] -> 0, 1, 2
        lines = path.read_text().splitlines()[1:]
        f1 = np.array([float(r.split(",")[0]) for r in lines])
        lab = np.array([{"c": 0, "a": 1, "b": 2}[r.split(",")[1]] for r in lines])
        for xi, yi in zip(ds.X_train, ds.y_train, strict=True):
            i = np.argmin(np.abs(np.clip((f1 + 5) / 10, 0, 1) * math.pi - xi[0]))
            assert lab[i] == yi

    def test_label_column_single_class(self, tmp_path):
        path = write_csv(tmp_path / "d.csv", make_csv_text(labels=("a",)))
        msg = "The labels of 'csv' must hold at least two classes, but 1 class was found: 'a'."
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


def test_csv_numeric_labels_are_shown_as_written(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text("a,label\n" + "".join(f"{i / 40:.3f},{1 if i % 2 else 2}\n"
                                          for i in range(40)))
    ds = load_dataset("csv", csv_path=path, label_column="label", feature_range=(0, 1),
                      classes=(1, 2), n_features=1)
    assert ds.label_mapping_text() == "'1' → -1, '2' → +1"


def test_csv_rows_of_other_classes_are_reported(tmp_path):
    path = tmp_path / "three.csv"
    path.write_text("a,label\n" + "".join(f"{i / 30:.3f},{'lo mid hi'.split()[i % 3]}\n"
                                          for i in range(30)))
    with pytest.warns(UserWarning, match="keeps 20 of the CSV file's 30 rows: the 10 rows"):
        ds = load_dataset("csv", csv_path=path, label_column="label", feature_range=(0, 1),
                          classes=("lo", "hi"), n_features=1)
    assert ds.n_train + ds.n_test == 20
