"""Tests for pennylane_qshiftdp.accountants.calibration, against independent Opacus calls."""

import re

import pytest
from opacus.accountants import PRVAccountant, RDPAccountant
from opacus.accountants.utils import get_noise_multiplier

from pennylane_qshiftdp.accountants import calibration as calibration_module
from pennylane_qshiftdp.accountants.calibration import (
    calibrate_noise_multiplier,
    compute_epsilon,
    epochs_to_steps,
)


def opacus_epsilon(sigma, q, steps, delta, cls=RDPAccountant):
    acct = cls()
    acct.history = [(sigma, q, steps)]
    return acct.get_epsilon(delta=delta)


class TestComputeEpsilon:
    @pytest.mark.parametrize(
        "sigma, q, steps, delta",
        [(1.0, 0.01, 1000, 1e-5), (3.0, 0.2, 50, 1e-6), (0.8, 1.0, 10, 1e-5), (5.0, 0.5, 7, 0.01)],
    )
    def test_matches_rdp_accountant(self, sigma, q, steps, delta):
        """``accountant="rdp"``: Opacus's RDPAccountant, bit for bit."""
        eps = compute_epsilon(noise_multiplier=sigma, sample_rate=q, steps=steps, delta=delta,
                              accountant="rdp")
        assert eps == pytest.approx(opacus_epsilon(sigma, q, steps, delta), rel=1e-12)

    def test_matches_prv_accountant(self):
        eps = compute_epsilon(
            noise_multiplier=1.2, sample_rate=0.05, steps=100, delta=1e-5, accountant="prv"
        )
        assert eps == pytest.approx(opacus_epsilon(1.2, 0.05, 100, 1e-5, PRVAccountant), rel=1e-9)

    def test_monotone(self):
        kw = dict(sample_rate=0.1, delta=1e-5)
        assert compute_epsilon(noise_multiplier=1.0, steps=10, **kw) < compute_epsilon(
            noise_multiplier=1.0, steps=20, **kw
        )
        assert compute_epsilon(noise_multiplier=2.0, steps=10, **kw) < compute_epsilon(
            noise_multiplier=1.0, steps=10, **kw
        )

    @pytest.mark.parametrize(
        "kwargs, exc, msg",
        [
            (
                {"noise_multiplier": 0.0},
                ValueError,
                "`noise_multiplier` must be positive and finite. Found 0.0.",
            ),
            (
                {"noise_multiplier": -1.0},
                ValueError,
                "`noise_multiplier` must be positive and finite. Found -1.0.",
            ),
            ({"sample_rate": 0.0}, ValueError, "`sample_rate` must be in (0, 1]. Found 0.0."),
            ({"sample_rate": 1.5}, ValueError, "`sample_rate` must be in (0, 1]. Found 1.5."),
            ({"steps": 0}, ValueError, "`steps` must be a positive integer. Found 0."),
            ({"steps": 10.0}, TypeError, "`steps` must be a positive integer. Found 10.0."),
            ({"delta": 0.0}, ValueError, "`delta` must be in (0, 1). Found 0.0."),
            ({"delta": 1.0}, ValueError, "`delta` must be in (0, 1). Found 1.0."),
            (
                {"accountant": "gdp"},
                ValueError,
                "`accountant` must be one of 'rdp', 'prv', 'pld'. Found 'gdp'.",
            ),
        ],
    )
    def test_errors(self, kwargs, exc, msg):
        base = dict(noise_multiplier=1.0, sample_rate=0.1, steps=10, delta=1e-5)
        base.update(kwargs)
        with pytest.raises(exc, match=re.escape(msg)):
            compute_epsilon(**base)

    def test_keyword_only(self):
        with pytest.raises(TypeError):
            compute_epsilon(1.0, 0.1, 10, 1e-5)  # noqa


class TestCalibrate:
    @pytest.mark.parametrize(
        "eps, delta, q, steps",
        [
            (1.0, 1e-5, 64 / 270, 43),
            (0.5, 1e-6, 0.01, 1000),
            (4.0, 1e-5, 1.0, 5),
        ],
    )
    @pytest.mark.filterwarnings("ignore:Optimal order is the")
    def test_conservative_and_tight(self, eps, delta, q, steps):
        sigma = calibrate_noise_multiplier(
            target_epsilon=eps, target_delta=delta, sample_rate=q, steps=steps, accountant="rdp"
        )
        spent = opacus_epsilon(sigma, q, steps, delta)
        assert spent <= eps
        assert spent >= eps - 0.01 - 1e-9  # Opacus's bisection tolerance
        # Opacus's own calibration gives the same σ (no hand-written formula here).
        assert sigma == get_noise_multiplier(
            target_epsilon=eps, target_delta=delta, sample_rate=q, steps=steps
        )

    def test_prv(self):
        sigma = calibrate_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=0.05, steps=100, accountant="prv"
        )
        assert opacus_epsilon(sigma, 0.05, 100, 1e-5, PRVAccountant) <= 1.0
        # PRV is tighter than RDP: it needs no more noise.
        sigma_rdp = calibrate_noise_multiplier(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=0.05, steps=100, accountant="rdp"
        )
        assert sigma <= sigma_rdp

    def test_tolerance(self):
        sigma = calibrate_noise_multiplier(
            target_epsilon=1.0,
            target_delta=1e-5,
            sample_rate=0.1,
            steps=100,
            epsilon_tolerance=1e-4,
            accountant="rdp",
        )
        assert 1.0 - 1e-4 - 1e-9 <= opacus_epsilon(sigma, 0.1, 100, 1e-5) <= 1.0

    def test_recheck_raises_sigma(self, monkeypatch):
        """If Opacus's bisection returned a σ failing the re-check, σ is raised until it passes."""
        monkeypatch.setattr(calibration_module, "get_noise_multiplier", lambda **kw: 1.0)
        eps_at_1 = compute_epsilon(noise_multiplier=1.0, sample_rate=0.1, steps=100, delta=1e-5)
        target = eps_at_1 * 0.99
        sigma = calibrate_noise_multiplier(
            target_epsilon=target, target_delta=1e-5, sample_rate=0.1, steps=100
        )
        assert sigma > 1.0
        assert (
            compute_epsilon(noise_multiplier=sigma, sample_rate=0.1, steps=100, delta=1e-5)
            <= target
        )
        # and not much more than needed: one 0.1 % bump less would fail
        assert (
            compute_epsilon(noise_multiplier=sigma / 1.001, sample_rate=0.1, steps=100, delta=1e-5)
            > target
        )

    def test_budget_too_small(self):
        msg = "The privacy budget is too small: `target_epsilon`=1e-09"
        with pytest.raises(ValueError, match=re.escape(msg)):
            calibrate_noise_multiplier(
                target_epsilon=1e-9, target_delta=1e-10, sample_rate=1.0, steps=100000
            )

    @pytest.mark.parametrize(
        "kwargs, exc, msg",
        [
            ({"target_epsilon": 0.0}, ValueError, "`target_epsilon` must be positive. Found 0.0."),
            ({"target_epsilon": -2}, ValueError, "`target_epsilon` must be positive. Found -2.0."),
            (
                {"target_epsilon": float("inf")},
                ValueError,
                "`target_epsilon` must be finite. Found inf.",
            ),
            (
                {"target_epsilon": float("nan")},
                ValueError,
                "`target_epsilon` must be finite. Found nan.",
            ),
            ({"target_delta": 0.0}, ValueError, "`target_delta` must be in (0, 1). Found 0.0."),
            ({"target_delta": 1.0}, ValueError, "`target_delta` must be in (0, 1). Found 1.0."),
            ({"sample_rate": 0.0}, ValueError, "`sample_rate` must be in (0, 1]. Found 0.0."),
            ({"sample_rate": 2.0}, ValueError, "`sample_rate` must be in (0, 1]. Found 2.0."),
            ({"steps": 0}, ValueError, "`steps` must be a positive integer. Found 0."),
            ({"steps": 1.5}, TypeError, "`steps` must be a positive integer. Found 1.5."),
            (
                {"accountant": "moments"},
                ValueError,
                "`accountant` must be one of 'rdp', 'prv', 'pld'. Found 'moments'.",
            ),
            (
                {"epsilon_tolerance": 0.0},
                ValueError,
                "`epsilon_tolerance` must be positive and finite. Found 0.0.",
            ),
        ],
    )
    def test_errors(self, kwargs, exc, msg):
        base = dict(target_epsilon=1.0, target_delta=1e-5, sample_rate=0.1, steps=10)
        base.update(kwargs)
        with pytest.raises(exc, match=re.escape(msg)):
            calibrate_noise_multiplier(**base)


class TestEpochsToSteps:
    @pytest.mark.parametrize(
        "epochs, q, expected",
        [(3, 0.1, 30), (10, 64 / 360, 57), (1, 1.0, 1), (0.5, 0.3, 2), (1, 0.01, 100)],
    )
    def test_values(self, epochs, q, expected):
        assert epochs_to_steps(epochs=epochs, sample_rate=q) == expected

    def test_errors(self):
        msg = "`epochs` must be positive and finite. Found 0.0."
        with pytest.raises(ValueError, match=re.escape(msg)):
            epochs_to_steps(epochs=0, sample_rate=0.1)


def test_default_accountant_is_pld():
    """The default (docs/engine.md §6): dp-accounting's PLD, also in the app's TrainConfig."""
    from pennylane_qshiftdp.accountants.composition import DEFAULT_ACCOUNTANT
    from pennylane_qshiftdp.accountants.pld import pld_epsilon
    from pennylane_qshiftdp.app.config import TrainConfig

    assert DEFAULT_ACCOUNTANT == TrainConfig.accountant == "pld"
    assert compute_epsilon(noise_multiplier=1.0, sample_rate=0.2, steps=50, delta=1e-5) == (
        pld_epsilon([(1.0, 0.2, 50)], delta=1e-5))
