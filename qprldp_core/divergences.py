r"""Quantum divergences used by QLDP and QPrLDP (all in nats).

Every function validates its states with :func:`~qprldp_core._validation.check_density_matrix`
(square, Hermitian, PSD, unit trace within ``atol``), never returns NaN, and returns
``math.inf`` where a divergence is infinite (support mismatch).

References:
    Hirche, Rouzé, França, *Quantum differential privacy: an information theory perspective*,
    arXiv:2202.10717 (v2), Sec. 2-3: hockey-stick divergence :math:`E_\gamma` and its use for QDP.
    Müller-Lennert, Dupuis, Szehr, Fehr, Tomamichel, arXiv:1306.3142, Def. 3: sandwiched Rényi
    divergence; Datta, arXiv:0803.2770, Def. 1: max-relative entropy.
    Shi, *Quantum probabilistic local differential privacy*, arXiv:2607.06307: the spectral
    violation event of QPrLDP.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.special import logsumexp

from ._validation import (
    DEFAULT_ATOL,
    check_density_matrix,
    check_epsilon,
    check_gamma,
    check_same_dimension,
    eigh_psd,
    support_tol,
)

__all__ = [
    "hockey_stick_divergence",
    "violation_probability",
    "trace_distance",
    "fidelity",
    "sandwiched_renyi_divergence",
    "max_relative_entropy",
    "umegaki_relative_entropy",
]


def _pair(rho, sigma, atol):
    r = check_density_matrix(rho, "rho", atol=atol)
    s = check_density_matrix(sigma, "sigma", atol=atol)
    check_same_dimension(r, s, ("rho", "sigma"))
    return r, s


def _clip01(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def _spectra(r: np.ndarray, s: np.ndarray, atol: float):
    r"""Eigenvalues of ρ and σ (negative rounding noise in [-atol, 0) clamped to 0, positive ones
    kept) and the overlap matrix :math:`O_{ij} = \langle r_i|s_j\rangle` of their eigenvectors.

    Every matrix function below is evaluated in these eigenbases: e.g.
    :math:`\sqrt\rho\,\sigma^t = V_r\,[\mathrm{diag}(\sqrt{w_r})\,O\,\mathrm{diag}(w_s^t)]
    \,V_s^\dagger`, whose singular values are those of the bracket. Singular values of this
    factor are accurate to ~eps times its norm, whereas eigenvalues of the product
    :math:`\sigma^t\rho\,\sigma^t` would only be accurate to ~eps times its norm *squared*.
    """
    wr, vr = eigh_psd(r, atol=atol)
    ws, vs = eigh_psd(s, atol=atol)
    # Inputs are validated (min eigenvalue >= -atol), so this only removes what eigh_psd clamped.
    wr, ws = np.maximum(wr, 0.0), np.maximum(ws, 0.0)
    return wr, vr, ws, vs, vr.conj().T @ vs


def _weights(r: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Weights <s_j|ρ|s_j> of ρ on σ's eigenvectors."""
    return np.maximum(np.real(np.einsum("ij,ik,kj->j", vs.conj(), r, vs)), 0.0)


def _log_schatten(x: np.ndarray, power: float) -> float:
    """ln Σ_i s_i^power over the non-zero singular values s_i of x (-inf if there are none)."""
    sv = np.linalg.svd(x, compute_uv=False)
    sv = sv[sv > 0]
    if sv.size == 0:
        return -math.inf
    return float(logsumexp(power * np.log(sv)))  # without overflow for large powers


def hockey_stick_divergence(rho, sigma, *, gamma: float, atol: float = DEFAULT_ATOL) -> float:
    r"""Hockey-stick divergence :math:`E_\gamma(\rho\|\sigma) = \mathrm{Tr}(\rho - \gamma\sigma)_+`.

    .. math::

        E_\gamma(\rho\|\sigma) = \max_{0 \le M \le I} \mathrm{Tr}\,M(\rho - \gamma\sigma)
        = \sum_{\lambda_i(\rho - \gamma\sigma) > 0} \lambda_i(\rho - \gamma\sigma).

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        gamma: threshold :math:`\gamma \ge 1` (:math:`\gamma = e^\varepsilon`, ε in nats).
        atol: tolerance of the density-matrix checks.

    Returns:
        Value in [0, 1] (dimensionless). Exactly 0 when ``rho`` equals ``sigma``. Positive
        eigenvalues are summed without clamping, so rounding noise can only increase the value
        (the safe side for a δ).

    Raises:
        ValueError: if an input is not a density matrix, the shapes differ, or γ < 1.

    References:
        Hirche, Rouzé, França, arXiv:2202.10717 (v2), Def. 2.2 (hockey-stick divergence) and
        Def. 3.1 (QDP via :math:`E_{e^\varepsilon}`).

    Example:
        >>> rho = np.diag([1.0, 0.0]); sigma = np.diag([0.0, 1.0])
        >>> hockey_stick_divergence(rho, rho, gamma=1.0)
        0.0
        >>> hockey_stick_divergence(rho, sigma, gamma=2.0)
        1.0
    """
    gamma = check_gamma(gamma)
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0  # (1 - γ) ρ ≤ 0 exactly; avoid rounding noise of eigvalsh.
    w = np.linalg.eigvalsh(r - gamma * s)  # HRF arXiv:2202.10717 Def. 2.2: Tr(ρ − γσ)₊
    return _clip01(float(np.sum(w[w > 0])))


def violation_probability(
    rho, sigma, *, epsilon: float, atol: float = DEFAULT_ATOL
) -> float:
    r"""Probability of the spectral privacy-violation event (QPrLDP quantity of a pair).

    .. math::

        P_\varepsilon(\rho\|\sigma) =
        \mathrm{Tr}\big[\rho\,\Pi\{\rho - e^\varepsilon\sigma > 0\}\big],

    where :math:`\Pi\{X > 0\}` is the projector onto the eigenspace of the strictly positive
    eigenvalues of :math:`X`: the acceptance probability under ρ of the quantum Neyman-Pearson
    test at threshold :math:`e^\varepsilon`.

    Tolerance: eigenvalues of :math:`X = \rho - e^\varepsilon\sigma` in :math:`[-\mathrm{atol},
    \mathrm{atol}]` are treated as exactly zero, i.e. *not* in the violation event. The quantity
    is discontinuous at a zero eigenvalue, so no tolerance rounds it one-sidedly for all inputs;
    this choice reproduces exact arithmetic on the inputs where an eigenvalue is exactly zero
    (for instance :math:`\rho = \sigma` at ε = 0, or the degenerate complement of depolarizing
    outputs at ε = 0), which rounding toward the larger value would misreport as a certain
    violation. The certificates in :mod:`qprldp_core.certify` do not depend on this tolerance.

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        epsilon: privacy parameter ε ≥ 0 in nats.
        atol: tolerance of the density-matrix checks and of the eigenvalue sign.

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if an input is not a density matrix, the shapes differ, or ε < 0.

    References:
        Shi, arXiv:2607.06307, definition of (ε, δ)-QPrLDP (spectral violation event).

    Example:
        >>> rho = np.diag([0.75, 0.25]); sigma = np.diag([0.25, 0.75])
        >>> violation_probability(rho, sigma, epsilon=0.5)
        0.75
        >>> violation_probability(rho, sigma, epsilon=2.0)
        0.0
    """
    epsilon = check_epsilon(epsilon)
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0  # ρ − e^ε ρ ≤ 0 exactly
    w, v = np.linalg.eigh(r - math.exp(epsilon) * s)
    pos = v[:, w > atol]  # strictly positive eigenspace, sign decided within atol
    if pos.shape[1] == 0:
        return 0.0
    val = float(np.real(np.einsum("ij,ik,kj->", pos.conj(), r, pos)))
    return _clip01(val)


def trace_distance(rho, sigma, *, atol: float = DEFAULT_ATOL) -> float:
    r"""Trace distance :math:`T(\rho, \sigma) = \tfrac12 \|\rho - \sigma\|_1`.

    Equal to :math:`E_1(\rho\|\sigma)`.

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks.

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Nielsen & Chuang, Sec. 9.2.1.

    Example:
        >>> trace_distance(np.diag([1.0, 0.0]), np.eye(2) / 2)
        0.5
    """
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    w = np.linalg.eigvalsh(r - s)
    return _clip01(0.5 * float(np.sum(np.abs(w))))


def fidelity(rho, sigma, *, atol: float = DEFAULT_ATOL) -> float:
    r"""Squared Uhlmann fidelity :math:`F(\rho,\sigma) = (\mathrm{Tr}|\sqrt\rho\sqrt\sigma|)^2`.

    This is the *squared* convention (:math:`F = |\langle\psi|\phi\rangle|^2` for pure states),
    not the root fidelity :math:`\mathrm{Tr}|\sqrt\rho\sqrt\sigma|`.

    Computed as the squared sum of the singular values of
    :math:`\mathrm{diag}(\sqrt{w_\rho})\,O\,\mathrm{diag}(\sqrt{w_\sigma})` (eigenvalues w, overlap
    O of the eigenvectors), which are those of :math:`\sqrt\rho\sqrt\sigma`. Only negative
    rounding noise (eigenvalues in :math:`[-\mathrm{atol}, 0)`) is clamped to zero; small positive
    eigenvalues enter their square roots (F is continuous, so no support decision is needed).

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks and of the negative-eigenvalue clamping.

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Uhlmann, Rep. Math. Phys. 9, 273 (1976); Jozsa, J. Mod. Opt. 41, 2315 (1994).

    Example:
        >>> fidelity(np.diag([1.0, 0.0]), np.eye(2) / 2)
        0.5
        >>> round(fidelity(np.diag([1 - 1e-8, 1e-8]), np.eye(2) / 2), 9)  # ½(1 + 2√(λ(1 − λ)))
        0.5001
    """
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 1.0
    wr, _, ws, _, overlap = _spectra(r, s, atol)
    x = np.sqrt(wr)[:, None] * overlap * np.sqrt(ws)[None, :]  # ~ √ρ √σ (Uhlmann)
    sv = np.linalg.svd(x, compute_uv=False)
    return _clip01(float(np.sum(sv)) ** 2)


def _kernel_weight(r: np.ndarray, ws: np.ndarray, vs: np.ndarray) -> tuple[np.ndarray, float]:
    """Support mask of σ (eigenvalues > support_tol) and ρ's weight on the rest (σ's kernel)."""
    supp = ws > support_tol(ws.size)
    return supp, float(np.sum(_weights(r, vs)[~supp]))


def umegaki_relative_entropy(rho, sigma, *, atol: float = DEFAULT_ATOL) -> float:
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
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _, ws, vs, _ = _spectra(r, s, atol)
    supp, kernel_weight = _kernel_weight(r, ws, vs)
    if kernel_weight > support_tol(ws.size):
        return math.inf
    pos_r = wr > 0
    neg_entropy = float(np.sum(wr[pos_r] * np.log(wr[pos_r])))  # Tr ρ ln ρ
    cross = float(np.sum(_weights(r, vs)[supp] * np.log(ws[supp])))  # Tr ρ ln σ on supp σ
    return max(0.0, neg_entropy - cross)


def max_relative_entropy(rho, sigma, *, atol: float = DEFAULT_ATOL) -> float:
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
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _, ws, vs, overlap = _spectra(r, s, atol)
    supp, kernel_weight = _kernel_weight(r, ws, vs)
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
    rho, sigma, *, alpha: float, atol: float = DEFAULT_ATOL
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
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _, ws, vs, overlap = _spectra(r, s, atol)
    supp, kernel_weight = _kernel_weight(r, ws, vs)
    tol = support_tol(ws.size)
    expo = (1.0 - a) / (2.0 * a)  # MDSFT arXiv:1306.3142 Def. 3: σ^{(1−α)/2α} ρ σ^{(1−α)/2α}
    if a > 1:
        if kernel_weight > tol:
            return math.inf
        x = np.sqrt(wr)[:, None] * overlap[:, supp] * (ws[supp] ** expo)[None, :]
    else:
        if float(np.sum(_weights(r, vs)[supp])) <= tol:
            return math.inf  # ρ ⟂ σ: Q_α = 0
        x = np.sqrt(wr)[:, None] * overlap * (ws**expo)[None, :]
    log_q = _log_schatten(x, 2.0 * a)  # ln Tr[(σ^t ρ σ^t)^α] = ln Σ s_i^{2α}
    if not math.isfinite(log_q):
        return math.inf
    return max(0.0, log_q / (a - 1.0))
