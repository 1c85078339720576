"""Tests for qprldp_core.properties.implications: QPrLDP implies QLDP, and the converse
with a change of parameters, recomputed pair by pair.

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

from qprldp_core import properties as pr
from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import depolarizing
from qprldp_core.divergences import hockey_stick_divergence, violation_probability

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


EPS = st.floats(min_value=0.0, max_value=3.0, allow_nan=False)


def _check_implication(channel_and_pair, seed, eps):
    rng, ch, rho, sigma = channel_and_pair(seed)
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
def test_qprldp_implies_qldp_property(channel_and_pair, seed, eps):
    _check_implication(channel_and_pair, seed, eps)


def _check_converse(channel_and_pair, seed, eps, gap):
    rng, ch, rho, sigma = channel_and_pair(seed)
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
def test_qldp_implies_qprldp_property(channel_and_pair, seed, eps, gap):
    _check_converse(channel_and_pair, seed, eps, gap)


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


def test_qprldp_implies_qldp_errors():
    ch = depolarizing(0.5, 2)
    with pytest.raises(ValueError, match=re.escape(
            "`epsilon` must be finite and >= 0. Found -0.5.")):
        pr.qprldp_implies_qldp(ch, np.eye(2) / 2, np.eye(2) / 2, epsilon=-0.5)
    with pytest.raises(ValueError, match=re.escape("`sigma` must have unit trace. Found trace 2.")):
        pr.qprldp_implies_qldp(ch, np.eye(2) / 2, np.eye(2), epsilon=0.5)
