"""Tests for qprldp_core.divergences.relative_entropies: Umegaki, max- and sandwiched
Rényi relative entropies."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.divergences import (
    max_relative_entropy,
    sandwiched_renyi_divergence,
    umegaki_relative_entropy,
)

seeds = st.integers(0, 2**31 - 1)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=seeds, d=st.integers(2, 4))
def test_renyi_alpha_to_one_is_umegaki(seeded_state, seed, d):
    rho, sigma = seeded_state(seed, d), seeded_state(seed + 11, d, rank=d)
    u = umegaki_relative_entropy(rho, sigma)
    for a in (1 - 1e-6, 1 + 1e-6):
        assert sandwiched_renyi_divergence(rho, sigma, alpha=a) == pytest.approx(u, abs=1e-4)
    assert sandwiched_renyi_divergence(rho, sigma, alpha=1.0) == u
    # monotone in α and bounded by D_max
    vals = [sandwiched_renyi_divergence(rho, sigma, alpha=a) for a in (0.5, 0.9, 1.0, 1.5, 3.0)]
    assert all(x <= y + 1e-9 for x, y in zip(vals, vals[1:], strict=False))
    dmax = max_relative_entropy(rho, sigma)
    assert vals[-1] <= dmax + 1e-9
    assert sandwiched_renyi_divergence(rho, sigma, alpha=math.inf) == dmax
    big = sandwiched_renyi_divergence(rho, sigma, alpha=2000.0)
    assert big == pytest.approx(dmax, rel=1e-2, abs=1e-3)
