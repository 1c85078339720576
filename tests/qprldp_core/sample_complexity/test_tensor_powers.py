"""Tests for qprldp_core.sample_complexity._tensor_powers: the Schur-Weyl blocks of
qubit tensor powers match the explicit 2^n x 2^n matrices."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_limits

import qprldp_core.sample_complexity._tensor_powers
from qprldp_core.channels import Channel
from qprldp_core.divergences import violation_probability
from qprldp_core.random import random_channel as _random_channel
from qprldp_core.random import random_density_matrix
from qprldp_core.sample_complexity import qspri

# The private helpers under test, reached as module attributes.
tp = qprldp_core.sample_complexity._tensor_powers


@pytest.fixture(autouse=True)
def _single_threaded_blas():
    # Small dense eigendecompositions: multithreaded BLAS only adds contention on shared CPUs.
    with threadpool_limits(limits=1):
        yield


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def random_state(rng: np.random.Generator, d: int) -> np.ndarray:
    kind = rng.integers(0, 6)
    if kind == 0:
        rho = np.zeros((d, d), dtype=complex)
        k = rng.integers(0, d)
        rho[k, k] = 1.0
        return rho
    if kind == 1:
        return np.eye(d, dtype=complex) / d
    return random_density_matrix(d, seed=rng)


def random_channel(rng: np.random.Generator, din: int, dout: int) -> Channel:
    return _random_channel(din, dout, seed=rng)


def qubit_pair(rng: np.random.Generator):
    """Outputs of a random channel C^din -> C^2 on random inputs (d_in <= 4)."""
    din = int(rng.integers(1, 5))
    ch = random_channel(rng, din, 2)
    r, s = ch(random_state(rng, din)), ch(random_state(rng, din))
    if rng.random() < 0.05:
        s = r.copy()
    return r, s


@settings(derandomize=True, max_examples=100, deadline=None)
@given(seed=SEEDS, n=st.integers(0, 6), mu=st.floats(0.0, 5.0))
def test_schur_weyl_blocks_match_explicit_tensor_powers(seed, n, mu):
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
