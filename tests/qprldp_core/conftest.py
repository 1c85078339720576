"""Warnings are part of what these tests check: none may leak into the test output.

Every test under this directory runs with UserWarning and RuntimeWarning turned into errors, so a
test that provokes one on purpose must capture it with ``pytest.warns(..., match=...)`` and an
unexpected one (e.g. a NumPy ``divide by zero``) fails the test instead of scrolling past.

Shared helpers are fixtures here (with ``--import-mode=importlib`` test modules cannot import one
another): each returns a plain function and is session-scoped, so that hypothesis ``@given`` tests
may take it as an argument. Helpers of one folder only live in that folder's ``conftest.py``.
``single_threaded_blas`` wraps each test of a module that says
``pytestmark = pytest.mark.usefixtures("single_threaded_blas")``.
"""

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from qprldp_core.channels import Channel
from qprldp_core.random import random_channel as _library_random_channel
from qprldp_core.random import random_density_matrix

_HERE = Path(__file__).resolve().parent
_STRICT = [pytest.mark.filterwarnings("error::UserWarning"),
           pytest.mark.filterwarnings("error::RuntimeWarning")]


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            for mark in _STRICT:
                item.add_marker(mark)


@pytest.fixture
def single_threaded_blas():
    """BLAS limited to one thread while the test runs."""
    # Small dense eigendecompositions: multithreaded BLAS only adds contention on shared CPUs.
    with threadpool_limits(limits=1):
        yield


# -- draws from a generator (property tests): basis and maximally mixed states included -------
def _random_state(rng: np.random.Generator, d: int) -> np.ndarray:
    kind = rng.integers(0, 6)
    if kind == 0:
        rho = np.zeros((d, d), dtype=complex)
        k = rng.integers(0, d)
        rho[k, k] = 1.0
        return rho
    if kind == 1:
        return np.eye(d, dtype=complex) / d
    return random_density_matrix(d, seed=rng)


def _random_channel(rng: np.random.Generator, din: int, dout: int) -> Channel:
    return _library_random_channel(din, dout, seed=rng)


@pytest.fixture(scope="session")
def random_state():
    """``random_state(rng, d)``: a basis state (1/6), the maximally mixed state (1/6) or a
    random density matrix of random rank, drawn from the generator ``rng``."""
    return _random_state


@pytest.fixture(scope="session")
def random_channel():
    """``random_channel(rng, din, dout)``: a random channel C^din -> C^dout drawn from ``rng``."""
    return _random_channel


# -- draws from an integer seed (a seed repeats the draw) ---------------------------------------
def _seeded_state(seed: int, d: int, rank: int | None = None) -> np.ndarray:
    return random_density_matrix(d, rank=rank, seed=seed)


def _seeded_channel(seed: int, d: int, k: int = 3) -> Channel:
    return _library_random_channel(d, num_kraus=k, seed=seed, atol=1e-9)


@pytest.fixture(scope="session")
def seeded_state():
    """``seeded_state(seed, d, rank=None)``: the random density matrix of dimension d and given
    rank (random rank if None) of an integer seed."""
    return _seeded_state


@pytest.fixture(scope="session")
def seeded_channel():
    """``seeded_channel(seed, d, k=3)``: the random channel on C^d with k Kraus operators of an
    integer seed."""
    return _seeded_channel


def _as_general(ch: Channel) -> Channel:
    """Same map, but without the metadata: forces the generic code paths."""
    return Channel(list(ch.kraus), atol=1e-9)


@pytest.fixture(scope="session")
def as_general():
    """``as_general(ch)``: the same map without its metadata (forces the generic code paths)."""
    return _as_general
