"""Private hyperparameter selection: the runs' budget against dp-accounting, the exponential
mechanism against its closed form and its DP inequality, refusals, and a selection over real
make_private runs whose total ε is the composition of what they actually spent."""

import math
import types
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from hypothesis import given, settings
from hypothesis import strategies as st

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, epochs_to_steps
from pennylane_qshiftdp.accountants.composition import epsilon_from_history
from pennylane_qshiftdp.accountants.pld import pld_interval
from pennylane_qshiftdp.accountants.selection import PrivateSelection, selection_probabilities

DELTA = 1e-5


def _ledger(history, delta=DELTA, **fields):
    """A stand-in for a finished run's ledger: what report() and select() read (no step left
    in its budget)."""
    values = dict(proven_history=list(history), target_delta=delta, accountant="pld",
                  credit_mode="none", adjacency="add_remove", target_epsilon=1e9,
                  steps=sum(n for _, _, n in history), remaining_steps=lambda: 0,
                  noise_multiplier=history[-1][0], sample_rate=history[-1][1])
    values.update(fields)
    return types.SimpleNamespace(**values)


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("q, epochs", [(0.1, 5), (0.25, 3), (1.0, 2)])
def test_runs_calibrated_at_run_epsilon_compose_within_the_budget(k, q, epochs):
    """Every run calibrated as make_private does (at run_epsilon) and the K histories composed by
    dp-accounting's own PLDAccountant (the independent reference), plus ε_sel: within the
    total."""
    sel = PrivateSelection([{}] * k, target_epsilon=2.0, target_delta=DELTA,
                           selection_epsilon=0.2)
    eps_run = sel.run_epsilon(sample_rate=q, epochs=epochs)
    steps = epochs_to_steps(epochs=epochs, sample_rate=q)
    sigma = calibrate_noise_multiplier(target_epsilon=eps_run, target_delta=DELTA,
                                       sample_rate=q, steps=steps)
    history = [(sigma, q, steps)] * k
    acct = pld_privacy_accountant.PLDAccountant(
        value_discretization_interval=pld_interval(history, delta=DELTA))
    event = dp_event.GaussianDpEvent(sigma)
    for _ in range(k):
        acct.compose(event if q == 1.0 else dp_event.PoissonSampledDpEvent(q, event), steps)
    total = acct.get_epsilon(DELTA) + sel.selection_epsilon
    assert total <= 2.0
    assert total >= 0.9 * 2.0 - (0.2 if k == 1 else 0.0)  # and it uses the budget
    for i in range(k):
        sel.report(i, _ledger([(sigma, q, steps)], target_epsilon=eps_run), score=i)
    assert sel.select().epsilon <= 2.0
    assert sel.epsilon_runs == pytest.approx(epsilon_from_history(history, delta=DELTA))


def test_more_candidates_leave_each_run_less():
    plans = [PrivateSelection([{}] * k, target_epsilon=2.0, target_delta=DELTA,
                              selection_epsilon=0.2).run_epsilon(sample_rate=0.1, epochs=5)
             for k in (1, 2, 4, 8)]
    assert plans == sorted(plans, reverse=True) and len(set(plans)) == 4


def test_probabilities_closed_form():
    p = selection_probabilities([10, 12, 7], epsilon=1.0, sensitivity=2.0)
    w = [math.exp(u / 4) for u in (10, 12, 7)]
    assert p == pytest.approx([x / sum(w) for x in w], rel=1e-12)
    # large scores do not overflow (shifted by the maximum)
    assert sum(selection_probabilities([1e6, 1e6 - 1], epsilon=10.0)) == pytest.approx(1.0)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), k=st.integers(1, 6), eps=st.floats(0.01, 5.0),
       sens=st.floats(0.1, 3.0))
def test_the_choice_is_epsilon_dp(data, k, eps, sens):
    """For neighbouring score vectors (every score moved by at most Δ, in any directions), every
    index's probability changes by at most e^ε_sel (McSherry & Talwar, Theorem 6)."""
    u = data.draw(st.lists(st.floats(-100, 100), min_size=k, max_size=k))
    moves = data.draw(st.lists(st.floats(-1.0, 1.0), min_size=k, max_size=k))
    v = [a + sens * m for a, m in zip(u, moves, strict=True)]
    p = selection_probabilities(u, epsilon=eps, sensitivity=sens)
    p2 = selection_probabilities(v, epsilon=eps, sensitivity=sens)
    for a, b in zip(p, p2, strict=True):
        assert a <= math.exp(eps) * b * (1 + 1e-9) and b <= math.exp(eps) * a * (1 + 1e-9)


def test_draws_follow_the_exponential_mechanism():
    """The Gumbel arg max, over 6000 seeded selections, against the closed-form probabilities
    (each frequency within 4.5 binomial standard deviations)."""
    scores, eps, n = [0.0, 3.0, 5.0], 1.0, 6000
    counts = [0, 0, 0]
    for seed in range(n):
        sel = PrivateSelection(["a", "b", "c"], target_epsilon=2.0, target_delta=DELTA,
                               selection_epsilon=eps, seed=seed)
        for i, s in enumerate(scores):
            sel.report(i, _ledger([(5.0, 0.1, 10)]), score=s)
        counts[sel.select().index] += 1
    for c, p in zip(counts, selection_probabilities(scores, epsilon=eps), strict=True):
        assert abs(c / n - p) <= 4.5 * math.sqrt(p * (1 - p) / n)


def test_the_draw_happens_once():
    sel = PrivateSelection(["a", "b"], target_epsilon=2.0, target_delta=DELTA,
                           selection_epsilon=1.0)
    sel.report(0, _ledger([(5.0, 0.1, 10)]), score=7919)
    sel.report(1, _ledger([(5.0, 0.1, 10)]), score=7907)
    first = sel.select()
    assert all(sel.select() is first for _ in range(20))
    with pytest.raises(ValueError, match="already drawn"):
        sel.report(1, _ledger([(5.0, 0.1, 10)]), score=3)
    # the scores are private: neither the selection nor its outcome shows them
    for text in (repr(sel), repr(first), first.statement()):
        assert "7919" not in text and "7907" not in text


def test_refusals():
    with pytest.raises(ValueError, match="`candidates` is empty"):
        PrivateSelection([], target_epsilon=1.0, target_delta=DELTA, selection_epsilon=0.1)
    with pytest.raises(ValueError, match="`selection_epsilon`"):
        PrivateSelection([1, 2], target_epsilon=1.0, target_delta=DELTA, selection_epsilon=1.0)
    with pytest.raises(ValueError, match="`target_epsilon`"):
        PrivateSelection([1, 2], target_epsilon=math.nan, target_delta=DELTA,
                         selection_epsilon=0.1)
    with pytest.raises(ValueError, match="`target_delta`"):
        PrivateSelection([1, 2], target_epsilon=1.0, target_delta=0.0, selection_epsilon=0.1)
    with pytest.raises(ValueError, match="`scores` must be finite"):
        selection_probabilities([1.0, math.nan], epsilon=1.0)
    sel = PrivateSelection([1, 2], target_epsilon=1.0, target_delta=DELTA, selection_epsilon=0.1)
    with pytest.raises(ValueError, match="`score` must be finite"):
        sel.report(0, _ledger([(5.0, 0.1, 10)]), score=math.inf)
    with pytest.raises(ValueError, match=r"`index` must be an int in \[0, 2\)"):
        sel.report(2, _ledger([(5.0, 0.1, 10)]), score=1)
    with pytest.raises(TypeError, match="optimizer returned by make_private"):
        sel.report(0, object(), score=1)
    with pytest.raises(ValueError, match="target_delta"):
        sel.report(0, _ledger([(5.0, 0.1, 10)], delta=1e-6), score=1)
    sel.report(0, _ledger([(5.0, 0.1, 10)]), score=1)
    with pytest.raises(ValueError, match="already reported"):
        sel.report(0, _ledger([(5.0, 0.1, 10)]), score=1)
    with pytest.raises(ValueError, match=r"candidates \[1\] were not reported"):
        sel.select()
    sel.report(1, _ledger([(0.5, 0.5, 100)]), score=1)  # far more than planned
    with pytest.raises(ValueError, match="> target_epsilon"):
        sel.select()


def _model(seed):
    torch.manual_seed(seed)
    dev = qml.device("default.qubit", wires=1)

    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.RY(inputs[..., 0], wires=0)
        qml.RY(weights[0], wires=0)
        return qml.expval(qml.Z(0))

    return qml.qnn.TorchLayer(circuit, {"weights": (1,)})


def test_selection_over_make_private_runs():
    """Two learning rates trained with make_private at run_epsilon on the same data; the total
    is the accountant's ε of both ledgers' histories concatenated plus ε_sel, within budget."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(40, 1, generator=g) * math.pi
    y = torch.where(x[:, 0] < math.pi / 2, 1.0, -1.0)
    x_val, y_val = x[:20], y[:20]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[20:], y[20:]),
                                         batch_size=5)
    sel = PrivateSelection([{"lr": 0.01}, {"lr": 0.5}], target_epsilon=3.0, target_delta=DELTA,
                           selection_epsilon=0.5, seed=1)
    eps_run = sel.run_epsilon(sample_rate=5 / 20, epochs=2)
    ledgers = []
    for i, cand in enumerate(sel.candidates):
        model = _model(i)
        opt = torch.optim.SGD(model.parameters(), lr=cand["lr"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pmodel, popt, ploader = qs.make_private(
                model, opt, loader, target_epsilon=eps_run, target_delta=DELTA, epochs=2,
                dataset_size=20, loss=qs.losses.LinearLoss(), seed=i)
            for _ in range(2):
                for xb, yb in ploader:
                    popt.zero_grad()
                    if len(xb):
                        (-(yb * pmodel(xb)).sum()).backward()
                    popt.step()
        with torch.no_grad():
            correct = int((torch.sign(pmodel(x_val)) == y_val).sum())
        sel.report(i, popt, score=correct, result=pmodel)
        ledgers.append(popt.ledger)
    chosen = sel.select()
    history = [e for led in ledgers for e in led.proven_history]
    charged = [e for led in ledgers for e in led.proven_history
               + ([(led.noise_multiplier, led.sample_rate, led.remaining_steps())]
                  if led.remaining_steps() else [])]
    assert chosen.epsilon_runs == pytest.approx(epsilon_from_history(charged, delta=DELTA))
    assert chosen.epsilon_runs >= epsilon_from_history(history, delta=DELTA)
    assert chosen.epsilon == pytest.approx(chosen.epsilon_runs + 0.5)
    assert chosen.epsilon <= 3.0
    assert chosen.result is not None and chosen.candidate == sel.candidates[chosen.index]
    assert f"({chosen.epsilon:.4g}, 1e-05)-DP under add/remove adjacency" in chosen.statement()
    assert "seeded generator" in chosen.statement()


def test_a_run_stopped_early_is_charged_its_whole_budget():
    """A run stopped after 3 of its steps (say, on its validation score, which is private) is
    charged as if it had run its plan: the stopping rule cannot leak through the total."""
    g = torch.Generator().manual_seed(0)
    x = torch.rand(40, 1, generator=g) * math.pi
    y = torch.where(x[:, 0] < math.pi / 2, 1.0, -1.0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=10)
    sel = PrivateSelection(["only"], target_epsilon=2.0, target_delta=DELTA,
                           selection_epsilon=0.5)
    eps_run = sel.run_epsilon(sample_rate=0.25, epochs=5)
    model = _model(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, popt, ploader = qs.make_private(
            model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
            target_epsilon=eps_run, target_delta=DELTA, epochs=5, dataset_size=40,
            loss=qs.losses.LinearLoss(), seed=0)
        for step, (xb, yb) in enumerate(ploader):
            if step == 3:
                break
            popt.zero_grad()
            if len(xb):
                (-(yb * pmodel(xb)).sum()).backward()
            popt.step()
    assert popt.ledger.steps == 3
    sel.report(0, popt, score=1)
    chosen = sel.select()
    assert chosen.epsilon_runs > popt.ledger.epsilon  # the plan, not the 3 steps taken
    assert chosen.epsilon_runs == pytest.approx(eps_run, rel=0.02)
    assert chosen.epsilon_runs <= eps_run


def test_refusals_that_protect_the_total():
    led = _ledger([(5.0, 0.1, 10)])
    sel = PrivateSelection([1, 2], target_epsilon=1.0, target_delta=DELTA,
                           selection_epsilon=0.1)
    with pytest.raises(ValueError, match="accountant"):
        sel.report(0, _ledger([(5.0, 0.1, 10)], accountant="rdp"), score=1)
    with pytest.raises(ValueError, match="credit='adaptive'"):
        sel.report(0, _ledger([(5.0, 0.1, 10)], credit_mode="adaptive"), score=1)
    with pytest.raises(ValueError, match="not a whole number"):
        sel.report(0, led, score=0.9)
    sel.report(0, led, score=np.int64(3))
    with pytest.raises(ValueError, match="adjacency"):
        sel.report(1, _ledger([(5.0, 0.1, 10)], adjacency="replace_one"), score=1)
    sel.report(np.int64(1), _ledger([(5.0, 0.1, 10)]), score=2)
    led.steps += 1  # trained further after its report
    with pytest.raises(ValueError, match=r"runs \[0\] were trained after they were reported"):
        sel.select()
    planned = PrivateSelection([1, 2], target_epsilon=1.0, target_delta=DELTA,
                               selection_epsilon=0.1)
    eps_run = planned.run_epsilon(sample_rate=0.1, epochs=2)
    with pytest.raises(ValueError, match="above the .* that run_epsilon"):
        planned.report(0, _ledger([(5.0, 0.1, 10)], target_epsilon=2 * eps_run), score=1)
    with pytest.raises(ValueError, match="not a string"):
        PrivateSelection("ab", target_epsilon=1.0, target_delta=DELTA, selection_epsilon=0.1)
    with pytest.raises(ValueError, match="`seed` must be an int or None. Found 'x'"):
        PrivateSelection([1, 2], target_epsilon=1.0, target_delta=DELTA,
                         selection_epsilon=0.1, seed="x")
    fractional = PrivateSelection([1, 2], target_epsilon=1.0, target_delta=DELTA,
                                  selection_epsilon=0.1, score_sensitivity=0.05)
    fractional.report(0, _ledger([(5.0, 0.1, 10)]), score=0.9)  # an accuracy over 20
    unseeded = PrivateSelection([1], target_epsilon=1.0, target_delta=np.float32(1e-5),
                                selection_epsilon=0.1)
    unseeded.report(0, _ledger([(5.0, 0.1, 10)], delta=float(np.float32(1e-5))), score=1)
    assert "seeded" not in unseeded.select().statement()
