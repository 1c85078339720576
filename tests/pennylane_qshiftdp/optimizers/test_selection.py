"""The optimizer's modes (issue 46): one class per mode, chosen by get_optimizer_class, built
from today's keywords by build_optimizer (and QShiftDPOptimizer(...)), the ledger a step hook."""

import re

import pytest
import torch
from opacus import GradSampleModule

from pennylane_qshiftdp import PrivacyLedger
from pennylane_qshiftdp.exceptions import PrivacyBudgetExceededError
from pennylane_qshiftdp.optimizers import (
    AdaptiveClipDPOptimizer,
    AutomaticClipDPOptimizer,
    CreditSettings,
    LedgerHook,
    PublicClipDPOptimizer,
    QShiftDPOptimizer,
    ShotNoiseCreditDPOptimizer,
    build_optimizer,
    get_optimizer_class,
)

BASE = dict(noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=4.0)


def _sgd():
    model = GradSampleModule(torch.nn.Linear(3, 1, bias=False).double())
    return model, torch.optim.SGD(model.parameters(), lr=1.0)


def test_the_table():
    assert get_optimizer_class("flat") is QShiftDPOptimizer
    assert get_optimizer_class("per_layer") is QShiftDPOptimizer
    assert get_optimizer_class("adaptive") is AdaptiveClipDPOptimizer
    assert get_optimizer_class("automatic") is AutomaticClipDPOptimizer
    assert get_optimizer_class("public") is PublicClipDPOptimizer
    assert get_optimizer_class("certified", credit="adaptive") is ShotNoiseCreditDPOptimizer
    dist = get_optimizer_class("adaptive", distributed=True)
    assert issubclass(dist, AdaptiveClipDPOptimizer) and dist.distributed
    assert dist is get_optimizer_class("adaptive", distributed=True)  # made once


def test_unknown_modes_name_the_argument():
    with pytest.raises(ValueError, match=re.escape("`clipping` must be one of")):
        get_optimizer_class("magic")
    with pytest.raises(ValueError, match=re.escape("`credit` must be one of")):
        get_optimizer_class("flat", credit="magic")
    with pytest.raises(NotImplementedError, match="needs certified clipping"):
        get_optimizer_class("adaptive", credit="depolarizing")
    with pytest.raises(NotImplementedError, match="distributed"):
        get_optimizer_class("flat", credit="depolarizing", distributed=True)


def test_today_s_keywords_build_the_mode_s_class():
    _, sgd = _sgd()
    opt = QShiftDPOptimizer(sgd, adaptive_clipping={}, **BASE)
    assert type(opt) is AdaptiveClipDPOptimizer and isinstance(opt, QShiftDPOptimizer)
    _, sgd = _sgd()
    assert type(build_optimizer(sgd, automatic_gamma=0.01, **BASE)) is AutomaticClipDPOptimizer
    _, sgd = _sgd()
    assert type(QShiftDPOptimizer(sgd, **BASE)) is QShiftDPOptimizer  # no mode keyword


def test_a_subclass_s_overrides_go_in_front_of_the_mode_s_class():
    class Broken(QShiftDPOptimizer):
        def _update_clip_norm(self):
            self.called = True
            super()._update_clip_norm()

    model, sgd = _sgd()
    opt = Broken(sgd, adaptive_clipping={}, **BASE)
    assert isinstance(opt, Broken) and isinstance(opt, AdaptiveClipDPOptimizer)
    model(torch.ones(2, 3, dtype=torch.float64)).sum().backward()
    opt.step()
    assert opt.called and "next_clip_norm" in opt.last_record


def test_mode_classes_take_their_own_settings():
    _, sgd = _sgd()
    with pytest.raises(TypeError):
        AdaptiveClipDPOptimizer(sgd, adaptive_clipping={}, ledger=None, **BASE)
    with pytest.raises(ValueError, match="needs the quantum layer"):
        CreditSettings("depolarizing", noise_floor_multiplier=0.5)
    with pytest.raises(ValueError, match=re.escape("`credit` must be one of")):
        CreditSettings("magic")


def test_the_ledger_is_a_step_hook_checked_before_the_step():
    model, sgd = _sgd()
    ledger = PrivacyLedger(target_epsilon=1.0, target_delta=1e-5, noise_multiplier=1.0,
                           sample_rate=1.0, sensitivity=1.0)
    opt = QShiftDPOptimizer(sgd, generator=torch.Generator().manual_seed(0), **BASE)
    assert opt.ledger is None
    opt.attach_ledger(ledger)
    assert opt.ledger is ledger and isinstance(opt._ledger_hook, LedgerHook)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(PrivacyBudgetExceededError, match="before step 1"):
        model(torch.ones(2, 3, dtype=torch.float64)).sum().backward()
        opt.step()
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before, strict=True))
    opt.ledger = None  # detaches
    assert opt._ledger_hook is None
