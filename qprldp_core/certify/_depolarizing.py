r"""Closed forms of δ*(ε) for the global depolarizing channel (QLDP and QPrLDP), and witnesses.

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
The formulas and their derivations are stated in :mod:`qprldp_core.certify.certificates`.

Numerical ties: ε within a relative ``1e-12`` (:data:`TIE_RTOL`) of a threshold (ε₀, or the jumps
of the QPrLDP step function) is resolved as lying exactly on it, because a double-precision ε
cannot be placed more finely relative to a threshold computed from a double-precision p.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "TIE_RTOL",
    "basis_mixture",
    "depolarizing_qldp_delta",
    "depolarizing_qprldp_kstar",
    "depolarizing_qprldp_delta",
    "depolarizing_witness",
    "p_eff_qubit",
]


TIE_RTOL = 1e-12  # relative window in which ε is taken to sit exactly on a threshold


def basis_mixture(d: int, idx) -> np.ndarray:
    m = np.zeros((d, d), dtype=np.complex128)
    for i in idx:
        m[i, i] = 1.0
    return m / len(idx)


def depolarizing_qldp_delta(p: float, d: int, eps: float) -> float:
    # derived here: sup E_γ at orthogonal pure inputs; δ = (1 − p) − (γ − 1) p / d, floored at 0
    val = (1.0 - p) - math.expm1(eps) * p / d
    if val <= TIE_RTOL * max(1.0 - p, 1e-300):
        return 0.0
    return min(1.0, val)


def depolarizing_qprldp_kstar(p: float, d: int, eps: float) -> int:
    """k* of the QPrLDP closed form (docs/qprldp.md); 0 means ε ≥ ε₀ (δ* = 0)."""
    if p == 0.0:
        return d - 1  # identity channel: every ε is below ε₀ = ∞
    if p >= 1.0:
        return 0
    g1 = math.expm1(eps)
    if g1 == 0.0:
        return d - 1  # ε = 0: x = ∞
    denom = g1 * p
    if denom == 0.0:
        return d - 1
    x = d * (1.0 - p) / denom
    if not math.isfinite(x) or x >= d:
        return d - 1
    if x <= 1.0 + TIE_RTOL:
        return 0
    return int(min(d - 1, math.ceil(x * (1.0 - TIE_RTOL)) - 1))


def depolarizing_qprldp_delta(p: float, d: int, eps: float) -> float:
    k = depolarizing_qprldp_kstar(p, d, eps)
    if k == 0:
        return 0.0
    return min(1.0, (1.0 - p) + p * k / d)


def depolarizing_witness(notion: str, p: float, d: int, eps: float):
    if notion == "QLDP":
        return basis_mixture(d, [0]), basis_mixture(d, [1])
    k = depolarizing_qprldp_kstar(p, d, eps)
    k = max(k, 1)
    return basis_mixture(d, range(k)), basis_mixture(d, [k])


def p_eff_qubit(p: float) -> float:
    r"""For qubits, :math:`\mathcal D_p` (p > 1) has the worst cases of :math:`\mathcal D_{2-p}`.

    Derived here: :math:`\mathcal D_p = \mathcal D_{2-p}\circ\Theta` with
    :math:`\Theta(X) = Y X^{T} Y` (Bloch inversion); on n qubits :math:`\mathcal D_p^{\otimes n} =
    \mathcal D_{2-p}^{\otimes n}\circ\Theta^{\otimes n}` and :math:`\Theta^{\otimes n}(X) =
    Y^{\otimes n} X^T Y^{\otimes n}` maps states bijectively onto states, so every supremum over
    input pairs is unchanged.
    """
    return p if p <= 1.0 else 2.0 - p
