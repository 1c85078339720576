"""Tests for pennylane_qshiftdp.shot_statistics."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pennylane_qshiftdp.shot_statistics import (
    ShotRecorder,
    ShotStatistics,
    sample_moments,
    two_point_moments,
)


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.integers(2, 60), st.floats(0, 1), st.floats(-3, 3), st.floats(0.01, 4))
def test_two_point_moments_equal_raw_sample_moments(n, frac, lo, width):
    k = int(round(frac * n))
    x = np.array([lo + width] * k + [lo] * (n - k))
    mean, var, m4 = sample_moments(x)
    v2, m42 = two_point_moments(mean, n, lo, lo + width)
    assert v2 == pytest.approx(var, abs=1e-9) and m42 == pytest.approx(m4, abs=1e-9)


def test_errors_and_recorder():
    with pytest.raises(ValueError, match=re.escape("`shots` must be at least 2")):
        two_point_moments(0.0, 1, -1, 1)
    with pytest.raises(ValueError, match=re.escape("`samples` must hold at least 2 shots")):
        sample_moments([1.0])
    rec = ShotRecorder()
    block = ShotStatistics(shots=[10, 10], mean=[0.1, 0.2], variance=[1.0, 0.9],
                           fourth_moment=[1.0, 1.0], coefficient=[0.5, -0.5],
                           trainable_param=[0, 0], batch_index=[0, 0], shot_copy=[0, 0],
                           measurement=[0, 0], tape_index=[0, 1])
    with rec:
        rec.add(block)
        rec.add(block)
    assert rec.num_calls == 2 and len(rec.statistics) == 4
    assert rec.statistics.call.tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(block.mean_variance, [0.1, 0.09])
    np.testing.assert_allclose(block.variance_of_variance, [0.0, (1.0 - 0.81) / 10])
    with pytest.raises(ValueError, match=re.escape("`mean` must have 2 entries like `shots`")):
        ShotStatistics(shots=[10, 10], mean=[0.1], variance=[1.0, 0.9],
                       fourth_moment=[1.0, 1.0], coefficient=[0.5, -0.5],
                       trainable_param=[0, 0], batch_index=[0, 0], shot_copy=[0, 0],
                       measurement=[0, 0], tape_index=[0, 1])
    rec.clear()
    assert len(rec.statistics) == 0
