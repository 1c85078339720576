"""Privacy audit: Clopper–Pearson closed forms, split-half bounds, every mode of the setting."""

import json
import math
import re

import numpy as np
import pytest
from scipy.stats import beta as beta_dist
from scipy.stats import binom

from pennylane_qshiftdp import audit as au
from pennylane_qshiftdp.calibration import calibrate_noise_multiplier, compute_epsilon
from pennylane_qshiftdp.cli import main

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
    r = au.audit_setting(mode, shots=2, trials=80, seed=3)
    assert r.status == "audited" and r.trials == 80
    assert not r.proven_refuted and r.epsilon_lower_bound <= r.claimed_epsilon
    assert r.verdict in ("not refuted", "credited approximation refuted")
    assert set(r.bounds) == {"projection", "lattice"}
    assert r.max_certifiable_epsilon == pytest.approx(
        au.max_certifiable_epsilon(40, delta=DELTA, alpha=ALPHA_SETTING))
    assert any("q = 1" in w for w in r.warnings)
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
    r = au.audit_setting("none", shots=2, trials=40, seed=0, target_epsilon=3000.0)
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
                         proven_epsilon_factor=1000.0)
    assert r.verdict == "credited approximation refuted"
    assert r.credited_refuted and not r.proven_refuted
    assert r.bounds["lattice"].epsilon_lower_bound > r.credited_epsilon


# ------------------------------------------------------------------ API, errors, outputs
def test_result_dict_string_and_plot(tmp_path):
    r = au.audit_setting("isotropic", shots=10, trials=8, seed=1,
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
        au.audit_setting("none", num_examples=5)
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
