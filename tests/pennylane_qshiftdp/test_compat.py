"""The private PennyLane helpers we rely on still exist and behave (one place to fail)."""

import pennylane as qml

from pennylane_qshiftdp import _compat


def test_private_helpers_present():
    tape = qml.tape.QuantumScript([qml.RX(0.1, 0)], [qml.expval(qml.Z(0))])
    batch, _ = _compat.expand_transform_param_shift(tape)
    assert len(batch) == 1
    assert callable(_compat.contract_qjac_with_cjac)
