r"""Validated state pairs and their spectral data, shared by the divergences.

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from .._validation import check_density_matrix, check_same_dimension, eigh_psd, support_tol

__all__ = ["checked_pair", "clip01", "spectra", "weights_on", "log_schatten",
           "support_and_kernel_weight"]


def checked_pair(rho, sigma, atol):
    r = check_density_matrix(rho, "rho", atol=atol)
    s = check_density_matrix(sigma, "sigma", atol=atol)
    check_same_dimension(r, s, ("rho", "sigma"))
    return r, s


def clip01(x: float) -> float:
    return float(min(1.0, max(0.0, x)))


def spectra(r: np.ndarray, s: np.ndarray, atol: float):
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


def weights_on(r: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """Weights <s_j|ρ|s_j> of ρ on σ's eigenvectors."""
    return np.maximum(np.real(np.einsum("ij,ik,kj->j", vs.conj(), r, vs)), 0.0)


def log_schatten(x: np.ndarray, power: float) -> float:
    """ln Σ_i s_i^power over the non-zero singular values s_i of x (-inf if there are none)."""
    sv = np.linalg.svd(x, compute_uv=False)
    sv = sv[sv > 0]
    if sv.size == 0:
        return -math.inf
    return float(logsumexp(power * np.log(sv)))  # without overflow for large powers


def support_and_kernel_weight(
    r: np.ndarray, ws: np.ndarray, vs: np.ndarray
) -> tuple[np.ndarray, float]:
    """Support mask of σ (eigenvalues > support_tol) and ρ's weight on the rest (σ's kernel)."""
    supp = ws > support_tol(ws.size)
    return supp, float(np.sum(weights_on(r, vs)[~supp]))
