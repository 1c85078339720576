"""Tests for qprldp_core.contraction: proven bounds, exact depolarizing values, the search, and
the counterexample to the QPrLDP summary's contraction claim."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core import contraction as ct
from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import Channel, depolarizing
from qprldp_core.divergences import hockey_stick_divergence, trace_distance

pytestmark = pytest.mark.usefixtures("single_threaded_blas")

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
# p and ε avoid values below 1e-6 other than 0: certify's closed form computes
# d(1-p)/(expm1(ε) p), which underflows to a division by zero for p, ε ~ 1e-279 (reported).
PROBS = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))
EPS = st.one_of(st.just(0.0), st.floats(1e-6, 3.0))


def random_orthonormal_pair(rng: np.random.Generator, d: int):
    g = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
    q, _ = np.linalg.qr(g)
    return np.outer(q[:, 0], q[:, 0].conj()), np.outer(q[:, 1], q[:, 1].conj())


def pos_part_trace(x: np.ndarray) -> float:
    w = np.linalg.eigvalsh((x + x.conj().T) / 2)
    return float(np.sum(w[w > 0]))


def private_channel(random_channel, rng, p, d, notion):
    """U ∘ D_p ∘ N (QPrLDP) or N2 ∘ D_p ∘ N1 (QLDP): privacy no worse than D_p's."""
    din = int(rng.integers(1, 5))
    pre = random_channel(rng, din, d)
    if notion == "qldp":
        post = random_channel(rng, d, int(rng.integers(1, 5)))
    else:
        g = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
        post = Channel([np.linalg.qr(g)[0]])
    return post.compose(depolarizing(p, d).compose(pre)), din


# ------------------------------------------------------------------ proven bounds


def _check_bound(random_state, random_channel, seed, p, d, eps, gfrac, notion):
    rng = np.random.default_rng(seed)
    ch, din = private_channel(random_channel, rng, p, d, notion)
    dep = depolarizing(p, d)
    cert = qldp_certificate if notion == "qldp" else qprldp_certificate
    delta = cert(dep, epsilon=eps).delta
    g = math.exp(eps)
    # trace distance: ratio form over arbitrary pairs
    rho, sigma = random_state(rng, din), random_state(rng, din)
    eta = ct.trace_distance_contraction_bound(epsilon=eps, delta=delta, notion=notion)
    assert trace_distance(ch(rho), ch(sigma)) <= eta * trace_distance(rho, sigma) + 1e-9
    # E_γ' with γ' in [e^{-ε}, e^{ε}] (log-uniform), orthogonal pure inputs (definition)
    gp = math.exp(eps * (2 * gfrac - 1))
    bound = ct.hockey_stick_contraction_bound(epsilon=eps, delta=delta, gamma=gp, notion=notion)
    if din >= 2:
        psi, phi = random_orthonormal_pair(rng, din)
        assert pos_part_trace(ch(psi) - gp * ch(phi)) <= bound + 1e-9
    # ratio form for γ' >= 1 on arbitrary pairs
    if gp >= 1:
        e_in = hockey_stick_divergence(rho, sigma, gamma=gp)
        assert hockey_stick_divergence(ch(rho), ch(sigma), gamma=gp) <= bound * e_in + 1e-9
    # γ' >= e^ε: bounded by δ itself
    assert ct.hockey_stick_contraction_bound(epsilon=eps, delta=delta, gamma=g * 1.5) == delta


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, p=PROBS, d=st.integers(2, 4), eps=EPS, gfrac=st.floats(0.0, 1.0))
def test_contraction_bound_qldp_property(random_state, random_channel, seed, p, d, eps, gfrac):
    _check_bound(random_state, random_channel, seed, p, d, eps, gfrac, "qldp")


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, p=PROBS, d=st.integers(2, 4), eps=EPS, gfrac=st.floats(0.0, 1.0))
def test_contraction_bound_qprldp_property(random_state, random_channel, seed, p, d, eps,
                                           gfrac):
    _check_bound(random_state, random_channel, seed, p, d, eps, gfrac, "qprldp")


def test_bound_is_tight_for_randomized_response():
    # Binary randomized response with ratio e^ε is (ε, 0)-QLDP and attains (e^ε-1)/(e^ε+1).
    eps = 0.7
    g = math.exp(eps)
    a = g / (1 + g)
    kraus = []
    for x, col in enumerate([[a, 1 - a], [1 - a, a]]):
        for y, w in enumerate(col):
            k = np.zeros((2, 2))
            k[y, x] = math.sqrt(w)
            kraus.append(k)
    rr = Channel(kraus)
    td = trace_distance(rr(np.diag([1.0, 0])), rr(np.diag([0, 1.0])))
    assert td == pytest.approx(ct.trace_distance_contraction_bound(epsilon=eps, delta=0.0))


def test_bound_values():
    assert ct.trace_distance_contraction_bound(epsilon=0.0, delta=0.0) == 0.0
    assert ct.trace_distance_contraction_bound(epsilon=1.0, delta=1.0) == 1.0
    v = ct.hockey_stick_contraction_bound(epsilon=0.5, delta=0.75, gamma=0.7)
    assert v == pytest.approx((math.exp(0.5) - 0.7 + 1.7 * 0.75) / (math.exp(0.5) + 1), rel=1e-12)
    # continuity at γ = e^ε: both branches give δ
    assert ct.hockey_stick_contraction_bound(epsilon=0.5, delta=0.2, gamma=math.exp(0.5)) == 0.2
    lo = ct.hockey_stick_contraction_bound(epsilon=0.5, delta=0.2,
                                           gamma=math.exp(0.5) * (1 - 1e-12))
    assert lo == pytest.approx(0.2, abs=1e-9)


def test_bound_errors():
    with pytest.raises(ValueError, match=re.escape(
            f"`gamma` must be >= exp(-epsilon) = {math.exp(-1):.6g}. Found 0.1.")):
        ct.hockey_stick_contraction_bound(epsilon=1.0, delta=0.1, gamma=0.1)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1]. Found 1.3.")):
        ct.trace_distance_contraction_bound(epsilon=1.0, delta=1.3)
    with pytest.raises(ValueError, match=re.escape(
            "`notion` must be one of ('qldp', 'qprldp'). Found 'pure'.")):
        ct.trace_distance_contraction_bound(epsilon=1.0, delta=0.1, notion="pure")
    with pytest.raises(ValueError, match=re.escape("`gamma` must be finite and >= 0. Found -1.")):
        ct.depolarizing_hockey_stick_contraction(p=0.5, d=2, gamma=-1.0)
    with pytest.raises(ValueError, match=re.escape("`p` must be in [0, 1]. Found 1.3.")):
        ct.depolarizing_trace_distance_contraction(p=1.3, d=2)
    with pytest.raises(ValueError, match=re.escape("`d` must be an integer >= 2. Found 1.")):
        ct.depolarizing_hockey_stick_contraction(p=0.5, d=1, gamma=1.0)


# ------------------------------------------------------------------ exact depolarizing values


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, p=st.floats(0.0, 1.0), d=st.integers(2, 4), gamma=st.floats(0.0, 5.0))
def test_depolarizing_exact_values_property(random_state, seed, p, d, gamma):
    rng = np.random.default_rng(seed)
    ch = depolarizing(p, d)
    psi, phi = random_orthonormal_pair(rng, d)
    exact = ct.depolarizing_hockey_stick_contraction(p=p, d=d, gamma=gamma)
    # pair-independent: every orthogonal pure pair attains the supremum
    assert pos_part_trace(ch(psi) - gamma * ch(phi)) == pytest.approx(exact, abs=1e-9)
    # trace distance: exact contraction 1 - p on arbitrary pairs
    rho, sigma = random_state(rng, d), random_state(rng, d)
    assert trace_distance(ch(rho), ch(sigma)) == pytest.approx(
        ct.depolarizing_trace_distance_contraction(p=p, d=d) * trace_distance(rho, sigma),
        abs=1e-9)
    if gamma >= 1:
        # η_γ(D_p) = QLDP δ*(ln γ) of the closed form
        cert = qldp_certificate(ch, epsilon=math.log(gamma))
        assert exact == pytest.approx(cert.delta, abs=1e-9)


def test_estimate_contraction_matches_depolarizing():
    for p, d in [(0.3, 2), (0.6, 3), (0.1, 4)]:
        est = ct.estimate_contraction(depolarizing(p, d), seed=1, restarts=3)
        assert est.is_lower_bound
        assert est.value == pytest.approx(1 - p, abs=1e-9)
        assert abs(np.vdot(est.psi, est.phi)) < 1e-9
        est2 = ct.estimate_contraction(depolarizing(p, d), gamma=1.5, seed=1, restarts=3)
        assert est2.value == pytest.approx(
            ct.depolarizing_hockey_stick_contraction(p=p, d=d, gamma=1.5), abs=1e-9)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, gamma=st.floats(0.0, 3.0))
def test_estimate_contraction_is_attained_and_dominates_samples(random_channel, seed, gamma):
    rng = np.random.default_rng(seed)
    din, dout = int(rng.integers(2, 5)), int(rng.integers(1, 5))
    ch = random_channel(rng, din, dout)
    est = ct.estimate_contraction(ch, gamma=gamma, seed=seed % 1000, restarts=4)
    psi, phi = np.outer(est.psi, est.psi.conj()), np.outer(est.phi, est.phi.conj())
    assert abs(np.vdot(est.psi, est.phi)) < 1e-8
    assert est.value == pytest.approx(pos_part_trace(ch(psi) - gamma * ch(phi)), abs=1e-9)
    # a lower bound on the supremum: never above a proven upper bound (1, and E_γ <= max(1-γ,0)+..)
    assert 0.0 <= est.value <= 1.0
    # the search's value is at least the value of the computational basis pair
    e0, e1 = np.zeros((din, din)), np.zeros((din, din))
    e0[0, 0] = e1[1, 1] = 1.0
    assert est.value >= pos_part_trace(ch(e0) - gamma * ch(e1)) - 0.05


def test_estimate_contraction_errors():
    with pytest.raises(ValueError, match=re.escape("`restarts` must be an integer >= 1. Found 0.")):
        ct.estimate_contraction(depolarizing(0.5, 2), restarts=0)
    with pytest.raises(ValueError, match=re.escape(
            "`channel` must have input dimension >= 2. Found 1.")):
        ct.estimate_contraction(Channel([np.array([[1.0], [0.0]])]))


# ------------------------------------------------------------------ the summary's claim


def test_summary_bound_counterexample():
    c = ct.summary_bound_counterexample()
    ch = depolarizing(c.p, c.d)
    assert qprldp_certificate(ch, epsilon=c.epsilon).delta == 0.0
    assert math.exp(-c.epsilon) < c.gamma < math.exp(c.epsilon)
    actual = hockey_stick_divergence(ch(np.diag([1.0, 0])), ch(np.diag([0, 1.0])), gamma=c.gamma)
    assert actual == pytest.approx(0.5, abs=1e-12)
    assert c.actual == pytest.approx(actual, abs=1e-12)
    assert c.claimed_bound == -1.0
    assert c.actual > max(0.0, c.claimed_bound)  # the claim fails, even clipped at 0
    assert c.actual <= c.proven_bound + 1e-12  # the proven bound holds (and is tight here)


@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
@pytest.mark.parametrize("frac", [0.1, 0.5, 0.9])
def test_summary_claim_is_an_identity_for_qubit_depolarizing_below_eps0(p, frac):
    # For ε < ε₀, qubit D_p has QPrLDP δ = 1 - p/2 and η_γ = (γ+1)δ - γ for γ in [e^{-ε}, 1]
    # ... up to the point where the second eigenvalue turns positive.
    eps0 = math.log1p(2 * (1 - p) / p)
    eps = frac * eps0
    delta = qprldp_certificate(depolarizing(p, 2), epsilon=eps).delta
    assert delta == pytest.approx(1 - p / 2, abs=1e-12)
    for gamma in (1.0, math.exp(eps / 2)):
        eta = ct.depolarizing_hockey_stick_contraction(p=p, d=2, gamma=gamma)
        assert eta == pytest.approx((gamma + 1) * delta - gamma, abs=1e-12)
