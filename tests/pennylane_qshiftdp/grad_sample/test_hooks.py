"""Torch's warning about Opacus's output hooks: where it comes from, and its scoped handling."""

import subprocess
import sys
import warnings

import pennylane as qml
import torch

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.grad_sample import OUTPUT_HOOK_MESSAGE, ignore_output_hook_warning


def _private_layer():
    @qml.qnode(qml.device("default.qubit", wires=2), diff_method=qs.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    layer = qs.qnn.TorchLayer(circuit, {"weights": (1, 2, 3)})
    data = torch.utils.data.TensorDataset(torch.rand(8, 2, dtype=torch.float64),
                                          torch.ones(8, dtype=torch.float64))
    return qs.make_private(layer, torch.optim.SGD(layer.parameters(), lr=0.1),
                           torch.utils.data.DataLoader(data, batch_size=4), target_epsilon=2.0,
                           target_delta=1e-5, epochs=1, seed=0, secure_mode=False,
                           loss=qs.losses.LinearLoss())


def _backward(model, scoped: bool) -> list[str]:
    x = torch.rand(3, 2, dtype=torch.float64)  # data: no gradient with respect to it
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        if scoped:
            with ignore_output_hook_warning():
                model(x).sum().backward()
                warnings.warn("another warning in the block", UserWarning, stacklevel=1)
        else:
            model(x).sum().backward()
    return [str(w.message) for w in seen]


def test_the_warning_comes_from_opacus_hooks_on_a_layer_fed_by_data_and_is_scoped():
    """Outside the scope torch warns on every backward pass through the private model (the
    layer's inputs need no gradient); inside it, that message alone is ignored."""
    model, opt, _ = _private_layer()
    for _ in range(2):  # every pass, not once
        opt.zero_grad()
        assert any(m.startswith(OUTPUT_HOOK_MESSAGE) for m in _backward(model, scoped=False))
        opt.step()
    opt.zero_grad()
    assert _backward(model, scoped=True) == ["another warning in the block"]
    assert not any(OUTPUT_HOOK_MESSAGE in str(f[1]) for f in warnings.filters)


def test_no_process_wide_filter_and_the_cli_user_never_sees_it(tmp_path):
    """In a fresh interpreter with every warning shown (-W always): importing the library (after
    its dependencies, which install filters of their own) installs no warning filter, and a
    `qshiftdp train` run (a TorchLayer fed by the data, Opacus's hooks on it) prints torch's
    hook warning nowhere."""
    code = f"""
import warnings
import numpy, opacus, pennylane, scipy, torch
before = list(warnings.filters)
import pennylane_qshiftdp as qs
qs.make_private  # loads the library: grad samplers, validators
import pennylane_qshiftdp.grad_sample, pennylane_qshiftdp.qnn
print("FILTERS UNCHANGED", list(warnings.filters) == before)
from pennylane_qshiftdp.app.cli import main
print("EXIT", main(["train", "--qubits", "2", "--layers", "1", "--epochs", "2", "--shots", "50",
                    "--seeded-noise", "--no-progress", "--output-dir", {str(tmp_path / 'r')!r}]))
"""
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True,
                          text=True, timeout=600)
    assert "FILTERS UNCHANGED True" in proc.stdout, proc.stdout + proc.stderr[-3000:]
    assert "EXIT 0" in proc.stdout, proc.stderr[-3000:]
    assert "Full backward hook" not in proc.stdout + proc.stderr
