"""Tests for qprldp_core.properties.composition: tensor products on product inputs.

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
from qprldp_core.certify import qldp_certificate
from qprldp_core.channels import depolarizing
from qprldp_core.divergences import hockey_stick_divergence, violation_probability

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _check_tensor(random_state, random_channel, seed, e1, e2, gap):
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
def test_tensor_composition_property(random_state, random_channel, seed, e1, e2, gap):
    _check_tensor(random_state, random_channel, seed, e1, e2, gap)


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
