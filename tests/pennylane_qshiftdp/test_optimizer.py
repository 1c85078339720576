"""QShiftDPOptimizer: added noise variance per credit mode (statistical), budget, errors."""

import re

import numpy as np
import pytest
import torch
from scipy.stats import chi2

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.accountant import PrivacyLedger
from pennylane_qshiftdp.noise import confidence_multiplier, shot_noise_credit
from pennylane_qshiftdp.optimizer import QShiftDPOptimizer
from pennylane_qshiftdp.sensitivity import Sensitivity
from pennylane_qshiftdp.shot_statistics import ShotRecorder, ShotStatistics

K = 3  # coordinates = tape parameters (J = identity)
SIGMA, DELTA, BATCH, STEPS = 0.5, 1.0, 4.0, 600


def _sens():
    return Sensitivity(delta=DELTA, delta_per_example=DELTA, adjacency="add_remove",
                       weight_bounds=np.ones((1, K)), measurement_bounds=np.ones(1),
                       parameter_bounds=np.ones((1, K)), observable_ranges=((-1.0, 1.0),),
                       loss_name="linear loss", loss_grad_bounds=(1.0, 1.0),
                       classical_jacobian=np.eye(K), weight_names=("w",), weight_shapes=((K,),))


def _block(n_examples=4, shots=10):
    """Shot statistics of a batch: parameter i has two shifted circuits per example."""
    rows = []
    tape = 0
    for j in range(n_examples):
        for i in range(K):
            for c in (0.5, -0.5):
                var = 0.6 + 0.1 * i  # different variance per coordinate
                rows.append((shots, 0.2, var, var * 1.2, c, i, j, 0, 0, tape))
                tape += 1
    names = ["shots", "mean", "variance", "fourth_moment", "coefficient", "trainable_param",
             "batch_index", "shot_copy", "measurement", "tape_index"]
    return ShotStatistics(**dict(zip(names, zip(*rows, strict=True), strict=True)))


@pytest.mark.parametrize("mode", ["none", "depolarizing", "adaptive", "isotropic"])
def test_added_noise_variance_matches_formula(mode):
    """Per coordinate, the added noise has variance max(0, σ²Δ² − credit_k) (chi-square, seeded)."""
    rec = ShotRecorder()
    beta = 1e-2 if mode in ("adaptive", "isotropic") else 0.0
    w = torch.nn.Parameter(torch.zeros(K, dtype=torch.float64))
    opt = QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=SIGMA,
                            sensitivity=_sens(), expected_batch_size=BATCH,
                            credit=mode, beta=beta, steps=STEPS, variance_floor=0.3,
                            recorder=rec if mode != "none" else None,
                            generator=torch.Generator().manual_seed(2024))
    block = _block()
    z = confidence_multiplier(beta=beta, steps=STEPS, coordinates=K) if beta else None
    expected_credit = (np.zeros(K) if mode == "none" else shot_noise_credit(
        block, jacobian=np.eye(K), loss_weights=np.ones(4), mode=mode, variance_floor=0.3,
        z=z).credit)
    expected = np.maximum(SIGMA**2 * DELTA**2 - expected_credit, 0.0)
    assert np.all(expected > 0)  # keep the test informative
    if mode != "none":
        assert np.all(expected_credit > 0)
    draws = []
    for _ in range(STEPS):
        opt.zero_grad()
        w.grad = torch.zeros(K, dtype=torch.float64)
        rec.add(block)
        opt.set_loss_weights(np.ones(4))
        before = w.detach().clone()
        record = opt.step()
        draws.append(((before - w.detach()) * BATCH).numpy())
        assert record["total_variance_min"] >= SIGMA**2 * DELTA**2 * (1 - 1e-12)
    stat = (np.array(draws) ** 2).sum(axis=0) / expected  # chi2(STEPS) per coordinate
    assert np.all(stat > chi2.ppf(0.0005, STEPS)) and np.all(stat < chi2.ppf(0.9995, STEPS))
    if mode == "isotropic":
        assert np.allclose(expected_credit, expected_credit[0])


def test_budget_is_checked_before_the_step():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, noise_multiplier=1.0,
                           sample_rate=0.5, sensitivity=DELTA)
    steps_allowed = ledger.remaining_steps()
    w = torch.nn.Parameter(torch.zeros(K, dtype=torch.float64))
    opt = QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=1.0,
                            sensitivity=_sens(), expected_batch_size=2.0, ledger=ledger,
                            generator=torch.Generator().manual_seed(0))
    for _ in range(steps_allowed):
        w.grad = torch.zeros(K, dtype=torch.float64)
        opt.step()
    before = w.detach().clone()
    w.grad = torch.zeros(K, dtype=torch.float64)
    with pytest.raises(qs.PrivacyBudgetExceededError, match="Stopping before step"):
        opt.step()
    assert torch.equal(before, w.detach()) and ledger.epsilon <= 1.0


def test_empty_batch_still_adds_noise_and_counts():
    w = torch.nn.Parameter(torch.zeros(K, dtype=torch.float64))
    ledger = PrivacyLedger(target_epsilon=5.0, target_delta=1e-5, noise_multiplier=1.0,
                           sample_rate=0.1, sensitivity=DELTA)
    opt = QShiftDPOptimizer(torch.optim.SGD([w], lr=1.0), noise_multiplier=1.0,
                            sensitivity=_sens(), expected_batch_size=2.0, ledger=ledger,
                            generator=torch.Generator().manual_seed(0))
    opt.zero_grad(set_to_none=True)  # no backward at all: empty Poisson batch
    rec = opt.step()
    assert ledger.steps == 1 and rec["artificial_variance_mean"] == pytest.approx(1.0)
    assert torch.count_nonzero(w.detach()) == K


def test_errors():
    w = torch.nn.Parameter(torch.zeros(K, dtype=torch.float64))
    sgd = torch.optim.SGD([w], lr=1.0)
    msg = "`noise_multiplier` must be positive and finite. Found 0.0."
    with pytest.raises(ValueError, match=re.escape(msg)):
        QShiftDPOptimizer(sgd, noise_multiplier=0.0, sensitivity=_sens(), expected_batch_size=1)
    with pytest.raises(ValueError, match=re.escape("`credit` must be one of")):
        QShiftDPOptimizer(sgd, noise_multiplier=1.0, sensitivity=_sens(), expected_batch_size=1,
                          credit="magic")
    with pytest.raises(ValueError, match="needs the `recorder`"):
        QShiftDPOptimizer(sgd, noise_multiplier=1.0, sensitivity=_sens(), expected_batch_size=1,
                          credit="depolarizing")
    w2 = torch.nn.Parameter(torch.zeros(K + 1, dtype=torch.float64))
    with pytest.raises(ValueError, match="pass only the quantum weights"):
        QShiftDPOptimizer(torch.optim.SGD([w2], lr=1.0), noise_multiplier=1.0,
                          sensitivity=_sens(), expected_batch_size=1)
