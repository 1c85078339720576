"""Tests for pennylane_qshiftdp.shot_statistics."""

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pennylane_qshiftdp.gradients.shot_statistics import (
    ShotRecorder,
    ShotStatistics,
    sample_moments,
    two_point_moments,
)

# Nothing here warns on purpose: any UserWarning or RuntimeWarning is a failure, not output.
pytestmark = [pytest.mark.filterwarnings("error::UserWarning"),
              pytest.mark.filterwarnings("error::RuntimeWarning")]


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


def _block(means, call_shift=0.0):
    n = len(means)
    return ShotStatistics(
        shots=[100 + k for k in range(n)], mean=[m + call_shift for m in means],
        variance=[1.0 - (m + call_shift) ** 2 for m in means], fourth_moment=[0.5] * n,
        coefficient=[0.5 * (-1) ** k for k in range(n)], trainable_param=[k // 2 for k in range(n)],
        batch_index=[0] * n, shot_copy=[0] * n, measurement=[0] * n, tape_index=list(range(n)))


def test_statistics_to_records_round_trip():
    st_ = _block([0.125, -0.25, 0.375])
    records = st_.to_records()
    assert len(records) == 3
    assert records[1] == {
        "shots": 101, "mean": -0.25, "variance": 0.9375, "fourth_moment": 0.5,
        "coefficient": -0.5, "trainable_param": 0, "batch_index": 0, "shot_copy": 0,
        "measurement": 0, "tape_index": 1, "call": 0,
    }
    assert all(type(r["shots"]) is int and type(r["mean"]) is float for r in records)
    back = ShotStatistics.from_records(json.loads(json.dumps(records)))  # JSON-safe, exact
    assert back.to_records() == records
    for name, arr in st_.to_dict_of_arrays().items():
        np.testing.assert_array_equal(getattr(back, name), arr)
    assert ShotStatistics.from_records([]).to_records() == []
    with pytest.raises(KeyError, match="variance"):
        ShotStatistics.from_records([{k: v for k, v in records[0].items() if k != "variance"}])


def test_recorder_to_records_and_dict_of_arrays_carry_the_call_index():
    rec = ShotRecorder()
    rec.add(_block([0.1, 0.2]))
    rec.add(_block([0.1, 0.2, 0.3], call_shift=0.5))
    records = rec.to_records()
    assert [r["call"] for r in records] == [0, 0, 1, 1, 1]
    assert [r["tape_index"] for r in records] == [0, 1, 0, 1, 2]
    assert [r["mean"] for r in records] == pytest.approx([0.1, 0.2, 0.6, 0.7, 0.8])
    cols = rec.to_dict_of_arrays()
    assert set(cols) == set(records[0])
    np.testing.assert_array_equal(cols["call"], [0, 0, 1, 1, 1])
    np.testing.assert_array_equal(cols["mean"], [r["mean"] for r in records])
    assert cols["shots"].dtype == np.int64 and cols["mean"].dtype == np.float64
    cols["mean"][:] = 0.0  # a copy: the recorder is unchanged
    assert rec.statistics.mean[2] == pytest.approx(0.6)
    rebuilt = ShotStatistics(**rec.to_dict_of_arrays())
    assert rebuilt.to_records() == records
    rec.clear()
    assert rec.to_records() == [] and rec.to_dict_of_arrays()["call"].size == 0


def test_recorded_gradient_exports_consistent_records():
    qml = pytest.importorskip("pennylane")
    from pennylane import numpy as pnp

    import pennylane_qshiftdp as qs

    dev = qml.device("default.qubit", wires=1, seed=7)

    @qml.qnode(dev, diff_method=qs.param_shift, shots=200)
    def circuit(theta):
        qml.RX(theta, wires=0)
        return qml.expval(qml.Z(0))

    with ShotRecorder() as rec:
        g = qml.grad(circuit)(pnp.array(0.4, requires_grad=True))
    records = rec.to_records()
    assert len(records) == 2 and {r["call"] for r in records} == {0}
    assert all(r["shots"] == 200 for r in records)
    # the gradient is the coefficient-weighted sum of the recorded means
    assert sum(r["coefficient"] * r["mean"] for r in records) == pytest.approx(float(g), abs=1e-12)
    for r in records:  # Pauli Z: variance and fourth moment are functions of the mean
        v, m4 = two_point_moments(r["mean"], r["shots"], -1.0, 1.0)
        assert r["variance"] == pytest.approx(float(v)) and r["fourth_moment"] == pytest.approx(
            float(m4))
