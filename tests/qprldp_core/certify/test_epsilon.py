"""Tests for qprldp_core.certify.epsilon: the smallest certified ε for a δ."""

import math

import pytest

from qprldp_core.certify import (
    qldp_certificate,
    qldp_epsilon,
    qprldp_certificate,
    qprldp_epsilon,
)
from qprldp_core.channels import depolarizing, local_depolarizing


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
