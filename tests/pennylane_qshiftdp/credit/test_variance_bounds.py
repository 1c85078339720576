"""Tests for pennylane_qshiftdp.variance_bounds: closed forms, exact failure probabilities by
enumeration, a seeded failure-rate simulation, errors and property tests."""

import itertools
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta as beta_dist
from scipy.stats import binom, norm

from pennylane_qshiftdp.credit.shot_noise import shot_noise_credit
from pennylane_qshiftdp.credit.variance_bounds import (
    bernstein_variance_lower_bound,
    clopper_pearson_variance_lower_bound,
    hoeffding_variance_lower_bound,
    max_sample_variance,
    variance_lower_bound,
)
from pennylane_qshiftdp.gradients.shot_statistics import ShotStatistics, two_point_moments

PM1 = dict(low=-1.0, high=1.0)


# ---------------------------------------------------------------------------------------------
# Closed forms
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", range(2, 10))
def test_max_sample_variance_matches_brute_force_over_vertices(n):
    brute = max(float(np.var(x, ddof=1)) for x in itertools.product((-0.5, 1.5), repeat=n))
    assert max_sample_variance(n, low=-0.5, high=1.5) == pytest.approx(brute, rel=1e-12)
    closed = (n / (n - 1) if n % 2 == 0 else (n + 1) / n)  # R²/4 = 1
    assert max_sample_variance(n, low=-0.5, high=1.5) == pytest.approx(closed, rel=1e-12)


def test_max_sample_variance_bounds_random_samples():
    rng = np.random.default_rng(7)
    for n in (2, 3, 4, 7):
        x = rng.uniform(-1.0, 1.0, size=(2000, n))
        assert np.all(x.var(axis=1, ddof=1) <= max_sample_variance(n, **PM1))
    assert np.allclose(max_sample_variance(np.array([2, 3, 4]), **PM1), [2.0, 4 / 3, 4 / 3])


def test_hoeffding_closed_form_single_circuit():
    # N = 100: proxy min(M², R⁴/(4·50)) = R⁴/200 = 0.08; deviation sqrt(log(1/α)/2 · 0.08).
    alpha, s2 = 0.01, 0.9
    expected = s2 - math.sqrt(0.5 * math.log(1 / alpha) * 16 / 200)
    got = hoeffding_variance_lower_bound([s2], weights=[1.0], shots=100, alpha=alpha, **PM1)
    assert expected > 0 and got == pytest.approx(expected, rel=1e-12)
    # N = 3: M = 4/3 beats the U-statistic proxy R⁴/4 = 4.
    got3 = hoeffding_variance_lower_bound([1.3], weights=[0.1], shots=3, alpha=0.5, **PM1)
    assert got3 == pytest.approx(max(0.0, 0.13 - math.sqrt(0.5 * math.log(2) * (0.1 * 4 / 3) ** 2)))


def test_hoeffding_weighted_sum_closed_form():
    s2, u, n = np.array([1.0, 0.5, 0.2]), np.array([0.2, 0.5, 1.0]), np.array([10, 20, 40])
    cap = np.array([max_sample_variance(int(k), **PM1) for k in n])
    r2 = u**2 * np.minimum(cap**2, 16 / (4 * (n // 2)))
    expected = u @ s2 - math.sqrt(0.5 * math.log(20) * r2.sum())
    got = hoeffding_variance_lower_bound(s2, weights=u, shots=n, alpha=0.05, **PM1)
    assert got == pytest.approx(max(expected, 0.0), rel=1e-12)


def test_bernstein_solves_its_defining_equation():
    s2, u, alpha = np.full(50, 0.3), 0.02, 1e-3
    v = bernstein_variance_lower_bound(s2, weights=u, shots=100, alpha=alpha, **PM1)
    z, b, lg = 50 * 0.02 * 0.3, 0.02 * 4 / (2 * 50), math.log(1 / alpha)
    assert 0 < v < z
    assert z - v == pytest.approx(b * lg / 3 + math.sqrt(b**2 * lg**2 / 9 + 2 * b * lg * v))
    # A zero estimate gives a zero bound (no division by zero).
    assert bernstein_variance_lower_bound(np.zeros(3), weights=1.0, shots=5, alpha=0.1,
                                          **PM1) == 0.0


def test_clopper_pearson_closed_form_and_union_bound():
    # Two circuits: each interval at level α/2; k = 0 gives p⁻ = 0 hence no credit.
    alpha, n = 0.1, 40
    means = np.array([-1 + 2 * 13 / n, -1.0])
    u = np.array([0.3, 0.7])
    got = clopper_pearson_variance_lower_bound(means, weights=u, shots=n, alpha=alpha, **PM1)
    lo, hi = beta_dist.ppf(alpha / 4, 13, n - 13 + 1), beta_dist.isf(alpha / 4, 14, n - 13)
    q = min(lo * (1 - lo), hi * (1 - hi))
    assert got == pytest.approx(0.3 * 4 * q, rel=1e-10)
    # A circuit with weight 0 does not count in the union bound.
    got1 = clopper_pearson_variance_lower_bound(means, weights=[0.3, 0.0], shots=n,
                                                alpha=alpha / 2, **PM1)
    assert got1 == pytest.approx(got, rel=1e-10)


def test_combination_rules():
    rng = np.random.default_rng(3)
    n = 30
    k = rng.integers(0, n + 1, size=12)
    means = -1 + 2 * k / n
    s2, _ = two_point_moments(means, n, -1.0, 1.0)
    kw = dict(weights=rng.uniform(0, 1, 12), shots=n, alpha=0.05, **PM1)
    h = hoeffding_variance_lower_bound(s2, **kw)
    b = bernstein_variance_lower_bound(s2, **kw)
    assert variance_lower_bound(s2, **kw) == pytest.approx(max(h, b))
    half = dict(kw, alpha=0.025)
    expected = max(hoeffding_variance_lower_bound(s2, **half),
                   bernstein_variance_lower_bound(s2, **half),
                   clopper_pearson_variance_lower_bound(means, **half))
    assert variance_lower_bound(s2, means=means, **kw) == pytest.approx(expected)


def test_leading_axes_are_independent_problems():
    rng = np.random.default_rng(11)
    s2 = rng.uniform(0, 1, size=(4, 6))
    u = rng.uniform(0, 1, size=(4, 6))
    batch = variance_lower_bound(s2, weights=u, shots=8, alpha=0.1, **PM1)
    assert batch.shape == (4,)
    for i in range(4):
        assert batch[i] == variance_lower_bound(s2[i], weights=u[i], shots=8, alpha=0.1, **PM1)


# ---------------------------------------------------------------------------------------------
# Exact failure probabilities by enumeration (no sampling error)
# ---------------------------------------------------------------------------------------------

def _exact_failure(values, probs, shots, weights, alpha, two_outcome):
    """P(bound > V) for independent circuits with single-shot law (values, probs[t])."""
    n_c = len(probs)
    per_circuit = []  # list over circuits of (s2, mean, prob) over all multisets of shots
    for p in probs:
        rows = []
        for counts in itertools.product(range(shots + 1), repeat=len(values)):
            if sum(counts) != shots:
                continue
            x = np.repeat(values, counts)
            prob = math.factorial(shots) * np.prod([pi**c / math.factorial(c)
                                                     for pi, c in zip(p, counts, strict=True)])
            rows.append((float(np.var(x, ddof=1)), float(x.mean()), prob))
        per_circuit.append(np.array(rows))
    true_v = sum(w * (np.dot(p, np.square(values)) - np.dot(p, values) ** 2)
                 for w, p in zip(weights, probs, strict=True))
    combos = np.array(list(itertools.product(*(range(len(r)) for r in per_circuit))))
    s2 = np.stack([per_circuit[t][combos[:, t], 0] for t in range(n_c)], axis=1)
    mean = np.stack([per_circuit[t][combos[:, t], 1] for t in range(n_c)], axis=1)
    prob = np.prod([per_circuit[t][combos[:, t], 2] for t in range(n_c)], axis=0)
    bound = variance_lower_bound(s2, weights=np.asarray(weights), shots=shots,
                                 low=min(values), high=max(values), alpha=alpha,
                                 means=mean if two_outcome else None)
    return float(prob[bound > true_v * (1 + 1e-12)].sum())


@pytest.mark.parametrize("shots", [2, 3, 4, 6])
@pytest.mark.parametrize("alpha", [0.05, 0.4])
def test_exact_failure_probability_two_outcomes(shots, alpha):
    grid = (0.0, 0.02, 0.2, 0.5, 0.8, 0.99)
    worst = 0.0
    for p1, p2 in itertools.combinations_with_replacement(grid, 2):
        for two in (False, True):
            probs = [(1 - p1, p1), (1 - p2, p2)]
            worst = max(worst, _exact_failure((-1.0, 1.0), probs, shots, (0.7, 0.3), alpha, two))
    assert worst <= alpha


@pytest.mark.parametrize("shots", [2, 3, 4])
def test_exact_failure_probability_three_outcomes(shots):
    # Values {-1, 0, 1} (a two-term Hamiltonian); distribution-free bound only.
    laws = [(1 / 3, 1 / 3, 1 / 3), (0.5, 0.0, 0.5), (0.05, 0.9, 0.05), (0.0, 0.5, 0.5)]
    worst = 0.0
    for p1, p2 in itertools.combinations_with_replacement(laws, 2):
        worst = max(worst, _exact_failure((-1.0, 0.0, 1.0), [p1, p2], shots, (1.0, 1.0), 0.3,
                                          False))
    assert worst <= 0.3


# ---------------------------------------------------------------------------------------------
# Seeded failure-rate simulation (the audit's setting, at a β with power)
# ---------------------------------------------------------------------------------------------

P_CONFIGS = {  # probabilities of +1 of an example's four circuits (coefficients ±1/2)
    "half": (0.5, 0.5, 0.5, 0.5),
    "edge": (0.01, 0.99, 0.05, 0.95),
    "mixed": (0.5, 0.02, 0.98, 0.3),
}
GAMMA = 1e-6  # per-cell level of the one-sided binomial test (the seed is fixed anyway)


def _simulate(rng, shots, examples, probs, trials):
    p = np.tile(np.asarray(probs), examples)
    k = rng.binomial(shots, p, size=(trials, p.size))
    means = -1.0 + 2.0 * k / shots
    s2, m4 = two_point_moments(means, shots, -1.0, 1.0)
    u = np.full(p.size, 0.25 / shots)  # w = 1, a = ±1/2
    true_v = float(u @ (4 * p * (1 - p)))
    return means, s2, m4, u, true_v


def _old_normal_bound(s2, m4, u, shots, alpha):
    """The previous adaptive bound: V̄ − z·SE with the plug-in Var(s²) = max(m₄ − s⁴, 0)/N."""
    se = np.sqrt(np.sum(u**2 * np.maximum(m4 - s2**2, 0.0) / shots, axis=-1))
    return np.sum(u * s2, axis=-1) - norm.isf(alpha) * se


def _rate_lower(failures, trials):
    """One-sided Clopper–Pearson lower confidence bound (level GAMMA) of a failure rate."""
    return 0.0 if failures == 0 else float(beta_dist.ppf(GAMMA, failures, trials - failures + 1))


@pytest.mark.parametrize("shots", [2, 10, 100])
@pytest.mark.parametrize("examples", [4, 30, 130])
def test_failure_rate_at_most_beta(shots, examples):
    alpha, trials = 0.1, 1500
    rng = np.random.default_rng(1000 * shots + examples)
    for name, probs in P_CONFIGS.items():
        means, s2, _, u, true_v = _simulate(rng, shots, examples, probs, trials)
        for label, kw in (("distribution-free", {}), ("two-outcome", {"means": means})):
            bound = variance_lower_bound(s2, weights=u, shots=shots, alpha=alpha, **PM1, **kw)
            failures = int(np.sum(bound > true_v))
            # A bound with failure rate <= α exceeds this count with probability <= GAMMA.
            assert failures <= binom.isf(GAMMA, trials, alpha), (name, label, failures)
            assert _rate_lower(failures, trials) <= alpha


def test_simulation_has_power_against_the_old_normal_bound():
    """The same harness rejects the old plug-in normal bound (audit: 0.46 at Ns = 2)."""
    alpha, trials = 0.1, 1500
    rng = np.random.default_rng(5)
    means, s2, m4, u, true_v = _simulate(rng, 2, 30, P_CONFIGS["half"], trials)
    failures = int(np.sum(_old_normal_bound(s2, m4, u, 2, alpha) > true_v))
    assert _rate_lower(failures, trials) > alpha
    new = variance_lower_bound(s2, weights=u, shots=2, alpha=alpha, means=means, **PM1)
    assert int(np.sum(new > true_v)) <= binom.isf(GAMMA, trials, alpha)


@pytest.mark.parametrize("shots", [2, 10])
def test_shot_noise_credit_failure_rate_from_z(shots):
    """End to end: each coordinate is an independent trial; α comes from z = Φ⁻¹(1 − α)."""
    alpha, trials, examples = 0.1, 300, 10
    rng = np.random.default_rng(77 + shots)
    probs = np.tile(P_CONFIGS["mixed"], examples)
    k = rng.binomial(shots, probs, size=(trials, probs.size))
    means = -1.0 + 2.0 * k / shots
    var, m4 = two_point_moments(means, shots, -1.0, 1.0)
    n_rows = trials * probs.size
    coord = np.repeat(np.arange(trials), probs.size)
    circuit = np.tile(np.arange(probs.size), trials)
    stats = ShotStatistics(shots=np.full(n_rows, shots), mean=means.ravel(),
                           variance=var.ravel(), fourth_moment=m4.ravel(),
                           coefficient=np.tile([0.5, -0.5], n_rows // 2),
                           trainable_param=coord, batch_index=circuit // 4,
                           shot_copy=np.zeros(n_rows), measurement=np.zeros(n_rows),
                           tape_index=np.arange(n_rows))
    true_v = float(np.sum(0.25 / shots * 4 * probs * (1 - probs)))
    for two in (False, True):
        r = shot_noise_credit(stats, jacobian=np.eye(trials), loss_weights=np.ones(examples),
                              mode="adaptive", z=float(norm.isf(alpha)), two_outcome=two)
        assert r.alpha == pytest.approx(alpha)
        failures = int(np.sum(r.lower_bound > true_v))
        assert failures <= binom.isf(GAMMA, trials, alpha)
        assert np.allclose(r.largest_example, 4 * 0.25 / shots)  # data-independent maximum
        assert np.all(r.lower_bound <= r.estimate + 1e-15)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("func", [hoeffding_variance_lower_bound, bernstein_variance_lower_bound,
                                  variance_lower_bound])
@pytest.mark.parametrize("kwargs, message", [
    ({"alpha": 1.3}, "`alpha` must be in (0, 1). Found 1.3."),
    ({"alpha": 0.0}, "`alpha` must be in (0, 1). Found 0.0."),
    ({"weights": [-1.0]}, "`weights` must be finite and >= 0. Found -1.0."),
    ({"shots": 1}, "`shots` must be integers >= 2. Found 1.0."),
    ({"shots": 2.5}, "`shots` must be integers >= 2. Found 2.5."),
    ({"low": 1.0}, "`high` must be greater than `low`. Found high=1.0, low=1.0."),
    ({"high": np.inf}, "`high` must be finite. Found inf."),
    ({"variances": [2.5]}, "`variances` must be in [0, max_sample_variance(shots, low, high)] "
                           "= [0, 2]. Found 2.5."),
    ({"variances": [-0.1]}, "Found -0.1."),
    ({"variances": [np.nan]}, "`variances` must be finite. Found nan."),
    ({"weights": [1.0, 1.0, 1.0], "variances": [1.0, 1.0]}, "must broadcast together"),
])
def test_errors_name_the_argument_and_value(func, kwargs, message):
    args = dict(variances=[1.0], weights=[1.0], shots=2, low=-1.0, high=1.0, alpha=0.1)
    args.update(kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        func(args.pop("variances"), **args)


def test_errors_clopper_pearson_and_types():
    with pytest.raises(ValueError, match=re.escape("`means` must be sample means of two-outcome "
                                                   "shots")):
        clopper_pearson_variance_lower_bound([0.1], weights=1.0, shots=4, alpha=0.1, **PM1)
    with pytest.raises(ValueError, match=re.escape("Found 1.5.")):
        clopper_pearson_variance_lower_bound([1.5], weights=1.0, shots=4, alpha=0.1, **PM1)
    with pytest.raises(ValueError, match=re.escape("`means` must be sample means")):
        variance_lower_bound([1.0], weights=1.0, shots=4, alpha=0.1, means=[0.3], **PM1)
    with pytest.raises(TypeError, match=re.escape("`shots` must be integers >= 2.")):
        max_sample_variance(True, **PM1)
    with pytest.raises(TypeError, match=re.escape("`alpha` must be a real number")):
        variance_lower_bound([1.0], weights=1.0, shots=4, alpha="0.1", **PM1)


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

@st.composite
def _two_outcome_problem(draw):
    n_c = draw(st.integers(1, 8))
    shots = draw(st.lists(st.integers(2, 300), min_size=n_c, max_size=n_c))
    k = [draw(st.integers(0, n)) for n in shots]
    u = draw(st.lists(st.floats(0, 10), min_size=n_c, max_size=n_c))
    lo = draw(st.floats(-5, 5))
    width = draw(st.floats(0.1, 10))
    shots, k = np.array(shots), np.array(k)
    means = lo + width * k / shots
    s2 = width**2 * k * (shots - k) / (shots * (shots - 1.0))
    return dict(variances=s2, means=means, weights=np.array(u), shots=shots, low=lo,
                high=lo + width)


@settings(max_examples=150, deadline=None)
@given(_two_outcome_problem(), st.floats(1e-9, 0.9), st.floats(1.01, 100))
def test_bounds_are_below_the_estimate_and_monotone_in_alpha(problem, alpha, factor):
    p = dict(problem)
    means = p.pop("means")
    s2 = p.pop("variances")
    point = float(np.sum(p["weights"] * s2))
    alpha2 = min(alpha * factor, 0.99)
    for kw in ({}, {"means": means}):
        v1 = variance_lower_bound(s2, alpha=alpha, **p, **kw)
        v2 = variance_lower_bound(s2, alpha=alpha2, **p, **kw)
        assert 0.0 <= v1 <= v2 + 1e-12 * (1 + point)
        assert v2 <= point * (1 + 1e-12) + 1e-300
    for f in (hoeffding_variance_lower_bound, bernstein_variance_lower_bound):
        a, b = f(s2, alpha=alpha, **p), f(s2, alpha=alpha2, **p)
        assert 0.0 <= a <= b + 1e-12 * (1 + point) and b <= point * (1 + 1e-12) + 1e-300
    c1 = clopper_pearson_variance_lower_bound(means, alpha=alpha, **p)
    c2 = clopper_pearson_variance_lower_bound(means, alpha=alpha2, **p)
    assert 0.0 <= c1 <= c2 + 1e-12 * (1 + point) and c2 <= point * (1 + 1e-12) + 1e-300


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 50), st.floats(-3, 3), st.floats(0.01, 5), st.data())
def test_max_sample_variance_dominates_any_sample(shots, lo, width, data):
    x = np.array(data.draw(st.lists(st.floats(0, 1), min_size=shots, max_size=shots)))
    x = lo + width * x
    cap = max_sample_variance(shots, low=lo, high=lo + width)
    assert np.var(x, ddof=1) <= cap * (1 + 1e-9) + 1e-12
