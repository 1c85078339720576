"""Tests for qprldp_core.sample_complexity.asymmetric: every bound brackets the brute-force minimal
number of copies (exact Helstrom / Neyman-Pearson / MAP errors of n <= 8 copies for small d)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qprldp_core import sample_complexity as sc
from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import depolarizing

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


NMAX = 8


# p and ε avoid (0, 1e-6): certify's closed form underflows there (reported upstream).
PROBS = st.floats(1e-3, 1.0)


EPS = st.one_of(st.just(0.0), st.floats(1e-6, 2.0))


def _np_beta(p, q, alpha):
    """Classical Neyman-Pearson: least Q(T) with P(T) >= 1 - α (randomised test)."""
    order = np.argsort(-(p / np.where(q > 0, q, 1e-300)) - (q == 0) * 1e300)
    need, beta = 1 - alpha, 0.0
    for i in order:
        if need <= 0:
            break
        take = min(1.0, need / p[i]) if p[i] > 0 else 0.0
        need -= take * p[i]
        beta += take * q[i]
    return beta


@settings(derandomize=True, max_examples=200, deadline=None)
@given(seed=SEEDS, n=st.integers(0, 3), alpha=st.floats(0.01, 0.9))
def test_optimal_type_ii_error_commuting(seed, n, alpha):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 5))
    p = rng.dirichlet(np.ones(d))
    q = rng.dirichlet(np.ones(d))
    pn, qn = np.ones(1), np.ones(1)
    for _ in range(n):
        pn, qn = np.kron(pn, p), np.kron(qn, q)
    exact = _np_beta(pn, qn, alpha)
    got = sc.optimal_type_ii_error(np.diag(p), np.diag(q), alpha=alpha, copies=n)
    assert got == pytest.approx(exact, abs=1e-7)


def _check_asymmetric(qubit_pair, at_most, seed, alpha, beta):
    # β*_n(α) = 1 - α exactly for identical states; the brute force's scalar optimiser is
    # accurate to ~1e-10, so exact ties β = 1 - α are excluded.
    assume(abs(beta - (1 - alpha)) > 1e-6)
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    nstar = sc.minimal_copies_asymmetric(r, s, alpha=alpha, beta=beta, max_copies=NMAX)
    b = sc.asymmetric_copy_bounds(r, s, alpha=alpha, beta=beta)
    assert at_most(b.lower, nstar)
    if nstar is None:
        assert b.upper > NMAX
    else:
        assert b.upper >= nstar


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9))
def test_asymmetric_bounds_bracket_neyman_pearson(qubit_pair, at_most, seed, alpha, beta):
    _check_asymmetric(qubit_pair, at_most, seed, alpha, beta)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9))
def test_asymmetric_bounds_bracket_neyman_pearson_fast(qubit_pair, at_most, seed, alpha, beta):
    _check_asymmetric(qubit_pair, at_most, seed, alpha, beta)


def _check_private_asymmetric(private_qubit_channel, random_state, at_most, seed, p, eps, alpha,
                              beta, notion):
    assume(abs(beta - (1 - alpha)) > 1e-6)
    rng = np.random.default_rng(seed)
    ch, din = private_qubit_channel(rng, p, notion)
    cert = qldp_certificate if notion == "qldp" else qprldp_certificate
    delta = cert(depolarizing(p, 2), epsilon=eps).delta
    rho, sigma = random_state(rng, din), random_state(rng, din)
    nstar = sc.minimal_copies_asymmetric(ch(rho), ch(sigma), alpha=alpha, beta=beta,
                                         max_copies=NMAX)
    lower = sc.private_asymmetric_lower_bound(epsilon=eps, delta=delta, alpha=alpha, beta=beta,
                                              notion=notion)
    assert at_most(lower, nstar)


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, p=PROBS, eps=EPS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9),
       notion=st.sampled_from(["qldp", "qprldp"]))
def test_private_asymmetric_lower_bound_brute_force(private_qubit_channel, random_state, at_most,
                                                    seed, p, eps, alpha, beta, notion):
    _check_private_asymmetric(private_qubit_channel, random_state, at_most, seed, p, eps, alpha,
                              beta, notion)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, p=PROBS, eps=EPS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9),
       notion=st.sampled_from(["qldp", "qprldp"]))
def test_private_asymmetric_lower_bound_brute_force_fast(private_qubit_channel, random_state,
                                                         at_most, seed, p, eps, alpha, beta,
                                                         notion):
    _check_private_asymmetric(private_qubit_channel, random_state, at_most, seed, p, eps, alpha,
                              beta, notion)


def test_asymmetric_known_values():
    r, s = np.diag([1.0, 0.0]), np.diag([0.5, 0.5])
    # β*_n(α) = (1 - α) 2^{-n}
    for n in range(5):
        assert sc.optimal_type_ii_error(r, s, alpha=0.01, copies=n) == pytest.approx(
            0.99 * 2.0**-n, abs=1e-9)
    assert sc.minimal_copies_asymmetric(r, s, alpha=0.01, beta=0.1) == 4
    b = sc.asymmetric_copy_bounds(r, s, alpha=0.01, beta=0.1)
    assert b.lower <= 4 <= b.upper
    assert sc.private_asymmetric_lower_bound(epsilon=0.5, delta=0.0, alpha=0.05,
                                             beta=0.01) == math.ceil(math.log(95) / 0.5)
    assert sc.private_asymmetric_lower_bound(epsilon=0.0, delta=0.1, alpha=0.05,
                                             beta=0.05) == 9
    assert sc.private_asymmetric_lower_bound(epsilon=0.0, delta=0.0, alpha=0.05,
                                             beta=0.05) == math.inf
