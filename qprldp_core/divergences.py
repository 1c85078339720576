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


def _psd_power(w: np.ndarray, v: np.ndarray, power: float) -> np.ndarray:
    """v diag(w^power) v^dagger on the support (w > 0); zero elsewhere."""
    wp = np.zeros_like(w)
    pos = w > 0
    wp[pos] = w[pos] ** power
    return (v * wp) @ v.conj().T


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

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks; eigenvalues within ``atol`` of zero are
            clamped to zero before taking square roots.

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Uhlmann, Rep. Math. Phys. 9, 273 (1976); Jozsa, J. Mod. Opt. 41, 2315 (1994).

    Example:
        >>> fidelity(np.diag([1.0, 0.0]), np.eye(2) / 2)
        0.5
    """
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 1.0
    sr = _psd_power(*eigh_psd(r, atol=atol), 0.5)
    ss = _psd_power(*eigh_psd(s, atol=atol), 0.5)
    sv = np.linalg.svd(sr @ ss, compute_uv=False)
    return _clip01(float(np.sum(sv)) ** 2)


def _support_violation(r: np.ndarray, ws: np.ndarray, vs: np.ndarray, atol: float) -> bool:
    """True if ρ has weight > atol outside the support of σ (eigenvalues ws clamped)."""
    ker = vs[:, ws <= 0]
    if ker.shape[1] == 0:
        return False
    weight = float(np.real(np.einsum("ij,ik,kj->", ker.conj(), r, ker)))
    return weight > atol


def umegaki_relative_entropy(rho, sigma, *, atol: float = DEFAULT_ATOL) -> float:
    r"""Umegaki relative entropy :math:`D(\rho\|\sigma) = \mathrm{Tr}\,\rho(\ln\rho - \ln\sigma)`.

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks; eigenvalues within ``atol`` of zero are
            treated as zero, and ρ's weight outside supp σ counts only above ``atol``.

    Returns:
        Value in nats in :math:`[0, \infty]`; ``math.inf`` if supp ρ ⊄ supp σ.

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Umegaki, Kodai Math. Sem. Rep. 14, 59 (1962).

    Example:
        >>> round(umegaki_relative_entropy(np.diag([1.0, 0.0]), np.eye(2) / 2), 6)
        0.693147
    """
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    wr, _ = eigh_psd(r, atol=atol)
    ws, vs = eigh_psd(s, atol=atol)
    if _support_violation(r, ws, vs, atol):
        return math.inf
    pos_r = wr > 0
    neg_entropy = float(np.sum(wr[pos_r] * np.log(wr[pos_r])))
    pos_s = ws > 0
    diag = np.real(np.einsum("ij,ik,kj->j", vs.conj(), r, vs))
    cross = float(np.sum(diag[pos_s] * np.log(ws[pos_s])))
    return max(0.0, neg_entropy - cross)


def max_relative_entropy(rho, sigma, *, atol: float = DEFAULT_ATOL) -> float:
    r"""Max-relative entropy :math:`D_{\max}(\rho\|\sigma)=\ln\min\{\lambda:\rho\le\lambda\sigma\}`.

    Computed as :math:`\ln \lambda_{\max}(\sigma^{-1/2}\rho\,\sigma^{-1/2})` on supp σ.

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        atol: tolerance of the density-matrix checks and of the support test.

    Returns:
        Value in nats in :math:`[0, \infty]`; ``math.inf`` if supp ρ ⊄ supp σ.

    Raises:
        ValueError: if an input is not a density matrix or the shapes differ.

    References:
        Datta, arXiv:0803.2770, Def. 1.

    Example:
        >>> round(max_relative_entropy(np.diag([1.0, 0.0]), np.eye(2) / 2), 6)
        0.693147
    """
    r, s = _pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    ws, vs = eigh_psd(s, atol=atol)
    if _support_violation(r, ws, vs, atol):
        return math.inf
    inv_sqrt = _psd_power(ws, vs, -0.5)
    lam = float(np.linalg.eigvalsh(inv_sqrt @ r @ inv_sqrt)[-1])
    if lam <= 0:
        return math.inf
    return max(0.0, math.log(lam))


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

    Args:
        rho, sigma: density matrices of shape (d, d), PSD and unit trace within ``atol``.
        alpha: order in :math:`[1/2, \infty]` (``math.inf`` allowed).
        atol: tolerance of the density-matrix checks; eigenvalues within ``atol`` of zero are
            clamped to zero.

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
    ws, vs = eigh_psd(s, atol=atol)
    if a > 1 and _support_violation(r, ws, vs, atol):
        return math.inf
    expo = (1.0 - a) / (2.0 * a)
    sp = _psd_power(ws, vs, expo)
    m = sp @ r @ sp
    wm = np.linalg.eigvalsh((m + m.conj().T) / 2)
    wm = wm[wm > 0]
    if wm.size == 0:
        return math.inf  # Q_α = 0: ρ ⟂ σ (α < 1)
    log_q = float(logsumexp(a * np.log(wm)))  # ln Tr[(σ^s ρ σ^s)^α] without overflow
    return max(0.0, log_q / (a - 1.0))
