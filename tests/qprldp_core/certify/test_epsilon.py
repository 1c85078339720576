"""Tests for qprldp_core.certify.epsilon: the smallest certified ε for a δ."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.certify import (
    qldp_certificate,
    qldp_epsilon,
    qprldp_certificate,
    qprldp_epsilon,
)
from qprldp_core.channels import depolarizing, local_depolarizing
from qprldp_core.privacy import pure_qldp_epsilon


# -- smallest ε for a δ ------------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("delta", [0.0, 1e-5, 0.2, 0.6, 0.95, 1.0])
def test_smallest_epsilon_global(d, p, delta):
    ch = depolarizing(p, d)
    for fn, cert in ((qldp_epsilon, qldp_certificate), (qprldp_epsilon, qprldp_certificate)):
        eps = fn(ch, delta=delta)
        assert cert(ch, epsilon=eps).delta <= delta * (1 + 1e-12)  # certified (re-checked)
        if eps > 0:
            assert cert(ch, epsilon=eps * (1 - 1e-9)).delta > delta  # and minimal
    assert qprldp_epsilon(ch, delta=0.0) == pytest.approx(math.log(1 + d * (1 - p) / p))


def test_smallest_epsilon_identity():
    assert qldp_epsilon(depolarizing(0.0, 2), delta=0.5) == math.inf
    assert qprldp_epsilon(depolarizing(0.0, 2), delta=1.0) == 0.0


@pytest.mark.parametrize("n", [2, 5])
def test_local_smallest_epsilon(n):
    ch = local_depolarizing(0.4, n)
    for fn, cert in ((qldp_epsilon, qldp_certificate), (qprldp_epsilon, qprldp_certificate)):
        for delta in (0.0, 0.3, 0.9):
            eps = fn(ch, delta=delta)
            assert cert(ch, epsilon=eps).delta <= delta * (1 + 1e-12)
        assert fn(ch, delta=0.0) <= n * math.log(1.6 / 0.4) + 1e-12


# -- never below the closed forms (issue 42): the bracket's end on the side of more privacy loss

@settings(max_examples=60, deadline=None)
@given(p=st.floats(0.01, 1.3), delta=st.sampled_from([0.0, 1e-9, 1e-5, 1e-3, 0.05, 0.2, 0.5]))
def test_one_qubit_local_depolarizing_is_the_global_closed_form(p, delta):
    """n = 1 is the global qubit channel: the closed form itself, not a bisection (which landed
    up to 2e-13 below it)."""
    for fn in (qldp_epsilon, qprldp_epsilon):
        assert fn(local_depolarizing(p, 1), delta=delta) == fn(depolarizing(p, 2), delta=delta)


@settings(max_examples=40, deadline=None)
@given(p=st.floats(0.02, 0.98), n=st.integers(2, 5))
def test_local_pure_epsilon_is_never_below_its_closed_form(p, n):
    """δ = 0: ε₀ = n ln((2 − p)/p) (pure_qldp_epsilon's closed form). The bisection used to
    stop inside the certificate's tie window, up to 1.3e-11 below it."""
    closed = pure_qldp_epsilon(local_depolarizing(p, n))
    for fn in (qldp_epsilon, qprldp_epsilon):
        eps = fn(local_depolarizing(p, n), delta=0.0)
        assert closed <= eps <= closed * (1 + 1e-14)


@pytest.mark.parametrize("n, p", [(2, 0.1), (3, 0.4), (2, 0.8)])
@pytest.mark.parametrize("delta", [1e-6, 0.01, 0.3])
def test_local_bisection_returns_a_certified_end_strictly(n, p, delta):
    """δ > 0: the returned ε is certified with no tolerance, and ε·(1 − 1e-9) is not."""
    ch = local_depolarizing(p, n)
    for fn, cert in ((qldp_epsilon, qldp_certificate), (qprldp_epsilon, qprldp_certificate)):
        eps = fn(ch, delta=delta)
        if eps > 0:
            assert cert(ch, epsilon=eps).delta <= delta
            assert cert(ch, epsilon=eps * (1 - 1e-9)).delta > delta
