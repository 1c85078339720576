r"""The CPTP range of :math:`\mathcal D_p` and converters from PennyLane's and toqito's parameters.

PennyLane's single-qubit ``qml.DepolarizingChannel(q)`` is :math:`\mathcal D_p` with
:math:`p = 4q/3`; toqito's ``depolarizing(d, param)`` is :math:`\mathcal D_p` with
``param = 1 - p``. A value within :data:`PARAM_ATOL` outside a range is clamped onto its end.
"""

from __future__ import annotations

from .._validation import check_real, format_number
from ._checks import PARAM_ATOL, check_depolarizing_p, check_dimension, clamp_to_range

__all__ = [
    "depolarizing_p_from_pennylane",
    "depolarizing_p_to_pennylane",
    "depolarizing_p_from_toqito",
    "depolarizing_p_to_toqito",
    "depolarizing_p_max",
    "PARAM_ATOL",
]


def depolarizing_p_max(d: int) -> float:
    r"""Largest p for which :math:`\mathcal D_p` on dimension d is CPTP: :math:`d^2/(d^2-1)`.

    Args:
        d: dimension, integer ≥ 2.

    Returns:
        :math:`d^2/(d^2 - 1)`.

    Example:
        >>> depolarizing_p_max(2)
        1.3333333333333333
    """
    d = check_dimension(d, "d")
    return d * d / (d * d - 1.0)


def depolarizing_p_from_pennylane(q: float) -> float:
    r"""Convert PennyLane's single-qubit ``DepolarizingChannel(q)`` to p: :math:`p = 4q/3`.

    PennyLane's Kraus form is :math:`(1-q)\rho + \tfrac q3(X\rho X + Y\rho Y + Z\rho Z)
    = (1 - \tfrac{4q}{3})\rho + \tfrac{4q}{3}\tfrac I2`.

    Args:
        q: PennyLane's parameter in [0, 1]; a value within :data:`PARAM_ATOL` outside the range
            is clamped onto its end.

    Returns:
        p in [0, 4/3] (exactly :func:`depolarizing_p_max` (2) for q = 1).

    Raises:
        ValueError: if q is outside [0, 1] by more than :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_from_pennylane(0.75)
        1.0
        >>> depolarizing_p_from_pennylane(1 + 1e-15) == depolarizing_p_max(2)
        True
    """
    q = check_real(q, "q")
    q_in = clamp_to_range(q, 0.0, 1.0)
    if q_in is None:
        raise ValueError(f"`q` must be in [0, 1]. Found {format_number(q)}.")
    return min(4.0 * q_in / 3.0, depolarizing_p_max(2))


def depolarizing_p_to_pennylane(p: float) -> float:
    r"""Inverse of :func:`depolarizing_p_from_pennylane`: :math:`q = 3p/4`.

    Args:
        p: single-qubit depolarizing probability in [0, 4/3]; a value within :data:`PARAM_ATOL`
            outside the range is clamped onto its end.

    Returns:
        PennyLane's q in [0, 1].

    Raises:
        ValueError: if p is outside [0, 4/3] by more than :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_to_pennylane(1.0)
        0.75
        >>> depolarizing_p_to_pennylane(4 / 3)
        1.0
    """
    p = check_depolarizing_p(p, 2)
    return min(1.0, 3.0 * p / 4.0)


def depolarizing_p_from_toqito(param: float, d: int = 2) -> float:
    r"""Convert toqito's ``depolarizing(d, param)`` to p: :math:`p = 1 - \mathrm{param}`.

    toqito's channel is :math:`\mathrm{param}\cdot\rho + (1-\mathrm{param}) I/d`.

    Args:
        param: toqito's parameter; the CPTP range is :math:`[1 - d^2/(d^2-1), 1] =
            [-1/(d^2-1), 1]`. A value within :data:`PARAM_ATOL` outside it (e.g. ``-1/3`` for
            d = 2, which double precision puts an ulp below ``1 - 4/3``) is clamped onto its end.
        d: dimension (only used for the range check).

    Returns:
        p in :math:`[0, d^2/(d^2-1)]`; exactly :func:`depolarizing_p_max` (d) at the lower end.

    Raises:
        ValueError: if the resulting p is outside the CPTP range by more than
            :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_from_toqito(0.7)
        0.30000000000000004
        >>> depolarizing_p_from_toqito(-1 / 3, 2) == depolarizing_p_max(2)
        True
    """
    param = check_real(param, "param")
    d = check_dimension(d, "d")
    pmax = d * d / (d * d - 1.0)
    lo = -1.0 / (d * d - 1.0)  # = 1 - pmax, written without cancellation
    param_in = clamp_to_range(param, lo, 1.0)
    if param_in is None:
        raise ValueError(
            f"`param` must be in [{lo:.6g}, 1] (toqito's CPTP range for d={d}). "
            f"Found {format_number(param)}."
        )
    if param_in == lo:
        return pmax  # the exact boundary, whatever rounding 1 - lo would add
    return min(max(1.0 - param_in, 0.0), pmax)


def depolarizing_p_to_toqito(p: float, d: int = 2) -> float:
    r"""Inverse of :func:`depolarizing_p_from_toqito`: ``param = 1 - p``.

    Args:
        p: depolarizing probability in :math:`[0, d^2/(d^2-1)]`; a value within
            :data:`PARAM_ATOL` outside the range is clamped onto its end.
        d: dimension.

    Returns:
        toqito's parameter in :math:`[-1/(d^2-1), 1]` (exactly ``-1/(d**2 - 1)`` at the end).

    Raises:
        ValueError: if p is outside the CPTP range by more than :data:`PARAM_ATOL`.

    Example:
        >>> depolarizing_p_to_toqito(0.25)
        0.75
        >>> depolarizing_p_to_toqito(4 / 3, 2)
        -0.3333333333333333
    """
    d = check_dimension(d, "d")
    p = check_depolarizing_p(p, d)
    lo = -1.0 / (d * d - 1.0)
    if p == d * d / (d * d - 1.0):
        return lo  # the exact boundary -1/(d^2 - 1), not 1 - pmax with its cancellation
    return max(1.0 - p, lo)
