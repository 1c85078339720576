"""Helpers of the properties tests (fixtures returning plain functions, see
``tests/qprldp_core/conftest.py``)."""

import numpy as np
import pytest


@pytest.fixture(scope="session")
def channel_and_pair(random_state, random_channel):
    def channel_and_pair(seed):
        """``(rng, channel, rho, sigma)``: a random channel C^din -> C^dout (d <= 4) and two random
        inputs, drawn from ``np.random.default_rng(seed)``; ``rng`` is left for further draws."""
        rng = np.random.default_rng(seed)
        din, dout = (int(x) for x in rng.integers(1, 5, size=2))
        din = max(din, 1)
        ch = random_channel(rng, din, dout)
        return rng, ch, random_state(rng, din), random_state(rng, din)

    return channel_and_pair
