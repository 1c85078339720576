"""Tests for qprldp_core.properties.counterexamples: QPrLDP is neither convex nor closed
under post-processing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from qprldp_core import properties as pr
from qprldp_core.channels import Channel, bit_flip
from qprldp_core.divergences import hockey_stick_divergence, violation_probability
from qprldp_core.privacy import worst_case_search

pytestmark = pytest.mark.usefixtures("single_threaded_blas")


def _grid_sup_violation(ch: Channel, eps: float, n: int = 401) -> float:
    # Measure-and-prepare channels: the output is diag(a W[:, 0] + (1 - a) W[:, 1]) with
    # a = <0|rho|0>, so the violation probability is classical; scan all (a, b) on a grid, with
    # the strict event {P_a > e^eps P_b} (no tolerance: counts at least as much as the library).
    e0 = np.diag(ch(np.diag([1.0, 0.0])).real)
    e1 = np.diag(ch(np.diag([0.0, 1.0])).real)
    grid = np.linspace(0.0, 1.0, n)
    probs = grid[:, None] * e0[None, :] + (1 - grid[:, None]) * e1[None, :]  # (n, d_out)
    pa, pb = probs[:, None, :], probs[None, :, :]
    viol = np.where(pa - math.exp(eps) * pb > 0, pa, 0.0).sum(axis=-1)
    # cross-check a few grid points against the library's quantum routine
    for i, j in [(0, n - 1), (n - 1, 0), (n // 3, n // 7)]:
        assert violation_probability(np.diag(probs[i]), np.diag(probs[j]), epsilon=eps) == (
            pytest.approx(viol[i, j], abs=1e-12))
    return float(viol.max())


def test_non_convexity_witness():
    w = pr.non_convexity_witness()
    assert (w.epsilon, w.delta, w.weight) == (1.0, 0.1, 0.5)
    # mixture recomputed from the two channels' outputs
    mix_r = 0.5 * w.channel_a(w.rho) + 0.5 * w.channel_b(w.rho)
    mix_s = 0.5 * w.channel_a(w.sigma) + 0.5 * w.channel_b(w.sigma)
    np.testing.assert_allclose(w.mixture(w.rho), mix_r, atol=1e-14)
    v = violation_probability(mix_r, mix_s, epsilon=w.epsilon)
    assert v == pytest.approx((0.1 + 2.5 / 3.5) / 2, abs=1e-12)
    assert w.violation_probability == pytest.approx(v, abs=1e-14)
    assert v > w.delta
    # exact classical check: outputs are diag(...) of a = rho_00 only; ratios are explicit
    ra, sa = w.channel_a(w.rho).real, w.channel_a(w.sigma).real
    np.testing.assert_allclose(np.diag(ra), [0.1, 0.9], atol=1e-14)
    np.testing.assert_allclose(np.diag(sa), [0.0, 1.0], atol=1e-14)
    rb, sb = w.channel_b(w.rho).real, w.channel_b(w.sigma).real
    assert max(rb[0, 0] / sb[0, 0], sb[1, 1] / rb[1, 1]) == pytest.approx(2.5)
    assert 2.5 < math.e
    # each channel is (1, 0.1)-QPrLDP: exhaustive scan over the classical inputs, plus search
    for ch in (w.channel_a, w.channel_b):
        assert _grid_sup_violation(ch, w.epsilon) <= w.delta + 1e-12
        res = worst_case_search(ch, epsilon=w.epsilon, notion="qprldp", restarts=8, seed=0)
        assert res.value <= w.delta + 1e-9
    assert _grid_sup_violation(w.channel_b, w.epsilon) == 0.0


def test_post_processing_counterexample():
    w = pr.post_processing_counterexample()
    assert (w.epsilon, w.delta, w.flip_probability) == (1.0, 0.1, 0.02)
    n = bit_flip(0.02)
    r_out, s_out = n(w.channel(w.rho)), n(w.channel(w.sigma))
    np.testing.assert_allclose(np.diag(r_out).real, [0.116, 0.884], atol=1e-14)
    np.testing.assert_allclose(np.diag(s_out).real, [0.02, 0.98], atol=1e-14)
    v = violation_probability(r_out, s_out, epsilon=1.0)
    assert v == pytest.approx(0.116, abs=1e-12)
    assert w.violation_probability == pytest.approx(v, abs=1e-14)
    assert v > w.delta
    # the channel itself is exactly (1, 0.1)-QPrLDP (attained at |0>, |1>)
    assert _grid_sup_violation(w.channel, 1.0) == pytest.approx(0.1, abs=1e-12)
    # QLDP, unlike QPrLDP, cannot increase under post-processing (data processing of E_γ)
    e_before = hockey_stick_divergence(w.channel(w.rho), w.channel(w.sigma), gamma=math.e)
    assert hockey_stick_divergence(r_out, s_out, gamma=math.e) <= e_before + 1e-12


def test_witnesses_are_frozen():
    w = pr.non_convexity_witness()
    with pytest.raises(AttributeError):
        w.delta = 0.5  # type: ignore[misc]
