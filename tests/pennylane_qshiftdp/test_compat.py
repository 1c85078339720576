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


def test_device_rng_is_the_simulators_generator():
    import numpy as np

    dev = qml.device("default.qubit", wires=1, seed=3)
    assert isinstance(_compat.device_rng(dev), np.random.Generator)
    assert _compat.device_rng(dev) is dev._rng
    assert _compat.device_rng(object()) is None


def test_opacus_keeps_unpromoted_per_example_gradients_where_the_check_reads_them():
    """Two forward passes and one backward: Opacus leaves the backward's per-example gradients
    unpromoted (``grad_sample`` None) in the attribute the optimizer's check reads."""
    import torch
    from opacus import GradSampleModule

    model = GradSampleModule(torch.nn.Linear(2, 1))
    x = torch.ones(3, 2)
    model(x)  # no backward
    model(x).sum().backward()
    p = model._module.weight
    assert p.grad_sample is None
    assert _compat.unpromoted_grad_sample(p) is not None
    assert _compat.unpromoted_grad_sample(torch.nn.Parameter(torch.zeros(1))) is None
