"""Tests for qprldp_core.sample_complexity.qspri: every bound brackets the brute-force minimal
number of copies (exact Helstrom / Neyman-Pearson / MAP errors of n <= 8 copies for small d)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core import sample_complexity as sc
from qprldp_core.divergences import violation_probability

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


NMAX = 8


def _check_qspri(qubit_pair, at_most, seed, eps, delta):
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    nb = sc.minimal_copies_qspri(r, s, epsilon=eps, delta=delta, max_copies=NMAX)
    b = sc.qspri_copy_bounds(r, s, epsilon=eps, delta=delta)
    assert b.lower >= 1
    assert at_most(b.lower, nb)
    if nb is None:
        assert b.upper > NMAX
    else:
        assert b.upper >= nb


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, eps=st.floats(0.0, 3.0), delta=st.floats(0.0, 0.95))
def test_qspri_bounds_bracket_brute_force(qubit_pair, at_most, seed, eps, delta):
    _check_qspri(qubit_pair, at_most, seed, eps, delta)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, eps=st.floats(0.0, 3.0), a=st.floats(1.05, 10.0))
def test_violation_probability_renyi_tail_bound(qubit_pair, seed, eps, a):
    # V_ε(ρ‖σ) <= exp((a-1)(D̃_a(ρ‖σ) - ε)), the single-copy inequality behind the lower bound
    from qprldp_core.divergences import sandwiched_renyi_divergence

    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    v = violation_probability(r, s, epsilon=eps)
    dt = sandwiched_renyi_divergence(r, s, alpha=a)
    if math.isfinite(dt):
        assert v <= math.exp((a - 1) * (dt - eps)) + 1e-9


def test_qspri_known_values():
    r, s = np.diag([0.75, 0.25]), np.diag([0.25, 0.75])
    # V(n=1) = 0 at e^1.5 > 3; n = 2: 0.5625 > e^1.5 * 0.0625 -> V = 0.5625 > 0.3
    assert sc.minimal_copies_qspri(r, s, epsilon=1.5, delta=0.3) == 2
    b = sc.qspri_copy_bounds(r, s, epsilon=1.5, delta=0.3)
    assert b.lower <= 2 <= b.upper
    b = sc.qspri_copy_bounds(r, r, epsilon=0.5, delta=0.1)
    assert b.upper == math.inf
