"""Every documented route keeps the guarantee (issue: Opacus's engine, clip schedulers,
BatchMemoryManager loop shapes, float32 clipping, tied weights, Opacus unharmed).

Each route is checked against an independent reference: the divisor of N against N + 1
examples; the enforced clip and the noise std measured white-box at every step against
σ·C; releases against the clipped sums of exactly one logical batch built by hand; float32
extremes against C; tied weights against backprop one example at a time.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
import warnings

import opacus
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from opacus import GradSampleModule
from opacus.optimizers import DPOptimizer
from opacus.schedulers import ExponentialGradClip, ExponentialNoise, StepGradClip
from opacus.utils.batch_memory_manager import BatchMemoryManager
from opacus.validators.errors import UnsupportedModuleError

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.grad_sample.divisor_guard import DivisorError
from pennylane_qshiftdp.optimizers import QShiftDPOptimizer


def _circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.Z(0))


def _layer(diff_method=qs.param_shift, seed=0, cls=None):
    qnode = qml.QNode(_circuit, qml.device("default.qubit", wires=2), interface="torch",
                      diff_method=diff_method)
    torch.manual_seed(seed)
    cls = cls or (qs.qnn.TorchLayer if diff_method is qs.param_shift else qml.qnn.TorchLayer)
    return cls(qnode, {"weights": (1, 2, 3)}).double()


def _loader(n, batch_size=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=torch.float64) * 3
    return torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, torch.arange(n, dtype=torch.float64)),
        batch_size=batch_size)


# ------------------------------------------------------------------------------------------
# 1. the divisor of every engine route is the same for N and N + 1 (or the route is refused)
# ------------------------------------------------------------------------------------------


def _divisor(route, n):
    layer = _layer()
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if route == "make_private":
            _, dp, _ = qs.make_private(layer, opt, _loader(n), target_epsilon=2.0,
                                       target_delta=1e-5, epochs=1, seed=0,
                                       accountant="rdp")
        elif route == "PrivacyEngine.make_private":
            _, dp, _ = qs.PrivacyEngine(accountant="rdp").make_private(
                module=layer, optimizer=opt, data_loader=_loader(n), noise_multiplier=2.0,
                max_grad_norm=1.0)
        else:
            _, dp, _ = qs.PrivacyEngine(accountant="rdp").make_private_with_epsilon(
                module=layer, optimizer=opt, data_loader=_loader(n), target_epsilon=2.0,
                target_delta=1e-5, epochs=1, max_grad_norm=1.0)
    return dp.expected_batch_size


@pytest.mark.parametrize("route", ["make_private", "PrivacyEngine.make_private",
                                   "PrivacyEngine.make_private_with_epsilon"])
def test_the_divisor_is_the_same_for_n_and_n_plus_one(route):
    """Opacus's own engine divides by int(q·N): 9 for N = 29, 10 for N = 30 (batch 10)."""
    assert int(29 * (1 / len(_loader(29)))) == 9 and int(30 * (1 / len(_loader(30)))) == 10
    assert _divisor(route, 29) == _divisor(route, 30) == 10.0


@pytest.mark.parametrize("method", ["make_private", "make_private_with_epsilon"])
def test_opacus_s_own_engine_is_refused_before_training_naming_the_safe_call(method):
    layer = _layer()
    before = layer.weights.detach().clone()
    kwargs = ({"noise_multiplier": 2.0} if method == "make_private" else
              {"target_epsilon": 2.0, "target_delta": 1e-5, "epochs": 1})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        engine = opacus.PrivacyEngine(accountant="rdp")
    with pytest.raises(UnsupportedModuleError,
                       match=r"(?s)opacus#819.*pennylane_qshiftdp\.PrivacyEngine"):
        getattr(engine, method)(module=layer, optimizer=torch.optim.SGD(layer.parameters(),
                                                                        lr=0.1),
                                data_loader=_loader(30), max_grad_norm=1.0, **kwargs)
    assert torch.equal(before, layer.weights.detach()) and len(engine.accountant) == 0


def test_a_hand_built_dp_optimizer_is_refused_before_any_parameter_changes():
    layer = _layer()
    model = GradSampleModule(layer)
    opt = DPOptimizer(torch.optim.SGD(layer.parameters(), lr=0.1), noise_multiplier=1.0,
                      max_grad_norm=1.0, expected_batch_size=9)
    x = _loader(29).dataset.tensors[0][:5]
    before = layer.weights.detach().clone()
    model(x).sum().backward()
    with pytest.raises(DivisorError, match="opacus#819"):
        opt.step()
    assert torch.equal(before, layer.weights.detach())


def test_a_plain_optimizer_over_grad_samples_and_classical_dp_optimizers_are_left_alone():
    """The guard reads one mark the quantum grad sampler sets: a plain SGD over a
    GradSampleModule of the layer, and Opacus's DPOptimizer on a classical model, step."""
    layer = _layer()
    model = GradSampleModule(layer)
    sgd = torch.optim.SGD(layer.parameters(), lr=0.1)
    model(_loader(5).dataset.tensors[0]).sum().backward()
    sgd.step()
    lin = GradSampleModule(torch.nn.Linear(2, 1).double())
    dp = DPOptimizer(torch.optim.SGD(lin.parameters(), lr=0.1), noise_multiplier=1.0,
                     max_grad_norm=1.0, expected_batch_size=4)
    lin(torch.ones(3, 2, dtype=torch.float64)).sum().backward()
    dp.step()


@pytest.mark.parametrize("accountant", ["prv", "rdp", "gdp", "pld"])
def test_the_product_engine_takes_any_opacus_accountant(accountant):
    layer = _layer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = qs.PrivacyEngine(accountant=accountant)
        model, opt, loader = engine.make_private_with_epsilon(
            module=layer, optimizer=torch.optim.SGD(layer.parameters(), lr=0.1),
            data_loader=_loader(30), target_epsilon=3.0, target_delta=1e-5, epochs=2,
            max_grad_norm=1.0)
        for x, _ in loader:
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    assert isinstance(opt, QShiftDPOptimizer) and opt.expected_batch_size == 10.0
    assert len(opt.history) == len(loader)
    assert 0.0 < engine.get_epsilon(1e-5) <= 3.0 * 1.02  # Opacus's calibration tolerance


def test_the_product_engine_refuses_what_divides_by_q_n():
    layer = _layer()
    engine = qs.PrivacyEngine(secure_mode=True)
    common = {"module": layer, "optimizer": torch.optim.SGD(layer.parameters(), lr=0.1),
              "data_loader": _loader(30), "noise_multiplier": 1.0, "max_grad_norm": 1.0}
    with pytest.raises(ValueError, match="`clipping` must be one of"):
        engine.make_private(**common, clipping="adaptive")
    with pytest.raises(ValueError, match="distributed=True"):
        engine.make_private(**common, distributed=True)
    with pytest.raises(ValueError, match="`expected_batch_size` must be"):
        engine.make_private(**common, expected_batch_size=-1)


def test_the_product_engine_per_layer_clipping_scales_the_noise_by_the_groups_norm():
    lin = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)).double()
    n_params = len(list(lin.parameters()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, _ = qs.PrivacyEngine().make_private(
            module=lin, optimizer=torch.optim.SGD(lin.parameters(), lr=0.1),
            data_loader=_loader(30), noise_multiplier=1.0, clipping="per_layer",
            max_grad_norm=[0.5] * n_params)
    assert len(opt.clip_groups) == n_params
    assert math.isclose(opt.max_grad_norm, 0.5 * math.sqrt(n_params), rel_tol=1e-15)


# ------------------------------------------------------------------------------------------
# 2. Opacus unharmed: a backprop TorchLayer trains under opacus.PrivacyEngine as without the
#    import of this package
# ------------------------------------------------------------------------------------------

_OPACUS_ALONE = textwrap.dedent("""
    import sys, warnings
    import torch, pennylane as qml
    from opacus import PrivacyEngine
    from opacus.validators import ModuleValidator
    if sys.argv[1] == "with":
        import pennylane_qshiftdp as qs
        qs.qnn  # the registrations
    warnings.simplefilter("ignore")
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=2), interface="torch",
                      diff_method="backprop")
    torch.manual_seed(0)
    layer = qml.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)}).double()
    x = torch.rand(6, 2, dtype=torch.float64)
    data = torch.utils.data.TensorDataset(x, torch.zeros(6))
    errors = ModuleValidator.validate(layer)
    model, opt, loader = PrivacyEngine(accountant="rdp").make_private(
        module=layer, optimizer=torch.optim.SGD(layer.parameters(), lr=0.5),
        data_loader=torch.utils.data.DataLoader(data, batch_size=6), noise_multiplier=1.0,
        max_grad_norm=0.1, poisson_sampling=False,
        noise_generator=torch.Generator().manual_seed(3))
    opt.zero_grad()
    model(x).sum().backward()
    samples = layer.weights.grad_sample.detach().clone()
    opt.step()
    print(repr((len(errors), samples.reshape(-1).tolist(), layer.weights.reshape(-1).tolist())))
""")


def test_importing_the_library_changes_no_opacus_decision_on_a_backprop_layer(tmp_path):
    script = tmp_path / "alone.py"
    script.write_text(_OPACUS_ALONE)
    runs = [subprocess.run([sys.executable, str(script), arg], capture_output=True, text=True,
                           timeout=300) for arg in ("without", "with")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    without, with_ = (eval(r.stdout.strip().splitlines()[-1]) for r in runs)  # noqa: S307
    assert without[0] == 0 and with_ == without  # same validation, grad samples, weights


# ------------------------------------------------------------------------------------------
# 3. one clip, one truth: schedulers move the clip the rows get and the noise together
# ------------------------------------------------------------------------------------------


def _measured_step(model, opt, x):
    """One step on ``x`` with every standard normal draw set to 1: returns (the largest
    clipped per-example norm actually summed, the noise std per coordinate)."""
    seen = {}
    add_noise = opt.add_noise

    def spy():
        seen["sum"] = [p.summed_grad.detach().clone() for p in opt.params]
        add_noise()

    opt.add_noise = spy
    opt._standard_normal = lambda n: torch.ones(n, dtype=torch.float64)
    before = [p.detach().clone() for p in opt.params]
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    lr = opt.param_groups[0]["lr"]
    grads = [(b - p.detach()) / lr * opt.expected_batch_size for b, p in
             zip(before, opt.params, strict=True)]
    noise = torch.cat([(g - s).reshape(-1) for g, s in zip(grads, seen["sum"], strict=True)])
    clipped = math.sqrt(sum(float(s.pow(2).sum()) for s in seen["sum"]))
    del opt.add_noise, opt._standard_normal
    return clipped, float(noise.mean()), float(noise.std())


def _flat_private(clip=1.0, sigma_epsilon=4.0):
    lin = torch.nn.Linear(3, 1, bias=False).double()
    data = torch.utils.data.TensorDataset(torch.ones(20, 3, dtype=torch.float64),
                                          torch.zeros(20))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return qs.make_private(lin, torch.optim.SGD(lin.parameters(), lr=1e-3),
                               torch.utils.data.DataLoader(data, batch_size=4),
                               target_epsilon=sigma_epsilon, target_delta=1e-5, epochs=4,
                               seed=0, max_grad_norm=clip, accountant="rdp")


@pytest.mark.parametrize("schedule", ["attribute", "StepGradClip", "ExponentialGradClip",
                                      "ExponentialNoise"])
def test_clip_and_noise_schedulers_keep_noise_std_over_the_enforced_clip_at_sigma(schedule):
    model, opt, _ = _flat_private()
    big = 1e3 * torch.ones(1, 3, dtype=torch.float64)  # one example, clipped whatever C
    sched = {"StepGradClip": lambda: StepGradClip(opt, step_size=1, gamma=0.5),
             "ExponentialGradClip": lambda: ExponentialGradClip(opt, gamma=0.5),
             "ExponentialNoise": lambda: ExponentialNoise(opt, gamma=0.97)}.get(schedule)
    sched = sched() if sched else None
    for step in range(4):
        if schedule == "attribute" and step == 1:
            opt.max_grad_norm = 0.1
        clipped, mean, std = _measured_step(model, opt, big)
        c = opt.max_grad_norm
        assert clipped <= c and math.isclose(clipped, c, rel_tol=1e-5)
        assert std < 1e-12 and math.isclose(mean, opt.noise_multiplier * c, rel_tol=1e-12)
        assert opt.last_record["clip_norm"] == c
        if sched is not None:
            sched.step()
    if schedule != "ExponentialNoise":
        assert opt.max_grad_norm < 1.0
        assert opt.ledger.extra["clip_norm_schedule"][-1]["clip_norm"] == opt.max_grad_norm
        c = opt.max_grad_norm
        assert (f"C = {c:.6g} (noise std {opt.noise_multiplier * c:.6g})"
                in opt.ledger.statement().replace("\n", " "))


def test_setting_the_certified_clip_is_refused_and_changes_nothing():
    layer = _layer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, _ = qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1),
                                    _loader(30), target_epsilon=2.0, target_delta=1e-5,
                                    epochs=1, seed=0, max_grad_norm="certified")
    before = (opt.max_grad_norm, list(opt.clip_groups))
    with pytest.raises(ValueError, match="certified a-priori bound"):
        opt.max_grad_norm = 0.1
    with pytest.raises(ValueError, match="certified a-priori bound"):
        StepGradClip(opt, step_size=1, gamma=0.5).step()
    assert (opt.max_grad_norm, list(opt.clip_groups)) == before


def test_per_group_clips_scale_together():
    lin = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)).double()
    model = GradSampleModule(lin)
    groups = [(list(lin[0].parameters()), 0.3), (list(lin[1].parameters()), 0.4)]
    opt = QShiftDPOptimizer(torch.optim.SGD(lin.parameters(), lr=1.0), noise_multiplier=1.0,
                            max_grad_norm=0.5, expected_batch_size=2, clip_groups=groups,
                            generator=torch.Generator().manual_seed(0))
    assert math.isclose(opt.max_grad_norm, 0.5)
    opt.max_grad_norm = 0.05
    assert [c for _, c in opt.clip_groups] == pytest.approx([0.03, 0.04], rel=1e-15)
    assert opt.max_grad_norm >= math.sqrt(sum(c * c for _, c in opt.clip_groups))
    clipped, mean, _ = _measured_step(model, opt, 1e3 * torch.ones(1, 2, dtype=torch.float64))
    assert clipped <= opt.max_grad_norm and math.isclose(mean, opt.max_grad_norm, rel_tol=1e-12)


# ------------------------------------------------------------------------------------------
# 4. float32 extremes never exceed C, in every clip mode
# ------------------------------------------------------------------------------------------


def _float32_optimizer(mode, n, clip):
    p = torch.nn.Parameter(torch.zeros(n, dtype=torch.float32))
    kw = {"noise_multiplier": 1.0, "max_grad_norm": clip, "expected_batch_size": 1.0,
          "generator": torch.Generator().manual_seed(0)}
    if mode == "certified":
        kw["certified"] = True
    elif mode == "automatic":
        kw["automatic_gamma"] = 0.01
    elif mode == "adaptive":
        kw["adaptive_clipping"] = {"target_unclipped_quantile": 0.5,
                                   "clipbound_learning_rate": 0.2, "min_clipbound": 1e-3,
                                   "max_clipbound": 1e3}
    elif mode == "per_group":
        q = torch.nn.Parameter(torch.zeros(3, dtype=torch.float32))
        opt = QShiftDPOptimizer(torch.optim.SGD([p, q], lr=1.0),
                                clip_groups=[([p], clip), ([q], clip / 2)], **kw)
        return opt, [p, q]
    return QShiftDPOptimizer(torch.optim.SGD([p], lr=1.0), **kw), [p]


def _clipped_rows(opt, params, rows):
    """The per-example contributions summed at one step (float64), one example per call."""
    out = []
    for row in rows:
        for p in params:
            p.grad_sample = torch.zeros(1, *p.shape, dtype=torch.float32)
        params[0].grad_sample = row.reshape(1, -1)
        opt.clip_and_accumulate()
        out.append([p.summed_grad.clone() for p in params])
        for p in params:
            p.summed_grad = None
        opt._step_stats = {}
    return out


_EXTREMES = [torch.full((100_000,), 3.06e38), torch.full((100_000,), -1.7e38),
             torch.full((100_000,), 1e-45), torch.full((7,), 1e38), torch.full((7,), 1e-38),
             torch.cat([torch.full((50_000,), 3.4e38), torch.full((50_000,), 1e-45)])]


@pytest.mark.parametrize("mode", ["flat", "certified", "per_group", "automatic", "adaptive"])
def test_float32_extremes_never_exceed_the_clip(mode):
    for clip in (1.0, 1e-3, 7.3):
        for row in _EXTREMES:
            opt, params = _float32_optimizer(mode, row.numel(), clip)
            [(summed, *_rest)] = _clipped_rows(opt, params, [row.to(torch.float32)])
            c = opt.clip_groups[0][1]
            norm = float(summed.double().norm())
            assert summed.dtype == torch.float64 and math.isfinite(norm)
            assert norm <= c, (mode, clip, float(row[0]), norm / c)


@settings(max_examples=60, deadline=None)
@given(st.floats(min_value=-38, max_value=38.5), st.integers(min_value=1, max_value=2000),
       st.sampled_from(["flat", "automatic", "per_group"]),
       st.floats(min_value=1e-4, max_value=1e4))
def test_float32_rows_of_any_scale_are_at_most_c(exponent, n, mode, clip):
    g = torch.Generator().manual_seed(n)
    row = (torch.randn(n, generator=g, dtype=torch.float64) * 10.0 ** exponent).clamp(
        -3.4e38, 3.4e38).to(torch.float32)
    opt, params = _float32_optimizer(mode, n, clip)
    [(summed, *_rest)] = _clipped_rows(opt, params, [row])
    assert float(summed.double().norm()) <= opt.clip_groups[0][1]


# ------------------------------------------------------------------------------------------
# 5. BatchMemoryManager, any loop shape: no release holds rows of another logical batch
# ------------------------------------------------------------------------------------------


def _bmm_private(n=24, batch_size=12, seed=3):
    """A linear model whose per-example gradient is its input (loss w·x): releases are exact
    sums of inputs; noise draws set to 0 (white-box), clip far above every gradient."""
    torch.manual_seed(0)
    lin = torch.nn.Linear(2, 1, bias=False).double()
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=torch.float64) + 0.5
    data = torch.utils.data.TensorDataset(x, torch.arange(n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = qs.make_private(
            lin, torch.optim.SGD(lin.parameters(), lr=1.0),
            torch.utils.data.DataLoader(data, batch_size=batch_size), target_epsilon=8.0,
            target_delta=1e-5, epochs=20, seed=seed, max_grad_norm=1e6, accountant="rdp")
    opt._standard_normal = lambda k: torch.zeros(k, dtype=torch.float64)
    return model, opt, loader, x, lin


def _bmm_run(model, opt, loader, x, lin, shape, logical_batches=4):
    """Run BatchMemoryManager loops (physical batches of 2) in the given loop ``shape``; return
    [(released sum, the example indices of the logical batch it belongs to)] for every
    release, and whether it was whole."""
    releases, current = [], []

    def physical(xb, idx):
        before = lin.weight.detach().clone()
        opt.zero_grad()
        model(xb).mean().backward()  # Opacus's loss_reduction="mean"
        opt.step()
        if not opt._is_last_step_skipped:
            released = (before - lin.weight.detach()).reshape(-1) * opt.expected_batch_size
            releases.append((released, list(current)))
            current.clear()

    def loop(stop_after=None, skip=None, fail=None):
        seen = 0
        with BatchMemoryManager(data_loader=loader, max_physical_batch_size=2,
                                optimizer=opt) as memory:
            for _epoch in range(10 * logical_batches):
                for xb, idx in memory:
                    seen += 1
                    current.extend(idx.tolist())
                    if fail is not None and seen == fail:
                        raise RuntimeError("a failure mid-logical-batch")
                    if skip is not None and seen == skip:
                        continue
                    physical(xb, idx)
                    if stop_after is not None and seen == stop_after:
                        return
                    if len(releases) >= logical_batches:
                        return

    if shape == "break":
        loop(stop_after=3)
        current.clear()  # the abandoned batch's rows were never released
        loop()
    elif shape == "exception":
        with pytest.raises(RuntimeError, match="mid-logical-batch"):
            loop(fail=3)
        current.clear()
        loop()
    elif shape == "continue":
        loop(skip=2)
    else:
        loop()
    return releases


@pytest.mark.parametrize("shape", ["normal", "break", "continue", "exception"])
def test_batch_memory_manager_releases_hold_one_logical_batch_only(shape):
    model, opt, loader, x, lin = _bmm_private()
    releases = _bmm_run(model, opt, loader, x, lin, shape)
    assert len(releases) >= 4  # training went on
    assert opt.ledger.steps == len(releases)  # every release charged, nothing else
    skipped_one = shape == "continue"
    for k, (released, members) in enumerate(releases):
        expected = x[members].sum(0) if members else torch.zeros(2, dtype=torch.float64)
        if skipped_one and k == 0:
            # the loop stepped the logical batch without one physical batch: its rows are
            # discarded and the step adds the noise alone (here 0)
            expected = torch.zeros(2, dtype=torch.float64)
        torch.testing.assert_close(released, expected, atol=1e-9, rtol=0)


@pytest.mark.parametrize("seed", range(8))
def test_a_break_never_leaks_rows_into_the_next_release_whatever_the_batches(seed):
    model, opt, loader, x, lin = _bmm_private(seed=seed)
    for released, members in _bmm_run(model, opt, loader, x, lin, "break", logical_batches=3):
        expected = x[members].sum(0) if members else torch.zeros(2, dtype=torch.float64)
        torch.testing.assert_close(released, expected, atol=1e-9, rtol=0)


def test_batch_memory_manager_over_worker_processes_is_refused():
    lin = torch.nn.Linear(2, 1).double()
    data = torch.utils.data.TensorDataset(torch.rand(20, 2, dtype=torch.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, loader = qs.make_private(
            lin, torch.optim.SGD(lin.parameters(), lr=1.0),
            torch.utils.data.DataLoader(data, batch_size=5, num_workers=1),
            target_epsilon=4.0, target_delta=1e-5, epochs=1, seed=0, max_grad_norm=1.0)
    opt.attach_loader(loader)
    with pytest.raises(ValueError, match="num_workers=1"):
        opt.signal_skip_step(True)


# ------------------------------------------------------------------------------------------
# 6. tied weights: the sum of every use's per-example contribution, = backprop one at a time
# ------------------------------------------------------------------------------------------


class _Tied(torch.nn.Module):
    """Two product TorchLayers sharing one weight (``q2.weights = q1.weights``), the first
    called twice, and a classical head."""

    def __init__(self):
        super().__init__()
        self.q1 = _layer()
        self.q2 = _layer(seed=1)
        self.q2.weights = self.q1.weights
        self.head = torch.nn.Linear(1, 1).double()

    def forward(self, x):
        inner = self.q1(x) + 0.5 * self.q2(0.7 * x) + self.q1(torch.flip(x, dims=[-1]))
        return self.head(inner.reshape(-1, 1)).reshape(-1)


def _backprop_per_example(model, x):
    """The reference: the same function written with one backprop QNode and the same shared
    weight (PennyLane's own TorchLayer ignores a reassigned weight, so it cannot serve)."""
    qnode = qml.QNode(_circuit, qml.device("default.qubit", wires=2), interface="torch",
                      diff_method="backprop")
    w = model.q1.weights.detach().clone().requires_grad_(True)
    head_w = model.head.weight.detach().clone().requires_grad_(True)
    head_b = model.head.bias.detach().clone().requires_grad_(True)
    per = []
    for j in range(len(x)):
        xj = x[j]
        inner = qnode(xj, w) + 0.5 * qnode(0.7 * xj, w) + qnode(torch.flip(xj, dims=[-1]), w)
        out = inner * head_w[0, 0] + head_b[0]
        gw, ghw, ghb = torch.autograd.grad(out, [w, head_w, head_b])
        per.append({"q1.weights": gw, "head.weight": ghw, "head.bias": ghb})
    return per


def test_tied_weights_get_the_sum_of_their_per_example_contributions():
    model = _Tied()
    assert [n for n, _ in model.named_parameters()] == ["q1.weights", "head.weight",
                                                         "head.bias"]
    assert model.q2.qnode_weights["weights"] is model.q1.weights
    x = _loader(5).dataset.tensors[0]
    gsm = GradSampleModule(model, loss_reduction="sum")
    gsm(x).sum().backward()
    expected = _backprop_per_example(model, x)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad_sample, torch.stack([e[name] for e in expected]),
                                   atol=1e-10, rtol=0, msg=name)


@pytest.mark.parametrize("route", ["make_private", "PrivacyEngine"])
def test_tied_weights_train_through_both_engines(route):
    model = _Tied()
    loader = _loader(12, batch_size=6)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if route == "make_private":
            pm, popt, dl = qs.make_private(model, opt, loader, target_epsilon=4.0,
                                           target_delta=1e-5, epochs=1, seed=0,
                                           max_grad_norm=1e6)
        else:
            pm, popt, dl = qs.PrivacyEngine().make_private(
                module=model, optimizer=opt, data_loader=loader, noise_multiplier=1e-12,
                max_grad_norm=1e6, poisson_sampling=False)
    popt._standard_normal = lambda k: torch.zeros(k, dtype=torch.float64)
    xb, _ = next(iter(dl))
    before = [p.detach().clone() for p in model.parameters()]
    expected = _backprop_per_example(model, xb)
    popt.zero_grad()
    pm(xb).mean().backward()  # loss_reduction="mean": the per-example gradients of the sum
    popt.step()
    for (name, p), b in zip(model.named_parameters(), before, strict=True):
        summed = torch.stack([e[name] for e in expected]).sum(0) if len(xb) else 0 * b
        torch.testing.assert_close((b - p.detach()) / 0.1 * popt.expected_batch_size, summed,
                                   atol=1e-9, rtol=0, msg=name)


# ------------------------------------------------------------------------------------------
# 7. make_private's checks run no circuit on a device that bills
# ------------------------------------------------------------------------------------------


class _BilledQubit(qml.devices.DefaultQubit):
    """default.qubit under another name (a stand-in for hardware), counting its circuits."""

    executed = 0

    @property
    def name(self):
        return "test.billed"

    def execute(self, circuits, execution_config=None):
        batch = circuits if isinstance(circuits, (list, tuple)) else [circuits]
        type(self).executed += len(batch)
        return super().execute(circuits, execution_config)


@pytest.mark.parametrize("hybrid", [False, True])
def test_make_private_checks_run_no_circuit_on_a_billed_device(hybrid):
    _BilledQubit.executed = 0
    qnode = qml.set_shots(qml.QNode(_circuit, _BilledQubit(wires=2, seed=1),
                                    interface="torch", diff_method=qs.param_shift), shots=100)
    torch.manual_seed(0)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)}).double()
    model = (torch.nn.Sequential(torch.nn.Linear(2, 2).double(), layer) if hybrid else layer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pm, opt, loader = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                          _loader(20), target_epsilon=2.0, target_delta=1e-5,
                                          epochs=1, seed=0, criterion=torch.nn.MSELoss())
    assert _BilledQubit.executed == 0
    assert layer.qnode.device.name == "test.billed"
    assert "twin of ['test.billed']" in opt.ledger.statement().replace("\n", " ")
    x, _ = next(iter(loader))
    opt.zero_grad()
    pm(x).sum().backward()
    opt.step()
    assert _BilledQubit.executed > 0  # training itself runs on the user's device
