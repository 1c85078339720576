"""QShiftDPOptimizer: clipping, noise, empty batches, budget, secure mode, adaptive clipping."""

import math
import re

import numpy as np
import pytest
import torch
from opacus import GradSampleModule
from opacus.accountants import RDPAccountant
from opacus.optimizers import AdaClipDPOptimizer, DPOptimizer
from scipy.stats import chi2

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, epochs_to_steps
from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
from pennylane_qshiftdp.optimizers import QShiftDPOptimizer, count_noise_multiplier, secure_normal


def _linear(n_in=3, seed=0):
    torch.manual_seed(seed)
    return GradSampleModule(torch.nn.Linear(n_in, 1, bias=False).double())


def _opt(model, **kw):
    kw.setdefault("noise_multiplier", 1.0)
    kw.setdefault("max_grad_norm", 1.0)
    kw.setdefault("expected_batch_size", 4.0)
    if not kw.get("secure_mode"):
        kw.setdefault("generator", torch.Generator().manual_seed(0))
    return QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), **kw)


def _released(model, opt, x, y=None):
    """Run one step and return the summed noisy gradient (parameter change × qN)."""
    w = next(model.parameters())
    before = w.detach().clone()
    opt.zero_grad()
    if x is not None:
        out = model(x).reshape(-1)
        loss = out if y is None else out * y
        # loss_reduction="mean" (Opacus's default): back-propagate the batch mean
        (loss.mean() if len(loss) else loss.sum()).backward()
    opt.step()
    return ((before - w.detach()) * opt.expected_batch_size).reshape(-1)


def test_is_an_opacus_optimizer_and_schedulers_work():
    model = _linear()
    opt = _opt(model)
    assert isinstance(opt, DPOptimizer) and isinstance(opt, torch.optim.Optimizer)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    _released(model, opt, torch.ones(2, 3, dtype=torch.float64))
    sched.step()
    assert opt.param_groups[0]["lr"] == 0.5


def test_clipping_matches_a_manual_computation():
    """Each example's gradient is clipped to C; the sum plus the seeded noise is released."""
    model = _linear()
    x = torch.tensor([[3.0, 4.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, -12.0]], dtype=torch.float64)
    opt = _opt(model, max_grad_norm=2.0, noise_multiplier=0.5)
    released = _released(model, opt, x, y=None)
    per_example = x  # gradient of the output w.r.t. the weights
    norms = per_example.norm(dim=1, keepdim=True)
    clipped = (per_example * (2.0 / (norms + 1e-6)).clamp(max=1.0)).sum(0)
    noise = torch.randn(3, generator=torch.Generator().manual_seed(0), dtype=torch.float64) * 1.0
    assert torch.allclose(released, clipped + noise, atol=1e-12)
    assert opt.last_record["clipped"] == 2 and opt.last_record["batch_examples"] == 3


def test_noise_standard_deviation_is_sigma_times_clip_norm():
    """Chi-square test (seeded) on 2000 noise-only steps: variance (σC)² per coordinate."""
    model = _linear(4)
    opt = _opt(model, noise_multiplier=0.7, max_grad_norm=3.0,
               generator=torch.Generator().manual_seed(11))
    draws = torch.stack([_released(model, opt, torch.zeros(2, 4, dtype=torch.float64))
                         for _ in range(2000)]).numpy()
    stat = (draws**2).sum(axis=0) / (0.7 * 3.0) ** 2
    assert np.all(stat > chi2.ppf(0.0005, 2000)) and np.all(stat < chi2.ppf(0.9995, 2000))
    assert opt.last_record["proven_noise_multiplier"] == pytest.approx(0.7)


@pytest.mark.parametrize("backward", [False, True])
def test_empty_batch_adds_full_noise_and_counts(backward):
    """No backward (or a zero-row batch): full noise, one ledger step, no crash."""
    model = _linear()
    ledger = PrivacyLedger(target_epsilon=50.0, target_delta=1e-5, noise_multiplier=1.0,
                           sample_rate=0.1, sensitivity=1.0)
    opt = _opt(model, ledger=ledger)
    x = torch.zeros(0, 3, dtype=torch.float64) if backward else None
    released = _released(model, opt, x)
    noise = torch.randn(3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.allclose(released, noise, atol=1e-12)
    assert ledger.steps == 1 and opt.last_record["batch_examples"] == 0


def test_unclipped_grad_from_another_path_is_never_released():
    """A .grad set outside Opacus's hooks (no grad_sample) is replaced, not released."""
    model = _linear()
    opt = _opt(model, noise_multiplier=1e-3)
    w = next(model.parameters())
    before = w.detach().clone()
    opt.zero_grad()
    w.grad = torch.full_like(w, 1e6)
    opt.step()
    assert float((before - w.detach()).abs().max()) < 1e-2


def test_budget_is_checked_before_the_step():
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, noise_multiplier=1.0,
                           sample_rate=0.5, sensitivity=1.0)
    allowed = ledger.remaining_steps()
    model = _linear()
    opt = _opt(model, ledger=ledger)
    for _ in range(allowed):
        _released(model, opt, torch.ones(1, 3, dtype=torch.float64))
    w = next(model.parameters())
    before = w.detach().clone()
    with pytest.raises(qs.PrivacyBudgetExceededError, match="Stopping before step"):
        _released(model, opt, torch.ones(1, 3, dtype=torch.float64))
    assert torch.equal(before, w.detach()) and ledger.epsilon <= 1.0
    fresh = RDPAccountant()
    fresh.history = ledger.history
    assert ledger.epsilon == pytest.approx(fresh.get_epsilon(1e-5), rel=1e-12)


def test_binding_certified_clip_is_counted_never_raised():
    """Issue 21: a refusal that fires only when an offending example is present leaks it."""
    model = _linear()
    opt = _opt(model, certified=True, max_grad_norm=1.0)
    w = next(model.parameters())
    before = w.detach().clone()
    opt.zero_grad()
    model(torch.full((2, 3), 5.0, dtype=torch.float64)).mean().backward()
    opt.step()
    assert not torch.equal(before, w.detach())
    assert opt.last_record["certified_bound_violations"] == 2
    with pytest.raises(TypeError, match="strict"):
        _opt(model, certified=True, strict=True)


def test_per_group_clipping_and_noise_scale():
    """Two clip groups: each part clipped to its own norm; noise std σ·sqrt(C1² + C2²)."""
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Linear(2, 1, bias=False), torch.nn.Linear(1, 1,
                                                                                 bias=False))
    model = GradSampleModule(lin.double())
    p1, p2 = model._module[0].weight, model._module[1].weight
    opt = QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=2.0,
                            max_grad_norm=1.0, expected_batch_size=1.0,
                            clip_groups=[([p1], 3.0), ([p2], 4.0)],
                            generator=torch.Generator().manual_seed(0))
    assert opt.max_grad_norm == pytest.approx(5.0)
    assert opt.last_record is None
    opt.zero_grad()
    model(torch.zeros(1, 2, dtype=torch.float64)).mean().backward()
    opt.step()
    assert opt.last_record["target_variance"] == pytest.approx(100.0)


# ------------------------------------------------------------------------------ secure mode
def test_secure_normal_has_unit_variance_and_is_not_seedable():
    z = secure_normal(40_000)
    # mean within 5 standard errors; variance of N(0,1) sample: sd ≈ sqrt(2/n)
    assert abs(z.mean()) < 5 / math.sqrt(z.size)
    assert abs(z.var() - 1.0) < 5 * math.sqrt(2.0 / z.size)
    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - the legacy global seed must not reproduce it
    a = secure_normal(8)
    torch.manual_seed(0)
    np.random.seed(0)  # noqa: NPY002 - the legacy global seed must not reproduce it
    assert not np.array_equal(a, secure_normal(8))


def test_secure_mode_through_the_opacus_optimizer():
    model = _linear(2)
    with pytest.raises(ValueError, match="refuses a seeded `generator`"):
        QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=1.0,
                          max_grad_norm=1.0, expected_batch_size=1.0, secure_mode=True,
                          generator=torch.Generator())
    opt = _opt(model, secure_mode=True, noise_multiplier=2.0, max_grad_norm=1.5)
    torch.manual_seed(0)
    a = _released(model, opt, None)
    torch.manual_seed(0)
    b = _released(model, opt, None)
    assert not torch.equal(a, b)
    draws = torch.stack([_released(model, opt, None) for _ in range(3000)]).numpy()
    stat = (draws**2).sum(axis=0) / 3.0**2
    assert np.all(stat > chi2.ppf(0.0005, 3000)) and np.all(stat < chi2.ppf(0.9995, 3000))
    assert draws.dtype == np.float64


# ------------------------------------------------------------------------------ adaptive clipping
def _all_clipped_step(opt_factory, n_examples):
    model = _linear(2)
    opt = opt_factory(model)
    opt.zero_grad()
    model(torch.full((n_examples, 2), 100.0, dtype=torch.float64)).mean().backward()
    opt.step()
    return float(opt.max_grad_norm)


def test_adaptive_clip_bound_follows_only_the_released_centred_count():
    """opacus#420/#571: the next clip bound must not leak the Poisson batch size beyond the DP
    release: it is a closed-form function of the released centred count sum(b_i - 1/2) + noise,
    divided by the *expected* batch size (never the realised one)."""
    def ours(model):
        return _opt(model, expected_batch_size=8.0, max_grad_norm=1.0,
                    adaptive_clipping={"target_unclipped_quantile": 0.5,
                                       "clipbound_learning_rate": 0.2},
                    generator=torch.Generator().manual_seed(5))

    for n in (4, 12):
        model = _linear(2)
        opt = ours(model)
        opt.zero_grad()
        model(torch.full((n, 2), 100.0, dtype=torch.float64)).mean().backward()
        opt.step()
        released = opt.last_record["released_centred_unclipped_count"]
        sigma_b = opt.adaptive_clipping["unclipped_num_std"]
        gen = torch.Generator().manual_seed(5)
        torch.randn(2, generator=gen, dtype=torch.float64)  # the gradient noise, drawn first
        z = float(torch.randn(1, generator=gen, dtype=torch.float64)[0])
        assert released == pytest.approx(0 - n / 2 + sigma_b * z, rel=1e-12)
        expected = math.exp(-0.2 * (released / 8.0 + 0.5 - 0.5))
        assert opt.max_grad_norm == pytest.approx(expected, rel=1e-12)

    def stock(model):  # Opacus 1.6's AdaClipDPOptimizer divides by the realised batch size
        return AdaClipDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                  noise_multiplier=1.0, target_unclipped_quantile=0.5,
                                  clipbound_learning_rate=0.2, max_clipbound=10.0,
                                  min_clipbound=0.01, unclipped_num_std=4.0, max_grad_norm=1.0,
                                  expected_batch_size=8, generator=torch.Generator().manual_seed(5))

    assert _all_clipped_step(stock, 4) != _all_clipped_step(stock, 12)


def test_count_noise_rule_is_valid_for_ordinary_jobs():
    """ε = 4, 16 epochs, batch 16 of 64: σ ≈ 2.56; the rule keeps 2σ_b > σ."""
    q = 16 / 64
    sigma = calibrate_noise_multiplier(target_epsilon=4.0, target_delta=1e-5, sample_rate=q,
                                       steps=epochs_to_steps(epochs=16, sample_rate=q))
    assert 2.3 < sigma < 2.8
    sigma_b = count_noise_multiplier(sigma, 16)
    assert sigma_b == pytest.approx(2 * sigma) and 2 * sigma_b > sigma
    model = _linear(2)
    opt = _opt(model, noise_multiplier=sigma, expected_batch_size=16.0,
               adaptive_clipping={})
    inflation = opt.adaptive_clipping["gradient_noise_multiplier"] / sigma
    assert 1.0 < inflation < 1.034
    with pytest.raises(ValueError, match=re.escape("needs 2·unclipped_num_std > noise_multiplier")):
        _opt(model, noise_multiplier=sigma, expected_batch_size=16.0,
             adaptive_clipping={"unclipped_num_std": 16 / 20})


def test_errors():
    model = _linear()
    sgd = torch.optim.SGD(model.parameters(), lr=1.0)
    with pytest.raises(ValueError, match=re.escape(
            "`noise_multiplier` must be positive and finite. Found 0.0.")):
        QShiftDPOptimizer(sgd, noise_multiplier=0.0, max_grad_norm=1.0, expected_batch_size=1)
    with pytest.raises(ValueError, match=re.escape("`credit` must be one of")):
        QShiftDPOptimizer(sgd, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=1,
                          credit="magic", certified=True)
    with pytest.raises(NotImplementedError, match="needs certified clipping"):
        QShiftDPOptimizer(sgd, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=1,
                          credit="depolarizing")
    with pytest.raises(ValueError, match="needs the quantum layer"):
        QShiftDPOptimizer(sgd, noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=1,
                          credit="depolarizing", certified=True)
    with pytest.raises(TypeError, match="must be a torch.optim.Optimizer"):
        QShiftDPOptimizer(object(), noise_multiplier=1.0, max_grad_norm=1.0,
                          expected_batch_size=1)


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_a_step_composes_no_epsilon_and_the_records_get_the_composed_ones(accountant,
                                                                          monkeypatch):
    """Issue 43: once K* is searched a step composes nothing (the record's ε is composed when
    the history is read), and every record's ε is that of its prefix composed from scratch
    (dp-accounting's PLD, Opacus's RDP), through a σ change (a noise scheduler) and a resume."""
    from pennylane_qshiftdp.accountants import ledger as ledger_module
    from pennylane_qshiftdp.accountants.composition import epsilon_from_history

    calls = []
    real = ledger_module.epsilon_from_history

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    def ledger():
        return PrivacyLedger(target_epsilon=8.0, target_delta=1e-5, noise_multiplier=1.0,
                             sample_rate=0.1, sensitivity=1.0, accountant=accountant)

    monkeypatch.setattr(ledger_module, "epsilon_from_history", counting)
    model = _linear()
    opt = _opt(model, ledger=ledger())
    x = torch.ones(2, 3, dtype=torch.float64)
    for _ in range(3):  # the first checks compose inside the bracket, then K* is searched
        _released(model, opt, x)
    searched = len(calls)
    for _ in range(4):
        _released(model, opt, x)
    assert len(calls) == searched  # four steps, no composition
    opt.noise_multiplier = 1.25  # a scheduler's σ: a new bracket
    for _ in range(3):
        _released(model, opt, x)
    records = opt.history  # composed now
    assert [r["step"] for r in records] == list(range(1, 11))
    for t, r in enumerate(records, start=1):
        prefix = [(1.0, 0.1, min(t, 7))] + ([(1.25, 0.1, t - 7)] if t > 7 else [])
        assert r["epsilon"] == pytest.approx(
            epsilon_from_history(prefix, delta=1e-5, accountant=accountant), rel=1e-12)
        assert r["credited_epsilon"] == r["epsilon"]  # no credit mode
    assert records[-1]["epsilon"] == opt.ledger.epsilon  # the same composition, same float
    assert opt.last_record is records[-1]
    before = len(calls)
    assert opt.history[0]["epsilon"] == records[0]["epsilon"] and len(calls) == before
    restored = _opt(_linear(), ledger=ledger())
    restored.load_state_dict(opt.state_dict())
    assert [r["epsilon"] for r in restored.history] == [r["epsilon"] for r in records]
    _released(model, opt, x)
    assert opt.history[-1]["epsilon"] == pytest.approx(epsilon_from_history(
        [(1.0, 0.1, 7), (1.25, 0.1, 4)], delta=1e-5, accountant=accountant), rel=1e-12)


@pytest.mark.parametrize("quantile", [0.1, 0.9])
def test_adaptive_rows_are_clipped_with_the_clip_the_noise_is_scaled_by(quantile):
    """Issue 46 found: after the clip moved, the next step clipped its rows with the previous
    C while its noise and record used the new one (an example moved the sum by more than the
    noise is calibrated for whenever C shrank). Checked on the noiseless release: one example
    with a huge gradient contributes exactly the recorded ``clip_norm`` at every step, as the
    clip shrinks (quantile 0.1) and grows (0.9)."""
    model = _linear(2)
    opt = _opt(model, noise_multiplier=1e-9, expected_batch_size=1.0, max_grad_norm=1.0,
               adaptive_clipping={"target_unclipped_quantile": quantile,
                                  "clipbound_learning_rate": 0.5, "unclipped_num_std": 1.0})
    x = torch.full((1, 2), 100.0, dtype=torch.float64)
    clips = []
    for _ in range(4):
        clip_before_step = opt.max_grad_norm
        released = _released(model, opt, x)
        record = opt.last_record
        assert record["clip_norm"] == pytest.approx(clip_before_step, rel=1e-12)
        assert float(released.norm()) == pytest.approx(record["clip_norm"], rel=1e-6)
        clips.append(record["clip_norm"])
    assert len(set(clips)) == 4  # the clip moved at every step (the check is not vacuous)
