"""The product's TorchLayer over a generated matrix of models (pennylane_qshiftdp/qnn.py).

Invariants, per cell:
(a) output with gradients = under ``no_grad`` = PennyLane's own TorchLayer with
    ``diff_method="parameter-shift"`` (shape and values);
(b) every trainable parameter's per-example gradient from Opacus's ``GradSampleModule`` = that
    example's gradient alone by ``diff_method="backprop"`` (1e-10, float64, shots=None; within
    shot noise with shots);
(c) one ``make_private`` step = the clipped, noised sum built by hand;
(d) the other entry points give the same step: the product's ``PrivacyEngine`` (Opacus's, with
    a public divisor) on a model fixed by ``ModuleValidator.fix`` or ``convert_torch_layers``
    (σ = 10⁻¹²: the clipped sum), Opacus's
    ``BatchMemoryManager`` (= one unsplit logical batch), ``distributed=True`` on 2 processes
    (= the clipped noised sum over both shares), and a checkpoint/resume (= the uninterrupted
    run, bit for bit).
Axes: measurements x layouts x devices x shots x loss reduction x batch size x entry point.
"""

from __future__ import annotations

import copy
import io
import itertools
import math

import numpy as np
import pennylane as qml
import pytest
import torch
from opacus import GradSampleModule
from opacus.validators import ModuleValidator

import pennylane_qshiftdp as qs
from pennylane_qshiftdp import sampling

N_IN = 2
WEIGHTS = 5
# A non-involutory observable (A² is not a multiple of I): its variance rule measures ⟨A²⟩.
_HERMITIAN = np.array([[1.5, 0.3 - 0.2j], [0.3 + 0.2j, -0.4]])


def _ansatz(inputs, weights):
    qml.RY(inputs[..., 0], 0)
    qml.RY(inputs[..., 1], 1)
    qml.RX(weights[0], 0)
    qml.CRX(weights[1], wires=[0, 1])  # four-term shift rule
    qml.RY(weights[2], 1)
    qml.CNOT([1, 0])
    qml.RZ(weights[3], 0)
    qml.RX(weights[4], 1)


def _picklable_circuit(inputs, weights):
    _ansatz(inputs, weights)
    return qml.expval(qml.Z(0))


#: name -> (measurement function, TorchLayer stacks the parts (tuple return))
MEASUREMENTS = {
    "expval": (lambda: qml.expval(qml.Z(0)), False),
    "expval_list": (lambda: [qml.expval(qml.Z(0)), qml.expval(qml.Z(1))], False),
    "expval_tuple": (lambda: (qml.expval(qml.Z(0)), qml.expval(qml.X(1))), True),
    "probs": (lambda: qml.probs(wires=[0, 1]), False),
    "probs_one_wire": (lambda: qml.probs(wires=1), False),
    "var": (lambda: qml.var(qml.Z(0)), False),
    "var_hermitian": (lambda: qml.var(qml.Hermitian(_HERMITIAN, wires=1)), False),
    "var_scaled_pauli": (lambda: qml.var(0.7 * qml.Y(0) @ qml.Z(1)), False),
    "hamiltonian": (lambda: qml.expval(qml.Hamiltonian([0.5, 1.2, -0.3],
                                                       [qml.X(0), qml.Z(0) @ qml.Z(1),
                                                        qml.Y(1)])), False),
    "expval_var_tuple": (lambda: (qml.expval(qml.Z(0)), qml.var(qml.X(1))), True),
    "expval_probs_list": (lambda: [qml.expval(qml.Y(0)), qml.probs(wires=1)], False),
}
FAST_MEASUREMENTS = ["expval", "expval_list", "expval_tuple", "probs", "var", "var_hermitian",
                     "hamiltonian", "expval_probs_list"]


class _Circuit:
    """The ansatz returning one measurement kind; picklable (Opacus's ModuleValidator.fix
    clones a module by pickling it, which a closure would not survive)."""

    __name__ = "circuit"  # PennyLane's TorchLayer prints its QNode function's name

    def __init__(self, measurement):
        self.measurement = measurement

    def __call__(self, inputs, weights):
        _ansatz(inputs, weights)
        return MEASUREMENTS[self.measurement][0]()


def _circuit_for(measurement):
    return _Circuit(measurement)


def _frozen_circuit_for(measurement):
    make, _ = MEASUREMENTS[measurement]

    def circuit(inputs, weights, frozen):
        qml.RY(frozen[0], 0)
        _ansatz(inputs, weights)
        qml.RX(frozen[1], 0)
        return make()

    return circuit


def _qnode(measurement, diff_method, *, device="default.qubit", shots=None, seed=None,
           frozen=False):
    dev = qml.device(device, wires=2, **({"seed": seed} if seed is not None else {}))
    func = _frozen_circuit_for(measurement) if frozen else _circuit_for(measurement)
    qnode = qml.QNode(func, dev, interface="torch", diff_method=diff_method)
    return qml.set_shots(qnode, shots=shots) if shots is not None else qnode


def _quantum(measurement, diff_method, seed_offset=0, pennylane_layer=False, **kwargs):
    """A TorchLayer: the product's for the private transform, PennyLane's otherwise (or with
    ``pennylane_layer``: PennyLane's over the private transform, for Opacus's fixer)."""
    frozen = kwargs.get("frozen", False)
    qnode = _qnode(measurement, diff_method, **kwargs)
    gen = torch.Generator().manual_seed(11 + seed_offset)
    init = {"weights": torch.rand(WEIGHTS, generator=gen, dtype=torch.float64) * 2 * math.pi}
    shapes = {"weights": (WEIGHTS,)}
    if frozen:
        init["frozen"] = torch.tensor([0.4, -0.9], dtype=torch.float64)
        shapes["frozen"] = (2,)
    cls = (qs.qnn.TorchLayer if diff_method is qs.param_shift and not pennylane_layer
           else qml.qnn.TorchLayer)
    layer = cls(qnode, shapes, init_method=init).double()
    if frozen:
        layer.frozen.requires_grad_(False)
    return layer


def _n_out(measurement):
    layer = _quantum(measurement, "backprop")
    with torch.no_grad():
        out = layer(torch.zeros(3, N_IN, dtype=torch.float64))
    return _rows(out, measurement, 3).shape[1]


def _rows(out, measurement, batch):
    """Layer output -> ``(batch, n_out)`` (stacked tuple parts moved behind the batch)."""
    if MEASUREMENTS[measurement][1]:
        out = out.movedim(0, 1)
    return out.reshape(batch, -1)


class Model(torch.nn.Module):
    """One of the layouts around TorchLayer(s) of one measurement kind."""

    def __init__(self, layout, measurement, diff_method, **kwargs):
        super().__init__()
        self.layout, self.measurement = layout, measurement
        n_out = _n_out(measurement)
        gen = torch.Generator().manual_seed(5)
        if layout == "hybrid":
            self.pre = torch.nn.Linear(N_IN, N_IN).double()
            with torch.no_grad():
                self.pre.weight.copy_(torch.randn(N_IN, N_IN, generator=gen) * 0.7 + torch.eye(2))
                self.pre.bias.copy_(torch.randn(N_IN, generator=gen) * 0.3)
        self.q = _quantum(measurement, diff_method,
                          frozen=layout == "frozen", **kwargs)
        if layout == "two_layers":
            self.q2 = _quantum(measurement, diff_method, seed_offset=1, **kwargs)
        if layout in ("hybrid", "two_layers", "twice"):
            width = n_out * (2 if layout in ("two_layers", "twice") else 1)
            self.post = torch.nn.Linear(width, 1).double()
            with torch.no_grad():
                self.post.weight.copy_(torch.randn(1, width, generator=gen))
                self.post.bias.fill_(0.1)

    def forward(self, x):
        m = self.measurement
        if self.layout == "leading_dims":  # (B, 2, n_in): two rows per example
            b = x.shape[0]
            out = self.q(x.reshape(b, 2, N_IN))
            if MEASUREMENTS[m][1]:
                out = out.movedim(0, 1)
            return out.reshape(b, -1)
        b = x.shape[0]
        if self.layout == "hybrid":
            return self.post(_rows(self.q(torch.tanh(self.pre(x)) * 1.5), m, b))
        if self.layout == "two_layers":
            return self.post(torch.cat([_rows(self.q(x), m, b), _rows(self.q2(x), m, b)], 1))
        if self.layout == "twice":
            return self.post(torch.cat([_rows(self.q(x), m, b), _rows(self.q(0.5 * x), m, b)],
                                       1))
        return _rows(self.q(x), m, b)


def _inputs(layout, batch, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = 2 * N_IN if layout == "leading_dims" else N_IN
    return torch.rand(batch, n, generator=g, dtype=torch.float64) * 3 - 1


def _coeffs(width, seed=1):
    return torch.randn(width, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


def _loss(out, c):
    """Per-example loss rows: a fixed linear form plus a square (nonlinear in the output)."""
    lin = out @ c[: out.shape[1]]
    return lin + 0.3 * lin**2


def _reference_model(model, layout, measurement, **kwargs):
    ref = Model(layout, measurement, "backprop", **kwargs)
    ref.load_state_dict(model.state_dict())
    for (_, p), (_, r) in zip(model.named_parameters(), ref.named_parameters(), strict=True):
        r.requires_grad_(p.requires_grad)
    return ref


def _per_example_reference(ref, x, c):
    grads = []
    for j in range(len(x)):
        ref.zero_grad()
        _loss(ref(x[j:j + 1]), c).sum().backward()
        grads.append({n: p.grad.detach().clone() for n, p in ref.named_parameters()
                      if p.requires_grad})
    return grads


def _grad_samples(model, x, c, reduction):
    gsm = GradSampleModule(model, loss_reduction=reduction)
    ell = _loss(gsm(x), c)
    (ell.mean() if reduction == "mean" else ell.sum()).backward()
    out = {n: p.grad_sample.detach().clone() for n, p in model.named_parameters()
           if p.requires_grad}
    gsm._close()
    return out


LAYOUTS = ["alone", "hybrid", "two_layers", "twice", "frozen", "leading_dims"]


def _cells():
    """Every measurement x layout x reduction; the default run keeps every measurement alone
    and in the hybrid layout, and three measurements in every layout (mean reduction there)."""
    cells = []
    for m, layout, reduction in itertools.product(MEASUREMENTS, LAYOUTS, ["mean", "sum"]):
        slow = m not in FAST_MEASUREMENTS or (layout not in ("alone", "hybrid")
                                             and m not in ("expval", "expval_tuple", "probs"))
        slow = slow or (layout != "alone" and reduction == "sum")
        cells.append(pytest.param(m, layout, reduction, id=f"{reduction}-{m}-{layout}",
                                  marks=[pytest.mark.slow] if slow else []))
    return cells


# ------------------------------------------------------------------------------------------
# (a) outputs
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("measurement", list(MEASUREMENTS))
@pytest.mark.parametrize("batch_shape", [(5,), (1,), (), (2, 3)])
def test_output_equals_pennylane_parameter_shift_layer(measurement, batch_shape):
    ours = _quantum(measurement, qs.param_shift)
    theirs = _quantum(measurement, "parameter-shift")
    g = torch.Generator().manual_seed(2)
    x = torch.rand(*batch_shape, N_IN, generator=g, dtype=torch.float64)
    expected = theirs(x)
    with_grad = ours(x)
    with torch.no_grad():
        without = ours(x)
    assert with_grad.shape == without.shape == expected.shape
    assert with_grad.requires_grad
    torch.testing.assert_close(with_grad, expected.detach(), atol=1e-12, rtol=0)
    torch.testing.assert_close(without, expected.detach(), atol=1e-12, rtol=0)


@pytest.mark.parametrize("measurement", ["expval", "expval_tuple", "probs"])
def test_empty_batch_keeps_pennylane_layout(measurement):
    ours = _quantum(measurement, qs.param_shift)
    ref = _quantum(measurement, qs.param_shift)
    out = ours(torch.zeros(0, N_IN, dtype=torch.float64))
    full = ref(torch.zeros(3, N_IN, dtype=torch.float64))
    stacked = MEASUREMENTS[measurement][1]
    expected = (full.shape[0], 0, *full.shape[2:]) if stacked else (0, *full.shape[1:])
    assert tuple(out.shape) == expected
    out.sum().backward()  # connected to the weights; contributes zero
    assert float(ours.weights.grad.abs().sum()) == 0.0


# ------------------------------------------------------------------------------------------
# (b) per-example gradients
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("measurement", "layout", "reduction"), _cells())
def test_per_example_gradients_equal_backprop_one_example_at_a_time(measurement, layout,
                                                                    reduction):
    batch = 4
    model = Model(layout, measurement, qs.param_shift)
    ref = _reference_model(model, layout, measurement)
    x = _inputs(layout, batch)
    c = _coeffs(64)
    ours = _grad_samples(model, x, c, reduction)
    expected = _per_example_reference(ref, x, c)
    assert set(ours) == set(expected[0])
    # Opacus rescales mean-reduced backprops by the batch size: grad_sample = ∇ℓ_j for both
    for name, gs in ours.items():
        want = torch.stack([e[name] for e in expected])
        assert gs.shape == (batch, *want.shape[1:])
        torch.testing.assert_close(gs, want, atol=1e-10, rtol=0,
                                   msg=f"{name}: per-example gradient")


@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("measurement", ["expval", "expval_tuple"])
def test_batch_sizes(measurement, batch):
    model = Model("hybrid", measurement, qs.param_shift)
    ref = _reference_model(model, "hybrid", measurement)
    x, c = _inputs("hybrid", batch, seed=3), _coeffs(8)
    ours = _grad_samples(model, x, c, "sum")
    expected = _per_example_reference(ref, x, c)
    for name, gs in ours.items():
        torch.testing.assert_close(gs, torch.stack([e[name] for e in expected]), atol=1e-10,
                                   rtol=0)


@pytest.mark.parametrize("device", ["lightning.qubit", "default.mixed"])
@pytest.mark.parametrize("measurement", ["expval", "expval_tuple", "probs", "var"])
def test_other_devices(device, measurement):
    # outputs as PennyLane's layer, per-example gradients as backprop on default.qubit
    ours = Model("hybrid", measurement, qs.param_shift, device=device)
    theirs = _quantum(measurement, "parameter-shift", device=device)
    theirs.load_state_dict(ours.q.state_dict())
    x = _inputs("hybrid", 3)
    torch.testing.assert_close(ours.q(x), theirs(x).detach(), atol=1e-10, rtol=0)
    ref = _reference_model(ours, "hybrid", measurement)
    c = _coeffs(8)
    got = _grad_samples(ours, x, c, "mean")
    expected = _per_example_reference(ref, x, c)
    for name, gs in got.items():
        torch.testing.assert_close(gs, torch.stack([e[name] for e in expected]), atol=1e-10,
                                   rtol=0)


# Per measurement kind, K such that every per-example weight gradient of the linear loss
# out @ c has standard deviation ≤ K‖c‖₁/sqrt(Ns) (derived here): each Jacobian entry is
# Σ_t c_t μ̂_t with Σ_t c_t² ≤ 1/2 (two-term rules; CRX's four-term rule ≈ 0.37) and shot
# variance ≤ 1 (±1 outcomes; ≤ 1/4 for a probability), so sd ≤ 1/sqrt(Ns) (K = 1); a variance's
# gradient -2⟨A⟩∂⟨A⟩ (A² = I) adds 2|⟨A⟩| sd(∂⟨A⟩) + 2|∂⟨A⟩| sd(⟨A⟩) ≤ 4/sqrt(Ns) to first order.
_SHOT_K = {"expval": 1.0, "expval_list": 1.0, "probs": 1.0, "var": 4.0}


@pytest.mark.parametrize("measurement", list(_SHOT_K))
@pytest.mark.parametrize("mode", ["device", "exact_law"])
def test_per_example_gradients_with_shots_within_shot_noise(mode, measurement):
    shots, batch = 20000, 4
    model = Model("alone", measurement, qs.param_shift, shots=shots, seed=3)
    if mode == "exact_law":
        sampling.use_exact_law(model, seed=7)
    ref = _reference_model(model, "alone", measurement)
    x = _inputs("alone", batch)
    c = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)

    def lin(out):
        return out @ c[: out.shape[1]]

    gsm = GradSampleModule(model, loss_reduction="sum")
    out = gsm(x)
    lin(out).sum().backward()
    got = model.q.weights.grad_sample
    want = []
    for j in range(batch):
        ref.zero_grad()
        lin(ref(x[j:j + 1])).sum().backward()
        want.append(ref.q.weights.grad.clone())
    err = float((got - torch.stack(want)).abs().max())
    norm1 = float(c[: out.shape[1]].abs().sum())
    assert err < 6 * _SHOT_K[measurement] * norm1 / math.sqrt(shots)
    assert err > 0  # the estimates carry shot noise


# ------------------------------------------------------------------------------------------
# (c) one private step = the clipped noised sum built by hand
# ------------------------------------------------------------------------------------------


def _clipped_sum(ref, x, c, clip, *, binds=True):
    """Σ_j min(1, C/(‖g_j‖ + 1e-6)) g_j, flat in the order of ``ref``'s trainable parameters,
    with g_j example j's gradient by backprop alone (Opacus's clip factor)."""
    per_example = _per_example_reference(ref, x, c)
    names = [n for n, p in ref.named_parameters() if p.requires_grad]
    flat = torch.stack([torch.cat([g[n].reshape(-1) for n in names]) for g in per_example])
    factors = (clip / (flat.norm(dim=1) + 1e-6)).clamp(max=1.0)
    if binds:
        assert float(factors.min()) < 1.0  # the clip binds (for some examples at least)
    return (factors[:, None] * flat).sum(0)


def _seeded_noise(params, seed, std):
    """The noise a seeded QShiftDPOptimizer adds: one float64 draw per coordinate, in the
    optimizer's parameter order, from a generator seeded with make_private's ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    return torch.cat([torch.randn(p.numel(), generator=gen, dtype=torch.float64)
                      for p in params]) * std


def _update(before, params, lr):
    """(θ_before − θ_after)/lr, flat: the gradient plain SGD applied."""
    return torch.cat([(b - p.detach()).reshape(-1) / lr for b, p in zip(before, params,
                                                                        strict=True)])


def _step_cells():
    cells = []
    for (m, layout), reduction in itertools.product(
            [("expval", "alone"), ("expval_list", "hybrid"), ("probs", "hybrid"),
             ("expval_tuple", "twice")], ["mean", "sum"]):
        fast = (m, reduction) in (("expval", "sum"), ("expval_list", "mean"),
                                  ("expval_tuple", "sum"))
        cells.append(pytest.param(m, layout, reduction, id=f"{m}-{layout}-{reduction}",
                                  marks=[] if fast else [pytest.mark.slow]))
    return cells


@pytest.mark.parametrize(("measurement", "layout", "reduction"), _step_cells())
def test_one_private_step_is_the_clipped_noised_sum(measurement, layout, reduction,
                                                    monkeypatch):
    batch, clip, lr, seed = 5, 0.05, 0.7, 4
    model = Model(layout, measurement, qs.param_shift)
    ref = _reference_model(model, layout, measurement)
    x = _inputs(layout, batch, seed=2)
    c = _coeffs(64)
    data = torch.utils.data.TensorDataset(x, torch.zeros(batch))
    loader = torch.utils.data.DataLoader(data, batch_size=1)
    params = [p for p in model.parameters() if p.requires_grad]
    before = [p.detach().clone() for p in params]
    with pytest.warns(qs.PrivacyWarning):
        private, opt, _ = qs.make_private(
            model, torch.optim.SGD(params, lr=lr), loader, target_epsilon=20.0,
            target_delta=1e-5, epochs=1, seed=seed, max_grad_norm=clip,
            loss_reduction=reduction)
    monkeypatch.setattr(opt, "_check_loader", lambda: None)  # the batch is chosen by hand
    opt.zero_grad()
    ell = _loss(private(x), c)
    (ell.mean() if reduction == "mean" else ell.sum()).backward()
    opt.step()

    summed = _clipped_sum(ref, x, c, clip)
    released = summed + _seeded_noise(params, seed, opt.noise_multiplier * clip)
    if reduction == "mean":
        released = released / opt.expected_batch_size
    torch.testing.assert_close(_update(before, params, lr), released, atol=1e-9, rtol=0)


# ------------------------------------------------------------------------------------------
# (d) entry points: Opacus's PrivacyEngine, BatchMemoryManager, distributed, resume
# (make_private itself: test_one_private_step_is_the_clipped_noised_sum above)
# ------------------------------------------------------------------------------------------


def _opacus_cells():
    cells = []
    for (m, layout), fixer in itertools.product(
            [("expval", "alone"), ("probs", "alone"), ("expval_list", "alone"),
             ("expval", "hybrid"), ("probs", "hybrid"), ("expval_list", "hybrid")],
            ["convert_torch_layers", "ModuleValidator.fix"]):
        cells.append(pytest.param(m, layout, fixer, id=f"{m}-{layout}-{fixer}"))
    return cells


@pytest.mark.parametrize(("measurement", "layout", "fixer"), _opacus_cells())
def test_opacus_privacy_engine_step_is_the_clipped_sum(measurement, layout, fixer):
    """The product's PrivacyEngine (Opacus's front end with a public divisor) on a model with
    PennyLane's TorchLayer, fixed for Opacus: the per-example gradients are backprop's one
    example at a time, and one step at σ = 10⁻¹² is the clipped sum over the batch size."""
    from pennylane_qshiftdp import PrivacyEngine

    batch, clip, lr = 5, 0.05, 0.7
    plain = Model(layout, measurement, qs.param_shift, pennylane_layer=True)
    assert type(plain.q) is qml.qnn.TorchLayer
    ref = _reference_model(plain, layout, measurement)
    model = (ModuleValidator.fix(plain) if fixer == "ModuleValidator.fix"
             else qs.qnn.convert_torch_layers(plain))
    assert type(model.q) is qs.qnn.TorchLayer and ModuleValidator.validate(model) == []
    x = _inputs(layout, 2 * batch, seed=2)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, torch.zeros(2 * batch)),
                                         batch_size=batch)
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]
    private, opt, dl = PrivacyEngine().make_private(
        module=model, optimizer=torch.optim.SGD(params, lr=lr), data_loader=loader,
        noise_multiplier=1e-12, max_grad_norm=clip, poisson_sampling=False)
    assert opt.expected_batch_size == batch
    xb, _ = next(iter(dl))
    c = _coeffs(64)
    opt.zero_grad()
    _loss(private(xb), c).mean().backward()
    expected = _per_example_reference(ref, xb, c)
    names = [n for n, _ in model.named_parameters()]
    assert names == list(expected[0])
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad_sample, torch.stack([e[name] for e in expected]),
                                   atol=1e-10, rtol=0, msg=f"{name}: per-example gradient")
    opt.step()
    torch.testing.assert_close(_update(before, params, lr),
                               _clipped_sum(ref, xb, c, clip) / batch, atol=1e-10, rtol=0)


def _first_logical_step(engine, physical, x, c, *, clip, lr, seed, logical=None):
    """One logical step of the hybrid expval-list model on ``x``: through ``make_private`` (its
    Poisson loader, q = 1/2, seeded noise) or the product's PrivacyEngine (σ = 10⁻¹², batches
    of 6),
    with the logical batch split by BatchMemoryManager into physical batches of ``physical``
    examples (``None``: not split; else ``logical``, the logical batch's size, ends the
    step). Returns (update/lr, the batch's example indices, the number of physical batches,
    the optimizer)."""
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    from pennylane_qshiftdp import PrivacyEngine

    n = len(x)
    model = Model("hybrid", "expval_list", qs.param_shift)
    params = list(model.parameters())
    before = [p.detach().clone() for p in params]
    data = torch.utils.data.TensorDataset(x, torch.arange(n, dtype=torch.float64))
    if engine == "make_private":
        private, opt, dl = qs.make_private(
            model, torch.optim.SGD(params, lr=lr), torch.utils.data.DataLoader(data, batch_size=8),
            target_epsilon=5.0, target_delta=1e-5, epochs=1, seed=seed, max_grad_norm=clip)
    else:
        private, opt, dl = PrivacyEngine().make_private(
            module=model, optimizer=torch.optim.SGD(params, lr=lr),
            data_loader=torch.utils.data.DataLoader(data, batch_size=6), noise_multiplier=1e-12,
            max_grad_norm=clip, poisson_sampling=False)

    def steps(loader, logical):
        seen, count = [], 0
        for xb, yb in loader:
            opt.zero_grad()
            if len(xb):
                _loss(private(xb), c).mean().backward()
            opt.step()
            seen += yb.long().tolist()
            count += 1
            if logical is None or len(seen) >= logical:
                return seen, count
        raise AssertionError("the logical batch ended early")

    if physical is None:
        seen, count = steps(dl, None)
    else:
        with BatchMemoryManager(data_loader=dl, max_physical_batch_size=physical,
                                optimizer=opt) as memory:
            # the same seed draws the same logical batch as the unsplit run
            seen, count = steps(memory, logical)
    return _update(before, params, lr), seen, count, opt


@pytest.mark.parametrize("engine", ["make_private", "opacus"])
def test_batch_memory_manager_step_equals_the_full_logical_batch_step(engine):
    clip, lr, seed, n = 0.05, 0.7, 4, 12
    x, c = _inputs("hybrid", n, seed=5), _coeffs(64)
    full, batch, count, opt = _first_logical_step(engine, None, x, c, clip=clip, lr=lr,
                                                  seed=seed)
    assert count == 1 and len(batch) > 2
    split, batch2, count2, _ = _first_logical_step(engine, 2, x, c, clip=clip, lr=lr, seed=seed,
                                                   logical=len(batch))
    assert batch2 == batch and count2 == math.ceil(len(batch) / 2) > 1
    torch.testing.assert_close(split, full, atol=1e-10, rtol=0)
    ref = _reference_model(Model("hybrid", "expval_list", qs.param_shift), "hybrid",
                           "expval_list")
    released = _clipped_sum(ref, x[batch], c, clip)
    if engine == "make_private":  # σ is calibrated (σ = 0 is refused): the seeded noise
        released = released + _seeded_noise(list(ref.parameters()), seed,
                                            opt.noise_multiplier * clip)
    torch.testing.assert_close(split, released / opt.expected_batch_size, atol=1e-10, rtol=0)


_DISTRIBUTED = {"clip": 0.05, "lr": 0.7, "seed": 6, "n": 16}
_DISTRIBUTED_SCRIPT = """
import importlib.util, sys
import torch, torch.distributed as dist
spec = importlib.util.spec_from_file_location("cells", sys.argv[1])
cells = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cells)
dist.init_process_group("gloo")
out = {m: cells._distributed_step(m) for m in sys.argv[3].split(",")}
torch.save(out, f"{sys.argv[2]}/rank{dist.get_rank()}.pt")
dist.destroy_process_group()
"""
_DISTRIBUTED_MEASUREMENTS = ["probs", "expval_list"]


def _distributed_step(measurement):
    """One distributed make_private step of the hybrid model on this process's Poisson share
    (run by every process of the group): the share's example indices and the weights after."""
    cfg = _DISTRIBUTED
    model = Model("hybrid", measurement, qs.param_shift)
    x = _inputs("hybrid", cfg["n"], seed=8)
    data = torch.utils.data.TensorDataset(x, torch.arange(cfg["n"], dtype=torch.float64))
    params = list(model.parameters())
    private, opt, dl = qs.make_private(
        model, torch.optim.SGD(params, lr=cfg["lr"]),
        torch.utils.data.DataLoader(data, batch_size=8), target_epsilon=5.0, target_delta=1e-5,
        epochs=1, seed=cfg["seed"], max_grad_norm=cfg["clip"], distributed=True)
    xb, yb = next(iter(dl))
    opt.zero_grad()
    if len(xb):
        _loss(private(xb), _coeffs(64)).mean().backward()
    opt.step()
    return {"indices": yb.long().tolist(), "after": [p.detach().clone() for p in params],
            "sigma": opt.noise_multiplier, "expected_batch_size": opt.expected_batch_size}


@pytest.fixture(scope="module")
def distributed_steps(tmp_path_factory):
    """Both processes' results of one torchrun job (2 processes, gloo) over every cell."""
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path_factory.mktemp("distributed")
    script = out / "cells.py"
    script.write_text(_DISTRIBUTED_SCRIPT)
    proc = subprocess.run(  # --standalone: a local rendezvous on a free port
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(script), str(Path(__file__).resolve()), str(out),
         ",".join(_DISTRIBUTED_MEASUREMENTS)],
        cwd=out, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


@pytest.mark.slow
@pytest.mark.parametrize("measurement", _DISTRIBUTED_MEASUREMENTS)
def test_distributed_step_is_the_clipped_noised_sum_over_both_ranks(measurement,
                                                                    distributed_steps):
    cfg = _DISTRIBUTED
    r0, r1 = (d[measurement] for d in distributed_steps)
    assert r0["indices"] and r1["indices"]  # both processes hold examples
    assert not set(r0["indices"]) & set(r1["indices"])  # disjoint shares
    union = r0["indices"] + r1["indices"]
    model = Model("hybrid", measurement, qs.param_shift)  # the same initial weights
    ref = _reference_model(model, "hybrid", measurement)
    before = [p.detach().clone() for p in model.parameters()]
    x = _inputs("hybrid", cfg["n"], seed=8)
    assert r0["expected_batch_size"] == 0.5 * cfg["n"]  # q N over the whole data set
    released = (_clipped_sum(ref, x[union], _coeffs(64), cfg["clip"])
                + _seeded_noise(before, cfg["seed"], r0["sigma"] * cfg["clip"]))
    for r in (r0, r1):
        torch.testing.assert_close(_update(before, r["after"], cfg["lr"]),
                                   released / r["expected_batch_size"], atol=1e-10, rtol=0)


@pytest.mark.parametrize(("measurement", "layout"), [("expval", "hybrid"), ("probs", "alone")])
def test_resume_after_k_steps_equals_the_uninterrupted_run(measurement, layout):
    """Noise on (seeded). What an exact resume needs: the model's and the optimizer's state
    dicts (SGD momentum, σ, clip norms, noise generator, ledger) and the Poisson loader's
    generator (``loader.batch_sampler.generator``), which optimizer.state_dict() does not
    hold: without it the resumed run draws other batches."""
    k, total, n = 2, 5, 12
    x, c = _inputs(layout, n, seed=9), _coeffs(64)

    def build():
        model = Model(layout, measurement, qs.param_shift)
        params = list(model.parameters())
        loader = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(x, torch.zeros(n, dtype=torch.float64)),
            batch_size=4)
        private, opt, dl = qs.make_private(
            model, torch.optim.SGD(params, lr=0.3, momentum=0.9), loader, target_epsilon=5.0,
            target_delta=1e-5, epochs=2, seed=3, max_grad_norm=0.05)
        return model, private, opt, dl

    def train(private, opt, dl, steps):
        batches = itertools.chain.from_iterable(dl for _ in itertools.count())
        for xb, _ in itertools.islice(batches, steps):
            opt.zero_grad()
            if len(xb):
                _loss(private(xb), c).mean().backward()
            opt.step()

    ref_model, *ref_run = build()
    train(*ref_run, total)
    model, private, opt, dl = build()
    train(private, opt, dl, k)
    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                "sampler": dl.batch_sampler.generator.get_state()}, buf)
    del model, private, opt, dl
    buf.seek(0)
    saved = torch.load(buf, weights_only=True)
    model, private, opt, dl = build()
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    dl.batch_sampler.generator.set_state(saved["sampler"])
    train(private, opt, dl, total - k)
    assert opt.noise_multiplier > 0 and opt.ledger.steps == total
    assert opt.ledger.epsilon == ref_run[1].ledger.epsilon
    for (name, p), q in zip(model.named_parameters(), ref_model.parameters(), strict=True):
        assert torch.equal(p, q), name


# ------------------------------------------------------------------------------------------
# Extension points, copies, refusals
# ------------------------------------------------------------------------------------------


def test_import_changes_no_attribute_of_pennylanes_torch_layer():
    import subprocess
    import sys

    code = (
        "import pennylane as qml\n"
        "before = {k: v for k, v in vars(qml.qnn.TorchLayer).items()}\n"
        "import pennylane_qshiftdp\n"
        "after = vars(qml.qnn.TorchLayer)\n"
        "changed = sorted(k for k in set(before) | set(after) "
        "if before.get(k, None) is not after.get(k, None))\n"
        "print(changed)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_fixer_reuses_parameter_objects_and_validator_names_the_fix():
    from opacus.validators.errors import UnsupportedModuleError

    plain = qml.qnn.TorchLayer(_qnode("expval", qs.param_shift), {"weights": (WEIGHTS,)})
    model = torch.nn.Sequential(torch.nn.Linear(N_IN, N_IN), plain)
    errors = ModuleValidator.validate(model)
    assert len(errors) == 1 and isinstance(errors[0], UnsupportedModuleError)
    assert "ModuleValidator.fix" in str(errors[0])
    params = list(model.parameters())
    fixed = qs.qnn.convert_torch_layers(model)
    assert fixed is model and type(model[1]) is qs.qnn.TorchLayer
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert ModuleValidator.validate(model) == []
    # Opacus's own fix (it clones by pickling: the QNode function must be importable)
    qnode = qml.QNode(_picklable_circuit, qml.device("default.qubit"), interface="torch",
                      diff_method=qs.param_shift)
    original = torch.nn.Sequential(torch.nn.Linear(N_IN, N_IN),
                                   qml.qnn.TorchLayer(qnode, {"weights": (WEIGHTS,)}))
    clone = ModuleValidator.fix(original)
    assert type(clone[1]) is qs.qnn.TorchLayer and ModuleValidator.validate(clone) == []
    x = torch.rand(3, N_IN)
    torch.testing.assert_close(clone(x), original(x).detach())


def test_opacus_privacy_engine_refuses_an_unfixed_layer_naming_the_fix():
    from opacus import PrivacyEngine
    from opacus.validators.errors import UnsupportedModuleError

    plain = qml.qnn.TorchLayer(_qnode("expval", qs.param_shift), {"weights": (WEIGHTS,)})
    data = torch.utils.data.TensorDataset(torch.zeros(8, N_IN), torch.zeros(8))
    with pytest.raises(UnsupportedModuleError, match="ModuleValidator.fix"):
        PrivacyEngine().make_private(module=plain,
                                     optimizer=torch.optim.SGD(plain.parameters(), lr=0.1),
                                     data_loader=torch.utils.data.DataLoader(data, batch_size=4),
                                     noise_multiplier=1.0, max_grad_norm=1.0)


def test_opacus_privacy_engine_trains_the_fixed_layer():
    from pennylane_qshiftdp import PrivacyEngine

    model = Model("hybrid", "expval_list", qs.param_shift)
    ref = _reference_model(model, "hybrid", "expval_list")
    x = _inputs("hybrid", 6)
    data = torch.utils.data.TensorDataset(x, torch.zeros(6))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    private, popt, loader = PrivacyEngine().make_private(
        module=model, optimizer=opt, data_loader=torch.utils.data.DataLoader(data, batch_size=3),
        noise_multiplier=1e-12, max_grad_norm=1e6, poisson_sampling=False, loss_reduction="sum")
    c = _coeffs(8)
    xb, _ = next(iter(loader))
    _loss(private(xb), c).sum().backward()
    expected = _per_example_reference(ref, xb, c)
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.grad_sample, torch.stack([e[name] for e in expected]),
                                   atol=1e-10, rtol=0)


@pytest.mark.parametrize("mode", ["functorch", "ew"])
def test_other_grad_sample_modes_are_refused_naming_hooks(mode):
    from pennylane_qshiftdp import PrivacyEngine

    model = Model("alone", "expval", qs.param_shift)
    data = torch.utils.data.TensorDataset(_inputs("alone", 4), torch.zeros(4))
    private, _, _ = PrivacyEngine().make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=4), noise_multiplier=1.0,
        max_grad_norm=1.0, grad_sample_mode=mode, poisson_sampling=False)
    with pytest.raises(NotImplementedError, match="grad_sample_mode='hooks'"):
        private(_inputs("alone", 4)).sum().backward()


def test_deepcopy_and_state_dict_round_trip():
    model = Model("hybrid", "probs", qs.param_shift)
    x = _inputs("hybrid", 3)
    twin = copy.deepcopy(model)
    torch.testing.assert_close(twin(x), model(x), atol=1e-12, rtol=0)
    assert type(twin.q) is qs.qnn.TorchLayer and twin.q.qnode.diff_method is qs.param_shift
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    other = Model("hybrid", "probs", qs.param_shift)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    other.load_state_dict(torch.load(buf))
    torch.testing.assert_close(other(x), model(x), atol=1e-12, rtol=0)
    # a model made private (converted layer, pending evaluations of a training forward)
    # deep-copies too; a deep copy of Opacus's GradSampleModule itself does not run (Opacus
    # keeps per-parameter counters that Parameter.__deepcopy__ drops), whatever the model.
    data = torch.utils.data.TensorDataset(x, torch.zeros(3))
    private, _, _ = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                    torch.utils.data.DataLoader(data, batch_size=1),
                                    target_epsilon=5.0, target_delta=1e-5, epochs=1, seed=0,
                                    max_grad_norm=1.0)
    out = private(x)
    private.disable_hooks()
    clone = copy.deepcopy(private._module)
    torch.testing.assert_close(clone(x), out.detach(), atol=1e-12, rtol=0)


def test_unsupported_return_is_refused_saying_what_works():
    def circuit(inputs, weights):
        _ansatz(inputs, weights)
        return qml.sample(qml.Z(0))

    qnode = qml.set_shots(qml.QNode(circuit, qml.device("default.qubit"), interface="torch",
                                    diff_method=qs.param_shift), shots=10)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (WEIGHTS,)})
    with pytest.raises(qs.UnsupportedMeasurementError, match="Supported returns: expval"):
        layer(torch.zeros(2, N_IN))


def test_pennylane_docstring_hybrid_example_trains_through_make_private():
    """PennyLane's TorchLayer "Full code example", with the product's transform, made private."""
    n_qubits = 2
    dev = qml.device("default.qubit", wires=n_qubits)

    @qml.qnode(dev, diff_method=qs.param_shift)
    def qnode(inputs, weights):
        qml.templates.AngleEmbedding(inputs, wires=range(n_qubits))
        qml.templates.StronglyEntanglingLayers(weights, wires=range(n_qubits))
        return [qml.expval(qml.Z(0)), qml.expval(qml.Z(1))]

    torch.manual_seed(0)
    qlayer = qml.qnn.TorchLayer(qnode, {"weights": (3, n_qubits, 3)})
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), qlayer, torch.nn.Linear(2, 2),
                                torch.nn.Softmax(dim=1))
    g = torch.Generator().manual_seed(0)
    x = torch.rand(20, 2, generator=g) * 2 - 1
    y = torch.nn.functional.one_hot((x[:, 0] > 0).long(), 2).float()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    private, opt, loader = qs.make_private(
        model, opt, torch.utils.data.DataLoader(list(zip(x, y, strict=True)), batch_size=5),
        target_epsilon=5.0, target_delta=1e-5, epochs=2, seed=0, max_grad_norm=1.0)
    assert type(private._module[1]) is qs.qnn.TorchLayer
    before = [p.detach().clone() for p in model.parameters()]
    loss = torch.nn.L1Loss()
    for _ in range(2):
        for xb, yb in loader:
            opt.zero_grad()
            loss(private(xb), yb).backward()
            opt.step()
    assert all(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())


def test_variance_of_a_sum_is_refused_before_training():
    """PennyLane 0.45's rule takes ∂⟨A²⟩ = 0 for var(0.7 Z0 + 0.4 X1) (wrong); refused."""
    def circuit(inputs, weights):
        _ansatz(inputs, weights)
        return qml.var(0.7 * qml.Z(0) + 0.4 * qml.X(1))

    qnode = qml.QNode(circuit, qml.device("default.qubit"), interface="torch",
                      diff_method=qs.param_shift)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (WEIGHTS,)})
    with pytest.raises(qs.UnsupportedMeasurementError, match="qml.Hermitian"):
        layer(torch.zeros(2, N_IN))


@pytest.mark.parametrize("shots", [None, 50])
@pytest.mark.parametrize(("measurement", "layout"), [("expval", "alone"), ("probs", "alone"),
                                                     ("expval_list", "hybrid")])
def test_a_non_finite_input_row_makes_only_its_own_gradient_non_finite(measurement, layout,
                                                                       shots):
    """A NaN (or inf) input row: its own outputs and per-example gradients are non-finite,
    every other example's are those of the batch without it (analytic: exactly; with device
    sampling: the run does not crash and the others stay finite)."""
    model = Model(layout, measurement, qs.param_shift, shots=shots, seed=3)
    x = _inputs(layout, 4)
    c = _coeffs(64)
    poisoned = x.clone()
    poisoned[1, 0] = float("nan")
    poisoned[3, 1] = float("inf") if layout == "alone" else float("nan")  # tanh(inf) = 1
    ours = _grad_samples(model, poisoned, c, "sum")
    with torch.no_grad():
        out = model(poisoned)
    keep = [0, 2]
    for name, gs in ours.items():
        rows = gs.reshape(4, -1)
        assert torch.isfinite(rows[keep]).all(), name
        assert not torch.isfinite(rows[[1, 3]]).all(dim=1).any(), name
    assert torch.isfinite(out[keep]).all() and not torch.isfinite(out[[1, 3]]).all(dim=1).any()
    if shots is None:
        clean = _grad_samples(model, x[keep], c, "sum")
        for name, gs in ours.items():
            torch.testing.assert_close(gs[keep], clean[name], atol=1e-12, rtol=0)


@pytest.mark.parametrize("measurement,route", [("expval", "parameter_shift"),
                                               ("expval", "auto"), ("probs", "auto"),
                                               ("var", "auto")])
def test_analytic_step_runs_merged_broadcast_tapes(measurement, route, monkeypatch):
    """shots=None on default.qubit, parameter-shift route: the forward and shifted circuits of
    the whole batch run as merged broadcast tapes, one ``qml.execute`` of one tape per group of
    circuits with the same measurements (one group for expval/probs; two for var, whose shifted
    circuits measure expval), run by the batched state-vector kernels (on default.qubit they
    stand in for ``qml.execute``: ``simulate_stacked`` runs a merged tape from its stacked
    parameters without building it, ``simulate_tapes`` a built one); the automatic route of
    expval is the adjoint sweep, which runs none of them. Either way the per-example gradients
    are those of backprop one example at a time."""
    from pennylane_qshiftdp.sampling import exact_law

    calls = []
    real, real_sim, real_stacked = qml.execute, exact_law.simulate_tapes, \
        exact_law.simulate_stacked

    def spy(tapes, *args, **kwargs):
        calls.append(len(tapes))
        return real(tapes, *args, **kwargs)

    def spy_sim(tapes):
        calls.append(len(tapes))
        return real_sim(tapes)

    def spy_stacked(*args):
        calls.append(1)  # one merged tape
        return real_stacked(*args)

    model = Model("alone", measurement, qs.param_shift)
    qs.qnn.routes.set_gradient_route(model, route)
    ref = _reference_model(model, "alone", measurement)
    x, c = _inputs("alone", 6), _coeffs(64)
    monkeypatch.setattr(qml, "execute", spy)
    monkeypatch.setattr(exact_law, "simulate_tapes", spy_sim)
    monkeypatch.setattr(exact_law, "simulate_stacked", spy_stacked)
    ours = _grad_samples(model, x, c, "sum")
    monkeypatch.setattr(qml, "execute", real)
    monkeypatch.setattr(exact_law, "simulate_tapes", real_sim)
    monkeypatch.setattr(exact_law, "simulate_stacked", real_stacked)
    if measurement == "expval" and route == "auto":
        assert calls == []  # the adjoint route
    else:
        assert calls == ([1, 1] if measurement == "var" else [1])
    expected = _per_example_reference(ref, x, c)
    torch.testing.assert_close(ours["q.weights"], torch.stack([e["q.weights"] for e in expected]),
                               atol=1e-10, rtol=0)


@pytest.mark.parametrize("batch_shape", [(1,), (), (3,)])
@pytest.mark.parametrize("measurement", ["probs", "expval_probs_list", "expval_tuple"])
def test_no_grad_output_with_shots_has_pennylanes_layout(measurement, batch_shape):
    """With finite shots and no gradients (evaluation), the output has the shape of PennyLane's
    analytic layer (PennyLane 0.45's own TorchLayer fails to reshape probs on a batch of one
    with shots) and holds shot estimates: probabilities on the 1/Ns lattice summing to 1."""
    shots = 40
    ours = _quantum(measurement, qs.param_shift, shots=shots, seed=5)
    theirs = _quantum(measurement, "parameter-shift")
    x = torch.rand(*batch_shape, N_IN, generator=torch.Generator().manual_seed(6),
                   dtype=torch.float64)
    with torch.no_grad():
        out = ours(x)
    expected = theirs(x)
    assert out.shape == expected.shape
    assert float((out - expected.detach()).abs().max()) <= 1.0 + 1e-12  # within [-1, 1] ranges
    if measurement == "probs":
        torch.testing.assert_close(out.sum(-1), torch.ones(out.shape[:-1], dtype=out.dtype))
        torch.testing.assert_close(out * shots, torch.round(out * shots))
