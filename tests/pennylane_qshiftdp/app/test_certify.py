"""`qshiftdp certify`: certificates of the training device's noise (issue 35)."""

import importlib.util
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
    (["--noise-model", "nomodule", "--epsilon", "1"],
     "argument --noise-model: --noise-model 'nomodule': not a fake backend name nor "
     "MODULE:NAME"),
    (["--noise-model", "no_such_module_x:m", "--epsilon", "1"],
     "--noise-model 'no_such_module_x:m': cannot be loaded"),
    (["--noise-model", "json:dumps", "--epsilon", "1"],
     "--noise-model 'json:dumps': names a callable that cannot be called without"),
    (["--noise-model", "json:JSONDecodeError", "--epsilon", "1"],
     "--noise-model 'json:JSONDecodeError': names a callable that cannot be called"),
    (["--noise-model", "math:pi", "--epsilon", "1"],
     "--noise-model 'math:pi': names a float, not a PennyLane or Qiskit Aer NoiseModel"),
    (["--epsilon", "1"], "one of the arguments --depolarizing --noise-model is required"),
])
def test_errors(argv, message, capsys):
    assert main(["certify", *argv]) == 2
    assert message in capsys.readouterr().err


def test_train_and_certify_share_the_noise_model_argument():
    """One parser and one help text for --noise-model in `train` and `certify`."""
    from pennylane_qshiftdp.app.noise_spec import NOISE_MODEL_HELP, parse_noise_model

    subs = build_parser().subparsers.choices
    actions = [next(a for a in subs[c]._actions if "--noise-model" in a.option_strings)
               for c in ("train", "certify")]
    assert all(a.type is parse_noise_model and a.help == NOISE_MODEL_HELP for a in actions)
    for cmd in ("train", "certify"):
        for value in ("FakeManilaV2", "mod:model", "path/to/file.py:model"):
            args = subs[cmd].parse_args(["--noise-model", value, "--epsilon", "1"])
            assert args.noise_model == value


HAS_QISKIT = all(importlib.util.find_spec(m) is not None
                 for m in ("qiskit_aer", "qiskit_ibm_runtime", "pennylane_qiskit"))


@pytest.mark.skipif(not HAS_QISKIT, reason="pennylane-qiskit is not installed")
def test_certify_refuses_an_unknown_fake_backend(capsys):
    assert main(["certify", "--noise-model", "FakeNowhereV2", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err
    assert "--noise-model 'FakeNowhereV2': no such backend in " \
        "qiskit_ibm_runtime.fake_provider" in err
    assert main(["certify", "--noise-model", "FakeManilaV2", "--qubits", "6", "--epsilon",
                 "1"]) == 2
    assert "--noise-model 'FakeManilaV2': describes 5 qubits, the model needs 6; choose a " \
        "larger fake backend.\n" in capsys.readouterr().err


@pytest.mark.skipif(not HAS_QISKIT, reason="pennylane-qiskit is not installed")
@pytest.mark.parametrize("backend", ["FakeManilaV2", "FakeLimaV2"])
def test_certify_a_fake_backend_by_name_and_as_a_qiskit_noise_model_file(backend, tmp_path,
                                                                         capsys):
    """issue 45 item 5: `certify --noise-model FakeManilaV2` and a file holding
    NoiseModel.from_backend(FakeManilaV2()) give the same certificate (it crashed with
    "OpIn does not support arithmetic operations ..."), with the coverage reported."""
    from qiskit_ibm_runtime import fake_provider

    path = tmp_path / "hw.py"
    path.write_text("from qiskit_aer.noise import NoiseModel\n"
                    f"from qiskit_ibm_runtime.fake_provider import {backend}\n"
                    f"model = NoiseModel.from_backend({backend}())\n")
    docs = []
    for spec in (backend, f"{path}:model"):
        assert main(["certify", "--noise-model", spec, "--epsilon", "1", "--qubits", "2",
                     "--layers", "1", "--json"]) == 0
        docs.append(json.loads(capsys.readouterr().out))
    assert docs[0] == docs[1]
    doc = docs[0]
    n_qubits = getattr(fake_provider, backend)().num_qubits
    status = {(e["errors"], e["status"]) for e in doc["coverage"]}
    # the job's circuit in Qiskit's basis uses sx and cx on qubits 0, 1: certified through
    # their depolarizing parts; reset and readout errors: not covered
    assert {("sx gate errors", "certified"), ("cx gate errors", "certified"),
            ("reset gate errors", "not covered"), ("readout errors", "not covered")} <= status
    sx = [e for e in doc["coverage"] if e["errors"] == "sx gate errors"
          and e["status"] != "not applied"]  # applied: certified (p > 0) or part 0
    assert sorted(q for e in sx for q in e["qubits"]) == [[0], [1]]
    found = [p[2] for p in doc["depolarizing_parts"]]
    for e in doc["coverage"]:
        if e["status"] == "certified":
            assert "thermal relaxation" in e["why"]
            assert all(p > 0 and any(abs(p - f) < 1e-9 for f in found)
                       for p in e["depolarizing_p"])
        elif "depolarizing_p" in e:
            assert e["status"] == "not covered" and set(e["depolarizing_p"]) == {0.0}
    readout = next(e for e in doc["coverage"] if e["errors"] == "readout errors")
    assert readout["qubits"] == [[q] for q in range(n_qubits)]
    # one certificate pair per distinct depolarizing part p > 0 of the errors applied
    parts = [p for p in doc["depolarizing_parts"] if p[2] > 0]
    assert parts and len(doc["channel_certificates"]) == 2 * len(parts)
    assert all(c["side"] == "upper_bound" for c in doc["channel_certificates"])
    assert main(["certify", "--noise-model", backend, "--epsilon", "1", "--qubits", "2",
                 "--layers", "1"]) == 0
    out = capsys.readouterr().out
    assert "Coverage of the noise model" in out and "NOT COVERED: readout errors" in out
    assert "CERTIFIED: cx gate errors on (0, 1) p=" in out


@pytest.mark.skipif(not HAS_QISKIT, reason="pennylane-qiskit is not installed")
def test_the_reset_conditions_of_a_converted_qiskit_model_are_dropped():
    """The cause of the crash: pennylane-qiskit maps `reset` to a mid-circuit measurement, an
    OpIn that raises on any operation; only those conditions are left out."""
    import warnings

    import pennylane as qml
    from qiskit_aer.noise import NoiseModel, depolarizing_error

    from pennylane_qshiftdp.app.certify import _from_qiskit

    nm = NoiseModel()
    nm.add_quantum_error(depolarizing_error(0.1, 1), ["sx"], [0])
    nm.add_quantum_error(depolarizing_error(0.2, 1), ["reset"], [0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = qml.from_qiskit_noise(nm)
    with pytest.raises(ValueError, match="OpIn does not support"):
        for condition in raw.model_map:
            condition(qml.CNOT([0, 1]))
    kept = _from_qiskit(nm, qml)
    assert len(raw.model_map) == 2 and len(kept.model_map) == 1
    assert next(iter(kept.model_map))(qml.SX(0))
