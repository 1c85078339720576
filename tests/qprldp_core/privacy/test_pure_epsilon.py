"""Tests for qprldp_core.privacy.pure_epsilon: the smallest ε of (ε, 0)-QLDP."""

import math

import numpy as np
import pytest

from qprldp_core.certify import qldp_certificate
from qprldp_core.channels import (
    bit_flip,
    depolarizing,
    local_depolarizing,
    unitary,
)
from qprldp_core.privacy import (
    SearchResult,
    pure_qldp_epsilon,
)


@pytest.mark.parametrize("p,d", [(0.3, 2), (0.5, 4), (1.0, 3), (1.2, 2), (1.1, 3)])
def test_pure_qldp_epsilon_depolarizing(as_general, p, d):
    ch = depolarizing(p, d)
    a, b = 1 - p + p / d, p / d
    assert pure_qldp_epsilon(ch) == pytest.approx(math.log(max(a, b) / min(a, b)))
    if p <= 1:
        assert pure_qldp_epsilon(ch) == pytest.approx(math.log(1 + d * (1 - p) / p))
    # E_{e^ε} = 0 at ε0 and > 0 just below (closed forms, d = 2 or p ≤ 1)
    if p <= 1 or d == 2:
        eps0 = pure_qldp_epsilon(ch)
        assert qldp_certificate(ch, epsilon=eps0).delta == 0.0
        if eps0 > 0:
            assert qldp_certificate(ch, epsilon=0.99 * eps0).delta > 0.0
    # the general search gives a lower bound close to the exact value
    res = pure_qldp_epsilon(as_general(ch), restarts=4, seed=0)
    assert isinstance(res, SearchResult) and res.is_lower_bound
    assert res.value <= pure_qldp_epsilon(ch) + 1e-9
    assert res.value >= pure_qldp_epsilon(ch) - 1e-6


def test_pure_qldp_epsilon_other_channels(as_general):
    assert pure_qldp_epsilon(depolarizing(0.0, 2)) == math.inf
    assert pure_qldp_epsilon(local_depolarizing(0.3, 4)) == pytest.approx(4 * math.log(1.7 / 0.3))
    assert pure_qldp_epsilon(unitary(np.eye(2))) == math.inf
    assert pure_qldp_epsilon(bit_flip(0.5)) == math.inf
    assert pure_qldp_epsilon(as_general(unitary(np.eye(2)))).value == math.inf
