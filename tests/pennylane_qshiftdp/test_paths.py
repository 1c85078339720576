"""Issue 21: the guarantee on every path an Opacus user takes.

Accumulation, repeated backward passes, replace-one adjacency, non-finite values, losses that
couple examples, the adaptive count, ``strict``, modules, a loader's own sampler, resume, noise
schedulers and secure noise. "White box": the same noise seed in both neighbouring worlds (one
step at q = 1, the audit's setting), so the release difference is exactly the difference of the
clipped sums and can be compared with the sensitivity the noise is calibrated for.
"""

import math
import re
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from opacus import GradSampleModule
from opacus.schedulers import ExponentialNoise
from opacus.validators import ModuleValidator

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.losses import LinearLoss
from pennylane_qshiftdp.optimizers import optimizer as qopt
from pennylane_qshiftdp.optimizers import secure_noise
from pennylane_qshiftdp.privacy_engine import check_per_example_loss

EPS, DELTA = 1.99, 1e-5  # the audit's setting: one step at q = 1
RTOL = 1e-9  # float rounding of a clipped sum of a handful of terms is far below this


# ------------------------------------------------------------------------------ models and data
def _circuit(inputs, weights):
    qml.RY(inputs[..., 0], wires=0)
    qml.RX(weights[0], wires=0)
    qml.RY(weights[1], wires=0)
    return qml.expval(qml.Z(0))


def _qlayer(seed=3):
    """One-qubit TorchLayer (Δ = √2 for the linear loss: two weights, Ω = 1, range 2)."""
    qnode = qml.QNode(_circuit, qml.device("default.qubit"), interface="torch",
                      diff_method=qs.param_shift)
    torch.manual_seed(seed)
    return qml.qnn.TorchLayer(qnode, {"weights": (2,)}).double()


class _Squeeze(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).reshape(-1)


def _classical(seed=0):
    torch.manual_seed(seed)
    return _Squeeze(torch.nn.Linear(1, 1, bias=False).double())


def _hybrid(seed=0):
    """Linear -> TorchLayer: classical parameters before the quantum layer (covered by Δ)."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(1, 1).double(), _qlayer(seed + 1))


def _world(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 1, generator=g, dtype=torch.float64) * 2 + 0.3
    y = torch.where(torch.rand(n, generator=g) > 0.5, 1.0, -1.0).double()
    return x, y


def _data(x, y):
    return torch.utils.data.TensorDataset(x, y)


def _steep(out, y):
    """A linear loss 100× steeper than declared: every clip binds (mean-reduced)."""
    return (-100.0 * out.reshape(-1) * y).mean()


def _release(make_model, x, y, *, loss_fn=_steep, backward=None, batch_size=None, **kw):
    """One private step at q = 1 through make_private: (release, optimizer, step warnings).

    The release is the clipped noisy sum (parameter change × qN with SGD at lr = 1). The
    loader's batch size (the public divisor b) is ``len(x)`` unless given: neighbouring worlds
    compared on everything the run prints must share it.
    """
    model0 = make_model()
    params = [p for p in model0.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params]
    kw = {"target_epsilon": EPS, "target_delta": DELTA, "epochs": 1, "seed": 0, **kw}
    loader = torch.utils.data.DataLoader(_data(x, y), batch_size=batch_size or len(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, dl = qs.make_private(model0, torch.optim.SGD(params, lr=1.0), loader, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for xb, yb in dl:
            opt.zero_grad()
            if backward is None:
                loss_fn(model(xb), yb).backward()
            else:
                backward(model, xb, yb)
            opt.step()
    qn = opt.expected_batch_size
    rel = torch.cat([((b - p.detach()).double() * qn).reshape(-1)
                     for b, p in zip(before, params, strict=True)])
    return rel, opt, [str(w.message) for w in caught]


def _add(x, y, cx, cy):
    return torch.cat([x, torch.tensor([[cx]], dtype=x.dtype)]), torch.cat(
        [y, torch.tensor([cy], dtype=y.dtype)])


# ------------------------------------------------ 1. accumulation, repeated backward
def _poisson(make_model, n=12, batch=4, **kw):
    x, y = _world(n)
    model0 = make_model()
    params = [p for p in model0.parameters() if p.requires_grad]
    kw = {"target_epsilon": 2.0, "target_delta": DELTA, "epochs": 2, "seed": 1, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, dl = qs.make_private(model0, torch.optim.SGD(params, lr=1.0),
                                         torch.utils.data.DataLoader(_data(x, y), batch_size=batch),
                                         **kw)
    return model, opt, dl, params


_KINDS = {"quantum": (_qlayer, {"loss": LinearLoss()}),
          "classical": (_classical, {"max_grad_norm": 1.0})}
# The refusal of a second backward pass: the quantum layer's grad sampler, Opacus's own check.
_SECOND_BACKWARD = {"quantum": "A second backward pass through a quantum layer before "
                               "optimizer.step()",
                    "classical": "Poisson sampling is not compatible with grad accumulation"}


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_two_poisson_batches_before_one_step_are_refused(kind):
    make, kw = _KINDS[kind]
    model, opt, dl, params = _poisson(make, **kw)
    before = [p.detach().clone() for p in params]
    it = iter(dl)
    opt.zero_grad()
    x1, y1 = next(it)
    _steep(model(x1), y1).backward()
    x2, y2 = next(it)
    with pytest.raises(ValueError, match=re.escape(_SECOND_BACKWARD[kind])):
        _steep(model(x2), y2).backward()
        opt.step()
    assert opt.ledger.steps == 0
    assert all(torch.equal(b, p.detach()) for b, p in zip(before, params, strict=True))


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_two_poisson_batches_in_one_backward_are_refused(kind):
    make, kw = _KINDS[kind]
    model, opt, dl, params = _poisson(make, **kw)
    before = [p.detach().clone() for p in params]
    it = iter(dl)
    (x1, y1), (x2, y2) = next(it), next(it)
    opt.zero_grad()
    _steep(model(torch.cat([x1, x2])), torch.cat([y1, y2])).backward()
    with pytest.raises(ValueError,
                       match=re.escape("not those of the oldest batch drawn from the Poisson")):
        opt.step()
    assert opt.ledger.steps == 0
    assert all(torch.equal(b, p.detach()) for b, p in zip(before, params, strict=True))


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_main_and_auxiliary_loss_backpropagated_separately_are_refused(kind):
    make, kw = _KINDS[kind]
    model, opt, dl, params = _poisson(make, **kw)
    x, y = next(iter(dl))
    opt.zero_grad()
    _steep(model(x), y).backward()  # main loss
    with pytest.raises(ValueError, match=re.escape(_SECOND_BACKWARD[kind])):
        (model(x) ** 2).mean().backward()  # auxiliary loss, second backward pass
        opt.step()
    assert opt.ledger.steps == 0


def test_optimizer_refuses_a_list_of_grad_samples_before_any_change():
    """Without Opacus's forbid flag (a hand-built GradSampleModule), step() still refuses."""
    torch.manual_seed(0)
    model = GradSampleModule(torch.nn.Linear(2, 1, bias=False).double())
    opt = qs.QShiftDPOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                               noise_multiplier=1.0, max_grad_norm=1.0, expected_batch_size=2,
                               generator=torch.Generator().manual_seed(0))
    w0 = model._module.weight.detach().clone()
    x = torch.ones(2, 2, dtype=torch.float64)
    opt.zero_grad()
    model(x).sum().backward()
    model(x).sum().backward()
    assert isinstance(model._module.weight.grad_sample, list)
    with pytest.raises(ValueError, match=re.escape("after 2 backward passes")):
        opt.step()
    assert torch.equal(w0, model._module.weight.detach())


@pytest.mark.parametrize("kind", ["quantum", "classical"])
def test_main_plus_auxiliary_loss_in_one_backward_has_sensitivity_c(kind):
    """White box: D' = D + a canary; (main + aux).backward(): the canary moves the sum by ≤ C."""
    make, kw = _KINDS[kind]
    x, y = _world()

    def both(model, xb, yb):
        out = model(xb)
        (_steep(out, yb) + 50.0 * (out**2).mean()).backward()

    rel, opt, _ = _release(make, x, y, backward=both, **kw)
    rel2, opt2, _ = _release(make, *_add(x, y, 1.1, -1.0), backward=both, **kw)
    c = opt.max_grad_norm
    moved = float((rel2 - rel).norm())
    assert moved <= c * (1 + RTOL)
    assert moved == pytest.approx(c, rel=1e-6)  # the canary's clipped gradient, exactly C
    assert opt.last_record["noise_std"] == pytest.approx(opt.noise_multiplier * c, rel=1e-12)


# ------------------------------------------------------------------ 2. replace-one
_REPLACE_MODES = {
    "fixed": (_classical, {"max_grad_norm": 0.5}),
    "fixed_quantum": (_qlayer, {"max_grad_norm": 0.5}),
    "public": (_qlayer, {"max_grad_norm": "public", "input_range": (0.0, math.pi)}),
    "adaptive": (_qlayer, {"max_grad_norm": "adaptive"}),
    "certified": (_qlayer, {"loss": LinearLoss()}),
    "classical_groups": (_hybrid, {"loss": LinearLoss(), "classical_max_grad_norm": 0.1}),
}


@pytest.mark.parametrize("mode", sorted(_REPLACE_MODES))
def test_replace_one_noise_follows_the_doubled_sensitivity(mode):
    """White box: replacing the last example by its label-flipped copy moves the clipped sum by
    exactly 2C (both clipped, opposite directions); the noise is σ·2C in every clip mode."""
    make, kw = _REPLACE_MODES[mode]
    x, y = _world()
    y2 = y.clone()
    y2[-1] = -y2[-1]
    rel, opt, _ = _release(make, x, y, adjacency="replace_one", **kw)
    rel2, _, _ = _release(make, x, y2, adjacency="replace_one", **kw)
    clip = opt.last_record["clip_norm"]
    sens = opt.ledger.sensitivity
    assert sens == pytest.approx(2 * clip, rel=1e-12)
    assert opt.last_record["noise_std"] == pytest.approx(
        (opt.adaptive_clipping["gradient_noise_multiplier"] if mode == "adaptive"
         else opt.noise_multiplier) * sens, rel=1e-12)
    moved = float((rel2 - rel).norm())
    assert moved <= sens * (1 + RTOL)
    assert moved / sens > 0.99  # the worst case is reached: the test has power


def test_replace_one_adaptive_count_noise_is_doubled():
    x, y = _world()
    _, opt, _ = _release(_qlayer, x, y, adjacency="replace_one", max_grad_norm="adaptive")
    _, opt1, _ = _release(_qlayer, x, y, max_grad_norm="adaptive")
    gen = torch.Generator().manual_seed(0)
    torch.randn(2, generator=gen, dtype=torch.float64)
    z = float(torch.randn(1, generator=gen, dtype=torch.float64)[0])
    sigma_b = opt.adaptive_clipping["unclipped_num_std"]
    centred = opt.last_record["released_centred_unclipped_count"]
    centred1 = opt1.last_record["released_centred_unclipped_count"]
    assert centred - centred1 == pytest.approx(sigma_b * z, rel=1e-9)  # 2σ_b z vs σ_b z


def _hand_step(rows, *, clip, adjacency, groups=False, seed=0):
    """One QShiftDPOptimizer step on per-example gradients set by hand: (release, optimizer)."""
    a = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    b = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    clip_groups = [([a], clip), ([b], 0.5 * clip)] if groups else None
    opt = qs.QShiftDPOptimizer(torch.optim.SGD([a, b], lr=1.0), noise_multiplier=1.3,
                               max_grad_norm=clip, expected_batch_size=1.0,
                               clip_groups=clip_groups, adjacency=adjacency,
                               loss_reduction="sum", generator=torch.Generator().manual_seed(seed))
    g = torch.as_tensor(rows, dtype=torch.float64).reshape(-1, 3)
    a.grad_sample, b.grad_sample = g[:, :2].clone(), g[:, 2:].clone()
    opt.step()
    return -torch.cat([a.detach(), b.detach()]), opt


_finite = st.floats(-1e3, 1e3, allow_nan=False)
_any = st.one_of(_finite, st.sampled_from([float("nan"), float("inf"), -float("inf")]))


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.lists(_any, min_size=3, max_size=3), min_size=1, max_size=6),
       new=st.lists(_any, min_size=3, max_size=3), clip=st.floats(0.01, 10.0),
       adjacency=st.sampled_from(["add_remove", "replace_one"]), groups=st.booleans())
def test_property_one_example_moves_the_release_by_at_most_the_calibrated_sensitivity(
        rows, new, clip, adjacency, groups):
    """For any per-example gradients (NaN and inf included), the same noise seed, and the
    neighbour of the adjacency (last row removed, or replaced by ``new``): the release moves by
    at most the sensitivity s·C the noise σ·s·C is calibrated for, and is always finite."""
    rel, opt = _hand_step(rows, clip=clip, adjacency=adjacency, groups=groups)
    other = rows[:-1] + [new] if adjacency == "replace_one" else rows[:-1]
    rel2, _ = _hand_step(other if other else np.zeros((0, 3)), clip=clip, adjacency=adjacency,
                         groups=groups)
    c = opt.max_grad_norm
    sens = opt.ledger.sensitivity if opt.ledger else opt.last_record["sensitivity"]
    assert sens == pytest.approx((2.0 if adjacency == "replace_one" else 1.0) * c, rel=1e-12)
    assert opt.last_record["noise_std"] == pytest.approx(1.3 * sens, rel=1e-12)
    assert torch.isfinite(rel).all() and torch.isfinite(rel2).all()
    assert float((rel - rel2).norm()) <= sens * (1 + 1e-6)


# ------------------------------------------------------------------ 3. non-finite values
_BAD = {
    "quantum_x_nan": (_qlayer, {"loss": LinearLoss()}, float("nan"), 1.0),
    "quantum_label_inf": (_qlayer, {"loss": LinearLoss()}, 1.0, float("inf")),
    "classical_x_nan": (_classical, {"max_grad_norm": 1.0}, float("nan"), 1.0),
    "classical_label_inf": (_classical, {"max_grad_norm": 1.0}, 1.0, float("inf")),
}


@pytest.mark.parametrize("case", sorted(_BAD))
def test_a_non_finite_example_contributes_zero_and_nothing_depends_on_it(case):
    make, kw, bx, by = _BAD[case]
    x, y = _world()
    b = len(x) + 1  # one public batch size for both worlds (q = 1 in both)
    rel, opt, caught = _release(make, x, y, batch_size=b, **kw)
    rel2, opt2, caught2 = _release(make, *_add(x, y, bx, by), batch_size=b, **kw)
    assert torch.isfinite(rel2).all()
    assert torch.allclose(rel2, rel, rtol=0, atol=1e-12)  # the bad example adds exactly 0
    assert all(torch.isfinite(p).all() for p in opt2.params)
    assert caught2 == caught  # no warning fires only in the world holding the bad example
    assert opt2.last_record["nonfinite_examples"] == 1  # a diagnostic, not protected
    assert opt.last_record["nonfinite_examples"] == 0
    assert "nonfinite_examples" not in qopt.PUBLIC_RECORD_KEYS
    assert "nonfinite_examples" not in opt2.state_dict()["history"][0]


# ------------------------------------------------------------------ 4. losses that couple examples
def _batch_softmax(out, y):
    return -(torch.log_softmax(out.reshape(-1), dim=0) * y.reshape(-1)).sum()


def _standardised_labels(out, y):
    z = (y - y.mean()) / (y.std() + 1e-9)
    return ((out.reshape(-1) - z) ** 2).mean()


def _max_loss(out, y):
    return ((out.reshape(-1) - y) ** 2).max()


@pytest.mark.parametrize("criterion", [_batch_softmax, _standardised_labels, _max_loss])
def test_a_loss_that_couples_examples_is_refused(criterion):
    with pytest.raises(ValueError, match="The loss couples examples"):
        check_per_example_loss(criterion, (), torch.tensor(0.5, dtype=torch.float64))
    layer = _qlayer()
    x, y = _world()
    with pytest.raises(ValueError, match="The loss couples examples"):
        qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=1.0),
                        torch.utils.data.DataLoader(_data(x, y), batch_size=2),
                        target_epsilon=1.0, target_delta=DELTA, epochs=1, seed=0,
                        loss=LinearLoss(), criterion=criterion)


@pytest.mark.parametrize("criterion, shape, target", [
    (torch.nn.MSELoss(), (), torch.tensor(0.5, dtype=torch.float64)),
    (torch.nn.MSELoss(reduction="sum"), (1,), torch.tensor([0.5], dtype=torch.float64)),
    (torch.nn.CrossEntropyLoss(), (3,), torch.tensor(1)),
    (lambda out, y: (-out * y).mean(), (), torch.tensor(1.0, dtype=torch.float64)),
])
def test_per_example_losses_pass_the_probe(criterion, shape, target):
    check_per_example_loss(criterion, shape, target)


def test_the_loss_requirement_is_documented():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    assert "Any loss works" not in readme
    assert "sum or mean of per-example" in readme
    assert "sum or a mean of per-example terms" in qs.make_private.__doc__
    assert "sum or mean of per-example" in (root / "docs" / "engine.md").read_text()


# ------------------------------------------------------------------ 5. adaptive clipping
@pytest.mark.parametrize("canary_x, sigma_b_factor", [(1.1, None), (1.1, 0.51), (1e-9, 0.51)])
def test_adaptive_count_and_gradient_together_have_the_accounted_sensitivity(canary_x,
                                                                            sigma_b_factor):
    """White box, add/remove: the canary moves the released centred count by exactly 1/2 and
    the gradient sum by ≤ C; normalised by their noise stds the joint move is ≤ 1/σ (Andrew et
    al., Thm. 1), also at a user σ_b = 0.51σ."""
    x, y = _world()
    kw = {"max_grad_norm": "adaptive"}
    _, probe, _ = _release(_qlayer, x, y, **kw)
    if sigma_b_factor is not None:
        kw["adaptive_clipping"] = {"unclipped_num_std": sigma_b_factor * probe.noise_multiplier}
    rel, opt, _ = _release(_qlayer, x, y, **kw)
    rel2, opt2, _ = _release(_qlayer, *_add(x, y, canary_x, 1.0), **kw)
    dcount = (opt2.last_record["released_centred_unclipped_count"]
              - opt.last_record["released_centred_unclipped_count"])
    assert abs(dcount) == pytest.approx(0.5, abs=1e-9)
    sigma_b = opt.adaptive_clipping["unclipped_num_std"]
    joint = math.hypot(float((rel2 - rel).norm()) / opt.last_record["noise_std"],
                       dcount / sigma_b)
    assert joint <= (1 + RTOL) / opt.noise_multiplier


def test_adaptive_count_noise_below_the_theorem_is_refused():
    x, y = _world()
    _, probe, _ = _release(_qlayer, x, y, max_grad_norm="adaptive")
    sigma = probe.noise_multiplier
    with pytest.raises(ValueError, match=re.escape("needs 2·unclipped_num_std > noise_multiplier")):
        _release(_qlayer, x, y, max_grad_norm="adaptive",
                 adaptive_clipping={"unclipped_num_std": 0.49 * sigma})


# ------------------------------------------------------------------ 6. strict and coverage
def _after(seed=0):
    """TorchLayer -> Linear: a trainable layer after the quantum layer (not covered by Δ)."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(_qlayer(seed + 1), torch.nn.Linear(1, 1).double())


@pytest.mark.parametrize("make, kw, match", [
    (_after, {"loss": LinearLoss(), "classical_max_grad_norm": 1.0}, "run after the TorchLayer"),
    (_qlayer, {}, "no `loss` was declared"),
])
def test_uncovered_certified_model_warns_and_strict_refuses_whatever_the_data(make, kw, match):
    x, y = _world()
    worlds = [(x, y), _add(x, y, float("nan"), 50.0)]  # with and without an offending example
    for wx, wy in worlds:
        model = make()
        loader = torch.utils.data.DataLoader(_data(wx, wy), batch_size=2)
        with pytest.warns(qs.PrivacyWarning, match=match):  # the certified clip, asked for
            qs.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), loader,
                            target_epsilon=1.0, target_delta=DELTA, epochs=1, seed=0,
                            **{"max_grad_norm": "certified", **kw})
        model = make()  # strict=True makes the certified clip the default, and refuses
        with pytest.raises(qs.SensitivityError, match=match):
            qs.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), loader,
                            target_epsilon=1.0, target_delta=DELTA, epochs=1, seed=0,
                            strict=True, **kw)


def test_strict_accepts_a_covered_model_in_both_worlds_and_steps_without_raising():
    x, y = _world()
    for wx, wy in [(x, y), _add(x, y, 1.1, -1.0)]:
        rel, opt, caught = _release(_qlayer, wx, wy, loss=LinearLoss(), strict=True)
        assert torch.isfinite(rel).all() and opt.ledger.steps == 1
        assert opt.last_record["certified_bound_violations"] == len(wx)  # 100× steeper loss
        assert opt.ledger.extra["certified_coverage"].startswith("covered")


# ------------------------------------------------------------------ 7. modules
def test_batchnorm_is_refused_with_the_fixer_named_and_the_fix_is_accepted():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1, 2).double(), torch.nn.BatchNorm1d(2).double(),
                                torch.nn.Linear(2, 1).double(), torch.nn.Flatten(0))
    x, y = _world()
    loader = torch.utils.data.DataLoader(_data(x, y), batch_size=2)
    with pytest.raises(qs.SensitivityError, match=re.escape("ModuleValidator.fix(module)")):
        qs.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), loader,
                        target_epsilon=1.0, target_delta=DELTA, epochs=1, max_grad_norm=1.0)
    fixed = ModuleValidator.fix(model)
    _, opt, _ = qs.make_private(fixed, torch.optim.SGD(fixed.parameters(), lr=1.0), loader,
                                target_epsilon=1.0, target_delta=DELTA, epochs=1,
                                max_grad_norm=1.0)
    assert opt.ledger.dataset_size == len(x)


# ------------------------------------------------------------------ 8. a loader's own sampler
def test_subset_random_sampler_is_respected():
    n = 20
    x = torch.arange(n, dtype=torch.float64).reshape(n, 1)
    y = torch.ones(n, dtype=torch.float64)
    subset = list(range(0, n, 2))
    loader = torch.utils.data.DataLoader(
        _data(x, y), batch_size=5, sampler=torch.utils.data.SubsetRandomSampler(subset))
    model = _classical()
    model, opt, dl = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                                     target_epsilon=2.0, target_delta=DELTA, epochs=4,
                                     max_grad_norm=1.0, seed=0)
    assert opt.ledger.dataset_size == 10
    assert opt.ledger.sample_rate == pytest.approx(1 / 2)  # len(loader) = ⌈10/5⌉
    assert opt.expected_batch_size == pytest.approx(5.0)
    seen = torch.cat([xb.reshape(-1) for _ in range(4) for xb, _ in dl])
    assert set(seen.long().tolist()) <= set(subset)
    assert len(set(seen.long().tolist())) == 10
    assert "SubsetRandomSampler" in opt.ledger.extra["sampling_subset"]


@pytest.mark.parametrize("sampler_kw", [
    {"sampler": torch.utils.data.WeightedRandomSampler([1.0] * 20, 20)},
    {"sampler": torch.utils.data.RandomSampler(range(20), replacement=True)},
    {"batch_sampler": torch.utils.data.BatchSampler(
        torch.utils.data.SubsetRandomSampler(range(10)), 5, drop_last=False)},
])
def test_other_samplers_are_refused(sampler_kw):
    x = torch.zeros(20, 1, dtype=torch.float64)
    loader = torch.utils.data.DataLoader(_data(x, torch.ones(20, dtype=torch.float64)),
                                         **({"batch_size": 5} if "sampler" in sampler_kw else {}),
                                         **sampler_kw)
    model = _classical()
    with pytest.raises(ValueError, match="its own (batch )?sampler"):
        qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                        target_epsilon=2.0, target_delta=DELTA, epochs=1, max_grad_norm=1.0)


# ------------------------------------------------------------------ 9. resume
_RESUME_MODES = {
    "fixed": (_qlayer, {"max_grad_norm": 0.3}),
    "public": (_qlayer, {"max_grad_norm": "public", "input_range": (0.0, math.pi)}),
    "adaptive": (_qlayer, {"max_grad_norm": "adaptive"}),
    "certified": (_qlayer, {"loss": LinearLoss()}),
    "classical_groups": (_hybrid, {"loss": LinearLoss(), "classical_max_grad_norm": 0.1}),
}


def _private_run(make, kw):
    x, y = _world(12, seed=4)
    model0 = make()
    params = [p for p in model0.parameters() if p.requires_grad]
    loader = torch.utils.data.DataLoader(_data(x, y), batch_size=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, dl = qs.make_private(model0, torch.optim.SGD(params, lr=0.5), loader,
                                         target_epsilon=4.0, target_delta=DELTA, epochs=3,
                                         seed=7, **kw)
    return model0, model, opt, dl


def _train(model, opt, batches):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for xb, yb in batches:
            opt.zero_grad()
            _steep(model(xb), yb).backward()
            opt.step()


@pytest.mark.parametrize("mode", sorted(_RESUME_MODES))
def test_resume_mid_epoch_is_bit_for_bit(mode):
    """3 steps per epoch; stop after step 4 (mid epoch 2), resume in fresh objects, finish 8
    steps: weights, clip norms and ε equal an uninterrupted run exactly (the public clip is
    refreshed after the resume, the adaptive one moves every step)."""
    make, kw = _RESUME_MODES[mode]
    _, _, _, dl = _private_run(make, kw)
    batches = [b for _ in range(3) for b in dl][:8]

    ref0, ref, ref_opt, _ = _private_run(make, kw)
    _train(ref, ref_opt, batches)

    a0, a, a_opt, _ = _private_run(make, kw)
    _train(a, a_opt, batches[:4])
    saved = {"model": {k: v.clone() for k, v in a0.state_dict().items()},
             "optimizer": a_opt.state_dict()}
    b0, b, b_opt, _ = _private_run(make, kw)
    b0.load_state_dict(saved["model"])
    b_opt.load_state_dict(saved["optimizer"])
    assert [c for _, c in b_opt.clip_groups] == [c for _, c in a_opt.clip_groups]
    assert b_opt.max_grad_norm == a_opt.max_grad_norm
    _train(b, b_opt, batches[4:])

    for k, v in ref0.state_dict().items():
        assert torch.equal(v, b0.state_dict()[k]), k
    assert b_opt.max_grad_norm == ref_opt.max_grad_norm
    assert [c for _, c in b_opt.clip_groups] == [c for _, c in ref_opt.clip_groups]
    assert b_opt.ledger.epsilon == ref_opt.ledger.epsilon
    assert b_opt.ledger.steps == 8
    assert len({r["clip_norm"] for r in ref_opt.history}) > (1 if mode in ("public", "adaptive")
                                                             else 0)


def test_resume_restores_the_per_group_clip_norms_the_noise_uses():
    """The issue's row: clipped at one norm, noised at another until the next refresh."""
    make, kw = _RESUME_MODES["public"]
    _, _, _, other = _private_run(make, kw)
    _, model, opt, _ = _private_run(make, kw)
    _train(model, opt, [b for _ in range(2) for b in other][:5])
    state = opt.state_dict()
    _, _, fresh, _ = _private_run(make, kw)
    assert fresh.clip_groups[0][1] != opt.clip_groups[0][1]
    fresh.load_state_dict(state)
    assert fresh.clip_groups[0][1] == fresh.max_grad_norm == opt.clip_groups[0][1]


def test_optimizer_state_holds_no_data_dependent_step_fields_by_default():
    make, kw = _RESUME_MODES["certified"]
    _, model, opt, dl = _private_run(make, kw)
    it = iter(dl)
    for _ in range(2):
        _train(model, opt, [next(it)])
    history = opt.state_dict()["history"]
    assert history and all(set(r) <= qopt.PUBLIC_RECORD_KEYS for r in history)
    for key in ("batch_examples", "clipped", "gradient_snr", "certified_bound_violations"):
        assert key not in history[0]
        assert key in opt.state_dict(diagnostics=True)["history"][0]


# ------------------------------------------------------------------ 10. noise schedulers
def test_exponential_noise_scheduler_stops_the_run_before_the_target():
    model = _classical()
    x, y = _world(40)
    loader = torch.utils.data.DataLoader(_data(x, y), batch_size=10)
    model, opt, dl = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                                     target_epsilon=4.0, target_delta=DELTA, epochs=20,
                                     max_grad_norm=1.0, seed=0)
    sched = ExponentialNoise(opt, gamma=0.5)
    set_sigmas = []
    with pytest.raises(qs.PrivacyBudgetExceededError, match="at noise_multiplier"):
        for _ in range(20):
            for xb, yb in dl:
                opt.zero_grad()
                _steep(model(xb), yb).backward()
                w = [p.detach().clone() for p in model.parameters()]
                set_sigmas.append(opt.noise_multiplier)
                opt.step()
                sched.step()
    # the failed step changed nothing and the spent ε is within the target
    assert all(torch.equal(a, p.detach()) for a, p in zip(w, model.parameters(), strict=True))
    assert opt.ledger.epsilon <= 4.0
    assert opt.ledger.epsilon_after(1, noise_multiplier=opt.noise_multiplier) > 4.0
    assert opt.ledger.steps == len(set_sigmas) - 1 < 20 * 4
    # the ledger composes the σ actually set, step by step
    recorded = [s for s, _, k in opt.ledger.history for _ in range(k)]
    assert recorded == set_sigmas[:-1]
    assert [s for s, _, k in opt.ledger.proven_history for _ in range(k)] == set_sigmas[:-1]


# ------------------------------------------------------------------ 11. secure noise
def test_secure_normal_sums_four_box_muller_draws(monkeypatch):
    """Holohan & Braghin arXiv:2107.10138 §5.1 (Opacus's secure_mode): (Z1+Z2+Z3+Z4)/2."""
    stream = np.random.default_rng(0).bytes(16 * 4 * 8)
    chunks = iter([stream])
    monkeypatch.setattr(secure_noise.os, "urandom", lambda k: next(chunks)[:k])
    got = secure_noise.secure_normal(8)
    chunks = iter([stream])
    draws = secure_noise._box_muller(32).reshape(4, 8)
    assert np.array_equal(got, draws.sum(axis=0) / 2.0)
    assert secure_noise.SECURE_NOISE_DRAWS == 4


def test_secure_normal_is_standard_normal():
    """20000 draws: mean and variance within 5 standard errors (failure probability < 1e-6)."""
    z = secure_noise.secure_normal(20000)
    se_mean, se_var = 1 / math.sqrt(20000), math.sqrt(2 / 20000)
    assert abs(z.mean()) < 5 * se_mean
    assert abs(z.var() - 1.0) < 5 * se_var


def _stray_forward_setup():
    torch.manual_seed(0)
    dev = qml.device("default.qubit", wires=2)

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)}).double()
    x = torch.rand(40, 2, dtype=torch.float64)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, torch.ones(40, dtype=torch.float64)), batch_size=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return x, *qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1), loader,
                                   target_epsilon=5.0, target_delta=1e-5, epochs=1,
                                   max_grad_norm=1.0, seed=0)


@pytest.mark.parametrize("stray", ["other_batch", "same_batch"])
def test_a_stray_forward_with_gradients_is_refused_not_a_noise_only_step(stray):
    """A forward pass with gradients enabled and no backward of its own (printing model(x) in
    the loop) leaves Opacus's per-example gradients of the next backward unpromoted: Opacus
    refuses the step, and so does the optimizer (before: a silent noise-only step, ε charged)."""
    x, model, opt, loader = _stray_forward_setup()
    xb, yb = next(iter(loader))
    model(x[:3] if stray == "other_batch" else xb)  # the stray forward
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(xb), yb).backward()
    steps = opt.ledger.steps
    with pytest.raises(ValueError, match=re.escape("Run such forward passes under "
                                                   "torch.no_grad() or in model.eval()")):
        opt.step()
    assert opt.ledger.steps == steps  # nothing charged


@pytest.mark.parametrize("quiet", ["no_grad", "eval"])
def test_forward_passes_without_gradients_or_in_eval_mode_are_fine(quiet):
    x, model, opt, loader = _stray_forward_setup()
    xb, yb = next(iter(loader))
    if quiet == "no_grad":
        with torch.no_grad():
            model(x[:3])
    else:
        model.eval()
        model(x[:3])
        model.train()
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(xb), yb).backward()
    opt.step()
    assert opt.last_record["batch_examples"] == len(xb)


# ------------------------------------------------ issue 32: Opacus's engine, buffers, batches
def _hybrid2(seed=0):
    """Linear(2 -> 1) -> the one-qubit TorchLayer, in Opacus's own PrivacyEngine."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(2, 1).double(), _qlayer(seed + 1))


def test_empty_poisson_batches_through_a_hybrid_in_opacus_privacy_engine():
    """An empty batch reaches the classical layer before the quantum layer (its gradient is
    an empty per-example gradient), so the product's PrivacyEngine (Opacus's, public divisor)
    steps with noise only (before the fix: "Per sample gradient is not initialized")."""
    from pennylane_qshiftdp import PrivacyEngine

    model = _hybrid2()
    data = _data(torch.rand(20, 2, dtype=torch.float64), torch.ones(20, dtype=torch.float64))
    loader = torch.utils.data.DataLoader(data, batch_size=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m, o, _ = PrivacyEngine(accountant="rdp").make_private(
            module=qs.qnn.convert_torch_layers(model), optimizer=opt, data_loader=loader,
            noise_multiplier=1.0, max_grad_norm=1.0)
    before = [p.detach().clone() for p in model.parameters()]
    for _ in range(2):
        o.zero_grad()
        out = m(torch.zeros(0, 2, dtype=torch.float64))
        assert out.shape == (0,)
        out.sum().backward()
        o.step()
    moved = [not torch.equal(b, p.detach()) for b, p in zip(before, model.parameters(),
                                                              strict=True)]
    assert all(moved)  # noise on every parameter, classical ones included


def _two_weight_layer(seed=0):
    def circuit(inputs, w1, w2):
        qml.RY(inputs[..., 0], wires=0)
        qml.RX(w1[0], wires=0)
        qml.RY(w2[0], wires=0)
        return qml.expval(qml.Z(0))

    torch.manual_seed(seed)
    qnode = qml.QNode(circuit, qml.device("default.qubit"), diff_method=qs.param_shift)
    return qml.qnn.TorchLayer(qnode, {"w1": (1,), "w2": (1,)}).double()


@pytest.mark.parametrize("when", ["between_steps", "after_backward"])
def test_freezing_and_unfreezing_a_weight_mid_training(when):
    """opacus#409/#542: a weight frozen between steps (or after a backward pass, before the
    step) and unfrozen later. Each step clips exactly that step's per-example gradients of
    the trainable weights (checked against the per-example gradients the step's backward
    produced); the frozen weight does not move (before the fix: refused as "a second
    backward pass", or a KeyError in the clip; and a weight frozen after the backward pass
    was stepped with its plain, unclipped and noiseless gradient)."""
    layer = _two_weight_layer()
    x, y = _world(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, dl = qs.make_private(
            layer, torch.optim.SGD(layer.parameters(), lr=1.0),
            torch.utils.data.DataLoader(_data(x, y), batch_size=4), target_epsilon=2.0,
            target_delta=DELTA, epochs=3, max_grad_norm=0.3, seed=0)
    opt._standard_normal = lambda n: torch.zeros(n, dtype=torch.float64)  # pre-noise sums
    inner = model._module
    steps = 0
    for i, (xb, yb) in enumerate(dl):
        frozen = i in (2, 3, 4)
        if when == "between_steps":
            inner.w1.requires_grad_(not frozen)
        opt.zero_grad()
        (model(xb) * yb).sum().backward()
        samples = {k: (None if getattr(w, "grad_sample", None) is None
                       else w.grad_sample.detach().clone())
                   for k, w in (("w1", inner.w1), ("w2", inner.w2))}
        if when == "after_backward":
            inner.w1.requires_grad_(not frozen)
        w1_before = inner.w1.detach().clone()
        opt.step()
        steps += 1
        trainable = [k for k in ("w1", "w2") if getattr(inner, k).requires_grad]
        rows = torch.cat([samples[k].reshape(len(xb), -1) for k in trainable], dim=1)
        factor = (0.3 / (rows.norm(dim=1) + 1e-6)).clamp(max=1.0)
        expected = (rows * factor[:, None]).sum(0) / opt.expected_batch_size
        got = torch.cat([getattr(inner, k).grad.reshape(-1) for k in trainable])
        assert torch.allclose(got, expected, atol=1e-12)
        if frozen:
            assert torch.equal(inner.w1.detach(), w1_before)
            assert getattr(inner.w1, "grad_sample", None) is None  # no stale rows kept
        if i == 7:
            break
    assert opt.ledger.steps == steps


def test_batchnorm_without_parameters_is_refused():
    """BatchNorm1d(affine=False) has no trainable parameter, so Opacus's ModuleValidator
    (trainable modules only) passes it, but its running mean is 0.1 × the private batch mean
    after one step, saved in the state dict: refused whatever its parameters."""
    model = torch.nn.Sequential(torch.nn.Linear(1, 2).double(),
                                torch.nn.BatchNorm1d(2, affine=False).double(),
                                torch.nn.Linear(2, 1).double(), torch.nn.Flatten(0))
    x, y = _world()
    loader = torch.utils.data.DataLoader(_data(x, y), batch_size=2)
    with pytest.raises(qs.SensitivityError, match=re.escape("Module '1' (BatchNorm1d)")):
        qs.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), loader,
                        target_epsilon=1.0, target_delta=DELTA, epochs=1, max_grad_norm=1.0)
    assert torch.equal(model[1].running_mean, torch.zeros(2, dtype=torch.float64))


class _RunningMean(torch.nn.Module):
    """A user module that keeps a running mean of its inputs in a buffer (no parameters)."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("mean", torch.zeros(n, dtype=torch.float64))

    def forward(self, x):
        if self.training:
            self.mean.mul_(0.9).add_(0.1 * x.detach().mean(0))
        return x


def test_a_module_updating_a_buffer_in_training_is_refused_and_restored():
    model = torch.nn.Sequential(_RunningMean(1), torch.nn.Linear(1, 1).double(),
                                torch.nn.Flatten(0))
    x, y = _world()
    loader = torch.utils.data.DataLoader(_data(x, y), batch_size=2)
    with pytest.raises(qs.SensitivityError, match=re.escape("changes the buffer(s) ['0.mean']")):
        qs.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), loader,
                        target_epsilon=1.0, target_delta=DELTA, epochs=1, max_grad_norm=1.0)
    assert torch.equal(model[0].mean, torch.zeros(1, dtype=torch.float64))  # probe undone
    model[0].eval()  # fixed statistics: nothing changes in a forward pass, accepted
    qs.make_private(model, torch.optim.SGD(model.parameters(), lr=1.0), loader,
                    target_epsilon=1.0, target_delta=DELTA, epochs=1, max_grad_norm=1.0)


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_batches_drawn_ahead_then_stepped_one_by_one(kind):
    """``batches = list(loader)`` and then one step per batch, in order: accepted, the same
    releases as stepping while iterating (before the fix: refused as accumulation); a batch
    skipped (an empty one) or two batches in one step are refused."""
    make, kw = _KINDS[kind]
    finals = []
    for ahead in (False, True):
        model, opt, dl, params = _poisson(make, n=20, batch=4, **kw)
        batches = list(dl) if ahead else dl
        for xb, yb in batches:
            opt.zero_grad()
            _steep(model(xb), yb).backward()
            opt.step()
        finals.append(torch.cat([p.detach().reshape(-1) for p in params]))
        assert opt.ledger.steps == len(dl)
    assert torch.equal(finals[0], finals[1])
    model, opt, dl, params = _poisson(make, n=20, batch=4, **kw)
    batches = list(dl)
    sizes = [len(b[0]) for b in batches]
    skip = next(i for i in range(len(sizes) - 1) if sizes[i] != sizes[i + 1])
    for xb, yb in batches[:skip]:
        opt.zero_grad()
        _steep(model(xb), yb).backward()
        opt.step()
    xb, yb = batches[skip + 1]  # batch `skip` skipped
    opt.zero_grad()
    _steep(model(xb), yb).backward()
    with pytest.raises(ValueError, match=re.escape("not those of the oldest batch drawn")):
        opt.step()
    assert opt.ledger.steps == skip
