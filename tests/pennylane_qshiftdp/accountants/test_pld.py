"""The PLD accountant: dp-accounting's numbers, Opacus's registry, the ledger, the optimizer."""

import json
import math
import re
import warnings

import pytest
import torch
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opacus.accountants import create_accountant
from opacus.accountants.utils import get_noise_multiplier

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.accountants.composition import epsilon_from_history
from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
from pennylane_qshiftdp.accountants.pld import PLDAccountant, pld_epsilon, pld_interval

DELTA = 1e-5


def _dp_accounting(history, delta=DELTA):
    """dp-accounting's own PLDAccountant on the same events (the independent reference), at the
    discretisation interval the product chooses for that history."""
    interval = pld_interval(history, delta=delta)
    acct = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    for sigma, q, n in history:
        event = dp_event.GaussianDpEvent(sigma)
        acct.compose(event if q == 1.0 else dp_event.PoissonSampledDpEvent(q, event), n)
    return acct.get_epsilon(delta)


@pytest.mark.parametrize("history", [
    [(1.0, 0.2, 50)],  # the issue's example: PLD 10.13 against RDP 11.29
    [(2.158, 1.0, 1)],  # the audit's one step at q = 1
    [(30.0, 1.0, 100000)],  # q = 1: one Gaussian of std σ/√T, no T-fold convolution
    [(1.1, 0.01, 300)],
    [(3.0, 0.5, 20), (2.0, 0.5, 5), (3.0, 0.25, 7)],  # a scheduler and a new rate
])
def test_epsilon_is_dp_accountings_for_the_same_events(history):
    ours = pld_epsilon(history, delta=DELTA)
    assert ours == pytest.approx(_dp_accounting(history), rel=1e-12)
    acct = create_accountant("pld")
    for sigma, q, n in history:
        for _ in range(n):
            acct.step(noise_multiplier=sigma, sample_rate=q)
    assert acct.history == history and len(acct) == sum(n for *_, n in history)
    assert acct.get_epsilon(DELTA) == ours
    assert epsilon_from_history(history, delta=DELTA, accountant="pld") == ours


def test_issue_numbers_and_pessimistic_discretisation():
    """q = 0.2, σ = 1, 50 steps, δ = 1e-5: PLD 10.13 against RDP 11.29. A finer grid gives a
    smaller (never a larger) ε: the pessimistic estimate rounds toward more privacy."""
    h = [(1.0, 0.2, 50)]
    pld = epsilon_from_history(h, delta=DELTA, accountant="pld")
    rdp = epsilon_from_history(h, delta=DELTA, accountant="rdp")
    assert round(pld, 2) == 10.13 and round(rdp, 2) == 11.29
    assert pld_interval(h, delta=DELTA) == 2.0**-7  # 1e-3 × 11.3, rounded down to 2^k
    fine = pld_epsilon(h, delta=DELTA, value_discretization_interval=1e-4)
    assert fine <= pld <= fine * 1.001


@pytest.mark.parametrize("sigma,q,steps", [(0.02, 0.5, 10), (200.0, 0.01, 100),
                                           (0.05, 1.0, 3)])
def test_interval_follows_the_scale_of_epsilon(sigma, q, steps):
    """σ ≪ 1 (ε in the thousands) and σ ≫ 1 (ε ≈ 1e-3) stay cheap and resolved: the interval
    is about 1e-3 × ε_RDP; a four times finer grid gives a smaller ε (pessimistic rounding),
    by less than the T intervals each step's rounding can add; and the ε stays below RDP's."""
    h = [(sigma, q, steps)]
    interval = pld_interval(h, delta=DELTA)
    rdp = epsilon_from_history(h, delta=DELTA, accountant="rdp")
    assert 0.5e-3 * rdp < interval <= 1e-3 * rdp
    eps = pld_epsilon(h, delta=DELTA)
    fine = pld_epsilon(h, delta=DELTA, value_discretization_interval=interval / 4)
    assert fine <= eps <= fine + steps * interval and eps <= rdp
    assert eps == pytest.approx(_dp_accounting(h), rel=1e-12)


def test_registered_with_opacus():
    acct = create_accountant("pld")
    assert isinstance(acct, PLDAccountant) and acct.mechanism() == "pld"
    acct.step(noise_multiplier=1.0, sample_rate=0.1)
    state = acct.state_dict()
    assert state["mechanism"] == "pld" and state["history"] == [(1.0, 0.1, 1)]
    other = create_accountant("pld")
    other.load_state_dict(state)
    assert other.get_epsilon(DELTA) == acct.get_epsilon(DELTA)
    # Opacus's own calibration finds it by name
    sigma = get_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.1,
                                 steps=100, accountant="pld")
    assert pld_epsilon([(sigma, 0.1, 100)], delta=DELTA) <= 2.0
    # σ = 0 steps (no noise) have no finite ε
    acct.step(noise_multiplier=0.0, sample_rate=0.1)
    assert acct.get_epsilon(DELTA) == math.inf


@settings(max_examples=25, deadline=None)
@given(sigma=st.floats(0.4, 30.0), q=st.one_of(st.just(1.0), st.floats(1e-3, 1.0)),
       steps=st.integers(1, 400), log_delta=st.floats(-10.0, -3.0),
       extra=st.one_of(st.none(), st.tuples(st.floats(0.5, 2.0), st.integers(1, 50))))
@example(sigma=0.4, q=0.9921875, steps=242, log_delta=-9.0, extra=None)  # PLD 1004 > RDP 1000.4
def test_pld_never_above_rdp_at_the_same_history(sigma, q, steps, log_delta, extra):
    """Both are upper bounds of the same composition; RDP's conversion is never tighter than
    the privacy loss distribution, and the pessimistic discretisation stays below the gap."""
    history = [(sigma, q, steps)]
    if extra is not None:
        history.append((sigma * extra[0], q, extra[1]))
    delta = 10.0**log_delta
    pld = epsilon_from_history(history, delta=delta, accountant="pld")
    rdp = epsilon_from_history(history, delta=delta, accountant="rdp")
    assert pld <= rdp + 1e-12


def test_calibration_with_pld_needs_less_noise():
    kw = dict(target_epsilon=2.0, target_delta=DELTA, sample_rate=0.2, steps=50)
    s_pld = calibrate_noise_multiplier(accountant="pld", **kw)
    s_rdp = calibrate_noise_multiplier(accountant="rdp", **kw)
    assert s_pld < s_rdp
    assert compute_epsilon(noise_multiplier=s_pld, sample_rate=0.2, steps=50, delta=DELTA,
                           accountant="pld") <= 2.0
    assert compute_epsilon(noise_multiplier=s_pld, sample_rate=0.2, steps=50, delta=DELTA,
                           accountant="pld") >= 2.0 - 0.011  # Opacus's bisection tolerance


# ------------------------------------------------------------------ the ledger
def test_ledger_with_pld_round_trips_and_reports_rdp_beside_it():
    ledger = PrivacyLedger(target_epsilon=12.0, target_delta=DELTA, noise_multiplier=1.0,
                           sample_rate=0.2, sensitivity=1.0, accountant="pld")
    for _ in range(50):
        ledger.step()
    eps = ledger.epsilons
    assert list(eps) == ["rdp", "pld"]
    assert eps["pld"] == ledger.epsilon == pytest.approx(_dp_accounting([(1.0, 0.2, 50)]),
                                                         rel=1e-12)
    assert eps["rdp"] == pytest.approx(11.2864, abs=1e-4)
    restored = PrivacyLedger.from_json(ledger.to_json())
    assert restored.accountant == "pld" and restored.epsilon == ledger.epsilon
    assert json.loads(ledger.to_json())["epsilon_by_accountant"] == eps
    text = ledger.statement()
    assert "PLDAccountant, registered as 'pld' (Google dp-accounting 0.6.0's" in text
    assert re.search(r"On the same proven history: RDP ε = 11\.28\d+ \(each an upper bound; "
                     r"the guarantee and the budget use PLD\)", text)
    # the budget check stops where PLD (not RDP) would exceed the target
    assert ledger.remaining_steps() == next(
        k for k in range(1, 100) if _dp_accounting([(1.0, 0.2, 50 + k)]) > 12.0) - 1


def test_ledger_with_rdp_reports_pld_beside_it():
    ledger = PrivacyLedger(target_epsilon=12.0, target_delta=DELTA, noise_multiplier=1.0,
                           sample_rate=0.2, sensitivity=1.0, accountant="rdp")
    for _ in range(50):
        ledger.step()
    assert ledger.epsilons["pld"] == pytest.approx(10.128, abs=1e-3)
    assert "On the same proven history: PLD ε = 10.12" in ledger.statement()
    prv = PrivacyLedger(target_epsilon=12.0, target_delta=DELTA, noise_multiplier=1.0,
                        sample_rate=0.2, sensitivity=1.0, accountant="prv")
    prv.step()
    assert list(prv.epsilons) == ["rdp", "pld", "prv"]


# ------------------------------------------------------------------ make_private and the optimizer
def _model_and_loader(n=20, batch=5):
    model = torch.nn.Linear(2, 1, bias=False).double()
    x = torch.randn(n, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    data = torch.utils.data.TensorDataset(x, torch.zeros(n, dtype=torch.float64))
    return model, torch.utils.data.DataLoader(data, batch_size=batch)


def test_make_private_calibrates_and_charges_with_pld():
    model, loader = _model_and_loader()
    private, opt, dl = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                       loader, target_epsilon=3.0, target_delta=DELTA,
                                       epochs=3, max_grad_norm=1.0, accountant="pld", seed=0)
    steps = 12  # q = 1/4, 3 epochs
    assert opt.noise_multiplier == calibrate_noise_multiplier(
        target_epsilon=3.0, target_delta=DELTA, sample_rate=0.25, steps=steps, accountant="pld")
    for _ in range(3):
        for xb, _ in dl:
            opt.zero_grad()
            if len(xb):
                private(xb).sum().backward()
            opt.step()
    assert opt.ledger.steps == steps and opt.ledger.accountant == "pld"
    assert opt.ledger.epsilon == pytest.approx(
        _dp_accounting([(opt.noise_multiplier, 0.25, steps)]), rel=1e-12)
    assert opt.ledger.epsilon <= 3.0


def test_adaptive_clipping_is_one_gaussian_of_multiplier_sigma_under_pld():
    """Andrew et al., Thm. 1: the clipped sum (std σ_Δ C, sensitivity C) and the centred count
    (std σ_b, sensitivity 1/2) sample the same batch, so together they are one Poisson-
    subsampled Gaussian whose multiplier is 1/‖(1/σ_Δ, 1/(2σ_b))‖ = σ; the ledger's PLD ε
    equals dp-accounting's for that multiplier, built from the noise the optimizer added. Empty
    batches (q = 0.05 over 5 examples: most steps) are steps of the same mechanism."""
    model, _ = _model_and_loader(n=5)
    data = torch.utils.data.TensorDataset(torch.ones(5, 2, dtype=torch.float64),
                                          torch.zeros(5, dtype=torch.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        private, opt, dl = qs.make_private(
            model, torch.optim.SGD(model.parameters(), lr=0.1),
            torch.utils.data.DataLoader(data, batch_size=1), sample_rate=0.05,
            target_epsilon=4.0, target_delta=DELTA, epochs=1, max_grad_norm="adaptive",
            adaptive_clipping={"initial_clipbound": 1.0}, accountant="pld", seed=1)
    for xb, _ in dl:
        opt.zero_grad()
        if len(xb):
            private(xb).sum().backward()
        opt.step()
    rec = opt.history
    assert len(rec) == 20 and sum(r["batch_examples"] == 0 for r in rec) >= 10
    sigma_d = rec[0]["noise_std"] / rec[0]["clip_norm"]
    sigma_b = opt.adaptive_clipping["unclipped_num_std"]
    combined = 1.0 / math.hypot(1.0 / sigma_d, 1.0 / (2.0 * sigma_b))
    assert combined == pytest.approx(opt.noise_multiplier, rel=1e-12)
    assert opt.ledger.epsilon == pytest.approx(_dp_accounting([(combined, 0.05, 20)]),
                                               rel=1e-6)


def test_beyond_the_step_limit_the_rdp_bound_is_returned():
    """More than PLD_MAX_STEPS steps: the RDP ε of the same history (an upper bound too), at
    once; at the limit itself the PLD (never above RDP)."""
    from pennylane_qshiftdp.accountants.composition import epsilon_from_history
    from pennylane_qshiftdp.accountants.pld import PLD_MAX_STEPS, pld_epsilon

    long = [(18240.0, 1 / 9, 900_000_000)]
    assert pld_epsilon(long, delta=1e-5) == epsilon_from_history(long, delta=1e-5,
                                                                  accountant="rdp")
    split = [(500.0, 0.01, PLD_MAX_STEPS // 2), (400.0, 0.01, PLD_MAX_STEPS // 2 + 1)]
    assert pld_epsilon(split, delta=1e-5) == epsilon_from_history(split, delta=1e-5,
                                                                   accountant="rdp")
    at_limit = [(500.0, 0.01, PLD_MAX_STEPS)]
    assert pld_epsilon(at_limit, delta=1e-5) <= epsilon_from_history(at_limit, delta=1e-5,
                                                                      accountant="rdp")


def test_an_overflowing_pld_conversion_falls_back_to_the_rdp_bound():
    """dp-accounting 0.6 returns ε = inf for σ = 0.0887, q = 1/9 at 26 steps (its ε-for-δ
    conversion overflows near 709 nats) though 25 and 27 steps are finite: a private run at
    ε = 1000 on wine stopped at step 26. The PLD ε of 27 steps bounds 26 (one more step never
    lowers ε), and is below the RDP bound: the run is no longer stopped."""
    import warnings

    from dp_accounting.pld import privacy_loss_distribution as pld

    from pennylane_qshiftdp.accountants.composition import epsilon_from_history
    from pennylane_qshiftdp.accountants.pld import pld_epsilon, pld_interval

    history = [(0.0886536, 1 / 9, 26)]
    raw = pld.from_gaussian_mechanism(
        standard_deviation=0.0886536, sampling_prob=1 / 9, pessimistic_estimate=True,
        value_discretization_interval=pld_interval(history, delta=1e-5)).self_compose(26)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert raw.get_epsilon_for_delta(1e-5) == math.inf  # the library's overflow
        eps = [pld_epsilon([(0.0886536, 1 / 9, n)], delta=1e-5) for n in (25, 26, 27)]
    rdp = epsilon_from_history(history, delta=1e-5, accountant="rdp")
    assert eps[1] == eps[2] < rdp  # 27 steps' PLD ε, here the tighter bound
    assert eps[0] <= eps[1] < 1000.0
