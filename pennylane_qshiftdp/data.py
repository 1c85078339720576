r"""Binary classification data sets for quantum classifiers, with honest preprocessing.

:func:`load_dataset` returns a :class:`Dataset` of angle-encoded features in [0, π] and labels
in {−1, +1}, from scikit-learn's bundled data sets (never downloaded) or from a CSV file.

Two preprocessing modes:

- ``"fixed"``: data-independent, so the differential-privacy guarantee covers the whole
  pipeline from the raw data. Only available where the feature range is known a priori: the
  ``digits`` pixels lie in [0, 16] by construction, so the 8×8 image is average-pooled into
  ``n_features`` regions and each mean is mapped linearly from [0, 16] to [0, π].
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
from dataclasses import dataclass

import numpy as np

from ._validation import check_choice, check_positive_int, check_probability
from .exceptions import PrivacyWarning

__all__ = [
    "DATASETS",
    "DIGITS_POOLING_GRIDS",
    "DIGITS_STROKE_REGIONS",
    "PREPROCESSINGS",
    "Dataset",
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

#: Default (negative, positive) classes of the scikit-learn data sets.
_DEFAULT_CLASSES = {"digits": (0, 1), "breast_cancer": (0, 1), "iris": (0, 1), "wine": (0, 1)}

#: A-priori pixel range of scikit-learn's ``digits`` (4-bit counts of 4×4 sub-blocks).
_DIGITS_MAX = 16.0

#: CSV cells read as missing values (compared case-insensitively, after stripping).
_MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?"})

_PCA_NOTE = (
    "preprocessing='standardize_pca' fitted on the training split: the per-feature means and "
    "variances, the principal components, and the per-component minima and maxima used to scale "
    "features to angles are computed from the training data and are NOT protected by the "
    "differential-privacy guarantee."
)


@dataclass(frozen=True, eq=False)
class Dataset:
    r"""A binary classification data set, angle-encoded, split into train and test parts.

    Attributes:
        X_train: features of shape (n_train, n_features), float64, angles in [0, π].
        y_train: labels of shape (n_train,), float64, in {−1, +1}.
        X_test: features of shape (n_test, n_features), float64, angles in [0, π].
        y_test: labels of shape (n_test,), float64, in {−1, +1}.
        name: the data set's name (``"digits"``, ..., or ``"csv"``).
        feature_names: one name per feature column.
        data_dependent_preprocessing: ``True`` if preprocessing statistics were computed from
            the training data (then they are not protected by the DP guarantee).
        preprocessing_note: which statistics are not protected, or ``None`` if preprocessing
            is data-independent. Pass it to :class:`~pennylane_qshiftdp.accountant.PrivacyLedger`.
        description: a one-paragraph human-readable description.
        classes: the original (negative, positive) class labels, mapped to −1 and +1.
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


def load_dataset(
    name: str = "digits",
    *,
    n_features: int = 4,
    seed: int = 0,
    test_size: float = 0.25,
    preprocessing: str = "fixed",
    classes=None,
    csv_path: str | os.PathLike | None = None,
    label_column: str | None = None,
) -> Dataset:
    r"""Load a binary classification task with angle-encoded features.

    Data sets (all bundled with scikit-learn, never downloaded, or a local CSV file):

    - ``"digits"``: 8×8 images of handwritten digits; default classes ``(0, 1)``
      ("0 vs 1", 360 images).
    - ``"breast_cancer"``: Wisconsin diagnostic, 30 features; classes ``(0, 1)`` =
      (malignant → −1, benign → +1).
    - ``"iris"``: 4 features; default classes ``(0, 1)`` = (setosa → −1, versicolor → +1),
      linearly separable; ``classes=(1, 2)`` (versicolor vs virginica) is harder.
    - ``"wine"``: 13 features; default classes ``(0, 1)`` = (class_0 → −1, class_1 → +1).
    - ``"csv"``: the file ``csv_path`` with a header row; the column ``label_column`` holds
      the labels, every other column must be numeric; no missing values. Without ``classes``
      the label column must have exactly two distinct values (sorted: the first → −1).

    ``classes=(a, b)`` selects two classes (by label or, for the scikit-learn sets, by target
    name such as ``"versicolor"``) and maps ``a`` → −1 and ``b`` → +1; other classes are dropped.

    Args:
        name: one of :data:`DATASETS`.
        n_features: number of output features (= qubits), ≥ 1. For ``"fixed"`` on digits one
            of 1, 2, 4, 8, 16, 32, 64 (average pooling over a grid of
            :data:`DIGITS_POOLING_GRIDS`; 4 uses :data:`DIGITS_STROKE_REGIONS`); for
            ``"standardize_pca"`` at most the number of raw features.
        seed: seed of the stratified train/test split (an integer ≥ 0).
        test_size: fraction of examples in the test split, in (0, 1).
        preprocessing: ``"fixed"`` (data-independent; digits only) or ``"standardize_pca"``
            (data-dependent, fitted on the training split).
        classes: (negative, positive) classes, or ``None`` for the default.
        csv_path: path of the CSV file (only with ``name="csv"``).
        label_column: name of the label column (only with ``name="csv"``).

    Returns:
        A :class:`Dataset` with float64 features in [0, π] and labels in {−1, +1}.

    Raises:
        ValueError: for an unknown data set or preprocessing (the choices are listed),
            ``"fixed"`` preprocessing on a data set without an a-priori feature range, an
            unsupported ``n_features``, classes not in the data set, or a CSV file that is
            missing, has missing or non-numeric values, lacks the label column, or whose label
            column is not binary.
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
    """
    name = check_choice(name, "name", DATASETS)
    preprocessing = check_choice(preprocessing, "preprocessing", PREPROCESSINGS)
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

    if name == "csv":
        X, labels, feature_names, label_names = _read_csv(csv_path, label_column)
        source = f"CSV file {os.fspath(csv_path)!r} (label column {label_column!r})"
    else:
        X, labels, feature_names, label_names = _load_sklearn(name)
        source = f"scikit-learn's bundled {name!r} data set"

    neg, pos = _resolve_classes(name, classes, labels, label_names)
    mask = (labels == neg) | (labels == pos)
    X = X[mask]
    y = np.where(labels[mask] == pos, 1.0, -1.0)

    if preprocessing == "fixed" and name != "digits":
        raise ValueError(
            f"preprocessing='fixed' needs an a-priori range for every feature, and {name!r} has "
            f"none (its feature ranges would have to be estimated from the data). Use "
            f"preprocessing='standardize_pca' (data-dependent: its statistics are then not "
            f"protected by the privacy guarantee)."
        )
    if preprocessing == "fixed" and n_features not in DIGITS_POOLING_GRIDS:
        allowed = ", ".join(str(k) for k in DIGITS_POOLING_GRIDS)
        raise ValueError(
            f"`n_features` must be one of {allowed} for preprocessing='fixed' on 'digits' "
            f"(average pooling of the 8x8 image over a grid). Found {n_features}."
        )
    if preprocessing == "standardize_pca" and n_features > X.shape[1]:
        raise ValueError(
            f"`n_features` must be at most {X.shape[1]} (the number of features of {name!r}) "
            f"for preprocessing='standardize_pca'. Found {n_features}."
        )

    from sklearn.model_selection import train_test_split

    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )

    if preprocessing == "fixed":
        X_train, names = _pool_digits(X_train, n_features)
        X_test, _ = _pool_digits(X_test, n_features)
        rows, cols = DIGITS_POOLING_GRIDS[n_features]
        regions = (
            "fixed stroke regions (centre stroke, left arc, right arc, top/bottom caps)"
            if n_features == 4
            else f"a {rows}x{cols} grid of {8 // rows}x{8 // cols}-pixel blocks"
        )
        how = (
            f"{n_features} features: average pooling over {regions}, mapped from the "
            f"a-priori pixel range [0, 16] to angles in [0, pi] (data-independent)"
        )
        note = None
    else:
        if X_train.shape[0] <= n_features:
            raise ValueError(
                f"`n_features` must be below the number of training examples "
                f"({X_train.shape[0]}) for preprocessing='standardize_pca'. Found {n_features}."
            )
        X_train, X_test, names = _standardize_pca(X_train, X_test, n_features, seed)
        how = (
            f"{n_features} features: standardisation, PCA and min-max scaling to angles in "
            f"[0, pi], fitted on the training split (data-dependent)"
        )
        note = _PCA_NOTE
        warnings.warn(f"Data-dependent preprocessing: {_PCA_NOTE}", PrivacyWarning, stacklevel=2)

    description = (
        f"{source}, binary task {label_names.get(neg, neg)!s} (-1) vs "
        f"{label_names.get(pos, pos)!s} (+1); {how}; {len(y_train)} train / {len(y_test)} test "
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
        classes=(_plain(neg), _plain(pos)),
    )


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


def _read_csv(csv_path, label_column):
    if csv_path is None:
        raise ValueError("`csv_path` is required when name='csv'. Found None.")
    if label_column is None:
        raise ValueError("`label_column` is required when name='csv'. Found None.")
    path = os.fspath(csv_path)
    if not os.path.isfile(path):
        raise ValueError(f"`csv_path` must be an existing file. Found {path!r}.")
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if any(cell.strip() for cell in r)]  # skip blank lines
    if len(rows) < 2:
        raise ValueError(f"The CSV file {path!r} needs a header row and at least one data row.")
    header = [h.strip() for h in rows[0]]
    if label_column not in header:
        raise ValueError(
            f"`label_column` {label_column!r} is not a column of {path!r}. "
            f"Columns: {', '.join(repr(h) for h in header)}."
        )
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
        labels = np.array(raw, dtype=object)
    return X, labels, [header[j] for j in feature_idx], {}


def _resolve_classes(name, classes, labels, label_names):
    """Return the (negative, positive) labels as they appear in ``labels``."""
    present = sorted(set(labels.tolist()), key=lambda v: (str(type(v)), v))
    shown = ", ".join(
        f"{v!r} ({label_names[v]})" if v in label_names else repr(_plain(v)) for v in present
    )
    if classes is None:
        if name == "csv":
            if len(present) != 2:
                raise ValueError(
                    f"The label column must be binary, but {len(present)} "
                    f"{'classes were' if len(present) != 1 else 'class was'} found: {shown}. "
                    f"Select two of them with `classes=(negative, positive)` (command line: "
                    f"--classes NEGATIVE,POSITIVE)."
                )
            return present[0], present[1]
        return _DEFAULT_CLASSES[name]
    if isinstance(classes, str) or not hasattr(classes, "__len__") or len(classes) != 2:
        raise ValueError(
            f"`classes` must be a pair (negative, positive) of classes. Found {classes!r}."
        )
    by_name = {v: k for k, v in label_names.items()}
    resolved = []
    for c in classes:
        value = _match_class(c, present, by_name)
        if value is None:
            raise ValueError(
                f"`classes` must be two distinct classes of {name!r}; {c!r} is not one. "
                f"Classes present: {shown}."
            )
        resolved.append(value)
    if resolved[0] == resolved[1]:
        raise ValueError(f"`classes` must be two distinct classes. Found {classes!r}.")
    return resolved[0], resolved[1]


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

    names = [f"pc{i + 1}" for i in range(n_features)]
    return to_angles(Z_train), to_angles(Z_test), names
