"""Printed ε and δ are rounded toward more privacy loss: never below the value (issue 42)."""

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pennylane_qshiftdp._formatting import format_fixed_down, format_fixed_up, format_up


@pytest.mark.parametrize("x, text", [
    (1e-5, "1e-05"),  # the decimal the user typed: unchanged
    (1.0000001e-5, "1.00001e-05"),  # `.6g` printed 1e-05, below the value
    (2.3456789e-7, "2.34568e-07"),  # `.6g` rounds this one up too
    (2.3456749e-7, "2.34568e-07"),  # `.6g` printed 2.34567e-07
    (0.5, "0.5"), (1.0, "1"), (0.99999951, "1"), (123456789.0, "1.23457e+08"),
    (0.0, "0"), (math.inf, "inf"), (math.nan, "nan"),
])
def test_format_up_examples(x, text):
    assert format_up(x) == text
    if math.isfinite(x):
        assert float(text) >= x


def test_a_sum_is_formatted_from_its_terms():
    # 1e-5 + 1e-6 == 1.1000000000000001e-05 in floats; the sum of the two parameters is 1.1e-5
    assert format_up(1e-5, 1e-6) == "1.1e-05"
    assert format_up(1e-5, 1.0000001e-6) == "1.10001e-05"


@given(st.floats(min_value=1e-300, max_value=1e300, allow_nan=False),
       st.integers(min_value=1, max_value=17))
def test_format_up_is_never_below_and_at_most_one_unit_above(x, digits):
    text = format_up(x, digits=digits)
    assert float(text) >= x
    mantissa = re.sub(r"e.*$", "", text).replace("-", "").replace(".", "").lstrip("0")
    assert len(mantissa) <= digits  # `digits` significant digits at most
    # one unit in the last place shown at most (relative to the value's own magnitude)
    unit = 10.0 ** (math.floor(math.log10(x)) - digits + 1)
    assert float(text) - x <= unit * (1 + 1e-9) + 4 * math.ulp(float(text))


@given(st.floats(min_value=0.0, max_value=1e6, allow_nan=False))
def test_fixed_up_and_down_bracket_the_value(x):
    up, down = format_fixed_up(x, 4), format_fixed_down(x, 4)
    assert float(down) <= x <= float(up)
    assert float(up) - float(down) <= 1e-4 * (1 + 1e-9) + 2 * math.ulp(float(up))


def test_fixed_up_does_not_drop_a_tiny_excess():
    # the old format_epsilon rounded ε·10⁴ to 6 decimals first and printed this as 0.9930
    assert format_fixed_up(0.99300000004) == "0.9931"
    assert format_fixed_up(0.9931) == "0.9931" and format_fixed_up(2.0) == "2.0000"


@pytest.mark.parametrize("call, message", [
    (lambda: format_up("1e-5"), "`x` must be a real number. Found '1e-5'."),
    (lambda: format_up(True), "`x` must be a real number. Found True."),
    (lambda: format_up(1.0, digits=0), "`digits` must be an integer in [1, 17]. Found 0."),
    (lambda: format_fixed_up(1.0, 1.5), "`decimals` must be an integer in [0, 17]. Found 1.5."),
])
def test_bad_input_names_the_argument(call, message):
    with pytest.raises((TypeError, ValueError), match=re.escape(message)):
        call()


def test_the_statement_and_summary_print_delta_and_epsilon_rounded_up():
    from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
    from pennylane_qshiftdp.app.summary import summary_line

    line = summary_line(epsilon=0.5, delta=1.0000001e-5, adjacency="add_remove",
                        accountant="rdp", steps=1)
    assert line.startswith("privacy: (ε = 0.5000, δ = 1.00001e-05) proven")
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1.0000001e-5,
                           noise_multiplier=1.3, sample_rate=0.1, sensitivity=1.0)
    ledger.step()
    statement = ledger.statement()
    eps = ledger.epsilon
    assert f"(ε, δ) = ({format_up(eps)}, 1.00001e-05)" in statement
    assert float(format_up(eps)) >= eps
