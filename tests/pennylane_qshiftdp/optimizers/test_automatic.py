"""Automatic clipping (Bu et al., arXiv:2206.07136), the default clip mode of a hybrid model,
and the stuck-run diagnosis read from what a run released."""

import math
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from opacus import GradSampleModule

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.optimizers import QShiftDPOptimizer, stuck_run_cause
from pennylane_qshiftdp.privacy_engine import AUTOMATIC_CLIPPING_GAMMA

pytestmark = pytest.mark.filterwarnings("ignore::pennylane_qshiftdp.exceptions.PrivacyWarning")


def _hybrid(seed=0, n_in=4, post=True):
    """The README's hybrid shape: Linear -> tanh·π -> TorchLayer -> Linear."""
    torch.manual_seed(seed)
    dev = qml.device("default.qubit", wires=2)

    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.BasicEntanglerLayers(weights, wires=range(2))
        return [qml.expval(qml.Z(0)), qml.expval(qml.Z(1))]

    class Hybrid(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Linear(n_in, 2)
            self.quantum = qml.qnn.TorchLayer(circuit, {"weights": (1, 2)})
            self.post = torch.nn.Linear(2, 2) if post else None

        def forward(self, x):
            q = self.quantum(math.pi * torch.tanh(self.pre(x)))
            return self.post(q) if self.post is not None else 3.0 * q

    return Hybrid()


def _data(n=40, n_in=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_in, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())


# ------------------------------------------------------------------ the optimizer's rule
@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.lists(st.floats(-50, 50, allow_nan=False), min_size=3, max_size=3),
                     min_size=1, max_size=6),
       clip=st.floats(0.1, 10.0))
def test_each_row_is_scaled_by_c_over_its_norm_plus_gamma_c(rows, clip):
    """Σ_i C g_i/(‖g_i‖ + γC) against a numpy computation, every scaled row of norm < C; the
    noise std is σC, as for clipping at C."""
    g = np.array(rows)
    model = GradSampleModule(torch.nn.Linear(3, 1, bias=False).double())
    w = next(model.parameters())
    opt = QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=1.0,
                            max_grad_norm=clip, expected_batch_size=4.0,
                            automatic_gamma=0.01, generator=torch.Generator().manual_seed(0))
    w.grad_sample = torch.tensor(g).reshape(len(g), 1, 3)
    opt.clip_and_accumulate()
    norms = np.linalg.norm(g, axis=1)
    scaled = g * (clip / (norms + 0.01 * clip) * (1 - 2.0**-20))[:, None]
    assert np.all(np.linalg.norm(scaled, axis=1) < clip)
    np.testing.assert_allclose(w.summed_grad.numpy().ravel(), scaled.sum(axis=0),
                               rtol=1e-12, atol=1e-12)
    assert opt._step_stats["clipped"] == len(g)  # every row rescaled


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e4, 1e9, 1e30])
def test_float32_rows_stay_below_c_for_any_gradient(scale):
    """In float32 the rounding of C·g/(‖g‖ + γC) could exceed C once γC/‖g‖ vanishes (1e9:
    1.00000004 C before the margin); every released row stays at or below C."""
    model = GradSampleModule(torch.nn.Linear(64, 1, bias=False))
    w = next(model.parameters())
    opt = QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), noise_multiplier=1.0,
                            max_grad_norm=1.0, expected_batch_size=1.0, automatic_gamma=0.01)
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        w.grad_sample = (torch.rand(1, 1, 64, generator=gen) * scale).float()
        opt.clip_and_accumulate()
        assert float(w.summed_grad.double().norm()) <= 1.0
        w.summed_grad = None


def test_automatic_clipping_refuses_what_it_cannot_combine_with():
    model = GradSampleModule(torch.nn.Linear(3, 1))
    base = dict(noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=4.0)
    with pytest.raises(ValueError, match="automatic_gamma"):
        QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), certified=True,
                          automatic_gamma=0.01, **base)
    with pytest.raises(ValueError, match="automatic_gamma"):
        QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0), automatic_gamma=-1.0,
                          **base)


# ------------------------------------------------------------------ the default clip mode
def test_default_clip_mode_reads_the_arguments_only():
    """Issue 44: every model gets the calibrated clip by default (it was automatic for hybrids
    and certified for one TorchLayer); the certified clip stays the default where a classical
    clip or a shot-noise credit asks for it."""
    hybrid = _hybrid()
    assert qs.default_clip_mode(hybrid) == "calibrated"
    assert qs.default_clip_mode(hybrid, classical_max_grad_norm=1.0) == "certified"
    assert qs.default_clip_mode(hybrid, credit="depolarizing") == "certified"
    assert qs.default_clip_mode(hybrid.quantum) == "calibrated"
    assert qs.default_clip_mode(torch.nn.Linear(2, 2)) == "calibrated"


def test_a_hybrid_with_automatic_clipping_says_so():
    """The README's hybrid with max_grad_norm='automatic': clipped automatically, the
    statement says so, and a step releases C = 1-scaled gradients."""
    model = _hybrid()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(_data(), batch_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", qs.PrivacyWarning)  # no 'Δ does not cover' warning
        model, opt, loader = qs.make_private(model, opt, loader, target_epsilon=2.0,
                                             target_delta=1e-5, epochs=1, seed=0,
                                             max_grad_norm="automatic")
    assert opt.automatic_gamma == AUTOMATIC_CLIPPING_GAMMA and opt.max_grad_norm == 1.0
    assert opt.sensitivity is None and not opt.certified
    statement = opt.ledger.statement()
    assert "automatic clipping (Bu et al., arXiv:2206.07136)" in statement
    for xb, yb in loader:
        opt.zero_grad()
        if len(xb):
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    assert len(opt.history) == len(loader)


def test_explicit_modes_keep_their_meaning():
    model = _hybrid()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(_data(), batch_size=8)
    with pytest.raises(ValueError, match="classical_max_grad_norm"):
        qs.make_private(model, opt, loader, target_epsilon=2.0, target_delta=1e-5, epochs=1,
                        max_grad_norm="automatic", classical_max_grad_norm=1.0)
    with pytest.raises(ValueError, match="classical_max_grad_norm"):
        qs.make_private(model, opt, loader, target_epsilon=2.0, target_delta=1e-5, epochs=1,
                        max_grad_norm="certified")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", qs.PrivacyWarning)
        _, popt, _ = qs.make_private(model, opt, loader, target_epsilon=2.0, target_delta=1e-5,
                                     epochs=1, classical_max_grad_norm=1.0)
    assert popt.automatic_gamma is None and len(popt.clip_groups) == 2  # per-layer certified


# ------------------------------------------------------------------ the stuck-run diagnosis
def _run(lr, epsilon, epochs=2, seed=0):
    model = _hybrid(seed, post=False)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loader = torch.utils.data.DataLoader(_data(80, seed=seed), batch_size=8)
    model, opt, loader = qs.make_private(model, opt, loader, target_epsilon=epsilon,
                                         target_delta=1e-5, epochs=epochs, seed=seed,
                                         max_grad_norm="automatic")
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            if len(xb):
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return opt


def test_the_released_noisy_sums_estimate_the_signal_without_bias():
    """E‖s + z‖² = ‖s‖² + V: the diagnosis' estimate over many draws of z (known s) recovers
    the signal-to-noise ratio it names."""
    rng = np.random.default_rng(0)
    d, s_norm, noise_std = 50, 3.0, 1.0
    s = np.full(d, s_norm / math.sqrt(d))
    records = [{"released_sum_norm": float(np.linalg.norm(s + rng.normal(0, noise_std, d))),
                "noise_variance_total": d * noise_std**2} for _ in range(4000)]
    power = np.mean([r["released_sum_norm"] ** 2 - d for r in records])
    assert power == pytest.approx(s_norm**2, rel=0.1)
    assert stuck_run_cause(records) is not None  # SNR = 3/√50 = 0.42 < 1: noise named
    assert "0.4" in stuck_run_cause(records)


def test_a_run_forced_to_chance_by_noise_is_told_to_raise_epsilon_or_the_batch():
    opt = _run(lr=0.5, epsilon=0.05)
    cause = stuck_run_cause(opt.history)
    assert cause is not None and "the noise dominates" in cause
    assert "target_epsilon" in cause and "batch_size" in cause
    assert "learning rate" not in cause


def test_a_run_forced_to_chance_by_the_learning_rate_is_told_to_raise_it():
    opt = _run(lr=1e-7, epsilon=50.0)
    cause = stuck_run_cause(opt.history, lr_argument="--lr")
    assert cause is not None and cause.startswith("the learning rate is too small")
    assert "raise --lr" in cause
    healthy = _run(lr=0.5, epsilon=50.0)
    assert stuck_run_cause(healthy.history) is None


def _simulated_records(d, steps, step_snr, seed=0):
    """Released noisy sums s + z_t of a constant signal s (per-step SNR ‖s‖/√V) and their
    running totals, as the optimizer records them."""
    rng = np.random.default_rng(seed)
    s = np.full(d, float(step_snr))  # ‖s‖ = SNR·√d, V = d (unit noise per coordinate)
    total, records = np.zeros(d), []
    for t in range(steps):
        released = s + rng.normal(0, 1, d)
        total += released
        records.append({"released_sum_norm": float(np.linalg.norm(released)),
                        "noise_variance_total": float(d),
                        "released_total_norm": float(np.linalg.norm(total)),
                        "noise_variance_cumulative": float(d * (t + 1))})
    return records


@pytest.mark.parametrize("d", [10, 60, 500])
@pytest.mark.parametrize("seed", range(5))
def test_noise_is_named_by_the_run_snr_not_one_step(d, seed):
    """A consistent signal at per-step SNR 0.35 over 25 steps (the README run's numbers) adds
    up to a run SNR of 1.75: nothing is named. No signal at all: the noise is named (the run's
    ‖Σz‖²/ΣV is χ²_d/d, far below 2)."""
    assert stuck_run_cause(_simulated_records(d, 25, 0.35, seed)) is None
    cause = stuck_run_cause(_simulated_records(d, 25, 0.0, seed))
    assert cause is not None and "the noise dominates" in cause
    assert "for the sum over the run" in cause


def test_the_running_totals_are_the_sum_of_the_released_noisy_sums():
    """Plain SGD moves the weights by lr/b times each released noisy sum, so the run's total
    is (θ_0 − θ_T)·b/lr: an independent reading of ``released_total_norm``; the cumulative
    variance is the sum of the steps' variances."""
    torch.manual_seed(0)
    model = _hybrid(0, post=False)
    start = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    loader = torch.utils.data.DataLoader(_data(40), batch_size=8)
    pmodel, popt, ploader = qs.make_private(model, opt, loader, target_epsilon=3.0,
                                            target_delta=1e-5, epochs=2, seed=0)
    for _ in range(2):
        for xb, yb in ploader:
            popt.zero_grad()
            if len(xb):
                torch.nn.functional.cross_entropy(pmodel(xb), yb).backward()
            popt.step()
    moved = math.sqrt(sum(float((a - p.detach()).double().pow(2).sum())
                          for a, p in zip(start, model.parameters(), strict=True)))
    last = popt.history[-1]
    assert last["released_total_norm"] == pytest.approx(moved * 8 / 0.3, rel=1e-4)
    assert last["noise_variance_cumulative"] == pytest.approx(
        sum(r["noise_variance_total"] for r in popt.history), rel=1e-12)


def test_the_diagnosis_reads_public_record_fields_only():
    from pennylane_qshiftdp.optimizers import PUBLIC_RECORD_KEYS

    for key in ("released_sum_norm", "noise_variance_total", "parameter_step_norm",
                "parameter_norm", "released_total_norm", "noise_variance_cumulative"):
        assert key in PUBLIC_RECORD_KEYS
    opt = _run(lr=0.5, epsilon=50.0, epochs=1)
    public = [{k: v for k, v in r.items() if k in PUBLIC_RECORD_KEYS} for r in opt.history]
    assert stuck_run_cause(public) == stuck_run_cause(opt.history)
