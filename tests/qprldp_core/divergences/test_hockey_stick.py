"""Tests for qprldp_core.divergences.hockey_stick: E_γ, the violation probability,
trace distance and fidelity."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.channels import depolarizing
from qprldp_core.divergences import (
    fidelity,
    hockey_stick_divergence,
    trace_distance,
    violation_probability,
)

seeds = st.integers(0, 2**31 - 1)


dims = st.integers(1, 4)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(seed=seeds, d=dims, gamma=st.floats(1.0, 20.0))
def test_hockey_stick_self_is_exactly_zero(seeded_state, seed, d, gamma):
    rho = seeded_state(seed, d)
    assert hockey_stick_divergence(rho, rho, gamma=gamma) == 0.0
    assert violation_probability(rho, rho, epsilon=math.log(gamma)) == 0.0
    assert trace_distance(rho, rho) == 0.0


@settings(derandomize=True, max_examples=200, deadline=None)
@given(seed=seeds, d=dims)
def test_e1_is_trace_distance(seeded_state, seed, d):
    rho, sigma = seeded_state(seed, d), seeded_state(seed + 1, d)
    assert hockey_stick_divergence(rho, sigma, gamma=1.0) == pytest.approx(
        trace_distance(rho, sigma), abs=1e-12
    )


@settings(derandomize=True, max_examples=200, deadline=None)
@given(seed=seeds, d=st.integers(2, 4), gamma=st.floats(1.0, 10.0))
def test_properties_random_states(seeded_state, seed, d, gamma):
    rho, sigma = seeded_state(seed, d), seeded_state(seed + 7, d)
    e = hockey_stick_divergence(rho, sigma, gamma=gamma)
    v = violation_probability(rho, sigma, epsilon=math.log(gamma))
    assert 0.0 <= e <= trace_distance(rho, sigma) + 1e-12
    assert e <= v + 1e-12  # E_γ = Tr Π(ρ − γσ) ≤ Tr Πρ
    # monotone in γ
    assert hockey_stick_divergence(rho, sigma, gamma=gamma * 1.5) <= e + 1e-12
    # data processing under a channel
    ch = depolarizing(0.3, d)
    assert hockey_stick_divergence(ch(rho), ch(sigma), gamma=gamma) <= e + 1e-12
    # Fuchs-van de Graaf
    f = fidelity(rho, sigma)
    t = trace_distance(rho, sigma)
    assert 1 - math.sqrt(f) <= t + 1e-9 and t <= math.sqrt(1 - f) + 1e-9


def _check_channel_properties(seeded_state, seeded_channel, seed, d, eps):
    """Data processing of E_γ and TD, QPrLDP ≥ QLDP, unitary invariance (random channel)."""
    ch = seeded_channel(seed, d, k=1 + seed % 3)
    rho, sigma = seeded_state(seed + 1, d), seeded_state(seed + 2, d)
    g = math.exp(eps)
    e_in = hockey_stick_divergence(rho, sigma, gamma=g)
    a, b = ch(rho), ch(sigma)
    e_out = hockey_stick_divergence(a, b, gamma=g)
    assert e_out <= e_in + 1e-9
    assert trace_distance(a, b) <= trace_distance(rho, sigma) + 1e-9
    assert violation_probability(a, b, epsilon=eps) >= e_out - 1e-12
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    ua, ub = q @ a @ q.T, q @ b @ q.T
    assert hockey_stick_divergence(ua, ub, gamma=g) == pytest.approx(e_out, abs=1e-9)
    assert fidelity(a, b) >= fidelity(rho, sigma) - 1e-7


@settings(derandomize=True, max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 4), eps=st.floats(0.0, 3.0))
def test_channel_properties_fast(seeded_state, seeded_channel, seed, d, eps):
    _check_channel_properties(seeded_state, seeded_channel, seed, d, eps)


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(1, 4), eps=st.floats(0.0, 3.0))
def test_channel_properties_1000(seeded_state, seeded_channel, seed, d, eps):
    _check_channel_properties(seeded_state, seeded_channel, seed, d, eps)
