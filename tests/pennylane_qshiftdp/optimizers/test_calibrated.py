"""The calibrated clip (issue 44): the median per-example gradient norm at the initial weights
on public synthetic examples, the default of make_private; and the diagnosis of a clip far above
the gradients."""

import math
import warnings

import numpy as np
import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.optimizers import stuck_run_cause
from pennylane_qshiftdp.optimizers.diagnosis import CLIP_RATIO
from pennylane_qshiftdp.optimizers.public_clip import (
    CALIBRATION_EXAMPLES,
    calibrated_clip_norm,
    synthetic_batch,
    synthetic_gradient_norms,
)

pytestmark = pytest.mark.filterwarnings("ignore::pennylane_qshiftdp.exceptions.PrivacyWarning")


def _loader(x, y, batch=8):
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch)


def _linear(n_in=3, n_out=2):
    model = torch.nn.Linear(n_in, n_out)
    torch.nn.init.zeros_(model.weight)
    torch.nn.init.zeros_(model.bias)
    return model


# ------------------------------------------------------------------ the synthetic examples
def test_synthetic_batch_reads_the_schema_only():
    """Two examples of the same shape and dtype give the same batch; inputs on the range,
    labels in the classes; float labels are signs."""
    a = synthetic_batch(torch.zeros(4), torch.tensor(0), n_outputs=3, n=50, seed=1)
    b = synthetic_batch(torch.full((4,), 9.0), torch.tensor(2), n_outputs=3, n=50, seed=1)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    x, y = synthetic_batch(torch.zeros(2, 2), torch.tensor(1), n_outputs=3, n=200,
                           input_range=(0.0, math.pi))
    assert x.shape == (200, 2, 2) and x.min() >= 0 and x.max() <= math.pi
    assert set(y.tolist()) == {0, 1, 2}
    _, yf = synthetic_batch(torch.zeros(2), torch.tensor([0.5]), n_outputs=1, n=100)
    assert yf.shape == (100, 1) and set(yf.reshape(-1).tolist()) == {-1.0, 1.0}
    with pytest.raises(ValueError, match="input_range"):
        synthetic_batch(torch.zeros(2), torch.tensor(0), n_outputs=2, input_range=(1.0, 0.0))
    with pytest.raises(ValueError, match="n_outputs"):
        synthetic_batch(torch.zeros(2), torch.tensor(0), n_outputs=0)


def test_gradient_norms_match_the_closed_form_of_a_linear_model():
    """Linear(3, 1) under the linear proxy ±f: ‖∇‖ = √(‖x‖² + 1); Linear(3, K) at zero weights
    under cross-entropy: ‖(p − e_y) (x, 1)ᵀ‖ = √((1 − 1/K)² + (K − 1)/K²)·√(‖x‖² + 1)."""
    x = torch.randn(20, 3, generator=torch.Generator().manual_seed(0))
    expect = torch.sqrt((x.double() ** 2).sum(1) + 1)
    one = _linear(3, 1)
    norms = synthetic_gradient_norms(one, list(one.parameters()), x, torch.ones(20, 1))
    assert torch.allclose(norms, expect, rtol=1e-6)
    k = 3
    three = _linear(3, k)
    norms = synthetic_gradient_norms(three, list(three.parameters()), x,
                                     torch.randint(0, k, (20,)))
    factor = math.sqrt((1 - 1 / k) ** 2 + (k - 1) / k**2)
    assert torch.allclose(norms, factor * expect, rtol=1e-6)
    with pytest.raises(ValueError, match="params"):
        synthetic_gradient_norms(three, [], x, torch.zeros(20))


def test_calibrated_clip_norm_is_the_quantile():
    v = torch.tensor([3.0, 1.0, 2.0, 10.0])
    assert calibrated_clip_norm(v) == pytest.approx(float(np.quantile(v.numpy(), 0.5)))
    assert calibrated_clip_norm(v, 1.0) == 10.0
    with pytest.raises(ValueError, match="quantile"):
        calibrated_clip_norm(v, 0.0)
    with pytest.raises(ValueError, match="norms"):
        calibrated_clip_norm(torch.tensor([]))


# ------------------------------------------------------------------ the default of make_private
def test_the_default_clip_is_the_closed_form_median_and_ignores_the_data_values():
    """A zero-initialised Linear(3, 2) under cross-entropy: C = median over 64 standard normal
    inputs (seed 0, drawn here independently) of √(‖x‖² + 1)/√2, whatever the data's values."""
    g = torch.Generator().manual_seed(0)
    x_syn = torch.randn((CALIBRATION_EXAMPLES, 3), generator=g, dtype=torch.float64)
    expect = float(np.quantile(np.sqrt((x_syn.numpy() ** 2).sum(1) + 1) / math.sqrt(2), 0.5))
    clips = []
    for scale in (1.0, 100.0):  # two data sets of the same shape, very different values
        model = _linear()
        x = scale * torch.randn(40, 3, generator=torch.Generator().manual_seed(5))
        _, opt, _ = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                    _loader(x, (x[:, 0] > 0).long()), target_epsilon=2.0,
                                    target_delta=1e-5, epochs=1, seed=0)
        clips.append(opt.max_grad_norm)
        assert opt.public_gradient_norm == pytest.approx(expect, rel=1e-5)
    assert clips[0] == clips[1] == pytest.approx(expect, rel=1e-5)
    info = opt.ledger.extra["clipping"]
    assert info["mode"] == "calibrated" and info["calibration_loss"] == "cross-entropy"
    statement = opt.ledger.statement()
    assert "public synthetic examples" in statement and "standard normal" in statement
    assert "never from the data" in statement


def _reupload(seed=0):
    """A 2-qubit data re-uploading classifier (3 layers of RY(x) and Rot), ⟨Z0⟩."""
    dev = qml.device("default.qubit", wires=2)

    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(inputs, weights):
        for layer in range(3):
            for w in range(2):
                qml.RY(inputs[..., w], wires=w)
            for w in range(2):
                qml.Rot(*(weights[layer, w, j] for j in range(3)), wires=w)
            qml.CNOT(wires=[0, 1])
        return qml.expval(qml.Z(0))

    init = 0.3 * torch.randn(3, 2, 3, generator=torch.Generator().manual_seed(seed))
    return qml.qnn.TorchLayer(circuit, {"weights": (3, 2, 3)}, init_method={"weights": init})


def _moons(n=64, seed=0):
    from sklearn.datasets import make_moons

    x, y = make_moons(n, noise=0.15, random_state=seed)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(2.0 * y - 1.0, dtype=torch.float32)


def test_one_torchlayer_keeps_delta_as_the_certificate_not_the_clip():
    """The re-uploading classifier with the declared MSE loss: Δ is computed and stated, the
    clip is the synthetic median, far below Δ, and from the input range declared."""
    layer = _reupload()
    x, y = _moons()
    _, opt, _ = qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1),
                                _loader(x, y), target_epsilon=4.0, target_delta=1e-5,
                                epochs=1, seed=0, loss=qs.losses.MSELoss(),
                                input_range=(-1.5, 2.5))
    assert opt.sensitivity is not None and not opt.certified
    assert opt.max_grad_norm < opt.sensitivity.delta / CLIP_RATIO
    info = opt.ledger.extra["clipping"]
    assert info["delta"] == opt.sensitivity.delta and "[-1.5, 2.5]" in info["synthetic_inputs"]
    assert "stays the certificate" in opt.ledger.statement()


# ------------------------------------------------------------------ the diagnosis
def _train(opt, model, loader):
    for xb, yb in loader:
        opt.zero_grad()
        if len(xb):
            ((model(xb).reshape(-1) - yb) ** 2).mean().backward()
        opt.step()


def test_a_run_at_the_certified_clip_ends_with_the_clip_named():
    """Issue 44's stalling run: the re-uploading classifier on make_moons at ε = 4 with the
    certified clip Δ of the MSE loss. The run's last step warns, in one line, that C is
    C/m times the synthetic median m and names max_grad_norm; at the calibrated default the
    clip is not named."""
    layer = _reupload(seed=1)
    x, y = _moons(seed=1)
    model, opt, loader = qs.make_private(
        layer, torch.optim.Adam(layer.parameters(), lr=0.05), _loader(x, y, 16),
        target_epsilon=4.0, target_delta=1e-5, epochs=1, seed=1, loss=qs.losses.MSELoss(),
        max_grad_norm="certified")
    with pytest.warns(qs.PrivacyWarning, match="private run ended") as caught:
        _train(opt, model, loader)
    line = [str(w.message) for w in caught if "private run ended" in str(w.message)][0]
    assert "\n" not in line and "the clip is far above the gradients" in line
    ratio = opt.max_grad_norm / opt.public_gradient_norm
    assert ratio > CLIP_RATIO and f"{ratio:.2g}x" in line and "max_grad_norm" in line
    assert opt.stuck_run_cause() in line
    layer = _reupload(seed=1)
    model, opt, loader = qs.make_private(
        layer, torch.optim.Adam(layer.parameters(), lr=0.05), _loader(x, y, 16),
        target_epsilon=4.0, target_delta=1e-5, epochs=1, seed=1, loss=qs.losses.MSELoss())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _train(opt, model, loader)
    cause = opt.stuck_run_cause()
    assert cause is None or "the clip" not in cause


def test_the_clip_check_reads_released_and_public_values_only():
    """Records with clip C = 10 and a public median 1 name the clip (10x); a median of 5 does
    not (ratio 2 < 3); bad public norms are refused, naming the argument."""
    records = [{"released_sum_norm": 30.0, "noise_variance_total": 100.0, "clip_norm": 10.0,
                "parameter_step_norm": 0.01, "parameter_norm": 1.0}] * 4
    cause = stuck_run_cause(records, public_gradient_norm=1.0)
    assert cause is not None and "10x" in cause and "max_grad_norm near 1" in cause
    assert stuck_run_cause(records, public_gradient_norm=5.0) is None
    assert stuck_run_cause(records) is None
    with pytest.raises(ValueError, match="public_gradient_norm"):
        stuck_run_cause(records, public_gradient_norm=-1.0)
    flagged = stuck_run_cause(records, public_gradient_norm=1.0, clip_argument="--max-grad-norm")
    assert "--max-grad-norm near 1" in flagged and "calibrated" not in flagged
