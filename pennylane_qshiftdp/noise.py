r"""Shot-noise credit and Gaussian top-up arithmetic (pure functions; DESIGN §5).

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
* ``adaptive`` (adaptive Q-ShiftDP, arXiv:2602.02962): :math:`\hat V_k = \bar V_k - z\,SE_k` with
  :math:`\bar V_k` from the sample variances, :math:`SE_k^2 = \sum (w_j a_{tk})^4
  \widehat{\mathrm{Var}}(s^2_{jt})/N_s^2` and :math:`\widehat{\mathrm{Var}}(s^2) = (\hat m_4 -
  s^4)/N_s`, floored at the ``depolarizing`` value; :math:`z` is the normal quantile of
  :math:`\beta/(TK)` (Bonferroni over :math:`T` steps and :math:`K` coordinates), or Cantelli's
  distribution-free :math:`\sqrt{(1-\alpha)/\alpha}`. The subtracted largest single-example term
  uses its upper confidence bound (conservative).
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

from ._validation import (
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    check_probability,
)
from .shot_statistics import ShotStatistics

__all__ = [
    "CREDIT_MODES",
    "CreditResult",
    "confidence_multiplier",
    "shot_noise_credit",
    "artificial_variance",
]

CREDIT_MODES = ("none", "depolarizing", "adaptive", "isotropic")


def confidence_multiplier(*, beta: float, steps: int, coordinates: int,
                          method: str = "gaussian") -> float:
    r"""Multiplier :math:`z` of the one-sided lower confidence bound, Bonferroni-corrected.

    With :math:`\alpha = \beta/(T K)`, ``"gaussian"`` returns :math:`\Phi^{-1}(1 - \alpha)`
    and ``"cantelli"`` the distribution-free :math:`\sqrt{(1-\alpha)/\alpha}`
    (Cantelli's inequality), so that all :math:`T K` bounds hold together with probability
    at least :math:`1 - \beta`.

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
    """

    credit: np.ndarray
    estimate: np.ndarray
    lower_bound: np.ndarray
    largest_example: np.ndarray


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


def shot_noise_credit(stats: ShotStatistics, *, jacobian: np.ndarray, loss_weights: np.ndarray,
                      mode: str, variance_floor: float = 0.0, z: float | None = None,
                      isotropic: bool = False) -> CreditResult:
    r"""Shot-noise variance credited per coordinate for one batch (see module docstring).

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
            :func:`confidence_multiplier`.
        isotropic: apply the minimum credit over coordinates to all of them.

    Returns:
        CreditResult: credit, estimate, bound and subtracted term, each of shape ``(K,)``.

    Raises:
        ValueError: for an unknown mode, a negative floor, a missing ``z``, several
            measurements or shot copies, or mismatched shapes.
        NotImplementedError: if a circuit enters several coordinates (correlated shot noise).

    References:
        Ngo et al., arXiv:2602.02962 (adaptive Q-ShiftDP); aggregation and the subtraction of
        the largest single-example term are derived here (``docs/noise.md``).

    Example:
        >>> from pennylane_qshiftdp.shot_statistics import ShotStatistics
        >>> st = ShotStatistics(shots=[100, 100], mean=[0.0, 0.0], variance=[1.0, 1.0],
        ...     fourth_moment=[1.0, 1.0], coefficient=[0.5, -0.5], trainable_param=[0, 0],
        ...     batch_index=[0, 1], shot_copy=[0, 0], measurement=[0, 0], tape_index=[0, 1])
        >>> r = shot_noise_credit(st, jacobian=np.eye(1), loss_weights=np.ones(2),
        ...                       mode="depolarizing", variance_floor=1.0)
        >>> r.lower_bound.tolist(), r.credit.tolist()
        ([0.005], [0.0025])
    """
    if mode not in CREDIT_MODES:
        raise ValueError(f"`mode` must be one of {CREDIT_MODES}. Found {mode!r}.")
    variance_floor = check_nonnegative_float(variance_floor, "variance_floor")
    jacobian = np.asarray(jacobian, dtype=float)
    loss_weights = np.asarray(loss_weights, dtype=float).reshape(-1)
    k = jacobian.shape[1]
    zeros = np.zeros(k)
    if mode == "none" or len(stats) == 0:
        return CreditResult(zeros, zeros.copy(), zeros.copy(), zeros.copy())
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
    floor_terms = w2a2 * variance_floor / shots
    num_examples = int(example.max()) + 1

    def per_example(terms):
        out = np.zeros((num_examples, k))
        np.add.at(out, example, terms)
        return out

    floor_j = per_example(floor_terms)
    if mode == "depolarizing":
        estimate = per_example(w2a2 * stats.variance[first][:, None] / shots).sum(axis=0)
        lower = floor_j.sum(axis=0)
        largest = floor_j.max(axis=0)
    else:
        if z is None:
            raise ValueError(f"`z` must be given for mode {mode!r}. Found None.")
        z = check_nonnegative_float(z, "z")
        var_terms = w2a2 * stats.variance[first][:, None] / shots
        vv = stats.variance_of_variance[first][:, None]
        se_terms = (w2a2 / shots) ** 2 * vv
        v_j, se2_j = per_example(var_terms), per_example(se_terms)
        estimate = v_j.sum(axis=0)
        lower = np.maximum(estimate - z * np.sqrt(se2_j.sum(axis=0)), floor_j.sum(axis=0))
        largest = np.maximum(v_j + z * np.sqrt(se2_j), floor_j).max(axis=0)
    credit = np.maximum(lower - largest, 0.0)
    if isotropic or mode == "isotropic":
        credit = np.full(k, credit.min())
    return CreditResult(credit, estimate, lower, largest)


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
