"""The classifier's neutral readout initialisation."""

import math

import numpy as np
import pytest
import torch

from pennylane_qshiftdp.app.models import HybridClassifier, QuantumClassifier, neutral_readout_wire


@pytest.mark.parametrize("n_qubits,layers", [(1, 1), (2, 1), (3, 2), (4, 2), (4, 3), (6, 2)])
def test_neutral_start_is_zero_on_every_input(n_qubits, layers):
    # with init_scale = 0 the state before the last rotations is real, and the readout is the
    # expectation of a Pauli string with one Y: exactly zero for every input
    model = QuantumClassifier(n_qubits, layers, device="default.qubit", shots=None,
                              init_scale=0.0)
    x = torch.as_tensor(np.random.default_rng(1).uniform(0, math.pi, (50, n_qubits)))
    with torch.no_grad():
        assert float(model(x).abs().max()) < 1e-6  # float32 weights: cos(fl(π/2)) ≈ 4e-8
    w = model.qlayer.weights.detach()
    wire = neutral_readout_wire(n_qubits, layers)
    assert torch.equal(w[-1, wire, :2], torch.full((2,), math.pi / 2, dtype=w.dtype))


def test_neutral_start_with_small_weights_and_the_old_start():
    x = torch.as_tensor(np.random.default_rng(2).uniform(0, math.pi, (200, 4)))
    neutral = QuantumClassifier(4, 2, device="default.qubit", shots=None, init_scale=0.01)
    small = QuantumClassifier(4, 2, device="default.qubit", shots=None, init_scale=0.01,
                              init="small")
    hybrid = HybridClassifier(4, 2, device="default.qubit", shots=None, init_scale=0.01)
    with torch.no_grad():
        # the near-identity start is cos(x_0)-like: far from zero for most inputs
        assert float(small(x).abs().max()) > 0.9
        assert float(neutral(x).abs().max()) < 0.05
        assert float(hybrid(x).abs().max()) < 0.05


def test_init_refusals():
    with pytest.raises(ValueError, match="`init` must be 'auto', 'neutral' or 'small'"):
        QuantumClassifier(2, 1, device="default.qubit", shots=None, init="zeros")
    with pytest.raises(ValueError, match="binary readout"):
        QuantumClassifier(3, 1, device="default.qubit", shots=None, init="neutral",
                          n_classes=3)
