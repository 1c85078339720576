"""Helpers of the channels tests (fixtures returning plain functions, see
``tests/qprldp_core/conftest.py``)."""

import pytest


def _kraus_apply(ops, rho):
    return sum(k @ rho @ k.conj().T for k in ops)


@pytest.fixture(scope="session")
def kraus_apply():
    """``kraus_apply(ops, rho)``: sum_k K_k rho K_k^dagger, computed from the Kraus operators."""
    return _kraus_apply
