"""Tests for pennylane_qshiftdp.credit.shot_noise (the optimizer's added noise:
optimizers/test_optimizer.py)."""

import re

import numpy as np
import pytest

from pennylane_qshiftdp.credit.shot_noise import (
    artificial_variance,
    confidence_multiplier,
    shot_noise_credit,
)
from pennylane_qshiftdp.credit.variance_bounds import variance_lower_bound
from pennylane_qshiftdp.gradients.shot_statistics import ShotStatistics


def _stats(n_examples=3, shots=100, var=0.8, m4=0.9):
    rows = []
    for j in range(n_examples):
        for t, c in enumerate((0.5, -0.5)):
            rows.append((shots, 0.1, var, m4, c, 0, j, 0, 0, t))
    cols = list(zip(*rows, strict=True))
    names = ["shots", "mean", "variance", "fourth_moment", "coefficient", "trainable_param",
             "batch_index", "shot_copy", "measurement", "tape_index"]
    return ShotStatistics(**dict(zip(names, cols, strict=True)))


def test_depolarizing_credit_closed_form():
    st = _stats()
    r = shot_noise_credit(st, jacobian=np.array([[2.0]]), loss_weights=np.ones(3),
                          mode="depolarizing", variance_floor=0.5)
    per_example = 2 * (0.5 * 2.0) ** 2 * 0.5 / 100  # two circuits, a = c J
    assert r.lower_bound[0] == pytest.approx(3 * per_example)
    assert r.credit[0] == pytest.approx(2 * per_example)


def test_adaptive_credit_below_estimate_and_above_floor():
    st = _stats()
    z = confidence_multiplier(beta=1e-3, steps=10, coordinates=1)
    r = shot_noise_credit(st, jacobian=np.eye(1), loss_weights=np.ones(3), mode="adaptive",
                          variance_floor=0.1, z=z)
    assert r.lower_bound[0] <= r.estimate[0]
    floor = 3 * 2 * 0.25 * 0.1 / 100
    assert r.lower_bound[0] >= floor
    assert r.credit[0] >= 0


def test_adaptive_credit_uses_the_variance_bound_and_data_independent_largest_term():
    st = _stats(n_examples=40, shots=1000, var=0.8, m4=0.9)
    alpha = 1e-3
    r = shot_noise_credit(st, jacobian=np.eye(1), loss_weights=np.ones(40), mode="adaptive",
                          alpha=alpha)
    u = 0.25 / 1000
    expected = variance_lower_bound(np.full(80, 0.8), weights=u, shots=1000, low=-1.0,
                                    high=1.0, alpha=alpha)
    assert r.alpha == alpha
    assert r.lower_bound[0] == pytest.approx(expected, rel=1e-12)
    assert r.largest_example[0] == pytest.approx(2 * u * 1.0)  # two circuits · u · (R²/4 = 1)
    assert r.credit[0] == pytest.approx(expected - 2 * u)
    assert r.estimate[0] == pytest.approx(80 * u * 0.8)


def test_alpha_from_z_gaussian_and_cantelli():
    st = _stats(n_examples=40, shots=1000)
    kw = dict(jacobian=np.eye(1), loss_weights=np.ones(40), mode="adaptive")
    z = confidence_multiplier(beta=1e-2, steps=10, coordinates=1)
    r_z = shot_noise_credit(st, z=z, **kw)
    r_a = shot_noise_credit(st, alpha=1e-3, **kw)
    assert r_z.alpha == pytest.approx(1e-3, rel=1e-9)
    assert r_z.lower_bound[0] == pytest.approx(r_a.lower_bound[0], rel=1e-9)
    zc = confidence_multiplier(beta=1e-2, steps=10, coordinates=1, method="cantelli")
    r_c = shot_noise_credit(st, z=zc, **kw)
    assert r_c.alpha <= 1e-3 and r_c.lower_bound[0] <= r_a.lower_bound[0]
    # z so large that 1 − Φ(z) underflows: no data-driven credit, only the floor.
    r_inf = shot_noise_credit(st, z=1e6, variance_floor=0.1, **kw)
    assert r_inf.alpha == 0.0 and r_inf.lower_bound[0] == pytest.approx(80 * 0.25e-3 * 0.1)


def test_two_outcome_and_outcome_range():
    # ±2 outcomes (observable 2Z): mean 0 and variance 4·N/(N−1) are two-outcome statistics.
    n = 50
    st = ShotStatistics(shots=[n] * 4, mean=[0.0] * 4, variance=[4 * n / (n - 1)] * 4,
                        fourth_moment=[16.0] * 4, coefficient=[0.5, -0.5] * 2,
                        trainable_param=[0] * 4, batch_index=[0, 0, 1, 1], shot_copy=[0] * 4,
                        measurement=[0] * 4, tape_index=[0, 1, 2, 3])
    kw = dict(jacobian=np.eye(1), loss_weights=np.ones(2), mode="adaptive", alpha=0.1)
    with pytest.raises(ValueError, match=re.escape("`outcome_range` must contain every "
                                                   "single-shot value")):
        shot_noise_credit(st, **kw)
    free = shot_noise_credit(st, outcome_range=(-2.0, 2.0), **kw)
    two = shot_noise_credit(st, outcome_range=(-2.0, 2.0), two_outcome=True, **kw)
    u = 0.25 / n
    assert free.largest_example[0] == pytest.approx(2 * u * 4.0)  # R²/4 = 4
    s2 = np.full(4, 4 * n / (n - 1))
    expected = variance_lower_bound(s2, weights=u, shots=n, low=-2.0, high=2.0, alpha=0.1,
                                    means=np.zeros(4))
    assert two.lower_bound[0] == pytest.approx(expected, rel=1e-12)
    assert free.lower_bound[0] <= free.estimate[0]


def test_isotropic_takes_the_minimum_credit():
    rows = []
    for j in range(30):
        for i, var in enumerate((1.0, 0.5)):
            for t, c in enumerate((0.5, -0.5)):
                rows.append((200, 0.0, var, 1.0, c, i, j, 0, 0, 4 * j + 2 * i + t))
    names = ["shots", "mean", "variance", "fourth_moment", "coefficient", "trainable_param",
             "batch_index", "shot_copy", "measurement", "tape_index"]
    st = ShotStatistics(**dict(zip(names, zip(*rows, strict=True), strict=True)))
    kw = dict(jacobian=np.eye(2), loss_weights=np.ones(30), alpha=0.01)
    ad = shot_noise_credit(st, mode="adaptive", **kw)
    iso = shot_noise_credit(st, mode="isotropic", **kw)
    assert ad.credit[0] > ad.credit[1] > 0
    assert np.allclose(iso.credit, ad.credit.min())


def test_errors():
    with pytest.raises(ValueError, match=re.escape("`beta` must be in (0, 1)")):
        confidence_multiplier(beta=0.0, steps=1, coordinates=1)
    with pytest.raises(ValueError, match=re.escape("`mode` must be one of")):
        shot_noise_credit(_stats(), jacobian=np.eye(1), loss_weights=np.ones(3), mode="x")
    with pytest.raises(ValueError, match=re.escape("`credit` must be finite and >= 0")):
        artificial_variance(np.array([-1.0]), noise_multiplier=1.0, sensitivity=1.0)
    kw = dict(jacobian=np.eye(1), loss_weights=np.ones(3), mode="adaptive")
    with pytest.raises(ValueError, match=re.escape("`z` (or `alpha`) must be given for mode "
                                                   "'adaptive'. Found None.")):
        shot_noise_credit(_stats(), **kw)
    with pytest.raises(ValueError, match=re.escape("Give one of `z` and `alpha`, not both. "
                                                   "Found z=2.0, alpha=0.1.")):
        shot_noise_credit(_stats(), z=2.0, alpha=0.1, **kw)
    with pytest.raises(ValueError, match=re.escape("`alpha` must be in (0, 1). Found 1.3.")):
        shot_noise_credit(_stats(), alpha=1.3, **kw)
    with pytest.raises(ValueError, match=re.escape("`z` must be non-negative and finite. "
                                                   "Found -1.0.")):
        shot_noise_credit(_stats(), z=-1.0, **kw)
    with pytest.raises(ValueError, match=re.escape("`outcome_range` must be a pair (low, high) "
                                                   "of finite numbers with low < high. Found "
                                                   "(1.0, -1.0).")):
        shot_noise_credit(_stats(), alpha=0.1, outcome_range=(1.0, -1.0), **kw)
    with pytest.raises(ValueError, match=re.escape("`variance_floor` must be at most "
                                                   "(high − low)²/4 = 1 for outcome_range=(-1, "
                                                   "1). Found 1.5.")):
        shot_noise_credit(_stats(), alpha=0.1, variance_floor=1.5, **kw)
    with pytest.raises(ValueError, match=re.escape("Found outcome_range=(-1, 1).")):
        shot_noise_credit(_stats(var=1.5), alpha=0.1, **kw)  # s² > (1 − μ)(1 + μ)N/(N − 1)


def test_circuit_entering_two_coordinates_is_refused():
    st = _stats()
    with pytest.raises(NotImplementedError, match="one coordinate only"):
        shot_noise_credit(st, jacobian=np.array([[1.0, 1.0]]), loss_weights=np.ones(3),
                          mode="depolarizing", variance_floor=0.5)
