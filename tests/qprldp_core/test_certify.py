import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.certify import (
    Certificate,
    DeviceCertificate,
    certify_device,
    local_depolarizing_bounds,
    qldp_certificate,
    qldp_epsilon,
    qprldp_certificate,
    qprldp_epsilon,
)
from qprldp_core.channels import Channel, bit_flip, depolarizing, local_depolarizing, unitary
from qprldp_core.divergences import hockey_stick_divergence, violation_probability
from qprldp_core.privacy import qldp_value, qprldp_value, worst_case_search
from qprldp_core.random import random_channel as _random_channel
from qprldp_core.random import random_density_matrix


def random_state(seed: int, d: int, rank: int | None = None) -> np.ndarray:
    return random_density_matrix(d, rank=rank, seed=seed)


def random_channel(seed: int, d: int, k: int = 3) -> Channel:
    return _random_channel(d, num_kraus=k, seed=seed, atol=1e-9)


# -- global depolarizing closed forms ---------------------------------------------------------
@pytest.mark.parametrize(
    "p,d,eps,dq,dp",
    [
        (0.5, 2, 0.5, 0.337820, 0.75),
        (0.2, 4, 1.0, 0.714086, 0.95),
        (0.3, 2, math.log(1 + 2 * 0.7 / 0.3), 0.0, 0.0),
    ],
)
def test_required_values(p, d, eps, dq, dp):
    ch = depolarizing(p, d)
    cq, cp = qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)
    assert cq.delta == pytest.approx(dq, abs=5e-7)
    assert cp.delta == pytest.approx(dp, abs=5e-7)
    for c, notion in ((cq, "QLDP"), (cp, "QPrLDP")):
        assert c.exact and c.side == "exact" and c.notion == notion and c.epsilon == eps
        assert "depolarizing" in c.channel_description and "arXiv" in c.reference
    # witnesses attain the certified values
    assert qldp_value(ch, *cq.witness, epsilon=eps) == pytest.approx(cq.delta, abs=1e-9)
    assert qprldp_value(ch, *cp.witness, epsilon=eps) == pytest.approx(cp.delta, abs=1e-9)


@pytest.mark.parametrize("d", [2, 3, 4, 8])
@pytest.mark.parametrize("p", [0.0, 0.1, 0.45, 0.9, 1.0])
@pytest.mark.parametrize("eps", [0.0, 0.05, 0.4, 1.3, 3.0])
def test_witness_attains_and_formulas(d, p, eps):
    ch = depolarizing(p, d)
    cq, cp = qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)
    g = math.exp(eps)
    assert cq.delta == pytest.approx(max(0.0, (1 - p) - (g - 1) * p / d), abs=1e-12)
    rho, sigma = cp.witness
    val = violation_probability(ch(rho), ch(sigma), epsilon=eps)
    assert val == pytest.approx(cp.delta, abs=1e-9)
    assert hockey_stick_divergence(ch(cq.witness[0]), ch(cq.witness[1]), gamma=g) == pytest.approx(
        cq.delta, abs=1e-9
    )
    assert cp.delta >= cq.delta - 1e-12  # QPrLDP ⇒ QLDP
    if p == 0.0:
        assert cq.delta == 1.0 and cp.delta == 1.0  # identity channel
    if p == 1.0:
        assert cq.delta == 0.0 and cp.delta == 0.0
    if eps == 0.0 and 0 < p < 1:
        assert cp.delta == pytest.approx((1 - p) + p * (d - 1) / d)  # k* = d − 1


@settings(derandomize=True, max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(2, 4),
    p=st.floats(0.0, 1.0),
    eps=st.floats(0.0, 4.0),
)
def test_closed_forms_never_exceeded_by_random_pairs(seed, d, p, eps):
    ch = depolarizing(p, d)
    rho, sigma = random_state(seed, d), random_state(seed + 1, d)
    assert qldp_value(ch, rho, sigma, epsilon=eps) <= qldp_certificate(ch, epsilon=eps).delta + 1e-9
    assert (
        qprldp_value(ch, rho, sigma, epsilon=eps)
        <= qprldp_certificate(ch, epsilon=eps).delta + 1e-9
    )


def test_monotone_in_epsilon():
    ch = depolarizing(0.3, 5)
    grid = np.linspace(0, 4, 81)
    for cert in (qldp_certificate, qprldp_certificate):
        vals = [cert(ch, epsilon=e).delta for e in grid]
        assert all(a >= b for a, b in zip(vals, vals[1:], strict=False))


@pytest.mark.parametrize("p", [1.05, 1.2, 4 / 3])
def test_qubit_depolarizing_above_one(p):
    ch = depolarizing(p, 2)
    gen = Channel(list(ch.kraus), atol=1e-9)
    for eps in (0.0, 0.3, 1.0):
        for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
            c = cert(ch, epsilon=eps)
            assert c.exact
            val = (qldp_value if notion == "qldp" else qprldp_value)(ch, *c.witness, epsilon=eps)
            assert val == pytest.approx(c.delta, abs=1e-9)
            res = worst_case_search(gen, epsilon=eps, notion=notion, restarts=3, seed=0)
            assert res.value <= c.delta + 1e-9


def test_d3_above_one_falls_back_to_search():
    c = qldp_certificate(depolarizing(1.1, 3), epsilon=0.2, restarts=2)
    assert c.side == "lower_bound" and not c.exact
    msg = (
        "qldp_epsilon: no certified upper bound"
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        qldp_epsilon(depolarizing(1.1, 3), delta=0.1)


def test_unitary_and_bit_flip_are_not_private():
    u = unitary(np.array([[0, 1], [1, 0]]))
    for ch in (u, bit_flip(0.3)):
        for cert, val in ((qldp_certificate, qldp_value), (qprldp_certificate, qprldp_value)):
            c = cert(ch, epsilon=2.0)
            assert c.delta == 1.0 and c.exact
            assert val(ch, *c.witness, epsilon=2.0) == pytest.approx(1.0)
    assert qldp_epsilon(u, delta=0.5) == math.inf and qprldp_epsilon(u, delta=1.0) == 0.0


def test_general_channel_gets_only_a_lower_bound():
    ch = random_channel(0, 3)
    for notion, cert, val in (("QLDP", qldp_certificate, qldp_value),
                              ("QPrLDP", qprldp_certificate, qprldp_value)):
        c = cert(ch, epsilon=0.3, restarts=3, seed=0)
        assert c.side == "lower_bound" and not c.exact and c.notion == notion
        assert val(ch, *c.witness, epsilon=0.3) == pytest.approx(c.delta, abs=1e-9)
        assert "not a certificate" in str(c)
    msg = (
        "qprldp_epsilon: no certified upper bound"
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        qprldp_epsilon(ch, delta=0.1)


def test_certificate_is_frozen_and_printable():
    c = qldp_certificate(depolarizing(0.5, 2), epsilon=0.5)
    assert isinstance(c, Certificate)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.delta = 0.0
    text = str(c)
    assert "QLDP certificate" in text and "0.33782" in text and "exact" in text


def test_certificate_str_and_repr_do_not_dump_matrices():
    c = qprldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)  # 8 x 8 witness
    for text in (str(c), repr(c)):
        assert "[[" not in text and "array(" not in text and "0.+0.j" not in text
        assert "available as `.witness` (ρ, σ) of shape 8×8" in text
        assert "QPrLDP" in text and "local depolarizing D_p^(⊗n), p=0.3 per qubit, n=3" in text
        assert "arXiv:2607.06307" in text  # the reference
    assert len(repr(c).splitlines()) == 1
    assert len(str(c).splitlines()) == 8
    rho, sigma = c.witness  # documented way to get the matrices
    assert rho.shape == sigma.shape == (8, 8)
    # the witness attains the proven lower bound
    assert qprldp_value(local_depolarizing(0.3, 3), rho, sigma, epsilon=1.0) == pytest.approx(
        c.delta_lower, abs=1e-9)


def test_vacuous_upper_bound_is_labelled():
    c = qprldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)
    assert c.side == "upper_bound" and c.delta == 1.0 and c.vacuous is True
    text = str(c)
    lines = text.splitlines()
    assert lines[0] == "QPrLDP certificate (VACUOUS)"
    assert lines[3] == "  delta     : 1 (upper bound, VACUOUS)"
    assert lines[4] == "  delta >=  : 0.93925 (proven lower bound)"
    assert lines[5] == (
        "  statement : VACUOUS: (1, 1)-QPrLDP holds for every channel (delta >= 1), so this "
        "upper bound certifies no privacy; the channel is NOT (1, delta)-QPrLDP for any delta < "
        "0.93925 (proven lower bound)"
    )
    assert "vacuous=True" in repr(c) and "delta_lower=0.93925" in repr(c)
    # an informative upper bound of the same channel is not vacuous
    q = qldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)
    assert q.side == "upper_bound" and q.delta < 1 and not q.vacuous
    assert "VACUOUS" not in str(q) and "vacuous=False" in repr(q)
    assert str(q).splitlines()[5] == (
        f"  statement : the channel is (1, {q.delta:.6g})-QLDP (proven upper bound on delta)")


def test_exact_delta_one_is_not_vacuous_but_says_no_privacy():
    c = qldp_certificate(unitary(np.array([[0, 1], [1, 0]])), epsilon=1.0)
    assert c.side == "exact" and c.delta == 1.0 and not c.vacuous
    assert str(c).splitlines()[4] == (
        "  statement : the channel is (1, 1)-QLDP, and no smaller delta holds (exact): no "
        "privacy at this epsilon")
    # a lower bound of 0 is vacuous: every channel has delta* >= 0
    low = Certificate(1.0, 0.0, "QLDP", "test", False, "lower_bound", None, "test")
    assert low.vacuous and "VACUOUS: delta* >= 0 holds for every channel" in str(low)
    assert "witness   : none" in str(low) and "witness=None" in repr(low)


def test_certificate_str_exact_global():
    c = qldp_certificate(depolarizing(0.5, 2), epsilon=0.5)
    assert str(c).splitlines() == [
        "QLDP certificate",
        "  channel   : global depolarizing D_p, p=0.5, d=2",
        "  epsilon   : 0.5 nats",
        "  delta     : 0.33782 (exact)",
        "  statement : the channel is (0.5, 0.33782)-QLDP, and no smaller delta holds (exact)",
        "  witness   : available as `.witness` (ρ, σ) of shape 2×2; the pair attains delta",
        f"  reference : {c.reference}",
    ]
    assert repr(c).startswith(
        "Certificate(notion='QLDP', epsilon=0.5, delta=0.33782, side='exact', vacuous=False, "
        "channel_description='global depolarizing D_p, p=0.5, d=2', witness=<available as "
        "`.witness` (ρ, σ) of shape 2×2; the pair attains delta>, reference=\"derived here")


def test_errors():
    msg = (
        "`epsilon` must be finite and >= 0. Found -0.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        qldp_certificate(depolarizing(0.5, 2), epsilon=-0.5)
    with pytest.raises(ValueError, match=re.escape("`delta` must be in [0, 1]. Found 1.5.")):
        qprldp_epsilon(depolarizing(0.5, 2), delta=1.5)
    msg = (
        "`channel` must be a qprldp_core.Channel. Found str."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        qldp_certificate("depolarizing", epsilon=1.0)
    msg = (
        "`notion` must be 'QLDP' or 'QPrLDP'. Found 'x'."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        local_depolarizing_bounds(0.3, 2, epsilon=1.0, notion="x")
    msg = (
        "`p` must be in [0, 1.33333] (the CPTP range d^2/(d^2-1) for d=2)."
        " Found 1.4."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        local_depolarizing_bounds(1.4, 2, epsilon=1.0)


# -- smallest ε for a δ ------------------------------------------------------------------------
@pytest.mark.parametrize("d", [2, 3, 8])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("delta", [0.0, 1e-5, 0.2, 0.6, 0.95, 1.0])
def test_smallest_epsilon_global(d, p, delta):
    ch = depolarizing(p, d)
    for fn, cert in ((qldp_epsilon, qldp_certificate), (qprldp_epsilon, qprldp_certificate)):
        eps = fn(ch, delta=delta)
        assert cert(ch, epsilon=eps).delta <= delta * (1 + 1e-12)  # certified (re-checked)
        if eps > 0:
            assert cert(ch, epsilon=eps * (1 - 1e-9)).delta > delta  # and minimal
    assert qprldp_epsilon(ch, delta=0.0) == pytest.approx(math.log(1 + d * (1 - p) / p))


def test_smallest_epsilon_identity():
    assert qldp_epsilon(depolarizing(0.0, 2), delta=0.5) == math.inf
    assert qprldp_epsilon(depolarizing(0.0, 2), delta=1.0) == 0.0


# -- local depolarizing -------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.2, 0.6, 1.0, 1.2])
@pytest.mark.parametrize("eps", [0.0, 0.5, 1.5])
def test_local_n1_equals_global(p, eps):
    for notion, cert in (("QLDP", qldp_certificate), ("QPrLDP", qprldp_certificate)):
        a = cert(local_depolarizing(p, 1), epsilon=eps)
        b = cert(depolarizing(p, 2), epsilon=eps)
        assert a.exact and a.delta == pytest.approx(b.delta)
        lo, up = local_depolarizing_bounds(p, 1, epsilon=eps, notion=notion)
        assert lo == up == pytest.approx(b.delta)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("p", [0.15, 0.5, 1.25])
@pytest.mark.parametrize("eps", [0.0, 0.4, 1.5, 3.0])
def test_local_bounds_bracket_search(n, p, eps):
    ch = local_depolarizing(p, n)
    for notion, cert in (("qldp", qldp_certificate), ("qprldp", qprldp_certificate)):
        c = cert(ch, epsilon=eps)
        lo = c.delta if c.exact else c.delta_lower
        assert lo <= c.delta + 1e-12
        res = worst_case_search(ch, epsilon=eps, notion=notion, restarts=3, seed=0, max_iter=30)
        assert res.value <= c.delta + 1e-9  # proven upper bound never beaten
        val = (qldp_value if notion == "qldp" else qprldp_value)(ch, *c.witness, epsilon=eps)
        assert val == pytest.approx(lo, abs=1e-9)  # witness attains the lower bound


@pytest.mark.parametrize("n", [2, 3, 7, 50])
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_local_pure_threshold_is_exact(n, p):
    ch = local_depolarizing(p, n)
    thr = n * math.log((2 - p) / p)
    for cert in (qldp_certificate, qprldp_certificate):
        at = cert(ch, epsilon=thr)
        assert at.delta == 0.0 and at.exact
        below = cert(ch, epsilon=thr * (1 - 1e-6))
        assert below.delta > 0.0
        assert (below.delta_lower or below.delta) > 0.0  # proven: not pure below the threshold


def test_local_large_n_has_no_matrices():
    c = qprldp_certificate(local_depolarizing(0.3, 50), epsilon=5.0)
    assert c.witness is None and c.side in ("upper_bound", "exact")
    lo, up = local_depolarizing_bounds(0.3, 50, epsilon=5.0)
    assert 0 <= lo <= up <= 1


@pytest.mark.parametrize("n", [2, 5])
def test_local_smallest_epsilon(n):
    ch = local_depolarizing(0.4, n)
    for fn, cert in ((qldp_epsilon, qldp_certificate), (qprldp_epsilon, qprldp_certificate)):
        for delta in (0.0, 0.3, 0.9):
            eps = fn(ch, delta=delta)
            assert cert(ch, epsilon=eps).delta <= delta * (1 + 1e-12)
        assert fn(ch, delta=0.0) <= n * math.log(1.6 / 0.4) + 1e-12


def test_local_qldp_upper_is_exact_for_one_qubit_and_valid_for_entangled():
    # entangled inputs: random mixed pairs never exceed the proven upper bound
    ch = local_depolarizing(0.3, 2)
    for s in range(30):
        r, t = random_state(s, 4), random_state(s + 50, 4)
        for eps in (0.0, 1.0):
            up_q = qldp_certificate(ch, epsilon=eps).delta
            up_p = qprldp_certificate(ch, epsilon=eps).delta
            assert qldp_value(ch, r, t, epsilon=eps) <= up_q + 1e-9
            assert qprldp_value(ch, r, t, epsilon=eps) <= up_p + 1e-9


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


@pytest.mark.slow
@settings(derandomize=True, max_examples=1000, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    d=st.integers(2, 4),
    p=st.floats(0.0, 1.0),
    eps=st.floats(0.0, 4.0),
)
def test_closed_forms_never_exceeded_1000(seed, d, p, eps):
    test_closed_forms_never_exceeded_by_random_pairs.hypothesis.inner_test(seed, d, p, eps)
