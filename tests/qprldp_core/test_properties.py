"""Tests for qprldp_core.properties: every implication, invariance and witness is recomputed.

Property tests draw random channels (Stinespring isometries from QR of Ginibre matrices) and
random states (Ginibre of random rank, plus basis states and the maximally mixed state), d <= 4.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

from qprldp_core import properties as pr
from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import Channel, bit_flip, depolarizing, measure_prepare_channel
from qprldp_core.divergences import hockey_stick_divergence, violation_probability
from qprldp_core.privacy import worst_case_search
from qprldp_core.random import random_channel as _random_channel
from qprldp_core.random import random_density_matrix
from qprldp_core.random import random_unitary as _random_unitary

TOL = 1e-9


@pytest.fixture(autouse=True)
def _single_threaded_blas():
    # Small dense eigendecompositions: multithreaded BLAS only adds contention on shared CPUs.
    with threadpool_limits(limits=1):
        yield

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
EPS = st.floats(min_value=0.0, max_value=3.0, allow_nan=False)


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


def random_unitary(rng: np.random.Generator, d: int) -> np.ndarray:
    return _random_unitary(d, seed=rng)


def _setup(seed):
    rng = np.random.default_rng(seed)
    din, dout = (int(x) for x in rng.integers(1, 5, size=2))
    din = max(din, 1)
    ch = random_channel(rng, din, dout)
    return rng, ch, random_state(rng, din), random_state(rng, din)


# ---------------------------------------------------------------- QPrLDP => QLDP


def _check_implication(seed, eps):
    rng, ch, rho, sigma = _setup(seed)
    w = pr.qprldp_implies_qldp(ch, rho, sigma, epsilon=eps)
    rp, sp = ch(rho), ch(sigma)
    e = hockey_stick_divergence(rp, sp, gamma=math.exp(eps))
    v = violation_probability(rp, sp, epsilon=eps)
    assert w.hockey_stick == pytest.approx(e, abs=1e-12)
    assert w.violation_probability == pytest.approx(v, abs=1e-12)
    assert e <= v + 1e-7
    assert w.holds


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, eps=EPS)
def test_qprldp_implies_qldp_property(seed, eps):
    _check_implication(seed, eps)



# ---------------------------------------------------------------- converse


def _check_converse(seed, eps, gap):
    rng, ch, rho, sigma = _setup(seed)
    eps2 = eps + gap
    w = pr.qldp_implies_qprldp(ch, rho, sigma, epsilon=eps, epsilon_prime=eps2)
    rp, sp = ch(rho), ch(sigma)
    e = hockey_stick_divergence(rp, sp, gamma=math.exp(eps))
    v = violation_probability(rp, sp, epsilon=eps2)
    bound = min(1.0, e * math.exp(eps2) / (math.exp(eps2) - math.exp(eps)))
    assert w.violation_probability == pytest.approx(v, abs=1e-12)
    assert w.bound == pytest.approx(bound, rel=1e-9, abs=1e-12)
    assert v <= bound + 1e-7 / (1 - math.exp(-gap))
    assert w.holds


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, eps=EPS, gap=st.floats(min_value=0.01, max_value=3.0))
def test_qldp_implies_qprldp_property(seed, eps, gap):
    _check_converse(seed, eps, gap)



@settings(derandomize=True, max_examples=1000, deadline=None)
@given(p=st.floats(0.01, 1.0), d=st.integers(2, 4), eps=st.floats(0.0, 3.0),
       gap=st.floats(0.01, 3.0))
def test_converse_against_depolarizing_closed_forms(p, d, eps, gap):
    # δ_QPrLDP(ε') of D_p never exceeds the converse applied to δ_QLDP(ε) (both exact).
    ch = depolarizing(p, d)
    dq = qldp_certificate(ch, epsilon=eps).delta
    dp = qprldp_certificate(ch, epsilon=eps + gap).delta
    assert dp <= pr.qldp_to_qprldp_delta(epsilon=eps, delta=dq, epsilon_prime=eps + gap) + 1e-12


def test_qldp_to_qprldp_delta_values():
    assert pr.qldp_to_qprldp_delta(epsilon=0.5, delta=0.1, epsilon_prime=1.0) == pytest.approx(
        0.1 * math.exp(1.0) / (math.exp(1.0) - math.exp(0.5)), rel=1e-12)
    assert pr.qldp_to_qprldp_delta(epsilon=0.0, delta=0.0, epsilon_prime=1.0) == 0.0
    assert pr.qldp_to_qprldp_delta(epsilon=1.0, delta=0.9, epsilon_prime=1.01) == 1.0
    exact = 0.1 / (1 - math.exp(-0.5))
    assert pr.qldp_to_qprldp_delta(epsilon=0.5, delta=0.1, epsilon_prime=1.0) >= exact


def test_qldp_to_qprldp_delta_errors():
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon_prime` must be > `epsilon` = 1. Found 0.5.")):
        pr.qldp_to_qprldp_delta(epsilon=1.0, delta=0.1, epsilon_prime=0.5)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1]. Found 1.3.")):
        pr.qldp_to_qprldp_delta(epsilon=0.0, delta=1.3, epsilon_prime=1.0)
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon` must be finite and >= 0. Found -1.")):
        pr.qldp_to_qprldp_delta(epsilon=-1.0, delta=0.1, epsilon_prime=1.0)
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon_prime` must be > `epsilon` = 0.5. Found 0.5.")):
        pr.qldp_implies_qprldp(depolarizing(0.5, 2), np.eye(2) / 2, np.eye(2) / 2,
                               epsilon=0.5, epsilon_prime=0.5)


# ---------------------------------------------------------------- non-equivalence


@pytest.mark.parametrize(
    ("p", "d", "eps", "qldp", "qprldp"),
    [(0.5, 2, 0.5, 0.337820, 0.75), (0.2, 4, 1.0, 0.714086, 0.95)],
)
def test_non_equivalence_witness(p, d, eps, qldp, qprldp):
    w = pr.non_equivalence_witness(p=p, d=d, epsilon=eps)
    assert w.qldp_delta == pytest.approx(qldp, abs=1e-6)
    ch = depolarizing(p, d)
    v = violation_probability(ch(w.rho), ch(w.sigma), epsilon=eps)
    assert v == pytest.approx(qprldp, abs=1e-9)
    assert w.violation_probability == pytest.approx(v, abs=1e-12)
    assert w.qldp_delta < w.violation_probability
    # the QLDP value of the witness pair itself respects the channel's QLDP δ
    assert hockey_stick_divergence(ch(w.rho), ch(w.sigma), gamma=math.exp(eps)) <= (
        w.qldp_delta + 1e-12)
    assert qprldp_certificate(ch, epsilon=eps).delta == pytest.approx(qprldp, abs=1e-9)


def test_non_equivalence_errors():
    with pytest.raises(ValueError, match=re.escape("`p` must be in (0, 1). Found 1.")):
        pr.non_equivalence_witness(p=1.0)
    with pytest.raises(ValueError, match=re.escape("`d` must be an integer >= 2. Found 1.")):
        pr.non_equivalence_witness(d=1)
    eps0 = math.log(3.0)
    with pytest.raises(ValueError, match=re.escape(
            f"`epsilon` must be < epsilon_0 = {eps0:.6g}. Found 2.")):
        pr.non_equivalence_witness(p=0.5, d=2, epsilon=2.0)


# ---------------------------------------------------------------- unitary invariance


def _check_unitary(seed, eps):
    rng, ch, rho, sigma = _setup(seed)
    u = random_unitary(rng, ch.output_dim)
    w = pr.unitary_invariance(ch, u, rho, sigma, epsilon=eps)
    assert w.hockey_stick_rotated == pytest.approx(w.hockey_stick, abs=1e-9)
    assert w.violation_probability_rotated == pytest.approx(w.violation_probability, abs=1e-7)
    rot = Channel([u @ k for k in ch.kraus])
    assert violation_probability(rot(rho), rot(sigma), epsilon=eps) == pytest.approx(
        violation_probability(ch(rho), ch(sigma), epsilon=eps), abs=1e-7)


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, eps=EPS)
def test_unitary_invariance_property(seed, eps):
    _check_unitary(seed, eps)



def test_unitary_invariance_errors():
    ch = depolarizing(0.5, 2)
    with pytest.raises(ValueError, match=re.escape("`unitary` must have shape (2, 2). Found "
                                                   "shape (3, 3).")):
        pr.unitary_invariance(ch, np.eye(3), np.eye(2) / 2, np.eye(2) / 2, epsilon=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`unitary` must be unitary. Found max |U^dagger U - I| entry 3.")):
        pr.unitary_invariance(ch, 2 * np.eye(2), np.eye(2) / 2, np.eye(2) / 2, epsilon=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`rho` must have the channel's input dimension 2. Found dimension 3.")):
        pr.unitary_invariance(ch, np.eye(2), np.eye(3) / 3, np.eye(2) / 2, epsilon=0.1)


# ---------------------------------------------------------------- tensor composition


def _check_tensor(seed, e1, e2, gap):
    rng = np.random.default_rng(seed)
    da, db = (int(x) for x in rng.integers(1, 5, size=2))
    oa, ob = (int(x) for x in rng.integers(1, 5, size=2))
    a, b = random_channel(rng, da, oa), random_channel(rng, db, ob)
    r1, s1 = random_state(rng, da), random_state(rng, da)
    r2, s2 = random_state(rng, db), random_state(rng, db)
    w = pr.tensor_composition(a, b, r1, s1, r2, s2, epsilon1=e1, epsilon2=e2,
                              epsilon_prime=e1 + e2 + gap)
    joint = hockey_stick_divergence(np.kron(a(r1), b(r2)), np.kron(a(s1), b(s2)),
                                    gamma=math.exp(e1 + e2))
    assert w.joint_hockey_stick == pytest.approx(joint, abs=1e-12)
    assert joint <= w.qldp_bound + 1e-7
    vj = violation_probability(np.kron(a(r1), b(r2)), np.kron(a(s1), b(s2)),
                               epsilon=e1 + e2 + gap)
    assert w.joint_violation_probability == pytest.approx(vj, abs=1e-12)
    assert vj <= w.qprldp_bound + 1e-6 / (1 - math.exp(-gap))


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, e1=st.floats(0.0, 2.0), e2=st.floats(0.0, 2.0), gap=st.floats(0.01, 2.0))
def test_tensor_composition_property(seed, e1, e2, gap):
    _check_tensor(seed, e1, e2, gap)



def test_tensor_composition_local_depolarizing():
    # D_p ⊗ D_p on product inputs: exact QLDP δ of each factor composes within the bound.
    p, eps = 0.5, 0.3
    ch = depolarizing(p, 2)
    d1 = qldp_certificate(ch, epsilon=eps).delta
    _, bound = pr.tensor_qldp_delta(epsilon1=eps, delta1=d1, epsilon2=eps, delta2=d1)
    z, o = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
    joint = hockey_stick_divergence(np.kron(ch(z), ch(z)), np.kron(ch(o), ch(o)),
                                    gamma=math.exp(2 * eps))
    assert joint <= bound
    assert bound == pytest.approx(d1 + math.exp(eps) * d1, rel=1e-12)


def test_tensor_delta_values_and_errors():
    assert pr.tensor_qldp_delta(epsilon1=0.0, delta1=0.0, epsilon2=0.0, delta2=0.0) == (0.0, 0.0)
    eps, delta = pr.tensor_qldp_delta(epsilon1=1.0, delta1=0.5, epsilon2=1.0, delta2=0.5)
    assert (eps, delta) == (2.0, 1.0)
    eps, delta = pr.tensor_qldp_delta(epsilon1=0.5, delta1=0.1, epsilon2=1.0, delta2=0.0)
    assert delta == pytest.approx(0.1) and delta >= 0.1
    with pytest.raises(ValueError, match=re.escape("`delta2` must be in [0, 1]. Found -0.1.")):
        pr.tensor_qldp_delta(epsilon1=0.5, delta1=0.1, epsilon2=1.0, delta2=-0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon_prime` must be > `epsilon1 + epsilon2` = 1.5. Found 1.")):
        pr.tensor_qprldp_delta(epsilon1=0.5, delta1=0.1, epsilon2=1.0, delta2=0.0,
                               epsilon_prime=1.0)


# ---------------------------------------------------------------- non-convexity


def _grid_sup_violation(ch: Channel, eps: float, n: int = 401) -> float:
    # Measure-and-prepare channels: the output is diag(a W[:, 0] + (1 - a) W[:, 1]) with
    # a = <0|rho|0>, so the violation probability is classical; scan all (a, b) on a grid, with
    # the strict event {P_a > e^eps P_b} (no tolerance: counts at least as much as the library).
    e0 = np.diag(ch(np.diag([1.0, 0.0])).real)
    e1 = np.diag(ch(np.diag([0.0, 1.0])).real)
    grid = np.linspace(0.0, 1.0, n)
    probs = grid[:, None] * e0[None, :] + (1 - grid[:, None]) * e1[None, :]  # (n, d_out)
    pa, pb = probs[:, None, :], probs[None, :, :]
    viol = np.where(pa - math.exp(eps) * pb > 0, pa, 0.0).sum(axis=-1)
    # cross-check a few grid points against the library's quantum routine
    for i, j in [(0, n - 1), (n - 1, 0), (n // 3, n // 7)]:
        assert violation_probability(np.diag(probs[i]), np.diag(probs[j]), epsilon=eps) == (
            pytest.approx(viol[i, j], abs=1e-12))
    return float(viol.max())


def test_non_convexity_witness():
    w = pr.non_convexity_witness()
    assert (w.epsilon, w.delta, w.weight) == (1.0, 0.1, 0.5)
    # mixture recomputed from the two channels' outputs
    mix_r = 0.5 * w.channel_a(w.rho) + 0.5 * w.channel_b(w.rho)
    mix_s = 0.5 * w.channel_a(w.sigma) + 0.5 * w.channel_b(w.sigma)
    np.testing.assert_allclose(w.mixture(w.rho), mix_r, atol=1e-14)
    v = violation_probability(mix_r, mix_s, epsilon=w.epsilon)
    assert v == pytest.approx((0.1 + 2.5 / 3.5) / 2, abs=1e-12)
    assert w.violation_probability == pytest.approx(v, abs=1e-14)
    assert v > w.delta
    # exact classical check: outputs are diag(...) of a = rho_00 only; ratios are explicit
    ra, sa = w.channel_a(w.rho).real, w.channel_a(w.sigma).real
    np.testing.assert_allclose(np.diag(ra), [0.1, 0.9], atol=1e-14)
    np.testing.assert_allclose(np.diag(sa), [0.0, 1.0], atol=1e-14)
    rb, sb = w.channel_b(w.rho).real, w.channel_b(w.sigma).real
    assert max(rb[0, 0] / sb[0, 0], sb[1, 1] / rb[1, 1]) == pytest.approx(2.5)
    assert 2.5 < math.e
    # each channel is (1, 0.1)-QPrLDP: exhaustive scan over the classical inputs, plus search
    for ch in (w.channel_a, w.channel_b):
        assert _grid_sup_violation(ch, w.epsilon) <= w.delta + 1e-12
        res = worst_case_search(ch, epsilon=w.epsilon, notion="qprldp", restarts=8, seed=0)
        assert res.value <= w.delta + 1e-9
    assert _grid_sup_violation(w.channel_b, w.epsilon) == 0.0


def test_post_processing_counterexample():
    w = pr.post_processing_counterexample()
    assert (w.epsilon, w.delta, w.flip_probability) == (1.0, 0.1, 0.02)
    n = bit_flip(0.02)
    r_out, s_out = n(w.channel(w.rho)), n(w.channel(w.sigma))
    np.testing.assert_allclose(np.diag(r_out).real, [0.116, 0.884], atol=1e-14)
    np.testing.assert_allclose(np.diag(s_out).real, [0.02, 0.98], atol=1e-14)
    v = violation_probability(r_out, s_out, epsilon=1.0)
    assert v == pytest.approx(0.116, abs=1e-12)
    assert w.violation_probability == pytest.approx(v, abs=1e-14)
    assert v > w.delta
    # the channel itself is exactly (1, 0.1)-QPrLDP (attained at |0>, |1>)
    assert _grid_sup_violation(w.channel, 1.0) == pytest.approx(0.1, abs=1e-12)
    # QLDP, unlike QPrLDP, cannot increase under post-processing (data processing of E_γ)
    e_before = hockey_stick_divergence(w.channel(w.rho), w.channel(w.sigma), gamma=math.e)
    assert hockey_stick_divergence(r_out, s_out, gamma=math.e) <= e_before + 1e-12


def test_measure_prepare_channel_errors():
    with pytest.raises(ValueError, match=re.escape(
            "`transition` columns must sum to 1. Found column sums [1.0, 0.5].")):
        measure_prepare_channel([[1.0, 0.5], [0.0, 0.0]])
    with pytest.raises(ValueError, match=re.escape(
            "`transition` must be a 2-D matrix. Found shape (2,).")):
        measure_prepare_channel([0.5, 0.5])


def test_witnesses_are_frozen():
    w = pr.non_convexity_witness()
    with pytest.raises(AttributeError):
        w.delta = 0.5  # type: ignore[misc]


def test_qprldp_implies_qldp_errors():
    ch = depolarizing(0.5, 2)
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon` must be finite and >= 0. Found -0.5.")):
        pr.qprldp_implies_qldp(ch, np.eye(2) / 2, np.eye(2) / 2, epsilon=-0.5)
    with pytest.raises(ValueError, match=re.escape("`sigma` must have unit trace. Found trace 2.")):
        pr.qprldp_implies_qldp(ch, np.eye(2) / 2, np.eye(2), epsilon=0.5)
