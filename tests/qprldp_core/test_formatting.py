"""Bounds printed on their safe side (issue 42): upper bounds up, lower bounds down."""

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qprldp_core._formatting import format_bound


@pytest.mark.parametrize("x, up, text", [
    (1e-5, True, "1e-05"), (1.0000001e-5, True, "1.00001e-05"), (1.0000001e-5, False, "1e-05"),
    (2.3456789e-7, True, "2.34568e-07"), (2.3456789e-7, False, "2.34567e-07"),
    (0.939250001, False, "0.93925"), (0.939250001, True, "0.939251"), (1.0, True, "1"),
    (0.0, True, "0"), (math.inf, True, "inf"),
])
def test_examples(x, up, text):
    assert format_bound(x, up=up) == text


@given(st.floats(min_value=1e-300, max_value=1e300), st.integers(1, 17))
def test_never_crosses_the_value(x, digits):
    assert float(format_bound(x, up=False, digits=digits)) <= x
    assert float(format_bound(x, up=True, digits=digits)) >= x


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match=re.escape("`x` must be a real number. Found '1'.")):
        format_bound("1", up=True)
    with pytest.raises(ValueError, match=re.escape("`digits` must be an integer in [1, 17]. "
                                                   "Found 0.")):
        format_bound(1.0, up=True, digits=0)


def test_a_certificate_prints_its_upper_bound_up_and_its_lower_bound_down():
    from qprldp_core.certify.statement import Certificate

    up = Certificate(1.0, 1.0000001e-5, "QLDP", "test", False, "upper_bound", None, "test")
    assert "is (1, 1.00001e-05)-QLDP (proven upper bound on delta)" in str(up)
    low = Certificate(1.0, 1.0000009e-5, "QLDP", "test", False, "lower_bound", None, "test")
    assert "is NOT (1, delta)-QLDP for any delta < 1e-05" in str(low)
