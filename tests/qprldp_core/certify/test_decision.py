"""Tests for qprldp_core.certify.decision: is_qldp and is_qprldp decide only what a
certificate proves."""

import math
import re

import numpy as np
import pytest

from qprldp_core.certify import is_qldp, is_qprldp
from qprldp_core.channels import (
    Channel,
    bit_flip,
    depolarizing,
    local_depolarizing,
)


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


def test_is_qldp_general_channel_refutes_or_refuses(as_general):
    ch = as_general(depolarizing(0.5, 2))
    assert not is_qldp(ch, epsilon=0.5, delta=0.2)  # search finds 0.3378 > 0.2
    msg = (
        "is_qldp: cannot decide for general channel"
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        is_qldp(ch, epsilon=0.5, delta=0.5)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1]. Found 2.")):
        is_qprldp(ch, epsilon=0.5, delta=2.0)
