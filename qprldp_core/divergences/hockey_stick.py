r"""Hockey-stick divergence and violation probability (QLDP, QPrLDP), trace distance, fidelity.

All values are probabilities in [0, 1]; states are validated (square, Hermitian, PSD, unit trace
within ``atol``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, check_epsilon, check_gamma
from ._spectral import checked_pair, clip01, spectra

__all__ = ["hockey_stick_divergence", "violation_probability", "trace_distance", "fidelity"]


def hockey_stick_divergence(
    rho: ArrayLike, sigma: ArrayLike, *, gamma: float, atol: float = DEFAULT_ATOL
) -> float:
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
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0  # (1 - γ) ρ ≤ 0 exactly; avoid rounding noise of eigvalsh.
    w = np.linalg.eigvalsh(r - gamma * s)  # HRF arXiv:2202.10717 Def. 2.2: Tr(ρ − γσ)₊
    return clip01(float(np.sum(w[w > 0])))


def violation_probability(
    rho: ArrayLike, sigma: ArrayLike, *, epsilon: float, atol: float = DEFAULT_ATOL
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
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0  # ρ − e^ε ρ ≤ 0 exactly
    w, v = np.linalg.eigh(r - math.exp(epsilon) * s)
    pos = v[:, w > atol]  # strictly positive eigenspace, sign decided within atol
    if pos.shape[1] == 0:
        return 0.0
    val = float(np.real(np.einsum("ij,ik,kj->", pos.conj(), r, pos)))
    return clip01(val)


def trace_distance(rho: ArrayLike, sigma: ArrayLike, *, atol: float = DEFAULT_ATOL) -> float:
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
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 0.0
    w = np.linalg.eigvalsh(r - s)
    return clip01(0.5 * float(np.sum(np.abs(w))))


def fidelity(rho: ArrayLike, sigma: ArrayLike, *, atol: float = DEFAULT_ATOL) -> float:
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
    r, s = checked_pair(rho, sigma, atol)
    if np.array_equal(r, s):
        return 1.0
    wr, _, ws, _, overlap = spectra(r, s, atol)
    x = np.sqrt(wr)[:, None] * overlap * np.sqrt(ws)[None, :]  # ~ √ρ √σ (Uhlmann)
    sv = np.linalg.svd(x, compute_uv=False)
    return clip01(float(np.sum(sv)) ** 2)
