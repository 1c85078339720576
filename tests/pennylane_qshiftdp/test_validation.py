"""Tests for pennylane_qshiftdp._validation."""

import re

import numpy as np
import pytest

from pennylane_qshiftdp._validation import (
    check_beta,
    check_choice,
    check_delta,
    check_epsilon,
    check_finite_float,
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    check_probability,
    check_sample_rate,
)


class TestCheckEpsilon:
    def test_accepts_and_normalises(self):
        out = check_epsilon(np.float32(0.5), "target_epsilon")
        assert out == 0.5 and type(out) is float

    @pytest.mark.parametrize(
        "value, msg",
        [
            (0.0, "`target_epsilon` must be positive. Found 0.0."),
            (-1, "`target_epsilon` must be positive. Found -1.0."),
            (float("inf"), "`target_epsilon` must be finite. Found inf."),
            (float("nan"), "`target_epsilon` must be finite. Found nan."),
        ],
    )
    def test_rejects(self, value, msg):
        with pytest.raises(ValueError, match=re.escape(msg)):
            check_epsilon(value, "target_epsilon")

    @pytest.mark.parametrize("value", ["1", None, True, [1.0]])
    def test_type_errors(self, value):
        with pytest.raises(TypeError, match=re.escape("`eps` must be a real number.")):
            check_epsilon(value, "eps")


class TestCheckDelta:
    @pytest.mark.parametrize("value", [0.0, 1.0, -0.1, 1.5, float("nan")])
    def test_rejects(self, value):
        msg = f"`delta` must be in (0, 1). Found {value}."
        with pytest.raises(ValueError, match=re.escape(msg)):
            check_delta(value)

    def test_accepts(self):
        assert check_delta(1e-5) == 1e-5


class TestCheckSampleRate:
    @pytest.mark.parametrize("value", [0.0, -0.5, 1.0000001, float("nan")])
    def test_rejects(self, value):
        msg = f"`sample_rate` must be in (0, 1]. Found {value}."
        with pytest.raises(ValueError, match=re.escape(msg)):
            check_sample_rate(value)

    @pytest.mark.parametrize("value", [1e-9, 0.5, 1, 1.0])
    def test_accepts(self, value):
        assert check_sample_rate(value) == float(value)


class TestCheckPositiveInt:
    @pytest.mark.parametrize("value", [1, np.int64(7), 10**12])
    def test_accepts(self, value):
        out = check_positive_int(value, "steps")
        assert out == int(value) and type(out) is int

    @pytest.mark.parametrize("value", [0, -3])
    def test_rejects_value(self, value):
        msg = f"`steps` must be a positive integer. Found {value}."
        with pytest.raises(ValueError, match=re.escape(msg)):
            check_positive_int(value, "steps")

    @pytest.mark.parametrize("value", [1.0, 2.5, True, "3", None])
    def test_rejects_type(self, value):
        msg = f"`steps` must be a positive integer. Found {value!r}."
        with pytest.raises(TypeError, match=re.escape(msg)):
            check_positive_int(value, "steps")


class TestFloats:
    def test_positive(self):
        assert check_positive_float(2, "noise_multiplier") == 2.0
        for bad in (0.0, -1.0, float("inf")):
            msg = f"`noise_multiplier` must be positive and finite. Found {bad}."
            with pytest.raises(ValueError, match=re.escape(msg)):
                check_positive_float(bad, "noise_multiplier")

    def test_nonnegative(self):
        assert check_nonnegative_float(0, "x") == 0.0
        msg = "`x` must be non-negative and finite. Found -0.1."
        with pytest.raises(ValueError, match=re.escape(msg)):
            check_nonnegative_float(-0.1, "x")

    def test_finite(self):
        assert check_finite_float(-3, "x") == -3.0
        with pytest.raises(ValueError, match=re.escape("`x` must be finite. Found inf.")):
            check_finite_float(float("inf"), "x")

    def test_zero_dim_array(self):
        assert check_positive_float(np.array(0.25), "x") == 0.25


class TestProbabilityAndBeta:
    def test_probability_intervals(self):
        assert check_probability(0.0, "p") == 0.0
        with pytest.raises(ValueError, match=re.escape("`p` must be in (0, 1). Found 0.0.")):
            check_probability(0.0, "p", open_low=True, open_high=True)
        with pytest.raises(ValueError, match=re.escape("`p` must be in [0, 1]. Found 1.3.")):
            check_probability(1.3, "p")

    def test_beta_required(self):
        assert check_beta(1e-3, required=True) == 1e-3
        with pytest.raises(
            ValueError, match=re.escape(
                "`beta` must be in (0, 1) for the adaptive and isotropic credit modes (e.g. "
                "1e-6, well below 1/N). Found 0.0.")
        ):
            check_beta(0.0, required=True)

    def test_beta_forbidden(self):
        assert check_beta(0, required=False) == 0.0
        msg = "`beta` must be 0 unless the credit mode is 'adaptive' or 'isotropic'. Found 0.1."
        with pytest.raises(ValueError, match=re.escape(msg)):
            check_beta(0.1, required=False)


def test_check_choice_lists_choices():
    assert check_choice("prv", "accountant", ("rdp", "prv")) == "prv"
    msg = "`accountant` must be one of 'rdp', 'prv'. Found 'gdp'."
    with pytest.raises(ValueError, match=re.escape(msg)):
        check_choice("gdp", "accountant", ("rdp", "prv"))


def _warn_once_per_location():
    import warnings

    warnings.warn("a once-per-location notice", UserWarning, stacklevel=1)


def test_ignoring_warnings_keeps_the_once_per_location_record():
    """A user's default-filtered warning prints once even when the library ignores other
    warnings in between (``catch_warnings`` would reset the record, and it would print again
    at every training step); the rules are removed afterwards."""
    import warnings

    from pennylane_qshiftdp._validation import ignoring_warnings

    shown = []
    with warnings.catch_warnings():
        warnings.resetwarnings()
        warnings.simplefilter("default")
        before = list(warnings.filters)
        old, warnings.showwarning = warnings.showwarning, lambda *a, **k: shown.append(a[0])
        try:
            for _ in range(3):
                _warn_once_per_location()
                with ignoring_warnings(("spam", UserWarning), ("", RuntimeWarning)):
                    warnings.warn("spam", UserWarning, stacklevel=1)
                    warnings.warn("anything", RuntimeWarning, stacklevel=1)
            assert [str(m) for m in shown] == ["a once-per-location notice"]
            assert warnings.filters == before
            warnings.warn("spam", UserWarning, stacklevel=1)  # the rule is gone
            assert [str(m) for m in shown][-1] == "spam"
        finally:
            warnings.showwarning = old
