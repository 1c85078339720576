"""The private PennyLane helpers we rely on still exist and behave (one place to fail)."""

import pennylane as qml

from pennylane_qshiftdp import _compat


def test_private_helpers_present():
    tape = qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.expval(qml.Z(0))])
    batch, _ = _compat.expand_transform_param_shift(tape)
    assert len(batch) == 1
    assert callable(_compat.contract_qjac_with_cjac)


def test_opacus_functorch_preparation_attribute():
    """The attribute the product's layer reads to refuse grad_sample_mode='functorch'."""
    import torch
    from opacus.grad_sample.functorch import prepare_layer

    layer = torch.nn.Linear(2, 1)
    assert not _compat.prepared_for_functorch(layer)
    prepare_layer(layer)
    assert _compat.prepared_for_functorch(layer)
