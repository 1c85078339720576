import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.channels import (
    PARAM_ATOL,
    Channel,
    HeisenbergMap,
    bit_flip,
    depolarizing,
    depolarizing_p_from_pennylane,
    depolarizing_p_from_toqito,
    depolarizing_p_max,
    depolarizing_p_to_pennylane,
    depolarizing_p_to_toqito,
    local_depolarizing,
    unitary,
)
from qprldp_core.random import random_channel as random_channel_
from qprldp_core.random import random_density_matrix

X = np.array([[0, 1], [1, 0]], dtype=complex)
H = np.array([[1, 1], [1, -1]], dtype=complex) / math.sqrt(2)


def random_state(seed: int, d: int, rank: int | None = None) -> np.ndarray:
    return random_density_matrix(d, rank=rank, seed=seed)


def random_channel(seed: int, d: int, k: int = 3) -> Channel:
    return random_channel_(d, num_kraus=k, seed=seed, atol=1e-9)


def kraus_apply(ops, rho):
    return sum(k @ rho @ k.conj().T for k in ops)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("frac", [0.0, 0.3, 1.0, "max"])
def test_depolarizing_kraus_matches_formula(d, frac):
    p = depolarizing_p_max(d) if frac == "max" else frac
    ch = depolarizing(p, d)
    rho = random_state(d, d)
    expected = (1 - p) * rho + p * np.eye(d) / d
    assert np.allclose(ch(rho), expected, atol=1e-12)
    assert np.allclose(kraus_apply(ch.kraus, rho), expected, atol=1e-12)
    assert ch.kind == "depolarizing" and ch.depolarizing_p == p and ch.params["d"] == d


def test_depolarizing_errors():
    msg = (
        "`p` must be in [0, 1.33333] (the CPTP range d^2/(d^2-1) for d=2)."
        " Found 1.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing(1.5, 2)
    msg = (
        "`p` must be in [0, 1.125] (the CPTP range d^2/(d^2-1) for d=3). Found"
        " -0.1."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing(-0.1, 3)
    with pytest.raises(ValueError, match=re.escape("`d` must be an integer >= 2. Found 1.")):
        depolarizing(0.1, 1)
    with pytest.raises(TypeError, match=re.escape("`d` must be an integer. Found float.")):
        depolarizing(0.1, 2.0)
    with pytest.raises(ValueError, match=re.escape("`p` must be in [0, 1]. Found 1.2.")):
        bit_flip(1.2)
    with pytest.raises(ValueError, match=re.escape("`n` must be an integer >= 1. Found 0.")):
        local_depolarizing(0.1, 0)


def test_kraus_not_trace_preserving():
    msg = (
        "`kraus` must be trace preserving (sum_k K_k^dagger K_k = I). Found max"
        " deviation 0.1."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        Channel([math.sqrt(0.9) * np.eye(2)])
    msg = (
        "`kraus` operators must share one shape. Found (2, 2) and (3, 3)"
        " (kraus[1])."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        Channel([np.eye(2), np.eye(3)])
    msg = (
        "`kraus` must contain at least one operator. Found 0."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        Channel([])
    msg = (
        "`kraus` must be a sequence of matrices. Found int."
    )
    with pytest.raises(TypeError, match=re.escape(msg)):
        Channel(3)
    msg = (
        "`U` must be unitary. Found max |U^dagger U - I| entry 1."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        unitary(np.array([[1, 1], [0, 1]]))


def test_channel_is_immutable_and_reports_metadata():
    ch = bit_flip(0.2)
    with pytest.raises(AttributeError):
        ch.foo = 1
    with pytest.raises(ValueError):
        ch.kraus[0][0, 0] = 3.0
    assert ch.kind == "bit_flip" and ch.params["p"] == 0.2 and ch.num_qubits == 1
    assert ch.input_dim == ch.output_dim == 2
    assert isinstance(ch.description, str) and "bit flip" in ch.description
    assert ch.depolarizing_p is None
    assert Channel([np.eye(3)]).num_qubits is None


def test_isometry_channel_dims():
    v = np.zeros((4, 2))
    v[0, 0] = v[3, 1] = 1.0
    ch = Channel([v])
    assert ch.input_dim == 2 and ch.output_dim == 4
    out = ch(np.diag([1.0, 0.0]))
    assert out.shape == (4, 4) and out[0, 0] == 1.0
    with pytest.raises(ValueError, match=re.escape("`rho` must have shape (2, 2). Found (4, 4).")):
        ch(np.eye(4) / 4)


def test_compose_order():
    # self ∘ other: apply H first, then the bit flip
    ch = bit_flip(0.25).compose(unitary(H))
    rho = np.diag([1.0, 0.0])
    expected = bit_flip(0.25)(H @ rho @ H.conj().T)
    assert np.allclose(ch(rho), expected)
    other_order = unitary(H).compose(bit_flip(0.25))(rho)
    assert not np.allclose(other_order, expected)
    msg = (
        "`other` output dimension must equal self input dimension 2. Found 3."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        bit_flip(0.1).compose(Channel([np.eye(3)]))


def test_tensor_product():
    a, b = bit_flip(0.1), depolarizing(0.3, 3)
    ab = a.tensor(b)
    r1, r2 = random_state(1, 2), random_state(2, 3)
    assert np.allclose(ab(np.kron(r1, r2)), np.kron(a(r1), b(r2)))
    assert ab.input_dim == 6


@settings(derandomize=True, max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(2, 4))
def test_adjoint_duality_and_unitality(seed, d):
    ch = random_channel(seed, d)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
    x = x + x.conj().T
    rho = random_state(seed + 1, d)
    adj = ch.adjoint()
    assert isinstance(adj, HeisenbergMap)
    assert np.trace(x @ ch(rho)) == pytest.approx(np.trace(adj(x) @ rho), abs=1e-10)
    assert np.allclose(adj(np.eye(d)), np.eye(d), atol=1e-10)


def test_adjoint_not_trace_preserving_in_general():
    g = 0.4  # amplitude damping is not unital, so its adjoint is not trace preserving
    k0 = np.array([[1, 0], [0, math.sqrt(1 - g)]])
    k1 = np.array([[0, math.sqrt(g)], [0, 0]])
    adj = Channel([k0, k1]).adjoint()
    z = np.diag([0.0, 1.0])
    assert np.trace(adj(z)).real == pytest.approx(1 - g + 0.0)  # != Tr z = 1
    assert np.trace(adj(np.diag([1.0, 0.0]))).real == pytest.approx(1 + g)


@pytest.mark.parametrize("seed", range(3))
def test_choi(seed):
    d = 3
    ch = random_channel(seed, d)
    j = ch.choi()
    assert j.shape == (d * d, d * d)
    assert np.linalg.eigvalsh(j).min() > -1e-10
    jt = j.reshape(d, d, d, d)  # indices (i, a, j, b): |i><j| ⊗ A(|i><j|)_{ab}
    assert np.allclose(np.einsum("iaja->ij", jt), np.eye(d), atol=1e-10)  # Tr_out J = I
    rho = random_state(seed, d)
    # A(ρ) = Σ_ij ρ_ij A(|i><j|) = Tr_in[(ρ^T ⊗ I) J]
    recon = np.einsum("ij,iajb->ab", rho, jt)
    assert np.allclose(recon, ch(rho), atol=1e-10)


def test_choi_identity_is_maximally_entangled():
    j = unitary(np.eye(2)).choi()
    omega = np.array([1, 0, 0, 1.0])
    assert np.allclose(j, np.outer(omega, omega))


def test_local_depolarizing():
    ch = local_depolarizing(0.3, 2)
    single = depolarizing(0.3, 2)
    r1, r2 = random_state(1, 2), random_state(2, 2)
    assert np.allclose(ch(np.kron(r1, r2)), np.kron(single(r1), single(r2)))
    ent = random_state(3, 4)
    assert np.allclose(ch(ent), single.tensor(single)(ent))
    assert ch.kind == "local_depolarizing" and ch.num_qubits == 2 and ch.depolarizing_p == 0.3
    big = local_depolarizing(0.3, 50)
    assert big.input_dim == 2**50 and big.params == {"p": 0.3, "n": 50}
    msg = (
        "local_depolarizing: Kraus operators are only built for n <= 6 qubits."
        " Found n=7."
    )
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        _ = local_depolarizing(0.1, 7).kraus


@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.75, 1.0])
def test_pennylane_converter_matches_pennylane(q):
    qml = pytest.importorskip("pennylane")
    ops = [np.asarray(k) for k in qml.DepolarizingChannel(q, wires=0).kraus_matrices()]
    rho = random_state(7, 2)
    p = depolarizing_p_from_pennylane(q)
    assert p == pytest.approx(4 * q / 3)
    assert np.allclose(kraus_apply(ops, rho), depolarizing(p, 2)(rho), atol=1e-12)
    assert depolarizing_p_to_pennylane(p) == pytest.approx(q)


def test_pennylane_converter_range():
    with pytest.raises(ValueError, match=re.escape("`q` must be in [0, 1]. Found 1.1.")):
        depolarizing_p_from_pennylane(1.1)


@pytest.mark.parametrize("param", [1.0, 0.7, 0.0, -0.05])
def test_toqito_converter(param):
    d = 3
    rho = random_state(4, d)
    toqito_out = param * rho + (1 - param) * np.eye(d) / d  # toqito.channels.depolarizing(d, param)
    p = depolarizing_p_from_toqito(param, d)
    assert np.allclose(depolarizing(p, d)(rho), toqito_out)
    assert depolarizing_p_to_toqito(p, d) == pytest.approx(param)


def test_toqito_converter_range():
    msg = (
        "`param` must be in [-0.125, 1] (toqito's CPTP range for d=3). Found"
        " 1.5."
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing_p_from_toqito(1.5, 3)


DIMS = range(2, 9)


@pytest.mark.parametrize("d", DIMS)
def test_toqito_converter_edges(d):
    pmax = depolarizing_p_max(d)
    lo = -1 / (d * d - 1)  # the documented lower end, as a user writes it
    # every spelling of the lower end maps to exactly pmax (and is a valid channel)
    for param in (lo, 1 - d * d / (d * d - 1), 1 - pmax, np.nextafter(lo, -1), lo - PARAM_ATOL):
        p = depolarizing_p_from_toqito(param, d)
        assert p == pmax, (param, p)
        assert depolarizing(p, d).params["p"] == pmax
    assert depolarizing_p_from_toqito(1.0, d) == 0.0
    assert depolarizing_p_from_toqito(1 + PARAM_ATOL, d) == 0.0  # clamped onto the upper end
    # the inverse lands exactly on the ends
    assert depolarizing_p_to_toqito(pmax, d) == lo
    assert depolarizing_p_to_toqito(pmax + PARAM_ATOL / 2, d) == lo
    assert depolarizing_p_to_toqito(0.0, d) == 1.0
    assert depolarizing_p_to_toqito(-PARAM_ATOL, d) == 1.0
    # toqito's map at the lower end equals D_pmax (the fully "anti-depolarizing" CPTP edge)
    rho = random_state(d, d)
    np.testing.assert_allclose(depolarizing(pmax, d)(rho), lo * rho + (1 - lo) * np.eye(d) / d,
                               atol=1e-14)
    # beyond the tolerance: the usual error
    msg = f"`param` must be in [{lo:.6g}, 1] (toqito's CPTP range for d={d}). Found"
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing_p_from_toqito(lo - 1e-9, d)
    with pytest.raises(ValueError, match=re.escape(msg)):
        depolarizing_p_from_toqito(1 + 1e-9, d)
    msg = f"`p` must be in [0, {pmax:.6g}] (the CPTP range d^2/(d^2-1) for d={d}). Found"
    for bad in (-1e-9, pmax + 1e-9):
        with pytest.raises(ValueError, match=re.escape(msg)):
            depolarizing_p_to_toqito(bad, d)
        with pytest.raises(ValueError, match=re.escape(msg)):
            depolarizing(bad, d)


@pytest.mark.parametrize("d", DIMS)
def test_depolarizing_range_edges(d):
    pmax = depolarizing_p_max(d)
    for p, expected in ((pmax, pmax), (pmax + PARAM_ATOL, pmax), (d * d / (d * d - 1), pmax),
                        (-PARAM_ATOL, 0.0), (0.0, 0.0)):
        assert depolarizing(p, d).params["p"] == expected
    # the Kraus operators at the edge are trace preserving (c0 = 1 - pmax (d^2-1)/d^2 = 0)
    ch = depolarizing(pmax, d)
    assert np.allclose(sum(k.conj().T @ k for k in ch.kraus), np.eye(d), atol=1e-12)


def test_pennylane_converter_edges():
    pmax = depolarizing_p_max(2)
    assert depolarizing_p_from_pennylane(1.0) == pmax
    assert depolarizing_p_from_pennylane(1 + PARAM_ATOL) == pmax
    assert depolarizing_p_from_pennylane(0.0) == 0.0
    assert depolarizing_p_from_pennylane(-PARAM_ATOL) == 0.0
    assert depolarizing_p_to_pennylane(pmax) == 1.0
    assert depolarizing_p_to_pennylane(4 / 3) == 1.0
    assert depolarizing_p_to_pennylane(pmax + PARAM_ATOL) == 1.0
    assert depolarizing_p_to_pennylane(-PARAM_ATOL) == 0.0
    assert local_depolarizing(pmax + PARAM_ATOL, 2).params["p"] == pmax
    for bad in (-1e-9, 1 + 1e-9):
        with pytest.raises(ValueError, match=re.escape("`q` must be in [0, 1]. Found")):
            depolarizing_p_from_pennylane(bad)
    msg = "`p` must be in [0, 1.33333] (the CPTP range d^2/(d^2-1) for d=2). Found"
    for bad in (-1e-9, pmax + 1e-9):
        with pytest.raises(ValueError, match=re.escape(msg)):
            depolarizing_p_to_pennylane(bad)


def test_local_depolarizing_apply_without_kraus_matches_kraus():
    ch = local_depolarizing(0.37, 3)
    rho = random_state(11, 8)
    assert np.allclose(ch(rho), kraus_apply(ch.kraus, rho), atol=1e-12)
    big = local_depolarizing(0.2, 8)  # 4^8 Kraus operators are never built
    out = big(np.eye(256) / 256)
    assert np.allclose(out, np.eye(256) / 256)
