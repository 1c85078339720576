"""The loader checks of ``make_private`` and ``PrivacyEngine`` (``data_loader.private_dataset``)."""

import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs


def _layer():
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    qnode = qml.QNode(circuit, qml.device("default.qubit"), interface="torch",
                      diff_method=qs.param_shift)
    return qml.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)})


def _empty_loader():
    data = torch.utils.data.TensorDataset(torch.zeros(0, 2, dtype=torch.float64),
                                          torch.zeros(0, dtype=torch.long))
    return torch.utils.data.DataLoader(data, batch_size=4)


@pytest.mark.parametrize("kwargs", [{}, {"sample_rate": 0.1}, {"dataset_size": 100}])
def test_an_empty_data_set_is_refused_by_make_private_naming_the_loader(kwargs):
    """A naive user's empty loader gave a bare ZeroDivisionError after a q = 1 warning."""
    import warnings

    layer = _layer()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match=r"`data_loader`'s data set is empty \(0 examples\)"):
            qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1), _empty_loader(),
                            target_epsilon=1.0, target_delta=1e-5, epochs=1, max_grad_norm=1.0,
                            **kwargs)
    assert not [w for w in seen if issubclass(w.category, qs.PrivacyWarning)]


def test_an_empty_data_set_is_refused_by_the_privacy_engine():
    layer = _layer()
    with pytest.raises(ValueError, match="data set is empty"):
        qs.PrivacyEngine(accountant="rdp").make_private(
            module=layer, optimizer=torch.optim.SGD(layer.parameters(), lr=0.1),
            data_loader=_empty_loader(), noise_multiplier=1.0, max_grad_norm=1.0,
            poisson_sampling=True)
