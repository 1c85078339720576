"""Tests for qprldp_core.properties.non_equivalence: the witness that QLDP and QPrLDP
differ at the same (ε, δ)."""

from __future__ import annotations

import math
import re

import pytest

from qprldp_core import properties as pr
from qprldp_core.certify import qprldp_certificate
from qprldp_core.channels import depolarizing
from qprldp_core.divergences import hockey_stick_divergence, violation_probability

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


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
