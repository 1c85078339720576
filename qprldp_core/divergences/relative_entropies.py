r"""Relative entropies in nats: Umegaki, max-relative entropy and sandwiched Rényi divergences.

``math.inf`` where a divergence is infinite (support mismatch, decided with
:func:`~qprldp_core._validation.support_tol`).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, support_tol
from ._spectral import (
    checked_pair,
    log_schatten,
    spectra,
    support_and_kernel_weight,
    weights_on,
)

__all__ = ["umegaki_relative_entropy", "max_relative_entropy", "sandwiched_renyi_divergence"]


def umegaki_relative_entropy(
    rho: ArrayLike, sigma: ArrayLike, *, atol: float = DEFAULT_ATOL
) -> float:
    r"""Umegaki relative entropy :math:`D(\rho\|\sigma) = \mathrm{Tr}\,\rho(\ln\rho - \ln\sigma)`.

    Computed as :math:`\sum_i w_i\ln w_i - \sum_j \langle s_j|\rho|s_j\rangle \ln\lambda_j` over
    the eigenvalues :math:`w_i > 0` of ρ and the eigenpairs :math:`(\lambda_j, s_j)` of σ on its
    support.
    Supports (tolerance :func:`~qprldp_core._validation.support_tol`, 1e-13 for d ≤ 28): the
    kernel of σ is spanned by its eigenvectors with eigenvalue ≤ 1e-13, and the value is ∞ when
    ρ puts weight > 1e-13 on it. Eigenvalues of σ in (0, 1e-13] thus count as kernel, which can
    only make the divergence larger (more privacy loss); a weight of ρ at or below 1e-13 on that
    kernel is taken as rounding noise of a computed state and dropped. Every eigenvalue above the
    tolerance enters the logarithms and powers unchanged.

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks; eigenvalues in :math:`[-\mathrm{atol}, 0)`
            are clamped to zero.

    Returns:
        Value in nats in :math:`[0, \infty]`; ``math.inf`` if supp ρ ⊄ supp σ.

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Umegaki, Kodai Math. Sem. Rep. 14, 59 (1962).

    Example:
        >>> round(umegaki_relative_entropy(np.diag([1.0, 0.0]), np.eye(2) / 2), 6)
        0.693147
        >>> round(umegaki_relative_entropy(np.eye(2) / 2, np.diag([1 - 1e-9, 1e-9])), 6)
        9.668486
    """
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _, ws, vs, _ = spectra(r, s, atol)
    supp, kernel_weight = support_and_kernel_weight(r, ws, vs)
    if kernel_weight > support_tol(ws.size):
        return math.inf
    pos_r = wr > 0
    neg_entropy = float(np.sum(wr[pos_r] * np.log(wr[pos_r])))  # Tr ρ ln ρ
    cross = float(np.sum(weights_on(r, vs)[supp] * np.log(ws[supp])))  # Tr ρ ln σ on supp σ
    return max(0.0, neg_entropy - cross)


def max_relative_entropy(rho: ArrayLike, sigma: ArrayLike, *, atol: float = DEFAULT_ATOL) -> float:
    r"""Max-relative entropy :math:`D_{\max}(\rho\|\sigma)=\ln\min\{\lambda:\rho\le\lambda\sigma\}`.

    Computed as :math:`\ln \lambda_{\max}(\sigma^{-1/2}\rho\,\sigma^{-1/2}) = 2\ln s_{\max}
    (\sqrt\rho\,\sigma^{-1/2})` on supp σ (largest singular value of the factor, see
    :func:`fidelity`).
    Supports (tolerance :func:`~qprldp_core._validation.support_tol`, 1e-13 for d ≤ 28): the
    kernel of σ is spanned by its eigenvectors with eigenvalue ≤ 1e-13, and the value is ∞ when
    ρ puts weight > 1e-13 on it. Eigenvalues of σ in (0, 1e-13] thus count as kernel, which can
    only make the divergence larger (more privacy loss); a weight of ρ at or below 1e-13 on that
    kernel is taken as rounding noise of a computed state and dropped. Every eigenvalue above the
    tolerance enters the logarithms and powers unchanged.

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks; eigenvalues in :math:`[-\mathrm{atol}, 0)`
            are clamped to zero.

    Returns:
        Value in nats in :math:`[0, \infty]`; ``math.inf`` if supp ρ ⊄ supp σ.

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Datta, arXiv:0803.2770, Def. 1.

    Example:
        >>> round(max_relative_entropy(np.diag([1.0, 0.0]), np.eye(2) / 2), 6)
        0.693147
        >>> round(max_relative_entropy(np.eye(2) / 2, np.diag([1 - 1e-9, 1e-9])), 6)
        20.030119
    """
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _, ws, vs, overlap = spectra(r, s, atol)
    supp, kernel_weight = support_and_kernel_weight(r, ws, vs)
    if kernel_weight > support_tol(ws.size):
        return math.inf
    x = np.sqrt(wr)[:, None] * overlap[:, supp] / np.sqrt(ws[supp])[None, :]  # ~ √ρ σ^{-1/2}
    sv_max = float(np.linalg.svd(x, compute_uv=False)[0]) if x.size else 0.0
    if sv_max <= 0.0:
        return math.inf
    return max(0.0, 2.0 * math.log(sv_max))  # Datta arXiv:0803.2770 Def. 1


def _check_alpha(alpha) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"`alpha` must be a real number. Found {type(alpha).__name__}.")
    a = float(alpha)
    if math.isnan(a) or a < 0.5:
        raise ValueError(f"`alpha` must be in [0.5, inf]. Found {a:.6g}.")
    return a


def sandwiched_renyi_divergence(
    rho: ArrayLike, sigma: ArrayLike, *, alpha: float, atol: float = DEFAULT_ATOL
) -> float:
    r"""Sandwiched Rényi divergence :math:`\tilde D_\alpha(\rho\|\sigma)` in nats.

    .. math::

        \tilde D_\alpha(\rho\|\sigma) = \frac{1}{\alpha - 1}
        \ln \mathrm{Tr}\Big[\big(\sigma^{\frac{1-\alpha}{2\alpha}}\,\rho\,
        \sigma^{\frac{1-\alpha}{2\alpha}}\big)^\alpha\Big],

    for :math:`\alpha \in [1/2, 1) \cup (1, \infty)`, with the limits :math:`\alpha = 1`
    (Umegaki relative entropy) and :math:`\alpha = \infty` (max-relative entropy).

    Computed as :math:`\mathrm{Tr}[(\sigma^t\rho\,\sigma^t)^\alpha] = \sum_i s_i^{2\alpha}`,
    :math:`t = (1-\alpha)/(2\alpha)`, over the singular values :math:`s_i` of
    :math:`\sqrt\rho\,\sigma^t` (see :func:`fidelity`), so that small eigenvalues keep their
    accuracy. For α > 1 the power :math:`\sigma^t` (t < 0) is taken on supp σ.

    Supports (tolerance :func:`~qprldp_core._validation.support_tol`, 1e-13 for d ≤ 28): the
    kernel of σ is spanned by its eigenvectors with eigenvalue ≤ 1e-13, and the value is ∞ when
    ρ puts weight > 1e-13 on it. Eigenvalues of σ in (0, 1e-13] thus count as kernel, which can
    only make the divergence larger (more privacy loss); a weight of ρ at or below 1e-13 on that
    kernel is taken as rounding noise of a computed state and dropped. Every eigenvalue above the
    tolerance enters the logarithms and powers unchanged.
    For α < 1 the value is infinite when ρ's weight on supp σ is at most 1e-13 (ρ ⟂ σ).

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        alpha: order in :math:`[1/2, \infty]` (``math.inf`` allowed).
        atol: tolerance of the density-matrix checks; eigenvalues in :math:`[-\mathrm{atol}, 0)`
            are clamped to zero.

    Returns:
        Value in nats in :math:`[0, \infty]`. For α > 1, ``math.inf`` if supp ρ ⊄ supp σ; for
        α < 1, ``math.inf`` only if ρ ⟂ σ.

    Raises:
        ValueError: if an input is not a density matrix, the shapes differ, or α < 1/2.

    References:
        Müller-Lennert et al., arXiv:1306.3142, Def. 3 and Thm. 5 (α → 1, α → ∞ limits);
        Wilde, Winter, Yang, arXiv:1306.1586.

    Example:
        >>> rho = np.diag([0.9, 0.1]); sigma = np.eye(2) / 2
        >>> round(sandwiched_renyi_divergence(rho, sigma, alpha=2.0), 6)
        0.494696
    """
    a = _check_alpha(alpha)
    if a == 1.0:
        return umegaki_relative_entropy(rho, sigma, atol=atol)
    if math.isinf(a):
        return max_relative_entropy(rho, sigma, atol=atol)
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _, ws, vs, overlap = spectra(r, s, atol)
    supp, kernel_weight = support_and_kernel_weight(r, ws, vs)
    tol = support_tol(ws.size)
    expo = (1.0 - a) / (2.0 * a)  # MDSFT arXiv:1306.3142 Def. 3: σ^{(1−α)/2α} ρ σ^{(1−α)/2α}
    if a > 1:
        if kernel_weight > tol:
            return math.inf
        x = np.sqrt(wr)[:, None] * overlap[:, supp] * (ws[supp] ** expo)[None, :]
    else:
        if float(np.sum(weights_on(r, vs)[supp])) <= tol:
            return math.inf  # ρ ⟂ σ: Q_α = 0
        x = np.sqrt(wr)[:, None] * overlap * (ws**expo)[None, :]
    log_q = log_schatten(x, 2.0 * a)  # ln Tr[(σ^t ρ σ^t)^α] = ln Σ s_i^{2α}
    if not math.isfinite(log_q):
        return math.inf
    return max(0.0, log_q / (a - 1.0))
