"""Tests for the qprldp_core.certify package as a whole: argument errors of its functions."""

import re

import pytest

from qprldp_core.certify import (
    local_depolarizing_bounds,
    qldp_certificate,
    qprldp_epsilon,
)
from qprldp_core.channels import depolarizing


def test_errors():
    msg = (
        "`epsilon` must be finite and >= 0. Found -0.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        qldp_certificate(depolarizing(0.5, 2), epsilon=-0.5)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1]. Found 1.5.")):
        qprldp_epsilon(depolarizing(0.5, 2), delta=1.5)
    msg = (
        "`channel` must be a qprldp_core.Channel. Found str."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        qldp_certificate("depolarizing", epsilon=1.0)
    msg = (
        "`notion` must be 'QLDP' or 'QPrLDP'. Found 'x'."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        local_depolarizing_bounds(0.3, 2, epsilon=1.0, notion="x")
    msg = (
        "`p` must be in [0, 1.33333] (the CPTP range d^2/(d^2-1) for d=2)."
        " Found 1.4."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        local_depolarizing_bounds(1.4, 2, epsilon=1.0)
