"""The O(1) budget check (issue 43) answers exactly what composing the history answers.

:meth:`PrivacyLedger.would_exceed` and :meth:`PrivacyLedger.charge` decide from the admissible
step count K* found once by bisection. Every answer here is compared with the old rule: compose
the extended history with a fresh call of the accountant and compare with the target, at every
step of a run that ends refused, for targets placed exactly at ε(σ, q, k) and one ulp either
side, with a σ changed mid-run and across a resume from JSON.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pennylane_qshiftdp.accountants import ledger as ledger_module
from pennylane_qshiftdp.accountants import pld as pld_module
from pennylane_qshiftdp.accountants.composition import epsilon_from_history, extend_history
from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
from pennylane_qshiftdp.exceptions import PrivacyBudgetExceededError

DELTA = 1e-5


class Truth:
    """ε of histories composed afresh (the pre-issue-43 rule), remembered for the test only."""

    def __init__(self, accountant):
        self.accountant = accountant
        self.memo = {}

    def eps(self, history):
        key = tuple(map(tuple, history))
        if key not in self.memo:
            self.memo[key] = epsilon_from_history(list(history), delta=DELTA,
                                                  accountant=self.accountant)
        return self.memo[key]

    def exceeds(self, ledger, sigma, k, target):
        return self.eps(extend_history(ledger.history, sigma, ledger.sample_rate, k)) > target


def _ledger(accountant, target, sigma, q):
    return PrivacyLedger(target_epsilon=target, target_delta=DELTA, noise_multiplier=sigma,
                         sample_rate=q, sensitivity=1.0, accountant=accountant)


def _target_at(truth, sigma, q, k, ulps):
    """ε(σ, q, k) moved by ``ulps`` units in the last place: a target on the boundary."""
    t = truth.eps([(sigma, q, k)])
    for _ in range(abs(ulps)):
        t = math.nextafter(t, math.inf if ulps > 0 else -math.inf)
    return t


def _run_until_refused(ledger, truth, *, sigma=None, max_steps, lookahead=(2, 3, 7),
                       read=False):
    """Check every answer of the ledger against composing, step by step; the refused step.

    With ``read`` the planned ε is read after every step (as a step record would), which
    keeps the checks composing inside the bracket instead of searching K*."""
    sigma = ledger.noise_multiplier if sigma is None else sigma
    target = ledger.target_epsilon
    for _ in range(max_steps):
        for k in lookahead:
            assert ledger.would_exceed(k, noise_multiplier=sigma) == truth.exceeds(
                ledger, sigma, k, target), (ledger.history, k)
        over = truth.exceeds(ledger, sigma, 1, target)
        assert ledger.would_exceed(1, noise_multiplier=sigma) == over, ledger.history
        if over:
            before = ledger.history
            with pytest.raises(PrivacyBudgetExceededError):
                ledger.charge(noise_multiplier=sigma)
            assert ledger.history == before
            return ledger.steps + 1
        ledger.charge(noise_multiplier=sigma)
        if read:
            assert ledger.planned_epsilon == truth.eps(ledger.history)
    return None


# (σ, q) and the step count k whose ε is the target: small enough to compose every step
PLD_RDP_CASES = st.tuples(st.sampled_from([0.6, 0.9, 1.0, 1.7, 3.0]),
                          st.sampled_from([0.02, 0.1, 0.25, 1.0]),
                          st.integers(1, 24), st.sampled_from([-1, 0, 1]))


@pytest.mark.parametrize("read", [False, True])
@pytest.mark.parametrize("accountant", ["pld", "rdp"])
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=PLD_RDP_CASES)
@example(case=(1.0, 0.1, 20, 0))
@example(case=(1.0, 0.1, 20, -1))
@example(case=(0.9, 1.0, 5, 1))
def test_every_check_of_a_run_equals_composing(accountant, read, case):
    """At ε(σ, q, k) exactly (K* = k), one ulp below (K* = k − 1) and above: every answer of
    ``would_exceed`` at every step, and the refused step, are those of composing (K* searched,
    or, with the planned ε read at every step, bracketed by the compositions)."""
    sigma, q, k, ulps = case
    truth = Truth(accountant)
    target = _target_at(truth, sigma, q, k, ulps)
    ledger = _ledger(accountant, target, sigma, q)
    refused = _run_until_refused(ledger, truth, max_steps=k + 3, lookahead=() if read else
                                 (2, 3, 7), read=read)
    first_over = next(m for m in range(1, k + 4) if truth.eps([(sigma, q, m)]) > target)
    assert refused == first_over
    if ulps >= 0:
        assert refused == k + 1 or truth.eps([(sigma, q, k + 1)]) <= target
    else:
        assert refused <= k


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("ulps", [-1, 0])
def test_prv_checks_equal_composing(k, ulps):
    """PRV (which composes at every check) gives the same answers as composing."""
    truth = Truth("prv")
    target = _target_at(truth, 1.0, 0.25, k, ulps)
    ledger = _ledger("prv", target, 1.0, 0.25)
    refused = _run_until_refused(ledger, truth, max_steps=k + 2, lookahead=(2,))
    assert refused == (k + 1 if ulps == 0 else k)
    assert not ledger._bracket


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_a_sigma_changed_mid_run_and_a_resume_check_as_composing(accountant):
    """σ raised after 4 steps (a scheduler: two history entries), then lowered, with the run
    resumed from JSON between: every check is the composed one."""
    truth = Truth(accountant)
    target = truth.eps([(1.0, 0.1, 30)])
    ledger = _ledger(accountant, target, 1.0, 0.1)
    for _ in range(4):
        assert _run_until_refused(ledger, truth, max_steps=1) is None
    assert _run_until_refused(ledger, truth, sigma=1.5, max_steps=6) is None
    assert len(ledger.history) == 2
    resumed = PrivacyLedger.from_json(ledger.to_json())
    other = PrivacyLedger(target_epsilon=5.0, target_delta=DELTA, noise_multiplier=1.0,
                          sample_rate=0.1, sensitivity=1.0, accountant=accountant)
    other.load_state_dict(ledger.state_dict())  # a ledger reused for another run
    for restored in (resumed, other):
        assert _run_until_refused(restored, truth, sigma=0.8, max_steps=60) is not None
        assert restored.planned_epsilon == truth.eps(restored.history)
        assert restored.epsilon == truth.eps(restored.proven_history)


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_once_k_star_is_known_a_check_composes_nothing(accountant, monkeypatch):
    """The check is O(1): after the search, ``would_exceed``/``charge`` never compose."""
    truth = Truth(accountant)
    target = truth.eps([(1.0, 0.1, 40)])
    ledger = _ledger(accountant, target, 1.0, 0.1)
    for _ in range(3):
        assert not ledger.would_exceed(1)
        ledger.charge()
    assert list(ledger._bracket.values()) == [(40, 41)]

    def refuse(*args, **kwargs):
        raise AssertionError("composed")

    monkeypatch.setattr(ledger_module, "epsilon_from_history", refuse)
    while not ledger.would_exceed(1):
        ledger.charge()
    assert ledger.steps == 40
    assert ledger.remaining_steps() == 0
    with pytest.raises(PrivacyBudgetExceededError):  # its message: ε(41) from the search
        ledger.charge()


def _count_compositions(monkeypatch):
    calls = []
    real = ledger_module.epsilon_from_history

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(ledger_module, "epsilon_from_history", counting)
    return calls


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_reading_the_planned_epsilon_every_step_costs_one_composition_per_step(
        accountant, monkeypatch):
    """As the optimizer drives it (check, charge, the record's ε = planned ε): the check
    composes what the record then reads, one composition per step and no search; once the
    record stops reading it (here: the proven σ differs), K* is searched and the checks
    cost nothing."""
    calls = _count_compositions(monkeypatch)
    ledger = _ledger(accountant, 8.0, 1.0, 0.1)
    for n in range(1, 11):
        assert not ledger.would_exceed(1)
        ledger.charge()
        assert ledger.epsilon == epsilon_from_history([(1.0, 0.1, n)], delta=DELTA,
                                                      accountant=accountant)
        assert len(calls) == n
    assert ledger._bracket[(accountant, DELTA, 8.0, (), 1.0, 0.1)][1] is None  # no K* yet
    for _ in range(3):
        assert not ledger.would_exceed(1)
        ledger.charge(proven_noise_multiplier=1.25)
        _ = ledger.epsilon
    lo, hi = ledger._bracket[(accountant, DELTA, 8.0, (), 1.0, 0.1)]
    assert hi == lo + 1
    before = len(calls)
    for _ in range(5):
        assert not ledger.would_exceed(1)
        ledger.charge(proven_noise_multiplier=1.25)
    assert len(calls) == before


def test_ledgers_do_not_share_compositions(monkeypatch):
    """Two identical ledgers each compose their own ε (issue 43: a benchmark's second variant
    got its budget check free from the first's cache)."""
    calls = _count_compositions(monkeypatch)
    counts = []
    for _ in range(2):
        ledger = _ledger("pld", 8.0, 1.0, 0.1)
        for _ in range(3):
            ledger.charge()
        assert ledger.epsilon > 0
        counts.append(len(calls))
        calls.clear()
    assert counts[0] == counts[1] > 0
    assert not hasattr(pld_module._composed_epsilon, "cache_info")


def test_step_returns_the_composed_planned_epsilon():
    """``step`` still returns the ε of the plan after the step (now computed on request)."""
    ledger = _ledger("pld", 8.0, 1.0, 0.1)
    for n in range(1, 4):
        assert ledger.step() == epsilon_from_history([(1.0, 0.1, n)], delta=DELTA)


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_a_fresh_copy_answers_as_a_new_ledger_and_shares_the_compositions(accountant,
                                                                          monkeypatch):
    """``fresh()`` (an audit's trials): every check, the refused step and ε equal a new
    ledger's and composing from scratch; the second trial composes nothing the first did;
    the steps are the copy's own (the original is untouched)."""
    truth = Truth(accountant)
    target = _target_at(truth, 1.0, 1.0, 6, 0)  # K* = 6 exactly, on the boundary
    template = _ledger(accountant, target, 1.0, 1.0)
    template.charge()
    calls = _count_compositions(monkeypatch)
    trials = []
    for _ in range(3):
        ledger = template.fresh()
        assert ledger.steps == 0 and ledger.epsilon == 0.0
        refused = _run_until_refused(ledger, truth, max_steps=20)
        assert refused == 7 and ledger.steps == 6
        assert ledger.epsilon == truth.eps([(1.0, 1.0, 6)])
        trials.append(len(calls))
    assert trials[0] > 0 and trials[2] == trials[1]  # later trials compose nothing new
    assert template.steps == 1 and template.history == [(1.0, 1.0, 1)]
    new = _ledger(accountant, target, 1.0, 1.0)
    assert _run_until_refused(new, truth, max_steps=20) == 7 and new.epsilon == ledger.epsilon
