r"""Observables of the private transform: how each ``expval`` is estimated, and its range.

An observable with at most two eigenvalues (every Pauli word, scaled or shifted, projectors)
has two-valued single shots, so the shot statistics follow from the sample mean; a Pauli sum or
Hamiltonian is sampled term by term (:class:`ObservablePlan`). :func:`observable_range` is the
range of every shot estimate, the :math:`[\lambda_-, \lambda_+]` that bounds the released
gradient (``docs/transform.md``, "Estimator range"). :func:`check_measurements` refuses the
returns that have no parameter-shift gradient, and variances PennyLane's rule gets wrong.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pennylane as qml
from pennylane.measurements import ExpectationMP, ProbabilityMP, VarianceMP
from pennylane.pauli import PauliWord

from ..exceptions import UnsupportedMeasurementError

__all__ = ["observable_range"]

#: The transform's name in error messages.
TRANSFORM_NAME = "pennylane_qshiftdp.param_shift"
# Tolerance for treating two eigenvalues as equal when classifying an observable.
_EIGVAL_ATOL = 1e-10


@dataclasses.dataclass(frozen=True)
class ObservablePlan:
    """How one ``expval`` measurement is estimated and recorded."""

    kind: str  # "two_point" (keep expval) or "samples" (replace by sample(term) per term)
    lo: float  # smallest possible value of the shot estimator
    hi: float  # largest possible value of the shot estimator
    terms: tuple = ()  # observables to sample ("samples" only)
    coeffs: tuple = ()  # multiplier of each sampled term ("samples" only)


def _real(x) -> float:
    x = complex(qml.math.toarray(x))
    return x.real


def _eigen_range(obs) -> tuple[np.ndarray, float, float]:
    eig = np.real_if_close(np.asarray(qml.eigvals(obs)))
    eig = np.unique(np.round(np.real(eig), 12))
    return eig, float(eig.min()), float(eig.max())


def plan_for(obs) -> ObservablePlan:
    pauli_rep = obs.pauli_rep
    if pauli_rep is not None:
        identity = PauliWord({})
        c0 = _real(pauli_rep.get(identity, 0.0))
        others = [_real(c) for w, c in pauli_rep.items() if w != identity]
        spread = float(sum(abs(c) for c in others))
        if len(others) <= 1:
            return ObservablePlan("two_point", c0 - spread, c0 + spread)
    if isinstance(obs, qml.ops.Sum):
        if isinstance(obs, qml.ops.LinearCombination):
            coeffs, terms = obs.terms()
            coeffs = tuple(_real(c) for c in coeffs)
        else:
            terms, coeffs = tuple(obs.operands), (1.0,) * len(obs.operands)
        lo = hi = 0.0
        for c, term in zip(coeffs, terms, strict=True):
            _, t_lo, t_hi = _eigen_range(term)
            lo += min(c * t_lo, c * t_hi)
            hi += max(c * t_lo, c * t_hi)
        return ObservablePlan("samples", lo, hi, tuple(terms), coeffs)
    eig, lo, hi = _eigen_range(obs)
    if eig.size <= 2 or np.ptp(eig) < _EIGVAL_ATOL:
        return ObservablePlan("two_point", lo, hi)
    return ObservablePlan("samples", lo, hi, (obs,), (1.0,))


def observable_range(obs: qml.operation.Operator) -> tuple[float, float]:
    r"""Range :math:`[\lambda_-, \lambda_+]` of each shot estimate of :math:`\langle O\rangle`.

    For a single observable this is its smallest and largest eigenvalue. For a sum
    :math:`H = c_0 I + \sum_j c_j O_j` that devices estimate term by term, the estimator
    :math:`c_0 + \sum_j c_j \bar x_j` can reach :math:`c_0 \pm \sum_j |c_j|\,\|O_j\|`, which may
    exceed the spectrum of :math:`H` (``X + Z`` has eigenvalues :math:`\pm\sqrt 2` but estimates
    in :math:`[-2, 2]`); the wider range is the one that bounds the released gradient.

    Args:
        obs: a PennyLane observable.

    Returns:
        tuple[float, float]: ``(lam_min, lam_max)`` in the observable's units.

    Raises:
        TypeError: if ``obs`` is not a PennyLane operator.

    References:
        Derived here (``docs/transform.md``, "Estimator range").

    Example:
        >>> observable_range(qml.Z(0))
        (-1.0, 1.0)
        >>> observable_range(qml.X(0) + qml.Z(0))
        (-2.0, 2.0)
        >>> observable_range(qml.Hamiltonian([0.5, 2.0], [qml.Identity(0), qml.Z(0) @ qml.Z(1)]))
        (-1.5, 2.5)
    """
    if not isinstance(obs, qml.operation.Operator):
        raise TypeError(f"`obs` must be a PennyLane observable. Found {type(obs).__name__}.")
    plan = plan_for(obs)
    return plan.lo, plan.hi


# Largest number of wires for which a variance's observable is squared as a matrix.
_MAX_SQUARE_WIRES = 8


def _squares_to_scalar(obs) -> bool:
    """Whether ``obs @ obs`` is a multiple of the identity (then ∂⟨A²⟩ = 0)."""
    pauli_rep = obs.pauli_rep
    if pauli_rep is not None:
        square = pauli_rep @ pauli_rep
        square.simplify()
        identity = PauliWord({})
        return all(w == identity or abs(c) < _EIGVAL_ATOL for w, c in square.items())
    if len(obs.wires) > _MAX_SQUARE_WIRES:
        return False
    m = np.asarray(qml.matrix(obs))
    m2 = m @ m
    return bool(np.allclose(m2, m2[0, 0] * np.eye(len(m2)), atol=_EIGVAL_ATOL))


def _variance_rule_is_exact(obs) -> bool:
    r"""Whether PennyLane's variance rule is right for ``obs``.

    ``param_shift`` differentiates :math:`\mathrm{Var} A = \langle A^2\rangle -
    \langle A\rangle^2` with :math:`\partial\langle A^2\rangle` measured only for
    ``Hermitian``, ``SparseHamiltonian`` and ``Projector`` observables (or tensor products
    containing them, squared factor by factor) and set to 0 for every other observable, which
    is right only when :math:`A^2` is a multiple of the identity (Pauli words, scaled or not).
    PennyLane 0.45 also sets it to 0 for sums such as ``0.7 Z(0) + 0.4 X(1)`` (wrong by up to
    the full gradient of :math:`\langle A^2\rangle`); those are refused.
    """
    squared = qml.gradients.parameter_shift.NONINVOLUTORY_OBS
    if obs.name in squared:
        return True
    if isinstance(obs, qml.ops.Prod) and any(o.name in squared for o in obs):
        factors = list(obs)
        disjoint = sum(len(o.wires) for o in factors) == len(obs.wires)
        return disjoint and all(o.name in squared or _squares_to_scalar(o) for o in factors)
    return _squares_to_scalar(obs)


def check_measurements(tape) -> None:
    for mp in tape.measurements:
        if not isinstance(mp, (ExpectationMP, VarianceMP, ProbabilityMP)):
            raise UnsupportedMeasurementError(
                f"{TRANSFORM_NAME} cannot differentiate `{mp}`: only expval, var and probs "
                f"returns have a parameter-shift gradient (sample, counts and state do not)."
            )
        if isinstance(mp, VarianceMP) and mp.obs is not None and not _variance_rule_is_exact(
                mp.obs):
            raise UnsupportedMeasurementError(
                f"{TRANSFORM_NAME} cannot differentiate `{mp}`: PennyLane's variance rule "
                f"treats {mp.obs} as squaring to a multiple of the identity, which it does "
                f"not, so the gradient would be wrong. Supported: var of a Pauli word (scaled "
                f"or not) or of a qml.Hermitian / qml.Projector observable "
                f"(qml.Hermitian(qml.matrix(obs), wires=obs.wires) for this one), or expval of "
                f"any observable."
            )
