"""Tests for the qprldp_core.divergences package as a whole: every divergence on
classical (commuting) and pure states, known values, no NaN, argument errors."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.divergences import (
    fidelity,
    hockey_stick_divergence,
    max_relative_entropy,
    sandwiched_renyi_divergence,
    trace_distance,
    umegaki_relative_entropy,
    violation_probability,
)
from qprldp_core.random import random_density_matrix


def random_pure(seed: int, d: int) -> np.ndarray:
    return random_density_matrix(d, rank=1, seed=seed)


def random_diag(seed: int, d: int, zeros: int = 0) -> np.ndarray:
    """A random probability vector with ``zeros`` exact zeros."""
    rng = np.random.default_rng(seed)
    p = rng.random(d) + 0.01
    if zeros:
        p[rng.choice(d, size=zeros, replace=False)] = 0.0
    return p / p.sum()


ALL = [
    lambda r, s: hockey_stick_divergence(r, s, gamma=1.7),
    lambda r, s: violation_probability(r, s, epsilon=0.4),
    lambda r, s: trace_distance(r, s),
    lambda r, s: fidelity(r, s),
    lambda r, s: sandwiched_renyi_divergence(r, s, alpha=0.5),
    lambda r, s: sandwiched_renyi_divergence(r, s, alpha=0.8),
    lambda r, s: sandwiched_renyi_divergence(r, s, alpha=2.0),
    lambda r, s: max_relative_entropy(r, s),
    lambda r, s: umegaki_relative_entropy(r, s),
]


seeds = st.integers(0, 2**31 - 1)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(seed=seeds, d=st.integers(1, 4), zeros=st.integers(0, 2), eps=st.floats(0.0, 3.0))
def test_commuting_states_are_classical(seed, d, zeros, eps):
    p = random_diag(seed, d, zeros=min(zeros, d - 1))
    q = random_diag(seed + 3, d)  # full support
    rho, sigma = np.diag(p), np.diag(q)
    g = math.exp(eps)
    assert hockey_stick_divergence(rho, sigma, gamma=g) == pytest.approx(
        np.sum(np.maximum(p - g * q, 0)), abs=1e-12
    )
    mask = p - g * q > 1e-8
    viol = violation_probability(rho, sigma, epsilon=eps)
    assert viol == pytest.approx(np.sum(p[mask]), abs=1e-12)
    assert trace_distance(rho, sigma) == pytest.approx(0.5 * np.sum(np.abs(p - q)), abs=1e-12)
    assert fidelity(rho, sigma) == pytest.approx(np.sum(np.sqrt(p * q)) ** 2, abs=1e-9)
    pos = p > 0
    kl = float(np.sum(p[pos] * np.log(p[pos] / q[pos])))
    assert umegaki_relative_entropy(rho, sigma) == pytest.approx(kl, abs=1e-9)
    assert max_relative_entropy(rho, sigma) == pytest.approx(np.log(np.max(p / q)), abs=1e-9)
    for a in (0.5, 0.7, 2.0, 3.5):
        ren = math.log(np.sum(p[pos] ** a * q[pos] ** (1 - a))) / (a - 1)
        val = sandwiched_renyi_divergence(rho, sigma, alpha=a)
        assert val == pytest.approx(max(ren, 0), abs=1e-9)


def test_pure_state_values():
    psi, phi = np.array([1.0, 0.0]), np.array([1.0, 1.0]) / math.sqrt(2)
    rho, sigma = np.outer(psi, psi), np.outer(phi, phi)
    assert fidelity(rho, sigma) == pytest.approx(0.5)
    assert trace_distance(rho, sigma) == pytest.approx(math.sqrt(1 - 0.5))
    assert max_relative_entropy(rho, sigma) == math.inf
    assert umegaki_relative_entropy(rho, sigma) == math.inf
    assert sandwiched_renyi_divergence(rho, sigma, alpha=2.0) == math.inf
    # α < 1: finite unless orthogonal (here F = 0.5, D_1/2 = −ln F)
    assert sandwiched_renyi_divergence(rho, sigma, alpha=0.5) == pytest.approx(math.log(2))
    orth = np.diag([0.0, 1.0])
    assert sandwiched_renyi_divergence(rho, orth, alpha=0.5) == math.inf
    assert fidelity(rho, orth) == 0.0


def test_known_values():
    rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
    assert hockey_stick_divergence(rho, sigma, gamma=5.0) == 1.0
    assert violation_probability(rho, sigma, epsilon=5.0) == 1.0
    mixed = np.eye(2) / 2
    assert max_relative_entropy(rho, mixed) == pytest.approx(math.log(2))
    assert max_relative_entropy(mixed, rho) == math.inf


@pytest.mark.parametrize("fn", ALL)
@pytest.mark.parametrize("case", range(6))
def test_no_nan_on_rank_deficient_and_near_degenerate(seeded_state, fn, case):
    d = 4
    cases = [
        (random_pure(1, d), random_pure(2, d)),
        (random_pure(3, d), seeded_state(4, d, rank=2)),
        (np.diag([1 - 1e-12, 1e-12, 0, 0]), np.diag([1 - 3e-12, 3e-12, 0, 0])),
        (np.diag([0.5, 0.5 - 1e-13, 1e-13, 0]), np.diag([0.5, 0.5, 0, 0])),
        (np.diag([0.25] * 4), np.diag([0.25 + 1e-14, 0.25 - 1e-14, 0.25, 0.25])),
        (seeded_state(5, d, rank=3), seeded_state(5, d, rank=3)),
    ]
    rho, sigma = cases[case]
    for a, b in ((rho, sigma), (sigma, rho)):
        val = fn(a, b)
        assert not math.isnan(val)
        assert val >= 0.0


def test_errors():
    rho = np.eye(2) / 2
    with pytest.raises(ValueError, match=re.escape("`gamma` must be finite and >= 1. Found 0.9.")):
        hockey_stick_divergence(rho, rho, gamma=0.9)
    msg = (
        "`rho` and `sigma` must have the same dimension. Found shapes (2, 2)"
        " and (3, 3)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        trace_distance(rho, np.eye(3) / 3)
    with pytest.raises(ValueError, match=re.escape("`alpha` must be in [0.5, inf]. Found 0.3.")):
        sandwiched_renyi_divergence(rho, rho, alpha=0.3)
    msg = (
        "`epsilon` must be finite and >= 0. Found -0.1."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        violation_probability(rho, rho, epsilon=-0.1)
    msg = (
        "`sigma` must be positive semidefinite. Found minimum eigenvalue -0.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        fidelity(rho, np.diag([1.5, -0.5]))
    with pytest.raises(ValueError, match=re.escape("`rho` must have unit trace. Found trace 2.")):
        umegaki_relative_entropy(np.eye(2), rho)
    msg = (
        "`rho` must be a square 2-D matrix. Found shape (1, 2)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        max_relative_entropy(np.array([[0.5, 0.5]]), rho)
    with pytest.raises(ValueError, match=re.escape("`sigma` must be Hermitian.")):
        hockey_stick_divergence(rho, np.array([[0.5, 0.3], [0.0, 0.5]]), gamma=1.0)
    with pytest.raises(TypeError, match=re.escape("`alpha` must be a real number. Found str.")):
        sandwiched_renyi_divergence(rho, rho, alpha="2")
