"""Tests for qprldp_core.cli (file named test_qprldp_cli.py: test modules are imported by
basename and tests/pennylane_qshiftdp has its own test_cli.py)."""

import math

import pytest

from qprldp_core.cli import main


def test_certify_global(capsys):
    assert main(["certify", "--channel", "depolarizing", "--p", "0.3", "--dim", "2",
                 "--epsilon", "1"]) == 0
    out = capsys.readouterr().out
    assert "QLDP certificate" in out and "QPrLDP certificate" in out
    assert "p=0.3, d=2" in out and "exact" in out


def test_certify_required_value(capsys):
    assert main(["certify", "--p", "0.2", "--dim", "4", "--epsilon", "1.0",
                 "--notion", "qprldp"]) == 0
    out = capsys.readouterr().out
    # δ* = 0.9500000000000001 as computed (0.9 + 0.05 in floats): printed rounded up
    assert "0.950001 (exact)" in out and "QLDP certificate" not in out


def test_certify_local_with_delta(capsys):
    assert main(["certify", "--local", "--qubits", "3", "--p", "0.3", "--epsilon", "1",
                 "--delta", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "n=3" in out and "upper bound" in out and "delta >=" in out
    assert out.count("Smallest certified epsilon at delta = 0.5") == 1


def test_certify_epsilons_share_one_precision_rounded_up(capsys):
    """Issue 35: the two ε for a δ were printed as 5.20379 and 5.2038 (one value, it seemed).
    Both now have six significant digits, trailing zeros kept, and are rounded up."""
    from qprldp_core import local_depolarizing, qldp_epsilon, qprldp_epsilon

    assert main(["certify", "--local", "--qubits", "3", "--p", "0.3", "--epsilon", "1",
                 "--delta", "1e-5"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    ch = local_depolarizing(0.3, 3)
    e1, e2 = qldp_epsilon(ch, delta=1e-5), qprldp_epsilon(ch, delta=1e-5)
    assert line == ("Smallest certified epsilon at delta = 1e-05 (nats, rounded up): "
                    "QLDP 5.20379, QPrLDP 5.20381")
    assert 5.20379 >= e1 > 5.20378 and 5.20381 >= e2 > 5.20380  # rounded up, not to nearest


def test_certify_witness_is_a_file_on_the_command_line(capsys, tmp_path):
    """The witness line names a file (--save-witness), not a Python attribute."""
    import numpy as np

    from qprldp_core import depolarizing, qldp_value

    path = tmp_path / "w.npz"
    assert main(["certify", "--p", "0.3", "--dim", "2", "--epsilon", "1", "--notion", "qldp",
                 "--save-witness", str(path)]) == 0
    out = capsys.readouterr().out
    assert ".witness" not in out
    assert f"attains delta (rho_qldp, sigma_qldp in {path})" in out
    saved = np.load(path)
    delta = float(out.split("delta     : ")[1].split()[0])
    value = qldp_value(depolarizing(0.3, 2), saved["rho_qldp"], saved["sigma_qldp"],
                       epsilon=1.0)
    assert value == pytest.approx(delta, abs=1e-6)
    assert main(["certify", "--p", "0.3", "--dim", "2", "--epsilon", "1"]) == 0
    assert "write it with --save-witness FILE.npz" in capsys.readouterr().out


def test_certify_pennylane_parameter(capsys):
    eps0 = math.log(1 + 2 * (1 - 0.4) / 0.4)
    assert main(["certify", "--p-pennylane", "0.3", "--epsilon", str(eps0), "--notion",
                 "qldp"]) == 0
    out = capsys.readouterr().out
    assert "p=0.4, d=2" in out and "delta     : 0 (exact)" in out


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["certify", "--p", "1.5", "--dim", "2", "--epsilon", "1"], "`p` must be in [0, 1.33333]"),
        (["certify", "--p", "0.3", "--epsilon", "-1"], "`epsilon` must be finite and >= 0"),
        (["certify", "--p", "0.3", "--local", "--epsilon", "1"], "--local requires --qubits N."),
        (["certify", "--p", "0.3", "--dim", "1", "--epsilon", "1"], "`d` must be an integer >= 2"),
        (["certify", "--p", "0.3", "--epsilon", "1", "--delta", "2"], "`delta` must be in [0, 1]"),
        # refused before any d x d matrix is built (d = 1e5 once allocated 149 GiB)
        (["certify", "--p", "0.3", "--dim", "100000", "--epsilon", "1"],
         "--dim 100000 is too large: the certificates build dense d x d witness matrices "
         "(about 64·d² bytes, 596 GiB here)"),
        (["certify", "--p", "0.3", "--qubits", "13", "--epsilon", "1"],
         "--qubits 13 (d = 8192) is too large"),
    ],
)
def test_bad_input_exits_2(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and err.startswith("qprldp: error:")


def test_argparse_errors_exit_2(capsys):
    assert main(["certify", "--p", "abc", "--epsilon", "1"]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["certify", "--epsilon", "1"]) == 2  # neither --p nor --p-pennylane
    capsys.readouterr()


@pytest.mark.parametrize("argv,msg", [
    (["--local", "--qubits", "3", "--dim", "4"], "--local acts qubit by qubit and takes no --dim"),
    (["--qubits", "3", "--dim", "4"], "--dim 4 contradicts --qubits 3"),
    (["--dim", "4"], "--p-pennylane is PennyLane's single-qubit"),
])
def test_conflicting_options_are_refused(argv, msg, capsys):
    base = ["certify", "--epsilon", "1"]
    p = ["--p-pennylane", "0.1"] if "--p-pennylane" in msg else ["--p", "0.3"]
    assert main(base + p + argv) == 2
    assert msg in capsys.readouterr().err
