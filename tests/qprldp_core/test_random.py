"""Tests for qprldp_core.random."""

import re

import numpy as np
import pytest

from qprldp_core import random_channel, random_density_matrix, random_unitary


def test_shapes_properties_and_seeding():
    rho = random_density_matrix(4, seed=3)
    assert np.allclose(rho, rho.conj().T) and np.linalg.eigvalsh(rho).min() > -1e-12
    assert np.allclose(random_density_matrix(4, seed=3), rho)
    u = random_unitary(3, seed=1)
    assert np.allclose(u.conj().T @ u, np.eye(3))
    ch = random_channel(3, 2, seed=np.random.default_rng(0))
    assert sum(k.conj().T @ k for k in ch.kraus) == pytest.approx(np.eye(3))
    assert len(ch.kraus) in (2, 3, 4)


def test_errors():
    with pytest.raises(ValueError, match=re.escape("`rank` must be in [1, 2]. Found 3.")):
        random_density_matrix(2, rank=3)
    with pytest.raises(ValueError, match=re.escape("`d` must be a positive integer. Found 0.")):
        random_unitary(0)
    with pytest.raises(ValueError, match=re.escape("`num_kraus` must be an integer >= 2.")):
        random_channel(4, 2, num_kraus=1)
