"""Tests for qprldp_core.certify.local_depolarizing: exact threshold and proven
bounds for D_p^(⊗n), checked against the search and explicit matrices."""

import math

import pytest

from qprldp_core.certify import (
    local_depolarizing_bounds,
    qldp_certificate,
    qprldp_certificate,
)
from qprldp_core.channels import depolarizing, local_depolarizing
from qprldp_core.privacy import qldp_value, qprldp_value, worst_case_search


# -- local depolarizing -------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.2, 0.6, 1.0, 1.2])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.5])
def test_local_n1_equals_global(p, eps):
    for notion, cert in (("QLDP", qldp_certificate), ("QPrLDP", qprldp_certificate)):
        a = cert(local_depolarizing(p, 1), epsilon=eps)
        b = cert(depolarizing(p, 2), epsilon=eps)
        assert a.exact and a.delta == pytest.approx(b.delta)
        lo, up = local_depolarizing_bounds(p, 1, epsilon=eps, notion=notion)
        assert lo == up == pytest.approx(b.delta)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("p", [0.15, 0.5, 1.25])
@pytest.mark.parametrize("eps", [0.0, 0.4, 1.5, 3.0])
def test_local_bounds_bracket_search(n, p, eps):
    ch = local_depolarizing(p, n)
    for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
        c = cert(ch, epsilon=eps)
        lo = c.delta if c.exact else c.delta_lower
        assert lo <= c.delta + 1e-12
        res = worst_case_search(ch, epsilon=eps, notion=notion, restarts=3, seed=0, max_iter=30)
        assert res.value <= c.delta + 1e-9  # proven upper bound never beaten
        val = (qldp_value if notion == "qldp" else qprldp_value)(ch, *c.witness, epsilon=eps)
        assert val == pytest.approx(lo, abs=1e-9)  # witness attains the lower bound


@pytest.mark.parametrize("n", [2, 3, 7, 50])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_local_pure_threshold_is_exact(n, p):
    ch = local_depolarizing(p, n)
    thr = n * math.log((2 - p) / p)
    for cert in (qldp_certificate, qprldp_certificate):
        at = cert(ch, epsilon=thr)
        assert at.delta == 0.0 and at.exact
        below = cert(ch, epsilon=thr * (1 - 1e-6))
        assert below.delta > 0.0
        assert (below.delta_lower or below.delta) > 0.0  # proven: not pure below the threshold


def test_local_large_n_has_no_matrices():
    c = qprldp_certificate(local_depolarizing(0.3, 50), epsilon=5.0)
    assert c.witness is None and c.side in ("upper_bound", "exact")
    lo, up = local_depolarizing_bounds(0.3, 50, epsilon=5.0)
    assert 0 <= lo <= up <= 1


def test_local_qldp_upper_is_exact_for_one_qubit_and_valid_for_entangled(seeded_state):
    # entangled inputs: random mixed pairs never exceed the proven upper bound
    ch = local_depolarizing(0.3, 2)
    for s in range(30):
        r, t = seeded_state(s, 4), seeded_state(s + 50, 4)
        for eps in (0.0, 1.0):
            up_q = qldp_certificate(ch, epsilon=eps).delta
            up_p = qprldp_certificate(ch, epsilon=eps).delta
            assert qldp_value(ch, r, t, epsilon=eps) <= up_q + 1e-9
            assert qprldp_value(ch, r, t, epsilon=eps) <= up_p + 1e-9
