"""Shared test helpers (a fixture: with ``--import-mode=importlib`` test modules cannot import
one another)."""

import numpy as np
import pytest
from scipy import stats


def _two_sample_chi2(a, b) -> float:
    """p-value of the chi-square test that two samples of discrete values share a law
    (categories with fewer than 10 pooled observations are merged into one)."""
    values = np.round(np.concatenate([a, b]), 9)
    cats, inv = np.unique(values, return_inverse=True)
    ca = np.bincount(inv[:len(a)], minlength=len(cats))
    cb = np.bincount(inv[len(a):], minlength=len(cats))
    small = (ca + cb) < 10
    if small.any():
        ca = np.append(ca[~small], ca[small].sum())
        cb = np.append(cb[~small], cb[small].sum())
    table = np.stack([ca, cb])
    table = table[:, table.sum(0) > 0]
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table)[1])


@pytest.fixture
def two_sample_chi2():
    """The two-sample chi-square p-value of discrete samples (see :func:`_two_sample_chi2`)."""
    return _two_sample_chi2
