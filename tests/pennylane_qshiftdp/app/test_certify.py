"""`qshiftdp certify`: certificates of the training device's noise (issue 35)."""

import json

import pytest

from pennylane_qshiftdp.app.cli import build_parser, main


def test_help_lists_certify_and_names_qprldp(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "certify" in out and "predict" in out
    assert "`qprldp certify`" in out and "`qprldp`" in out
    assert "certify" in build_parser().subparsers.choices


def test_depolarizing_device_certificates_and_floor(capsys):
    from qprldp_core import depolarizing, qprldp_certificate, qprldp_epsilon

    assert main(["certify", "--depolarizing", "0.05", "--epsilon", "1", "--delta", "1e-5",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    p = 4 * 0.05 / 3
    qprldp = next(c for c in doc["channel_certificates"] if c["notion"] == "QPrLDP")
    assert qprldp["delta"] == pytest.approx(qprldp_certificate(depolarizing(p, 2),
                                                               epsilon=1.0).delta)
    assert qprldp["side"] == "exact"
    # <Z0> after D_p on every wire: v_min = 1 - (1 - p)^2 (docs/qprldp.md §7.2)
    assert doc["variance_floor"] == pytest.approx(1 - (1 - p) ** 2, abs=1e-9)
    assert doc["final_noise_p"] == {str(w): pytest.approx(p) for w in range(4)}
    [(q, _, e_qprldp)] = doc["epsilon_for_delta"]
    assert q == 0.05 and e_qprldp == qprldp_epsilon(depolarizing(p, 2), delta=1e-5)
    assert main(["certify", "--depolarizing", "0.05", "--epsilon", "1", "--qubits", "2",
                 "--layers", "1"]) == 0
    out = capsys.readouterr().out
    assert "QPrLDP (ε = 1, δ = 0.966667) [exact]" in out
    assert "Variance floor v_min = 0.128889" in out and "not the training data" in out


def test_a_noise_model_file_counts_through_its_depolarizing_part(tmp_path, capsys):
    """A noise model of Kraus channels (as qml.from_qiskit_noise makes): D_p o M per gate."""
    path = tmp_path / "mynoise.py"
    path.write_text(
        "import numpy as np\n"
        "import pennylane as qml\n"
        "from qprldp_core import depolarizing\n"
        "K = [np.asarray(k) for k in depolarizing(0.1, 2).kraus]\n"
        "def after(op, **kwargs):\n"
        "    for w in op.wires:\n"
        "        qml.QubitChannel(K, wires=w)\n"
        "model = qml.NoiseModel({qml.noise.op_in(['Rot', 'CNOT']): after})\n")
    assert main(["certify", "--noise-model", f"{path}:model", "--epsilon", "1", "--qubits",
                 "2", "--layers", "1", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p[:2] for p in doc["depolarizing_parts"]] == [["QubitChannel", 2]]
    assert doc["depolarizing_parts"][0][2] == pytest.approx(0.1, abs=1e-9)
    assert all(c["side"] == "upper_bound" for c in doc["channel_certificates"])
    # every gate, the last CNOTs included, is followed by D_0.1 o M on its wires
    assert doc["variance_floor"] == pytest.approx(1 - 0.9 ** 2, abs=1e-9)


@pytest.mark.parametrize("argv, message", [
    (["--depolarizing", "0.9", "--epsilon", "1"], "--depolarizing (PennyLane's q) must be in"),
    (["--depolarizing", "0.1", "--epsilon", "-1"], "--epsilon must be a finite number >= 0"),
    (["--depolarizing", "0.1", "--epsilon", "1", "--delta", "2"], "--delta must be in [0, 1]"),
    (["--noise-model", "nomodule", "--epsilon", "1"], "must be MODULE:NAME"),
    (["--noise-model", "no_such_module_x:m", "--epsilon", "1"], "cannot be loaded"),
    (["--epsilon", "1"], "one of the arguments --depolarizing --noise-model is required"),
])
def test_errors(argv, message, capsys):
    assert main(["certify", *argv]) == 2
    assert message in capsys.readouterr().err
