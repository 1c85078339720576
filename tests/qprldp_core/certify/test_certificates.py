"""Tests for qprldp_core.certify.certificates: closed forms for depolarizing noise
(exact, attained by their witnesses, never exceeded), and the fallbacks for other channels."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.certify import (
    qldp_certificate,
    qldp_epsilon,
    qprldp_certificate,
    qprldp_epsilon,
)
from qprldp_core.channels import Channel, bit_flip, depolarizing, unitary
from qprldp_core.divergences import hockey_stick_divergence, violation_probability
from qprldp_core.privacy import qldp_value, qprldp_value, worst_case_search


# -- global depolarizing closed forms ---------------------------------------------------------
@pytest.mark.parametrize(
    "p,d,eps,dq,dp",
    [
        (0.5, 2, 0.5, 0.337820, 0.75),
        (0.2, 4, 1.0, 0.714086, 0.95),
        (0.3, 2, math.log(1 + 2 * 0.7 / 0.3), 0.0, 0.0),
    ],
)
def test_required_values(p, d, eps, dq, dp):
    ch = depolarizing(p, d)
    cq, cp = qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)
    assert cq.delta == pytest.approx(dq, abs=5e-7)
    assert cp.delta == pytest.approx(dp, abs=5e-7)
    for c, notion in ((cq, "QLDP"), (cp, "QPrLDP")):
        assert c.exact and c.side == "exact" and c.notion == notion and c.epsilon == eps
        assert "depolarizing" in c.channel_description and "arXiv" in c.reference
    # witnesses attain the certified values
    assert qldp_value(ch, *cq.witness, epsilon=eps) == pytest.approx(cq.delta, abs=1e-9)
    assert qprldp_value(ch, *cp.witness, epsilon=eps) == pytest.approx(cp.delta, abs=1e-9)


@pytest.mark.parametrize("d", [2, 3, 4, 8])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.45, 0.9, 1.0])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.4, 1.3, 3.0])
def test_witness_attains_and_formulas(d, p, eps):
    ch = depolarizing(p, d)
    cq, cp = qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)
    g = math.exp(eps)
    assert cq.delta == pytest.approx(max(0.0, (1 - p) - (g - 1) * p / d), abs=1e-12)
    rho, sigma = cp.witness
    val = violation_probability(ch(rho), ch(sigma), epsilon=eps)
    assert val == pytest.approx(cp.delta, abs=1e-9)
    assert hockey_stick_divergence(ch(cq.witness[0]), ch(cq.witness[1]), gamma=g) == pytest.approx(
        cq.delta, abs=1e-9
    )
    assert cp.delta >= cq.delta - 1e-12  # QPrLDP ⇒ QLDP
    if p == 0.0:
        assert cq.delta == 1.0 and cp.delta == 1.0  # identity channel
    if p == 1.0:
        assert cq.delta == 0.0 and cp.delta == 0.0
    if eps == 0.0 and 0 < p < 1:
        assert cp.delta == pytest.approx((1 - p) + p * (d - 1) / d)  # k* = d − 1


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(2, 4),
    p=st.floats(0.0, 1.0),
    eps=st.floats(0.0, 4.0),
)
def test_closed_forms_never_exceeded_by_random_pairs(seeded_state, seed, d, p, eps):
    ch = depolarizing(p, d)
    rho, sigma = seeded_state(seed, d), seeded_state(seed + 1, d)
    assert qldp_value(ch, rho, sigma, epsilon=eps) <= qldp_certificate(ch, epsilon=eps).delta + 1e-9
    assert (
        qprldp_value(ch, rho, sigma, epsilon=eps)
        <= qprldp_certificate(ch, epsilon=eps).delta + 1e-9
    )


def test_monotone_in_epsilon():
    ch = depolarizing(0.3, 5)
    grid = np.linspace(0, 4, 81)
    for cert in (qldp_certificate, qprldp_certificate):
        vals = [cert(ch, epsilon=e).delta for e in grid]
        assert all(a >= b for a, b in zip(vals, vals[1:], strict=False))


@pytest.mark.parametrize("p", [1.05, 1.2, 4 / 3])
def test_qubit_depolarizing_above_one(p):
    ch = depolarizing(p, 2)
    gen = Channel(list(ch.kraus), atol=1e-9)
    for eps in (0.0, 0.3, 1.0):
        for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
            c = cert(ch, epsilon=eps)
            assert c.exact
            val = (qldp_value if notion == "qldp" else qprldp_value)(ch, *c.witness, epsilon=eps)
            assert val == pytest.approx(c.delta, abs=1e-9)
            res = worst_case_search(gen, epsilon=eps, notion=notion, restarts=3, seed=0)
            assert res.value <= c.delta + 1e-9


def test_d3_above_one_falls_back_to_search():
    c = qldp_certificate(depolarizing(1.1, 3), epsilon=0.2, restarts=2)
    assert c.side == "lower_bound" and not c.exact
    msg = (
        "qldp_epsilon: no certified upper bound"
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        qldp_epsilon(depolarizing(1.1, 3), delta=0.1)


def test_unitary_and_bit_flip_are_not_private():
    u = unitary(np.array([[0, 1], [1, 0]]))
    for ch in (u, bit_flip(0.3)):
        for cert, val in ((qldp_certificate, qldp_value), (qprldp_certificate, qprldp_value)):
            c = cert(ch, epsilon=2.0)
            assert c.delta == 1.0 and c.exact
            assert val(ch, *c.witness, epsilon=2.0) == pytest.approx(1.0)
    assert qldp_epsilon(u, delta=0.5) == math.inf and qprldp_epsilon(u, delta=1.0) == 0.0


def test_general_channel_gets_only_a_lower_bound(seeded_channel):
    ch = seeded_channel(0, 3)
    for notion, cert, val in (("QLDP", qldp_certificate, qldp_value),
                              ("QPrLDP", qprldp_certificate, qprldp_value)):
        c = cert(ch, epsilon=0.3, restarts=3, seed=0)
        assert c.side == "lower_bound" and not c.exact and c.notion == notion
        assert val(ch, *c.witness, epsilon=0.3) == pytest.approx(c.delta, abs=1e-9)
        assert "not a certificate" in str(c)
    msg = (
        "qprldp_epsilon: no certified upper bound"
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        qprldp_epsilon(ch, delta=0.1)


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(2, 4),
    p=st.floats(0.0, 1.0),
    eps=st.floats(0.0, 4.0),
)
def test_closed_forms_never_exceeded_1000(seeded_state, seed, d, p, eps):
    test_closed_forms_never_exceeded_by_random_pairs.hypothesis.inner_test(seeded_state, seed, d,
                                                                           p, eps)
