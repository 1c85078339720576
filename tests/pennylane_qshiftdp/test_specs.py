"""The grouped settings of make_private (issue 46): each spec checks its fields once, with
make_private's messages; every clip mode has one resolver; a LedgerConfig is a ledger's
keywords."""

import dataclasses
import re

import pytest

from pennylane_qshiftdp import privacy_engine
from pennylane_qshiftdp.accountants.config import LedgerConfig
from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
from pennylane_qshiftdp.specs import (
    CLIP_MODES,
    AccountingSpec,
    ClipSpec,
    CreditSpec,
    RandomnessSpec,
    SamplingSpec,
)


@pytest.mark.parametrize("make,exc,msg", [
    (lambda: AccountingSpec(target_epsilon=0.0, target_delta=1e-5), ValueError,
     "`target_epsilon` must be"),
    (lambda: AccountingSpec(target_epsilon=1.0, target_delta=1e-5, adjacency="swap"),
     ValueError, "`adjacency` must be one of"),
    (lambda: SamplingSpec(epochs=1, sample_rate=0.5, dataset_size=40), ValueError,
     "Give `sample_rate` or `dataset_size`"),
    (lambda: SamplingSpec(epochs=0), ValueError, "`epochs` must be positive"),
    (lambda: ClipSpec(max_grad_norm="clipped"), ValueError, "`max_grad_norm` must be one of"),
    (lambda: CreditSpec(credit="adaptive"), ValueError, "`beta` must be in (0, 1)"),
    (lambda: CreditSpec(credit="depolarizing", proven_epsilon_factor=1.0), ValueError,
     "`proven_epsilon_factor` must be a finite number above 1"),
    (lambda: CreditSpec(variance_floor_source="guessed"), ValueError,
     "`variance_floor_source` must be 'proven' or 'declared'"),
    (lambda: RandomnessSpec(seed=0, secure_mode=True), ValueError, "refuses `seed`"),
])
def test_specs_refuse_bad_settings_with_make_privates_messages(make, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        make()


def test_sampling_spec_stores_checked_numbers():
    spec = SamplingSpec(epochs=2, expected_batch_size=8, dataset_size=40)
    assert (spec.epochs, spec.expected_batch_size, spec.dataset_size) == (2.0, 8.0, 40)
    assert isinstance(spec.epochs, float) and isinstance(spec.expected_batch_size, float)


def test_an_unknown_credit_mode_is_left_to_the_model_checks():
    assert CreditSpec(credit="magic").credit == "magic"  # refused later, with the list


def test_every_clip_mode_has_one_resolver():
    assert sorted(privacy_engine._CLIP_RESOLVERS) == sorted(CLIP_MODES)


def test_a_ledger_config_is_the_ledgers_keywords():
    cfg = LedgerConfig(target_epsilon=1, target_delta=1e-5, noise_multiplier=2,
                       sample_rate=0.1, sensitivity=1.5, accountant="rdp", dataset_size=100,
                       sample_rate_source="dataset_length")
    assert cfg.target_epsilon == 1.0 and isinstance(cfg.target_epsilon, float)
    a, b = PrivacyLedger(cfg), PrivacyLedger(**dataclasses.asdict(cfg))
    for ledger in (a, b):
        ledger.step()
    assert a.state_dict() == b.state_dict()
    with pytest.raises(TypeError, match="not both"):
        PrivacyLedger(cfg, target_epsilon=1.0)
    with pytest.raises(TypeError, match="LedgerConfig"):
        PrivacyLedger(1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.target_epsilon = 2.0  # type: ignore[misc]


def test_the_clip_modes_are_read_from_the_optimizer_table_and_each_has_a_resolver():
    """Issue 46: a new clip mode is named once (optimizers.selection.CLIP_CLASSES)."""
    from pennylane_qshiftdp import privacy_engine
    from pennylane_qshiftdp.optimizers.selection import CLIP_CLASSES

    assert CLIP_MODES == ("calibrated", "certified", "public", "adaptive", "automatic")
    assert set(CLIP_MODES) == {"calibrated"} | (set(CLIP_CLASSES) - {"flat", "per_layer"})
    assert set(privacy_engine._CLIP_RESOLVERS) == set(CLIP_MODES)
