"""Tests for pennylane_qshiftdp.accountants.ledger.PrivacyLedger."""

import json
import re
import warnings

import opacus
import pytest
from opacus.accountants import PRVAccountant, RDPAccountant

from pennylane_qshiftdp._formatting import format_up
from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.accountants.ledger import FORMAT_VERSION, PrivacyLedger
from pennylane_qshiftdp.exceptions import PrivacyBudgetExceededError, PrivacyWarning

# RDP: these tests check the ledger against Opacus's RDPAccountant (PLD: test_pld.py)
BASE = dict(
    target_epsilon=1.0,
    target_delta=1e-5,
    noise_multiplier=2.0,
    sample_rate=0.1,
    sensitivity=1.5,
    accountant="rdp",
)


def make(**kwargs):
    return PrivacyLedger(**{**BASE, **kwargs})


def opacus_epsilon(history, delta, cls=RDPAccountant):
    acct = cls()
    acct.history = list(history)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return acct.get_epsilon(delta=delta)


class TestAccounting:
    def test_initial_state(self):
        ledger = make()
        assert ledger.steps == 0
        assert ledger.history == []
        assert ledger.epsilon == 0.0
        assert ledger.delta == ledger.total_delta == 1e-5

    def test_matches_independent_rdp_accountant(self):
        ledger = make(target_epsilon=5.0)
        for k in range(1, 26):
            eps = ledger.step()
            assert eps == ledger.epsilon
            assert ledger.steps == k
            assert abs(ledger.epsilon - opacus_epsilon(ledger.history, 1e-5)) <= 1e-9
        assert ledger.history == [(2.0, 0.1, 25)]

    def test_matches_independent_prv_accountant(self):
        ledger = make(accountant="prv", noise_multiplier=3.0)
        for _ in range(5):
            ledger.step()
        assert abs(ledger.epsilon - opacus_epsilon(ledger.history, 1e-5, PRVAccountant)) <= 1e-9

    def test_history_is_a_copy(self):
        ledger = make()
        ledger.step()
        h = ledger.history
        h.append((1.0, 1.0, 100))
        assert ledger.history == [(2.0, 0.1, 1)]

    def test_epsilon_after(self):
        ledger = make()
        for _ in range(3):
            ledger.step()
        assert ledger.epsilon_after(0) == ledger.epsilon
        expected = compute_epsilon(noise_multiplier=2.0, sample_rate=0.1, steps=10, delta=1e-5,
                                   accountant="rdp")
        assert ledger.epsilon_after(7) == pytest.approx(expected, abs=1e-9)
        assert ledger.steps == 3  # epsilon_after records nothing

    def test_calibrated_sigma_allows_exactly_the_planned_steps(self):
        steps = 40
        for accountant in ("rdp", "pld"):
            sigma = calibrate_noise_multiplier(
                target_epsilon=1.0, target_delta=1e-5, sample_rate=0.2, steps=steps,
                accountant=accountant)
            ledger = make(noise_multiplier=sigma, sample_rate=0.2, accountant=accountant)
            assert ledger.remaining_steps() >= steps
            for _ in range(steps):
                ledger.step()
            assert ledger.epsilon <= 1.0
            assert ledger.epsilon == pytest.approx(
                compute_epsilon(noise_multiplier=sigma, sample_rate=0.2, steps=steps,
                                delta=1e-5, accountant=accountant),
                abs=1e-12,
            )

    def test_would_exceed_stops_before_the_step(self):
        ledger = make(noise_multiplier=3.0, sample_rate=0.2)
        n = ledger.remaining_steps()
        assert n >= 2
        for _ in range(n):
            assert not ledger.would_exceed()
            ledger.step()
        assert ledger.epsilon <= 1.0
        assert ledger.would_exceed()
        assert ledger.would_exceed(1) and ledger.remaining_steps() == 0
        eps_before, history_before = ledger.epsilon, ledger.history
        would_be = ledger.epsilon_after(1)
        assert would_be > 1.0
        msg = (
            f"Privacy budget exceeded: step {n + 1} would spend ε = {would_be:.6g} > target "
            f"ε = 1 (δ = 1e-05); ε spent so far is {eps_before:.6g} after {n} steps. "
            f"The step was not taken."
        )
        with pytest.raises(PrivacyBudgetExceededError, match=re.escape(msg)):
            ledger.step()
        assert ledger.steps == n
        assert ledger.history == history_before
        assert ledger.epsilon == eps_before

    def test_remaining_steps_is_exact(self):
        ledger = make(noise_multiplier=1.3, sample_rate=0.05)
        n = ledger.remaining_steps()
        assert ledger.epsilon_after(n) <= 1.0 < ledger.epsilon_after(n + 1)

    def test_remaining_steps_zero_when_one_step_is_too_much(self):
        ledger = make(noise_multiplier=0.5, sample_rate=1.0)
        assert ledger.remaining_steps() == 0
        with pytest.raises(PrivacyBudgetExceededError):
            ledger.step()
        assert ledger.steps == 0

    def test_would_exceed_validates(self):
        msg = "`steps` must be a positive integer. Found 0."
        with pytest.raises(ValueError, match=re.escape(msg)):
            make().would_exceed(0)
        msg = "`steps` must be a positive integer. Found -1."
        with pytest.raises(ValueError, match=re.escape(msg)):
            make().epsilon_after(-1)


class TestPersistence:
    def ledger(self):
        ledger = make(
            credit_mode="adaptive",
            beta=1e-7,
            adjacency="replace_one",
            dataset_size=1000,
            preprocessing_note="The mean of the training data.",
            extra={"sensitivity_parts": {"qnode": 1.5}, "loss": "linear"},
            expected_batch_size=100.0,
            sample_rate_source="dataset_size",
        )
        for _ in range(7):
            ledger.step()
        return ledger

    def test_json_round_trip(self):
        ledger = self.ledger()
        s = ledger.to_json()
        data = json.loads(s)
        assert data["format_version"] == FORMAT_VERSION == 3
        assert data["expected_batch_size"] == 100.0
        assert data["sample_rate_source"] == "dataset_size"
        assert data["epsilon_by_accountant"] == ledger.epsilons
        assert data["steps"] == 7 and data["history"] == [[2.0, 0.1, 7]]
        assert data["opacus_version"] == opacus.__version__
        restored = PrivacyLedger.from_json(s)
        assert restored.state_dict() == ledger.state_dict()
        assert restored.history == ledger.history
        assert isinstance(restored.history[0], tuple)
        assert restored.epsilon == ledger.epsilon
        assert restored.steps == 7
        for attr in (
            "target_epsilon",
            "target_delta",
            "noise_multiplier",
            "sample_rate",
            "sensitivity",
            "adjacency",
            "credit_mode",
            "beta",
            "accountant",
            "dataset_size",
            "preprocessing_note",
            "extra",
            "total_delta",
            "expected_batch_size",
            "sample_rate_source",
            "epsilons",
        ):
            assert getattr(restored, attr) == getattr(ledger, attr), attr
        assert restored.statement() == ledger.statement()

    def test_save_load(self, tmp_path):
        ledger = self.ledger()
        path = ledger.save(tmp_path / "ledger.json")
        assert path.exists() and not (tmp_path / "ledger.json.tmp").exists()
        restored = PrivacyLedger.load(path)
        assert restored.state_dict() == ledger.state_dict()

    def test_resume_continues_with_same_budget(self):
        uninterrupted = make()
        for _ in range(10):
            uninterrupted.step()
        first = make()
        for _ in range(4):
            first.step()
        resumed = make()
        resumed.load_state_dict(json.loads(first.to_json()))
        assert resumed.steps == 4 and resumed.epsilon == first.epsilon
        for _ in range(6):
            resumed.step()
        assert resumed.history == uninterrupted.history
        assert resumed.epsilon == uninterrupted.epsilon
        assert resumed.remaining_steps() == uninterrupted.remaining_steps()

    def test_floats_round_trip_exactly(self):
        ledger = make(noise_multiplier=10.0 / 3.0, sample_rate=64 / 270, target_epsilon=5.0)
        ledger.step()
        restored = PrivacyLedger.from_json(ledger.to_json())
        assert restored.history == ledger.history
        assert restored.epsilon == ledger.epsilon

    def test_bad_format_version(self):
        sd = make().state_dict()
        sd["format_version"] = 4
        with pytest.raises(ValueError,
                           match=re.escape("`format_version` must be one of (1, 2, 3). Found 4.")):
            PrivacyLedger.from_state_dict(sd)

    def test_version_2_is_read_without_divisor_and_sampling_source(self):
        ledger = make(expected_batch_size=64.0, sample_rate_source="sample_rate")
        ledger.step()
        sd = ledger.state_dict()
        sd["format_version"] = 2
        del sd["expected_batch_size"], sd["sample_rate_source"]
        restored = PrivacyLedger.from_state_dict(sd)
        assert restored.expected_batch_size is None and restored.sample_rate_source is None
        assert restored.history == ledger.history and restored.epsilon == ledger.epsilon
        sd["format_version"] = 3
        with pytest.raises(ValueError, match=re.escape(
                "`state_dict` is missing the keys ['expected_batch_size', 'sample_rate_source']")):
            PrivacyLedger.from_state_dict(sd)

    def test_version_1_is_read_with_proven_history_equal_to_history(self):
        ledger = make()
        for _ in range(3):
            ledger.step()
        sd = ledger.state_dict()
        sd["format_version"] = 1
        del sd["proven_history"]
        restored = PrivacyLedger.from_state_dict(sd)
        assert restored.proven_history == restored.history == ledger.history
        assert restored.epsilon == ledger.epsilon

    def test_proven_history_must_cover_the_steps(self):
        ledger = make()
        ledger.step()
        sd = ledger.state_dict()
        sd["proven_history"] = []
        with pytest.raises(ValueError, match="`proven_history` must cover the same 1 steps"):
            PrivacyLedger.from_state_dict(sd)

    def test_missing_key(self):
        sd = make().state_dict()
        del sd["sensitivity"]
        msg = "`state_dict` is missing the keys ['sensitivity']."
        with pytest.raises(ValueError, match=re.escape(msg)):
            make().load_state_dict(sd)

    def test_inconsistent_steps(self):
        sd = make().state_dict()
        sd["planned_history"] = [[2.0, 0.1, 3]]
        sd["steps"] = 4
        msg = "`steps` must equal the total steps in `history` (3). Found 4."
        with pytest.raises(ValueError, match=re.escape(msg)):
            make().load_state_dict(sd)

    def test_bad_history_entry(self):
        sd = make().state_dict()
        sd["planned_history"] = [[2.0, 1.5, 3]]
        sd["steps"] = 3
        msg = "`history[0].sample_rate` must be in (0, 1]. Found 1.5."
        with pytest.raises(ValueError, match=re.escape(msg)):
            make().load_state_dict(sd)


class TestValidation:
    @pytest.mark.parametrize(
        "kwargs, exc, msg",
        [
            ({"target_epsilon": 0.0}, ValueError, "`target_epsilon` must be positive. Found 0.0."),
            (
                {"target_epsilon": float("inf")},
                ValueError,
                "`target_epsilon` must be finite. Found inf.",
            ),
            ({"target_delta": 0.0}, ValueError, "`target_delta` must be in (0, 1). Found 0.0."),
            ({"target_delta": 1.0}, ValueError, "`target_delta` must be in (0, 1). Found 1.0."),
            (
                {"noise_multiplier": 0.0},
                ValueError,
                "`noise_multiplier` must be positive and finite. Found 0.0.",
            ),
            ({"sample_rate": 0.0}, ValueError, "`sample_rate` must be in (0, 1]. Found 0.0."),
            ({"sample_rate": 1.1}, ValueError, "`sample_rate` must be in (0, 1]. Found 1.1."),
            (
                {"sensitivity": -1.0},
                ValueError,
                "`sensitivity` must be positive and finite. Found -1.0.",
            ),
            (
                {"adjacency": "replace"},
                ValueError,
                "`adjacency` must be one of 'add_remove', 'replace_one'. Found 'replace'.",
            ),
            (
                {"credit_mode": "shots"},
                ValueError,
                "`credit_mode` must be one of 'none', 'depolarizing', 'adaptive', 'isotropic'. "
                "Found 'shots'.",
            ),
            (
                {"credit_mode": "adaptive", "beta": 0.0},
                ValueError,
                "`beta` must be in (0, 1) for the adaptive and isotropic credit modes (e.g. "
                "1e-6, well below 1/N). Found 0.0.",
            ),
            (
                {"credit_mode": "none", "beta": 0.01},
                ValueError,
                "`beta` must be 0 unless the credit mode is 'adaptive' or 'isotropic'. Found 0.01.",
            ),
            (
                {"credit_mode": "adaptive", "beta": 0.5, "target_delta": 0.6},
                ValueError,
                "`target_delta` + `beta` must be below 1.",
            ),
            (
                {"accountant": "gdp"},
                ValueError,
                "`accountant` must be one of 'rdp', 'prv', 'pld'. Found 'gdp'.",
            ),
            (
                {"dataset_size": 0},
                ValueError,
                "`dataset_size` must be a positive integer. Found 0.",
            ),
            (
                {"preprocessing_note": 3},
                TypeError,
                "`preprocessing_note` must be a str or None. Found 3.",
            ),
            ({"extra": [1]}, TypeError, "`extra` must be a dict or None. Found list."),
            ({"extra": {"x": object()}}, TypeError, "`extra` must be JSON-serialisable"),
        ],
    )
    def test_errors(self, kwargs, exc, msg):
        with pytest.raises(exc, match=re.escape(msg)):
            make(**kwargs)

    def test_keyword_only(self):
        with pytest.raises(TypeError):
            PrivacyLedger(1.0, 1e-5, 2.0, 0.1, 1.5)  # noqa

    def test_delta_at_least_one_over_n_warns(self):
        msg = "`target_delta`=0.001 is not below 1/`dataset_size` = 1/1000 = 0.001"
        with pytest.warns(PrivacyWarning, match=re.escape(msg)):
            make(target_delta=1e-3, dataset_size=1000)

    def test_small_delta_does_not_warn(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyWarning)
            make(target_delta=1e-5, dataset_size=1000)
            make(target_delta=0.5)  # no dataset size: nothing to compare with

    def test_total_delta_adaptive(self):
        ledger = make(credit_mode="adaptive", beta=1e-6)
        assert ledger.total_delta == pytest.approx(1e-5 + 1e-6)
        assert ledger.delta == 1e-5


class TestStatement:
    @pytest.mark.parametrize("mode", ["none", "depolarizing", "adaptive", "isotropic"])
    def test_common_contents(self, mode):
        beta = 1e-4 if mode in ("adaptive", "isotropic") else 0.0
        ledger = make(credit_mode=mode, beta=beta, dataset_size=640)
        for _ in range(3):
            ledger.step()
        text = ledger.statement()
        assert "membership of each individual training example" in text
        assert "add/remove-one adjacency" in text
        assert "Poisson sampling with rate q = 0.1" in text
        assert "N = 640 examples. N is treated as public" in text
        assert f"Opacus {opacus.__version__} RDPAccountant" in text
        assert "noise multiplier σ = 2" in text and "sensitivity Δ = 1.5" in text
        assert "Steps: 3 recorded" in text
        assert format_up(ledger.epsilon) in text  # rounded up (issue 42)
        assert f"Shot-noise credit: {mode}" in text
        gaussian = "treats the shot noise of the sample means as Gaussian by the central limit"
        assert (gaussian in text) == (mode != "none")
        assert ("δ + β" in text) == (mode in ("adaptive", "isotropic"))
        assert "Preprocessing: none declared" in text
        assert "Preprocessing (NOT protected)" not in text
        # nothing computed from the private batches without diagnostics
        assert "Diagnostics (NOT protected" not in text
        assert ("ε withheld" in text) == (mode != "none")

    def test_adaptive_beta_explained(self):
        text = make(credit_mode="adaptive", beta=1e-4).statement(diagnostics={})
        assert "(ε, δ + β) = (0, 0.00011)" in text
        assert (
            "β = 0.0001 the probability that the adaptive shot-noise variance bound fails" in text
        )

    def test_none_guarantee(self):
        text = make().statement()
        assert "Guarantee: (ε, δ) = (0, 1e-05)-differential privacy" in text
        assert "no assumption on shot noise" in text

    def test_replace_one_and_preprocessing_and_prv(self):
        ledger = make(
            adjacency="replace_one",
            accountant="prv",
            preprocessing_note="Means and principal components of the training split.",
            extra={"delta_parts": [0.75, 0.75]},
        )
        text = ledger.statement()
        assert "replace-one adjacency" in text and "factor 2" in text
        assert "PRVAccountant" in text
        assert "Preprocessing (NOT protected): Means and principal components" in text
        assert '"delta_parts": [0.75, 0.75]' in text
        assert "each example joins each batch independently" in text

    def test_first_line_names_what_is_covered_and_what_is_not(self):
        """Exact first lines: raw data (fixed preprocessing), preprocessed data with the
        statistics held fixed (data-dependent preprocessing), undeclared preprocessing."""
        head = ("Guarantee: (ε, δ) = (0, 1e-05)-differential privacy (ε in nats; target ε = 1) "
                "for the training examples (add/remove-one adjacency)")
        fixed = make(extra={"preprocessing": "pooling over fixed regions"}).statement()
        assert fixed.splitlines()[0] == head + (
            ", raw data included (the preprocessing is fixed before seeing the data).")
        pca = make(preprocessing_note="Means and principal components.").statement()
        assert pca.splitlines()[0] == head + (
            " as preprocessed, with the preprocessing statistics held fixed; NOT for those "
            "statistics, which were computed from the training data without privacy (see "
            "Preprocessing), so NOT for the raw data.")
        undeclared = make().statement()
        assert undeclared.splitlines()[0] == head + (
            " as they reach the private training loop; NOT for any preprocessing fitted on the "
            "data before that point (none declared).")
        replace = make(adjacency="replace_one").statement().splitlines()[0]
        assert "for the training examples (replace-one adjacency)" in replace
        credit = make(credit_mode="depolarizing").statement().splitlines()[0]
        assert credit.startswith("Proven guarantee: (ε, δ) = (0, 1e-05)-differential privacy")

    def test_diagnostics_are_named_in_the_first_line_and_marked(self):
        ledger = make(extra={"clipping": {"mode": "certified", "description": "C = Δ"}})
        plain = ledger.statement()
        assert "NOT for the diagnostics" not in plain and "Diagnostics (NOT" not in plain
        assert ("Certified clip: a clip that binds means the declared loss or observable bound "
                "was wrong for that example, never a weaker guarantee, because the clip is "
                "enforced. Whether it bound is computed from the private batches, so it is not "
                "reported here") in plain
        diag = {"written_to": ["diagnostics.json", "diagnostics.png"],
                "certified_clip_binding": 3, "per_example_gradients": 40}
        text = ledger.statement(diagnostics=diag)
        assert text.splitlines()[0].endswith(
            "; NOT for the diagnostics released beside it (diagnostics.json, diagnostics.png), "
            "which are computed from the private batches.")
        assert ("Diagnostic (NOT protected, computed from the private batches): 3 of 40 "
                "per-example gradients exceeded the certified bound and were clipped — the "
                "certified bound does not hold for this model and loss.") in text
        assert text.splitlines()[-1] == (
            "Diagnostics (NOT protected by the privacy guarantee: computed from the private "
            "batches, they can reveal individual training examples; do not publish them): "
            "written to diagnostics.json, diagnostics.png.")
        with pytest.raises(TypeError, match=re.escape(
                "`diagnostics` must be None or a dict. Found list.")):
            ledger.statement(diagnostics=["x"])

    def test_steps_outside_poisson_sampling_void_the_first_line(self):
        text = make(extra={"steps_without_poisson_batch": 2}).statement()
        assert text.splitlines()[0].startswith("NO GUARANTEE for this run: 2 step(s) used no "
                                               "batch drawn from the Poisson-sampling loader")
        assert "DOES NOT HOLD" in text.splitlines()[0]

    def test_repr(self):
        ledger = make()
        ledger.step()
        r = repr(ledger)
        assert r.startswith("PrivacyLedger(epsilon=")
        assert "steps=1" in r and "credit_mode='none'" in r and "accountant='rdp'" in r


class TestTwoGuarantees:
    """The proven ε (noise actually added) and the credited ε (calibrated σ) are kept apart."""

    def test_proven_and_credited_histories_compose_with_opacus(self):
        ledger = make(credit_mode="depolarizing")
        credited = [2.0, 2.3, 1.9, 2.1]
        for c in credited:
            ledger.step(proven_noise_multiplier=1.5, credited_noise_multiplier=c)
        acct = RDPAccountant()
        for c in credited:
            acct.step(noise_multiplier=c, sample_rate=ledger.sample_rate)
        assert ledger.credited_epsilon == pytest.approx(acct.get_epsilon(ledger.target_delta),
                                                        rel=1e-12)
        assert ledger.proven_history == [(1.5, 0.1, 4)]
        assert ledger.epsilon == pytest.approx(opacus_epsilon([(1.5, 0.1, 4)], 1e-5), rel=1e-12)
        assert ledger.epsilon > ledger.credited_epsilon
        assert ledger.planned_epsilon == pytest.approx(opacus_epsilon([(2.0, 0.1, 4)], 1e-5))
        text = ledger.statement(diagnostics={})
        assert text.startswith("Proven guarantee: (ε, δ) = (" + format_up(ledger.proven_epsilon))
        assert ("Credited Q-ShiftDP guarantee (an APPROXIMATION, not proven): (ε, δ) = ("
                f"{format_up(ledger.credited_epsilon)}, 1e-05)") in text
        # the credited ε is computed from the batches: withheld without diagnostics
        assert format_up(ledger.credited_epsilon) not in ledger.statement()
        restored = PrivacyLedger.from_json(ledger.to_json())
        assert restored.proven_history == ledger.proven_history
        assert restored.credited_history == ledger.credited_history
        ledger.step(proven_noise_multiplier=1.5)  # nothing credited: credited σ_t = proven
        assert ledger.credited_history[-1] == (1.5, 0.1, 1)

    def test_without_credit_the_two_coincide(self):
        ledger = make()
        for _ in range(5):
            ledger.step()
        assert ledger.proven_history == ledger.history and ledger.credited_history == []
        assert ledger.epsilon == ledger.credited_epsilon == pytest.approx(
            ledger.planned_epsilon, rel=1e-15)
        with pytest.raises(ValueError, match="`credited_noise_multiplier` needs a credit mode"):
            ledger.step(credited_noise_multiplier=2.0)

    def test_bad_proven_noise_multiplier(self):
        ledger = make()
        with pytest.raises(ValueError, match=re.escape(
                "`proven_noise_multiplier` must be positive and finite. Found 0.0.")):
            ledger.step(proven_noise_multiplier=0.0)
        assert ledger.steps == 0


def test_epsilon_at_is_the_prefix_composed_from_scratch():
    """``epsilon_at(t)`` (the step records' ε) composes the first t proven (or credited) steps;
    at t = steps it is ``epsilon`` / ``credited_epsilon``; out-of-range counts are refused."""
    from pennylane_qshiftdp.accountants.composition import epsilon_from_history, extend_history

    def merged(sigmas):  # the history as Opacus merges it
        out = []
        for s in sigmas:
            out = extend_history(out, s, 0.1, 1)
        return out

    ledger = PrivacyLedger(target_epsilon=50.0, target_delta=1e-5, noise_multiplier=1.0,
                           sample_rate=0.1, sensitivity=1.0, credit_mode="depolarizing",
                           accountant="pld")
    credited = [2.0, 2.3, 1.9, 2.1, 2.0]
    proven = [1.5, 1.5, 1.2, 1.2, 1.5]
    for p, c in zip(proven, credited, strict=True):
        ledger.charge(proven_noise_multiplier=p, credited_noise_multiplier=c)
    for t in range(6):
        want = epsilon_from_history(merged(proven[:t]), delta=1e-5,
                                    accountant="pld") if t else 0.0
        assert ledger.epsilon_at(t) == pytest.approx(want, rel=1e-12)
        want = epsilon_from_history(merged(credited[:t]), delta=1e-5,
                                    accountant="pld") if t else 0.0
        assert ledger.epsilon_at(t, credited=True) == pytest.approx(want, rel=1e-12)
    assert ledger.epsilon_at(5) == ledger.epsilon
    assert ledger.epsilon_at(5, credited=True) == ledger.credited_epsilon
    for bad in (-1, 6):
        with pytest.raises(ValueError, match="steps"):
            ledger.epsilon_at(bad)
