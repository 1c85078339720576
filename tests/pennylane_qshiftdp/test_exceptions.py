"""One exception per kind of refusal: the same case raises the same type at every entry point."""

import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.qnn.evaluation import evaluate_layer


def _layer(circuit, shape):
    qnode = qml.QNode(circuit, qml.device("default.qubit", wires=1), interface="torch",
                      diff_method=qs.param_shift)
    return qs.qnn.TorchLayer(qnode, {"weights": shape}).double()


def _data_times_weight(inputs, weights):
    qml.RX(weights[0] * inputs[..., 0], wires=0)
    return qml.expval(qml.Z(0))


def _sample(inputs, weights):
    qml.RX(inputs[..., 0], wires=0)
    qml.RY(weights[0], wires=0)
    return qml.sample(qml.Z(0))


def test_a_gate_parameter_of_data_and_weights_is_a_sensitivity_error_everywhere():
    layer = _layer(_data_times_weight, (1,))
    x = torch.full((2, 1), 0.3, dtype=torch.float64)
    with pytest.raises(qs.SensitivityError, match="depends on"):
        qs.sensitivity(layer.qnode, inputs=x[0], weights=layer.weights.detach().requires_grad_())
    with pytest.raises(qs.SensitivityError, match="both the inputs and the weights"):
        evaluate_layer(layer, x)
    with pytest.raises(qs.SensitivityError, match="both the inputs and the weights"):
        layer(x).sum().backward()


def test_a_return_without_a_gradient_is_an_unsupported_measurement_everywhere():
    layer = _layer(_sample, (1,))
    x = torch.full((2, 1), 0.3, dtype=torch.float64)
    tape = qml.tape.QuantumScript([qml.RX(0.3, 0)], [qml.sample(qml.Z(0))], shots=10)
    with pytest.raises(qs.UnsupportedMeasurementError, match="cannot differentiate"):
        qs.param_shift(tape)
    with pytest.raises(qs.UnsupportedMeasurementError, match="no parameter-shift gradient"):
        evaluate_layer(layer, x)


def test_the_kinds_are_distinct_and_keep_their_builtin_bases():
    assert issubclass(qs.SensitivityError, ValueError)
    assert issubclass(qs.UnsupportedMeasurementError, ValueError)
    assert issubclass(qs.PrivacyBudgetExceededError, RuntimeError)
    assert issubclass(qs.PrivacyWarning, UserWarning)
    kinds = [qs.SensitivityError, qs.UnsupportedMeasurementError, qs.PrivacyBudgetExceededError]
    assert not any(issubclass(a, b) for a in kinds for b in kinds if a is not b)
