"""Tests for qprldp_core.properties.unitary_invariance: unitary post-processing leaves
both quantities unchanged.

Property tests draw random channels (Stinespring isometries from QR of Ginibre matrices) and
random states (Ginibre of random rank, plus basis states and the maximally mixed state), d <= 4.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core import properties as pr
from qprldp_core.channels import Channel, depolarizing
from qprldp_core.divergences import violation_probability
from qprldp_core.random import random_unitary as _random_unitary

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


EPS = st.floats(min_value=0.0, max_value=3.0, allow_nan=False)


def random_unitary(rng: np.random.Generator, d: int) -> np.ndarray:
    return _random_unitary(d, seed=rng)


def _check_unitary(channel_and_pair, seed, eps):
    rng, ch, rho, sigma = channel_and_pair(seed)
    u = random_unitary(rng, ch.output_dim)
    w = pr.unitary_invariance(ch, u, rho, sigma, epsilon=eps)
    assert w.hockey_stick_rotated == pytest.approx(w.hockey_stick, abs=1e-9)
    assert w.violation_probability_rotated == pytest.approx(w.violation_probability, abs=1e-7)
    rot = Channel([u @ k for k in ch.kraus])
    assert violation_probability(rot(rho), rot(sigma), epsilon=eps) == pytest.approx(
        violation_probability(ch(rho), ch(sigma), epsilon=eps), abs=1e-7)


@settings(derandomize=True, max_examples=1000, deadline=None)
@given(seed=SEEDS, eps=EPS)
def test_unitary_invariance_property(channel_and_pair, seed, eps):
    _check_unitary(channel_and_pair, seed, eps)


def test_unitary_invariance_errors():
    ch = depolarizing(0.5, 2)
    with pytest.raises(ValueError, match=re.escape("`unitary` must have shape (2, 2). Found "
                                                   "shape (3, 3).")):
        pr.unitary_invariance(ch, np.eye(3), np.eye(2) / 2, np.eye(2) / 2, epsilon=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`unitary` must be unitary. Found max |U^dagger U - I| entry 3.")):
        pr.unitary_invariance(ch, 2 * np.eye(2), np.eye(2) / 2, np.eye(2) / 2, epsilon=0.1)
    with pytest.raises(ValueError, match=re.escape(
            "`rho` must have the channel's input dimension 2. Found dimension 3.")):
        pr.unitary_invariance(ch, np.eye(2), np.eye(3) / 3, np.eye(2) / 2, epsilon=0.1)
