r"""Binary symmetric testing: Helstrom's error and bounds on the copies needed (also after privacy).

Priors :math:`(p, 1-p)`, :math:`n^* = \min\{n : P_e(n) \le \alpha\}` with Helstrom's error
:math:`P_e(n) = \tfrac12(1 - \|p\rho^{\otimes n} - (1-p)\sigma^{\otimes n}\|_1)`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, check_probability
from ..channels import Channel
from ..contraction import trace_distance_contraction_bound
from ..divergences import fidelity, trace_distance
from ._common import (
    S_GRID,
    check_copies,
    check_open01,
    check_pair,
    chernoff_q,
    fid_lower_n,
    private_lower,
    round_count_down,
    round_count_up,
    td_lower_n,
)
from ._tensor_powers import hermitian_part, pair_blocks, tensor_power, trace_norm_blocks
from .copy_bounds import CopyBounds

__all__ = [
    "helstrom_error",
    "minimal_copies_symmetric",
    "symmetric_copy_bounds",
    "private_symmetric_lower_bound",
    "private_symmetric_copy_bounds",
]


def helstrom_error(
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    prior: float = 0.5,
    copies: int = 1,
    atol: float = DEFAULT_ATOL,
) -> float:
    r"""Helstrom's minimum error of discriminating :math:`\rho^{\otimes n}` from
    :math:`\sigma^{\otimes n}`.

    .. math::
        P_e(n) = \tfrac12\bigl(1 - \|p\,\rho^{\otimes n} - (1-p)\,\sigma^{\otimes n}\|_1\bigr).

    The tensor powers are built explicitly (brute-force reference).

    Args:
        rho, sigma: density matrices of shape (d, d).
        prior: prior :math:`p \in [0, 1]` of :math:`\rho`.
        copies: :math:`n \ge 0`, with :math:`d^n \le 4096`.
        atol: tolerance of the density-matrix checks.

    Returns:
        :math:`P_e(n) \in [0, \min(p, 1-p)]`.

    Raises:
        ValueError: if a state is invalid, ``prior`` is outside [0, 1] or ``d**copies > 4096``.

    References:
        Helstrom, Quantum Detection and Estimation Theory (1976), Ch. IV.

    Example:
        >>> helstrom_error(np.diag([1.0, 0]), np.diag([0.5, 0.5]), copies=2)
        0.125
    """
    r, s = check_pair(rho, sigma, atol)
    p = check_probability(prior, "prior")
    n = check_copies(copies)
    rn, sn = tensor_power(r, n), tensor_power(s, n)
    norm = float(np.sum(np.abs(np.linalg.eigvalsh(hermitian_part(p * rn - (1 - p) * sn)))))
    return float(min(min(p, 1 - p), max(0.0, 0.5 * (1.0 - norm))))


def minimal_copies_symmetric(
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    prior: float = 0.5,
    alpha: float,
    max_copies: int = 8,
    atol: float = DEFAULT_ATOL,
) -> int | None:
    r"""Brute-force :math:`n^* = \min\{n \ge 0 : P_e(n) \le \alpha\}` by Helstrom's error.

    For qubits the tensor powers are block-diagonalised exactly by Schur–Weyl duality
    (:math:`(\mathbb C^2)^{\otimes n} = \bigoplus_l S_{(n-l,l)}\otimes\mathbb C^{m_l}`, blocks of
    size :math:`\le n + 1`), which gives the same value as :func:`helstrom_error`'s explicit
    :math:`2^n \times 2^n` matrices (checked in the tests); other dimensions are built explicitly.

    Args:
        rho, sigma: density matrices of shape (d, d).
        prior: prior :math:`p \in (0, 1)` of :math:`\rho`.
        alpha: target error :math:`\alpha \in (0, 1)`.
        max_copies: largest :math:`n` tried (:math:`d^n \le 4096`).
        atol: tolerance of the density-matrix checks.

    Returns:
        :math:`n^*`, or ``None`` if :math:`P_e(n) > \alpha` for all :math:`n \le` ``max_copies``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> minimal_copies_symmetric(np.diag([1.0, 0]), np.diag([0.5, 0.5]), alpha=0.1)
        3
    """
    r, s = check_pair(rho, sigma, atol)
    p = check_open01(prior, "prior")
    alpha = check_open01(alpha, "alpha")
    max_copies = check_copies(max_copies, "max_copies")
    for n in range(max_copies + 1):
        if _helstrom_blocks(r, s, p, n) <= alpha:
            return n
    return None


def _helstrom_blocks(r: np.ndarray, s: np.ndarray, p: float, n: int) -> float:
    # Same value as helstrom_error; qubit tensor powers via the exact Schur-Weyl blocks.
    norm = trace_norm_blocks(pair_blocks(r, s, n), p, 1 - p)
    return float(min(min(p, 1 - p), max(0.0, 0.5 * (1.0 - norm))))


def symmetric_copy_bounds(
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    prior: float = 0.5,
    alpha: float,
    atol: float = DEFAULT_ATOL,
) -> CopyBounds:
    r"""Upper and lower bounds on :math:`n^*` for binary symmetric testing of :math:`\rho` vs
    :math:`\sigma`.

    * Lower (derived here, ``docs/qprldp.md`` §6.1): with :math:`F` the squared fidelity and
      :math:`T` the trace distance,
      :math:`n^* \ge \ln\frac{p(1-p)}{\alpha(1-\alpha)} / \ln\frac1F` (from
      :math:`P_e(n) \ge \tfrac12(1 - \sqrt{1 - 4p(1-p)F^n})` and :math:`F(\rho^{\otimes n},
      \sigma^{\otimes n}) = F^n`) and :math:`n^* \ge (1 - \alpha/\min(p, 1-p))/T`.
    * Upper: :math:`P_e(n) \le p^s(1-p)^{1-s} Q_s^n`, :math:`Q_s = \mathrm{Tr}\rho^s\sigma^{1-s}`,
      for every :math:`s \in [0, 1]` (Audenaert et al.); :math:`s = 1/2` gives
      :math:`\sqrt{p(1-p)}\,F^{n/2}`. Minimised over a grid of :math:`s`.

    If :math:`\alpha \ge \min(p, 1-p)` no copy is needed and both sides are 0.

    Args:
        rho, sigma: density matrices of shape (d, d) (for private testing: the channel outputs).
        prior: prior :math:`p \in (0, 1)` of :math:`\rho`.
        alpha: target error :math:`\alpha \in (0, 1)`.
        atol: tolerance of the density-matrix checks; eigenvalues in
            :math:`[-\mathrm{atol}, 0)` are clamped to zero, positive ones are kept.

    Returns:
        :class:`CopyBounds` with ``task == "symmetric"``.

    Raises:
        ValueError: if a state is invalid or ``prior``/``alpha`` is not in (0, 1).

    References:
        Audenaert et al., Phys. Rev. Lett. 98, 160501 (2007), arXiv:quant-ph/0610027, Thm. 1
        (:math:`\tfrac12\mathrm{Tr}(A + B - |A - B|) \le \mathrm{Tr}A^sB^{1-s}`); Fuchs, van de
        Graaf, arXiv:quant-ph/9712042.

    Example:
        >>> b = symmetric_copy_bounds(np.diag([1.0, 0]), np.diag([0.5, 0.5]), alpha=0.1)
        >>> b.lower <= 3 <= b.upper
        True
    """
    r, s = check_pair(rho, sigma, atol)
    p = check_open01(prior, "prior")
    alpha = check_open01(alpha, "alpha")
    q = 1 - p
    if alpha >= min(p, q):
        return CopyBounds(0, 0, "symmetric", "alpha >= min prior", "alpha >= min prior")
    f = float(fidelity(r, s, atol=atol))
    t = float(trace_distance(r, s, atol=atol))
    lower = max(round_count_down(fid_lower_n(f, p, q, alpha)),
                round_count_down(td_lower_n(t, p, q, alpha)))
    upper = _chernoff_upper(r, s, p, q, alpha, atol)
    return CopyBounds(lower, upper, "symmetric", "fidelity + trace distance", "quantum Chernoff")


def _chernoff_upper(r, s, p, q, alpha, atol) -> int | float:
    qs = chernoff_q(r, s, S_GRID, atol)
    best = math.inf
    for sv, qv in zip(S_GRID, qs, strict=True):
        if qv <= 0.0:
            return 1  # orthogonal supports: one copy discriminates perfectly
        if qv >= 1.0:
            continue
        best = min(best, math.log(p**sv * q ** (1 - sv) / alpha) / -math.log(qv))
    return round_count_up(best)


def private_symmetric_lower_bound(
    *,
    epsilon: float,
    delta: float,
    prior: float = 0.5,
    alpha: float,
    trace_distance: float = 1.0,
    notion: str = "qldp",
) -> int | float:
    r"""Copies needed by *every* test after *any* :math:`(\varepsilon,\delta)`-private channel.

    For inputs at trace distance :math:`T_{\rm in}` and an :math:`(\varepsilon,\delta)`-QLDP (or
    QPrLDP) channel :math:`\mathcal A`, the outputs satisfy
    :math:`T \le \eta T_{\rm in}` with
    :math:`\eta = (e^\varepsilon - 1 + 2\delta)/(e^\varepsilon + 1)`
    (:func:`~qprldp_core.contraction.trace_distance_contraction_bound`), hence
    :math:`F \ge (1 - \eta T_{\rm in})^2` (Fuchs–van de Graaf); for :math:`\delta = 0` also
    :math:`F \ge e^{-\varepsilon}` (since :math:`-\ln F = \tilde D_{1/2} \le D_{\max} \le
    \varepsilon`). The lower bounds of :func:`symmetric_copy_bounds` then apply with these worst
    values (derived here, ``docs/qprldp.md`` §6.2).

    Args:
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        prior: prior :math:`p \in (0, 1)`.
        alpha: target error :math:`\alpha \in (0, 1)`.
        trace_distance: trace distance of the *inputs* in [0, 1] (1 = worst case over inputs).
        notion: ``"qldp"`` or ``"qprldp"`` (same bound).

    Returns:
        Lower bound on :math:`n^*` (int, or ``math.inf``), rounded to
        :math:`\lceil x - 10^{-9}x\rceil` for the real bound :math:`x` (:math:`n^*` is an integer).

    Raises:
        ValueError: if a parameter is out of range.

    References:
        Nuradha, Wilde, arXiv:2406.18651 (private hypothesis testing via contraction); this form
        is derived here.

    Example:
        >>> private_symmetric_lower_bound(epsilon=0.1, delta=0.0, alpha=0.05)
        19
    """
    p = check_open01(prior, "prior")
    alpha = check_open01(alpha, "alpha")
    tin = check_probability(trace_distance, "trace_distance")
    eta = trace_distance_contraction_bound(epsilon=epsilon, delta=delta, notion=notion)
    return private_lower(eta, tin, float(epsilon), float(delta), p, alpha)


def private_symmetric_copy_bounds(
    channel: Channel,
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    delta: float,
    prior: float = 0.5,
    alpha: float,
    notion: str = "qldp",
    atol: float = DEFAULT_ATOL,
) -> CopyBounds:
    r"""Bounds on :math:`n^*` for testing :math:`\mathcal A(\rho)` vs :math:`\mathcal A(\sigma)`,
    :math:`\mathcal A` an :math:`(\varepsilon,\delta)`-private channel.

    ``lower`` is the larger of :func:`symmetric_copy_bounds`'s lower bound on the outputs and
    :func:`private_symmetric_lower_bound` with the inputs' trace distance; ``upper`` is the
    Chernoff bound on the outputs. The privacy-based part is valid only if the channel really is
    :math:`(\varepsilon,\delta)`-private (use a certificate from :mod:`qprldp_core.certify`).

    Args:
        channel: the private channel :math:`\mathcal A`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        prior: prior :math:`p \in (0, 1)`.
        alpha: target error :math:`\alpha \in (0, 1)`.
        notion: ``"qldp"`` or ``"qprldp"``.
        atol: tolerance of the checks.

    Returns:
        :class:`CopyBounds` with ``task == "symmetric"``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> b = private_symmetric_copy_bounds(depolarizing(0.5, 2), np.diag([1.0, 0]),
        ...     np.diag([0, 1.0]), epsilon=math.log(3), delta=0.0, alpha=0.05)
        >>> b.lower <= b.upper
        True
    """
    r, s = check_pair(rho, sigma, atol)
    out_r, out_s = channel(r), channel(s)
    base = symmetric_copy_bounds(out_r, out_s, prior=prior, alpha=alpha, atol=atol)
    tin = min(1.0, float(trace_distance(r, s, atol=atol)))
    priv = private_symmetric_lower_bound(
        epsilon=epsilon, delta=delta, prior=prior, alpha=alpha, trace_distance=tin, notion=notion
    )
    lower = max(base.lower, priv)
    return CopyBounds(lower, base.upper, "symmetric",
                      "max(fidelity/trace distance, privacy contraction)", base.upper_method)
