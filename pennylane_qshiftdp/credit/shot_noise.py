r"""Shot-noise credit and Gaussian top-up arithmetic (pure functions; docs/noise.md).

Per coordinate :math:`k` the released sum :math:`\sum_j g_j + z` must carry Gaussian noise of
variance at least :math:`\sigma^2\Delta^2`. Part of it is already there: the shot noise of the
parameter-shift estimates. For a batch with loss weights :math:`w_j = \partial\ell_j/\partial f`
and shifted circuits :math:`t` with coefficients :math:`a_{tk} = \sum_i c_{it}J_{ik}` (shift rule
times classical Jacobian), the shot-noise variance of coordinate :math:`k` is

.. math::

    V_k = \sum_j V_{jk}, \qquad V_{jk} = w_j^2 \sum_t a_{tk}^2\, v_{jt} / N_s ,

with :math:`v_{jt}` the single-shot variance of circuit :math:`t` of example :math:`j`. The example
that differs between neighbouring data sets cannot protect itself, so the credit is
:math:`V_k - \max_j V_{jk}`, computed from a lower bound on :math:`V_k`:

* ``none``: no credit.
* ``depolarizing`` (non-adaptive Q-ShiftDP): :math:`v_{jt} \ge v_{\min}`, a data-independent floor
  proven from the device's depolarizing noise (:func:`qprldp_core.certify_device`).
* ``adaptive`` (adaptive Q-ShiftDP, arXiv:2602.02962): :math:`\hat V_k` is a lower confidence
  bound on :math:`V_k` with failure probability :math:`\alpha = \beta/(TK)` (Bonferroni over
  :math:`T` steps and :math:`K` coordinates) that holds at every :math:`N_s \ge 2` without a normal
  approximation (:func:`~pennylane_qshiftdp.credit.variance_bounds.variance_lower_bound`:
  Hoeffding's and Bernstein's inequalities for the sample variances as U-statistics, plus exact
  Clopper–Pearson intervals with ``two_outcome=True``), floored at the ``depolarizing`` value.
  The subtracted largest single-example term is the data-independent maximum
  :math:`\max_j w_j^2\sum_t a_{tk}^2 (\lambda_+ - \lambda_-)^2/(4N_s)`, an upper bound that
  holds on every event.
* ``isotropic``: the adaptive credit's minimum over coordinates applied to all (the paper's
  single :math:`\sigma_B^2`; for comparison).

The artificial noise is :math:`z_k \sim N(0, \max(0, \sigma^2\Delta^2 - \mathrm{credit}_k))`.
Crediting treats shot noise as Gaussian (central limit theorem): an approximation, stated in
every privacy statement with a credit mode other than ``none``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.stats import norm

from .._validation import (
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    check_probability,
)
from ..gradients.shot_statistics import ShotStatistics
from .variance_bounds import variance_lower_bound

__all__ = [
    "CREDIT_MODES",
    "CreditResult",
    "confidence_multiplier",
    "shot_noise_credit",
    "artificial_variance",
]

CREDIT_MODES = ("none", "depolarizing", "adaptive", "isotropic")

# Relative rounding tolerance when checking recorded statistics against `outcome_range`.
_RANGE_RTOL = 1e-9


def confidence_multiplier(*, beta: float, steps: int, coordinates: int,
                          method: str = "gaussian") -> float:
    r"""Multiplier :math:`z` of the one-sided lower confidence bound, Bonferroni-corrected.

    With :math:`\alpha = \beta/(T K)`, ``"gaussian"`` returns :math:`\Phi^{-1}(1 - \alpha)`
    and ``"cantelli"`` the distribution-free :math:`\sqrt{(1-\alpha)/\alpha}`
    (Cantelli's inequality), so that all :math:`T K` bounds hold together with probability
    at least :math:`1 - \beta`.

    :func:`shot_noise_credit` turns ``z`` back into the failure probability
    :math:`1 - \Phi(z)` of each coordinate's bound. That is :math:`\alpha` for ``"gaussian"``
    and at most :math:`\alpha` for ``"cantelli"`` (Cantelli's tail bound dominates the Gaussian
    tail), so either way the run's bounds hold together with probability at least
    :math:`1 - \beta`; the bound itself no longer uses a normal approximation.

    Args:
        beta: failure probability :math:`\beta \in (0, 1)` of the whole run.
        steps: number of steps :math:`T \ge 1`.
        coordinates: number of coordinates :math:`K \ge 1`.
        method: ``"gaussian"`` or ``"cantelli"``.

    Returns:
        float: :math:`z > 0`.

    Raises:
        ValueError: for β outside (0, 1), non-positive counts or an unknown method.
        TypeError: for non-integer counts.

    Example:
        >>> round(confidence_multiplier(beta=0.05, steps=1, coordinates=1), 4)
        1.6449
        >>> round(confidence_multiplier(beta=0.05, steps=1, coordinates=1, method="cantelli"), 4)
        4.3589
    """
    check_probability(beta, "beta", open_low=True, open_high=True)
    steps = check_positive_int(steps, "steps")
    coordinates = check_positive_int(coordinates, "coordinates")
    alpha = beta / (steps * coordinates)
    if method == "gaussian":
        return float(norm.isf(alpha))
    if method == "cantelli":
        return math.sqrt((1.0 - alpha) / alpha)
    raise ValueError(f"`method` must be 'gaussian' or 'cantelli'. Found {method!r}.")


@dataclasses.dataclass(frozen=True)
class CreditResult:
    r"""Per-coordinate shot-noise credit of one batch.

    Attributes:
        credit: variance credited per coordinate (already minus the largest single-example
            term; never negative), shape ``(K,)``.
        estimate: point estimate :math:`\bar V_k` of the batch's shot-noise variance (from
            the sample variances; 0 without statistics).
        lower_bound: the bound on :math:`V_k` used before subtracting the largest term.
        largest_example: the subtracted largest single-example term.
        alpha: failure probability of each coordinate's lower confidence bound (``adaptive``
            and ``isotropic``; ``None`` otherwise).
    """

    credit: np.ndarray
    estimate: np.ndarray
    lower_bound: np.ndarray
    largest_example: np.ndarray
    alpha: float | None = None


def _circuit_coefficients(stats: ShotStatistics, jacobian: np.ndarray):
    """Aggregate rows of the same circuit: a_tk = Σ_i c_it J_ik, one row per circuit."""
    key = np.stack([stats.call, stats.tape_index, stats.batch_index, stats.measurement,
                    stats.shot_copy], axis=1)
    uniq, inverse = np.unique(key, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    a = np.zeros((uniq.shape[0], jacobian.shape[1]))
    np.add.at(a, inverse, stats.coefficient[:, None] * jacobian[stats.trainable_param])
    first = np.zeros(uniq.shape[0], dtype=np.int64)
    first[inverse[::-1]] = np.arange(len(inverse))[::-1]
    return a, first


def _coefficient_alpha(z, alpha) -> float:
    """Failure probability of each coordinate's bound, from ``alpha`` or from ``z``."""
    if alpha is not None and z is not None:
        raise ValueError(f"Give one of `z` and `alpha`, not both. Found z={z!r}, "
                         f"alpha={alpha!r}.")
    if alpha is not None:
        return check_probability(alpha, "alpha", open_low=True, open_high=True)
    z = check_nonnegative_float(z, "z")
    # 1 − Φ(z) is α for a Gaussian multiplier and at most α for a Cantelli one.
    return float(norm.sf(z))


def _check_outcome_range(outcome_range) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in outcome_range)
    except (TypeError, ValueError) as err:
        raise ValueError(f"`outcome_range` must be a pair (low, high) of finite numbers with "
                         f"low < high. Found {outcome_range!r}.") from err
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"`outcome_range` must be a pair (low, high) of finite numbers with "
                         f"low < high. Found {outcome_range!r}.")
    return lo, hi


def _check_statistics_in_range(mean, variance, shots, lo, hi) -> None:
    """Refuse statistics that prove some shot fell outside ``[lo, hi]`` (Bhatia–Davis)."""
    tol = _RANGE_RTOL * (hi - lo) ** 2
    biased = variance * (shots - 1.0) / shots
    bad = ((mean < lo - _RANGE_RTOL * (hi - lo)) | (mean > hi + _RANGE_RTOL * (hi - lo))
           | (biased > (hi - mean) * (mean - lo) + tol))
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`outcome_range` must contain every single-shot value; the statistics of a circuit "
            f"(mean {mean[i]:g}, variance {variance[i]:g}, {int(shots[i])} shots) prove a shot "
            f"outside it (a sample on [low, high] has (N−1)/N·s² ≤ (high − mean)(mean − low)). "
            f"Found outcome_range=({lo:g}, {hi:g})."
        )


def _per_coordinate_bound(u, variance, shots, mean, lo, hi, alpha, two_outcome):
    """variance_lower_bound for each coordinate over its own circuits (each circuit enters one
    coordinate): circuits grouped by coordinate into a (K, width) layout padded with weight 0."""
    k = u.shape[1]
    coord = np.argmax(u, axis=1)
    idx = np.flatnonzero(u[np.arange(u.shape[0]), coord] > 0)
    if idx.size == 0:
        return np.zeros(k)
    idx = idx[np.argsort(coord[idx], kind="stable")]
    c = coord[idx]
    counts = np.bincount(c, minlength=k)
    pos = np.arange(idx.size) - (np.cumsum(counts) - counts)[c]
    shape = (k, int(counts.max()))
    weights, s2, n = np.zeros(shape), np.zeros(shape), np.full(shape, 2.0)
    means = np.full(shape, lo)
    weights[c, pos] = u[idx, c]
    s2[c, pos] = variance[idx]
    n[c, pos] = shots[idx]
    means[c, pos] = mean[idx]
    return np.asarray(variance_lower_bound(s2, weights=weights, shots=n, low=lo, high=hi,
                                           alpha=alpha, means=means if two_outcome else None))


def shot_noise_credit(stats: ShotStatistics, *, jacobian: np.ndarray, loss_weights: np.ndarray,
                      mode: str, variance_floor: float = 0.0, z: float | None = None,
                      isotropic: bool = False, alpha: float | None = None,
                      outcome_range: tuple[float, float] = (-1.0, 1.0),
                      two_outcome: bool = False) -> CreditResult:
    r"""Shot-noise variance credited per coordinate for one batch (see module docstring).

    In ``adaptive``/``isotropic`` mode the lower bound on each :math:`V_k` is
    :func:`~pennylane_qshiftdp.credit.variance_bounds.variance_lower_bound` over the coordinate's
    circuits with weights :math:`u_t = w_j^2 a_{tk}^2/N_s` and failure probability α (from
    ``alpha``, or :math:`1 - \Phi(z)` from ``z``), floored at the ``depolarizing`` value. It
    holds at every :math:`N_s \ge 2` without a normal approximation. The subtracted largest
    single-example term is :math:`\max_j w_j^2 \sum_t a_{tk}^2 (\lambda_+ - \lambda_-)^2/(4N_s)`
    (at least the ``depolarizing`` one), the data-independent maximum (Popoviciu: a
    single-shot variance on :math:`[\lambda_-, \lambda_+]` is at most
    :math:`(\lambda_+ - \lambda_-)^2/4`), so it is an upper bound on every example's term.

    Args:
        stats: the batch's :class:`~.ShotStatistics` (one recorded gradient call per batch; the
            ``batch_index`` of a row is the example's position in the batch). Single
            measurement, no shot vector.
        jacobian: classical Jacobian :math:`J`, shape ``(num_tape_params, K)``.
        loss_weights: :math:`w_j = \partial\ell_j/\partial f`, shape ``(B,)``.
        mode: one of :data:`CREDIT_MODES`.
        variance_floor: :math:`v_{\min} \ge 0`, proven lower bound on every circuit's
            single-shot variance (``depolarizing``; floor of ``adaptive``).
        z: confidence multiplier (``adaptive``/``isotropic``), from
            :func:`confidence_multiplier`; converted to :math:`\alpha = 1 - \Phi(z)`.
        isotropic: apply the minimum credit over coordinates to all of them.
        alpha: failure probability in (0, 1) of each coordinate's bound, e.g.
            :math:`\beta/(TK)`; give it instead of ``z``.
        outcome_range: :math:`(\lambda_-, \lambda_+)`, the range of every single-shot value of
            the measured observable (``adaptive``/``isotropic``): the eigenvalue range of a
            Pauli word by default; pass the estimator's range otherwise
            (:func:`pennylane_qshiftdp.observable_range`). Statistics that prove a
            shot outside it are refused.
        two_outcome: the observable has exactly the two eigenvalues ``outcome_range`` (e.g. a
            Pauli word): also use the exact Clopper–Pearson bound (α/2 each).

    Returns:
        CreditResult: credit, estimate, bound and subtracted term, each of shape ``(K,)``.

    Raises:
        ValueError: for an unknown mode, a negative floor, a missing ``z``/``alpha`` or both,
            several measurements or shot copies, mismatched shapes, a floor above
            :math:`(\lambda_+ - \lambda_-)^2/4`, or statistics outside ``outcome_range``.
        NotImplementedError: if a circuit enters several coordinates (correlated shot noise).

    References:
        Ngo et al., arXiv:2602.02962 (adaptive Q-ShiftDP); Hoeffding (1963); Maurer & Pontil,
        arXiv:0907.3740; aggregation, the bound and the subtraction of the largest
        single-example term are derived here (``docs/noise.md``).

    Example:
        >>> from pennylane_qshiftdp.gradients.shot_statistics import ShotStatistics
        >>> st = ShotStatistics(shots=[100, 100], mean=[0.0, 0.0], variance=[1.0, 1.0],
        ...     fourth_moment=[1.0, 1.0], coefficient=[0.5, -0.5], trainable_param=[0, 0],
        ...     batch_index=[0, 1], shot_copy=[0, 0], measurement=[0, 0], tape_index=[0, 1])
        >>> r = shot_noise_credit(st, jacobian=np.eye(1), loss_weights=np.ones(2),
        ...                       mode="depolarizing", variance_floor=1.0)
        >>> r.lower_bound.tolist(), r.credit.tolist()
        ([0.005], [0.0025])
        >>> r = shot_noise_credit(st, jacobian=np.eye(1), loss_weights=np.ones(2),
        ...                       mode="adaptive", alpha=0.05)  # estimate 0.005
        >>> round(float(r.lower_bound[0]), 6), r.largest_example.tolist()  # (2/4)/100
        (0.003776, [0.0025])
    """
    if mode not in CREDIT_MODES:
        raise ValueError(f"`mode` must be one of {CREDIT_MODES}. Found {mode!r}.")
    variance_floor = check_nonnegative_float(variance_floor, "variance_floor")
    jacobian = np.asarray(jacobian, dtype=float)
    loss_weights = np.asarray(loss_weights, dtype=float).reshape(-1)
    k = jacobian.shape[1]
    zeros = np.zeros(k)
    adaptive = mode in ("adaptive", "isotropic")
    if adaptive:
        if z is None and alpha is None:
            raise ValueError(f"`z` (or `alpha`) must be given for mode {mode!r}. Found None.")
        alpha = _coefficient_alpha(z, alpha)
        lo, hi = _check_outcome_range(outcome_range)
        if variance_floor > (hi - lo) ** 2 / 4.0:
            raise ValueError(
                f"`variance_floor` must be at most (high − low)²/4 = {(hi - lo) ** 2 / 4.0:g} "
                f"for outcome_range=({lo:g}, {hi:g}). Found {variance_floor}."
            )
    if mode == "none" or len(stats) == 0:
        return CreditResult(zeros, zeros.copy(), zeros.copy(), zeros.copy(),
                            alpha if adaptive else None)
    if np.any(stats.measurement != 0) or np.any(stats.shot_copy != 0):
        raise ValueError(
            "Shot-noise credit supports a single measurement without a shot vector: estimates "
            "of several measurements of one circuit are correlated. Use credit='none'."
        )
    if stats.batch_index.max() >= loss_weights.size:
        raise ValueError(
            f"`loss_weights` must have one entry per example ({stats.batch_index.max() + 1}). "
            f"Found {loss_weights.size}."
        )
    a, first = _circuit_coefficients(stats, jacobian)
    if np.any(np.count_nonzero(a, axis=1) > 1):
        # One circuit feeding several coordinates makes the shot noise correlated across
        # coordinates; a diagonal credit could then exceed what the covariance supports.
        raise NotImplementedError(
            "Shot-noise credit needs every shifted circuit to enter one coordinate only (a "
            "weight shared through a gate parameter that depends on several weights makes the "
            "shot noise correlated across coordinates). Use credit='none'."
        )
    example = stats.batch_index[first]
    w2a2 = (loss_weights[example][:, None] * a) ** 2  # (circuits, K)
    shots = stats.shots[first][:, None].astype(float)
    u = w2a2 / shots  # weight of each circuit's single-shot variance in V_k
    floor_terms = u * variance_floor
    num_examples = int(example.max()) + 1

    def per_example(terms):
        out = np.zeros((num_examples, k))
        np.add.at(out, example, terms)
        return out

    floor_j = per_example(floor_terms)
    variance = stats.variance[first]
    estimate = per_example(u * variance[:, None]).sum(axis=0)
    if mode == "depolarizing":
        lower = floor_j.sum(axis=0)
        largest = floor_j.max(axis=0)
    else:
        mean = stats.mean[first]
        _check_statistics_in_range(mean, variance, shots[:, 0], lo, hi)
        assert alpha is not None  # set for the adaptive modes above
        if alpha > 0.0:  # 1 − Φ(z) underflows to 0 only for z > 38: then no bound but 0
            bound = _per_coordinate_bound(u, variance, shots[:, 0], mean, lo, hi, alpha,
                                          two_outcome)
        else:
            bound = zeros
        lower = np.maximum(bound, floor_j.sum(axis=0))
        # Data-independent maximum of each example's term (valid on every event).
        largest = np.maximum(per_example(u * (hi - lo) ** 2 / 4.0), floor_j).max(axis=0)
    credit = np.maximum(lower - largest, 0.0)
    if isotropic or mode == "isotropic":
        credit = np.full(k, credit.min())
    return CreditResult(credit, estimate, lower, largest, alpha if adaptive else None)


def artificial_variance(credit: np.ndarray, *, noise_multiplier: float,
                        sensitivity: float) -> np.ndarray:
    r"""Variance of the Gaussian noise to add per coordinate: :math:`\max(0, \sigma^2\Delta^2 -
    \mathrm{credit}_k)`.

    Args:
        credit: credited shot-noise variance per coordinate, shape ``(K,)``, ≥ 0.
        noise_multiplier: σ > 0 (from the accountant).
        sensitivity: Δ > 0 (L2, including the adjacency factor).

    Returns:
        np.ndarray: the artificial variance, shape ``(K,)``.

    Raises:
        ValueError: for a negative credit or non-positive σ or Δ.

    Example:
        >>> artificial_variance(np.array([0.0, 1.0, 9.0]), noise_multiplier=1.0, sensitivity=2.0)
        array([4., 3., 0.])
    """
    credit = np.asarray(credit, dtype=float)
    if np.any(credit < 0) or not np.all(np.isfinite(credit)):
        raise ValueError(f"`credit` must be finite and >= 0. Found minimum {credit.min()}.")
    check_positive_float(noise_multiplier, "noise_multiplier")
    check_positive_float(sensitivity, "sensitivity")
    return np.maximum(noise_multiplier**2 * sensitivity**2 - credit, 0.0)
