"""Tests for qprldp_core.sample_complexity.symmetric: every bound brackets the brute-force minimal
number of copies (exact Helstrom / Neyman-Pearson / MAP errors of n <= 8 copies for small d)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core import sample_complexity as sc
from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import depolarizing
from qprldp_core.divergences import fidelity
from qprldp_core.sample_complexity import symmetric

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


NMAX = 8


# p and ε avoid (0, 1e-6): certify's closed form underflows there (reported upstream).
PROBS = st.floats(1e-3, 1.0)


EPS = st.one_of(st.just(0.0), st.floats(1e-6, 2.0))


def explicit_nstar(r, s, prior, alpha):
    """n* from Helstrom's error of explicitly built 2^n x 2^n tensor powers."""
    for n in range(NMAX + 1):
        if sc.helstrom_error(r, s, prior=prior, copies=n) <= alpha:
            return n
    return None


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, prior=st.floats(0.05, 0.95), n=st.integers(0, NMAX))
def test_block_helstrom_matches_explicit(qubit_pair, seed, prior, n):
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    assert symmetric._helstrom_blocks(r, s, prior, n) == pytest.approx(
        sc.helstrom_error(r, s, prior=prior, copies=n), abs=1e-10)


def _check_symmetric_explicit(qubit_pair, at_most, seed, prior, alpha):
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    nstar = explicit_nstar(r, s, prior, alpha)
    b = sc.symmetric_copy_bounds(r, s, prior=prior, alpha=alpha)
    assert at_most(b.lower, nstar)
    assert b.upper > NMAX if nstar is None else b.upper >= nstar


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, prior=st.floats(0.05, 0.95), alpha=st.floats(0.001, 0.45))
def test_symmetric_bounds_bracket_explicit_helstrom(qubit_pair, at_most, seed, prior, alpha):
    _check_symmetric_explicit(qubit_pair, at_most, seed, prior, alpha)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, prior=st.floats(0.05, 0.95), alpha=st.floats(0.001, 0.45))
def test_symmetric_bounds_bracket_explicit_helstrom_fast(qubit_pair, at_most, seed, prior,
                                                         alpha):
    _check_symmetric_explicit(qubit_pair, at_most, seed, prior, alpha)


def _check_symmetric(qubit_pair, at_most, seed, prior, alpha):
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    nstar = sc.minimal_copies_symmetric(r, s, prior=prior, alpha=alpha, max_copies=NMAX)
    b = sc.symmetric_copy_bounds(r, s, prior=prior, alpha=alpha)
    assert at_most(b.lower, nstar)
    if nstar is None:
        assert b.upper > NMAX
    else:
        assert b.upper >= nstar
    # the underlying inequalities, copy by copy
    f = fidelity(r, s)
    q = 1 - prior
    for n in range(0, 5):
        pe = sc.helstrom_error(r, s, prior=prior, copies=n)
        assert pe >= 0.5 * (1 - math.sqrt(max(0.0, 1 - 4 * prior * q * f**n))) - 1e-9
        assert pe <= math.sqrt(prior * q) * math.sqrt(f) ** n + 1e-9


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, prior=st.floats(0.05, 0.95), alpha=st.floats(0.001, 0.45))
def test_symmetric_bounds_bracket_helstrom(qubit_pair, at_most, seed, prior, alpha):
    _check_symmetric(qubit_pair, at_most, seed, prior, alpha)


def _check_private_symmetric(private_qubit_channel, random_state, at_most, seed, p, eps, prior,
                             alpha, notion):
    rng = np.random.default_rng(seed)
    ch, din = private_qubit_channel(rng, p, notion)
    cert = qldp_certificate if notion == "qldp" else qprldp_certificate
    delta = cert(depolarizing(p, 2), epsilon=eps).delta
    rho, sigma = random_state(rng, din), random_state(rng, din)
    nstar = sc.minimal_copies_symmetric(ch(rho), ch(sigma), prior=prior, alpha=alpha,
                                        max_copies=NMAX)
    worst = sc.private_symmetric_lower_bound(epsilon=eps, delta=delta, prior=prior, alpha=alpha,
                                             notion=notion)
    b = sc.private_symmetric_copy_bounds(ch, rho, sigma, epsilon=eps, delta=delta, prior=prior,
                                         alpha=alpha, notion=notion)
    assert worst <= b.lower or b.lower == 0
    assert at_most(b.lower, nstar)
    assert at_most(worst, nstar)
    if nstar is not None:
        assert b.upper >= nstar


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, p=PROBS, eps=EPS, prior=st.floats(0.05, 0.95),
       alpha=st.floats(0.001, 0.45), notion=st.sampled_from(["qldp", "qprldp"]))
def test_private_symmetric_bounds_bracket_helstrom(private_qubit_channel, random_state, at_most,
                                                   seed, p, eps, prior, alpha, notion):
    _check_private_symmetric(private_qubit_channel, random_state, at_most, seed, p, eps, prior,
                             alpha, notion)


def test_symmetric_known_values():
    r, s = np.diag([1.0, 0.0]), np.diag([0.5, 0.5])
    # P_e(n) = 2^{-n-1} for n >= 1 (equal priors): n* = 4 at α = 0.05 (0.03125 <= 0.05)
    assert [sc.helstrom_error(r, s, copies=n) for n in range(5)] == pytest.approx(
        [0.5, 0.25, 0.125, 0.0625, 0.03125])
    assert sc.minimal_copies_symmetric(r, s, alpha=0.05) == 4
    b = sc.symmetric_copy_bounds(r, s, alpha=0.05)
    assert b.lower <= 4 <= b.upper
    assert sc.symmetric_copy_bounds(r, s, alpha=0.5) == sc.CopyBounds(
        0, 0, "symmetric", "alpha >= min prior", "alpha >= min prior")
    # orthogonal states: one copy suffices
    o = np.diag([0.0, 1.0])
    b = sc.symmetric_copy_bounds(r, o, alpha=0.01)
    assert (b.lower, b.upper) == (1, 1)
    # identical states: impossible
    b = sc.symmetric_copy_bounds(s, s, alpha=0.01)
    assert b.upper == math.inf and b.lower == math.inf


def test_private_symmetric_lower_bound_values():
    # pure ε: F >= e^{-ε} dominates; lower = floor(ln(pq/(α(1-α)))/ε) vs TD form
    eps, alpha = 0.1, 0.05
    eta = (math.exp(eps) - 1) / (math.exp(eps) + 1)
    fid = math.log(0.25 / (alpha * (1 - alpha))) / eps
    td = (1 - alpha / 0.5) / eta
    assert sc.private_symmetric_lower_bound(epsilon=eps, delta=0.0, alpha=alpha) == math.ceil(
        max(fid, td))
    # more privacy -> more copies
    a = sc.private_symmetric_lower_bound(epsilon=0.5, delta=0.01, alpha=alpha)
    b = sc.private_symmetric_lower_bound(epsilon=0.1, delta=0.01, alpha=alpha)
    assert b >= a
    assert sc.private_symmetric_lower_bound(epsilon=0.0, delta=0.0, alpha=alpha) == math.inf
