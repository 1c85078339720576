"""Tests for qprldp_core.privacy.search: the worst-case search is a lower bound with a
witness, never above the closed forms."""

import dataclasses
import re

import numpy as np
import pytest

from qprldp_core.certify import qldp_certificate, qprldp_certificate
from qprldp_core.channels import depolarizing
from qprldp_core.privacy import (
    qldp_value,
    qprldp_value,
    worst_case_search,
)


@pytest.mark.parametrize("d", [2, 3, 4, 8])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.5])
def test_search_never_exceeds_closed_form(d, p, eps):
    ch = depolarizing(p, d)
    for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
        exact = cert(ch, epsilon=eps).delta
        res = worst_case_search(ch, epsilon=eps, notion=notion, restarts=3, seed=1, max_iter=30)
        assert res.value <= exact + 1e-9
        # the search is good enough to find the closed-form worst case on depolarizing noise
        assert res.value >= exact - 1e-9
        assert res.is_lower_bound and res.notion == notion and res.epsilon == eps


@pytest.mark.parametrize("d", [2, 3])
def test_search_on_generic_kraus_path(as_general, d):
    ch = as_general(depolarizing(0.4, d))
    for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
        exact = cert(depolarizing(0.4, d), epsilon=0.4).delta
        res = worst_case_search(ch, epsilon=0.4, notion=notion, restarts=3, seed=0)
        assert exact - 1e-9 <= res.value <= exact + 1e-9


def test_search_value_is_attained_by_witness_and_seeded(seeded_state, seeded_channel):
    ch = seeded_channel(3, 3)
    a = worst_case_search(ch, epsilon=0.2, notion="qprldp", restarts=3, seed=5)
    b = worst_case_search(ch, epsilon=0.2, notion="qprldp", restarts=3, seed=5)
    assert a.value == b.value and np.array_equal(a.rho, b.rho)
    assert qprldp_value(ch, a.rho, a.sigma, epsilon=0.2) == pytest.approx(a.value, abs=1e-12)
    # random pairs never beat the QLDP search by much (it is a local-ascent lower bound)
    q = worst_case_search(ch, epsilon=0.2, notion="qldp", restarts=4, seed=0)
    for s in range(20):
        r, t = seeded_state(s, 3, rank=1), seeded_state(s + 100, 3, rank=1)
        assert qldp_value(ch, r, t, epsilon=0.2) <= q.value + 1e-9
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.value = 0.0


def test_search_errors():
    ch = depolarizing(0.3, 2)
    msg = (
        "`notion` must be 'qldp' or 'qprldp'. Found 'ldp'."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        worst_case_search(ch, epsilon=0.1, notion="ldp")
    msg = (
        "`restarts` must be a positive integer. Found 0."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        worst_case_search(ch, epsilon=0.1, restarts=0)
