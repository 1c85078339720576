"""Tests for qprldp_core.sample_complexity.asymmetric: every bound brackets the brute-force minimal
number of copies (exact Helstrom / Neyman-Pearson / MAP errors of n <= 8 copies for small d)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from qprldp_core import sample_complexity as sc
from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import Channel, depolarizing
from qprldp_core.random import random_channel as _random_channel
from qprldp_core.random import random_density_matrix


@pytest.fixture(autouse=True)
def _single_threaded_blas():
    # Small dense eigendecompositions: multithreaded BLAS only adds contention on shared CPUs.
    with threadpool_limits(limits=1):
        yield


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


NMAX = 8


# p and ε avoid (0, 1e-6): certify's closed form underflows there (reported upstream).
PROBS = st.floats(1e-3, 1.0)


EPS = st.one_of(st.just(0.0), st.floats(1e-6, 2.0))


def random_state(rng: np.random.Generator, d: int) -> np.ndarray:
    kind = rng.integers(0, 6)
    if kind == 0:
        rho = np.zeros((d, d), dtype=complex)
        k = rng.integers(0, d)
        rho[k, k] = 1.0
        return rho
    if kind == 1:
        return np.eye(d, dtype=complex) / d
    return random_density_matrix(d, seed=rng)


def random_channel(rng: np.random.Generator, din: int, dout: int) -> Channel:
    return _random_channel(din, dout, seed=rng)


def qubit_pair(rng: np.random.Generator):
    """Outputs of a random channel C^din -> C^2 on random inputs (d_in <= 4)."""
    din = int(rng.integers(1, 5))
    ch = random_channel(rng, din, 2)
    r, s = ch(random_state(rng, din)), ch(random_state(rng, din))
    if rng.random() < 0.05:
        s = r.copy()
    return r, s


def private_qubit_channel(rng, p, notion):
    """N2 ∘ D_p ∘ N1 (QLDP: post-processing keeps E_γ) or U ∘ D_p ∘ N1 (QPrLDP), output C^2."""
    din = int(rng.integers(1, 5))
    pre = random_channel(rng, din, 2)
    if notion == "qldp":
        post = random_channel(rng, 2, 2)
    else:
        g = rng.normal(size=(2, 2)) + 1j * rng.normal(size=(2, 2))
        post = Channel([np.linalg.qr(g)[0]])
    return post.compose(depolarizing(p, 2).compose(pre)), din


def _le(a, b) -> bool:
    """a <= b where None means 'more than NMAX'."""
    if b is None:
        return True
    return a <= b


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


def _check_asymmetric(seed, alpha, beta):
    # β*_n(α) = 1 - α exactly for identical states; the brute force's scalar optimiser is
    # accurate to ~1e-10, so exact ties β = 1 - α are excluded.
    assume(abs(beta - (1 - alpha)) > 1e-6)
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    nstar = sc.minimal_copies_asymmetric(r, s, alpha=alpha, beta=beta, max_copies=NMAX)
    b = sc.asymmetric_copy_bounds(r, s, alpha=alpha, beta=beta)
    assert _le(b.lower, nstar)
    if nstar is None:
        assert b.upper > NMAX
    else:
        assert b.upper >= nstar


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9))
def test_asymmetric_bounds_bracket_neyman_pearson(seed, alpha, beta):
    _check_asymmetric(seed, alpha, beta)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9))
def test_asymmetric_bounds_bracket_neyman_pearson_fast(seed, alpha, beta):
    _check_asymmetric(seed, alpha, beta)


def _check_private_asymmetric(seed, p, eps, alpha, beta, notion):
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
    assert _le(lower, nstar)


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, p=PROBS, eps=EPS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9),
       notion=st.sampled_from(["qldp", "qprldp"]))
def test_private_asymmetric_lower_bound_brute_force(seed, p, eps, alpha, beta, notion):
    _check_private_asymmetric(seed, p, eps, alpha, beta, notion)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, p=PROBS, eps=EPS, alpha=st.floats(0.001, 0.5), beta=st.floats(0.001, 0.9),
       notion=st.sampled_from(["qldp", "qprldp"]))
def test_private_asymmetric_lower_bound_brute_force_fast(seed, p, eps, alpha, beta, notion):
    _check_private_asymmetric(seed, p, eps, alpha, beta, notion)


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
