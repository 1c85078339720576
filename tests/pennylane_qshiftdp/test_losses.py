"""Tests for pennylane_qshiftdp.losses: certified bounds hold (property test) and are checked."""

import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pennylane_qshiftdp as qs
from pennylane_qshiftdp import losses

floats = st.floats(-1.0, 1.0, allow_nan=False)


def _grads(loss, f, y):
    return loss.output_gradients(torch.tensor(f, dtype=torch.float64), y)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.lists(floats, min_size=3, max_size=3), st.integers(0, 2),
       st.floats(0.1, 10.0), st.lists(st.sampled_from([-1.0, 1.0]), min_size=3, max_size=3))
def test_certified_bounds_hold(f, label, scale, ys):
    cases = [
        (losses.SoftmaxCrossEntropyLoss(logit_scale=scale), [f], torch.tensor([label])),
        (losses.MSELoss(target_bound=1.0), [f], torch.tensor([ys], dtype=torch.float64)),
        (losses.LinearLoss(), [f], torch.tensor([ys], dtype=torch.float64)),
        (losses.MarginLoss(margin=0.5), [[f[0]]], torch.tensor([[ys[0]]], dtype=torch.float64)),
        (losses.LogisticLoss(logit_scale=scale), [[f[0]]],
         torch.tensor([[ys[0]]], dtype=torch.float64)),
    ]
    for loss, out, y in cases:
        g = _grads(loss, out, y)
        l1, l2 = loss.grad_bounds(output_range=(-1, 1), num_outputs=g.shape[1])
        assert g.abs().sum().item() <= l1 + 1e-12
        assert g.norm().item() <= l2 + 1e-12
        loss.check(torch.tensor(out, dtype=torch.float64), y, output_range=(-1, 1))


def test_closed_form_bounds():
    assert losses.LinearLoss().grad_bounds(output_range=(-1, 1), num_outputs=4) == (1.0, 0.5)
    assert losses.MSELoss(target_bound=1.0).grad_bounds(output_range=(-1, 1),
                                                         num_outputs=1) == (4.0, 4.0)
    l1, l2 = losses.SoftmaxCrossEntropyLoss(logit_scale=3.0).grad_bounds(
        output_range=(-1, 1), num_outputs=5)
    assert (l1, l2) == (6.0, pytest.approx(3 * math.sqrt(2)))


def test_logistic_loss_closed_form():
    """ℓ = log(1 + exp(-y s f)) and ∂ℓ/∂f = -y s σ(-y s f), against math."""
    loss = losses.LogisticLoss(logit_scale=10.0)
    f = torch.tensor([0.3, -0.2, 0.9], dtype=torch.float64)
    y = torch.tensor([1.0, 1.0, -1.0], dtype=torch.float64)
    pairs = list(zip(f.tolist(), y.tolist(), strict=True))
    expected = [math.log1p(math.exp(-10.0 * yi * fi)) for fi, yi in pairs]
    assert loss(f, y).tolist() == pytest.approx(expected, rel=1e-12)
    grads = loss.output_gradients(f, y).reshape(-1).tolist()
    want = [-10.0 * yi / (1.0 + math.exp(10.0 * yi * fi)) for fi, yi in pairs]
    assert grads == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match=re.escape("must be -1 or +1. Found [0.0, 1.0]")):
        loss(f[:2], torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="one output per example. Found 2"):
        loss(torch.zeros(3, 2), torch.ones(3))


def test_declared_loss_violation_raises():
    loss = losses.DeclaredLoss(lambda f, y: (10 * f).reshape(-1), grad_l1=1.0)
    with pytest.raises(qs.SensitivityError, match="exceeded its certified bound"):
        loss.check(torch.tensor([0.1]), torch.tensor([1.0]), output_range=(-1, 1))


def test_errors():
    msg = "`target_bound` must be non-negative and finite. Found -1.0."
    with pytest.raises(ValueError, match=re.escape(msg)):
        losses.MSELoss(target_bound=-1)
    msg = "`logit_scale` must be positive and finite. Found 0.0."
    with pytest.raises(ValueError, match=re.escape(msg)):
        losses.SoftmaxCrossEntropyLoss(logit_scale=0)
    with pytest.raises(ValueError, match=re.escape("`targets` must satisfy |y| <= target_bound")):
        losses.MSELoss(target_bound=1.0)(torch.tensor([0.1]), torch.tensor([2.0]))
    with pytest.raises(ValueError, match=re.escape("`output_range` must be a finite pair")):
        losses.LinearLoss().grad_bounds(output_range=(1, -1), num_outputs=1)
    with pytest.raises(ValueError, match=re.escape("`num_outputs` must be a positive integer")):
        losses.LinearLoss().grad_bounds(output_range=(-1, 1), num_outputs=0)
    with pytest.raises(TypeError, match=re.escape("`fn` must be callable")):
        losses.DeclaredLoss(3, grad_l1=1.0)
