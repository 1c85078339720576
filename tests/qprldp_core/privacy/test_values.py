"""Tests for qprldp_core.privacy.values: QLDP and QPrLDP quantities of one input pair."""

import re

import numpy as np
import pytest

from qprldp_core.channels import depolarizing
from qprldp_core.privacy import (
    qldp_value,
    qprldp_value,
)


def test_values_for_orthogonal_pair(seeded_state, seeded_channel):
    ch = depolarizing(0.5, 2)
    rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
    assert qldp_value(ch, rho, sigma, epsilon=0.5) == pytest.approx(0.337820, abs=1e-6)
    assert qprldp_value(ch, rho, sigma, epsilon=0.5) == pytest.approx(0.75, abs=1e-12)
    # QPrLDP ≥ QLDP pairwise
    for s in range(5):
        r, t = seeded_state(s, 3), seeded_state(s + 10, 3)
        c = seeded_channel(s, 3)
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
