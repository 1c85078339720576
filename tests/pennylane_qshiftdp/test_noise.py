"""Tests for pennylane_qshiftdp.noise and the optimizer's added noise."""

import re

import numpy as np
import pytest
import torch
from scipy.stats import chi2

from pennylane_qshiftdp.noise import artificial_variance, confidence_multiplier, shot_noise_credit
from pennylane_qshiftdp.optimizer import QShiftDPOptimizer
from pennylane_qshiftdp.sensitivity import Sensitivity
from pennylane_qshiftdp.shot_statistics import ShotStatistics


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


def test_errors():
    with pytest.raises(ValueError, match=re.escape("`beta` must be in (0, 1)")):
        confidence_multiplier(beta=0.0, steps=1, coordinates=1)
    with pytest.raises(ValueError, match=re.escape("`mode` must be one of")):
        shot_noise_credit(_stats(), jacobian=np.eye(1), loss_weights=np.ones(3), mode="x")
    with pytest.raises(ValueError, match=re.escape("`credit` must be finite and >= 0")):
        artificial_variance(np.array([-1.0]), noise_multiplier=1.0, sensitivity=1.0)


def _sens(k):
    return Sensitivity(delta=2.0, delta_per_example=2.0, adjacency="add_remove",
                       weight_bounds=np.ones((1, k)), measurement_bounds=np.ones(1),
                       parameter_bounds=np.ones((1, k)), observable_ranges=((-1.0, 1.0),),
                       loss_name="linear loss", loss_grad_bounds=(1.0, 1.0),
                       classical_jacobian=np.eye(k), weight_names=("w",), weight_shapes=((k,),))


def test_optimizer_noise_variance_matches_formula_none_mode():
    """Added noise per coordinate has variance σ²Δ²/B² (chi-square test at fixed seed)."""
    k, steps, sigma, batch = 4, 400, 1.5, 10.0
    w = torch.nn.Parameter(torch.zeros(k, dtype=torch.float64))
    opt = QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=sigma,
                            sensitivity=_sens(k), expected_batch_size=batch,
                            generator=torch.Generator().manual_seed(123))
    draws = []
    for _ in range(steps):
        w.grad = torch.zeros(k, dtype=torch.float64)
        before = w.detach().clone()
        opt.step()
        draws.append(((before - w.detach()) * batch).numpy())  # lr=1: step = noise / B
    draws = np.array(draws)
    target = sigma**2 * 2.0**2
    stat = (draws**2).sum(axis=0) / target  # ~ chi2(steps) per coordinate
    lo, hi = chi2.ppf(0.0005, steps), chi2.ppf(0.9995, steps)
    assert np.all((stat > lo) & (stat < hi))


def test_optimizer_refuses_seed_in_secure_mode_and_bad_beta():
    w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="refuses a seeded `generator`"):
        QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=1.0,
                          sensitivity=_sens(2), expected_batch_size=1.0, secure_mode=True,
                          generator=torch.Generator())
    with pytest.raises(ValueError, match=re.escape("`beta` must be in (0, 1)")):
        QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=1.0,
                          sensitivity=_sens(2), expected_batch_size=1.0, credit="adaptive",
                          beta=0.0)


def test_circuit_entering_two_coordinates_is_refused():
    st = _stats()
    with pytest.raises(NotImplementedError, match="one coordinate only"):
        shot_noise_credit(st, jacobian=np.array([[1.0, 1.0]]), loss_weights=np.ones(3),
                          mode="depolarizing", variance_floor=0.5)
