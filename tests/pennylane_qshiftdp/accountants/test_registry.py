"""One accountant registry, Opacus's: a user's accountant reaches the ledger, "gdp" is refused.

Names resolve through ``opacus.accountants.registry`` (``accountants.registry``); each entry says
how ε of a history is computed and the calibration's tolerance. Opacus's GaussianAccountant is
refused before anything trains: its ε is a central-limit approximation that can underestimate
ε, and this package reports upper bounds only.
"""

import re
import warnings

import pytest
import torch
from opacus.accountants import IAccountant, RDPAccountant, register_accountant
from opacus.accountants import registry as opacus_registry

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.accountants.composition import epsilon_from_history
from pennylane_qshiftdp.accountants.ledger import PrivacyLedger
from pennylane_qshiftdp.accountants.registry import (
    ACCOUNTANTS,
    PLD_RELATIVE_TOLERANCE,
    resolve_accountant,
)

DELTA = 1e-5
GDP_REFUSED = "`accountant` must be one of 'rdp', 'prv', 'pld'. Found 'gdp'."


class UsersRDP(RDPAccountant):
    """An accountant a user registers with Opacus (its own class: Opacus's RDP analysis)."""

    @classmethod
    def mechanism(cls) -> str:
        return "users-rdp"


@pytest.fixture
def users_rdp():
    register_accountant("users-rdp", UsersRDP)
    yield "users-rdp"
    opacus_registry._ACCOUNTANTS.pop("users-rdp")


def _model_and_loader(n=20, batch=5):
    model = torch.nn.Linear(2, 1, bias=False).double()
    x = torch.randn(n, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    data = torch.utils.data.TensorDataset(x, torch.zeros(n, dtype=torch.float64))
    return model, torch.utils.data.DataLoader(data, batch_size=batch)


def test_the_shipped_names_resolve_to_their_entries():
    assert tuple(ACCOUNTANTS) == ("rdp", "prv", "pld")
    for name, cls in ACCOUNTANTS.items():
        entry = resolve_accountant(name)
        assert entry.cls is cls is opacus_registry._ACCOUNTANTS[name] and entry.vouched
    assert [resolve_accountant(n).monotone for n in ACCOUNTANTS] == [True, False, True]
    assert resolve_accountant("rdp").tolerance(100.0, 0.01) == 0.01
    assert resolve_accountant("pld").tolerance(100.0, 0.01) == PLD_RELATIVE_TOLERANCE * 100.0


def test_a_users_accountant_reaches_make_private_and_the_ledger(users_rdp):
    """make_private(accountant=<a name registered with Opacus>): σ calibrated by Opacus's
    bisection on it, every step charged to a ledger of that accountant, whose ε is the
    accountant's own; the statement says it is the user's and that ε is its claim."""
    entry = resolve_accountant(users_rdp)
    assert entry.cls is UsersRDP and not entry.vouched and not entry.monotone
    model, loader = _model_and_loader()
    private, opt, dl = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                       loader, target_epsilon=3.0, target_delta=DELTA,
                                       epochs=3, max_grad_norm=1.0, accountant=users_rdp,
                                       seed=0)
    steps = 12  # q = 1/4, 3 epochs
    assert opt.noise_multiplier == calibrate_noise_multiplier(
        target_epsilon=3.0, target_delta=DELTA, sample_rate=0.25, steps=steps,
        accountant=users_rdp)
    # the same analysis as Opacus's RDPAccountant, so the same σ as "rdp"
    assert opt.noise_multiplier == pytest.approx(calibrate_noise_multiplier(
        target_epsilon=3.0, target_delta=DELTA, sample_rate=0.25, steps=steps,
        accountant="rdp"), rel=1e-9)
    for _ in range(3):
        for xb, _ in dl:
            opt.zero_grad()
            if len(xb):
                private(xb).sum().backward()
            opt.step()
    ledger = opt.ledger
    assert ledger.steps == steps and ledger.accountant == users_rdp
    reference = UsersRDP()
    reference.history = ledger.history
    assert ledger.epsilon == reference.get_epsilon(delta=DELTA) <= 3.0
    assert ledger.epsilons[users_rdp] == ledger.epsilon and {"rdp", "pld"} <= set(
        ledger.epsilons)
    text = ledger.statement()
    assert "registered with Opacus as 'users-rdp' by the user" in text
    assert "ε is that accountant's own claim" in text
    again = PrivacyLedger.from_state_dict(ledger.state_dict())
    assert again.accountant == users_rdp and again.epsilon == ledger.epsilon


def test_gdp_is_refused_before_training_with_the_reason():
    """Opacus's own "gdp" (GaussianAccountant) is in its registry but refused everywhere a name
    is taken: make_private (before any step), the ledger, the calibration, ε of a history."""
    model, loader = _model_and_loader()
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(ValueError, match=re.escape(GDP_REFUSED)) as err:
        qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                        target_epsilon=3.0, target_delta=DELTA, epochs=3, max_grad_norm=1.0,
                        accountant="gdp", seed=0)
    message = str(err.value)
    assert "GaussianAccountant" in message and "central-limit approximation" in message
    assert "underestimate" in message and "upper bounds" in message
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    with pytest.raises(ValueError, match=re.escape(GDP_REFUSED)):
        PrivacyLedger(target_epsilon=1.0, target_delta=DELTA, noise_multiplier=1.0,
                      sample_rate=0.1, sensitivity=1.0, accountant="gdp")
    with pytest.raises(ValueError, match=re.escape(GDP_REFUSED)):
        compute_epsilon(noise_multiplier=1.0, sample_rate=0.1, steps=10, delta=DELTA,
                        accountant="gdp")
    with pytest.raises(ValueError, match=re.escape(GDP_REFUSED)):
        epsilon_from_history([(1.0, 0.1, 10)], delta=DELTA, accountant="gdp")


def test_a_subclass_of_a_refused_accountant_is_refused():
    from opacus.accountants import GaussianAccountant

    class Renamed(GaussianAccountant):
        pass

    register_accountant("renamed-gdp", Renamed)
    try:
        with pytest.raises(ValueError, match="Found 'renamed-gdp'. Opacus registers"):
            resolve_accountant("renamed-gdp")
    finally:
        opacus_registry._ACCOUNTANTS.pop("renamed-gdp")


def test_an_unknown_name_lists_the_choices_and_the_users_names(users_rdp):
    with pytest.raises(ValueError) as err:
        resolve_accountant("moments", "accountant")
    message = str(err.value)
    assert message.startswith("`accountant` must be one of 'rdp', 'prv', 'pld'. Found 'moments'")
    assert "'users-rdp'" in message and "'gdp'" not in message
    assert "register_accountant" in message


def test_a_registered_class_that_is_not_an_accountant_is_refused():
    register_accountant("not-an-accountant", dict)
    try:
        with pytest.raises(TypeError, match="`accountant`='not-an-accountant'.*IAccountant"):
            resolve_accountant("not-an-accountant")
    finally:
        opacus_registry._ACCOUNTANTS.pop("not-an-accountant")


def test_a_name_re_registered_with_another_class_is_computed_by_that_class():
    """Entries are keyed by the class: "rdp" forced to a user's class is no longer computed by
    the cached RDP path, nor relied on to be monotone."""

    class Doubled(IAccountant):
        def __init__(self):
            super().__init__()

        def step(self, *, noise_multiplier, sample_rate):  # pragma: no cover - not stepped
            raise NotImplementedError

        def get_epsilon(self, delta, *args, **kwargs):
            acct = RDPAccountant()
            acct.history = self.history
            return 2 * acct.get_epsilon(delta)

        def __len__(self):  # pragma: no cover
            return sum(n for *_, n in self.history)

        @classmethod
        def mechanism(cls):
            return "rdp"

    history = [(1.0, 0.1, 10)]
    plain = epsilon_from_history(history, delta=DELTA, accountant="rdp")
    register_accountant("rdp", Doubled, force=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert epsilon_from_history(history, delta=DELTA, accountant="rdp") == pytest.approx(
                2 * plain, rel=1e-12)
        assert not resolve_accountant("rdp").monotone
    finally:
        register_accountant("rdp", RDPAccountant, force=True)
    assert epsilon_from_history(history, delta=DELTA, accountant="rdp") == plain
