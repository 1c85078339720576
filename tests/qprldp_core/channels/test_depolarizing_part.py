"""Tests for qprldp_core.channels.depolarizing_part: the largest p with N = D_p o M."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core import (
    Channel,
    bit_flip,
    depolarizing,
    depolarizing_part,
    qldp_certificate,
    qldp_value,
    qprldp_certificate,
    qprldp_value,
    random_channel,
    random_density_matrix,
    unitary,
)


def _compose(outer: Channel, inner: Channel) -> Channel:
    """outer o inner, from Kraus operators (an independent construction)."""
    return Channel([a @ b for a in outer.kraus for b in inner.kraus])


def _is_channel_after_removing(n: Channel, p: float) -> float:
    """Smallest eigenvalue of the Choi matrix of M = (N - p R) / (1 - p), R = Tr(.) I/d."""
    d = n.input_dim
    j = n.choi() - (p / d) * np.eye(d * d)
    return float(np.linalg.eigvalsh((j + j.conj().T) / 2)[0]) / (1 - p)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("p", [0.0, 0.01, 0.3, 0.75, 1.0])
def test_closed_form_on_depolarizing(d, p):
    assert depolarizing_part(depolarizing(p, d)) == pytest.approx(p, abs=1e-11)
    assert depolarizing_part(depolarizing(p, d)) <= p  # rounded toward less noise


def test_no_part_without_full_rank_noise():
    assert depolarizing_part(unitary(np.diag([1, 1j]))) == 0.0
    assert depolarizing_part(bit_flip(0.3)) == 0.0  # rank-2 Choi: no depolarizing part


@settings(max_examples=40, deadline=None)
@given(p=st.floats(0.0, 0.95), d=st.sampled_from([2, 3]), seed=st.integers(0, 10_000))
def test_part_of_d_p_after_any_channel_is_at_least_p_and_maximal(p, d, seed):
    """N = D_p o M has part p* >= p; N = D_p* o M' holds (M' CP) and fails just above p*."""
    n = _compose(depolarizing(p, d), random_channel(d, seed=seed))
    part = depolarizing_part(n)
    assert part >= p - 1e-9
    assert _is_channel_after_removing(n, part) >= -1e-9
    if part < 0.999:
        assert _is_channel_after_removing(n, min(part + 1e-4, 0.9999)) < 0


@settings(max_examples=25, deadline=None)
@given(p=st.floats(0.05, 0.9), seed=st.integers(0, 10_000), eps=st.floats(0.0, 3.0))
def test_certificates_of_the_part_bound_the_channel(p, seed, eps):
    """N = D_p o M is at least as private as D_p*: no pair of inputs exceeds D_p*'s δ."""
    rng = np.random.default_rng(seed)
    n = _compose(depolarizing(p, 2), random_channel(2, seed=rng))
    d_part = depolarizing(depolarizing_part(n), 2)
    qldp = qldp_certificate(d_part, epsilon=eps).delta
    qprldp = qprldp_certificate(d_part, epsilon=eps).delta
    for _ in range(5):
        rho, sigma = (random_density_matrix(2, rank=1, seed=rng) for _ in range(2))
        assert qldp_value(n, rho, sigma, epsilon=eps) <= qldp + 1e-9
        assert qprldp_value(n, rho, sigma, epsilon=eps) <= qprldp + 1e-9


def test_refuses_what_is_not_a_channel_on_one_dimension():
    with pytest.raises(TypeError, match="`channel` must be a qprldp_core.Channel"):
        depolarizing_part(np.eye(2))
    with pytest.raises(ValueError, match=r"d_in = d_out\). Found 2 -> 3"):
        depolarizing_part(random_channel(2, 3, seed=0))
