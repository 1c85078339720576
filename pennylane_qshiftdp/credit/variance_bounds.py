r"""Lower confidence bounds on a weighted sum of single-shot variances (pure numpy/scipy).

The adaptive shot-noise credit (:mod:`pennylane_qshiftdp.credit.shot_noise`) needs, per
coordinate, a lower confidence bound on

.. math::

    V = \sum_t u_t v_t , \qquad u_t \ge 0 \text{ known},

where :math:`v_t` is the single-shot variance of circuit :math:`t`, the circuits are independent,
and circuit :math:`t`'s :math:`N_t \ge 2` shots are i.i.d. with values in a known range
:math:`[\ell_t, h_t]`. Every bound here holds with probability at least :math:`1 - \alpha` for
*every* :math:`N_t \ge 2` and every such distribution: no normal approximation is made. (A normal
approximation with the plug-in :math:`\widehat{\mathrm{Var}}(s^2) = (\hat m_4 - s^4)/N` fails far
more often than :math:`\alpha` at few shots: for ±1 outcomes at :math:`\hat p = 1/2` the plug-in
is 0 while the exact value is :math:`2/(N(N-1))`.)

Write :math:`R_t = h_t - \ell_t`, :math:`m_t = \lfloor N_t/2\rfloor`, :math:`s_t^2` the unbiased
sample variance and :math:`Z = \sum_t u_t s_t^2` (unbiased for :math:`V`).

* :func:`max_sample_variance`: :math:`s^2 \le M = R^2 \lfloor N/2\rfloor\lceil N/2\rceil /
  (N(N-1))`, i.e. :math:`\frac{R^2}{4}\frac{N}{N-1}` for even and :math:`\frac{R^2}{4}
  \frac{N+1}{N}` for odd :math:`N` (derived here: :math:`s^2` is convex in each shot, so its
  maximum over the box is at a vertex, :math:`k` shots at :math:`h` and :math:`N-k` at
  :math:`\ell`, giving :math:`R^2 k(N-k)/(N(N-1))`).
* :func:`hoeffding_variance_lower_bound`: :math:`s^2 = \binom{N}{2}^{-1}\sum_{i<j}
  (x_i - x_j)^2/2` is a U-statistic with kernel in :math:`[0, R^2/2]`. Hoeffding's reduction
  (1963, §5) bounds its moment generating function by that of an average of :math:`m`
  i.i.d. kernels; with Hoeffding's lemma (or directly :math:`s^2 \in [0, M]`, whichever is
  smaller per circuit), :math:`Z - V` is sub-Gaussian with variance proxy
  :math:`\frac14\sum_t r_t^2`, :math:`r_t^2 = u_t^2\min(M_t^2, R_t^4/(4 m_t))`, so
  :math:`V \ge Z - \sqrt{\tfrac12 \log(1/\alpha)\sum_t r_t^2}`.
* :func:`bernstein_variance_lower_bound`: the same reduction writes :math:`Z` (in MGF order) as a
  sum of independent terms in :math:`[0, b_t]`, :math:`b_t = u_t\min(M_t, R_t^2/(2m_t))`, whose
  second moments sum to at most :math:`b V` (:math:`b = \max_t b_t`: a term in :math:`[0, b]`
  has :math:`E X^2 \le b\,E X`). Bernstein's inequality then gives
  :math:`Z - V \le bL/3 + \sqrt{b^2L^2/9 + 2bLV}` (:math:`L = \log(1/\alpha)`); solving for
  :math:`V`: :math:`V \ge Z(Z - \tfrac23 bL)/(Z + \tfrac23 bL + \sqrt{(\tfrac23 bL)^2 + 2bLZ})`.
  Tighter than Hoeffding when the variances are small compared with the range.
* :func:`clopper_pearson_variance_lower_bound`: for two-outcome circuits,
  :math:`v_t = R_t^2 p_t(1-p_t)`; exact Clopper–Pearson intervals for each :math:`p_t` at level
  :math:`\alpha/n` (union bound over the :math:`n` circuits with :math:`u_t > 0`) and the minimum
  of :math:`p(1-p)` over each interval.
* :func:`variance_lower_bound`: the combination used by the credit. Hoeffding and Bernstein
  reject a candidate :math:`V` when :math:`Z - V` exceeds a threshold that depends only on
  :math:`V` and the known weights; the smaller of the two thresholds is still exceeded with
  probability :math:`\le\alpha`, so their *maximum* is valid at the full :math:`\alpha`
  (derived here). The Clopper–Pearson bound rests on different events, so with ``means`` the
  result is the maximum of the distribution-free bound at :math:`\alpha/2` and Clopper–Pearson
  at :math:`\alpha/2`.

Every function sums over the last axis (the circuits); leading axes are independent problems
(e.g. one per coordinate). Derivations: ``docs/noise.md``, "The adaptive bound".

References:
    Hoeffding, "Probability inequalities for sums of bounded random variables", J. Amer.
    Statist. Assoc. 58 (1963) 13–30, Thm 2 and §5 (U-statistics).
    Maurer & Pontil, "Empirical Bernstein bounds and sample variance penalization",
    arXiv:0907.3740 (v1), Thm 10 (concentration of the sample variance; variance bounded by
    range × mean, the idea used in the Bernstein form).
    Boucheron, Lugosi & Massart, *Concentration Inequalities* (2013), Thm 2.10 and Cor. 2.11
    (Bernstein's inequality).
    Clopper & Pearson, Biometrika 26 (1934) 404–413 (exact binomial interval).
"""

from __future__ import annotations

from typing import overload

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta as _beta_dist

from .._validation import check_probability

__all__ = [
    "max_sample_variance",
    "hoeffding_variance_lower_bound",
    "bernstein_variance_lower_bound",
    "clopper_pearson_variance_lower_bound",
    "variance_lower_bound",
]

# Relative tolerance for rounding when checking that a recorded variance or mean lies in its
# range (the transform computes them in float64; a violation larger than this is an error).
_RANGE_RTOL = 1e-9
# Absolute tolerance (in counts) for a two-outcome mean to be a multiple of 1/N.
_COUNT_ATOL = 1e-6


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> float:
    return float(np.asarray(arr)[bad].reshape(-1)[0])


def _nonneg_array(value, name: str) -> np.ndarray:
    arr = np.asarray(value, dtype=float)
    bad = ~np.isfinite(arr) | (arr < 0)
    if np.any(bad):
        raise ValueError(f"`{name}` must be finite and >= 0. Found {_first_bad(arr, bad)}.")
    return arr


def _shots_array(value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"`shots` must be integers >= 2. Found {value!r}.")
    arr = arr.astype(float)
    bad = ~np.isfinite(arr) | (arr < 2) | (arr != np.round(arr))
    if np.any(bad):
        raise ValueError(f"`shots` must be integers >= 2. Found {_first_bad(arr, bad)}.")
    return arr


def _range_arrays(low, high) -> tuple[np.ndarray, np.ndarray]:
    lo = np.asarray(low, dtype=float)
    hi = np.asarray(high, dtype=float)
    for name, arr in (("low", lo), ("high", hi)):
        if not np.all(np.isfinite(arr)):
            bad = _first_bad(arr, ~np.isfinite(arr))
            raise ValueError(f"`{name}` must be finite. Found {bad}.")
    lo_b, hi_b = np.broadcast_arrays(lo, hi)
    not_above = ~(hi_b > lo_b)
    if np.any(not_above):
        raise ValueError(f"`high` must be greater than `low`. Found "
                         f"high={_first_bad(hi_b, not_above)}, "
                         f"low={_first_bad(lo_b, not_above)}.")
    return lo, hi


def _max_sample_variance(n: np.ndarray, width: np.ndarray) -> np.ndarray:
    half = np.floor(n / 2.0)
    return width**2 * half * (n - half) / (n * (n - 1.0))


@overload
def max_sample_variance(shots: int | np.integer, *, low: float, high: float) -> float: ...
@overload
def max_sample_variance(shots: ArrayLike, *, low: ArrayLike, high: ArrayLike
                        ) -> float | np.ndarray: ...
def max_sample_variance(shots: ArrayLike, *, low: ArrayLike, high: ArrayLike
                        ) -> float | np.ndarray:
    r"""Largest possible unbiased sample variance of ``shots`` values in ``[low, high]``.

    .. math::

        \max s^2 = \frac{R^2\,\lfloor N/2\rfloor\,\lceil N/2\rceil}{N(N-1)}
        = \begin{cases} \frac{R^2}{4}\frac{N}{N-1} & N \text{ even} \\
          \frac{R^2}{4}\frac{N+1}{N} & N \text{ odd,} \end{cases}
        \qquad R = h - \ell .

    Args:
        shots: number of shots :math:`N \ge 2` (integer), any shape.
        low: smallest possible single-shot value :math:`\ell` (broadcasts with ``shots``).
        high: largest possible single-shot value :math:`h > \ell`.

    Returns:
        float or np.ndarray: the maximum, in squared observable units (shape of the broadcast
        inputs; a ``float`` for scalars).

    Raises:
        ValueError: for ``shots`` < 2 or not an integer, non-finite ranges or ``high <= low``.
        TypeError: for non-numeric ``shots``.

    References:
        Derived here (module docstring): :math:`s^2` is convex in each shot, so the maximum
        over the box is at a vertex.

    Example:
        >>> max_sample_variance(2, low=-1.0, high=1.0), max_sample_variance(3, low=-1.0, high=1.0)
        (2.0, 1.3333333333333333)
        >>> import itertools
        >>> round(max(float(np.var(x, ddof=1)) for x in itertools.product((-1, 1), repeat=3)), 12)
        1.333333333333
    """
    n = _shots_array(shots)
    lo, hi = _range_arrays(low, high)
    out = _max_sample_variance(n, hi - lo)
    return float(out) if out.ndim == 0 else out


def _prepare(variances, weights, shots, low, high, alpha):
    """Validate and broadcast to (..., n); returns s2, u, n, width, alpha."""
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    s2 = np.asarray(variances, dtype=float)
    if not np.all(np.isfinite(s2)):
        raise ValueError(f"`variances` must be finite. Found {_first_bad(s2, ~np.isfinite(s2))}.")
    u = _nonneg_array(weights, "weights")
    n = _shots_array(shots)
    lo, hi = _range_arrays(low, high)
    try:
        s2, u, n, lo, hi = np.broadcast_arrays(*(np.atleast_1d(a) for a in (s2, u, n, lo, hi)))
    except ValueError as err:
        raise ValueError(
            f"`variances`, `weights`, `shots`, `low` and `high` must broadcast together. Found "
            f"shapes {np.shape(variances)}, {np.shape(weights)}, {np.shape(shots)}, "
            f"{np.shape(low)}, {np.shape(high)}."
        ) from err
    width = hi - lo
    cap = _max_sample_variance(n, width)
    tol = _RANGE_RTOL * cap
    bad = (s2 < -tol) | (s2 > cap + tol)
    if np.any(bad):
        raise ValueError(
            f"`variances` must be in [0, max_sample_variance(shots, low, high)] = "
            f"[0, {_first_bad(cap, bad):g}]. Found {_first_bad(s2, bad)}."
        )
    s2 = np.clip(s2, 0.0, cap)
    return s2, u, n, width, alpha


def _finish(out: np.ndarray):
    return float(out) if out.ndim == 0 else out


def _hoeffding(s2, u, n, width, log_inv_alpha):
    cap = _max_sample_variance(n, width)
    m = np.floor(n / 2.0)
    # Per circuit, the smaller of the two sub-Gaussian proxies (both valid; Hoeffding 1963).
    r2 = u**2 * np.minimum(cap**2, width**4 / (4.0 * m))
    z = np.sum(u * s2, axis=-1)
    return np.maximum(z - np.sqrt(0.5 * log_inv_alpha * np.sum(r2, axis=-1)), 0.0)


def _bernstein(s2, u, n, width, log_inv_alpha):
    cap = _max_sample_variance(n, width)
    m = np.floor(n / 2.0)
    b = np.max(u * np.minimum(cap, width**2 / (2.0 * m)), axis=-1)
    z = np.sum(u * s2, axis=-1)
    a = 2.0 / 3.0 * b * log_inv_alpha
    # V >= Z + a - sqrt(a^2 + 2bLZ), written without cancellation (derived here, docs/noise.md).
    denom = z + a + np.sqrt(a**2 + 2.0 * b * log_inv_alpha * z)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(denom > 0, z * (z - a) / np.where(denom > 0, denom, 1.0), 0.0)
    return np.maximum(out, 0.0)


def hoeffding_variance_lower_bound(variances: ArrayLike, *, weights: ArrayLike,
                                   shots: ArrayLike, low: ArrayLike, high: ArrayLike,
                                   alpha: float) -> float | np.ndarray:
    r"""Distribution-free (Hoeffding) lower confidence bound on :math:`V = \sum_t u_t v_t`.

    .. math::

        \hat V_H = \max\Big(0,\ \sum_t u_t s_t^2 - \sqrt{\tfrac12\log(1/\alpha)
        \textstyle\sum_t u_t^2 \min\big(M_t^2,\ R_t^4/(4\lfloor N_t/2\rfloor)\big)}\Big),

    with :math:`M_t` the :func:`max_sample_variance` and :math:`R_t = h_t - \ell_t`.
    :math:`P(V < \hat V_H) \le \alpha` for any distributions on the ranges and any
    :math:`N_t \ge 2`.

    Args:
        variances: unbiased sample variances :math:`s_t^2`, shape ``(..., n)`` (the last axis
            is summed; leading axes are independent problems).
        weights: :math:`u_t \ge 0`, broadcastable to ``variances``.
        shots: :math:`N_t \ge 2` (integers), broadcastable.
        low: :math:`\ell_t`, smallest possible single-shot value, broadcastable.
        high: :math:`h_t > \ell_t`, largest possible single-shot value, broadcastable.
        alpha: failure probability :math:`\alpha \in (0, 1)`.

    Returns:
        float or np.ndarray: :math:`\hat V_H \ge 0`, shape ``(...)`` (a ``float`` for 1-D input).

    Raises:
        ValueError: for α outside (0, 1), negative or non-finite weights, ``shots`` < 2,
            ``high <= low``, a variance outside :math:`[0, M_t]`, or shapes that do not
            broadcast.

    References:
        Hoeffding (1963), J. Amer. Statist. Assoc. 58, Thm 2 and §5 (the U-statistic
        reduction); the weighted sum over circuits is derived here (``docs/noise.md``).

    Example:
        >>> # 100 circuits, N = 100, ±1 shots: proxy r² = u² R⁴/(4·50) per circuit
        >>> v = hoeffding_variance_lower_bound([1.0] * 100, weights=0.01, shots=100, low=-1,
        ...                                    high=1, alpha=0.05)
        >>> closed = 1.0 - np.sqrt(0.5 * np.log(20) * 100 * 0.01**2 * 16 / 200)
        >>> round(v, 6), round(float(closed), 6)
        (0.965384, 0.965384)
        >>> hoeffding_variance_lower_bound([2.0], weights=1.0, shots=2, low=-1, high=1,
        ...                                alpha=0.05)  # one circuit at N = 2: uninformative
        0.0
    """
    s2, u, n, width, alpha = _prepare(variances, weights, shots, low, high, alpha)
    return _finish(_hoeffding(s2, u, n, width, -np.log(alpha)))


def bernstein_variance_lower_bound(variances: ArrayLike, *, weights: ArrayLike,
                                   shots: ArrayLike, low: ArrayLike, high: ArrayLike,
                                   alpha: float) -> float | np.ndarray:
    r"""Distribution-free (Bernstein, self-bounding) lower confidence bound on :math:`V`.

    .. math::

        \hat V_B = \max\Big(0,\ \frac{Z\,(Z - \tfrac23 bL)}{Z + \tfrac23 bL
        + \sqrt{(\tfrac23 bL)^2 + 2bLZ}}\Big), \qquad Z = \sum_t u_t s_t^2,\
        L = \log\frac1\alpha,\ b = \max_t u_t \min\Big(M_t, \frac{R_t^2}{2\lfloor N_t/2\rfloor}
        \Big).

    Equivalent to :math:`\hat V_B = Z + \tfrac23 bL - \sqrt{(\tfrac23 bL)^2 + 2bLZ}`, the
    smallest :math:`V` with :math:`Z - V \le bL/3 + \sqrt{b^2L^2/9 + 2bLV}` (Bernstein's
    inequality with the second moments bounded by :math:`bV`). Valid like
    :func:`hoeffding_variance_lower_bound`; tighter when the variances are small compared with
    :math:`R_t^2/4`.

    Args:
        variances: unbiased sample variances :math:`s_t^2`, shape ``(..., n)``.
        weights: :math:`u_t \ge 0`, broadcastable.
        shots: :math:`N_t \ge 2` (integers), broadcastable.
        low: :math:`\ell_t`, broadcastable.
        high: :math:`h_t > \ell_t`, broadcastable.
        alpha: failure probability :math:`\alpha \in (0, 1)`.

    Returns:
        float or np.ndarray: :math:`\hat V_B \ge 0`, shape ``(...)``.

    Raises:
        ValueError: as :func:`hoeffding_variance_lower_bound`.

    References:
        Boucheron, Lugosi & Massart (2013), Thm 2.10 / Cor. 2.11 (Bernstein); Hoeffding (1963)
        §5 (U-statistic reduction); Maurer & Pontil, arXiv:0907.3740 (v1), Thm 10 (the sample
        variance's fluctuation scales with its mean). Solving for :math:`V`: derived here
        (``docs/noise.md``).

    Example:
        >>> # 100 circuits with small variance: Bernstein beats Hoeffding
        >>> kw = dict(weights=0.01, shots=100, low=-1, high=1, alpha=0.05)
        >>> s2 = [0.1] * 100
        >>> round(bernstein_variance_lower_bound(s2, **kw), 4)
        0.0853
        >>> round(hoeffding_variance_lower_bound(s2, **kw), 4)
        0.0654
    """
    s2, u, n, width, alpha = _prepare(variances, weights, shots, low, high, alpha)
    return _finish(_bernstein(s2, u, n, width, -np.log(alpha)))


def _distribution_free(s2, u, n, width, log_inv_alpha):
    return np.maximum(_hoeffding(s2, u, n, width, log_inv_alpha),
                      _bernstein(s2, u, n, width, log_inv_alpha))


def _counts(means, n, lo, width):
    mu = np.asarray(means, dtype=float)
    if not np.all(np.isfinite(mu)):
        raise ValueError(f"`means` must be finite. Found {_first_bad(mu, ~np.isfinite(mu))}.")
    kf = n * (mu - lo) / width
    k = np.round(kf)
    bad = (np.abs(kf - k) > _COUNT_ATOL * np.maximum(n, 1.0)) | (k < 0) | (k > n)
    if np.any(bad):
        raise ValueError(
            "`means` must be sample means of two-outcome shots: low + (k/shots)·(high − low) "
            f"for an integer k in [0, shots]. Found {_first_bad(mu, bad)}."
        )
    return k


def _clopper_pearson(k, u, n, width, alpha):
    active = u > 0
    count = np.sum(active, axis=-1, keepdims=True)
    a_c = np.broadcast_to(alpha / np.maximum(count, 1), k.shape)
    # Compute each distinct (k, N, a) interval once (circuits share shot counts), through one
    # integer code per triple: 1-D np.unique is far faster than a row-wise one.
    kk, nn, aa = k[active].astype(np.int64), n[active], a_c[active]
    if kk.size == 0:
        return np.zeros(k.shape[:-1])
    un, inv_n = np.unique(nn, return_inverse=True)
    ua, inv_a = np.unique(aa, return_inverse=True)
    base = int(un.max()) + 1
    codes, inverse = np.unique((inv_n.reshape(-1) * ua.size + inv_a.reshape(-1)) * base + kk,
                               return_inverse=True)
    pair = codes // base
    ku, nu, au = (codes % base).astype(float), un[pair // ua.size], ua[pair % ua.size]
    with np.errstate(all="ignore"):
        p_lo = np.where(ku > 0, _beta_dist.ppf(au / 2.0, ku, nu - ku + 1.0), 0.0)
        p_hi = np.where(ku < nu, _beta_dist.isf(au / 2.0, ku + 1.0, nu - ku), 1.0)
    q_u = np.minimum(p_lo * (1.0 - p_lo), p_hi * (1.0 - p_hi))
    q = np.zeros(k.shape)
    q[active] = np.clip(np.nan_to_num(q_u, nan=0.0), 0.0, 0.25)[inverse.reshape(-1)]
    return np.sum(u * width**2 * q, axis=-1)


def clopper_pearson_variance_lower_bound(means: ArrayLike, *, weights: ArrayLike,
                                         shots: ArrayLike, low: ArrayLike, high: ArrayLike,
                                         alpha: float) -> float | np.ndarray:
    r"""Exact lower confidence bound on :math:`V = \sum_t u_t R_t^2 p_t(1-p_t)` for
    two-outcome circuits (single-shot values :math:`\ell_t` or :math:`h_t` only).

    .. math::

        \hat V_{CP} = \sum_{t:\,u_t>0} u_t R_t^2 \min_{p \in [p_t^-, p_t^+]} p(1-p),

    with :math:`[p_t^-, p_t^+]` the two-sided Clopper–Pearson interval of :math:`p_t` at
    level :math:`1 - \alpha/n` (:math:`n` circuits with :math:`u_t > 0`; union bound), from
    :math:`k_t = N_t(\hat\mu_t - \ell_t)/R_t` outcomes :math:`h_t`.
    :math:`P(V < \hat V_{CP}) \le \alpha`. Not valid for circuits with more than two
    possible outcomes (a Hamiltonian with several terms).

    Args:
        means: sample means :math:`\hat\mu_t`, shape ``(..., n)``; each must be
            :math:`\ell_t + (k/N_t)R_t` for an integer :math:`k` (within rounding).
        weights: :math:`u_t \ge 0`, broadcastable.
        shots: :math:`N_t \ge 2` (integers), broadcastable.
        low: :math:`\ell_t`, broadcastable.
        high: :math:`h_t > \ell_t`, broadcastable.
        alpha: failure probability :math:`\alpha \in (0, 1)`.

    Returns:
        float or np.ndarray: :math:`\hat V_{CP} \ge 0`, shape ``(...)``.

    Raises:
        ValueError: for α outside (0, 1), invalid weights, shots or ranges, or a mean that is
            not a possible two-outcome sample mean.

    References:
        Clopper & Pearson, Biometrika 26 (1934) 404–413; the union bound and the minimum of
        :math:`p(1-p)` over the interval: derived here (``docs/noise.md``).

    Example:
        >>> from scipy.stats import beta
        >>> # one circuit, 50 of 100 shots at +1: interval [p-, p+] symmetric about 1/2
        >>> v = clopper_pearson_variance_lower_bound([0.0], weights=[1.0], shots=100, low=-1,
        ...                                          high=1, alpha=0.05)
        >>> p = beta.ppf(0.025, 50, 51)
        >>> bool(np.isclose(v, 4 * p * (1 - p))), round(v, 4)
        (True, 0.9586)
    """
    alpha = check_probability(alpha, "alpha", open_low=True, open_high=True)
    u = _nonneg_array(weights, "weights")
    n = _shots_array(shots)
    lo, hi = _range_arrays(low, high)
    try:
        mu, u, n, lo, hi = np.broadcast_arrays(
            *(np.atleast_1d(np.asarray(a, dtype=float)) for a in (means, u, n, lo, hi)))
    except ValueError as err:
        raise ValueError(
            f"`means`, `weights`, `shots`, `low` and `high` must broadcast together. Found "
            f"shapes {np.shape(means)}, {np.shape(weights)}, {np.shape(shots)}, "
            f"{np.shape(low)}, {np.shape(high)}."
        ) from err
    width = hi - lo
    k = _counts(mu, n, lo, width)
    return _finish(_clopper_pearson(k, u, n, width, alpha))


def variance_lower_bound(variances: ArrayLike, *, weights: ArrayLike, shots: ArrayLike,
                         low: ArrayLike, high: ArrayLike, alpha: float,
                         means: ArrayLike | None = None) -> float | np.ndarray:
    r"""Lower confidence bound on :math:`V = \sum_t u_t v_t` used by the adaptive credit.

    .. math::

        \hat V = \begin{cases}
        \max(\hat V_H, \hat V_B)(\alpha) & \text{any bounded outcomes,} \\
        \max\big(\max(\hat V_H, \hat V_B)(\alpha/2),\ \hat V_{CP}(\alpha/2)\big)
        & \text{two-outcome circuits (} \texttt{means} \text{ given).}
        \end{cases}

    Taking the maximum of Hoeffding and Bernstein needs no split of α: both reject a
    candidate :math:`V` when the same statistic :math:`Z = \sum_t u_t s_t^2` exceeds a
    threshold depending only on :math:`V`, so the smaller threshold fails with probability
    at most α. The Clopper–Pearson bound uses other events, hence α/2 each. In every case
    :math:`P(V < \hat V) \le \alpha` at every :math:`N_t \ge 2`.

    Args:
        variances: unbiased sample variances :math:`s_t^2`, shape ``(..., n)``.
        weights: :math:`u_t \ge 0`, broadcastable.
        shots: :math:`N_t \ge 2` (integers), broadcastable.
        low: :math:`\ell_t`, broadcastable.
        high: :math:`h_t > \ell_t`, broadcastable.
        alpha: failure probability :math:`\alpha \in (0, 1)`.
        means: sample means, only for circuits whose single-shot values can *only* be
            ``low`` or ``high`` (an observable with two eigenvalues, e.g. a Pauli word); then
            the exact Clopper–Pearson bound is also used. ``None`` for any bounded outcome.

    Returns:
        float or np.ndarray: :math:`\hat V \ge 0`, shape ``(...)``.

    Raises:
        ValueError: as the component bounds.

    References:
        Hoeffding (1963); Maurer & Pontil, arXiv:0907.3740 (v1); Clopper & Pearson (1934);
        the combination: derived here (``docs/noise.md``).

    Example:
        >>> kw = dict(weights=0.0025, shots=100, low=-1, high=1, alpha=1e-3)
        >>> s2 = np.full(120, 100 / 99)  # 120 circuits at p̂ = 1/2 (V = 0.3 if p = 1/2)
        >>> round(variance_lower_bound(s2, **kw), 4)  # 96 % of V
        0.2886
        >>> round(variance_lower_bound(s2, means=np.zeros(120), **kw), 4)  # α/2 each
        0.2879
    """
    s2, u, n, width, alpha = _prepare(variances, weights, shots, low, high, alpha)
    if means is None:
        return _finish(_distribution_free(s2, u, n, width, -np.log(alpha)))
    lo = np.broadcast_to(np.atleast_1d(np.asarray(low, dtype=float)), s2.shape)
    try:
        mu = np.broadcast_to(np.atleast_1d(np.asarray(means, dtype=float)), s2.shape)
    except ValueError as err:
        raise ValueError(f"`means` must broadcast to the shape of `variances` {s2.shape}. "
                         f"Found {np.shape(means)}.") from err
    k = _counts(mu, n, lo, width)
    free = _distribution_free(s2, u, n, width, -np.log(alpha / 2.0))
    return _finish(np.maximum(free, _clopper_pearson(k, u, n, width, alpha / 2.0)))
