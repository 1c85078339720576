"""Tests for qprldp_core.channels.constructors: depolarizing, local depolarizing,
bit-flip, unitary and measure-and-prepare channels."""

import re

import numpy as np
import pytest

from qprldp_core.channels import (
    PARAM_ATOL,
    bit_flip,
    depolarizing,
    depolarizing_p_max,
    local_depolarizing,
    measure_prepare_channel,
)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("frac", [0.0, 0.3, 1.0, "max"])
def test_depolarizing_kraus_matches_formula(seeded_state, kraus_apply, d, frac):
    p = depolarizing_p_max(d) if frac == "max" else frac
    ch = depolarizing(p, d)
    rho = seeded_state(d, d)
    expected = (1 - p) * rho + p * np.eye(d) / d
    assert np.allclose(ch(rho), expected, atol=1e-12)
    assert np.allclose(kraus_apply(ch.kraus, rho), expected, atol=1e-12)
    assert ch.kind == "depolarizing" and ch.depolarizing_p == p and ch.params["d"] == d


def test_depolarizing_errors():
    msg = (
        "`p` must be in [0, 1.33333] (the CPTP range d^2/(d^2-1) for d=2)."
        " Found 1.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing(1.5, 2)
    msg = (
        "`p` must be in [0, 1.125] (the CPTP range d^2/(d^2-1) for d=3). Found"
        " -0.1."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing(-0.1, 3)
    with pytest.raises(ValueError, match=re.escape("`d` must be an integer >= 2. Found 1.")):
        depolarizing(0.1, 1)
    with pytest.raises(TypeError, match=re.escape("`d` must be an integer. Found float.")):
        depolarizing(0.1, 2.0)
    with pytest.raises(ValueError, match=re.escape("`p` must be in [0, 1]. Found 1.2.")):
        bit_flip(1.2)
    with pytest.raises(ValueError, match=re.escape("`n` must be an integer >= 1. Found 0.")):
        local_depolarizing(0.1, 0)


def test_local_depolarizing(seeded_state):
    ch = local_depolarizing(0.3, 2)
    single = depolarizing(0.3, 2)
    r1, r2 = seeded_state(1, 2), seeded_state(2, 2)
    assert np.allclose(ch(np.kron(r1, r2)), np.kron(single(r1), single(r2)))
    ent = seeded_state(3, 4)
    assert np.allclose(ch(ent), single.tensor(single)(ent))
    assert ch.kind == "local_depolarizing" and ch.num_qubits == 2 and ch.depolarizing_p == 0.3
    big = local_depolarizing(0.3, 50)
    assert big.input_dim == 2**50 and big.params == {"p": 0.3, "n": 50}
    msg = (
        "local_depolarizing: Kraus operators are only built for n <= 6 qubits."
        " Found n=7."
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        _ = local_depolarizing(0.1, 7).kraus


DIMS = range(2, 9)


@pytest.mark.parametrize("d", DIMS)
def test_depolarizing_range_edges(d):
    pmax = depolarizing_p_max(d)
    for p, expected in ((pmax, pmax), (pmax + PARAM_ATOL, pmax), (d * d / (d * d - 1), pmax),
                        (-PARAM_ATOL, 0.0), (0.0, 0.0)):
        assert depolarizing(p, d).params["p"] == expected
    # the Kraus operators at the edge are trace preserving (c0 = 1 - pmax (d^2-1)/d^2 = 0)
    ch = depolarizing(pmax, d)
    assert np.allclose(sum(k.conj().T @ k for k in ch.kraus), np.eye(d), atol=1e-12)


def test_local_depolarizing_apply_without_kraus_matches_kraus(seeded_state, kraus_apply):
    ch = local_depolarizing(0.37, 3)
    rho = seeded_state(11, 8)
    assert np.allclose(ch(rho), kraus_apply(ch.kraus, rho), atol=1e-12)
    big = local_depolarizing(0.2, 8)  # 4^8 Kraus operators are never built
    out = big(np.eye(256) / 256)
    assert np.allclose(out, np.eye(256) / 256)


def test_measure_prepare_channel_errors():
    with pytest.raises(ValueError, match=re.escape(
            "`transition` columns must sum to 1. Found column sums [1.0, 0.5].")):
        measure_prepare_channel([[1.0, 0.5], [0.0, 0.0]])
    with pytest.raises(ValueError, match=re.escape(
            "`transition` must be a 2-D matrix. Found shape (2,).")):
        measure_prepare_channel([0.5, 0.5])
