import dataclasses
import math
import re

import numpy as np
import pytest

from qprldp_core.certify import is_qldp, is_qprldp, qldp_certificate, qprldp_certificate
from qprldp_core.channels import (
    Channel,
    bit_flip,
    depolarizing,
    local_depolarizing,
    unitary,
)
from qprldp_core.privacy import (
    SearchResult,
    pure_qldp_epsilon,
    qldp_value,
    qprldp_value,
    worst_case_search,
)
from qprldp_core.random import random_channel as _random_channel
from qprldp_core.random import random_density_matrix


def random_state(seed: int, d: int, rank: int | None = None) -> np.ndarray:
    return random_density_matrix(d, rank=rank, seed=seed)


def random_channel(seed: int, d: int, k: int = 3) -> Channel:
    return _random_channel(d, num_kraus=k, seed=seed, atol=1e-9)


def as_general(ch: Channel) -> Channel:
    """Same map, but without the metadata: forces the generic code paths."""
    return Channel(list(ch.kraus), atol=1e-9)


def test_values_for_orthogonal_pair():
    ch = depolarizing(0.5, 2)
    rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
    assert qldp_value(ch, rho, sigma, epsilon=0.5) == pytest.approx(0.337820, abs=1e-6)
    assert qprldp_value(ch, rho, sigma, epsilon=0.5) == pytest.approx(0.75, abs=1e-12)
    # QPrLDP ≥ QLDP pairwise
    for s in range(5):
        r, t = random_state(s, 3), random_state(s + 10, 3)
        c = random_channel(s, 3)
        assert qprldp_value(c, r, t, epsilon=0.3) >= qldp_value(c, r, t, epsilon=0.3) - 1e-12


def test_value_errors():
    ch = depolarizing(0.5, 2)
    msg = (
        "`rho` must have the channel's input dimension 2. Found shape (3, 3)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        qldp_value(ch, np.eye(3) / 3, np.eye(3) / 3, epsilon=0.1)
    with pytest.raises(ValueError, match=re.escape("`epsilon` must be finite and >= 0. Found -1.")):
        qprldp_value(ch, np.eye(2) / 2, np.eye(2) / 2, epsilon=-1)
    msg = (
        "`channel` must be a qprldp_core.Channel. Found ndarray."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        qldp_value(np.eye(2), np.eye(2) / 2, np.eye(2) / 2, epsilon=0.1)


@pytest.mark.parametrize("d", [2, 3, 4, 8])
@pytest.mark.parametrize("p", [0.05, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.5])
def test_search_never_exceeds_closed_form(d, p, eps):
    ch = depolarizing(p, d)
    for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
        exact = cert(ch, epsilon=eps).delta
        res = worst_case_search(ch, epsilon=eps, notion=notion, restarts=3, seed=1, max_iter=30)
        assert res.value <= exact + 1e-9
        # the search is good enough to find the closed-form worst case on depolarizing noise
        assert res.value >= exact - 1e-9
        assert res.is_lower_bound and res.notion == notion and res.epsilon == eps


@pytest.mark.parametrize("d", [2, 3])
def test_search_on_generic_kraus_path(d):
    ch = as_general(depolarizing(0.4, d))
    for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
        exact = cert(depolarizing(0.4, d), epsilon=0.4).delta
        res = worst_case_search(ch, epsilon=0.4, notion=notion, restarts=3, seed=0)
        assert exact - 1e-9 <= res.value <= exact + 1e-9


def test_search_value_is_attained_by_witness_and_seeded():
    ch = random_channel(3, 3)
    a = worst_case_search(ch, epsilon=0.2, notion="qprldp", restarts=3, seed=5)
    b = worst_case_search(ch, epsilon=0.2, notion="qprldp", restarts=3, seed=5)
    assert a.value == b.value and np.array_equal(a.rho, b.rho)
    assert qprldp_value(ch, a.rho, a.sigma, epsilon=0.2) == pytest.approx(a.value, abs=1e-12)
    # random pairs never beat the QLDP search by much (it is a local-ascent lower bound)
    q = worst_case_search(ch, epsilon=0.2, notion="qldp", restarts=4, seed=0)
    for s in range(20):
        r, t = random_state(s, 3, rank=1), random_state(s + 100, 3, rank=1)
        assert qldp_value(ch, r, t, epsilon=0.2) <= q.value + 1e-9
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.value = 0.0


def test_search_errors():
    ch = depolarizing(0.3, 2)
    msg = (
        "`notion` must be 'qldp' or 'qprldp'. Found 'ldp'."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        worst_case_search(ch, epsilon=0.1, notion="ldp")
    msg = (
        "`restarts` must be a positive integer. Found 0."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        worst_case_search(ch, epsilon=0.1, restarts=0)


def test_is_qldp_and_is_qprldp_exact():
    ch = depolarizing(0.5, 2)
    assert is_qldp(ch, epsilon=0.5, delta=0.338)
    assert not is_qldp(ch, epsilon=0.5, delta=0.337)
    assert is_qprldp(ch, epsilon=0.5, delta=0.75)
    assert not is_qprldp(ch, epsilon=0.5, delta=0.74)
    assert is_qprldp(depolarizing(0.3, 2), epsilon=math.log(1 + 2 * 0.7 / 0.3), delta=0.0)
    assert not is_qldp(bit_flip(0.3), epsilon=3.0, delta=0.99)
    assert is_qldp(Channel([np.eye(2)]), epsilon=0.0, delta=1.0)


def test_is_qldp_local_bounds_and_undecided():
    ch = local_depolarizing(0.3, 3)
    thr = 3 * math.log(1.7 / 0.3)
    assert is_qldp(ch, epsilon=thr, delta=0.0)
    assert is_qprldp(ch, epsilon=thr, delta=0.0)
    assert not is_qldp(ch, epsilon=1.0, delta=0.5)
    with pytest.raises(NotImplementedError, match=re.escape("is_qldp: cannot decide")):
        is_qldp(ch, epsilon=1.0, delta=0.8)


def test_is_qldp_general_channel_refutes_or_refuses():
    ch = as_general(depolarizing(0.5, 2))
    assert not is_qldp(ch, epsilon=0.5, delta=0.2)  # search finds 0.3378 > 0.2
    msg = (
        "is_qldp: cannot decide for general channel"
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        is_qldp(ch, epsilon=0.5, delta=0.5)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1]. Found 2.")):
        is_qprldp(ch, epsilon=0.5, delta=2.0)


@pytest.mark.parametrize("p,d", [(0.3, 2), (0.5, 4), (1.0, 3), (1.2, 2), (1.1, 3)])
def test_pure_qldp_epsilon_depolarizing(p, d):
    ch = depolarizing(p, d)
    a, b = 1 - p + p / d, p / d
    assert pure_qldp_epsilon(ch) == pytest.approx(math.log(max(a, b) / min(a, b)))
    if p <= 1:
        assert pure_qldp_epsilon(ch) == pytest.approx(math.log(1 + d * (1 - p) / p))
    # E_{e^ε} = 0 at ε0 and > 0 just below (closed forms, d = 2 or p ≤ 1)
    if p <= 1 or d == 2:
        eps0 = pure_qldp_epsilon(ch)
        assert qldp_certificate(ch, epsilon=eps0).delta == 0.0
        if eps0 > 0:
            assert qldp_certificate(ch, epsilon=0.99 * eps0).delta > 0.0
    # the general search gives a lower bound close to the exact value
    res = pure_qldp_epsilon(as_general(ch), restarts=4, seed=0)
    assert isinstance(res, SearchResult) and res.is_lower_bound
    assert res.value <= pure_qldp_epsilon(ch) + 1e-9
    assert res.value >= pure_qldp_epsilon(ch) - 1e-6


def test_pure_qldp_epsilon_other_channels():
    assert pure_qldp_epsilon(depolarizing(0.0, 2)) == math.inf
    assert pure_qldp_epsilon(local_depolarizing(0.3, 4)) == pytest.approx(4 * math.log(1.7 / 0.3))
    assert pure_qldp_epsilon(unitary(np.eye(2))) == math.inf
    assert pure_qldp_epsilon(bit_flip(0.5)) == math.inf
    assert pure_qldp_epsilon(as_general(unitary(np.eye(2)))).value == math.inf
