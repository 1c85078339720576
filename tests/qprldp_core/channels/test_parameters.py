"""Tests for qprldp_core.channels.parameters: the CPTP range of D_p and the
PennyLane/toqito parameter converters."""

import re

import numpy as np
import pytest

from qprldp_core.channels import (
    PARAM_ATOL,
    depolarizing,
    depolarizing_p_from_pennylane,
    depolarizing_p_from_toqito,
    depolarizing_p_max,
    depolarizing_p_to_pennylane,
    depolarizing_p_to_toqito,
    local_depolarizing,
)


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.75, 1.0])
def test_pennylane_converter_matches_pennylane(seeded_state, kraus_apply, q):
    qml = pytest.importorskip("pennylane")
    ops = [np.asarray(k) for k in qml.DepolarizingChannel(q, wires=0).kraus_matrices()]
    rho = seeded_state(7, 2)
    p = depolarizing_p_from_pennylane(q)
    assert p == pytest.approx(4 * q / 3)
    assert np.allclose(kraus_apply(ops, rho), depolarizing(p, 2)(rho), atol=1e-12)
    assert depolarizing_p_to_pennylane(p) == pytest.approx(q)


def test_pennylane_converter_range():
    with pytest.raises(ValueError, match=re.escape("`q` must be in [0, 1]. Found 1.1.")):
        depolarizing_p_from_pennylane(1.1)


@pytest.mark.parametrize("param", [1.0, 0.7, 0.0, -0.05])
def test_toqito_converter(seeded_state, param):
    d = 3
    rho = seeded_state(4, d)
    toqito_out = param * rho + (1 - param) * np.eye(d) / d  # toqito.channels.depolarizing(d, param)
    p = depolarizing_p_from_toqito(param, d)
    assert np.allclose(depolarizing(p, d)(rho), toqito_out)
    assert depolarizing_p_to_toqito(p, d) == pytest.approx(param)


def test_toqito_converter_range():
    msg = (
        "`param` must be in [-0.125, 1] (toqito's CPTP range for d=3). Found"
        " 1.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing_p_from_toqito(1.5, 3)


DIMS = range(2, 9)


@pytest.mark.parametrize("d", DIMS)
def test_toqito_converter_edges(seeded_state, d):
    pmax = depolarizing_p_max(d)
    lo = -1 / (d * d - 1)  # the documented lower end, as a user writes it
    # every spelling of the lower end maps to exactly pmax (and is a valid channel)
    for param in (lo, 1 - d * d / (d * d - 1), 1 - pmax, np.nextafter(lo, -1), lo - PARAM_ATOL):
        p = depolarizing_p_from_toqito(param, d)
        assert p == pmax, (param, p)
        assert depolarizing(p, d).params["p"] == pmax
    assert depolarizing_p_from_toqito(1.0, d) == 0.0
    assert depolarizing_p_from_toqito(1 + PARAM_ATOL, d) == 0.0  # clamped onto the upper end
    # the inverse lands exactly on the ends
    assert depolarizing_p_to_toqito(pmax, d) == lo
    assert depolarizing_p_to_toqito(pmax + PARAM_ATOL / 2, d) == lo
    assert depolarizing_p_to_toqito(0.0, d) == 1.0
    assert depolarizing_p_to_toqito(-PARAM_ATOL, d) == 1.0
    # toqito's map at the lower end equals D_pmax (the fully "anti-depolarizing" CPTP edge)
    rho = seeded_state(d, d)
    np.testing.assert_allclose(depolarizing(pmax, d)(rho), lo * rho + (1 - lo) * np.eye(d) / d,
                               atol=1e-14)
    # beyond the tolerance: the usual error
    msg = f"`param` must be in [{lo:.6g}, 1] (toqito's CPTP range for d={d}). Found"
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing_p_from_toqito(lo - 1e-9, d)
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing_p_from_toqito(1 + 1e-9, d)
    msg = f"`p` must be in [0, {pmax:.6g}] (the CPTP range d^2/(d^2-1) for d={d}). Found"
    for bad in (-1e-9, pmax + 1e-9):
        with pytest.raises(ValueError, match=re.escape(msg)):
            depolarizing_p_to_toqito(bad, d)
        with pytest.raises(ValueError, match=re.escape(msg)):
            depolarizing(bad, d)


def test_pennylane_converter_edges():
    pmax = depolarizing_p_max(2)
    assert depolarizing_p_from_pennylane(1.0) == pmax
    assert depolarizing_p_from_pennylane(1 + PARAM_ATOL) == pmax
    assert depolarizing_p_from_pennylane(0.0) == 0.0
    assert depolarizing_p_from_pennylane(-PARAM_ATOL) == 0.0
    assert depolarizing_p_to_pennylane(pmax) == 1.0
    assert depolarizing_p_to_pennylane(4 / 3) == 1.0
    assert depolarizing_p_to_pennylane(pmax + PARAM_ATOL) == 1.0
    assert depolarizing_p_to_pennylane(-PARAM_ATOL) == 0.0
    assert local_depolarizing(pmax + PARAM_ATOL, 2).params["p"] == pmax
    for bad in (-1e-9, 1 + 1e-9):
        with pytest.raises(ValueError, match=re.escape("`q` must be in [0, 1]. Found")):
            depolarizing_p_from_pennylane(bad)
    msg = "`p` must be in [0, 1.33333] (the CPTP range d^2/(d^2-1) for d=2). Found"
    for bad in (-1e-9, pmax + 1e-9):
        with pytest.raises(ValueError, match=re.escape(msg)):
            depolarizing_p_to_pennylane(bad)
