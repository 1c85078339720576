"""Opacus's own per-sample-gradient checks on the product's TorchLayer models.

* ``opacus.utils.per_sample_gradients_utils.check_per_sample_gradients_are_correct`` (Opacus
  clones the model by pickling it: the QNode functions here are module-level).
* Opacus 1.6's ``GradSampleHooks_test`` (``opacus/tests/grad_samples/common.py``, shipped with
  the installed Opacus), adapted: its ``run_test`` runs ``grad_sample_mode`` "hooks",
  "functorch" and "ew" for both reductions; "hooks" must pass its checks, "functorch" and "ew"
  must be refused with a message naming "hooks" (they trace the layer with torch.func, which
  cannot see through a quantum device).
"""

from __future__ import annotations

import math

import pennylane as qml
import pytest
import torch
from opacus.tests.grad_samples.common import GradSampleHooks_test
from opacus.utils import per_sample_gradients_utils as psg

import pennylane_qshiftdp as qs


def circ_z0(inputs, weights):
    n = weights.shape[-2]
    qml.AngleEmbedding(inputs, wires=range(n))
    qml.StronglyEntanglingLayers(weights, wires=range(n))
    return qml.expval(qml.Z(0))


def circ_all(inputs, weights):
    n = weights.shape[-2]
    qml.AngleEmbedding(inputs, wires=range(n))
    qml.StronglyEntanglingLayers(weights, wires=range(n))
    return [qml.expval(qml.Z(w)) for w in range(n)]


def circ_tuple_probs(inputs, weights):
    n = weights.shape[-2]
    qml.AngleEmbedding(inputs, wires=range(n))
    qml.StronglyEntanglingLayers(weights, wires=range(n))
    return qml.probs(wires=0), qml.probs(wires=1)


def make_layer(n_wires, n_layers=2, device="default.qubit", circuit=circ_z0, seed=0):
    dev = qml.device(device, wires=n_wires)
    qnode = qml.QNode(circuit, dev, interface="torch", diff_method=qs.param_shift)
    torch.manual_seed(seed)
    shapes = {"weights": qml.StronglyEntanglingLayers.shape(n_layers=n_layers, n_wires=n_wires)}
    return qs.qnn.TorchLayer(qnode, shapes).double()


class PiSigmoid(torch.nn.Module):
    def forward(self, x):
        return math.pi * torch.sigmoid(x)


class Hybrid(torch.nn.Module):
    def __init__(self, n_wires, n_in=5, n_out=2, device="default.qubit"):
        super().__init__()
        self.pre = torch.nn.Linear(n_in, n_wires).double()
        self.act = PiSigmoid()
        self.q = make_layer(n_wires, device=device, circuit=circ_all)
        self.post = torch.nn.Linear(n_wires, n_out).double()

    def forward(self, x):
        return self.post(self.q(self.act(self.pre(x))))


def _x(b, n, scale=math.pi, seed=3):
    return torch.rand(b, n, generator=torch.Generator().manual_seed(seed),
                      dtype=torch.float64) * scale


#: The five models of the earlier run of Opacus's harness, plus a tuple-of-probs layer.
MODELS = {
    "2q_z0": lambda: (_x(5, 2), make_layer(2)),
    "3q_z0": lambda: (_x(5, 3), make_layer(3)),
    "2q_all_z": lambda: (_x(5, 2), make_layer(2, circuit=circ_all)),
    "3q_lightning_all_z": lambda: (_x(5, 3), make_layer(3, device="lightning.qubit",
                                                        circuit=circ_all)),
    "hybrid_2q": lambda: (torch.randn(5, 5, generator=torch.Generator().manual_seed(4),
                                      dtype=torch.float64), Hybrid(2)),
    "2q_tuple_probs": lambda: (_x(5, 2), make_layer(2, circuit=circ_tuple_probs)),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if "lightning" in n
                                                else []) for n in MODELS])
def test_check_per_sample_gradients_are_correct(name):
    x, model = MODELS[name]()
    assert psg.check_per_sample_gradients_are_correct(x, model, grad_sample_mode="hooks",
                                                      atol=1e-10, rtol=1e-8)


class TorchLayerGradSampleHooks(GradSampleHooks_test):
    """Opacus's harness on TorchLayer models (unittest style, as Opacus's own tests)."""

    def _run(self, name):
        x, model = MODELS[name]()
        for reduction in ("sum", "mean"):
            with self.subTest(grad_sample_mode="hooks", loss_reduction=reduction):
                self.run_test_with_reduction(x, model, loss_reduction=reduction,
                                             grad_sample_mode="hooks", atol=1e-10, rtol=1e-8)
            for mode in ("functorch", "ew"):
                with self.subTest(grad_sample_mode=mode, loss_reduction=reduction), \
                        self.assertRaisesRegex(NotImplementedError,
                                               "grad_sample_mode='hooks'"):
                    self.run_test_with_reduction(x, model, loss_reduction=reduction,
                                                 grad_sample_mode=mode)

    def test_2q_z0(self):
        self._run("2q_z0")

    def test_3q_z0(self):
        self._run("3q_z0")

    def test_2q_all_z(self):
        self._run("2q_all_z")

    @pytest.mark.slow  # lightning.qubit runs a broadcast tape example by example (~50 s)
    def test_3q_lightning_all_z(self):
        self._run("3q_lightning_all_z")

    def test_hybrid_2q(self):
        self._run("hybrid_2q")

    def test_2q_tuple_probs(self):
        self._run("2q_tuple_probs")

    def test_empty_batch(self):
        # Opacus's harness checks that a 0-sized batch goes through (hooks)
        _, model = MODELS["2q_z0"]()
        self.run_test_with_reduction(torch.zeros(0, 2, dtype=torch.float64), model,
                                     loss_reduction="sum", grad_sample_mode="hooks")


@pytest.mark.parametrize("engine", ["opacus", "pennylane_qshiftdp"])
def test_ghost_clipping_is_refused_before_training(engine):
    """grad_sample_mode="ghost" (Opacus's fast gradient clipping) steps Opacus's own optimizer,
    which divides by int(q·N) (opacus#819): refused on the product's layer by both engines
    before any step (Opacus's: the ModuleValidator rule; the product's: by name)."""
    import warnings

    import opacus
    from opacus.validators.errors import UnsupportedModuleError

    x, model = MODELS["hybrid_2q"]()
    data = torch.utils.data.TensorDataset(x, torch.tensor([0, 1, 1, 0, 1]))
    cls = opacus.PrivacyEngine if engine == "opacus" else qs.PrivacyEngine
    error = UnsupportedModuleError if engine == "opacus" else ValueError
    before = [p.detach().clone() for p in model.parameters()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Opacus: secure RNG off
        with pytest.raises(error, match="opacus#819"):
            cls().make_private(
                module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
                data_loader=torch.utils.data.DataLoader(data, batch_size=5),
                noise_multiplier=1.0, max_grad_norm=0.05, grad_sample_mode="ghost",
                criterion=torch.nn.CrossEntropyLoss())
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
