"""Privacy audit: Clopper–Pearson closed forms, split-half bounds, every mode of the setting."""

import dataclasses
import json
import math
import re

import numpy as np
import pytest
import torch
from scipy.stats import beta as beta_dist
from scipy.stats import binom

from pennylane_qshiftdp import audit as au
from pennylane_qshiftdp.accountants.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.app.cli import main
from pennylane_qshiftdp.optimizers.optimizer import QShiftDPOptimizer

ALPHA = 0.0125  # (1 − 0.95) / (2 · 2 scores): the pure-statistics tests
# the setting: 2 scores × 2 estimators (Clopper–Pearson and Gaussian DP) × 2 one-sided bounds
ALPHA_SETTING = 0.05 / 8
DELTA = 1e-5


# ------------------------------------------------------------------ Clopper–Pearson
@pytest.mark.parametrize("n", [1, 7, 200, 2000])
def test_clopper_pearson_closed_forms(n):
    a = 0.05
    assert au.clopper_pearson_lower(n, n, alpha=a) == pytest.approx(a ** (1 / n), rel=1e-12)
    assert au.clopper_pearson_upper(0, n, alpha=a) == pytest.approx(1 - a ** (1 / n), rel=1e-12)
    assert au.clopper_pearson_lower(1, n, alpha=a) == pytest.approx(1 - (1 - a) ** (1 / n),
                                                                    rel=1e-10)
    assert au.clopper_pearson_upper(n - 1, n, alpha=a) == pytest.approx((1 - a) ** (1 / n),
                                                                        rel=1e-10)
    assert au.clopper_pearson_lower(0, n, alpha=a) == 0.0
    assert au.clopper_pearson_upper(n, n, alpha=a) == 1.0


def test_clopper_pearson_equals_beta_quantiles_vectorised():
    k = np.array([0, 3, 17, 50])
    lo = au.clopper_pearson_lower(k, 50, alpha=0.01)
    hi = au.clopper_pearson_upper(k, 50, alpha=0.01)
    ref_lo = [0.0] + [beta_dist.ppf(0.01, j, 50 - j + 1) for j in k[1:]]
    ref_hi = [beta_dist.ppf(0.99, j + 1, 50 - j) for j in k[:-1]] + [1.0]
    np.testing.assert_allclose(lo, ref_lo, rtol=1e-12)
    np.testing.assert_allclose(hi, ref_hi, rtol=1e-12)


@pytest.mark.parametrize("n,p", [(10, 0.3), (25, 0.05), (40, 0.9)])
def test_clopper_pearson_coverage_by_enumeration(n, p):
    """Exact coverage P[p^- <= p] >= 1 - α and P[p^+ >= p] >= 1 - α (binomial enumeration)."""
    a = 0.05
    k = np.arange(n + 1)
    pmf = binom.pmf(k, n, p)
    assert pmf[au.clopper_pearson_lower(k, n, alpha=a) <= p].sum() >= 1 - a - 1e-12
    assert pmf[au.clopper_pearson_upper(k, n, alpha=a) >= p].sum() >= 1 - a - 1e-12


def test_clopper_pearson_errors():
    with pytest.raises(ValueError, match=re.escape("`alpha` must be in (0, 1)")):
        au.clopper_pearson_lower(1, 2, alpha=0.0)
    with pytest.raises(ValueError, match=re.escape("`k` must be in [0, n] with n >= 1. Found "
                                                   "k=3, n=2.")):
        au.clopper_pearson_upper(3, 2, alpha=0.1)
    with pytest.raises(TypeError, match="must be integers"):
        au.clopper_pearson_lower(1.5, 2, alpha=0.1)


# ------------------------------------------------------------------ ε from rates
def test_epsilon_from_rates_both_statements():
    # P[R | D'] ≤ e^ε P[R | D] + δ
    assert au.epsilon_from_rates(0.6, 0.1, delta=0.01) == pytest.approx(math.log(0.59 / 0.1))
    # complement: P[R^c | D] ≤ e^ε P[R^c | D'] + δ
    assert au.epsilon_from_rates(0.9, 0.5, delta=0.0) == pytest.approx(
        max(math.log(0.9 / 0.5), math.log(0.5 / 0.1)))
    assert au.epsilon_from_rates(0.2, 0.5, delta=0.0) == 0.0
    assert au.epsilon_from_rates(1e-6, 1e-6, delta=1e-5) == 0.0
    with pytest.raises(ValueError, match=re.escape("`fpr_upper` must be in [0, 1]. Found 1.5.")):
        au.epsilon_from_rates(0.5, 1.5, delta=0.0)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1)")):
        au.epsilon_from_rates(0.5, 0.5, delta=1.0)


@pytest.mark.parametrize("n", [50, 2000])
def test_max_certifiable_epsilon_closed_form(n):
    r = ALPHA ** (1 / n)
    assert au.max_certifiable_epsilon(n, delta=DELTA, alpha=ALPHA) == pytest.approx(
        math.log((r - DELTA) / (1 - r)), rel=1e-10)


# ------------------------------------------------------------------ split-half bound
def test_perfect_distinguisher_gets_the_maximal_certifiable_epsilon():
    rng = np.random.default_rng(0)
    b = au.split_half_bound(rng.normal(0, 1, 600), rng.normal(50, 1, 600), delta=DELTA,
                            alpha=ALPHA)
    assert b.separated and b.direction == ">" and (b.tpr, b.fpr) == (1.0, 0.0)
    assert b.epsilon_lower_bound == pytest.approx(
        au.max_certifiable_epsilon(300, delta=DELTA, alpha=ALPHA), rel=1e-12)
    # discrete scores (lattice: D on the lattice, D' half a step off) and the other direction
    b = au.split_half_bound(np.full(400, 0.25), np.zeros(400), delta=DELTA, alpha=ALPHA)
    assert b.separated and b.direction == "<" and 0.0 < b.threshold < 0.25
    assert b.epsilon_lower_bound == pytest.approx(
        au.max_certifiable_epsilon(200, delta=DELTA, alpha=ALPHA), rel=1e-12)


def test_identical_distributions_give_zero():
    rng = np.random.default_rng(1)
    assert au.split_half_bound(rng.normal(size=2000), rng.normal(size=2000), delta=DELTA,
                               alpha=ALPHA).epsilon_lower_bound == 0.0
    assert au.split_half_bound(np.ones(100), np.ones(100), delta=DELTA,
                               alpha=ALPHA).epsilon_lower_bound == 0.0


def test_threshold_is_chosen_on_the_first_half_only():
    """The first half separates one way and the second half the other way: no evidence."""
    d = np.r_[np.zeros(100), np.ones(100)]
    dp = np.r_[np.ones(100), np.zeros(100)]
    b = au.split_half_bound(d, dp, delta=DELTA, alpha=ALPHA)
    assert (b.threshold, b.direction, b.tpr, b.fpr) == (0.5, ">", 0.0, 1.0)
    assert b.epsilon_lower_bound == 0.0


def test_split_half_bound_matches_a_direct_computation():
    rng = np.random.default_rng(2)
    d, dp = rng.normal(0, 1, 1000), rng.normal(1.5, 1, 1000)
    b = au.split_half_bound(d, dp, delta=DELTA, alpha=ALPHA)
    tp = int((dp[500:] > b.threshold).sum()) if b.direction == ">" else int(
        (dp[500:] < b.threshold).sum())
    fp = int((d[500:] > b.threshold).sum()) if b.direction == ">" else int(
        (d[500:] < b.threshold).sum())
    lo = beta_dist.ppf(ALPHA, tp, 500 - tp + 1)
    hi = beta_dist.ppf(1 - ALPHA, fp + 1, 500 - fp)
    assert b.epsilon_lower_bound == pytest.approx(
        max(math.log((lo - DELTA) / hi), math.log((1 - hi - DELTA) / (1 - lo)), 0.0))
    # shift 1.5 σ: the optimal test's ε at these rates is about 1.5–2; the bound is below
    assert 0.5 < b.epsilon_lower_bound < 2.5


def test_split_half_bound_errors():
    with pytest.raises(ValueError, match=re.escape("`scores_d` must hold at least 2 scores "
                                                   "(one per half). Found 1.")):
        au.split_half_bound([0.0], [0.0, 1.0], delta=DELTA, alpha=ALPHA)
    with pytest.raises(ValueError, match="`scores_dprime` must be finite"):
        au.split_half_bound([0.0, 1.0], [0.0, np.nan], delta=DELTA, alpha=ALPHA)


# ------------------------------------------------------------------ scores
def test_scores():
    np.testing.assert_allclose(au.projection_score([[3.0, 4.0], [1.0, -1.0]], [0.0, -2.0]),
                               [-4.0, 1.0])
    np.testing.assert_allclose(au.lattice_score([0.5, 0.75, -1.05, 0.2], 0.5),
                               [0.0, 0.25, 0.05, 0.2])
    np.testing.assert_allclose(au.lattice_score([[0.25, 0.1]], [0.5, 0.2]),
                               [math.hypot(0.25, 0.1)])
    with pytest.raises(ValueError, match=re.escape("`direction` must have 2 entries")):
        au.projection_score([[1.0, 2.0]], [1.0])
    with pytest.raises(ValueError, match="`direction` must be a finite nonzero vector"):
        au.projection_score([[1.0]], [0.0])
    with pytest.raises(ValueError, match=re.escape("`step` must be positive and finite. "
                                                   "Found -0.5.")):
        au.lattice_score([1.0], -0.5)


# ------------------------------------------------------------------ the setting, every mode
SIGMA_2 = calibrate_noise_multiplier(target_epsilon=2.0, target_delta=DELTA, sample_rate=1.0,
                                     steps=1)
EPS_2 = compute_epsilon(noise_multiplier=SIGMA_2, sample_rate=1.0, steps=1, delta=DELTA)
SIGMA_FLOOR = calibrate_noise_multiplier(target_epsilon=3.0, target_delta=DELTA,
                                         sample_rate=1.0, steps=1)
EPS_FLOOR = compute_epsilon(noise_multiplier=SIGMA_FLOOR, sample_rate=1.0, steps=1, delta=DELTA)
SETTING_MODES_CREDIT = {k: v[0] for k, v in au.SETTING_MODES.items()}


@pytest.mark.parametrize("mode", list(au.SETTING_MODES))
def test_every_mode_no_proven_claim_refuted(mode):
    r = au.audit_setting(mode, shots=2, trials=80, seed=3, background="shot")
    assert r.status == "audited" and r.trials == 80
    assert not r.proven_refuted and r.epsilon_lower_bound <= r.claimed_epsilon
    assert r.verdict in ("not refuted", "credited approximation refuted")
    assert set(r.bounds) == {"projection", "lattice"}
    assert r.max_certifiable_epsilon == pytest.approx(
        au.max_certifiable_epsilon(40, delta=DELTA, alpha=ALPHA_SETTING))
    assert r.settings["sample_rate"] == 1.0
    if SETTING_MODES_CREDIT[mode] == "none":
        # no credit: the proven ε is the calibrated one (adaptive clipping: Theorem 1 at σ)
        assert r.claimed_epsilon == r.claimed_epsilon_min == pytest.approx(EPS_2, rel=1e-9)
        assert r.credited_epsilon == r.claimed_epsilon
    else:
        # credit: 30 examples of shot variance 1/4 each exceed σ²Δ², so the added noise is
        # the floor, whose ε alone is 1.5 × target
        assert r.claimed_epsilon == pytest.approx(EPS_FLOOR, rel=1e-9)
        assert 0.0 < r.credited_epsilon < r.claimed_epsilon
    assert r.beta == (1e-3 if mode in ("adaptive", "isotropic") else 0.0)
    rel_d, rel_dp = r.releases
    assert rel_d.shape == rel_dp.shape == (80, 1)


def test_refused_configuration_is_reported_not_refuted():
    r = au.audit_setting(credit="adaptive", max_grad_norm=0.5, trials=4)
    assert r.refused and r.verdict == "refused" and not r.proven_refuted
    assert "needs max_grad_norm='certified'" in r.message and r.message.startswith(
        "NotImplementedError on D:")
    assert r.claimed_epsilon is None and r.epsilon_lower_bound == 0.0
    assert "refused" in str(r) and json.dumps(r.as_dict())


@pytest.mark.parametrize("mode", ["adaptive", "depolarizing", "adaptive_clip"])
def test_reused_private_model_gives_the_releases_of_fresh_ones(mode):
    """The fast path (one make_private per world, reset per trial) equals a fresh build."""
    fast = au.audit_setting(mode, shots=2, trials=4, seed=7)
    fresh = au.audit_setting(mode, shots=2, trials=4, seed=7, fresh=True)
    for a, b in zip(fast.releases, fresh.releases, strict=True):
        np.testing.assert_array_equal(a, b)
    assert fast.claimed_epsilon == fresh.claimed_epsilon


def test_releases_are_the_noisy_sums_on_the_lattice():
    """Almost no noise (ε = 3000, σ ≈ 0.014): sums over D lie on (1/Ns)ℤ = 0.5ℤ, the canary
    adds exactly 1 − 1/(2Ns) = 3/4 (the default canary label: zero shot variance, almost the full
    sensitivity C = 1 and half a lattice step off the lattice)."""
    r = au.audit_setting("none", shots=2, trials=40, seed=0, target_epsilon=3000.0,
                         background="shot")
    sigma = calibrate_noise_multiplier(target_epsilon=3000.0, target_delta=DELTA,
                                       sample_rate=1.0, steps=1)
    tol = 6 * sigma  # noise std σ·Δ with Δ = 1
    assert tol < 0.125  # below half the distance between the two worlds' lattices
    rel_d, rel_dp = (x[:, 0] for x in r.releases)
    assert np.all(np.abs(rel_d - 0.5 * np.round(rel_d / 0.5)) < tol)
    off = rel_dp - 0.75
    assert r.settings["canary_label"] == 0.75
    assert np.all(np.abs(off - 0.5 * np.round(off / 0.5)) < tol)
    assert np.all(np.abs(rel_d) <= 30 + tol)  # each example's gradient is in [-1, 1]
    # the lattice score separates the worlds perfectly: the largest certifiable ε
    b = r.bounds["lattice"]
    assert b.separated and b.epsilon_lower_bound == pytest.approx(r.max_certifiable_epsilon)
    assert not r.proven_refuted  # the claim (≈ 300) is weak, not wrong


def test_lowered_noise_floor_refutes_only_the_credited_approximation():
    """130 examples (shot variance above σ²Δ², so the credit reaches the floor), floor at the
    noise of ε = 1000 × 2: the lattice finds the canary; the credited ε (Gaussian
    approximation) is refuted, the proven one holds. 50 evaluation trials per world can
    certify up to ε ≈ 2.39 > 1.99."""
    r = au.audit_setting("adaptive", shots=2, trials=100, seed=0, num_examples=130,
                         background="shot",
                         proven_epsilon_factor=1000.0)
    assert r.verdict == "credited approximation refuted"
    assert r.credited_refuted and not r.proven_refuted
    assert r.bounds["lattice"].epsilon_lower_bound > r.credited_epsilon


# ------------------------------------------------------------------ API, errors, outputs
def test_result_dict_string_and_plot(tmp_path):
    r = au.audit_setting("isotropic", shots=10, trials=8, seed=1, background="shot",
                         plot_path=tmp_path / "sub" / "h.png")
    assert (tmp_path / "sub" / "h.png").stat().st_size > 1000
    d = json.loads(json.dumps(r.as_dict(include_scores=True)))
    assert d["verdict"] == r.verdict and d["settings"]["shots"] == 10
    assert d["settings"]["credit"] == "isotropic" and len(d["scores"]["lattice"][0]) == 8
    assert d["bounds"]["lattice"]["n_eval"] == [4, 4]
    assert d["settings"]["lattice_step"] == pytest.approx(0.1)
    s = str(r)
    assert s.startswith("isotropic: claimed ε = ") and r.verdict in s
    with pytest.raises(ValueError, match="has no scores to plot"):
        au.plot_audit(au.audit_setting(credit="isotropic", max_grad_norm="adaptive", trials=4),
                      tmp_path / "x.png")


def test_argument_errors():
    with pytest.raises(ValueError, match=re.escape("`mode` must be one of")):
        au.audit_setting("fast")
    with pytest.raises(ValueError, match=re.escape("Give either `mode` or `credit`")):
        au.audit_setting("none", credit="adaptive")
    with pytest.raises(ValueError, match=re.escape("`num_examples` must be even")):
        au.audit_setting("none", num_examples=5, background="shot")
    with pytest.raises(ValueError, match=re.escape("`trials` must be at least 4")):
        au.audit_setting("none", trials=3)
    with pytest.raises(ValueError, match=re.escape("`depolarizing` must be in [0, 0.75]")):
        au.audit_setting("none", depolarizing=0.9)
    args = (lambda seed: None, lambda: None, [(np.zeros(1), 1.0)], (np.zeros(1), 1.0))
    with pytest.raises(ValueError, match=re.escape("`target_delta` must be given")):
        au.audit_one_step(*args, trials=4, target_epsilon=1.0)


def test_fixed_arguments_are_refused_by_name():
    args = (lambda seed: None, lambda: None, [(np.zeros(1), 1.0)], (np.zeros(1), 1.0))
    with pytest.raises(ValueError, match=re.escape("['epochs', 'sample_rate'] are fixed by "
                                                   "the audit")):
        au.audit_one_step(*args, trials=4, target_epsilon=1.0, target_delta=DELTA, epochs=2,
                          sample_rate=0.5)
    with pytest.raises(ValueError, match=re.escape("`lattice_step` must be positive and "
                                                   "finite. Found 0.")):
        au.audit_one_step(*args, trials=4, target_epsilon=1.0, target_delta=DELTA,
                          lattice_step=0)


# ------------------------------------------------------------------ specs (issue 46)
def test_specs_and_keywords_are_the_same_audit():
    """A spec, its fields as keywords, or a spec with keywords replacing fields: one audit."""
    kw = au.audit_setting("isotropic", shots=10, trials=8, seed=1, background="shot")
    spec = au.audit_setting(spec=au.SettingSpec("isotropic", shots=10, background="shot"),
                            trial_spec=au.TrialSpec(8, seed=1))
    mixed = au.audit_setting("isotropic", au.SettingSpec(shots=3, background="shot"),
                             au.TrialSpec(50, seed=1), shots=10, trials=8)
    for r in (spec, mixed):
        np.testing.assert_array_equal(np.stack(r.releases), np.stack(kw.releases))
        assert r.settings == kw.settings and r.label == kw.label == "isotropic"
    opt_kw = au.audit_optimizer(steps=2, trials=40, seed=2)
    opt = au.audit_optimizer(QShiftDPOptimizer, au.WhiteBoxSpec(steps=2), au.TrialSpec(40, seed=2))
    np.testing.assert_array_equal(np.stack(opt.releases), np.stack(opt_kw.releases))
    assert opt.settings == opt_kw.settings
    one_kw = au.audit_optimizer_one_run(canaries=50, seed=3, steps=2)
    one = au.audit_optimizer_one_run(spec=au.OptimizerSpec(steps=2), canaries=50, seed=3)
    assert one.epsilon_lower_bound == one_kw.epsilon_lower_bound
    assert one.claimed_epsilon == one_kw.claimed_epsilon


def test_specs_validate_when_built_and_refuse_unknown_keywords():
    with pytest.raises(ValueError, match=re.escape("Give either `mode` or `credit`")):
        au.SettingSpec("none", credit="adaptive")
    with pytest.raises(ValueError, match=re.escape("`canary_label` must be non-zero")):
        au.SettingSpec(canary_label=0.0)
    with pytest.raises(ValueError, match=re.escape("`confidence` must be in (0, 1)")):
        au.TrialSpec(10, confidence=1.0)
    with pytest.raises(ValueError, match=re.escape("`canary_norm` must be positive")):
        au.WhiteBoxSpec(canary_norm=0.0)
    with pytest.raises(ValueError, match=re.escape("`clip_norms` must have one norm per shape")):
        au.WhiteBoxSpec(shapes=((2,), (1,)), clip_norms=(1.0,))
    with pytest.raises(ValueError, match="target_epsilon"):
        au.OptimizerSpec(target_epsilon=-1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'shot'"):
        au.audit_setting("none", shot=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'shapes'"):
        au.audit_optimizer_one_run(shapes=((3,),))
    with pytest.raises(TypeError, match="`spec` must be an OptimizerSpec"):
        au.audit_optimizer_one_run(spec=au.WhiteBoxSpec())
    with pytest.raises(TypeError, match="`trial_spec` must be a TrialSpec"):
        au.audit_release(lambda d, s: np.zeros(1), [0.0], [1.0], {"trials": 8}, delta=DELTA)
    args = (lambda seed: None, lambda: None, [(np.zeros(1), 1.0)], (np.zeros(1), 1.0))
    with pytest.raises(TypeError, match="missing its trials"):
        au.audit_one_step(*args, target_epsilon=1.0, target_delta=DELTA)
    # a replaced field resolves the defaults afresh (the shot background's canary label)
    spec = au.SettingSpec(shots=2)
    assert spec.resolved_canary_label == au.setting.ZERO_BACKGROUND_CANARY_LABEL
    shot = dataclasses.replace(spec, background="shot")
    assert shot.resolved_canary_label == 0.75 and shot.canary_label is None


# ------------------------------------------------------------------ CLI
def test_cli_audit_table_json_and_png(tmp_path, capsys):
    rc = main(["audit", "--credit", "adaptive", "--shots", "2", "--trials", "6",
               "--output-dir", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "| adaptive | 2 | 6 |" in out and "not refuted" in out
    data = json.loads((tmp_path / "audit.json").read_text())
    assert data["results"][0]["label"] == "adaptive" and data["results"][0]["shots"] == 2
    assert (tmp_path / "audit_adaptive_Ns2.png").exists()
    # both backgrounds by default; every row prints its ceiling
    assert (tmp_path / "audit_adaptive_Ns2_zero.png").exists() and "CEILING" in out
    assert [r["settings"]["background"] for r in data["results"]] == ["shot", "zero"]
    assert all(r["ceilings"]["clopper_pearson"] == r["max_certifiable_epsilon"] and
               "gdp" in r["ceilings"] for r in data["results"])


@pytest.mark.parametrize("argv,msg", [
    (["--trials", "2"], "--trials must be at least 4"),
    (["--max-grad-norm", "big"], "--max-grad-norm must be 'certified', 'adaptive' or a "
                                 "positive number. Found 'big'."),
    (["--shots", "0"], "--shots must be positive integers. Found [0]."),
    (["--credit", "all", "--max-grad-norm", "1.0"], "--credit all audits every mode"),
    (["--depolarizing", "1.0"], "--depolarizing must be in [0, 0.75]. Found 1.0."),
    (["--credit", "adaptive", "--beta", "5"], "--beta must be in (0, 1). Found 5.0."),
])
def test_cli_audit_errors_name_the_flag(argv, msg, capsys):
    assert main(["audit", *argv]) == 2
    assert msg in capsys.readouterr().err


# ================================================================== Gaussian DP
@pytest.mark.parametrize("mu,eps", [(0.5, 0.0), (1.0, 1.0), (2.0, 3.0), (0.3, 0.7)])
def test_gdp_delta_is_the_hockey_stick_of_two_gaussians(mu, eps):
    """Independent method: E_{e^ε}(N(μ, 1) ‖ N(0, 1)) = ∫ (p − e^ε q)₊ by quadrature."""
    from scipy.integrate import quad
    from scipy.stats import norm

    ref = quad(lambda x: max(norm.pdf(x, mu) - math.exp(eps) * norm.pdf(x), 0.0), -30, 30,
               points=[eps / mu + mu / 2], limit=200)[0]
    assert au.gdp_delta(eps, mu) == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("mu", [0.1, 0.46, 1.0, 3.0])
def test_gdp_epsilon_round_trip_rounds_down(mu):
    e = au.gdp_epsilon(mu, 1e-5)
    assert au.gdp_delta(e, mu) >= 1e-5  # the low end: never overstates ε
    assert au.gdp_delta(e + 1e-6, mu) <= 1e-5 * (1 + 1e-3) or e == 0.0
    with pytest.raises(ValueError, match=re.escape("`mu` must be non-negative. Found -1.0.")):
        au.gdp_epsilon(-1.0, 1e-5)


def test_gdp_bound_coverage_and_ceiling():
    """μ⁻ ≤ μ in at least 95 % of seeded repeats of a Gaussian shift (valid bound); 200 repeats
    with a 5 % failure rate would exceed 18 failures with probability < 1e-3."""
    rng = np.random.default_rng(5)
    fails = sum(au.gdp_bound(rng.normal(0, 1, 400), rng.normal(0.5, 1, 400), delta=DELTA,
                             alpha=0.025).mu_lower_bound > 0.5 for _ in range(200))
    assert fails <= binom.ppf(1 - 1e-3, 200, 0.05)
    b = au.gdp_bound(np.zeros(400), np.ones(400), delta=DELTA, alpha=ALPHA)
    assert b.epsilon_lower_bound == pytest.approx(
        au.max_certifiable_gdp_epsilon(*b.n_eval, delta=DELTA, alpha=ALPHA), rel=1e-9)


def test_clopper_pearson_ceilings_quoted_in_the_docs():
    """The largest ε 95 % can certify from n perfect guesses: ≈ 3.5, 5.8, 8.1."""
    got = [au.max_certifiable_epsilon(n, delta=0.0, alpha=0.05) for n in (100, 1000, 10000)]
    np.testing.assert_allclose(got, [3.49, 5.81, 8.11], atol=0.01)


# ================================================================== one run
def test_one_run_p_value_against_its_formula():
    m, r, v, e, d = 500, 60, 45, 0.7, 1e-4
    q = math.exp(e) / (1 + math.exp(e))
    beta = binom.sf(v - 1, r, q)
    alpha = max(sum(binom.pmf(v - j, r, q) for j in range(1, i + 1)) / i
                for i in range(1, v + 1))
    assert au.one_run_p_value(m, r, v, epsilon=e, delta=d) == pytest.approx(
        beta + 2 * m * d * alpha, rel=1e-10)
    assert au.one_run_p_value(m, r, v, epsilon=e, delta=0.0) == pytest.approx(beta, rel=1e-12)
    # pure DP, every guess right: q^r = α  ⇒  ε = logit(α^{1/r})
    a = 0.05 ** (1 / 80)
    assert au.one_run_epsilon(1000, 80, 80, delta=0.0, alpha=0.05) == pytest.approx(
        math.log(a / (1 - a)), abs=1e-6)
    with pytest.raises(ValueError, match=re.escape("Need 0 <= v <= r <= m. Found m=5, r=6")):
        au.one_run_p_value(5, 6, 1, epsilon=1.0, delta=0.0)


def test_one_run_bound_is_valid_for_randomized_response():
    """Canary scores from ε0-randomized response of the membership: the bound stays ≤ ε0 in at
    least 95 % of seeded repeats (Steinke et al., Thm. 3.1)."""
    rng = np.random.default_rng(11)
    eps0, fails = 1.0, 0
    for _ in range(100):
        inc = rng.random(400) < 0.5
        keep = rng.random(400) < math.exp(eps0) / (1 + math.exp(eps0))
        s = np.where(keep, inc, ~inc).astype(float) + 1e-3 * rng.normal(size=400)
        fails += au.one_run_bound(s, inc, delta=0.0, alpha=0.05).epsilon_lower_bound > eps0
    assert fails <= binom.ppf(1 - 1e-3, 100, 0.05)


# ================================================================== the seam
def test_optimizer_release_is_the_clipped_noisy_sum_by_hand():
    """Independent method: clip each crafted gradient to C, sum, add σC·randn from the seeded
    generator (the product's draw order), and read the ledger's ε."""
    rel = au.optimizer_release(target_epsilon=2.0, target_delta=DELTA, shapes=((3,),))
    g = torch.tensor([[3.0, 4.0, 0.0], [0.1, 0.0, 0.2]], dtype=torch.float64)
    out, claim = rel(g, 7)
    clipped = g / torch.clamp(g.norm(dim=1, keepdim=True) / 1.0, min=1.0)
    z = torch.randn(3, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    np.testing.assert_allclose(out, (clipped.sum(0) + rel.noise_multiplier * z).numpy(),
                               atol=1e-5)  # Opacus divides by (norm + 1e-6)
    assert claim["epsilon"] == pytest.approx(EPS_2, rel=1e-9)


def test_zero_background_canary_moves_the_release_by_exactly_C():
    d, dp, u = au.zero_background(((2,), (3,)), clip_norms=(1.0, 0.5), canary_norm=4.0)
    assert d.shape == (1, 5) and dp.shape == (2, 5) and not d.any()
    rel = au.optimizer_release(target_epsilon=3000.0, target_delta=DELTA, shapes=((2,), (3,)),
                               clip_norms=(1.0, 0.5))
    moved = rel(dp, 0)[0] - rel(d, 0)[0]  # same seed: same noise
    assert np.linalg.norm(moved) == pytest.approx(math.hypot(1.0, 0.5), rel=1e-5)
    np.testing.assert_allclose(moved / np.linalg.norm(moved), u, atol=1e-6)
    _, _, v = au.zero_background(((4,),), orthogonal=True, background=3)
    assert v.tolist() == [1.0, 0.0, 0.0, 0.0]


def _nan_on_canary(data, seed):
    g = np.random.default_rng(seed)
    return np.array([np.nan if len(data) > 3 else g.normal()]), 1.0


def _raises_on_canary(data, seed):
    if len(data) > 3:
        raise RuntimeError("boom")
    return np.array([np.random.default_rng(seed).normal()]), 1.0


@pytest.mark.parametrize("release", [_nan_on_canary, _raises_on_canary])
def test_non_finite_or_crashing_release_is_a_finding(release):
    r = au.audit_release(release, [0.0] * 3, [0.0] * 4, delta=DELTA, trials=200)
    assert r.failures == (0, 200) and r.proven_refuted
    assert "evidence of ε = ∞" in r.findings[0] and "FINDING" in str(r)
    assert r.bounds["failure"].separated
    assert r.estimator_bounds["clopper_pearson"] == pytest.approx(r.ceilings["clopper_pearson"])


def test_release_without_a_claim_is_refused_by_name():
    with pytest.raises(ValueError, match="No claim to audit"):
        au.audit_release(lambda d, s: np.zeros(1), [0.0], [0.0, 1.0], delta=DELTA, trials=8)


class _HalfNoise(QShiftDPOptimizer):
    """Broken: keeps half the Gaussian noise while the ledger charges the full σ."""

    def add_noise(self):
        sums = [p.summed_grad.detach().clone() for p in self.params]
        super().add_noise()
        for p, s in zip(self.params, sums, strict=True):
            p.grad = s + 0.5 * (p.grad - s)


class _NoClip(QShiftDPOptimizer):
    """Broken: never clips (the noise is still calibrated to C)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.clip_groups = [(g, math.inf) for g, _ in self.clip_groups]


class _HalfLedger(QShiftDPOptimizer):
    """Broken: the ledger is charged for every other step only."""

    def pre_step(self, closure=None):
        if len(self.history) % 2 == 1:
            ledger, self.ledger = self.ledger, None
            try:
                return super().pre_step(closure)
            finally:
                self.ledger = ledger
        return super().pre_step(closure)


class _NoCountNoise(QShiftDPOptimizer):
    """Broken adaptive clipping: the unclipped count is released without noise."""

    def _update_clip_norm(self):
        # The gradient keeps the accounted noise; only the count's noise is (almost) removed.
        cfg = self.adaptive_clipping
        saved, cfg["unclipped_num_std"] = cfg["unclipped_num_std"], 1e-9
        try:
            super()._update_clip_norm()
        finally:
            cfg["unclipped_num_std"] = saved


ADAPTIVE = {"target_unclipped_quantile": 0.5, "clipbound_learning_rate": 0.2,
            "min_clipbound": 1e-3, "max_clipbound": 1e3}


def test_adaptive_clip_count_canary():
    """A canary below the clip norm is counted: a count released without noise is refuted
    through the clip-norm change; the product's count is not."""
    kw = dict(adaptive_clipping=ADAPTIVE, canary_norm=0.5, trials=400, seed=2)
    bad = au.audit_optimizer(_NoCountNoise, **kw)
    assert bad.proven_refuted and bad.bounds["clip_count"].separated
    good = au.audit_optimizer(**kw)
    assert not good.proven_refuted and set(good.bounds) == {"projection", "clip_count"}


def test_hybrid_per_layer_clipping_white_box():
    kw = dict(shapes=((2,), (3,)), clip_norms=(1.0, 0.5), trials=1000, seed=4)
    assert au.audit_optimizer(_NoClip, **kw).proven_refuted
    assert not au.audit_optimizer(**kw).proven_refuted


def test_one_run_white_box():
    good = au.audit_optimizer_one_run(canaries=1000, seed=3)
    assert good.verdict == "not refuted" and good.epsilon_lower_bound <= good.claimed_epsilon
    bad = au.audit_optimizer_one_run(_NoClip, canaries=1000, seed=3)
    assert bad.proven_refuted and "CEILING" in str(bad)
    assert json.dumps(bad.as_dict())


def _half_noise(model, opt, loader):
    """The seam of audit_setting/audit_one_step: keep half of every standard normal."""
    normal = opt._standard_normal
    opt._standard_normal = lambda n: 0.5 * normal(n)


def _no_clip(model, opt, loader):
    """The seam: never clip (the noise still follows the clip norm C)."""
    opt.clip_groups = [(g, math.inf) for g, _ in opt.clip_groups]


def test_setting_zero_background_is_the_canary_alone():
    """Almost no noise: releases on D are ≈ 0 (zero gradients), on D' ≈ 1 = C: the default
    canary's gradient is 4 C, and the certified clip binds on it (without clipping, 4 C)."""
    r = au.audit_setting("none", trials=20, target_epsilon=3000.0)
    assert r.settings["background"] == "zero"
    rel_d, rel_dp = (x[:, 0] for x in r.releases)
    assert np.all(np.abs(rel_d) < 0.1) and np.all(np.abs(rel_dp - 1.0) < 0.1)
    assert set(r.bounds) == {"projection"} and r.settings["canary_label"] == 4.0
    bad = au.audit_setting("none", trials=20, target_epsilon=3000.0, private_hook=_no_clip)
    assert np.all(np.abs(bad.releases[1][:, 0] - 4.0) < 0.1)
    with pytest.raises(ValueError, match=re.escape("`canary_label` must be non-zero")):
        au.audit_setting("none", canary_label=0.0)


# ================================================================== power and tightness
@pytest.mark.slow
@pytest.mark.parametrize("cls,steps", [(_HalfNoise, 1), (_NoClip, 1), (_HalfLedger, 4)])
def test_power_default_settings_refute_broken_mechanisms(cls, steps):
    r = au.audit_optimizer(cls, target_epsilon=2.0, steps=steps)
    print(f"\n{cls.__name__}: claimed {r.claimed_epsilon:.3f}, lower bound "
          f"{r.epsilon_lower_bound:.3f} {r.estimator_bounds}, {r.trials} trials, "
          f"{r.seconds:.1f} s")
    assert r.proven_refuted and r.verdict == "PROVEN CLAIM REFUTED"


@pytest.mark.slow
@pytest.mark.parametrize("hook", [_half_noise, _no_clip])
def test_audit_setting_defaults_refute_half_noise_and_no_clipping(hook):
    """audit_setting() at its defaults (zero background, canary 4 C, 2000 trials per world,
    claim 1.991): measured GDP ε ≥ 3.0 (half noise) and 8.2 (no clipping), ceilings 5.43 (CP)
    and 38.0 (GDP)."""
    r = au.audit_setting(private_hook=hook)
    print(f"\naudit_setting() {hook.__name__}: claimed {r.claimed_epsilon:.3f}, bound "
          f"{r.epsilon_lower_bound:.3f} {r.estimator_bounds}, ceilings {r.ceilings}, "
          f"{r.seconds:.1f} s")
    assert r.proven_refuted and r.verdict == "PROVEN CLAIM REFUTED"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_audit_setting_defaults_correct_mechanism_not_refuted(seed):
    """The product's mechanism at audit_setting()'s defaults, seeds 0–19 (20 of 20)."""
    r = au.audit_setting(seed=seed)
    assert not r.proven_refuted and r.verdict == "not refuted", (seed, r.estimator_bounds)


@pytest.mark.slow
@pytest.mark.parametrize("broken", [None, "half_noise", "no_clip"])
def test_cli_audit_defaults_refute_half_noise_and_no_clipping(broken, monkeypatch, capsys):
    """``qshiftdp audit`` with no flags (both backgrounds, 2000 trials): exit status 1 for a
    broken optimizer (patched in this process), 0 for the product's."""
    if broken is not None:
        init = QShiftDPOptimizer.__init__

        def patched(self, *args, **kwargs):
            init(self, *args, **kwargs)
            (_half_noise if broken == "half_noise" else _no_clip)(None, self, None)

        monkeypatch.setattr(QShiftDPOptimizer, "__init__", patched)
    rc = main(["audit", "--json"])
    rows = json.loads(capsys.readouterr().out)["results"]
    assert [r["settings"]["background"] for r in rows] == ["shot", "zero"]
    zero = rows[1]
    print(f"\nqshiftdp audit ({broken}): zero background {zero['verdict']}, bound "
          f"{zero['epsilon_lower_bound']:.3f}, ceilings {zero['ceilings']}")
    assert rc == (0 if broken is None else 1)
    assert (zero["verdict"] == "PROVEN CLAIM REFUTED") == (broken is not None)


@pytest.mark.slow
def test_correct_mechanism_not_refuted_in_20_of_20_seeds():
    for seed in range(20):
        r = au.audit_optimizer(target_epsilon=2.0, seed=seed)
        assert not r.proven_refuted, (seed, r.estimator_bounds)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [1.0, 2.0, 4.0])
def test_tightness_white_box_gaussian(eps):
    r = au.audit_optimizer(target_epsilon=eps)
    ratio = r.epsilon_lower_bound / r.claimed_epsilon
    print(f"\nε = {eps}: claimed {r.claimed_epsilon:.3f}, lower bound "
          f"{r.epsilon_lower_bound:.3f}, ratio {ratio:.3f}")
    assert not r.proven_refuted and ratio >= 0.5


def _users_quantum_step(noise_scale):
    """A user's own DP step on a one-qubit model (not make_private): per-example gradients of
    ℓ = −y f from PennyLane with the product's transform, clip at C = 1, sum, add
    noise_scale · σ C Gaussian noise; claims the calibrated ε for σ."""
    import pennylane as qml

    from pennylane_qshiftdp import param_shift

    dev = qml.device("default.qubit", wires=1)

    @qml.qnode(dev, interface="torch", diff_method=param_shift)
    def f(x, w):
        qml.RY(x, wires=0)
        qml.RY(w, wires=0)
        return qml.expval(qml.Z(0))

    def release(data, seed):
        g = torch.Generator().manual_seed(seed)
        total = torch.zeros((), dtype=torch.float64)
        for x, y in data:
            w = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
            (-y * f(torch.tensor(x, dtype=torch.float64), w)).backward()
            total = total + w.grad.clamp(-1.0, 1.0)
        z = torch.randn((), generator=g, dtype=torch.float64)
        return (total + noise_scale * SIGMA_2 * z).reshape(1), EPS_2

    return release


@pytest.mark.slow
@pytest.mark.parametrize("scale,refuted", [(1.0, False), (0.5, True)])
def test_users_own_quantum_step_through_the_seam(scale, refuted):
    """Zero background (label 0) and a canary whose gradient is −y f' = sin(π/2) = 1 = C."""
    d = [(-0.3, 0.0)] * 4
    dp = d + [(math.pi / 2 - 0.3, 1.0)]
    r = au.audit_release(_users_quantum_step(scale), d, dp, delta=DELTA, trials=2000, seed=1)
    print(f"\nuser's quantum step, noise × {scale}: claimed {r.claimed_epsilon:.3f}, lower "
          f"bound {r.epsilon_lower_bound:.3f} {r.estimator_bounds}, {r.seconds:.1f} s")
    assert r.proven_refuted is refuted


def test_a_release_that_always_crashes_is_a_finding_with_a_canary_direction():
    """Crashing in both worlds is reported (never an exception of the audit), also when the
    canary direction has several coordinates."""

    def release(dataset, seed):
        raise RuntimeError("boom")

    r = au.audit_release(release, np.zeros(1), np.ones(1), delta=1e-5, trials=8,
                         claimed_epsilon=1.0, canary_direction=np.ones(3))
    assert r.verdict == "not refuted"
    assert any("8/8 trials on D and 8/8 on D'" in f and "boom" in f for f in r.findings)


# ================================================================== automatic clipping
def test_setting_automatic_clipping_releases_the_closed_form():
    """Almost no noise, zero background: each release on D' is the canary's automatic-clipped
    gradient C·g/(‖g‖ + γC) with g = 4 (the canary's label weight) and C = 1 (γ = 0.01):
    4/4.01; on D it is 0 (a zero gradient stays zero)."""
    from pennylane_qshiftdp.privacy_engine import AUTOMATIC_CLIPPING_GAMMA

    r = au.audit_setting(max_grad_norm="automatic", trials=20, target_epsilon=3000.0)
    rel_d, rel_dp = (x[:, 0] for x in r.releases)
    expected = 4.0 / (4.0 + AUTOMATIC_CLIPPING_GAMMA)
    noise = r.releases[0][:, 0].std()
    assert np.all(np.abs(rel_d) < 6 * noise + 1e-9)
    assert np.all(np.abs(rel_dp - expected) < 6 * noise + 1e-9)
    assert r.label == "credit=none, max_grad_norm=automatic"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_audit_automatic_clipping_not_refuted(seed):
    """The automatic clip mode at audit_setting()'s defaults (canary 4 C, 2000 trials per
    world): the proven claim holds for seeds 0–4."""
    r = au.audit_setting(max_grad_norm="automatic", seed=seed)
    assert not r.proven_refuted and r.verdict == "not refuted", (seed, r.estimator_bounds)


@pytest.mark.slow
def test_audit_automatic_clipping_refutes_half_noise():
    r = au.audit_setting(max_grad_norm="automatic", private_hook=_half_noise)
    print(f"\nautomatic, half noise: claimed {r.claimed_epsilon:.3f}, bound "
          f"{r.epsilon_lower_bound:.3f} {r.estimator_bounds}")
    assert r.proven_refuted and r.verdict == "PROVEN CLAIM REFUTED"
