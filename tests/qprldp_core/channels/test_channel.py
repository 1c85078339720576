"""Tests for qprldp_core.channels.channel: the Channel class and its adjoint."""

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qprldp_core.channels import (
    Channel,
    HeisenbergMap,
    bit_flip,
    depolarizing,
    unitary,
)

H = np.array([[1, 1], [1, -1]], dtype=complex) / math.sqrt(2)


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


def test_tensor_product(seeded_state):
    a, b = bit_flip(0.1), depolarizing(0.3, 3)
    ab = a.tensor(b)
    r1, r2 = seeded_state(1, 2), seeded_state(2, 3)
    assert np.allclose(ab(np.kron(r1, r2)), np.kron(a(r1), b(r2)))
    assert ab.input_dim == 6


@settings(derandomize=True, max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), d=st.integers(2, 4))
def test_adjoint_duality_and_unitality(seeded_state, seeded_channel, seed, d):
    ch = seeded_channel(seed, d)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(d, d)) + 1j * rng.normal(size=(d, d))
    x = x + x.conj().T
    rho = seeded_state(seed + 1, d)
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
def test_choi(seeded_state, seeded_channel, seed):
    d = 3
    ch = seeded_channel(seed, d)
    j = ch.choi()
    assert j.shape == (d * d, d * d)
    assert np.linalg.eigvalsh(j).min() > -1e-10
    jt = j.reshape(d, d, d, d)  # indices (i, a, j, b): |i><j| ⊗ A(|i><j|)_{ab}
    assert np.allclose(np.einsum("iaja->ij", jt), np.eye(d), atol=1e-10)  # Tr_out J = I
    rho = seeded_state(seed, d)
    # A(ρ) = Σ_ij ρ_ij A(|i><j|) = Tr_in[(ρ^T ⊗ I) J]
    recon = np.einsum("ij,iajb->ab", rho, jt)
    assert np.allclose(recon, ch(rho), atol=1e-10)


def test_choi_identity_is_maximally_entangled():
    j = unitary(np.eye(2)).choi()
    omega = np.array([1, 0, 0, 1.0])
    assert np.allclose(j, np.outer(omega, omega))
