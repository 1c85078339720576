r"""Sample complexity of (private) quantum hypothesis testing: bounds on the number of copies.

Every bound below is derived in ``docs/qprldp.md`` §6 and property-tested against brute force
(exact errors of :math:`n` explicit copies for qubits, :math:`n \le 8`). Counts are integers,
rounded conservatively: an upper bound :math:`x` on the needed copies becomes
``math.ceil(x + slack)``; a lower bound :math:`x` becomes ``math.ceil(x - slack)``, valid because
:math:`n^*` is an integer (``math.floor(x)`` would also be valid, but looser by one copy);
``slack = 1e-9 max(1, x)`` absorbs floating-point error.
``math.inf`` means "no finite bound" (e.g. identical states).

Tasks (states :math:`\rho, \sigma` are the *outputs* of the channel when privacy enters):

* Binary symmetric: priors :math:`(p, 1-p)`, :math:`n^* = \min\{n : P_e(n) \le \alpha\}` with
  Helstrom's error :math:`P_e(n) = \tfrac12(1 - \|p\rho^{\otimes n} - (1-p)\sigma^{\otimes n}\|_1)`.
  :func:`symmetric_copy_bounds`, :func:`private_symmetric_lower_bound`,
  :func:`private_symmetric_copy_bounds`; brute force :func:`minimal_copies_symmetric`.
* Binary asymmetric (Stein-type): :math:`n^* = \min\{n : \beta^*_n(\alpha) \le \beta\}` with
  :math:`\beta^*_n(\alpha)` the least type-II error of a test of type-I error :math:`\le\alpha`.
  :func:`asymmetric_copy_bounds`, :func:`private_asymmetric_lower_bound`; brute force
  :func:`optimal_type_ii_error`, :func:`minimal_copies_asymmetric`.
* m-ary symmetric: :func:`mary_copy_bounds`, :func:`private_mary_lower_bound`; the pretty-good
  measurement's error :func:`pretty_good_measurement_error`.
* Quantum spectral probabilistic indistinguishability (QSPrI): the first :math:`n` at which
  :math:`\rho^{\otimes n}, \sigma^{\otimes n}` stop being :math:`(\varepsilon, \delta)`-QSPrI:
  :func:`qspri_copy_bounds`, brute force :func:`minimal_copies_qspri`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np
from scipy.optimize import minimize_scalar

from qprldp_core._validation import (
    DEFAULT_ATOL,
    check_density_matrix,
    check_epsilon,
    check_probability,
    check_real,
    eigh_psd,
    format_number,
    support_tol,
)
from qprldp_core.contraction import trace_distance_contraction_bound
from qprldp_core.divergences import (
    fidelity,
    sandwiched_renyi_divergence,
    trace_distance,
    umegaki_relative_entropy,
    violation_probability,
)

__all__ = [
    "CopyBounds",
    "helstrom_error",
    "minimal_copies_symmetric",
    "symmetric_copy_bounds",
    "private_symmetric_lower_bound",
    "private_symmetric_copy_bounds",
    "optimal_type_ii_error",
    "minimal_copies_asymmetric",
    "asymmetric_copy_bounds",
    "private_asymmetric_lower_bound",
    "pretty_good_measurement_error",
    "mary_copy_bounds",
    "private_mary_lower_bound",
    "minimal_copies_qspri",
    "qspri_copy_bounds",
]

# Relative/absolute slack applied before rounding a real-valued bound on n: a bound computed as
# k + 1e-13 due to rounding noise is treated as k (lower bounds), and k - 1e-13 as k (upper
# bounds). 1e-9 is far above double rounding of the logs involved and far below 1 copy.
_COUNT_SLACK = 1e-9
# Largest matrix dimension d**n built explicitly for brute force (4**6 = 2**12).
_MAX_EXPLICIT_DIM = 4096
# Chernoff / Hoeffding parameter grid s in (0, 1); any s is valid, the grid only tightens.
_S_GRID = np.linspace(0.02, 0.98, 49)
# Q_s = Tr ρ^s σ^{1-s} within this of 1 is treated as exactly 1 (no finite bound from that s):
# rounding noise of ~1e-15 must not turn identical states into "distinguishable in n copies".
_Q_ONE_TOL = 1e-12
# Sandwiched Rényi orders alpha > 1 tried in the converse bounds (any order is valid).
_RENYI_GRID = (1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0)


@dataclass(frozen=True)
class CopyBounds:
    r"""Bracket on the minimal number of copies :math:`n^*` of a testing task.

    Attributes:
        lower: proven :math:`n^* \ge` ``lower`` (an int, or ``math.inf``).
        upper: proven :math:`n^* \le` ``upper`` (an int, or ``math.inf`` if no finite bound).
        task: ``"symmetric"``, ``"asymmetric"``, ``"mary"`` or ``"qspri"``.
        lower_method, upper_method: which derivation produced each side (``docs/qprldp.md`` §6).
    """

    lower: int | float
    upper: int | float
    task: str
    lower_method: str
    upper_method: str


def _up(x: float) -> int | float:
    """Round a real upper bound on n up (conservative: slack upward, then ceil)."""
    if math.isnan(x):
        return math.inf
    if math.isinf(x):
        return math.inf if x > 0 else 0
    if x <= 0:
        return 0
    return math.ceil(x + _COUNT_SLACK * max(1.0, x))


def _down(x: float) -> int | float:
    """Round a real lower bound x on the integer n* conservatively: n* >= ceil(x_true), and
    x_true >= x - slack, so n* >= ceil(x - slack) (never above what the real bound gives)."""
    if math.isnan(x):
        return 0
    if math.isinf(x):
        return math.inf if x > 0 else 0
    if x <= 0:
        return 0
    return max(0, math.ceil(x - _COUNT_SLACK * max(1.0, x)))


def _check_open01(x, name: str) -> float:
    x = check_real(x, name)
    if not 0.0 < x < 1.0:
        raise ValueError(f"`{name}` must be in (0, 1). Found {format_number(x)}.")
    return x


def _check_pair(rho, sigma, atol):
    r = check_density_matrix(rho, "rho", atol=atol)
    s = check_density_matrix(sigma, "sigma", atol=atol)
    if r.shape != s.shape:
        raise ValueError(
            f"`rho` and `sigma` must have the same dimension. Found shapes {r.shape} and {s.shape}."
        )
    return r, s


def _check_copies(n, name: str = "copies") -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"`{name}` must be an integer >= 0. Found {n!r}.")
    return int(n)


# --------------------------------------------------------------------------------------------
# Tensor powers (explicit, and block-diagonal for qubits via Schur-Weyl duality)
# --------------------------------------------------------------------------------------------


def _tensor_power(a: np.ndarray, n: int) -> np.ndarray:
    d = a.shape[0]
    if d**n > _MAX_EXPLICIT_DIM:
        raise ValueError(
            f"`copies` too large: dimension d**copies must be <= {_MAX_EXPLICIT_DIM}. "
            f"Found {d}**{n} = {d**n}."
        )
    out = np.ones((1, 1), dtype=np.complex128)
    for _ in range(n):
        out = np.kron(out, a)
    return out


def _sym_power(a: np.ndarray, k: int) -> np.ndarray:
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


def _qubit_blocks(a: np.ndarray, n: int) -> list[tuple[int, np.ndarray]]:
    # Schur-Weyl: (C^2)^{⊗n} = ⊕_{l=0}^{⌊n/2⌋} S_{(n-l, l)} ⊗ C^{m_l}, with A^{⊗n} acting on
    # S_{(n-l, l)} as det(A)^l Sym^{n-2l}(A) and m_l = binom(n, l) - binom(n, l-1).
    det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    blocks = []
    for l in range(n // 2 + 1):
        m = math.comb(n, l) - (math.comb(n, l - 1) if l > 0 else 0)
        blocks.append((m, det**l * _sym_power(a, n - 2 * l)))
    return blocks


def _pair_blocks(r: np.ndarray, s: np.ndarray, n: int):
    """Simultaneous block decomposition of (r^{⊗n}, s^{⊗n}): list of (mult, R_b, S_b)."""
    if n == 0:
        one = np.ones((1, 1), dtype=np.complex128)
        return [(1, one, one)]
    if r.shape[0] == 2:
        rb, sb = _qubit_blocks(r, n), _qubit_blocks(s, n)
        return [(m, _h(x), _h(y)) for (m, x), (_, y) in zip(rb, sb, strict=True)]
    return [(1, _tensor_power(r, n), _tensor_power(s, n))]


def _h(x: np.ndarray) -> np.ndarray:
    return (x + x.conj().T) / 2


def _trace_norm_blocks(blocks, p: float, q: float) -> float:
    return float(sum(m * np.sum(np.abs(np.linalg.eigvalsh(p * rb - q * sb)))
                     for m, rb, sb in blocks))


# --------------------------------------------------------------------------------------------
# Binary symmetric
# --------------------------------------------------------------------------------------------


def helstrom_error(rho, sigma, *, prior=0.5, copies=1, atol=DEFAULT_ATOL) -> float:
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
    r, s = _check_pair(rho, sigma, atol)
    p = check_probability(prior, "prior")
    n = _check_copies(copies)
    rn, sn = _tensor_power(r, n), _tensor_power(s, n)
    norm = float(np.sum(np.abs(np.linalg.eigvalsh(_h(p * rn - (1 - p) * sn)))))
    return float(min(min(p, 1 - p), max(0.0, 0.5 * (1.0 - norm))))


def minimal_copies_symmetric(rho, sigma, *, prior=0.5, alpha, max_copies=8, atol=DEFAULT_ATOL):
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
    r, s = _check_pair(rho, sigma, atol)
    p = _check_open01(prior, "prior")
    alpha = _check_open01(alpha, "alpha")
    max_copies = _check_copies(max_copies, "max_copies")
    for n in range(max_copies + 1):
        if _helstrom_blocks(r, s, p, n) <= alpha:
            return n
    return None


def _helstrom_blocks(r: np.ndarray, s: np.ndarray, p: float, n: int) -> float:
    # Same value as helstrom_error; qubit tensor powers via the exact Schur-Weyl blocks.
    norm = _trace_norm_blocks(_pair_blocks(r, s, n), p, 1 - p)
    return float(min(min(p, 1 - p), max(0.0, 0.5 * (1.0 - norm))))


def _chernoff_q(r: np.ndarray, s: np.ndarray, svals, atol: float) -> np.ndarray:
    # Q_s = Tr ρ^s σ^{1-s} for each s (Audenaert et al.'s Chernoff quantity), clamped to [0, 1].
    # Only negative rounding noise is clamped (eigh_psd); small positive eigenvalues enter their
    # powers, and 0^s = 0 for s in (0, 1), so no support decision is needed.
    wr, vr = eigh_psd(r, atol=atol)
    ws, vs = eigh_psd(s, atol=atol)
    wr, ws = np.maximum(wr, 0.0), np.maximum(ws, 0.0)
    overlap = np.abs(vr.conj().T @ vs) ** 2  # |<r_i|s_j>|^2
    out = [float(wr**sv @ overlap @ ws ** (1 - sv)) for sv in svals]
    q = np.clip(np.array(out), 0.0, 1.0)
    return np.where(q >= 1.0 - _Q_ONE_TOL, 1.0, q)


def _fid_lower_n(f: float, p: float, q: float, alpha: float) -> float:
    # P_e(n) >= (1 - sqrt(1 - 4pq F^n))/2 (Uhlmann purification + pure-state Helstrom);
    # P_e(n) <= α forces F^n <= α(1-α)/(pq).
    if alpha >= min(p, q):
        return 0.0
    if f <= 0.0:
        return 1.0
    if f >= 1.0:
        return math.inf
    return math.log(p * q / (alpha * (1 - alpha))) / -math.log(f)


def _td_lower_n(t: float, p: float, q: float, alpha: float) -> float:
    # ||pρ_n - qσ_n||_1 <= |p - q| + 2 min(p,q) T(ρ_n, σ_n), T(ρ_n, σ_n) <= n T(ρ, σ):
    # P_e(n) >= min(p,q)(1 - n T).
    m = min(p, q)
    if alpha >= m:
        return 0.0
    if t <= 1e-300:  # avoid overflow; the bound is astronomically large anyway
        return math.inf
    return (1 - alpha / m) / float(t)


def symmetric_copy_bounds(rho, sigma, *, prior=0.5, alpha, atol=DEFAULT_ATOL) -> CopyBounds:
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
    r, s = _check_pair(rho, sigma, atol)
    p = _check_open01(prior, "prior")
    alpha = _check_open01(alpha, "alpha")
    q = 1 - p
    if alpha >= min(p, q):
        return CopyBounds(0, 0, "symmetric", "alpha >= min prior", "alpha >= min prior")
    f = float(fidelity(r, s, atol=atol))
    t = float(trace_distance(r, s, atol=atol))
    lower = max(_down(_fid_lower_n(f, p, q, alpha)), _down(_td_lower_n(t, p, q, alpha)))
    upper = _chernoff_upper(r, s, p, q, alpha, atol)
    return CopyBounds(lower, upper, "symmetric", "fidelity + trace distance", "quantum Chernoff")


def _chernoff_upper(r, s, p, q, alpha, atol) -> int | float:
    qs = _chernoff_q(r, s, _S_GRID, atol)
    best = math.inf
    for sv, qv in zip(_S_GRID, qs, strict=True):
        if qv <= 0.0:
            return 1  # orthogonal supports: one copy discriminates perfectly
        if qv >= 1.0:
            continue
        best = min(best, math.log(p**sv * q ** (1 - sv) / alpha) / -math.log(qv))
    return _up(best)


def private_symmetric_lower_bound(
    *, epsilon, delta, prior=0.5, alpha, trace_distance=1.0, notion="qldp"
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
    p = _check_open01(prior, "prior")
    alpha = _check_open01(alpha, "alpha")
    tin = check_probability(trace_distance, "trace_distance")
    eta = trace_distance_contraction_bound(epsilon=epsilon, delta=delta, notion=notion)
    return _private_lower(eta, tin, float(epsilon), float(delta), p, alpha)


def _private_lower(eta, tin, epsilon, delta, p, alpha) -> int | float:
    q = 1 - p
    if alpha >= min(p, q):
        return 0
    t = min(1.0, _round_up(eta * tin))
    f = max(0.0, 1.0 - t) ** 2
    if delta == 0.0:
        f = max(f, math.exp(-epsilon))
    return max(_down(_fid_lower_n(f, p, q, alpha)), _down(_td_lower_n(t, p, q, alpha)))


def _round_up(x: float) -> float:
    return float(np.nextafter(x, np.inf))


def private_symmetric_copy_bounds(
    channel, rho, sigma, *, epsilon, delta, prior=0.5, alpha, notion="qldp", atol=DEFAULT_ATOL
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
    r, s = _check_pair(rho, sigma, atol)
    out_r, out_s = channel(r), channel(s)
    base = symmetric_copy_bounds(out_r, out_s, prior=prior, alpha=alpha, atol=atol)
    tin = min(1.0, float(trace_distance(r, s, atol=atol)))
    priv = private_symmetric_lower_bound(
        epsilon=epsilon, delta=delta, prior=prior, alpha=alpha, trace_distance=tin, notion=notion
    )
    lower = max(base.lower, priv)
    return CopyBounds(lower, base.upper, "symmetric",
                      "max(fidelity/trace distance, privacy contraction)", base.upper_method)


# --------------------------------------------------------------------------------------------
# Binary asymmetric (Stein-type)
# --------------------------------------------------------------------------------------------


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


def optimal_type_ii_error(rho, sigma, *, alpha, copies=1, atol=DEFAULT_ATOL) -> float:
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
    r, s = _check_pair(rho, sigma, atol)
    alpha = _check_open01(alpha, "alpha")
    n = _check_copies(copies)
    return _beta_dual(_pair_blocks(r, s, n), alpha)


def minimal_copies_asymmetric(rho, sigma, *, alpha, beta, max_copies=8, atol=DEFAULT_ATOL):
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
    r, s = _check_pair(rho, sigma, atol)
    alpha = _check_open01(alpha, "alpha")
    beta = _check_open01(beta, "beta")
    max_copies = _check_copies(max_copies, "max_copies")
    for n in range(max_copies + 1):
        if _beta_dual(_pair_blocks(r, s, n), alpha) <= beta:
            return n
    return None


def asymmetric_copy_bounds(rho, sigma, *, alpha, beta, atol=DEFAULT_ATOL) -> CopyBounds:
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
    r, s = _check_pair(rho, sigma, atol)
    alpha = _check_open01(alpha, "alpha")
    beta = _check_open01(beta, "beta")
    if beta >= 1 - alpha:
        return CopyBounds(0, 0, "asymmetric", "beta >= 1 - alpha", "beta >= 1 - alpha")
    lower = 0
    d_rel = float(umegaki_relative_entropy(r, s, atol=atol))
    if d_rel == 0.0:
        lower = math.inf
    elif math.isfinite(d_rel):
        lower = max(lower, _down(((1 - alpha) * math.log(1 / beta) - math.log(2)) / d_rel))
    for a in _RENYI_GRID:
        if math.isinf(lower):
            break
        dt = float(sandwiched_renyi_divergence(r, s, alpha=a, atol=atol))
        if math.isfinite(dt) and dt > 0:
            x = (math.log(1 / beta) - a / (a - 1) * math.log(1 / (1 - alpha))) / dt
            lower = max(lower, _down(x))
    qs = _chernoff_q(r, s, _S_GRID, atol)
    best = math.inf
    for sv, qv in zip(_S_GRID, qs, strict=True):
        if qv <= 0.0:
            best = 1.0
            break
        if qv >= 1.0:
            continue
        best = min(best, ((1 - sv) * math.log(1 / beta) + sv * math.log(1 / alpha))
                   / -math.log(qv))
    upper = _up(max(best, 1.0)) if math.isfinite(best) else math.inf
    return CopyBounds(lower, upper, "asymmetric", "relative entropy + sandwiched Renyi converse",
                      "Audenaert-Hoeffding achievability")


def private_asymmetric_lower_bound(*, epsilon, delta, alpha, beta, notion="qldp") -> int | float:
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
    alpha = _check_open01(alpha, "alpha")
    beta = _check_open01(beta, "beta")
    if notion not in ("qldp", "qprldp"):
        raise ValueError(f"`notion` must be one of ('qldp', 'qprldp'). Found {notion!r}.")
    if beta >= 1 - alpha:
        return 0
    if epsilon == 0.0:
        if delta == 0.0:
            return math.inf
        return _down((1 - alpha - beta) / delta)
    c = delta / math.expm1(epsilon)
    return _down(math.log((1 - alpha + c) / (beta + c)) / epsilon)


# --------------------------------------------------------------------------------------------
# m-ary symmetric
# --------------------------------------------------------------------------------------------


def _check_states_priors(states, priors, atol):
    if len(states) < 2:
        raise ValueError(f"`states` must contain at least 2 states. Found {len(states)}.")
    sts = [check_density_matrix(x, f"states[{i}]", atol=atol) for i, x in enumerate(states)]
    for i, x in enumerate(sts):
        if x.shape != sts[0].shape:
            raise ValueError(
                f"`states[{i}]` must have shape {sts[0].shape}. Found shape {x.shape}."
            )
    if priors is None:
        pri = np.full(len(sts), 1.0 / len(sts))
    else:
        pri = np.asarray(priors, dtype=float)
        if pri.shape != (len(sts),):
            raise ValueError(
                f"`priors` must have length {len(sts)}. Found shape {pri.shape}."
            )
        if np.any(pri <= 0) or abs(pri.sum() - 1) > 1e-9:
            raise ValueError(
                f"`priors` must be positive and sum to 1. Found {pri.tolist()}."
            )
    return sts, pri


def pretty_good_measurement_error(states, *, priors=None, copies=1, atol=DEFAULT_ATOL) -> float:
    r"""Error of the pretty-good measurement on :math:`\{\pi_i, \rho_i^{\otimes n}\}`.

    .. math::
        E_i = S^{-1/2}\pi_i\rho_i^{\otimes n}S^{-1/2},\quad S = \sum_i\pi_i\rho_i^{\otimes n},
        \qquad P_e^{\rm PGM} = 1 - \sum_i\pi_i\mathrm{Tr}[E_i\rho_i^{\otimes n}]
        \ \ge P_e^{\rm opt}.

    Args:
        states: sequence of m ≥ 2 density matrices of shape (d, d).
        priors: probabilities :math:`\pi_i > 0` summing to 1 (uniform if ``None``).
        copies: :math:`n \ge 0` (:math:`d^n \le 4096`).
        atol: tolerance of the density-matrix checks (the pseudo-inverse drops eigenvalues of
            S at or below :func:`~qprldp_core._validation.support_tol`, 1e-13 for d^n ≤ 28).

    Returns:
        :math:`P_e^{\rm PGM} \in [0, 1]`, an upper bound on the optimal error.

    Raises:
        ValueError: if an argument is invalid.

    References:
        Hausladen, Wootters (1994); Barnum, Knill, arXiv:quant-ph/0004088.

    Example:
        >>> pretty_good_measurement_error([np.diag([1.0, 0]), np.diag([0, 1.0])])
        0.0
    """
    sts, pri = _check_states_priors(states, priors, atol)
    n = _check_copies(copies)
    pw = [_tensor_power(x, n) for x in sts]
    big_s = sum(p * x for p, x in zip(pri, pw, strict=True))
    # Pseudo-inverse square root on supp S: eigenvalues <= support_tol are S's kernel (ρ_i have
    # no weight there beyond rounding noise, as π_i ρ_i <= S); all others are inverted unchanged.
    w, v = eigh_psd(_h(big_s), atol=atol)
    keep = w > support_tol(w.size)
    inv = np.where(keep, 1.0 / np.sqrt(np.where(keep, w, 1.0)), 0.0)
    s_inv = (v * inv) @ v.conj().T
    succ = 0.0
    for p, x in zip(pri, pw, strict=True):
        e = s_inv @ (p * x) @ s_inv
        succ += p * float(np.real(np.trace(e @ x)))
    return float(min(1.0, max(0.0, 1.0 - succ)))


def _root_fid(a, b, atol) -> float:
    return math.sqrt(max(0.0, min(1.0, float(fidelity(a, b, atol=atol)))))


def mary_copy_bounds(states, *, priors=None, alpha, atol=DEFAULT_ATOL) -> CopyBounds:
    r"""Bounds on :math:`n^*` for m-ary symmetric testing with optimal error :math:`\le\alpha`.

    * Lower (pairwise reduction, derived here, ``docs/qprldp.md`` §6.5): any m-outcome POVM
      induces for each pair :math:`i \ne j` a binary test whose error with priors
      :math:`(\pi_i, \pi_j)` is at most the m-ary error, so :math:`P_e^{(m)}(n) \ge
      (\pi_i + \pi_j)P_e^{(i,j)}(n)`; apply :func:`symmetric_copy_bounds`'s lower bounds to
      each pair with target :math:`\alpha/(\pi_i + \pi_j)` and take the maximum.
    * Upper (Barnum–Knill): :math:`P_e^{\rm opt}(n) \le P_e^{\rm PGM}(n) \le \sum_{i\ne j}
      \sqrt{\pi_i\pi_j}\,\sqrt{F(\rho_i, \rho_j)}^{\,n}`, with :math:`\sqrt F` the root fidelity;
      the least such :math:`n` is found exactly by integer search.

    Args:
        states: sequence of m ≥ 2 density matrices of shape (d, d).
        priors: probabilities :math:`\pi_i > 0` summing to 1 (uniform if ``None``).
        alpha: target error :math:`\alpha \in (0, 1)`.
        atol: tolerance of the checks.

    Returns:
        :class:`CopyBounds` with ``task == "mary"``.

    Raises:
        ValueError: if an argument is invalid.

    References:
        Barnum, Knill, J. Math. Phys. 43, 2097 (2002), arXiv:quant-ph/0004088 (PGM error bound).

    Example:
        >>> sts = [np.diag([1.0, 0, 0]), np.diag([0, 1.0, 0]), np.eye(3) / 3]
        >>> b = mary_copy_bounds(sts, alpha=0.05)
        >>> b.lower <= b.upper
        True
    """
    sts, pri = _check_states_priors(states, priors, atol)
    alpha = _check_open01(alpha, "alpha")
    if alpha >= 1 - float(np.max(pri)):
        return CopyBounds(0, 0, "mary", "alpha >= 1 - max prior", "alpha >= 1 - max prior")
    lower = 0
    coef, rfs = [], []
    for i, j in combinations(range(len(sts)), 2):
        pij = pri[i] + pri[j]
        a_ij = alpha / pij
        pi = pri[i] / pij
        f = float(fidelity(sts[i], sts[j], atol=atol))
        t = float(trace_distance(sts[i], sts[j], atol=atol))
        if a_ij < 1:
            lower = max(lower, _down(_fid_lower_n(f, pi, 1 - pi, a_ij)),
                        _down(_td_lower_n(t, pi, 1 - pi, a_ij)))
        coef.append(2 * math.sqrt(pri[i] * pri[j]))
        rfs.append(math.sqrt(max(0.0, min(1.0, f))))
    upper = _bk_upper(np.array(coef), np.array(rfs), alpha)
    return CopyBounds(lower, upper, "mary", "pairwise fidelity/trace distance",
                      "Barnum-Knill pretty-good measurement")


def _bk_upper(coef: np.ndarray, rfs: np.ndarray, alpha: float) -> int | float:
    # Least n with Σ coef_k rfs_k^n <= α / (1 + slack) (monotone non-increasing in n).
    target = alpha * (1 - _COUNT_SLACK)

    def val(n: int) -> float:
        return float(np.sum(coef * rfs**n)) if n > 0 else float(np.sum(coef))

    if np.any(rfs >= 1.0) and np.sum(coef[rfs >= 1.0]) > target:
        return math.inf
    hi = 1
    while val(hi) > target:
        hi *= 2
        if hi > 2**62:
            return math.inf
    lo = 0
    while lo < hi:
        mid = (lo + hi) // 2
        if val(mid) <= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def private_mary_lower_bound(
    states, *, priors=None, alpha, epsilon, delta, notion="qldp", atol=DEFAULT_ATOL
) -> int | float:
    r"""Copies needed for m-ary testing of :math:`\{\mathcal A(\rho_i)\}` for *every*
    :math:`(\varepsilon,\delta)`-private :math:`\mathcal A`.

    Pairwise reduction as in :func:`mary_copy_bounds`, with each pair's output fidelity bounded
    below through the contraction of the inputs' trace distance (as in
    :func:`private_symmetric_lower_bound`; derived here, ``docs/qprldp.md`` §6.5).

    Args:
        states: m ≥ 2 *input* density matrices of shape (d, d).
        priors: probabilities summing to 1 (uniform if ``None``).
        alpha: target error :math:`\alpha \in (0, 1)`.
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        notion: ``"qldp"`` or ``"qprldp"``.
        atol: tolerance of the checks.

    Returns:
        Lower bound on :math:`n^*` (int, or ``math.inf``).

    Raises:
        ValueError: if an argument is invalid.

    Example:
        >>> sts = [np.diag([1.0, 0]), np.diag([0, 1.0])]
        >>> private_mary_lower_bound(sts, alpha=0.05, epsilon=0.1, delta=0.0)
        19
    """
    sts, pri = _check_states_priors(states, priors, atol)
    alpha = _check_open01(alpha, "alpha")
    eta = trace_distance_contraction_bound(epsilon=epsilon, delta=delta, notion=notion)
    lower = 0
    for i, j in combinations(range(len(sts)), 2):
        pij = pri[i] + pri[j]
        a_ij = alpha / pij
        if a_ij >= 1:
            continue
        tin = min(1.0, float(trace_distance(sts[i], sts[j], atol=atol)))
        lower = max(lower, _private_lower(eta, tin, float(epsilon), float(delta),
                                          pri[i] / pij, a_ij))
    return lower


# --------------------------------------------------------------------------------------------
# Quantum spectral probabilistic indistinguishability (QSPrI)
# --------------------------------------------------------------------------------------------


def _block_violation(blocks, gamma: float, atol: float) -> float:
    tot = 0.0
    for m, rb, sb in blocks:
        w, v = np.linalg.eigh(_h(rb - gamma * sb))
        pos = v[:, w > atol]
        if pos.shape[1]:
            tot += m * float(np.real(np.trace(pos.conj().T @ rb @ pos)))
    return min(1.0, max(0.0, tot))


def minimal_copies_qspri(rho, sigma, *, epsilon, delta, max_copies=8, atol=DEFAULT_ATOL):
    r"""Brute-force first :math:`n` at which :math:`(\rho^{\otimes n}, \sigma^{\otimes n})` is not
    :math:`(\varepsilon,\delta)`-QSPrI.

    The pair :math:`(\rho, \sigma)` is :math:`(\varepsilon,\delta)`-QSPrI (quantum spectral
    probabilistic indistinguishability) if both violation probabilities
    :math:`V_\varepsilon(\rho\|\sigma)` and :math:`V_\varepsilon(\sigma\|\rho)` are
    :math:`\le\delta`. For :math:`n \le 8` and :math:`d^n \le 4096` the tensor powers are built
    explicitly when ``d != 2``; qubits use the exact Schur–Weyl blocks.

    Args:
        rho, sigma: density matrices of shape (d, d).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1)`.
        max_copies: largest :math:`n` tried.
        atol: tolerance of the checks and of the eigenvalue sign (as in
            :func:`~qprldp_core.divergences.violation_probability`).

    Returns:
        The first violating :math:`n`, or ``None`` if none up to ``max_copies``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> minimal_copies_qspri(np.diag([0.75, 0.25]), np.diag([0.25, 0.75]), epsilon=1.5,
        ...                      delta=0.3)
        2
    """
    r, s = _check_pair(rho, sigma, atol)
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_lt1(delta)
    max_copies = _check_copies(max_copies, "max_copies")
    g = math.exp(epsilon)
    for n in range(1, max_copies + 1):
        if n == 1:
            v = max(violation_probability(r, s, epsilon=epsilon, atol=atol),
                    violation_probability(s, r, epsilon=epsilon, atol=atol))
        else:
            blocks = _pair_blocks(r, s, n)
            swapped = [(m, sb, rb) for m, rb, sb in blocks]
            v = max(_block_violation(blocks, g, atol), _block_violation(swapped, g, atol))
        if v > delta:
            return n
    return None


def _check_delta_lt1(delta) -> float:
    delta = check_probability(delta, "delta")
    if delta >= 1.0:
        raise ValueError(f"`delta` must be in [0, 1). Found {format_number(delta)}.")
    return delta


def qspri_copy_bounds(rho, sigma, *, epsilon, delta, atol=DEFAULT_ATOL) -> CopyBounds:
    r"""Bounds on the first :math:`n` at which :math:`(\rho^{\otimes n}, \sigma^{\otimes n})` stops
    being :math:`(\varepsilon,\delta)`-QSPrI.

    * Lower (derived here, ``docs/qprldp.md`` §6.6): for every :math:`a > 1`,
      :math:`V_\varepsilon(\rho\|\sigma) \le \exp\{(a-1)(\tilde D_a(\rho\|\sigma) - \varepsilon)\}`
      (data processing of :math:`\tilde D_a` under :math:`\{\Pi, I-\Pi\}` and
      :math:`\mathrm{Tr}\sigma\Pi \le e^{-\varepsilon}\mathrm{Tr}\rho\Pi`), and
      :math:`\tilde D_a(\rho^{\otimes n}\|\sigma^{\otimes n}) = n\tilde D_a(\rho\|\sigma)`. So every
      :math:`n \le \max_a[\varepsilon - \ln(1/\delta)/(a-1)]/\tilde D_a` (in both directions) is
      indistinguishable and the first violating :math:`n` exceeds it.
    * Upper: :math:`V_\varepsilon \ge E_{e^\varepsilon} \ge 1 - e^{\varepsilon(1-s)}Q_s^n`
      (Audenaert's inequality with :math:`B = e^\varepsilon\sigma^{\otimes n}`), so any
      :math:`n > \ln(e^{\varepsilon(1-s)}/(1-\delta))/\ln(1/Q_s)` violates.

    Args:
        rho, sigma: density matrices of shape (d, d).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1)`.
        atol: tolerance of the checks.

    Returns:
        :class:`CopyBounds` with ``task == "qspri"`` (``lower >= 1``).

    Raises:
        ValueError: if an argument is out of range.

    References:
        Shi, arXiv:2607.06307 (QSPrI via sandwiched Rényi relative entropy, abstract); the
        bounds are derived here. Müller-Lennert et al., arXiv:1306.3142 (sandwiched Rényi).

    Example:
        >>> b = qspri_copy_bounds(np.diag([0.75, 0.25]), np.diag([0.25, 0.75]), epsilon=1.5,
        ...                       delta=0.3)
        >>> b.lower <= 2 <= b.upper
        True
    """
    r, s = _check_pair(rho, sigma, atol)
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_lt1(delta)
    safe = math.inf
    for a_, b_ in ((r, s), (s, r)):
        best = 0.0
        if delta > 0:
            for a in _RENYI_GRID:
                dt = float(sandwiched_renyi_divergence(a_, b_, alpha=a, atol=atol))
                num = epsilon - math.log(1 / delta) / (a - 1)
                if dt == 0.0:
                    best = math.inf if num >= 0 else best
                elif math.isfinite(dt) and num > 0:
                    best = max(best, num / dt)
        safe = min(safe, best)
    # every integer n <= safe is indistinguishable, so the first violating n is >= floor(safe) + 1
    lower = (math.inf if math.isinf(safe)
             else max(1, math.floor(safe - _COUNT_SLACK * max(1.0, safe)) + 1))
    g = math.exp(epsilon)
    best_up = math.inf
    for a_, b_ in ((r, s), (s, r)):
        qs = _chernoff_q(a_, b_, _S_GRID, atol)
        for sv, qv in zip(_S_GRID, qs, strict=True):
            if qv >= 1.0:
                continue
            if qv <= 0.0:
                best_up = min(best_up, 1.0)
                continue
            x = math.log(g ** (1 - sv) / (1 - delta)) / -math.log(qv)
            # first integer strictly above x, with slack upward
            best_up = min(best_up, math.floor(x + _COUNT_SLACK * max(1.0, abs(x))) + 1)
    upper = math.inf if math.isinf(best_up) else max(1, int(best_up))
    return CopyBounds(lower, upper, "qspri", "sandwiched Renyi tail bound",
                      "Audenaert lower bound on E_gamma")
