"""Divergences near rank deficiency against 50-digit arithmetic (mpmath).

Reference values are computed by mpmath on the *same* double-precision matrices (every float is
exact in mpmath), so the comparison measures the algorithm, not the rounding of the inputs.

Two regimes:

* σ diagonal (every quantity here is unitarily invariant, so this is no loss of generality) and ρ
  rotated: LAPACK returns σ's eigenvalues exactly, and the code must agree with the reference to
  ~1e-10 relative even with eigenvalues down to 1e-12.
* σ rotated: a backward-stable eigensolver moves σ's eigenvalues by ~d·eps, which moves
  D, D_max and D̃_α by up to ~d·eps/λ_min(σ) (conditioning of the problem, e.g. D_max changes by
  at most ln(1 + ‖E‖/λ_min(σ)) under σ → σ + E); the tolerance includes that term.

mpmath is not a declared test dependency: it ships with sympy, which torch requires.
"""

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import qprldp_core._validation
import qprldp_core.sample_complexity._common
from qprldp_core.divergences import (
    fidelity,
    max_relative_entropy,
    sandwiched_renyi_divergence,
    trace_distance,
    umegaki_relative_entropy,
)
from qprldp_core.random import random_unitary
from qprldp_core.sample_complexity import (
    asymmetric_copy_bounds,
    qspri_copy_bounds,
    symmetric_copy_bounds,
)

# The private modules under test, reached as module attributes.
common = qprldp_core.sample_complexity._common
validation = qprldp_core._validation

EPS = float(np.finfo(float).eps)
ALPHAS = (0.5, 0.75, 0.95, 1.5, 2.0, 5.0)

# -- 50-digit reference implementations (definitions, not the library's algorithm) ------------
mp.mp.dps = 50
_MP_ZERO = mp.mpf(10) ** -40  # exact zeros of the float inputs stay below this in 50 digits


def _to_mp(a) -> mp.matrix:
    a = np.asarray(a, dtype=complex)
    return mp.matrix([[mp.mpc(float(x.real), float(x.imag)) for x in row] for row in a])


def _eigh(a):
    e, q = mp.eigh(_to_mp(a))
    return [max(x, mp.mpf(0)) for x in e], q


def _func(e, q, f) -> mp.matrix:
    """q diag(f(e)) q^dagger."""
    d = len(e)
    out = mp.matrix(d, d)
    for k in range(d):
        fk = f(e[k])
        for i in range(d):
            for j in range(d):
                out[i, j] += q[i, k] * fk * mp.conj(q[j, k])
    return out


def _weights(r, q) -> list:
    rm = _to_mp(r)
    return [mp.re((q[:, k].H * rm * q[:, k])[0]) for k in range(q.cols)]


def _eigvals(m: mp.matrix) -> list:
    e, _ = mp.eigh((m + m.H) / 2)
    return [max(x, mp.mpf(0)) for x in e]


def ref_fidelity(r, s) -> float:
    er, qr = _eigh(r)
    sr = _func(er, qr, mp.sqrt)
    return float(sum(mp.sqrt(x) for x in _eigvals(sr * _to_mp(s) * sr)) ** 2)


def ref_sandwiched(r, s, alpha) -> float:
    a = mp.mpf(alpha)
    es, qs = _eigh(s)
    w = _weights(r, qs)
    ker = [k for k in range(len(es)) if es[k] <= _MP_ZERO]
    if a > 1 and sum(w[k] for k in ker) > _MP_ZERO:
        return math.inf
    if a < 1 and sum(w[k] for k in range(len(es)) if k not in ker) <= _MP_ZERO:
        return math.inf
    t = (1 - a) / (2 * a)
    st_ = _func(es, qs, lambda x: x**t if x > _MP_ZERO else mp.mpf(0))
    q = sum(x**a for x in _eigvals(st_ * _to_mp(r) * st_))
    return float(mp.log(q) / (a - 1))


def ref_umegaki(r, s) -> float:
    er, _ = _eigh(r)
    es, qs = _eigh(s)
    w = _weights(r, qs)
    if sum(w[k] for k in range(len(es)) if es[k] <= _MP_ZERO) > _MP_ZERO:
        return math.inf
    neg = sum(x * mp.log(x) for x in er if x > 0)
    cross = sum(w[k] * mp.log(es[k]) for k in range(len(es)) if es[k] > _MP_ZERO)
    return float(neg - cross)


def ref_dmax(r, s) -> float:
    es, qs = _eigh(s)
    w = _weights(r, qs)
    if sum(w[k] for k in range(len(es)) if es[k] <= _MP_ZERO) > _MP_ZERO:
        return math.inf
    inv = _func(es, qs, lambda x: 1 / mp.sqrt(x) if x > _MP_ZERO else mp.mpf(0))
    return float(mp.log(max(_eigvals(inv * _to_mp(r) * inv))))


def ref_chernoff_q(r, s, sv) -> float:
    er, qr = _eigh(r)
    es, qs = _eigh(s)
    out = mp.mpf(0)
    for i in range(len(er)):
        for j in range(len(es)):
            if er[i] > 0 and es[j] > 0:
                out += er[i] ** sv * es[j] ** (1 - sv) * abs((qr[:, i].H * qs[:, j])[0]) ** 2
    return float(out)


QUANTITIES = {
    "fidelity": (fidelity, ref_fidelity),
    "umegaki": (umegaki_relative_entropy, ref_umegaki),
    "max_relative": (max_relative_entropy, ref_dmax),
    **{
        f"sandwiched_{a}": (
            lambda r, s, a=a: sandwiched_renyi_divergence(r, s, alpha=a),
            lambda r, s, a=a: ref_sandwiched(r, s, a),
        )
        for a in ALPHAS
    },
}


# -- states with eigenvalues down to 1e-12 ------------------------------------------------------
def _state(exponents, seed: int | None) -> tuple[np.ndarray, float]:
    """Eigenvalues 10^-k (normalised), rotated by a Haar unitary unless seed is None."""
    lam = 10.0 ** -np.asarray(exponents, dtype=float)
    lam = lam / lam.sum()
    if seed is None:
        return np.diag(lam).astype(complex), float(lam.min())
    u = random_unitary(len(lam), seed=seed)
    m = (u * lam) @ u.conj().T
    return (m + m.conj().T) / 2, float(lam.min())


@st.composite
def pairs(draw, rotate_sigma: bool):
    d = draw(st.integers(2, 4))
    kr = draw(st.lists(st.floats(0.0, 12.0), min_size=d, max_size=d))
    ks = draw(st.lists(st.floats(0.0, 12.0), min_size=d, max_size=d))
    seed = draw(st.integers(0, 2**31 - 1))
    rho, lam_min_rho = _state(kr, seed)
    sigma, lam_min = _state(ks, seed + 1 if rotate_sigma else None)
    return rho, sigma, lam_min, lam_min_rho


def _close(value: float, ref: float, tol: float) -> bool:
    if math.isinf(ref) or math.isinf(value):
        return value == ref
    return abs(value - ref) <= tol * max(1.0, abs(ref))


# -- the issue's example and small positive eigenvalues ------------------------------------------
def test_fidelity_issue_example():
    lam = 1e-8
    exact = 0.5 * (1 + 2 * math.sqrt(lam * (1 - lam)))  # F(diag(1 − λ, λ), I/2)
    value = fidelity(np.diag([1 - lam, lam]), np.eye(2) / 2)
    assert value == pytest.approx(0.5001000, abs=1e-9)
    assert value == pytest.approx(exact, abs=1e-15)
    assert value == pytest.approx(ref_fidelity(np.diag([1 - lam, lam]), np.eye(2) / 2), abs=1e-15)


@pytest.mark.parametrize("lam", [1e-8, 1e-9, 1e-12])
def test_small_positive_eigenvalues_of_sigma_are_support(lam):
    rho, sigma = np.eye(2) / 2, np.diag([1 - lam, lam])
    # closed forms for commuting states
    assert umegaki_relative_entropy(rho, sigma) == pytest.approx(
        0.5 * math.log(0.5 / (1 - lam)) + 0.5 * math.log(0.5 / lam), rel=1e-13)
    assert max_relative_entropy(rho, sigma) == pytest.approx(math.log(0.5 / lam), rel=1e-13)
    for a in (0.5, 2.0, 5.0):
        q = 0.5**a * ((1 - lam) ** (1 - a) + lam ** (1 - a))
        assert sandwiched_renyi_divergence(rho, sigma, alpha=a) == pytest.approx(
            math.log(q) / (a - 1), rel=1e-13)


def test_support_decisions_round_toward_more_privacy_loss():
    rho = np.diag([0.5, 0.5])
    # an exact zero, and negative rounding noise inside atol, are kernel: D = inf
    for tiny in (0.0, -5e-9):
        sigma = np.diag([1 - tiny, tiny])
        assert umegaki_relative_entropy(rho, sigma) == math.inf
        assert max_relative_entropy(rho, sigma) == math.inf
        assert sandwiched_renyi_divergence(rho, sigma, alpha=2.0) == math.inf
    # a positive eigenvalue at or below SUPPORT_TOL is kernel too (the larger value)
    sigma = np.diag([1 - validation.SUPPORT_TOL / 2, validation.SUPPORT_TOL / 2])
    assert max_relative_entropy(rho, sigma) == math.inf
    # ... and a weight of rho at or below SUPPORT_TOL on that kernel is rounding noise
    rho_noise = np.diag([1 - validation.SUPPORT_TOL / 2, validation.SUPPORT_TOL / 2])
    assert max_relative_entropy(rho_noise, np.diag([1.0, 0.0])) == pytest.approx(0.0, abs=1e-12)
    # for alpha < 1 only orthogonality gives inf
    assert sandwiched_renyi_divergence(np.diag([0.0, 1.0]), np.diag([1.0, 0.0]),
                                       alpha=0.5) == math.inf
    assert sandwiched_renyi_divergence(np.diag([1e-12, 1 - 1e-12]), np.diag([1.0, 0.0]),
                                       alpha=0.5) == pytest.approx(-math.log(1e-12), rel=1e-12)


# -- property tests against mpmath ---------------------------------------------------------------
@settings(derandomize=True, max_examples=40, deadline=None)
@given(pairs(rotate_sigma=False))
@example((np.eye(2) / 2, np.diag([1 - 1e-12, 1e-12]).astype(complex), 1e-12, 0.5))
def test_divergences_match_mpmath_sigma_diagonal(case):
    rho, sigma, _, _ = case
    for name, (f, ref) in QUANTITIES.items():
        value, expected = f(rho, sigma), ref(rho, sigma)
        assert _close(value, expected, 1e-10), (name, value, expected)


@settings(derandomize=True, max_examples=30, deadline=None)
@given(pairs(rotate_sigma=True))
def test_divergences_match_mpmath_sigma_rotated(case):
    rho, sigma, lam_min, _ = case
    d = rho.shape[0]
    conditioning = d * EPS / lam_min  # ~ relative rounding of σ's smallest eigenvalue
    for name, (f, ref) in QUANTITIES.items():
        value, expected = f(rho, sigma), ref(rho, sigma)
        tol = 1e-10 if name == "fidelity" else 1e-10 + conditioning
        assert _close(value, expected, tol), (name, value, expected, conditioning)


@settings(derandomize=True, max_examples=30, deadline=None)
@given(st.integers(2, 4), st.integers(0, 2**31 - 1), st.data())
def test_exact_zeros_match_mpmath(d, seed, data):
    """Exact zero eigenvalues (diagonal, permuted): the infinite cases are decided exactly."""
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(2):
        k = rng.uniform(0.0, 12.0, size=d)
        lam = 10.0**-k
        lam[rng.random(d) < 0.4] = 0.0
        if lam.sum() == 0:
            lam[0] = 1.0
        vals.append(np.diag(lam / lam.sum()).astype(complex))
    rho, sigma = vals
    for name, (f, ref) in QUANTITIES.items():
        value, expected = f(rho, sigma), ref(rho, sigma)
        assert _close(value, expected, 1e-10), (name, value, expected)


# -- quantities built on them ---------------------------------------------------------------------
@settings(derandomize=True, max_examples=25, deadline=None)
@given(pairs(rotate_sigma=False))
def test_chernoff_q_matches_mpmath(case):
    """Q_s = Tr ρ^s σ^{1−s}; ρ is rotated, so its smallest eigenvalue carries a relative rounding
    of ~d·eps/λ_min(ρ), which λ^s amplifies for small s (conditioning term of the tolerance)."""
    rho, sigma, _, lam_min_rho = case
    tol = 1e-10 + rho.shape[0] * EPS / lam_min_rho
    svals = common.S_GRID[::8]
    got = common.chernoff_q(rho, sigma, svals, 1e-8)
    for sv, q in zip(svals, got, strict=True):
        expected = ref_chernoff_q(rho, sigma, float(sv))
        expected = 1.0 if expected >= 1 - 1e-12 else expected  # the code's documented snap
        assert q == pytest.approx(expected, rel=tol, abs=1e-15)


def _near_integer(x: float) -> bool:
    return math.isfinite(x) and abs(x - round(x)) <= 1e-6 * max(1.0, abs(x))


@settings(derandomize=True, max_examples=20, deadline=None)
@given(pairs(rotate_sigma=False))
def test_copy_bounds_match_mpmath(case):
    """Lower bounds of the testing tasks recomputed from 50-digit F, D and D̃_α."""
    rho, sigma, _, _ = case
    # binary symmetric: fidelity and trace-distance lower bound
    p, alpha = 0.5, 0.05
    xf = common.fid_lower_n(ref_fidelity(rho, sigma), p, p, alpha)
    xt = common.td_lower_n(trace_distance(rho, sigma), p, p, alpha)
    got = symmetric_copy_bounds(rho, sigma, prior=p, alpha=alpha).lower
    if not (_near_integer(xf) or _near_integer(xt)):
        assert got == max(common.round_count_down(xf), common.round_count_down(xt))
    # binary asymmetric: relative entropy and sandwiched Renyi converses
    a1, beta = 0.05, 0.01
    d_rel = ref_umegaki(rho, sigma)
    xs = [((1 - a1) * math.log(1 / beta) - math.log(2)) / d_rel] if math.isfinite(d_rel) else []
    for a in common.RENYI_GRID:
        dt = ref_sandwiched(rho, sigma, a)
        if math.isfinite(dt) and dt > 0:
            xs.append((math.log(1 / beta) - a / (a - 1) * math.log(1 / (1 - a1))) / dt)
    got = asymmetric_copy_bounds(rho, sigma, alpha=a1, beta=beta).lower
    if not any(map(_near_integer, xs)):
        assert got == max([0, *map(common.round_count_down, xs)])
    # QSPrI: sandwiched Renyi tail bound, both directions
    eps, delta = 1.0, 0.1
    safe = math.inf
    for x_, y_ in ((rho, sigma), (sigma, rho)):
        best = 0.0
        for a in common.RENYI_GRID:
            dt = ref_sandwiched(x_, y_, a)
            num = eps - math.log(1 / delta) / (a - 1)
            if math.isfinite(dt) and dt > 0 and num > 0:
                best = max(best, num / dt)
        safe = min(safe, best)
    got = qspri_copy_bounds(rho, sigma, epsilon=eps, delta=delta).lower
    if not _near_integer(safe):
        assert got == max(1, math.floor(safe) + 1)
