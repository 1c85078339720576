"""The Opacus ``ModuleValidator`` rule and fixer for TorchLayers (pennylane_qshiftdp.validators).

The matrix of models trained after the fix is in ``qnn/test_torch_layer.py``; here: what the
rule reports and what the fixer and ``convert_torch_layers`` return, case by case.
"""

import pennylane as qml
import pytest
import torch
from opacus.validators import ModuleValidator
from opacus.validators.errors import UnsupportedModuleError

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.validators import (
    convert_torch_layers,
    fix_torch_layer,
    validate_torch_layer,
)


def _qnode(diff_method):
    @qml.qnode(qml.device("default.qubit", wires=2), diff_method=diff_method)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    return circuit


SHAPES = {"weights": (1, 2, 3)}


def test_a_private_pennylane_layer_is_reported_and_fixed_in_place():
    plain = qml.qnn.TorchLayer(_qnode(qs.param_shift), SHAPES)
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), plain)
    [error] = ModuleValidator.validate(model)
    assert isinstance(error, UnsupportedModuleError) and "convert_torch_layers" in str(error)
    params = list(model.parameters())
    assert convert_torch_layers(model) is model
    assert type(model[1]) is qs.qnn.TorchLayer
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert ModuleValidator.validate(model) == [] and validate_torch_layer(model[1]) == []


def test_a_layer_that_is_itself_the_model_is_returned_converted():
    plain = qml.qnn.TorchLayer(_qnode(qs.param_shift), SHAPES)
    converted = convert_torch_layers(plain)
    assert type(converted) is qs.qnn.TorchLayer and converted.weights is plain.weights


@pytest.mark.parametrize("diff_method", ["parameter-shift", "backprop", "finite-diff"])
def test_a_non_private_qnode_is_left_alone_and_left_to_opacus(diff_method):
    """A PennyLane layer that does not use the private transform is not this package's: the
    fixer leaves it and Opacus's validator decides as without the import (no rule: no error);
    make_private refuses it (test_privacy_engine)."""
    plain = qml.qnn.TorchLayer(_qnode(diff_method), SHAPES)
    assert fix_torch_layer(plain) is plain
    model = torch.nn.Sequential(plain)
    assert convert_torch_layers(model)[0] is plain
    assert ModuleValidator.validate(model) == []


def test_the_products_layer_with_a_changed_qnode_is_reported():
    layer = qs.qnn.TorchLayer(_qnode(qs.param_shift), SHAPES)
    layer.qnode = _qnode("backprop")
    [error] = validate_torch_layer(layer)
    assert isinstance(error, UnsupportedModuleError) and "backprop" in str(error)


def test_convert_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="`module` must be a torch.nn.Module. Found int."):
        convert_torch_layers(3)


@pytest.mark.parametrize("first", ["pennylane_qshiftdp.validators",
                                   "pennylane_qshiftdp.grad_sample",
                                   "pennylane_qshiftdp.qnn.evaluation",
                                   "pennylane_qshiftdp.grad_sample.torch_layer"])
def test_whichever_module_is_imported_first_registers_sampler_rule_and_fixer(first):
    """The layer, its grad sampler and the validator rule import one another's modules; any of
    them imported first (in a fresh process) leaves all three registrations in place."""
    import subprocess
    import sys

    code = (f"import {first}\n"
            "import pennylane as qml\n"
            "from opacus.grad_sample import GradSampleModule\n"
            "from opacus.validators import ModuleValidator\n"
            "from pennylane_qshiftdp.qnn import TorchLayer, convert_torch_layers\n"
            "print(TorchLayer in GradSampleModule.GRAD_SAMPLERS,"
            " qml.qnn.TorchLayer in ModuleValidator.FIXERS,"
            " TorchLayer in ModuleValidator.VALIDATORS, callable(convert_torch_layers))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip() == "True True True True", out.stderr[-2000:]
