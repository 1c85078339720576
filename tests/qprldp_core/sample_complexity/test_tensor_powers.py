"""Tests for qprldp_core.sample_complexity._tensor_powers: the Schur-Weyl blocks of
qubit tensor powers match the explicit 2^n x 2^n matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import qprldp_core.sample_complexity._tensor_powers
from qprldp_core.divergences import violation_probability
from qprldp_core.sample_complexity import qspri

# The private helpers under test, reached as module attributes.
tp = qprldp_core.sample_complexity._tensor_powers


pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, n=st.integers(0, 6), mu=st.floats(0.0, 5.0))
def test_schur_weyl_blocks_match_explicit_tensor_powers(qubit_pair, seed, n, mu):
    rng = np.random.default_rng(seed)
    r, s = qubit_pair(rng)
    x = tp.tensor_power(r, n) * mu - tp.tensor_power(s, n)
    ev = np.sort(np.linalg.eigvalsh((x + x.conj().T) / 2))
    blocks = tp.pair_blocks(r, s, n)
    ev2 = np.sort(np.concatenate(
        [np.repeat(np.linalg.eigvalsh(mu * rb - sb), m) for m, rb, sb in blocks]))
    np.testing.assert_allclose(ev, ev2, atol=1e-10)
    if n >= 1:
        xr = tp.tensor_power(r, n) - 1.3 * tp.tensor_power(s, n)
        vex = violation_probability(tp.tensor_power(r, n), tp.tensor_power(s, n),
                                    epsilon=math.log(1.3), atol=1e-8)
        assert qspri._block_violation(blocks, 1.3, 1e-8) == pytest.approx(vex, abs=1e-9)
        assert xr.shape == (2**n, 2**n)
