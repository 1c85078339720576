"""Helpers of the sample-complexity tests (fixtures returning plain functions, see
``tests/qprldp_core/conftest.py``): qubit states and private qubit channels for the brute force."""

import numpy as np
import pytest

from qprldp_core.channels import Channel, depolarizing


def _at_most(a, b) -> bool:
    """a <= b where None means 'more than NMAX' (the brute force's limit in the test module)."""
    if b is None:
        return True
    return a <= b


@pytest.fixture(scope="session")
def at_most():
    """``at_most(a, b)``: a <= b, where b = None (no n <= NMAX found by the brute force) means
    'more than NMAX', so that any a passes."""
    return _at_most


@pytest.fixture(scope="session")
def qubit_pair(random_state, random_channel):
    def qubit_pair(rng: np.random.Generator):
        """Outputs of a random channel C^din -> C^2 on random inputs (d_in <= 4)."""
        din = int(rng.integers(1, 5))
        ch = random_channel(rng, din, 2)
        r, s = ch(random_state(rng, din)), ch(random_state(rng, din))
        if rng.random() < 0.05:
            s = r.copy()
        return r, s

    return qubit_pair


@pytest.fixture(scope="session")
def private_qubit_channel(random_channel):
    def private_qubit_channel(rng, p, notion):
        """N2 ∘ D_p ∘ N1 (QLDP: post-processing keeps E_γ) or U ∘ D_p ∘ N1 (QPrLDP), output
        C^2; returns the channel and its input dimension."""
        din = int(rng.integers(1, 5))
        pre = random_channel(rng, din, 2)
        if notion == "qldp":
            post = random_channel(rng, 2, 2)
        else:
            g = rng.normal(size=(2, 2)) + 1j * rng.normal(size=(2, 2))
            post = Channel([np.linalg.qr(g)[0]])
        return post.compose(depolarizing(p, 2).compose(pre)), din

    return private_qubit_channel
