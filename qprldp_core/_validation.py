r"""Shared input validators and tolerance constants for :mod:`qprldp_core`.

Every public function of the package validates its inputs through these helpers so that error
messages have a single shape, e.g. ``ValueError("`rho` must be positive semidefinite. Found
minimum eigenvalue -0.3.")``, and so that the tolerance ``atol`` is passed through everywhere.

Numerical convention. Only *negative* rounding noise is clamped: eigenvalues of a PSD matrix in
:math:`[-\mathrm{atol}, 0)` are set to exactly zero before a square root, fractional power or
logarithm is taken; positive eigenvalues are kept however small (a state with eigenvalue
:math:`10^{-8}` has :math:`\sqrt{10^{-8}} = 10^{-4}`, which is not negligible). Supports are
decided separately with :data:`SUPPORT_TOL` (see :func:`support_tol`), rounding toward *more*
privacy loss: every eigenvalue of σ at or below the tolerance counts as kernel. Privacy parameters
are reported as upper bounds.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "DEFAULT_ATOL",
    "check_density_matrix",
    "check_same_dimension",
    "check_probability",
    "check_gamma",
    "check_epsilon",
    "check_atol",
    "eigh_psd",
    "SUPPORT_TOL",
    "support_tol",
    "format_number",
    "as_matrix",
    "check_real",
]

# Default absolute tolerance for "is this a density matrix" checks and for clamping eigenvalues.
# 1e-8 is ~1e8 machine epsilons: large enough to absorb the rounding of a few matrix products and
# an eigendecomposition of a d <= 1024 matrix with entries O(1), small enough that a genuinely
# invalid input (negative eigenvalue, trace 1.001) is rejected.
DEFAULT_ATOL = 1e-8

# Support tolerance for unit-trace PSD matrices. LAPACK's Hermitian eigensolver is backward stable,
# not relatively accurate: each computed eigenvalue carries an absolute error of a few d * eps
# (eps = 2.2e-16), so an eigenvalue below ~1e-14 of a computed state cannot be told apart from an
# exact zero. When a support or kernel decides a result (supp rho ⊆ supp sigma for D_max,
# Umegaki and sandwiched Rényi divergences; the pseudo-inverse of the pretty-good measurement),
# eigenvalues and weights at or below this value count as exactly zero. 1e-13 is ~450 machine
# epsilons above the noise for d <= 28 (``support_tol`` grows it with d beyond that) and a decade
# below the smallest genuine eigenvalues (1e-12) that the tests compare against 50-digit arithmetic.
SUPPORT_TOL = 1e-13


def format_number(x) -> str:
    """Format a number for an error message (short, round-trippable enough for humans)."""
    if isinstance(x, complex | np.complexfloating):
        return repr(complex(x))
    try:
        return f"{float(x):.6g}"
    except (TypeError, ValueError):
        return repr(x)


def check_atol(atol, name: str = "atol") -> float:
    r"""Validate a tolerance.

    Args:
        atol: absolute tolerance, finite and :math:`\ge 0`.
        name: argument name used in error messages.

    Returns:
        ``atol`` as a Python float.

    Raises:
        TypeError: if ``atol`` is not a real number.
        ValueError: if ``atol`` is negative or not finite.

    Example:
        >>> check_atol(1e-9)
        1e-09
    """
    if isinstance(atol, bool) or not isinstance(atol, numbers.Real):
        raise TypeError(f"`{name}` must be a real number. Found {type(atol).__name__}.")
    atol = float(atol)
    if not math.isfinite(atol) or atol < 0:
        raise ValueError(f"`{name}` must be finite and >= 0. Found {format_number(atol)}.")
    return atol


def as_matrix(a, name: str) -> np.ndarray:
    """Convert an array-like to a complex128 2-D array or raise TypeError/ValueError."""
    if isinstance(a, str | bytes) or a is None:
        raise TypeError(f"`{name}` must be an array-like matrix. Found {type(a).__name__}.")
    try:
        arr = np.asarray(a)
    except Exception as exc:  # pragma: no cover - exotic objects
        raise TypeError(
            f"`{name}` must be an array-like matrix. Found {type(a).__name__}."
        ) from exc
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"`{name}` must be a numeric array-like matrix. Found dtype {arr.dtype}.")
    arr = arr.astype(np.complex128)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"`{name}` must be a square 2-D matrix. Found shape {arr.shape}.")
    if arr.shape[0] == 0:
        raise ValueError(f"`{name}` must be a non-empty matrix. Found shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"`{name}` must have finite entries. Found a NaN or infinite entry.")
    return arr


def check_density_matrix(rho, name: str = "rho", *, atol: float = DEFAULT_ATOL) -> np.ndarray:
    r"""Check that ``rho`` is a density matrix and return a clean copy.

    A density matrix is a square matrix that is Hermitian, positive semidefinite and of unit
    trace; each property is checked within ``atol``.

    Args:
        rho: array-like of shape (d, d).
        name: argument name used in error messages.
        atol: absolute tolerance for Hermiticity (max entry of :math:`|\rho - \rho^\dagger|`),
            positivity (minimum eigenvalue :math:`\ge -\mathrm{atol}`) and the trace.

    Returns:
        complex128 array of shape (d, d), the Hermitian part :math:`(\rho + \rho^\dagger)/2`.

    Raises:
        TypeError: if ``rho`` is not a numeric array-like.
        ValueError: if ``rho`` is not square, not Hermitian, not PSD or not of unit trace.

    Example:
        >>> check_density_matrix([[0.5, 0], [0, 0.5]], "rho").real
        array([[0.5, 0. ], [0. , 0.5]])
    """
    atol = check_atol(atol)
    arr = as_matrix(rho, name)
    herm_err = float(np.max(np.abs(arr - arr.conj().T)))
    if herm_err > atol:
        raise ValueError(
            f"`{name}` must be Hermitian. "
            f"Found max |{name} - {name}^dagger| entry {format_number(herm_err)}."
        )
    arr = (arr + arr.conj().T) / 2
    tr = float(np.trace(arr).real)
    if abs(tr - 1.0) > atol:
        raise ValueError(f"`{name}` must have unit trace. Found trace {format_number(tr)}.")
    min_eig = float(np.linalg.eigvalsh(arr)[0])
    if min_eig < -atol:
        raise ValueError(
            f"`{name}` must be positive semidefinite. "
            f"Found minimum eigenvalue {format_number(min_eig)}."
        )
    return arr


def check_same_dimension(rho: np.ndarray, sigma: np.ndarray, names=("rho", "sigma")) -> int:
    """Check that two square matrices have the same dimension.

    Args:
        rho, sigma: arrays of shape (d, d) and (d', d').
        names: the two argument names used in the error message.

    Returns:
        The common dimension d.

    Raises:
        ValueError: if d != d'.

    Example:
        >>> check_same_dimension(np.eye(2), np.eye(2))
        2
    """
    a, b = np.shape(rho), np.shape(sigma)
    if a != b:
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must have the same dimension. Found shapes {a} and {b}."
        )
    return int(a[0])


def check_real(x, name: str) -> float:
    """A real number (not bool, not NaN) as a Python float, else TypeError/ValueError."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"`{name}` must be a real number. Found {type(x).__name__}.")
    x = float(x)
    if math.isnan(x):
        raise ValueError(f"`{name}` must not be NaN. Found nan.")
    return x


def check_probability(p, name: str = "p") -> float:
    """Check that ``p`` is a finite real number in [0, 1].

    Args:
        p: the value to check.
        name: argument name used in error messages.

    Returns:
        ``p`` as a Python float.

    Raises:
        TypeError: if ``p`` is not a real number.
        ValueError: if ``p`` is outside [0, 1].

    Example:
        >>> check_probability(0.25)
        0.25
    """
    p = check_real(p, name)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"`{name}` must be in [0, 1]. Found {format_number(p)}.")
    return p


def check_gamma(gamma, name: str = "gamma") -> float:
    r"""Check that ``gamma`` is a finite real number :math:`\ge 1`.

    Args:
        gamma: hockey-stick threshold :math:`\gamma = e^\varepsilon`.
        name: argument name used in error messages.

    Returns:
        ``gamma`` as a Python float.

    Raises:
        TypeError: if ``gamma`` is not a real number.
        ValueError: if ``gamma`` is not finite or is below 1.

    Example:
        >>> check_gamma(2)
        2.0
    """
    gamma = check_real(gamma, name)
    if not math.isfinite(gamma) or gamma < 1.0:
        raise ValueError(f"`{name}` must be finite and >= 1. Found {format_number(gamma)}.")
    return gamma


def check_epsilon(epsilon, name: str = "epsilon") -> float:
    r"""Check that ``epsilon`` (nats) is a finite real number :math:`\ge 0`.

    Args:
        epsilon: privacy parameter in nats.
        name: argument name used in error messages.

    Returns:
        ``epsilon`` as a Python float.

    Raises:
        TypeError: if ``epsilon`` is not a real number.
        ValueError: if ``epsilon`` is negative or not finite.

    Example:
        >>> check_epsilon(1)
        1.0
    """
    epsilon = check_real(epsilon, name)
    if not math.isfinite(epsilon) or epsilon < 0.0:
        raise ValueError(f"`{name}` must be finite and >= 0. Found {format_number(epsilon)}.")
    return epsilon


def support_tol(d: int) -> float:
    r"""Tolerance below which an eigenvalue (or weight) of a d × d unit-trace state counts as zero.

    .. math::

        \tau(d) = \max(\texttt{SUPPORT_TOL}, 16\,d\,\epsilon_{\rm mach}),

    i.e. :data:`SUPPORT_TOL` = 1e-13 for d ≤ 28, growing with the eigensolver's rounding noise
    beyond.

    Args:
        d: matrix dimension, ≥ 1.

    Returns:
        The tolerance τ(d) (dimensionless, a probability).

    Example:
        >>> support_tol(2)
        1e-13
    """
    return max(SUPPORT_TOL, 16.0 * int(d) * float(np.finfo(float).eps))


def eigh_psd(a: np.ndarray, *, atol: float = DEFAULT_ATOL) -> tuple[np.ndarray, np.ndarray]:
    r"""Eigendecomposition of a Hermitian PSD matrix with negative rounding noise clamped to zero.

    Eigenvalues in :math:`[-\mathrm{atol}, 0)` are set to exactly 0; positive eigenvalues are
    returned unchanged, however small, so that square roots, fractional powers and logarithms of
    a nearly rank-deficient state stay accurate (:math:`\sqrt{10^{-8}} = 10^{-4}` must not
    vanish). Eigenvalues below ``-atol`` are kept: callers that need a PSD matrix validate it
    first. Supports are decided by the caller with :func:`support_tol`.

    Args:
        a: Hermitian matrix of shape (d, d).
        atol: how far below zero an eigenvalue may lie and still count as rounding noise.

    Returns:
        ``(w, v)``: eigenvalues ascending, shape (d,), and orthonormal eigenvectors as columns.

    Example:
        >>> w, v = eigh_psd(np.diag([1.0, 1e-12, -1e-12]), atol=1e-9)
        >>> w
        array([0.e+00, 1.e-12, 1.e+00])
    """
    atol = check_atol(atol)
    a = np.asarray(a)
    w, v = np.linalg.eigh((a + a.conj().T) / 2)
    w = np.where((w < 0) & (w >= -atol), 0.0, w)
    return w, v
