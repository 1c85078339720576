r"""Tensor powers of states: explicit, and block-diagonal for qubits (Schur-Weyl duality).

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "MAX_EXPLICIT_DIM",
    "tensor_power",
    "sym_power",
    "qubit_blocks",
    "pair_blocks",
    "hermitian_part",
    "trace_norm_blocks",
]


# Largest matrix dimension d**n built explicitly for brute force (4**6 = 2**12).
MAX_EXPLICIT_DIM = 4096


def tensor_power(a: np.ndarray, n: int) -> np.ndarray:
    d = a.shape[0]
    if d**n > MAX_EXPLICIT_DIM:
        raise ValueError(
            f"`copies` too large: dimension d**copies must be <= {MAX_EXPLICIT_DIM}. "
            f"Found {d}**{n} = {d**n}."
        )
    out = np.ones((1, 1), dtype=np.complex128)
    for _ in range(n):
        out = np.kron(out, a)
    return out


def sym_power(a: np.ndarray, k: int) -> np.ndarray:
    # Restriction of A^{⊗k} to the symmetric subspace of (C^2)^{⊗k} in the orthonormal Dicke
    # basis: B_ij = M_ij s_i/s_j, M_ij = [t^j] (a00 + a01 t)^{k-i} (a10 + a11 t)^i,
    # s_i = sqrt(binom(k, i)).
    s = np.sqrt([math.comb(k, i) for i in range(k + 1)])
    p0 = np.array([a[0, 0], a[0, 1]], dtype=np.complex128)
    p1 = np.array([a[1, 0], a[1, 1]], dtype=np.complex128)
    out = np.zeros((k + 1, k + 1), dtype=np.complex128)
    for i in range(k + 1):
        poly = np.ones(1, dtype=np.complex128)
        for _ in range(k - i):
            poly = np.convolve(poly, p0)
        for _ in range(i):
            poly = np.convolve(poly, p1)
        out[i, :] = poly * s[i] / s
    return out


def qubit_blocks(a: np.ndarray, n: int) -> list[tuple[int, np.ndarray]]:
    # Schur-Weyl: (C^2)^{⊗n} = ⊕_{l=0}^{⌊n/2⌋} S_{(n-l, l)} ⊗ C^{m_l}, with A^{⊗n} acting on
    # S_{(n-l, l)} as det(A)^l Sym^{n-2l}(A) and m_l = binom(n, l) - binom(n, l-1).
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    blocks = []
    for l in range(n // 2 + 1):
        m = math.comb(n, l) - (math.comb(n, l - 1) if l > 0 else 0)
        blocks.append((m, det**l * sym_power(a, n - 2 * l)))
    return blocks


def pair_blocks(r: np.ndarray, s: np.ndarray, n: int):
    """Simultaneous block decomposition of (r^{⊗n}, s^{⊗n}): list of (mult, R_b, S_b)."""
    if n == 0:
        one = np.ones((1, 1), dtype=np.complex128)
        return [(1, one, one)]
    if r.shape[0] == 2:
        rb, sb = qubit_blocks(r, n), qubit_blocks(s, n)
        return [(m, hermitian_part(x), hermitian_part(y))
                for (m, x), (_, y) in zip(rb, sb, strict=True)]
    return [(1, tensor_power(r, n), tensor_power(s, n))]


def hermitian_part(x: np.ndarray) -> np.ndarray:
    return (x + x.conj().T) / 2


def trace_norm_blocks(blocks, p: float, q: float) -> float:
    return float(sum(m * np.sum(np.abs(np.linalg.eigvalsh(p * rb - q * sb)))
                     for m, rb, sb in blocks))
