"""Tests for qprldp_core._validation: the shared validators, tolerances and eigendecomposition."""

import re

import numpy as np
import pytest

import qprldp_core._validation
from qprldp_core import DEFAULT_ATOL

# The private module under test, reached as an attribute (its validators are not public API).
_v = qprldp_core._validation
SUPPORT_TOL = _v.SUPPORT_TOL
check_density_matrix = _v.check_density_matrix
check_epsilon = _v.check_epsilon
check_gamma = _v.check_gamma
check_probability = _v.check_probability
check_same_dimension = _v.check_same_dimension
eigh_psd = _v.eigh_psd
support_tol = _v.support_tol


def test_default_atol():
    assert DEFAULT_ATOL == 1e-8


def test_density_matrix_returns_hermitian_complex_copy():
    rho = np.array([[0.5, 0.1 + 1e-12j], [0.1, 0.5]])
    out = check_density_matrix(rho, "rho")
    assert out.dtype == np.complex128
    assert np.array_equal(out, out.conj().T)
    assert out is not rho


def test_density_matrix_accepts_lists_and_tolerance():
    out = check_density_matrix([[1.0 + 1e-10, 0.0], [0.0, -1e-10]], "rho")
    assert out.shape == (2, 2)


def test_non_square():
    msg = (
        "`rho` must be a square 2-D matrix. Found shape (2, 3)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        check_density_matrix(np.zeros((2, 3)), "rho")


def test_not_2d():
    msg = (
        "`sigma` must be a square 2-D matrix. Found shape (4,)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        check_density_matrix(np.ones(4) / 4, "sigma")


def test_non_hermitian():
    msg = (
        "`rho` must be Hermitian. Found max |rho - rho^dagger| entry 0.2."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        check_density_matrix(np.array([[0.5, 0.2], [0.0, 0.5]]), "rho")


def test_non_psd():
    msg = (
        "`rho` must be positive semidefinite. Found minimum eigenvalue -0.3."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        check_density_matrix(np.diag([1.3, -0.3]), "rho")


def test_non_unit_trace():
    with pytest.raises(ValueError, match=re.escape("`rho` must have unit trace. Found trace 2.")):
        check_density_matrix(np.eye(2), "rho")


def test_non_finite():
    with pytest.raises(ValueError, match=re.escape("`rho` must have finite entries.")):
        check_density_matrix(np.array([[np.nan, 0], [0, 1]]), "rho")


@pytest.mark.parametrize("bad", ["abc", None, [[object(), 1], [1, 1]]])
def test_type_errors(bad):
    with pytest.raises(TypeError, match=re.escape("`rho` must be")):
        check_density_matrix(bad, "rho")


def test_atol_is_used():
    rho = np.diag([1.0 + 1e-6, -1e-6])
    with pytest.raises(ValueError, match=re.escape("`rho` must have unit trace")):
        check_density_matrix(np.diag([1.0 + 1e-6, 0.0]), "rho")
    assert check_density_matrix(rho, "rho", atol=1e-5).shape == (2, 2)
    with pytest.raises(ValueError, match=re.escape("`atol` must be finite and >= 0. Found -1.")):
        check_density_matrix(rho, "rho", atol=-1.0)


def test_same_dimension():
    assert check_same_dimension(np.eye(3), np.eye(3)) == 3
    msg = (
        "`rho` and `sigma` must have the same dimension. Found shapes (2, 2)"
        " and (3, 3)."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        check_same_dimension(np.eye(2), np.eye(3))


def test_probability():
    assert check_probability(0) == 0.0 and check_probability(1) == 1.0
    with pytest.raises(ValueError, match=re.escape("`p` must be in [0, 1]. Found 1.3.")):
        check_probability(1.3)
    with pytest.raises(ValueError, match=re.escape("`q` must be in [0, 1]. Found -0.1.")):
        check_probability(-0.1, "q")
    with pytest.raises(ValueError, match=re.escape("`p` must not be NaN.")):
        check_probability(float("nan"))
    with pytest.raises(TypeError, match=re.escape("`p` must be a real number. Found str.")):
        check_probability("0.3")


def test_gamma():
    assert check_gamma(1) == 1.0
    with pytest.raises(ValueError, match=re.escape("`gamma` must be finite and >= 1. Found 0.5.")):
        check_gamma(0.5)
    with pytest.raises(ValueError, match=re.escape("`gamma` must be finite and >= 1. Found inf.")):
        check_gamma(float("inf"))


def test_epsilon():
    assert check_epsilon(0) == 0.0
    with pytest.raises(ValueError, match=re.escape("`epsilon` must be finite and >= 0. Found -1.")):
        check_epsilon(-1)
    with pytest.raises(TypeError, match=re.escape("`epsilon` must be a real number. Found bool.")):
        check_epsilon(True)


def test_eigh_psd_clamps_only_negative_noise():
    # [-atol, 0) is rounding noise and becomes 0; small positive eigenvalues are kept exactly.
    w, v = eigh_psd(np.diag([1.0, 1e-12, -1e-12]), atol=1e-9)
    assert np.array_equal(w, [0.0, 1e-12, 1.0])
    assert np.allclose(v.conj().T @ v, np.eye(3))
    w, _ = eigh_psd(np.diag([1.0, -0.5]), atol=1e-9)
    assert w[0] == -0.5
    w, _ = eigh_psd(np.diag([1.0, 5e-9, -5e-9]), atol=1e-8)
    assert np.array_equal(w, [0.0, 5e-9, 1.0])


def test_support_tol():
    assert SUPPORT_TOL == 1e-13
    assert support_tol(2) == support_tol(28) == 1e-13
    assert support_tol(4096) == pytest.approx(16 * 4096 * np.finfo(float).eps)
