r"""Classification data sets for quantum classifiers, with honest preprocessing.

:func:`load_dataset` returns a :class:`Dataset` of angle-encoded features in [0, π] and labels
from scikit-learn's bundled data sets (never downloaded) or from a CSV file. Binary tasks (two
classes) have labels in {−1, +1}; tasks with :math:`K \ge 3` classes have class indices
0..K−1 (float64), in the order of :attr:`Dataset.classes`.

Two preprocessing modes:

- ``"fixed"``: data-independent, so the differential-privacy guarantee covers the whole
  pipeline from the raw data. It needs an a-priori range for every feature:

  * ``digits``: the pixels lie in [0, 16] by construction; the 8×8 image is average-pooled
    into ``n_features`` regions and each mean is mapped linearly from [0, 16] to [0, π].
  * any other data set: declared ranges :math:`[l_j, h_j]` (``feature_range``; for
    ``iris``, ``wine`` and ``breast_cancer`` defaults are shipped, :data:`FEATURE_RANGES`).
    Each raw column is scaled to :math:`u_j = \mathrm{clip}((x_j - l_j)/(h_j - l_j), 0, 1)`;
    if there are more columns than ``n_features``, consecutive columns are averaged in
    ``n_features`` groups (:func:`numpy.array_split` of the column indices: the first
    ``d mod n_features`` groups get one column more); the angle is :math:`\pi` times the
    group mean. Values outside their declared range are clipped (data-independent, so fine
    for privacy); :attr:`Dataset.clipped_values` counts them for the data owner's check.
- ``"standardize_pca"``: :class:`~sklearn.preprocessing.StandardScaler`, then
  :class:`~sklearn.decomposition.PCA` to ``n_features`` components, then a linear map of each
  component's training range to [0, π] (test values clipped), all fitted on the training split
  only. These statistics depend on the training data and are *not* protected by the guarantee;
  :attr:`Dataset.preprocessing_note` says so, for the privacy statement.

The train/test split is stratified and seeded (:func:`sklearn.model_selection.train_test_split`).
"""

from __future__ import annotations

import csv
import math
import numbers
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_positive_int, check_probability
from ..exceptions import PrivacyWarning

__all__ = [
    "DATASETS",
    "LABEL_SET_NOTE",
    "DIGITS_POOLING_GRIDS",
    "DIGITS_STROKE_REGIONS",
    "FEATURE_RANGES",
    "IRIS_FEATURE_RANGES",
    "WINE_FEATURE_RANGES",
    "BREAST_CANCER_FEATURE_RANGES",
    "PREPROCESSINGS",
    "Dataset",
    "check_task",
    "fixed_feature_map",
    "load_dataset",
]

#: Data-set names accepted by :func:`load_dataset`.
DATASETS = ("digits", "breast_cancer", "iris", "wine", "csv")

#: Preprocessing modes accepted by :func:`load_dataset`.
PREPROCESSINGS = ("fixed", "standardize_pca")

#: ``n_features`` → (rows, columns) of the pooling grid over the 8×8 ``digits`` image; each
#: region is a block of (8 / rows) × (8 / columns) pixels, ordered row-major. For 4 features the
#: fixed stroke regions of :data:`DIGITS_STROKE_REGIONS` are used instead of the 2×2 grid.
DIGITS_POOLING_GRIDS = {
    1: (1, 1),
    2: (1, 2),
    4: (2, 2),
    8: (2, 4),
    16: (4, 4),
    32: (8, 4),
    64: (8, 8),
}

#: The default 4-feature map of ``digits``: fixed stroke regions of the 8×8 image, as
#: (name, rows slice, cols slice or list). Chosen a priori from the geometry of hand-written
#: digits (a vertical centre stroke, left and right arcs, top and bottom caps); it uses no
#: statistic of the data, so the guarantee covers it. Digits 0 vs 1: logistic regression on
#: these features reaches 0.97 test accuracy, against 0.64 for 2×2 quadrants (measured on
#: scikit-learn's public copy of the data; for a private data set choose regions blind).
DIGITS_STROKE_REGIONS = (
    ("centre stroke (rows 2-5, cols 3-4)", slice(2, 6), slice(3, 5)),
    ("left arc (cols 0-2)", slice(0, 8), slice(0, 3)),
    ("right arc (cols 5-7)", slice(0, 8), slice(5, 8)),
    ("top and bottom caps (rows 0-1, 6-7; cols 2-5)", [0, 1, 6, 7], slice(2, 6)),
)

# The default feature ranges below are published properties of the public benchmark data sets:
# the "Summary Statistics" (Min, Max) of scikit-learn's DESCR of each data set (the UCI
# documentation), rounded OUTWARD: the minimum times 0.9 rounded down and the maximum times 1.1
# rounded up, to two significant digits (DESCR rounds, e.g. wine's colour-intensity minimum
# 1.28 is printed 1.3, hence the margin; a minimum printed with one significant digit, 0.001 or
# 0.002 in breast_cancer, gets the lower end 0). They are public knowledge about these benchmarks,
# which makes preprocessing='fixed' data-independent here. For a PRIVATE data set declare
# ranges from domain knowledge (units, instrument limits), never from the data itself: ranges
# read off the data leak it and are not covered by the guarantee.

#: Default ``iris`` ranges (cm): sepal length, sepal width, petal length, petal width.
IRIS_FEATURE_RANGES = ((3.8, 8.7), (1.8, 4.9), (0.9, 7.6), (0.09, 2.8))

#: Default ``wine`` ranges, in scikit-learn's column order (alcohol ... proline).
WINE_FEATURE_RANGES = (
    (9.9, 17.0), (0.66, 6.4), (1.2, 3.6), (9.5, 33.0), (63.0, 180.0), (0.88, 4.3),
    (0.3, 5.6), (0.11, 0.73), (0.36, 4.0), (1.1, 15.0), (0.43, 1.9), (1.1, 4.4),
    (250.0, 1900.0),
)

#: Default ``breast_cancer`` ranges, in scikit-learn's column order (30 columns: the means,
#: standard errors and worst values of ten nucleus measurements).
BREAST_CANCER_FEATURE_RANGES = (
    (6.2, 31.0), (8.7, 44.0), (39.0, 210.0), (120.0, 2800.0), (0.047, 0.18), (0.017, 0.38),
    (0.0, 0.47), (0.0, 0.23), (0.095, 0.34), (0.045, 0.11), (0.1, 3.2), (0.32, 5.4),
    (0.68, 25.0), (6.1, 600.0), (0.0, 0.035), (0.0, 0.15), (0.0, 0.44), (0.0, 0.059),
    (0.0072, 0.087), (0.0, 0.033), (7.1, 40.0), (10.0, 55.0), (45.0, 280.0),
    (160.0, 4700.0), (0.063, 0.25), (0.024, 1.2), (0.0, 1.4), (0.0, 0.33), (0.14, 0.74),
    (0.049, 0.23),
)

#: Shipped default ranges of preprocessing='fixed' per data set (see the note above).
FEATURE_RANGES = {
    "iris": IRIS_FEATURE_RANGES,
    "wine": WINE_FEATURE_RANGES,
    "breast_cancer": BREAST_CANCER_FEATURE_RANGES,
}

#: Default classes of the scikit-learn data sets: a (negative, positive) pair, or "all".
_DEFAULT_CLASSES = {"digits": (0, 1), "breast_cancer": (0, 1), "iris": "all", "wine": "all"}

#: The public shape of the scikit-learn data sets, known before loading them (a test checks it
#: against the data): raw columns and {label: target name}. :func:`check_task` uses it to
#: refuse bad settings without importing scikit-learn.
_BUNDLED_SHAPES = {
    "digits": (64, {i: str(i) for i in range(10)}),
    "breast_cancer": (30, {0: "malignant", 1: "benign"}),
    "iris": (4, {0: "setosa", 1: "versicolor", 2: "virginica"}),
    "wine": (13, {0: "class_0", 1: "class_1", 2: "class_2"}),
}

#: A-priori pixel range of scikit-learn's ``digits`` (4-bit counts of 4×4 sub-blocks).
_DIGITS_MAX = 16.0

#: CSV cells read as missing values (compared case-insensitively, after stripping).
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})

#: The preprocessing note of a CSV whose classes were read from the data (no ``classes``).
LABEL_SET_NOTE = (
    "the set of classes (and with it the model's number of outputs, its loss and the label "
    "mapping) was read from the training data, since no classes were declared: it is treated "
    "as public, like the number of examples, and is NOT protected by the differential-privacy "
    "guarantee (one example of an otherwise absent label changes it); declare the classes "
    "(`classes`, `--classes`) to cover it."
)

_PCA_NOTE = (
    "preprocessing='standardize_pca' fitted on the training split: the per-feature means and "
    "variances, the principal components, and the per-component minima and maxima used to scale "
    "features to angles are computed from the training data and are NOT protected by the "
    "differential-privacy guarantee."
)


@dataclass(frozen=True, eq=False)
class Dataset:
    r"""A classification data set, angle-encoded, split into train and test parts.

    Attributes:
        X_train: features of shape (n_train, n_features), float64, angles in [0, π].
        y_train: labels of shape (n_train,), float64: in {−1, +1} for two classes, class
            indices 0..K−1 for :math:`K \ge 3` classes.
        X_test: features of shape (n_test, n_features), float64, angles in [0, π].
        y_test: labels of shape (n_test,), float64, as ``y_train``.
        name: the data set's name (``"digits"``, ..., or ``"csv"``).
        feature_names: one name per feature column.
        data_dependent_preprocessing: ``True`` if preprocessing statistics were computed from
            the training data (then they are not protected by the DP guarantee).
        preprocessing_note: which statistics are not protected, or ``None`` if preprocessing
            is data-independent. Pass it to :class:`~pennylane_qshiftdp.PrivacyLedger`.
        description: a one-paragraph human-readable description.
        classes: the original class labels in model-label order: (negative, positive) for a
            binary task (mapped to −1, +1), else the labels mapped to 0, 1, ..., K−1.
        class_names: display names of ``classes`` (scikit-learn's target names, or the CSV
            labels as text).
        feature_ranges: the declared ``(low, high)`` per raw column used by
            preprocessing='fixed' (empty for digits and standardize_pca).
        clipped_values: how many raw values (train and test) fell outside their declared range
            and were clipped (a count over the data, for the data owner's check; not released
            by the training job).
        preprocessing: the preprocessing, described without any statistic of the data (for
            the privacy statement).
        test_clipped_fraction: the fraction of the held-out test split's raw values that fell
            outside their declared range (0 for digits and standardize_pca). Computed from the
            test examples only (never from training examples), like the test accuracy: the
            job names it as the cause when a run learns nothing.
        test_clipped_columns: the raw columns all of whose test values fell outside their
            declared range (each such column reaches the model as one or two constant angles).
        raw_feature_names: the raw columns' names, in order (the input of ``transform``).
        transform: the feature map, raw feature rows of shape (n, raw columns) → angles of shape
            (n, n_features) (``None`` where none applies); :func:`pennylane_qshiftdp.app.predict`
            uses it on new data.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str
    feature_names: tuple[str, ...]
    data_dependent_preprocessing: bool
    preprocessing_note: str | None
    description: str
    classes: tuple = ()
    class_names: tuple = ()
    feature_ranges: tuple = ()
    clipped_values: int = 0
    preprocessing: str = ""
    test_clipped_fraction: float = 0.0
    test_clipped_columns: tuple[str, ...] = ()
    raw_feature_names: tuple[str, ...] = ()
    transform: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def n_features(self) -> int:
        """Number of features (qubits for angle embedding)."""
        return int(self.X_train.shape[1])

    @property
    def n_train(self) -> int:
        """Number of training examples N."""
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        """Number of test examples."""
        return int(self.X_test.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes K (2 for a binary task)."""
        return len(self.classes)

    @property
    def label_mapping(self) -> dict:
        """Original label → model label: −1/+1 for two classes, else 0..K−1."""
        if self.n_classes == 2:
            return {self.classes[0]: -1, self.classes[1]: 1}
        return {c: i for i, c in enumerate(self.classes)}

    def label_mapping_text(self) -> str:
        """The mapping as text, e.g. ``'setosa' → 0, 'versicolor' → 1, 'virginica' → 2``."""
        names = self.class_names or tuple(str(c) for c in self.classes)
        return ", ".join(f"{n!r} → {v:+d}" if self.n_classes == 2 else f"{n!r} → {v}"
                         for n, v in zip(names, self.label_mapping.values(), strict=True))


def load_dataset(
    name: str = "digits",
    *,
    n_features: int | None = 4,
    seed: int = 0,
    test_size: float = 0.25,
    preprocessing: str = "fixed",
    classes=None,
    csv_path: str | os.PathLike | None = None,
    label_column: str | None = None,
    feature_range=None,
) -> Dataset:
    r"""Load a classification task with angle-encoded features.

    Data sets (all bundled with scikit-learn, never downloaded, or a local CSV file):

    - ``"digits"``: 8×8 images of handwritten digits; default classes ``(0, 1)``
      ("0 vs 1", 360 images); ``classes="all"`` is the 10-class task (use ``n_features=8``,
      a 2×4 pooling grid, and 8 qubits).
    - ``"breast_cancer"``: Wisconsin diagnostic, 30 features; classes ``(0, 1)`` =
      (malignant → −1, benign → +1).
    - ``"iris"``: 4 features; default: all 3 classes (setosa → 0, versicolor → 1,
      virginica → 2); ``classes=(1, 2)`` is the binary versicolor vs virginica task.
    - ``"wine"``: 13 features; default: all 3 classes (class_0, class_1, class_2 → 0, 1, 2).
    - ``"csv"``: the file ``csv_path`` with a header row; the column ``label_column`` holds
      the labels (numbers or strings), every other column must be numeric; no missing values.
      Without ``classes`` (or with ``"all"``) every label present is a class, in sorted order
      (two → binary): the label set is then read from the data, which the privacy statement
      says is not protected (:data:`LABEL_SET_NOTE`, a :class:`PrivacyWarning`); declare the
      classes to cover it.

    ``classes`` selects the task: a pair ``(a, b)`` is binary (``a`` → −1, ``b`` → +1); a list
    of three or more classes, or ``"all"`` (every class present, sorted), is a multi-class task
    with labels 0..K−1 in the given order. Classes are given by label or, for the scikit-learn
    sets, by target name such as ``"versicolor"``; other classes are dropped.

    Args:
        name: one of :data:`DATASETS`.
        n_features: number of output features (= qubits), ≥ 1. For ``"fixed"`` on digits one
            of 1, 2, 4, 8, 16, 32, 64 (average pooling over a grid of
            :data:`DIGITS_POOLING_GRIDS`; 4 uses :data:`DIGITS_STROKE_REGIONS`); otherwise at
            most the number of raw features. ``None``: every raw feature (64 pixels for
            digits), one column per feature.
        seed: seed of the stratified train/test split (an integer ≥ 0).
        test_size: fraction of examples in the test split, in (0, 1).
        preprocessing: ``"fixed"`` (data-independent, needs feature ranges: shipped for the
            scikit-learn sets, ``feature_range`` for a CSV file) or ``"standardize_pca"``
            (data-dependent, fitted on the training split).
        classes: a pair, a list of ≥ 3 classes, ``"all"``, or ``None`` for the default.
        csv_path: path of the CSV file (only with ``name="csv"``).
        label_column: name of the label column (only with ``name="csv"``).
        feature_range: declared raw ranges for ``"fixed"``: one ``(low, high)`` pair for every
            column, or a sequence of pairs, one per raw column (``low < high``, finite).
            Overrides the shipped defaults; not used for digits (its pixel range is [0, 16]).

    Returns:
        A :class:`Dataset` with float64 features in [0, π].

    Raises:
        ValueError: for an unknown data set or preprocessing (the choices are listed),
            ``"fixed"`` preprocessing without feature ranges, a malformed ``feature_range``
            (or one given with digits or standardize_pca), an unsupported ``n_features``,
            classes not in the data set or fewer than two, or a CSV file that is missing, has
            missing or non-numeric feature values, lacks the label column, or has one class.
        TypeError: if ``n_features`` or ``seed`` is not an integer.

    Warns:
        PrivacyWarning: for ``preprocessing="standardize_pca"`` (its statistics are not
            protected).

    References:
        Abadi et al., arXiv:1607.00133 (what DP-SGD protects: the training examples, not
        statistics computed outside the mechanism).

    Example:
        >>> ds = load_dataset("digits", n_features=4, seed=0)
        >>> ds.X_train.shape, ds.X_test.shape
        ((270, 4), (90, 4))
        >>> sorted(set(ds.y_train.tolist())), ds.data_dependent_preprocessing
        ([-1.0, 1.0], False)
        >>> bool(ds.X_train.min() >= 0 and ds.X_train.max() <= np.pi)
        True
        >>> iris = load_dataset("iris")
        >>> iris.n_classes, iris.label_mapping_text()
        (3, "'setosa' → 0, 'versicolor' → 1, 'virginica' → 2")
    """
    name, preprocessing, n_features, seed, test_size = _check_arguments(
        name, preprocessing, n_features, seed, test_size, csv_path, label_column)
    if name == "csv":
        X, labels, feature_names, label_names = _read_csv(csv_path, label_column)
        assert csv_path is not None  # _read_csv raised otherwise
        source = f"CSV file {os.fspath(csv_path)!r} (label column {label_column!r})"
    else:
        X, labels, feature_names, label_names = _load_sklearn(name)
        source = f"scikit-learn's bundled {name!r} data set"

    if n_features is None:
        n_features = X.shape[1]
    chosen, X, y = _select_classes(name, classes, X, labels, label_names)

    ranges = _check_columns(name, preprocessing, n_features, feature_range, X.shape[1])

    from sklearn.model_selection import train_test_split

    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )

    clipped, test_clipped = 0, 0.0
    test_columns: list[str] = []
    raw_names = list(feature_names)
    if preprocessing == "fixed":
        transform = fixed_feature_map(name, n_features, ranges)
    if preprocessing == "fixed" and name == "digits":
        X_train, names = _pool_digits(X_train, n_features)
        X_test, _ = _pool_digits(X_test, n_features)
        how = public_how = _digits_how(n_features)
        note = None
    elif preprocessing == "fixed":
        test_clipped, test_columns = _test_clipping(X_test, ranges, raw_names)
        X_train, names, c_train = _scale_and_group(X_train, ranges, n_features, feature_names)
        X_test, _, c_test = _scale_and_group(X_test, ranges, n_features, feature_names)
        clipped = c_train + c_test
        scaling = _scaling_how(n_features, X.shape[1], feature_range is not None)
        public_how = scaling.format("")  # the statement: no count over the data
        how = scaling.format(f": {clipped} of {X.size} values")
        note = None
    else:
        X_train, X_test, names, transform, how = _fit_pca(X_train, X_test, n_features, seed)
        public_how, note = how, _PCA_NOTE

    shown, task = _task_text(chosen, label_names)
    if name == "csv" and (classes is None or classes == "all"):
        note = _label_set_note(note)
    description = (
        f"{source}, {task}; {how}; {len(y_train)} train / {len(y_test)} test "
        f"examples (stratified split, test_size={test_size:g}, seed={seed})."
    )
    return Dataset(
        X_train=np.ascontiguousarray(X_train, dtype=np.float64),
        y_train=np.ascontiguousarray(y_train, dtype=np.float64),
        X_test=np.ascontiguousarray(X_test, dtype=np.float64),
        y_test=np.ascontiguousarray(y_test, dtype=np.float64),
        name=name,
        feature_names=tuple(names),
        data_dependent_preprocessing=note is not None,
        preprocessing_note=note,
        description=description,
        classes=tuple(_plain(c) for c in chosen),
        class_names=tuple(shown),
        feature_ranges=ranges,
        clipped_values=int(clipped),
        preprocessing=public_how,
        test_clipped_fraction=float(test_clipped),
        test_clipped_columns=tuple(test_columns),
        raw_feature_names=tuple(raw_names),
        transform=transform,
    )


def _check_arguments(name, preprocessing, n_features, seed, test_size, csv_path,
                     label_column) -> tuple:
    """:func:`load_dataset`'s argument checks: (name, preprocessing, n_features, seed,
    test_size), checked and normalised."""
    name = check_choice(name, "name", DATASETS)
    preprocessing = check_choice(preprocessing, "preprocessing", PREPROCESSINGS)
    if n_features is not None:
        n_features = check_positive_int(n_features, "n_features")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise (ValueError if isinstance(seed, numbers.Integral) else TypeError)(
            f"`seed` must be a non-negative integer. Found {seed!r}."
        )
    seed = int(seed)
    test_size = check_probability(test_size, "test_size", open_low=True, open_high=True)
    if name != "csv" and (csv_path is not None or label_column is not None):
        raise ValueError(
            f"`csv_path` and `label_column` are only used with name='csv'. Found name={name!r}."
        )
    return name, preprocessing, n_features, seed, test_size


def _select_classes(name: str, classes, X, labels, label_names) -> tuple:
    """(chosen classes, their rows of ``X``, labels ±1 for two classes or 0..K−1); warns (for
    :func:`load_dataset`'s caller) when a CSV file's rows of other classes are dropped."""
    chosen = _resolve_classes(name, classes, labels, label_names)
    mask = np.isin(labels, np.asarray(chosen, dtype=labels.dtype))
    if name == "csv" and not bool(mask.all()):
        warnings.warn(f"`classes` keeps {int(mask.sum())} of the CSV file's {len(mask)} rows: "
                      f"the {int((~mask).sum())} rows of other classes are not used.",
                      UserWarning, stacklevel=3)
    X = X[mask]
    if len(chosen) == 2:
        y = np.where(labels[mask] == chosen[1], 1.0, -1.0)
    else:
        index = {c: i for i, c in enumerate(chosen)}
        y = np.array([index[v] for v in labels[mask].tolist()], dtype=np.float64)
    return chosen, X, y


def _digits_how(n_features: int) -> str:
    """How the digits' pixels become ``n_features`` angles (the fixed pooling)."""
    rows, cols = DIGITS_POOLING_GRIDS[n_features]
    regions = (
        "fixed stroke regions (centre stroke, left arc, right arc, top/bottom caps)"
        if n_features == 4
        else f"a {rows}x{cols} grid of {8 // rows}x{8 // cols}-pixel blocks"
    )
    return (
        f"{n_features} features: average pooling over {regions}, mapped from the "
        f"a-priori pixel range [0, 16] to angles in [0, pi] (data-independent)"
    )


def _scaling_how(n_features: int, n_columns: int, declared: bool) -> str:
    """How fixed ranges scale ``n_columns`` columns into ``n_features`` angles (``{}``: where
    the count of clipped values goes)."""
    origin = ("declared `feature_range`" if declared else
              "shipped default ranges (published DESCR minima and maxima, rounded outward)")
    grouping = ("one column per feature" if n_features == n_columns else
                f"{n_columns} columns averaged in {n_features} consecutive groups of "
                f"{'/'.join(str(len(g)) for g in _groups(n_columns, n_features))}")
    return (f"{n_features} features: each column scaled from its {origin} to [0, 1] "
            f"(values outside clipped{{}}), {grouping}, times pi (data-independent)")


def _fit_pca(X_train, X_test, n_features: int, seed: int) -> tuple:
    """``standardize_pca`` fitted on the training split: (train, test, feature names, the
    transform, how in words); warns (for :func:`load_dataset`'s caller) that it is
    data-dependent."""
    if X_train.shape[0] <= n_features:
        raise ValueError(
            f"`n_features` must be below the number of training examples "
            f"({X_train.shape[0]}) for preprocessing='standardize_pca'. Found {n_features}."
        )
    X_train, X_test, names, transform = _standardize_pca(X_train, X_test, n_features, seed)
    how = (
        f"{n_features} features: standardisation, PCA and min-max scaling to angles in "
        f"[0, pi], fitted on the training split (data-dependent)"
    )
    warnings.warn(f"Data-dependent preprocessing: {_PCA_NOTE}", PrivacyWarning, stacklevel=3)
    return X_train, X_test, names, transform, how


def _label_set_note(note: str | None) -> str:
    """The preprocessing note with the CSV label set read from the data (not protected);
    warns (for :func:`load_dataset`'s caller)."""
    warnings.warn(f"Data-dependent label set: {LABEL_SET_NOTE}", PrivacyWarning, stacklevel=3)
    return LABEL_SET_NOTE if note is None else f"{note} Also, {LABEL_SET_NOTE}"


def _task_text(chosen, label_names) -> tuple[list[str], str]:
    """The classes' shown names and the task in words (binary ±1, or K classes 0..K−1)."""
    shown = [str(label_names.get(c, _plain(c))) for c in chosen]
    if len(chosen) == 2:
        return shown, f"binary task {shown[0]} (-1) vs {shown[1]} (+1)"
    return shown, f"{len(chosen)}-class task " + ", ".join(
        f"{n} ({i})" for i, n in enumerate(shown))


def _check_columns(name: str, preprocessing: str, n_features: int, feature_range,
                   n_columns: int) -> tuple:
    """The checks of ``n_features`` and ``feature_range`` against the raw column count;
    returns the declared ranges of preprocessing='fixed' (empty for digits and PCA)."""
    if preprocessing == "fixed" and name == "digits":
        if feature_range is not None:
            raise ValueError(
                f"`feature_range` is not used with name='digits' (its pixels lie in [0, 16] by "
                f"construction). Found {feature_range!r}."
            )
        if n_features not in DIGITS_POOLING_GRIDS:
            allowed = ", ".join(str(k) for k in DIGITS_POOLING_GRIDS)
            raise ValueError(
                f"`n_features` must be one of {allowed} for preprocessing='fixed' on 'digits' "
                f"(average pooling of the 8x8 image over a grid). Found {n_features}."
            )
        return ()
    if preprocessing == "fixed":
        if feature_range is None and name not in FEATURE_RANGES:
            raise ValueError(
                f"preprocessing='fixed' needs an a-priori range for every feature, and {name!r} "
                f"has none: declare them with `feature_range=(low, high)` for all columns or "
                f"one (low, high) pair per column (command line: --feature-range LO:HI or "
                f"LO1:HI1,LO2:HI2,...), from domain knowledge, never from the data. Or use "
                f"preprocessing='standardize_pca' (data-dependent: its statistics are then not "
                f"protected by the privacy guarantee)."
            )
        ranges = _check_feature_range(
            FEATURE_RANGES[name] if feature_range is None else feature_range, n_columns)
        if n_features > n_columns:
            raise ValueError(
                f"`n_features` must be at most {n_columns} (the number of features of "
                f"{name!r}) for preprocessing='fixed'. Found {n_features}."
            )
        return ranges
    if feature_range is not None:
        raise ValueError(
            f"`feature_range` is only used with preprocessing='fixed'. Found "
            f"{feature_range!r}."
        )
    if n_features > n_columns:
        raise ValueError(
            f"`n_features` must be at most {n_columns} (the number of features of "
            f"{name!r}) for preprocessing='standardize_pca'. Found {n_features}."
        )
    return ()


def check_task(name: str = "digits", *, n_features: int | None = 4,
               preprocessing: str = "fixed", classes=None,
               csv_path: str | os.PathLike | None = None, label_column: str | None = None,
               feature_range=None) -> int | None:
    r"""The checks of :func:`load_dataset` that need no data, without loading any.

    Everything the public shape of the task decides: the data set and preprocessing names,
    ``n_features`` and ``feature_range`` against the number of raw columns (known for the
    scikit-learn sets, read from a CSV file's header row), and for the scikit-learn sets the
    ``classes``. Imports nothing heavier than numpy (no scikit-learn), so a command line can
    refuse bad settings at once; :func:`load_dataset` makes the same checks, and those that
    need the data.

    Args:
        name, n_features, preprocessing, classes, csv_path, label_column, feature_range: as in
            :func:`load_dataset`.

    Returns:
        int | None: the number of classes K of a scikit-learn set; ``None`` for a CSV file
        (its labels are read with the data).

    Raises:
        ValueError: with the message :func:`load_dataset` gives for the same settings.

    Example:
        >>> check_task("iris"), check_task("digits", classes="all", n_features=8)
        (3, 10)
        >>> check_task("iris", classes=("setosa", "rose"))
        Traceback (most recent call last):
        ...
        ValueError: `classes` must be distinct classes of 'iris'; 'rose' is not one. Classes
        present: 0 (setosa), 1 (versicolor), 2 (virginica).
    """
    name = check_choice(name, "name", DATASETS)
    preprocessing = check_choice(preprocessing, "preprocessing", PREPROCESSINGS)
    if n_features is not None:
        n_features = check_positive_int(n_features, "n_features")
    if name != "csv" and (csv_path is not None or label_column is not None):
        raise ValueError(
            f"`csv_path` and `label_column` are only used with name='csv'. Found name={name!r}."
        )
    if name == "csv":
        path = _check_csv_arguments(csv_path, label_column)
        assert label_column is not None  # _check_csv_arguments raised otherwise
        header = _csv_header(path)
        _check_label_column(path, header, label_column)
        n_columns = len(header) - 1
        if n_columns < 1:
            raise ValueError(f"The CSV file {path!r} has no feature columns besides the label.")
        _check_columns(name, preprocessing, n_columns if n_features is None else n_features,
                       feature_range, n_columns)
        return None
    n_columns, label_names = _BUNDLED_SHAPES[name]
    _check_columns(name, preprocessing, n_columns if n_features is None else n_features,
                   feature_range, n_columns)
    return len(_resolve_classes(name, classes, np.array(sorted(label_names)), label_names))


def fixed_feature_map(name: str, n_features: int, feature_ranges=()):
    r"""The data-independent feature map of ``preprocessing="fixed"`` as a function.

    Args:
        name: the data set (``"digits"`` pools the 8×8 image; any other scales each raw
            column by its declared range and averages consecutive groups).
        n_features: number of output features.
        feature_ranges: one ``(low, high)`` per raw column (not used for digits).

    Returns:
        callable: raw rows of shape (n, raw columns) → angles in [0, π] of shape
        (n, n_features), exactly as :func:`load_dataset` computes them.

    Example:
        >>> f = fixed_feature_map("iris", 4, IRIS_FEATURE_RANGES)
        >>> np.round(f(np.array([[3.8, 1.8, 0.9, 0.09]])), 6).tolist()
        [[0.0, 0.0, 0.0, 0.0]]
    """
    if name == "digits":
        def pool(X_raw):
            return _pool_digits(np.asarray(X_raw, dtype=np.float64), n_features)[0]
        return pool
    ranges = tuple(tuple(float(v) for v in r) for r in feature_ranges)
    names = [f"x{j}" for j in range(len(ranges))]

    def scale(X_raw):
        X = np.asarray(X_raw, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(ranges):
            raise ValueError(f"The feature map of {name!r} takes rows of {len(ranges)} raw "
                             f"features. Found shape {X.shape}.")
        return _scale_and_group(X, ranges, n_features, names)[0]
    return scale


# ---------------------------------------------------------------------------- sources
def _plain(x):
    """numpy scalar → Python scalar (for readable tuples)."""
    return x.item() if isinstance(x, np.generic) else x


def _load_sklearn(name: str):
    from sklearn import datasets

    loader = {
        "digits": datasets.load_digits,
        "breast_cancer": datasets.load_breast_cancer,
        "iris": datasets.load_iris,
        "wine": datasets.load_wine,
    }[name]
    bunch = loader()
    X = np.asarray(bunch.data, dtype=np.float64)
    labels = np.asarray(bunch.target)
    names = [str(n) for n in getattr(bunch, "feature_names", [])] or [
        f"x{i}" for i in range(X.shape[1])
    ]
    label_names = {int(i): str(t) for i, t in enumerate(bunch.target_names)}
    return X, labels, names, label_names


def _check_csv_arguments(csv_path, label_column) -> str:
    if csv_path is None:
        raise ValueError("`csv_path` is required when name='csv'. Found None.")
    if label_column is None:
        raise ValueError("`label_column` is required when name='csv'. Found None.")
    path = os.fspath(csv_path)
    if not os.path.isfile(path):
        raise ValueError(f"`csv_path` must be an existing file. Found {path!r}.")
    return path


def _csv_header(path: str) -> list[str]:
    """The first non-blank row of the CSV file, stripped (the header)."""
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            for row in csv.reader(fh):
                if any(cell.strip() for cell in row):
                    return [h.strip() for h in row]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"The CSV file {path!r} cannot be read: {err}") from err
    raise ValueError(f"The CSV file {path!r} needs a header row and at least one data row.")


def _check_label_column(path: str, header: list[str], label_column: str) -> None:
    if label_column not in header:
        raise ValueError(
            f"`label_column` {label_column!r} is not a column of {path!r}. "
            f"Columns: {', '.join(repr(h) for h in header)}."
        )


def _read_csv(csv_path, label_column):
    path = _check_csv_arguments(csv_path, label_column)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if any(cell.strip() for cell in r)]  # skip blank lines
    if len(rows) < 2:
        raise ValueError(f"The CSV file {path!r} needs a header row and at least one data row.")
    header = [h.strip() for h in rows[0]]
    _check_label_column(path, header, label_column)
    data = rows[1:]
    for i, r in enumerate(data, start=2):
        if len(r) != len(header):
            raise ValueError(
                f"Line {i} of {path!r} has {len(r)} fields; the header has {len(header)}."
            )
    missing = [
        (i, header[j])
        for i, r in enumerate(data, start=2)
        for j, cell in enumerate(r)
        if cell.strip().lower() in _MISSING
    ]
    if missing:
        line, col = missing[0]
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise ValueError(
            f"The CSV file {path!r} has missing values: column {col!r} on line {line}{more}. "
            f"Remove or impute them first."
        )
    li = header.index(label_column)
    feature_idx = [j for j in range(len(header)) if j != li]
    if not feature_idx:
        raise ValueError(f"The CSV file {path!r} has no feature columns besides the label.")
    X = np.empty((len(data), len(feature_idx)), dtype=np.float64)
    for i, r in enumerate(data):
        for k, j in enumerate(feature_idx):
            try:
                X[i, k] = float(r[j])
            except ValueError:
                raise ValueError(
                    f"Column {header[j]!r} of {path!r} must be numeric. "
                    f"Found {r[j]!r} on line {i + 2}."
                ) from None
    if not np.all(np.isfinite(X)):
        raise ValueError(f"The CSV file {path!r} has non-finite feature values (inf).")
    raw = [r[li].strip() for r in data]
    try:
        labels = np.array([float(v) for v in raw])
    except ValueError:
        return X, np.array(raw, dtype=object), [header[j] for j in feature_idx], {}
    written: dict = {}  # numeric labels are shown as written in the file ('1', not '1.0')
    for value, text in zip(labels.tolist(), raw, strict=True):
        written.setdefault(value, text)
    return X, labels, [header[j] for j in feature_idx], written


def _resolve_classes(name, classes, labels, label_names):
    """Return the chosen classes as they appear in ``labels``, in model-label order."""
    present = sorted(set(labels.tolist()), key=lambda v: (str(type(v)), v))
    shown = ", ".join(
        f"{v!r} ({label_names[v]})" if v in label_names else repr(_plain(v)) for v in present
    )
    if classes is None:
        classes = "all" if name == "csv" else _DEFAULT_CLASSES[name]
    if isinstance(classes, str):
        if classes != "all":
            raise ValueError(
                f"`classes` must be a pair (negative, positive), a list of three or more "
                f"classes, or 'all'. Found {classes!r}."
            )
        if len(present) < 2:
            raise ValueError(
                f"The labels of {name!r} must hold at least two classes, but {len(present)} "
                f"{'classes were' if len(present) != 1 else 'class was'} found: {shown}."
            )
        return list(present)
    if not hasattr(classes, "__len__") or len(classes) < 2:
        raise ValueError(
            f"`classes` must be a pair (negative, positive), a list of three or more classes, "
            f"or 'all'. Found {classes!r}."
        )
    by_name = {v: k for k, v in label_names.items()}
    resolved = []
    for c in classes:
        value = _match_class(c, present, by_name)
        if value is None:
            raise ValueError(
                f"`classes` must be distinct classes of {name!r}; {c!r} is not one. "
                f"Classes present: {shown}."
            )
        resolved.append(value)
    if len(set(resolved)) != len(resolved):
        raise ValueError(f"`classes` must be distinct classes. Found {classes!r}.")
    return resolved


def _match_class(c, present, by_name):
    c = _plain(c)
    if isinstance(c, str) and c in by_name:
        return by_name[c]
    for v in present:
        if isinstance(v, float) and isinstance(c, numbers.Real) and not isinstance(c, bool):
            if v == float(c):
                return v
        elif isinstance(v, float) and isinstance(c, str):
            try:
                if v == float(c):
                    return v
            except ValueError:
                pass
        elif v == c or (isinstance(v, str) and str(c) == v):
            return v
    return None


# ---------------------------------------------------------------------------- preprocessing
def _pool_digits(X: np.ndarray, n_features: int):
    """Average-pool 8×8 digits into fixed regions for ``n_features`` and map [0, 16] → [0, π]."""
    if n_features == 4:
        images = X.reshape(len(X), 8, 8)
        pooled = np.stack([images[:, r][:, :, c].mean(axis=(1, 2))
                           for _, r, c in DIGITS_STROKE_REGIONS], axis=1)
        angles = np.clip(pooled / _DIGITS_MAX, 0.0, 1.0) * math.pi
        return angles, [name for name, _, _ in DIGITS_STROKE_REGIONS]
    rows, cols = DIGITS_POOLING_GRIDS[n_features]
    bh, bw = 8 // rows, 8 // cols
    pooled = X.reshape(len(X), rows, bh, cols, bw).mean(axis=(2, 4)).reshape(len(X), -1)
    angles = np.clip(pooled / _DIGITS_MAX, 0.0, 1.0) * math.pi
    names = [
        f"mean(rows {r * bh}-{r * bh + bh - 1}, cols {c * bw}-{c * bw + bw - 1})"
        for r in range(rows)
        for c in range(cols)
    ]
    return angles, names


def _check_feature_range(feature_range, n_columns: int) -> tuple:
    """``feature_range`` → one finite ``(low, high)`` pair with low < high per raw column."""
    def pair(v):
        if isinstance(v, (str, bytes)) or not hasattr(v, "__len__") or len(v) != 2:
            return None
        try:
            lo, hi = float(v[0]), float(v[1])
        except (TypeError, ValueError):
            return None
        return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) and lo < hi else None

    scalar_pair = (not isinstance(feature_range, (str, bytes))
                   and hasattr(feature_range, "__len__") and len(feature_range) == 2
                   and not any(hasattr(v, "__len__") for v in feature_range))
    if scalar_pair:
        single = pair(feature_range)
        if single is None:
            raise ValueError(
                f"`feature_range` must be a pair (low, high) or a sequence of {n_columns} "
                f"pairs, one per column, with finite low < high; found the pair "
                f"{feature_range!r}, which is not finite with low < high."
            )
        return (single,) * n_columns
    if isinstance(feature_range, (str, bytes)) or not hasattr(feature_range, "__len__"):
        raise ValueError(
            f"`feature_range` must be a pair (low, high) or a sequence of {n_columns} pairs, "
            f"one per column, with finite low < high. Found {feature_range!r}."
        )
    pairs = [pair(v) for v in feature_range]
    if len(pairs) != n_columns or any(p is None for p in pairs):
        bad = next((v for v, p in zip(feature_range, pairs, strict=False) if p is None), None)
        detail = (f"{len(pairs)} pairs for {n_columns} columns" if len(pairs) != n_columns
                  else f"the pair {bad!r}, which is not finite with low < high")
        raise ValueError(
            f"`feature_range` must be a pair (low, high) or a sequence of {n_columns} pairs, "
            f"one per column, with finite low < high; found {detail}. Found "
            f"{feature_range!r}."
        )
    return tuple(pairs)


def _groups(n_columns: int, n_features: int) -> list:
    """Consecutive column groups: :func:`numpy.array_split` of the column indices."""
    return [g.tolist() for g in np.array_split(np.arange(n_columns), n_features)]


def _scale_and_group(X, ranges, n_features, column_names):
    r"""Clip-scale every column to [0, 1] by its declared range, average groups, times π.

    Returns ``(angles, feature names, number of clipped values)``.
    """
    lo = np.array([r[0] for r in ranges])
    hi = np.array([r[1] for r in ranges])
    unit = (X - lo) / (hi - lo)
    clipped = int(np.count_nonzero((unit < 0.0) | (unit > 1.0)))
    unit = np.clip(unit, 0.0, 1.0)
    groups = _groups(X.shape[1], n_features)
    angles = np.stack([unit[:, g].mean(axis=1) for g in groups], axis=1) * math.pi
    names = [column_names[g[0]] if len(g) == 1 else
             "mean(" + ", ".join(column_names[j] for j in g) + ")" for g in groups]
    return angles, names, clipped


def _test_clipping(X_test, ranges, column_names) -> tuple[float, list[str]]:
    """The fraction of held-out raw values outside their declared ranges, and the columns
    all of whose held-out values are outside (computed from the test split only)."""
    if X_test.size == 0:
        return 0.0, []
    lo = np.array([r[0] for r in ranges])
    hi = np.array([r[1] for r in ranges])
    outside = (X_test < lo) | (X_test > hi)
    columns = [column_names[j] for j in np.flatnonzero(outside.all(axis=0))]
    return float(outside.mean()), columns


def _standardize_pca(X_train, X_test, n_features, seed):
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(X_train)
    pca = PCA(n_components=n_features, svd_solver="full", random_state=seed)
    Z_train = pca.fit_transform(scaler.transform(X_train))
    Z_test = pca.transform(scaler.transform(X_test))
    lo, hi = Z_train.min(axis=0), Z_train.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)

    def to_angles(Z):
        return np.clip((Z - lo) / span, 0.0, 1.0) * math.pi

    def transform(X_raw):
        return to_angles(pca.transform(scaler.transform(np.asarray(X_raw, dtype=np.float64))))

    names = [f"pc{i + 1}" for i in range(n_features)]
    return to_angles(Z_train), to_angles(Z_test), names, transform
