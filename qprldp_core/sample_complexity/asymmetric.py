r"""Binary asymmetric (Stein-type) testing: the least type-II error and bounds on the copies needed.

:math:`n^* = \min\{n : \beta^*_n(\alpha) \le \beta\}` with :math:`\beta^*_n(\alpha)` the least
type-II error of a test of type-I error :math:`\le\alpha`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize_scalar

from .._validation import DEFAULT_ATOL, check_epsilon, check_probability
from ..divergences import sandwiched_renyi_divergence, umegaki_relative_entropy
from ._common import (
    RENYI_GRID,
    S_GRID,
    check_copies,
    check_open01,
    check_pair,
    chernoff_q,
    round_count_down,
    round_count_up,
)
from ._tensor_powers import pair_blocks
from .copy_bounds import CopyBounds

__all__ = [
    "optimal_type_ii_error",
    "minimal_copies_asymmetric",
    "asymmetric_copy_bounds",
    "private_asymmetric_lower_bound",
]


def _beta_dual(blocks, alpha: float) -> float:
    # β*(α) = max_{μ ≥ 0} [μ(1 - α) - Tr(μρ_n - σ_n)_+]  (SDP duality; concave in μ, and
    # negative for μ > 1/α since Tr(μρ - σ)_+ >= μ - 1). Every μ gives a valid lower bound.
    def neg(mu: float) -> float:
        pos = sum(m * float(np.sum(np.clip(np.linalg.eigvalsh(mu * rb - sb), 0, None)))
                  for m, rb, sb in blocks)
        return -(mu * (1 - alpha) - pos)

    hi = 1.0 / alpha
    res = minimize_scalar(neg, bounds=(0.0, hi), method="bounded",
                          options={"xatol": 1e-12 * hi, "maxiter": 500})
    cands = [0.0, -neg(hi), -float(res.fun)]
    return float(min(1.0, max(cands)))


def optimal_type_ii_error(
    rho: ArrayLike, sigma: ArrayLike, *, alpha: float, copies: int = 1, atol: float = DEFAULT_ATOL
) -> float:
    r"""Least type-II error :math:`\beta^*_n(\alpha)` of a test with type-I error :math:`\le\alpha`.

    .. math::
        \beta^*_n(\alpha) = \min\{\mathrm{Tr}[T\sigma^{\otimes n}] : 0 \le T \le I,\
        \mathrm{Tr}[(I - T)\rho^{\otimes n}] \le \alpha\}
        = \max_{\mu \ge 0}\bigl[\mu(1-\alpha)
          - \mathrm{Tr}(\mu\rho^{\otimes n} - \sigma^{\otimes n})_+\bigr],

    the second form by SDP strong duality (derived here, ``docs/qprldp.md`` §6.3), maximised
    numerically over the scalar :math:`\mu \in [0, 1/\alpha]` (concave). For qubits the tensor
    powers are block-diagonalised by Schur–Weyl duality (exact; blocks of size :math:`\le n+1`).

    Args:
        rho, sigma: density matrices of shape (d, d).
        alpha: type-I error :math:`\alpha \in (0, 1)`.
        copies: :math:`n \ge 0`.
        atol: tolerance of the checks.

    Returns:
        :math:`\beta^*_n(\alpha) \in [0, 1]` (accurate to the scalar optimiser, ~1e-10).

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> round(optimal_type_ii_error(np.diag([1.0, 0]), np.diag([0.5, 0.5]), alpha=0.0001,
        ...                             copies=3), 6)
        0.125
    """
    r, s = check_pair(rho, sigma, atol)
    alpha = check_open01(alpha, "alpha")
    n = check_copies(copies)
    return _beta_dual(pair_blocks(r, s, n), alpha)


def minimal_copies_asymmetric(
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    alpha: float,
    beta: float,
    max_copies: int = 8,
    atol: float = DEFAULT_ATOL,
) -> int | None:
    r"""Brute-force :math:`n^* = \min\{n : \beta^*_n(\alpha) \le \beta\}`.

    Args:
        rho, sigma: density matrices of shape (d, d).
        alpha: type-I error :math:`\alpha \in (0, 1)`.
        beta: target type-II error :math:`\beta \in (0, 1)`.
        max_copies: largest :math:`n` tried.
        atol: tolerance of the checks.

    Returns:
        :math:`n^*`, or ``None`` if not reached within ``max_copies``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> minimal_copies_asymmetric(np.diag([1.0, 0]), np.diag([0.5, 0.5]), alpha=0.01,
        ...                           beta=0.1)
        4
    """
    r, s = check_pair(rho, sigma, atol)
    alpha = check_open01(alpha, "alpha")
    beta = check_open01(beta, "beta")
    max_copies = check_copies(max_copies, "max_copies")
    for n in range(max_copies + 1):
        if _beta_dual(pair_blocks(r, s, n), alpha) <= beta:
            return n
    return None


def asymmetric_copy_bounds(
    rho: ArrayLike, sigma: ArrayLike, *, alpha: float, beta: float, atol: float = DEFAULT_ATOL
) -> CopyBounds:
    r"""Bounds on :math:`n^* = \min\{n : \beta^*_n(\alpha) \le \beta\}` (Stein-type setting).

    * Lower (converses, derived here, ``docs/qprldp.md`` §6.3):
      :math:`n^* \ge [(1-\alpha)\ln\frac1\beta - \ln 2]/D(\rho\|\sigma)` (data processing of the
      Umegaki relative entropy) and, for every :math:`a > 1`,
      :math:`n^* \ge [\ln\frac1\beta - \frac{a}{a-1}\ln\frac1{1-\alpha}]/\tilde D_a(\rho\|\sigma)`
      (data processing and additivity of the sandwiched Rényi divergence).
    * Upper (achievability): the test
      :math:`\Pi\{\rho^{\otimes n} - \lambda\sigma^{\otimes n} > 0\}`
      has :math:`\alpha_n + \lambda\beta_n \le \lambda^{1-s}Q_s^n`; choosing :math:`\lambda` so that
      :math:`\alpha_n \le \alpha` gives :math:`n^* \le [(1-s)\ln\frac1\beta + s\ln\frac1\alpha]/
      \ln\frac1{Q_s}` for every :math:`s \in (0, 1)`.

    The Stein exponent :math:`-\frac1n\ln\beta^*_n \to D(\rho\|\sigma)` is the first-order term.

    Args:
        rho, sigma: density matrices of shape (d, d) (channel outputs when privacy enters).
        alpha: type-I error :math:`\alpha \in (0, 1)`.
        beta: target type-II error :math:`\beta \in (0, 1)`.
        atol: tolerance of the checks.

    Returns:
        :class:`CopyBounds` with ``task == "asymmetric"``.

    Raises:
        ValueError: if an argument is out of range.

    References:
        Hiai, Petz (1991) and Ogawa, Nagaoka, arXiv:quant-ph/9906090 (quantum Stein lemma);
        Audenaert et al., arXiv:quant-ph/0610027, Thm. 1; Müller-Lennert et al.,
        arXiv:1306.3142 and Wilde, Winter, Yang, arXiv:1306.1586 (sandwiched Rényi).

    Example:
        >>> b = asymmetric_copy_bounds(np.diag([1.0, 0]), np.diag([0.5, 0.5]), alpha=0.01,
        ...                            beta=0.1)
        >>> b.lower <= 4 <= b.upper
        True
    """
    r, s = check_pair(rho, sigma, atol)
    alpha = check_open01(alpha, "alpha")
    beta = check_open01(beta, "beta")
    if beta >= 1 - alpha:
        return CopyBounds(0, 0, "asymmetric", "beta >= 1 - alpha", "beta >= 1 - alpha")
    lower: int | float = 0
    d_rel = float(umegaki_relative_entropy(r, s, atol=atol))
    if d_rel == 0.0:
        lower = math.inf
    elif math.isfinite(d_rel):
        lower = max(lower, round_count_down(
            ((1 - alpha) * math.log(1 / beta) - math.log(2)) / d_rel))
    for a in RENYI_GRID:
        if math.isinf(lower):
            break
        dt = float(sandwiched_renyi_divergence(r, s, alpha=a, atol=atol))
        if math.isfinite(dt) and dt > 0:
            x = (math.log(1 / beta) - a / (a - 1) * math.log(1 / (1 - alpha))) / dt
            lower = max(lower, round_count_down(x))
    qs = chernoff_q(r, s, S_GRID, atol)
    best = math.inf
    for sv, qv in zip(S_GRID, qs, strict=True):
        if qv <= 0.0:
            best = 1.0
            break
        if qv >= 1.0:
            continue
        best = min(best, ((1 - sv) * math.log(1 / beta) + sv * math.log(1 / alpha))
                   / -math.log(qv))
    upper = round_count_up(max(best, 1.0)) if math.isfinite(best) else math.inf
    return CopyBounds(lower, upper, "asymmetric", "relative entropy + sandwiched Renyi converse",
                      "Audenaert-Hoeffding achievability")


def private_asymmetric_lower_bound(
    *, epsilon: float, delta: float, alpha: float, beta: float, notion: str = "qldp"
) -> int | float:
    r"""Copies needed for type-I :math:`\le\alpha`, type-II :math:`\le\beta` after *any*
    :math:`(\varepsilon,\delta)`-private channel, for *any* inputs.

    With :math:`\gamma = e^\varepsilon`, product composition
    (:func:`~qprldp_core.properties.tensor_qldp_delta`) gives
    :math:`E_{\gamma^n}(\rho'^{\otimes n}\|\sigma'^{\otimes n}) \le \delta_n =
    \delta(\gamma^n - 1)/(\gamma - 1)`, and every test has
    :math:`1 - \alpha - \gamma^n\beta_n \le E_{\gamma^n}`. So :math:`\beta_n \le \beta` needs
    :math:`1 - \alpha - \delta_n \le \gamma^n\beta`, i.e. (derived here, ``docs/qprldp.md`` §6.4)

    .. math::
        n^* \ge \frac{1}{\varepsilon}\ln\frac{1 - \alpha + \delta/(\gamma - 1)}
        {\beta + \delta/(\gamma - 1)}\quad(\varepsilon > 0), \qquad
        n^* \ge \frac{1 - \alpha - \beta}{\delta}\quad(\varepsilon = 0).

    Args:
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        alpha: type-I error :math:`\alpha \in (0, 1)`.
        beta: type-II error :math:`\beta \in (0, 1)`.
        notion: ``"qldp"`` or ``"qprldp"`` (QPrLDP implies QLDP with the same parameters).

    Returns:
        Lower bound on :math:`n^*` (int, or ``math.inf`` if no number of copies suffices).

    Raises:
        ValueError: if a parameter is out of range.

    References:
        Derived here; compare Nuradha, Wilde, arXiv:2406.18651 (private asymmetric testing).

    Example:
        >>> private_asymmetric_lower_bound(epsilon=0.5, delta=0.0, alpha=0.05, beta=0.01)
        10
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability(delta, "delta")
    alpha = check_open01(alpha, "alpha")
    beta = check_open01(beta, "beta")
    if notion not in ("qldp", "qprldp"):
        raise ValueError(f"`notion` must be one of ('qldp', 'qprldp'). Found {notion!r}.")
    if beta >= 1 - alpha:
        return 0
    if epsilon == 0.0:
        if delta == 0.0:
            return math.inf
        return round_count_down((1 - alpha - beta) / delta)
    c = delta / math.expm1(epsilon)
    return round_count_down(math.log((1 - alpha + c) / (beta + c)) / epsilon)
