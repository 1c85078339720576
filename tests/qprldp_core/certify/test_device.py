"""Tests for qprldp_core.certify.device: certify_device and its variance floor, against
density-matrix simulation of PennyLane circuits."""

import re

import numpy as np
import pytest

from qprldp_core.certify import (
    DeviceCertificate,
    certify_device,
    qldp_certificate,
)
from qprldp_core.channels import depolarizing

# -- PennyLane device certification ----------------------------------------------------------
qml = pytest.importorskip("pennylane")


PAULIS = {"X": qml.PauliX, "Y": qml.PauliY, "Z": qml.PauliZ}


def _random_circuit(seed, n_wires):
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(int(rng.integers(3, 9))):
        kind = rng.choice(["rot", "rot", "cnot", "dep", "dep", "amp", "flip"])
        w = int(rng.integers(n_wires))
        if kind == "cnot" and n_wires > 1:
            w2 = int((w + 1 + rng.integers(n_wires - 1)) % n_wires)
            steps.append(("cnot", (w, w2), None))
        elif kind == "dep":
            steps.append(("dep", w, float(rng.uniform(0, 1))))
        elif kind == "amp":
            steps.append(("amp", w, float(rng.uniform(0, 0.5))))
        elif kind == "flip":
            steps.append(("flip", w, float(rng.uniform(0, 0.5))))
        else:
            steps.append((str(rng.choice(["RX", "RY", "RZ"])), w, None))
    word = {}
    while not word:
        for w in range(n_wires):
            c = rng.choice(["I", "X", "Y", "Z"])
            if c != "I":
                word[w] = str(c)
    return steps, word


def _qnode(steps, word, n_wires):
    dev = qml.device("default.mixed", wires=n_wires)

    def body(params):
        qml.RY(params[0], wires=0)
        if n_wires > 1:
            qml.RX(params[1], wires=1)
        k = 2
        for kind, w, val in steps:
            if kind == "cnot":
                qml.CNOT(wires=list(w))
            elif kind == "dep":
                qml.DepolarizingChannel(val, wires=w)
            elif kind == "amp":
                qml.AmplitudeDamping(val, wires=w)
            elif kind == "flip":
                qml.BitFlip(val, wires=w)
            else:
                getattr(qml, kind)(params[k % len(params)], wires=w)
                k += 1

    obs = qml.prod(*[PAULIS[c](w) for w, c in word.items()]) if len(word) > 1 else PAULIS[
        next(iter(word.values()))](next(iter(word)))

    @qml.qnode(dev)
    def var(params):
        body(params)
        return qml.var(obs)

    @qml.qnode(dev)
    def ev(params):
        body(params)
        return qml.expval(obs)

    return var, ev


@pytest.mark.parametrize("seed", range(25))
def test_variance_floor_against_density_matrix_simulation(seed):
    n_wires = 2 + seed % 2
    steps, word = _random_circuit(seed, n_wires)
    var, ev = _qnode(steps, word, n_wires)
    rng = np.random.default_rng(1000 + seed)
    dc = certify_device(ev, epsilon=1.0, args=(rng.uniform(-3, 3, size=4),))
    assert isinstance(dc, DeviceCertificate) and dc.source == "QNode"
    assert 0.0 <= dc.variance_floor <= 1.0
    for _ in range(4):
        params = rng.uniform(-np.pi, np.pi, size=4)
        v = float(var(params))
        assert v >= dc.variance_floor - 1e-10
        assert 1 - float(ev(params)) ** 2 == pytest.approx(v, abs=1e-9)


@pytest.mark.parametrize("q", [0.0, 0.05, 0.3, 0.75, 0.9])
def test_variance_floor_is_tight_and_commutes_with_unital_ops(q):
    dev = qml.device("default.mixed", wires=1)

    @qml.qnode(dev)
    def circ(x):
        qml.RX(x, wires=0)
        qml.DepolarizingChannel(q, wires=0)
        qml.Hadamard(wires=0)
        qml.PhaseFlip(0.0, wires=0)  # unital: does not block
        qml.Hadamard(wires=0)
        return qml.var(qml.PauliZ(0))

    dc = certify_device(circ, epsilon=0.5, args=(0.0,))
    p = 4 * q / 3
    assert dc.variance_floor == pytest.approx(1 - (1 - p) ** 2, abs=1e-10)
    assert float(circ(0.0)) == pytest.approx(dc.variance_floor, abs=1e-9)  # attained at |0>
    assert dc.final_noise_p == {0: pytest.approx(p)}
    if q > 0:
        assert dc.depolarizing_q == (q,)
        ch_certs = dc.channel_certificates
        assert [c.notion for c in ch_certs] == ["QLDP", "QPrLDP"]
        ref = qldp_certificate(depolarizing(p, 2), epsilon=0.5)
        assert ch_certs[0].delta == pytest.approx(ref.delta)


def test_noise_before_entangling_gate_is_not_counted():
    dev = qml.device("default.mixed", wires=2)

    @qml.qnode(dev)
    def circ(x):
        qml.RY(x, wires=0)
        qml.DepolarizingChannel(0.5, wires=0)
        qml.DepolarizingChannel(0.5, wires=1)
        qml.CNOT(wires=[0, 1])
        zz = qml.PauliZ(0) @ qml.PauliZ(1)
        return qml.expval(qml.PauliZ(1)), qml.expval(zz), qml.probs(wires=0)

    dc = certify_device(circ, epsilon=1.0, args=(0.1,))
    assert dc.variance_floor == 0.0
    assert dc.measurement_floors[2][1] is None
    assert dc.product_certificates == ()


def test_full_final_layer_gives_product_certificates():
    dev = qml.device("default.mixed", wires=3)

    @qml.qnode(dev)
    def circ(x):
        qml.RY(x, wires=0)
        qml.CNOT(wires=[0, 1])
        qml.CNOT(wires=[1, 2])
        for w in range(3):
            qml.DepolarizingChannel(0.15, wires=w)
        herm = qml.Hermitian(np.eye(2), wires=1)
        return qml.expval(qml.PauliX(0) @ qml.PauliZ(2)), qml.expval(herm)

    dc = certify_device(circ, epsilon=1.0, delta=1e-3, args=(0.2,))
    p = 0.2
    assert dc.measurement_floors[0][1] == pytest.approx(1 - (1 - p) ** 4, abs=1e-10)
    assert dc.measurement_floors[1][1] == 0.0  # not a Pauli word
    assert dc.variance_floor == 0.0
    notions = [c.notion for c in dc.product_certificates]
    assert notions == ["QLDP", "QPrLDP"]
    assert "n=3" in dc.product_certificates[0].channel_description
    (q, e1, e2), = dc.epsilon_for_delta
    assert q == 0.15 and e1 <= e2


def test_noise_model_and_add_noise():
    nm = qml.NoiseModel(
        {qml.noise.op_eq("RX"): qml.noise.partial_wires(qml.DepolarizingChannel, 0.1)}
    )
    dc = certify_device(nm, epsilon=1.0)
    assert dc.source == "NoiseModel" and dc.depolarizing_q == (0.1,)
    assert dc.variance_floor == 0.0 and len(dc.channel_certificates) == 2

    dev = qml.device("default.mixed", wires=2)

    @qml.qnode(dev)
    def circ(x):
        qml.CNOT(wires=[0, 1])
        qml.RX(x, wires=0)
        qml.RX(x, wires=1)
        return qml.var(qml.PauliY(0) @ qml.PauliY(1))

    noisy = qml.add_noise(circ, nm)
    dc = certify_device(noisy, epsilon=1.0, args=(0.3,))
    p = 0.4 / 3
    assert dc.variance_floor == pytest.approx(1 - (1 - p) ** 4, abs=1e-10)
    for x in (0.0, 0.7, 2.0):
        assert float(noisy(x)) >= dc.variance_floor - 1e-10


def test_tape_input_and_type_error():
    tape = qml.tape.QuantumScript(
        [qml.Hadamard(0), qml.DepolarizingChannel(0.2, wires=0)], [qml.expval(qml.PauliX(0))]
    )
    dc = certify_device(tape, epsilon=0.1)
    assert dc.source == "tape"
    assert dc.variance_floor == pytest.approx(1 - (1 - 0.8 / 3) ** 2)
    msg = (
        "`obj` must be a qml.QNode, a QuantumScript/tape or a qml.NoiseModel."
        " Found int."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        certify_device(3, epsilon=1.0)


# -- noise channels other than DepolarizingChannel: their depolarizing part --------------------
def _kraus_of(channel):
    return [np.asarray(k) for k in channel.kraus]


@pytest.mark.parametrize("seed", range(12))
def test_general_noise_counts_its_depolarizing_part_against_simulation(seed):
    """A QubitChannel N = D_p o M (M a random channel: unital or not) at the end of a wire
    counts with its depolarizing part; the floor holds in density-matrix simulation."""
    from qprldp_core import Channel, depolarizing_part, random_channel

    rng = np.random.default_rng(seed)
    p = float(rng.uniform(0.05, 0.6))
    inner = random_channel(2, seed=rng)
    noise = [a @ b for a in depolarizing(p, 2).kraus for b in inner.kraus]
    part = depolarizing_part(Channel(noise))
    dev = qml.device("default.mixed", wires=2)

    @qml.qnode(dev)
    def ev(x):
        qml.RY(x[0], wires=0)
        qml.CNOT(wires=[0, 1])
        qml.RX(x[1], wires=1)
        qml.QubitChannel(noise, wires=1)
        qml.Hadamard(wires=1)
        return qml.expval(qml.PauliZ(1))

    dc = certify_device(ev, epsilon=1.0, args=(np.zeros(2),))
    assert dc.final_noise_p[1] == pytest.approx(part, abs=1e-12) and part >= p - 1e-9
    assert dc.depolarizing_parts == (("QubitChannel", 2, part),)
    assert dc.variance_floor == pytest.approx(1 - (1 - part) ** 2, abs=1e-9)
    for _ in range(6):
        x = rng.uniform(-np.pi, np.pi, size=2)
        assert 1 - float(ev(x)) ** 2 >= dc.variance_floor - 1e-10
    # its certificates are D_p's, as proven upper bounds (never "exact" for N)
    qldp, qprldp = dc.channel_certificates
    assert qldp.side == qprldp.side == "upper_bound" and qldp.witness is None
    assert qldp.delta == pytest.approx(qldp_certificate(depolarizing(part, 2),
                                                       epsilon=1.0).delta)
    assert "depolarizing part" in qldp.channel_description


def test_a_non_unital_channel_counts_its_part_then_blocks():
    """N = D_p o AmplitudeDamping after a DepolarizingChannel: only N's part counts (the
    amplitude damping inside it does not commute with the earlier noise)."""
    damping = [np.array([[1, 0], [0, np.sqrt(0.7)]]), np.array([[0, np.sqrt(0.3)], [0, 0]])]
    noise = [a @ b for a in depolarizing(0.2, 2).kraus for b in damping]
    tape = qml.tape.QuantumScript(
        [qml.RX(0.3, 0), qml.DepolarizingChannel(0.3, wires=0), qml.QubitChannel(noise, 0)],
        [qml.expval(qml.PauliZ(0))])
    dc = certify_device(tape, epsilon=1.0)
    assert dc.final_noise_p[0] == pytest.approx(0.2, abs=1e-9)  # not 1 - 0.8 * 0.6


def test_a_qiskit_style_noise_model_is_read_through_its_channels():
    """A NoiseModel of QubitChannels (what qml.from_qiskit_noise makes of depolarizing_error)
    is certified through their depolarizing parts."""
    noise = [np.asarray(k) for k in depolarizing(0.05, 2).kraus]
    model = qml.NoiseModel({qml.noise.op_in(["RX", "RY"]): qml.noise.partial_wires(
        qml.QubitChannel, noise)})
    dc = certify_device(model, epsilon=1.0, delta=1e-5)
    assert [(n, d) for n, d, _ in dc.depolarizing_parts] == [("QubitChannel", 2)]
    assert dc.depolarizing_parts[0][2] == pytest.approx(0.05, abs=1e-9)
    assert [c.notion for c in dc.channel_certificates] == ["QLDP", "QPrLDP"]
