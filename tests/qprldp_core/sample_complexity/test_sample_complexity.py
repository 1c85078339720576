"""Tests for the qprldp_core.sample_complexity package as a whole: argument errors and
no NaN from any bound."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from qprldp_core import sample_complexity as sc

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


def test_errors():
    r, s = np.diag([1.0, 0.0]), np.diag([0.5, 0.5])
    with pytest.raises(ValueError, match=re.escape("`alpha` must be in (0, 1). Found 1.3.")):
        sc.symmetric_copy_bounds(r, s, alpha=1.3)
    with pytest.raises(ValueError, match=re.escape("`prior` must be in (0, 1). Found 0.")):
        sc.symmetric_copy_bounds(r, s, prior=0.0, alpha=0.1)
    with pytest.raises(ValueError, match=re.escape("`prior` must be in [0, 1]. Found 1.5.")):
        sc.helstrom_error(r, s, prior=1.5)
    with pytest.raises(ValueError, match=re.escape(
            "`copies` too large: dimension d**copies must be <= 4096. Found 2**13 = 8192.")):
        sc.helstrom_error(r, s, copies=13)
    with pytest.raises(ValueError, match=re.escape("`copies` must be an integer >= 0. Found -1.")):
        sc.helstrom_error(r, s, copies=-1)
    with pytest.raises(ValueError, match=re.escape(
            "`rho` and `sigma` must have the same dimension. Found shapes (2, 2) and (3, 3).")):
        sc.helstrom_error(r, np.eye(3) / 3)
    with pytest.raises(ValueError, match=re.escape("`beta` must be in (0, 1). Found 0.")):
        sc.asymmetric_copy_bounds(r, s, alpha=0.1, beta=0.0)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1). Found 1.")):
        sc.qspri_copy_bounds(r, s, epsilon=1.0, delta=1.0)
    with pytest.raises(ValueError, match=re.escape(
            "`states` must contain at least 2 states. Found 1.")):
        sc.mary_copy_bounds([r], alpha=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`priors` must be positive and sum to 1. Found [0.5, 0.6].")):
        sc.mary_copy_bounds([r, s], priors=[0.5, 0.6], alpha=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`priors` must have length 2. Found shape (3,).")):
        sc.mary_copy_bounds([r, s], priors=[0.2, 0.3, 0.5], alpha=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`trace_distance` must be in [0, 1]. Found 2.")):
        sc.private_symmetric_lower_bound(epsilon=1.0, delta=0.0, alpha=0.1, trace_distance=2.0)
    with pytest.raises(ValueError, match=re.escape(
            "`notion` must be one of ('qldp', 'qprldp'). Found 'x'.")):
        sc.private_asymmetric_lower_bound(epsilon=1.0, delta=0.0, alpha=0.1, beta=0.1,
                                          notion="x")
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon` must be finite and >= 0. Found -1.")):
        sc.private_asymmetric_lower_bound(epsilon=-1.0, delta=0.0, alpha=0.1, beta=0.1)
    with pytest.raises(ValueError, match=re.escape("`states[1]` must have shape (2, 2). Found "
                                                   "shape (3, 3).")):
        sc.mary_copy_bounds([r, np.eye(3) / 3], alpha=0.1)


def test_never_nan():
    r = np.diag([1.0, 0.0])
    for b in (sc.symmetric_copy_bounds(r, r, alpha=0.1),
              sc.asymmetric_copy_bounds(r, r, alpha=0.1, beta=0.1),
              sc.qspri_copy_bounds(r, r, epsilon=0.0, delta=0.0),
              sc.mary_copy_bounds([r, r, r], alpha=0.1)):
        for x in (b.lower, b.upper):
            assert not (isinstance(x, float) and math.isnan(x))
