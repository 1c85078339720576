"""Tests for pennylane_qshiftdp.transform: equality with qml.gradients.param_shift, statistics."""

import re

import numpy as np
import pennylane as qml
import pytest
import torch
from pennylane import numpy as pnp

import pennylane_qshiftdp as qs
from pennylane_qshiftdp.gradients.shot_statistics import sample_moments

DEVICES = ["default.qubit", "lightning.qubit"]
SHOTS = [None, 1000, [(100, 2), 500]]


def flat(r):
    if isinstance(r, (tuple, list)):
        return np.concatenate([flat(x) for x in r]) if len(r) else np.zeros(0)
    return np.ravel(np.asarray(qml.math.toarray(r) if not isinstance(r, torch.Tensor)
                               else r.detach().numpy(), dtype=float))


def _c_rot(x):
    qml.Rot(x[0], x[1], x[2], wires=0)
    qml.RX(x[3], 1)
    qml.RY(x[4], 1)
    qml.RZ(x[5], 1)
    qml.CNOT([0, 1])
    return qml.expval(qml.Z(0) @ qml.X(1))


def _c_controlled(x):
    qml.Hadamard(0)
    qml.Hadamard(1)
    qml.CRX(x[0], [0, 1])
    qml.CRY(x[1], [1, 2])
    qml.CRZ(x[2], [0, 2])
    qml.RX(0.3, 2)
    return qml.expval(qml.Y(2))


def _c_ising(x):
    qml.Hadamard(0)
    qml.IsingXX(x[0], [0, 1])
    qml.IsingZZ(x[1], [1, 2])
    qml.MultiRZ(x[2], wires=[0, 1, 2])
    qml.RY(0.4, 2)
    return qml.expval(qml.X(0) @ qml.Y(1))


def _c_shared_scaled(x):
    qml.RX(x[0], 0)
    qml.RY(x[0], 1)  # one weight in two gates
    qml.RX(0.7 * x[1], 1)  # scaled weight
    qml.CNOT([0, 1])
    return qml.expval(qml.Z(1))


def _c_hamiltonian(x):
    qml.RX(x[0], 0)
    qml.RY(x[1], 1)
    qml.CNOT([0, 1])
    qml.RX(x[2], 1)
    return qml.expval(qml.Hamiltonian([0.5, -0.3, 0.8], [qml.Z(0), qml.X(1), qml.Y(0) @ qml.Y(1)]))


def _c_two_meas(x):
    qml.RX(x[0], 0)
    qml.RY(x[1], 1)
    qml.CNOT([0, 1])
    qml.RX(x[2], 1)
    return qml.expval(qml.Z(0)), qml.expval(qml.X(1))


CIRCUITS = {
    "rot_rx_ry_rz": (_c_rot, 6, 2),
    "crx_cry_crz": (_c_controlled, 3, 3),
    "ising_multirz": (_c_ising, 3, 3),
    "shared_scaled": (_c_shared_scaled, 2, 2),
    "hamiltonian": (_c_hamiltonian, 3, 2),
    "two_measurements": (_c_two_meas, 3, 2),
}


def _pair(func, wires, devname, shots, seed=7):
    """The same circuit as two QNodes on two identically seeded devices."""
    out = []
    for _ in range(2):
        dev = qml.device(devname, wires=wires, seed=seed)
        out.append(qml.set_shots(qml.QNode(func, dev), shots=shots))
    return out


@pytest.mark.parametrize("devname", DEVICES)
@pytest.mark.parametrize("shots", SHOTS, ids=["analytic", "1000", "shot_vector"])
@pytest.mark.parametrize("name", list(CIRCUITS))
def test_gradient_equals_pennylane(devname, shots, name):
    func, n, wires = CIRCUITS[name]
    x = pnp.array(np.linspace(0.2, 1.1, n), requires_grad=True)
    ref_q, our_q = _pair(func, wires, devname, shots)
    ref = flat(qml.gradients.param_shift(ref_q)(x))
    rec = qs.ShotRecorder()
    ours = flat(qs.param_shift(our_q, recorder=rec if shots else None)(x))
    sums = name == "hamiltonian"
    if shots is None:
        np.testing.assert_allclose(ours, ref, atol=1e-10, rtol=0)
    elif sums and devname == "lightning.qubit" and isinstance(shots, list):
        # lightning seeds each tape afresh, so per-copy tapes draw other samples: only the
        # distribution is the same (documented). Check closeness within shot noise.
        np.testing.assert_allclose(ours, ref, atol=0.5)
    else:
        np.testing.assert_allclose(ours, ref, atol=1e-12 if sums else 0.0, rtol=0)
    if shots is not None:
        assert rec.num_calls == 1 and len(rec.statistics) > 0


def test_crx_known_value_four_term_rule():
    dev = qml.device("default.qubit", wires=2)

    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(theta):
        qml.Hadamard(0)
        qml.CRX(theta, wires=[0, 1])
        return qml.expval(qml.X(0))

    g = qml.grad(circuit)(pnp.array(0.5, requires_grad=True))
    assert abs(float(g) - (-0.1237020)) < 1e-7
    # a two-term rule would give -0.17494
    two_term = 0.5 * (circuit(pnp.array(0.5 + np.pi / 2)) - circuit(pnp.array(0.5 - np.pi / 2)))
    assert abs(float(two_term) - (-0.17494)) < 1e-5
    tape = qml.workflow.construct_tape(circuit)(pnp.array(0.5, requires_grad=True))
    assert qs.shift_rule_coefficients(tape).shape == (1, 4)


@pytest.mark.parametrize("devname", DEVICES)
@pytest.mark.parametrize("interface", ["torch", "autograd"])
def test_as_diff_method(devname, interface):
    shots = 500
    grads = []
    for dm in ("parameter-shift", qs.param_shift):
        dev = qml.device(devname, wires=2, seed=11)
        qn = qml.set_shots(qml.QNode(_c_hamiltonian, dev, diff_method=dm,
                                     interface=interface), shots=shots)
        if interface == "torch":
            x = torch.tensor([0.3, 0.5, 0.9], dtype=torch.float64, requires_grad=True)
            qn(x).backward()
            grads.append(x.grad.numpy().copy())
        else:
            x = pnp.array([0.3, 0.5, 0.9], requires_grad=True)
            grads.append(np.asarray(qml.grad(qn)(x)))
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-12, rtol=0)


@pytest.mark.parametrize("devname", DEVICES)
def test_input_broadcasting(devname):
    def f(inputs, w):
        qml.AngleEmbedding(inputs, wires=range(2))
        qml.RY(w[0], 0)
        qml.CRX(w[1], [0, 1])
        return qml.expval(qml.Z(1))

    inputs = pnp.array(np.random.default_rng(0).uniform(0, np.pi, (4, 2)), requires_grad=False)
    w = pnp.array([0.4, 0.7], requires_grad=True)
    ref_q, our_q = _pair(f, 2, devname, 300)
    rec = qs.ShotRecorder()
    ref = flat(qml.gradients.param_shift(ref_q)(inputs, w))
    ours = flat(qs.param_shift(our_q, recorder=rec)(inputs, w))
    np.testing.assert_array_equal(ours, ref)
    st = rec.statistics
    assert set(st.batch_index.tolist()) == {0, 1, 2, 3}


def _raw_sample_stats(tapes, devname, seed, wires_obs):
    """Execute the same shifted tapes with raw computational-basis samples instead."""
    dev = qml.device(devname, wires=2, seed=seed)
    raw = [t.copy(measurements=[qml.sample(wires=[0, 1])]) for t in tapes]
    return [np.asarray(r, dtype=float) for r in qml.execute(raw, dev)]


def test_statistics_match_raw_samples_pauli_word():
    def f(x):
        qml.RX(x[0], 0)
        qml.RY(x[1], 1)
        qml.CNOT([0, 1])
        return qml.expval(qml.Z(1))

    x = pnp.array([0.8, 0.3], requires_grad=True)
    dev = qml.device("default.qubit", wires=2, seed=5)
    qn = qml.set_shots(qml.QNode(f, dev), shots=200)
    rec = qs.ShotRecorder()
    tape = qml.workflow.construct_tape(qn)(x)
    tapes, fn = qs.param_shift(tape, recorder=rec)
    fn(qml.execute(tapes, dev))
    st = rec.statistics
    samples = _raw_sample_stats(tapes, "default.qubit", 5, None)
    for row in st.rows():
        z1 = 1.0 - 2.0 * samples[row["tape_index"]][:, 1]
        mean, var, m4 = sample_moments(z1)
        assert row["shots"] == 200
        assert row["mean"] == pytest.approx(mean, abs=1e-12)
        assert row["variance"] == pytest.approx(var, abs=1e-12)
        assert row["fourth_moment"] == pytest.approx(m4, abs=1e-12)
    coeffs = qs.shift_rule_coefficients(tape)
    assert {(r["trainable_param"], round(r["coefficient"], 12)) for r in st.rows()} == {
        (0, 0.5), (0, -0.5), (1, 0.5), (1, -0.5)} and coeffs.shape == (2, 4)


def test_statistics_match_raw_samples_hamiltonian():
    coeffs = [0.5, 0.3, 0.2]
    H = qml.Hamiltonian(coeffs, [qml.Z(0), qml.Z(1), qml.Z(0) @ qml.Z(1)])

    def f(x):
        qml.RX(x[0], 0)
        qml.RY(x[1], 1)
        qml.CNOT([0, 1])
        return qml.expval(H)

    x = pnp.array([0.8, 0.3], requires_grad=True)
    dev = qml.device("default.qubit", wires=2, seed=9)
    qn = qml.set_shots(qml.QNode(f, dev), shots=300)
    rec = qs.ShotRecorder()
    tape = qml.workflow.construct_tape(qn)(x)
    tapes, fn = qs.param_shift(tape, recorder=rec)
    fn(qml.execute(tapes, dev))
    pl_tapes, _ = qml.gradients.param_shift(tape)
    samples = _raw_sample_stats(pl_tapes, "default.qubit", 9, None)
    distinct = set()
    for row in rec.statistics.rows():
        z = 1.0 - 2.0 * samples[row["tape_index"]]
        h = coeffs[0] * z[:, 0] + coeffs[1] * z[:, 1] + coeffs[2] * z[:, 0] * z[:, 1]
        distinct |= set(np.round(h, 9).tolist())
        mean, var, m4 = sample_moments(h)
        assert row["mean"] == pytest.approx(mean, abs=1e-12)
        assert row["variance"] == pytest.approx(var, abs=1e-12)
        assert row["fourth_moment"] == pytest.approx(m4, abs=1e-12)
    assert len(distinct) > 2  # really more than two eigenvalues


def test_context_manager_recorder_and_shot_vector_rows():
    dev = qml.device("default.qubit", wires=2, seed=1)
    qn = qml.set_shots(qml.QNode(_c_two_meas, dev, diff_method=qs.param_shift),
                       shots=[(100, 2), 500])
    x = pnp.array([0.1, 0.2, 0.3], requires_grad=True)
    with qs.ShotRecorder() as rec:
        qml.jacobian(lambda v: qml.math.stack([qml.math.stack(r) for r in qn(v)]))(x)
    st = rec.statistics
    assert set(st.shot_copy.tolist()) == {0, 1, 2}
    assert set(st.measurement.tolist()) == {0, 1}
    assert sorted(set(st.shots.tolist())) == [100, 500]
    # 3 params x 2 shifted tapes x 3 copies x 2 measurements
    assert len(st) == 3 * 2 * 3 * 2


@pytest.mark.parametrize("measurement", [
    lambda: qml.sample(qml.Z(0)), lambda: qml.counts(qml.Z(0)), lambda: qml.state()],
    ids=["sample", "counts", "state"])
def test_no_gradient_returns_raise(measurement):
    tape = qml.tape.QuantumScript([qml.RX(pnp.array(0.3, requires_grad=True), 0)],
                                  [measurement()], shots=10 if "state" not in str(measurement())
                                  else None)
    with pytest.raises(qs.UnsupportedMeasurementError, match="cannot differentiate"):
        qs.param_shift(tape)


class _NoRule(qml.operation.Operation):
    num_wires = 1
    num_params = 1
    grad_method = None


def test_gate_without_shift_rule_raises():
    dev = qml.device("default.qubit", wires=1)

    @qml.qnode(dev, diff_method=qs.param_shift)
    def circuit(x):
        qml.RY(x, 0)
        _NoRule(x, wires=0)
        return qml.expval(qml.Z(0))

    tape = qml.tape.QuantumScript([_NoRule(pnp.array(0.3, requires_grad=True), wires=0)],
                                  [qml.expval(qml.Z(0))])
    with pytest.raises(ValueError, match=re.escape(
            "needs a parameter-shift rule for every trainable gate; the gate(s) "
            "_NoRule(wires=[0]) have none and no decomposition into gates that do.")):
        qs.param_shift(tape)


def test_fallback_fn_refused():
    tape = qml.tape.QuantumScript([qml.RX(pnp.array(0.3, requires_grad=True), 0)],
                                  [qml.expval(qml.Z(0))])
    with pytest.raises(NotImplementedError, match="no a-priori bound"):
        qs.param_shift(tape, fallback_fn=qml.gradients.finite_diff)


@pytest.mark.parametrize("shots", [0, -3, 1.5, True, [(100, 0)], "100"])
def test_shots_must_be_positive_integers(shots):
    with pytest.raises(ValueError, match=re.escape("`shots` must be None, a positive integer")):
        qs.validate_shots(shots)


def test_recording_needs_finite_shots_and_two_shots():
    tape = qml.tape.QuantumScript([qml.RX(pnp.array(0.3, requires_grad=True), 0)],
                                  [qml.expval(qml.Z(0))])
    with pytest.raises(ValueError, match="analytic"):
        qs.param_shift(tape, recorder=qs.ShotRecorder())
    tape1 = qml.tape.QuantumScript(tape.operations, tape.measurements, shots=1)
    tapes, fn = qs.param_shift(tape1, recorder=qs.ShotRecorder())
    with pytest.raises(ValueError, match="at least 2 shots"):
        fn(qml.execute(tapes, qml.device("default.qubit")))


def test_recorder_type_checked():
    tape = qml.tape.QuantumScript([qml.RX(pnp.array(0.3, requires_grad=True), 0)],
                                  [qml.expval(qml.Z(0))], shots=10)
    with pytest.raises(TypeError, match=re.escape("`recorder` must be a ShotRecorder")):
        qs.param_shift(tape, recorder=[])


def test_light_cone_pruned_parameter_has_no_rows():
    def f(x):
        qml.RX(x[0], 0)
        qml.RX(x[1], 1)  # outside the light cone of Z(0)
        return qml.expval(qml.Z(0))

    dev = qml.device("default.qubit", wires=2, seed=3)
    qn = qml.set_shots(qml.QNode(f, dev), shots=100)
    rec = qs.ShotRecorder()
    g = qs.param_shift(qn, recorder=rec)(pnp.array([0.2, 0.4], requires_grad=True))
    assert float(flat(g)[1]) == 0.0
    assert set(rec.statistics.trainable_param.tolist()) == {0}


def test_observable_range_and_type_error():
    assert qs.observable_range(0.5 * qml.Y(0) @ qml.X(1)) == (-0.5, 0.5)
    assert qs.observable_range(qml.Projector([1], wires=0)) == (0.0, 1.0)
    with pytest.raises(TypeError, match=re.escape("`obs` must be a PennyLane observable")):
        qs.observable_range("Z")
