"""Exact-law shot sampling: same law as the device's sampling, seeds, refusals.

Statistical tests use fixed seeds; thresholds come from the sampling distribution (chi-square
p-values and CLT bounds at levels stated beside them), never from retries.
"""

import re

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import pennylane_qshiftdp as qs
from pennylane_qshiftdp import _compat, sampling
from pennylane_qshiftdp.gradients.shot_statistics import two_point_moments
from pennylane_qshiftdp.qnn import _shift_plan, evaluation
from pennylane_qshiftdp.qnn.evaluation import evaluate_layer
from pennylane_qshiftdp.qnn.routes import set_gradient_route
from pennylane_qshiftdp.sampling import _circuit_fusion, exact_law, merging

# Per-comparison significance level of the chi-square tests: with the ~100 comparisons below a
# correct implementation fails one with probability below 1 %.
ALPHA = 1e-4
# CLT bound in standard deviations (two-sided tail 7e-6 per check).
Z = 4.5
REPS = 400


def _circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.Z(0))


def _layer(shots, seed, *, device="default.qubit", recorder=None, circuit=_circuit,
           weight_shape=(1, 2, 3)):
    dev = qml.device(device, wires=2, seed=seed)
    kwargs = {"recorder": recorder} if recorder is not None else {}
    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift,
                      gradient_kwargs=kwargs)
    qnode = qml.set_shots(qnode, shots=shots)
    gen = torch.Generator().manual_seed(5)

    def init(t):
        with torch.no_grad():
            t.copy_(torch.rand(t.shape, generator=gen, dtype=t.dtype) * 2 * np.pi)
        return t

    return qs.qnn.TorchLayer(qnode, {"weights": weight_shape}, init_method=init)


def _inputs(batch, seed=0):
    x = torch.tensor(np.random.default_rng(seed).uniform(0, np.pi, 2), dtype=torch.float64)
    return x.repeat(batch, 1)  # the same example REPS times: REPS independent draws per circuit


def _recorded(layer, x, recorder):
    recorder.clear()
    evaluate_layer(layer, x)
    st = recorder.statistics
    # one row per (shifted circuit, batch element): the first parameter each circuit enters
    _, first = np.unique(np.stack([st.tape_index, st.batch_index], 1), axis=0,
                         return_index=True)
    keep = np.sort(first)
    return {f: getattr(st, f)[keep] for f in ("tape_index", "batch_index", "mean", "variance",
                                              "fourth_moment")}




def _analytic_means(layer, x, monkeypatch):
    """Exact ⟨Z0⟩ of the forward circuit and of every shifted circuit, in the evaluation's
    order (captured from the analytic evaluation of the same layer on default.qubit)."""
    exact = _layer(None, 0)
    exact.load_state_dict(layer.state_dict())
    set_gradient_route(exact, "parameter_shift")  # the merged tapes (not the adjoint sweep)
    captured = []
    merged = _shift_plan.execute_merged  # analytic: one merged tape, read per circuit

    def capture(*args, **kwargs):
        res = merged(*args, **kwargs)
        captured.extend(float(np.asarray(r).reshape(-1)[0]) for r in res)
        return res

    with monkeypatch.context() as m:
        m.setattr(evaluation, "execute_merged", capture)
        evaluate_layer(exact, x[:1])
    return np.array(captured)


@pytest.mark.parametrize("shots", [10, 3])
def test_recorded_statistics_have_the_device_law(shots, monkeypatch, two_sample_chi2):
    """Per shifted circuit, the law of the recorded mean, variance and fourth moment under
    exact-law sampling equals default.qubit's own sampling (and the exact binomial law)."""
    x = _inputs(REPS)
    rec_dev, rec_ex = qs.ShotRecorder(), qs.ShotRecorder()
    dev_layer = _layer(shots, 11, recorder=rec_dev)
    ex_layer = sampling.use_exact_law(_layer(shots, 12, recorder=rec_ex))
    a, b = _recorded(dev_layer, x, rec_dev), _recorded(ex_layer, x, rec_ex)
    mu = _analytic_means(ex_layer, x, monkeypatch)[1:]  # shifted circuits only
    tapes = np.unique(a["tape_index"])
    assert len(tapes) == len(mu) == 12
    for t in tapes:
        sa, sb = a["tape_index"] == t, b["tape_index"] == t
        assert sa.sum() == sb.sum() == REPS
        for field in ("mean", "variance", "fourth_moment"):
            p = two_sample_chi2(a[field][sa], b[field][sb])
            assert p > ALPHA, (t, field, p)
        # variance and fourth moment are those of a two-valued sample with the drawn mean
        var, m4 = two_point_moments(b["mean"][sb], shots, -1.0, 1.0)
        np.testing.assert_allclose(b["variance"][sb], var, atol=1e-12)
        np.testing.assert_allclose(b["fourth_moment"][sb], m4, atol=1e-12)
        # goodness of fit of the exact-law counts to Binomial(shots, P(+1))
        k = np.rint((b["mean"][sb] + 1) / 2 * shots).astype(int)
        np.testing.assert_allclose(b["mean"][sb], (2 * k - shots) / shots, atol=1e-12)
        pmf = stats.binom.pmf(np.arange(shots + 1), shots, (1 + mu[t]) / 2)
        observed = np.bincount(k, minlength=shots + 1)
        keep = pmf * REPS >= 5
        obs = np.append(observed[keep], observed[~keep].sum())
        exp = np.append(pmf[keep], pmf[~keep].sum()) * REPS
        obs, exp = obs[exp > 0], exp[exp > 0]
        assert stats.chisquare(obs, exp * obs.sum() / exp.sum())[1] > ALPHA, t
        # mean and variance of the estimate within CLT bounds, both samplers
        sigma2 = (1 - mu[t] ** 2) / shots
        for s in (sa, sb):
            est = (a if s is sa else b)["mean"][s]
            assert abs(est.mean() - mu[t]) <= Z * np.sqrt(sigma2 / REPS) + 1e-12
            # Var(s²) ≤ E[(X-μ)^4] / n and E[(X-μ)^4] ≤ σ² · (max |X-μ|)² ≤ 4σ²
            assert abs(est.var(ddof=1) - sigma2) <= Z * np.sqrt(4 * sigma2 / REPS) + 1e-12


def test_law_test_has_power(two_sample_chi2):
    """The two-sample test used above rejects a wrong law (Ns = 10, p off by 0.1)."""
    rng = np.random.default_rng(0)
    right = (2 * rng.binomial(10, 0.5, REPS) - 10) / 10
    wrong = (2 * rng.binomial(10, 0.6, REPS) - 10) / 10
    assert two_sample_chi2(right, wrong) < ALPHA


def test_forward_outputs_have_the_device_law(two_sample_chi2):
    x = _inputs(REPS)
    dev_out = evaluate_layer(_layer(10, 21), x).outputs.numpy().ravel()
    ex_out = evaluate_layer(sampling.use_exact_law(_layer(10, 22)), x).outputs.numpy().ravel()
    assert two_sample_chi2(dev_out, ex_out) > ALPHA
    assert np.allclose(ex_out * 10, np.rint(ex_out * 10))  # on the Ns = 10 grid


def test_analytic_circuits_are_unchanged():
    """With shots=None exact-law mode changes nothing and draws nothing."""
    x = _inputs(3, seed=4) + torch.arange(3, dtype=torch.float64)[:, None]
    ref = evaluate_layer(_layer(None, 1), x)
    layer = sampling.use_exact_law(_layer(None, 1))
    state = layer.qnode.device._rng.bit_generator.state
    ev = evaluate_layer(layer, x)
    assert torch.equal(ev.outputs, ref.outputs)
    assert torch.equal(ev.jacobian, ref.jacobian)
    assert layer.qnode.device._rng.bit_generator.state == state


def test_per_example_gradients_agree_with_analytic_within_shot_noise():
    from opacus import GradSampleModule

    shots = 4000
    x = torch.tensor(np.random.default_rng(1).uniform(0, 3, (6, 2)))
    grads = {}
    for name, layer in (("exact", sampling.use_exact_law(_layer(shots, 3))),
                        ("analytic", _layer(None, 3))):
        gsm = GradSampleModule(layer, loss_reduction="sum")
        gsm(x).sum().backward()
        grads[name] = layer.weights.grad_sample.detach().clone()
    # Each gate parameter's gradient is (μ+ − μ−)/2 of two independent means of `shots`
    # ±1 values (sd ≤ 1/sqrt(2·shots)); each weight is one gate parameter (Rot = RZ RY RZ).
    bound = Z / np.sqrt(2 * shots)
    diff = (grads["exact"] - grads["analytic"]).abs().max().item()
    assert 0 < diff <= bound


def test_seed_repeats_draws_exactly():
    x = _inputs(5)
    layer = _layer(50, 0)
    sampling.use_exact_law(layer, seed=7)
    first = evaluate_layer(layer, x)
    sampling.use_exact_law(layer, seed=7)
    again = evaluate_layer(layer, x)
    assert torch.equal(first.outputs, again.outputs)
    assert torch.equal(first.jacobian, again.jacobian)
    # the training job's per-epoch reseeding of the device repeats them too
    _compat.reseed_device(layer.qnode.device, 7)
    assert torch.equal(evaluate_layer(layer, x).jacobian, first.jacobian)
    other = evaluate_layer(sampling.use_exact_law(layer, seed=8), x)
    assert not torch.equal(other.jacobian, first.jacobian)


def test_device_seed_drives_exact_law_draws():
    x = _inputs(4)
    a = evaluate_layer(sampling.use_exact_law(_layer(20, 9)), x)
    b = evaluate_layer(sampling.use_exact_law(_layer(20, 9)), x)
    assert torch.equal(a.jacobian, b.jacobian)


def test_lightning_qubit_exact_law(monkeypatch):
    """lightning.qubit (no native broadcasting): seeded repeat, and means within CLT bounds."""
    shots = 200
    x = _inputs(40)
    layer = _layer(shots, 4, device="lightning.qubit")
    sampling.use_exact_law(layer, seed=3)
    ev = evaluate_layer(layer, x)
    sampling.use_exact_law(layer, seed=3)
    assert torch.equal(evaluate_layer(layer, x).jacobian, ev.jacobian)
    mu = _analytic_means(layer, x, monkeypatch)[0]
    out = ev.outputs.numpy().ravel()
    assert abs(out.mean() - mu) <= Z * np.sqrt((1 - mu**2) / shots / len(out))
    assert np.allclose(out * shots, np.rint(out * shots))


@pytest.mark.parametrize("shots", [50, None])
def test_lightning_qubit_uses_the_state_vector_kernels(shots):
    """Exact-law draws (and analytic parameter shift) on lightning.qubit come from the
    product's kernels, as on default.qubit: with the same generator state the two devices give
    the same outputs and Jacobians bit for bit (lightning's own execution of every circuit was
    20 times slower, benchmarks/RESULTS.md §12), the tracker counts the same circuits, and the
    kernels' values are lightning's own analytic values to float precision."""
    x = _inputs(6)
    layers = {}
    for name in ("default.qubit", "lightning.qubit"):
        layer = _layer(shots, 3, device=name)
        if shots:
            sampling.use_exact_law(layer, seed=8)
        set_gradient_route(layer, "parameter_shift")  # analytic: the merged circuits
        layers[name] = layer
    assert exact_law.simulates_with_kernels(layers["lightning.qubit"].qnode.device)
    evs, totals = {}, {}
    for name, layer in layers.items():
        with qml.Tracker(layer.qnode.device) as tracker:
            evs[name] = evaluate_layer(layer, x)
        totals[name] = (tracker.totals["executions"], tracker.totals["batches"])
    a, b = evs["default.qubit"], evs["lightning.qubit"]
    assert torch.equal(a.outputs, b.outputs) and torch.equal(a.jacobian, b.jacobian)
    assert totals["default.qubit"] == totals["lightning.qubit"] == (6 * 13, 1)
    # against lightning.qubit's own analytic execution of PennyLane's parameter-shift circuits
    own = _layer(None, 0, device="lightning.qubit")
    own.load_state_dict(layers["lightning.qubit"].state_dict())
    own.qnode.diff_method = "parameter-shift"
    w = own.weights.detach().clone().requires_grad_(True)
    out = own.qnode(x[:1], w)
    (grad,) = torch.autograd.grad(out.sum(), w)
    analytic = _layer(None, 0, device="lightning.qubit")
    analytic.load_state_dict(own.state_dict())
    set_gradient_route(analytic, "parameter_shift")
    ev = evaluate_layer(analytic, x[:1])
    np.testing.assert_allclose(ev.outputs[0, 0].item(), out.item(), atol=1e-12)
    np.testing.assert_allclose(ev.per_example_weight_grads(torch.ones(1, 1))[0].numpy(),
                               grad.reshape(-1).numpy(), atol=1e-12)


def test_lightning_device_sampling_stays_on_the_device():
    """shot_sampling="device": lightning.qubit samples every shot itself (one tape per circuit
    and example after its broadcast expansion), nothing is simulated by the kernels."""
    layer = _layer(30, 1, device="lightning.qubit")
    with qml.Tracker(layer.qnode.device) as tracker:
        evaluate_layer(layer, _inputs(3))
    assert tracker.totals["simulations"] == tracker.totals["executions"] == 3 * 13
    assert tracker.totals["shots"] == 3 * 13 * 30


def test_default_mixed_with_device_noise():
    """default.mixed (the depolarizing model): merged analytic evaluation, CLT bounds."""
    from pennylane_qshiftdp.app.models import QuantumClassifier

    shots, batch = 100, 60
    noisy = QuantumClassifier(2, 1, device="default.mixed", shots=shots, seed=0,
                              depolarizing=0.2, init_scale=1.0)
    exact = QuantumClassifier(2, 1, device="default.mixed", shots=None, depolarizing=0.2,
                              init_scale=1.0)
    sampling.use_exact_law(noisy)
    x = _inputs(batch)
    ev, ref = evaluate_layer(noisy.qlayer, x), evaluate_layer(exact.qlayer, x[:1])
    out = ev.outputs.numpy().ravel()
    mu = float(ref.outputs[0, 0])
    assert abs(out.mean() - mu) <= Z * np.sqrt((1 - mu**2) / shots / batch)
    # each Jacobian entry is half a difference of two independent means (sd ≤ 1/sqrt(2·Ns))
    diff = (ev.jacobian.mean(0) - ref.jacobian[0]).abs().max().item()
    assert diff <= Z / np.sqrt(2 * shots * batch)


def test_no_grad_forward_uses_exact_law():
    x = _inputs(4)
    layer = sampling.use_exact_law(_layer(7, 2))
    with torch.no_grad():
        out = layer(x)
    assert out.shape == (4,)
    assert np.allclose(out.numpy() * 7, np.rint(out.numpy() * 7))
    assert layer(x[0]).shape == ()


def _pair_tape(shots, batch, measurements, flip=0.3):
    x = np.full(batch, 0.9)
    ops = [qml.RY(x, 0), qml.CNOT([0, 1]), qml.RX(flip, 1)]  # Z1 = Z0 unless wire 1 flips
    return qml.tape.QuantumScript(ops, measurements, shots=shots)


@pytest.mark.parametrize("mps", [
    # Z0, Z1 and Z0 Z1 commute qubit-wise: one group sharing its shots; probs of wires: another
    [qml.expval(qml.Z(0)), qml.expval(qml.Z(1)), qml.var(qml.Z(0) @ qml.Z(1)),
     qml.probs(wires=[1, 0])],
    # with X0, PennyLane's partition (the devices') gives {Z0, Z0 Z1} and {Z1, X0}
    [qml.expval(qml.Z(0)), qml.expval(qml.Z(1)), qml.expval(qml.X(0)),
     qml.var(qml.Z(0) @ qml.Z(1))],
], ids=["one-pauli-group", "two-pauli-groups"])
def test_several_measurements_have_the_device_joint_law(mps, two_sample_chi2):
    tape = _pair_tape(5, REPS, mps)
    [dev_res] = qml.execute([tape], qml.device("default.qubit", seed=1))
    [ex_res] = sampling.execute_exact_law([tape], qml.device("default.qubit", seed=2))
    for d, e in zip(dev_res, ex_res, strict=True):
        assert np.shape(d) == np.shape(e)

    def pairs(res):
        return np.round(res[0] * 5) * 100 + np.round(res[1] * 5)

    assert two_sample_chi2(pairs(dev_res), pairs(ex_res)) > ALPHA  # joint law of (Z0, Z1)
    for m in (2, 3):
        if np.ndim(ex_res[m]) == 1:
            assert two_sample_chi2(dev_res[m], ex_res[m]) > ALPHA
    if isinstance(mps[3], qml.measurements.ProbabilityMP):
        analytic = qml.execute([tape.copy(shots=None)], qml.device("default.qubit"))[0]
        np.testing.assert_allclose(ex_res[3].sum(1), 1.0)
        # each probability is a mean of 5·REPS Bernoulli draws (sd ≤ 1/2/sqrt(5·REPS))
        np.testing.assert_allclose(ex_res[3].mean(0), analytic[3][0],
                                   atol=Z * 0.5 / np.sqrt(5 * REPS))


def test_commuting_measurements_share_shots():
    """Without the flip every shot has Z0 = Z1: shared shots give equal estimates, on the
    device and under the exact law; var(Z0 Z1) of such shots is 0."""
    mps = [qml.expval(qml.Z(0)), qml.expval(qml.Z(1)), qml.var(qml.Z(0) @ qml.Z(1))]
    tape = _pair_tape(5, REPS, mps, flip=0.0)
    for res in (qml.execute([tape], qml.device("default.qubit", seed=3))[0],
                sampling.execute_exact_law([tape], qml.device("default.qubit", seed=3))[0]):
        np.testing.assert_array_equal(res[0], res[1])
        assert len(np.unique(res[0])) > 1
        np.testing.assert_allclose(res[2], 0.0, atol=1e-12)


@pytest.mark.parametrize("mp, lo, hi", [
    (qml.expval(-2.0 * qml.Z(0)), -2.0, 2.0),
    (qml.expval(0.5 * qml.X(0) @ qml.Y(1)), -0.5, 0.5),
    (qml.expval(qml.Projector([1], 0)), 0.0, 1.0),
    (qml.expval(qml.Hermitian(np.array([[1.0, 0.5], [0.5, -1.0]]), 1)), -np.sqrt(1.25),
     np.sqrt(1.25)),
    (qml.expval(0.5 * qml.I(0) + qml.Z(1)), -0.5, 1.5),
    (qml.var(qml.X(1)), None, None),
], ids=["-2Z", "XY/2", "projector", "hermitian", "shifted", "var-X"])
def test_two_outcome_observables(mp, lo, hi):
    """Estimates lie on the grid λ- + (λ+ - λ-) k / Ns, with mean ⟨O⟩ within CLT bounds."""
    shots = 20
    tape = _pair_tape(shots, REPS, [mp])
    [est] = sampling.execute_exact_law([tape], qml.device("default.qubit", seed=6))
    [exact] = qml.execute([tape.copy(shots=None)], qml.device("default.qubit"))
    if lo is None:  # var(X): ddof-0 variance 1 - m² of the drawn ±1 values
        [ex] = qml.execute([tape.copy(measurements=[qml.expval(qml.X(1))], shots=None)],
                           qml.device("default.qubit"))
        k = np.rint((1 - np.sqrt(np.clip(1 - est, 0, 1))) / 2 * shots)
        assert np.allclose(1 - est, (1 - 2 * k / shots) ** 2)
        m, v = ex[0], 1 - ex[0] ** 2
        expected = 1 - (m**2 + v / shots)  # E[1 - mean²] = 1 - (μ² + σ²/Ns)
        assert abs(est.mean() - expected) <= Z * np.sqrt(4 * v / shots / REPS)
        return
    k = (est - lo) / (hi - lo) * shots
    np.testing.assert_allclose(k, np.rint(k), atol=1e-9)
    sd = (hi - lo) / 2 / np.sqrt(shots * REPS)
    assert abs(est.mean() - exact[0]) <= Z * sd


def test_unbroadcast_tapes_and_fallback_without_merging():
    dev = qml.device("default.qubit", seed=0)
    t1 = qml.tape.QuantumScript([qml.RX(0.3, 0)], [qml.expval(qml.Z(0)), qml.probs(wires=0)],
                                shots=1000)
    t2 = qml.tape.QuantumScript([qml.RY(0.3, 0), qml.Hadamard(0)],
                                [qml.expval(qml.Z(0)), qml.probs(wires=0)], shots=1000)
    res = sampling.execute_exact_law([t1, t2], dev)
    assert [np.shape(r) for r in res[0]] == [(), (2,)]
    assert abs(res[0][0] - np.cos(0.3)) < Z * np.sqrt(1 / 1000)
    assert abs(res[1][0] - np.sin(0.3)) < Z * np.sqrt(1 / 1000)


def test_chunking_does_not_change_draws():
    tapes = [_pair_tape(100, 3, [qml.expval(qml.Z(1))]).bind_new_parameters(
        [np.full(3, 0.2 * i), 0.1 * i], [0, 1]) for i in range(5)]
    one = sampling.execute_exact_law(tapes, qml.device("default.qubit", seed=4))
    many = sampling.execute_exact_law(tapes, qml.device("default.qubit", seed=4),
                                      max_amplitudes=1)
    for a, b in zip(one, many, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("device_name", ["default.qubit", "lightning.qubit"])
def test_offset_rows_give_the_draws_of_explicit_parameter_sets(device_name):
    # The fused evaluation passes a forward tape and per-parameter offset rows instead of one
    # parameter list per circuit: same circuits, so same analytic values and same draws, on a
    # merging device (default.qubit) and on one that runs the circuits one by one.
    template = _pair_tape(200, 3, [qml.expval(qml.Z(1))]).bind_new_parameters(
        [np.array([0.1, 0.7, 1.3]), 0.4], [0, 1])
    base = template.get_parameters(trainable_only=False)
    offsets = [np.array([0.0, np.pi / 2, -np.pi / 2, 0.0, 0.0]),
               np.array([0.0, 0.0, 0.0, np.pi / 2, -np.pi / 2])]
    sets = [[b + o[c] for b, o in zip(base, offsets, strict=True)] for c in range(5)]
    a = exact_law._execute(template, sets, qml.device(device_name, seed=7))
    b = exact_law._execute(template, None, qml.device(device_name, seed=7), offsets=offsets)
    assert len(a) == len(b) == 5
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    # and each circuit's draws estimate that circuit's exact value
    for c, ps in enumerate(sets):
        exact = qml.execute([template.bind_new_parameters(ps, [0, 1]).copy(shots=None)],
                            qml.device("default.qubit"))[0]
        assert np.all(np.abs(np.asarray(b[c]) - exact) <= Z * np.sqrt(1 / 200))


def test_draw_two_point():
    rng = np.random.default_rng(0)
    est = sampling.draw_two_point(np.array([1.0 + 1e-15, -1.0 - 1e-15]), 10, -1.0, 1.0, rng)
    np.testing.assert_array_equal(est, [1.0, -1.0])  # rounding outside [λ-, λ+] is clipped
    est = sampling.draw_two_point(np.full(20000, 0.5), 8, 0.0, 2.0, rng)  # p+ = 1/4
    assert set(np.unique(est * 4).astype(int)) <= set(range(9))
    assert abs(est.mean() - 0.5) <= Z * np.sqrt(4 * 0.25 * 0.75 / 8 / est.size)
    np.testing.assert_array_equal(sampling.draw_two_point([0.3], 5, 2.0, 2.0, rng), [2.0])
    with pytest.raises(ValueError, match=re.escape("`shots` must be a positive integer. "
                                                   "Found 0.")):
        sampling.draw_two_point([0.0], 0, -1.0, 1.0, rng)
    with pytest.raises(ValueError, match=re.escape("`lam_max` must be at least `lam_min` "
                                                   "(1.0). Found -1.0.")):
        sampling.draw_two_point([0.0], 3, 1.0, -1.0, rng)


class _RemoteDevice(qml.devices.Device):
    """A device that keeps no numpy generator (stands for hardware)."""

    def execute(self, circuits, execution_config=None):
        return tuple(0.0 for _ in circuits)


def test_refusals():
    layer = _layer(10, 0)
    with pytest.raises(ValueError, match=re.escape(
            "`mode` must be one of ('device', 'exact_law'). Found 'exact'.")):
        sampling.set_shot_sampling(layer, "exact")
    with pytest.raises(TypeError, match="`target` must be a QNode, a TorchLayer or a torch"):
        sampling.use_exact_law("layer")
    with pytest.raises(ValueError, match="`target` must contain a pennylane.qnn.TorchLayer"):
        sampling.use_exact_law(torch.nn.Linear(2, 1))
    with pytest.raises(ValueError, match=re.escape("`seed` must be non-negative. Found -1.")):
        sampling.use_exact_law(layer, seed=-1)
    with pytest.raises(TypeError, match="`seed` must be None, a non-negative integer"):
        sampling.use_exact_law(layer, seed=True)
    ps = qml.QNode(_circuit, qml.device("default.qubit"), diff_method="parameter-shift")
    with pytest.raises(ValueError, match=re.escape(
            "pennylane_qshiftdp.param_shift. Found diff_method='parameter-shift'.")):
        sampling.use_exact_law(ps)
    remote = qml.QNode(_circuit, _RemoteDevice(wires=2), diff_method=qs.param_shift)
    with pytest.raises(NotImplementedError, match="device '_RemoteDevice' has none"):
        sampling.use_exact_law(remote)
    assert sampling.shot_sampling(remote) == "device"
    sampling.set_shot_sampling(sampling.use_exact_law(layer), "device")
    assert sampling.shot_sampling(layer.qnode) == "device"


def test_unsupported_measurements_refused():
    def hamiltonian(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0) + 0.5 * qml.X(1))

    layer = sampling.use_exact_law(_layer(10, 0, circuit=hamiltonian))
    with pytest.raises(NotImplementedError, match=re.escape(
            "has more than two eigenvalues (devices estimate it term by term)")):
        evaluate_layer(layer, _inputs(2))
    tape = qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.sample(qml.Z(0))], shots=10)
    with pytest.raises(NotImplementedError, match="supports expval and var"):
        sampling.execute_exact_law([tape], qml.device("default.qubit"))
    tape = qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.expval(qml.Z(0))])
    with pytest.raises(ValueError, match=re.escape("the tapes are analytic (shots=None)")):
        sampling.execute_exact_law([tape], qml.device("default.qubit"))
    with pytest.raises(NotImplementedError, match="does not support shot vectors"):
        sampling.execute_exact_law([tape.copy(shots=[10, 20])], qml.device("default.qubit"))
    with pytest.raises(ValueError, match="All tapes must have the same shots"):
        sampling.execute_exact_law([tape.copy(shots=10), tape.copy(shots=20)],
                                   qml.device("default.qubit"))
    with pytest.raises(ValueError, match="`max_amplitudes` must be a positive integer"):
        sampling.execute_exact_law([tape.copy(shots=10)], qml.device("default.qubit"),
                                   max_amplitudes=0)


def test_recorder_needs_expval_measurements():
    def probs(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.probs(wires=[0])

    layer = _layer(10, 0, recorder=qs.ShotRecorder(), circuit=probs)
    with pytest.raises(NotImplementedError, match="records shot statistics for expval"):
        evaluate_layer(layer, _inputs(2))


def test_public_names():
    for name in sampling.__all__:
        assert hasattr(sampling, name), name


# The per-layer cache of shift rules lives in qnn._shift_plan (the fused evaluation that
# exact-law sampling speeds up); it is tested here with the other speed-ups.


def test_shift_rule_cached_per_structure_gives_identical_jacobians():
    x = _inputs(3, seed=2) + torch.arange(3, dtype=torch.float64)[:, None]
    layer = _layer(None, 0)
    set_gradient_route(layer, "parameter_shift")
    evaluate_layer(layer, x)
    assert len(_shift_plan.cached_shift_rules(layer)) == 1
    with torch.no_grad():
        layer.weights.add_(0.37)
    cached = evaluate_layer(layer, x)
    fresh = _layer(None, 0)
    fresh.load_state_dict(layer.state_dict())
    set_gradient_route(fresh, "parameter_shift")
    ref = evaluate_layer(fresh, x)
    assert torch.equal(cached.jacobian, ref.jacobian)
    assert len(_shift_plan.cached_shift_rules(layer)) == 1


class _MyRY(qml.RY):
    """A user-defined gate: its shift rule is not cached (it could depend on the values)."""


def test_user_gates_are_not_cached():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        _MyRY(weights[0], wires=0)
        qml.CNOT([0, 1])
        return qml.expval(qml.Z(1))

    layer = _layer(None, 0, circuit=circuit, weight_shape=(1,))
    x = _inputs(2)
    ev = evaluate_layer(layer, x)
    assert _shift_plan.cached_shift_rules(layer) == {}
    w = float(layer.weights.detach()[0])
    # ⟨Z1⟩ = cos(x0 + w) cos(x1): d/dw = -sin(x0 + w) cos(x1)
    expected = -np.sin(x[:, 0].numpy() + w) * np.cos(x[:, 1].numpy())
    np.testing.assert_allclose(ev.jacobian[:, 0, 0].numpy(), expected, atol=1e-12)


# --------------------------------------------------------------------------------------------
# Light cone and single-qubit fusion of merged tapes
# --------------------------------------------------------------------------------------------

_ONE_QUBIT = [("RX", 1), ("RY", 1), ("RZ", 1), ("Rot", 3), ("Hadamard", 0), ("S", 0)]
_TWO_QUBIT = ["CNOT", "CZ", "CRY"]


@st.composite
def _random_circuit(draw):
    """Gates on 3 wires, each parameter broadcast over 5 elements or not."""
    ops = []
    for _ in range(draw(st.integers(1, 14))):
        if draw(st.booleans()):
            name, n_par = draw(st.sampled_from(_ONE_QUBIT))
            wires = [draw(st.integers(0, 2))]
        else:
            name = draw(st.sampled_from(_TWO_QUBIT))
            n_par = 1 if name == "CRY" else 0
            wires = draw(st.lists(st.integers(0, 2), min_size=2, max_size=2, unique=True))
        seed = draw(st.integers(0, 2**31))
        rng = np.random.default_rng(seed)
        params = [rng.uniform(-np.pi, np.pi, size=5) if draw(st.booleans())
                  else float(rng.uniform(-np.pi, np.pi)) for _ in range(n_par)]
        ops.append(getattr(qml, name)(*params, wires=wires))
    measured = draw(st.lists(st.integers(0, 2), min_size=1, max_size=3, unique=True))
    return ops, measured


@settings(max_examples=60, deadline=None)
@given(_random_circuit())
def test_light_cone_and_fusion_leave_results_unchanged(circuit):
    ops, measured = circuit
    mps = [qml.probs(wires=measured), qml.expval(qml.X(measured[0]))]
    dev = qml.device("default.qubit", wires=3)
    reduced = _circuit_fusion.fuse_single_qubit(_circuit_fusion.light_cone(ops, mps))
    full_tape = qml.tape.QuantumScript(ops, mps)
    red_tape = qml.tape.QuantumScript(reduced, mps)
    assert red_tape.batch_size in (full_tape.batch_size, None)
    full, red = qml.execute([full_tape, red_tape], dev, diff_method=None)
    for a, b in zip(full, red, strict=True):
        np.testing.assert_allclose(np.broadcast_to(b, np.shape(a)), a, atol=1e-12)
    assert len(reduced) <= len(ops)


def test_light_cone_drops_gates_after_the_last_contact_only():
    ops = [qml.RY(0.1, 0), qml.RY(0.2, 1), qml.RY(0.3, 2), qml.CNOT([0, 1]),
           qml.CNOT([1, 2]), qml.RX(0.4, 1), qml.RX(0.5, 2)]
    kept = _circuit_fusion.light_cone(ops, [qml.expval(qml.Z(0))])
    # CNOT(0, 1) is the last gate on wire 0 and pulls wire 1 in; after it nothing touches 0.
    assert kept == ops[:2] + [ops[3]]
    # Measuring wire 1: RX on 1, then CNOT(1, 2) pulls in wire 2 and CNOT(0, 1) wire 0, so
    # only the final RX on wire 2 goes.
    kept1 = _circuit_fusion.light_cone(ops, [qml.probs(wires=[1])])
    assert kept1 == ops[:6]
    # Implicit all-wire measurements and non-unitary operations disable pruning.
    assert _circuit_fusion.light_cone(ops, [qml.probs()]) == ops
    noisy = ops + [qml.DepolarizingChannel(0.1, wires=2)]
    assert _circuit_fusion.light_cone(noisy, [qml.expval(qml.Z(0))]) == noisy


def test_fusion_merges_runs_and_keeps_barriers():
    theta = np.linspace(0.1, 1.0, 4)
    ops = [qml.RY(theta, 0), qml.Rot(theta, 0.2, 0.3, wires=0), qml.RX(0.5, 1),
           qml.CNOT([0, 1]), qml.RZ(theta, 0), qml.DepolarizingChannel(0.1, wires=0),
           qml.RZ(0.3, 0), qml.RX(0.2, 0)]
    fused = _circuit_fusion.fuse_single_qubit(ops)
    names = [op.name for op in fused]
    # RY·Rot on wire 0 -> one unitary; lone RX on 1 kept; RZ before the channel kept; the
    # two gates after it fused.
    assert names == ["QubitUnitary", "RX", "CNOT", "RZ", "DepolarizingChannel",
                     "QubitUnitary"]
    expected = qml.matrix(qml.Rot(theta, 0.2, 0.3, wires=0)) @ qml.matrix(qml.RY(theta, 0))
    np.testing.assert_allclose(fused[0].matrix(), expected, atol=1e-15)
    assert fused[0].batch_size == 4
    # torch (trainable) parameters are never fused.
    t = torch.tensor(0.3, requires_grad=True)
    assert _circuit_fusion.fuse_single_qubit([qml.RY(t, 0), qml.RX(t, 0)])[0].name == "RY"


def test_fusion_only_on_pennylanes_python_simulators():
    class _Sub(qml.devices.DefaultQubit):
        pass

    assert merging.fuses_gates(qml.device("default.qubit"))
    assert merging.fuses_gates(qml.device("default.mixed", wires=1))
    assert not merging.fuses_gates(_Sub())
    assert not merging.fuses_gates(qml.device("lightning.qubit", wires=1))


@pytest.mark.parametrize("op", [
    qml.RX(np.linspace(-4, 4, 7), 0), qml.RY(np.linspace(-4, 4, 7), 0),
    qml.RZ(np.linspace(-4, 4, 7), 0), qml.RZ(0.3, 0),
    qml.Rot(np.linspace(-4, 4, 7), 0.3, np.linspace(0, 6, 7), wires=0),
    qml.Rot(0.1, -2.0, 1.5, wires=0), qml.Hadamard(0), qml.PhaseShift(0.4, 0)])
def test_one_qubit_matrices_are_pennylanes(op):
    np.testing.assert_allclose(_circuit_fusion.one_qubit_matrix(op), qml.matrix(op), atol=1e-15)
