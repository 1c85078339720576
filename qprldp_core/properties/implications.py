r"""QPrLDP implies QLDP with the same parameters, and QLDP implies QPrLDP at a larger ε.

For :math:`\rho' = \mathcal A(\rho)`, :math:`\sigma' = \mathcal A(\sigma)` and
:math:`\gamma = e^\varepsilon`: :math:`E_\gamma(\rho'\|\sigma') \le V_\varepsilon(\rho'\|\sigma')`
for every pair, and for :math:`\varepsilon' > \varepsilon`, :math:`V_{\varepsilon'} \le
E_{e^\varepsilon}\,e^{\varepsilon'}/(e^{\varepsilon'} - e^{\varepsilon})` (``docs/qprldp.md``
§4.1-4.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from numpy.typing import ArrayLike

from .._numerics import round_up
from .._validation import DEFAULT_ATOL, check_epsilon, format_number
from ..channels import Channel
from ..divergences import hockey_stick_divergence, violation_probability
from ._common import channel_outputs, check_delta

__all__ = [
    "ImplicationWitness",
    "ConverseWitness",
    "qprldp_implies_qldp",
    "qldp_to_qprldp_delta",
    "qldp_implies_qprldp",
]


@dataclass(frozen=True)
class ImplicationWitness:
    r"""Witness of :math:`E_{e^\varepsilon}(\rho'\|\sigma') \le V_\varepsilon(\rho'\|\sigma')`.

    Attributes:
        epsilon: privacy parameter :math:`\varepsilon` (nats).
        hockey_stick: :math:`E_{e^\varepsilon}(\mathcal A(\rho)\|\mathcal A(\sigma))` (QLDP side).
        violation_probability: :math:`V_\varepsilon(\mathcal A(\rho)\|\mathcal A(\sigma))`
            (QPrLDP side).
        holds: whether ``hockey_stick <= violation_probability`` within the tolerance.
    """

    epsilon: float
    hockey_stick: float
    violation_probability: float
    holds: bool


def qprldp_implies_qldp(
    channel: Channel,
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    atol: float = DEFAULT_ATOL,
) -> ImplicationWitness:
    r"""Check QPrLDP :math:`\Rightarrow` QLDP (same :math:`(\varepsilon,\delta)`) on one input pair.

    With :math:`\Pi = \Pi\{\rho' - \gamma\sigma' > 0\}`,

    .. math::
        E_\gamma(\rho'\|\sigma') = \mathrm{Tr}[(\rho' - \gamma\sigma')\Pi]
        \le \mathrm{Tr}[\rho'\Pi] = V_\varepsilon(\rho'\|\sigma'),

    because :math:`\gamma\,\mathrm{Tr}[\sigma'\Pi] \ge 0`. Taking the supremum over pairs gives the
    implication (derived here, see ``docs/qprldp.md`` §4.1).

    Args:
        channel: the channel :math:`\mathcal A`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: :math:`\varepsilon \ge 0` in nats.
        atol: tolerance passed to the validators and divergences.

    Returns:
        :class:`ImplicationWitness`.

    Raises:
        ValueError: if a state is invalid or ``epsilon`` is negative.

    References:
        Shi, arXiv:2607.06307 (abstract: "QPrLDP implies QLDP"); proof derived here.

    Example:
        >>> import numpy as np
        >>> from qprldp_core.channels import depolarizing
        >>> w = qprldp_implies_qldp(depolarizing(0.5, 2), np.diag([1.0, 0]), np.diag([0, 1.0]),
        ...                         epsilon=0.5)
        >>> round(w.hockey_stick, 6), round(w.violation_probability, 6), w.holds
        (0.33782, 0.75, True)
    """
    epsilon = check_epsilon(epsilon)
    rp, sp = channel_outputs(channel, rho, sigma, atol)
    e = hockey_stick_divergence(rp, sp, gamma=math.exp(epsilon), atol=atol)
    v = violation_probability(rp, sp, epsilon=epsilon, atol=atol)
    # Eigenvalues in (0, atol] may be kept by one routine and dropped by the other.
    slack = rp.shape[0] * max(atol, 1e-12)
    return ImplicationWitness(float(epsilon), float(e), float(v), bool(e <= v + slack))


def qldp_to_qprldp_delta(*, epsilon: float, delta: float, epsilon_prime: float) -> float:
    r"""QPrLDP parameter implied by QLDP: :math:`(\varepsilon,\delta)`-QLDP :math:`\Rightarrow`
    :math:`(\varepsilon', \delta')`-QPrLDP.

    .. math::
        \delta' = \min\Bigl(1, \frac{\delta\, e^{\varepsilon'}}{e^{\varepsilon'} - e^{\varepsilon}}
        \Bigr), \qquad \varepsilon' > \varepsilon.

    Derived here (``docs/qprldp.md`` §4.2): on
    :math:`\Pi = \Pi\{\rho' - e^{\varepsilon'}\sigma' > 0\}`,
    :math:`\mathrm{Tr}[\sigma'\Pi] \le e^{-\varepsilon'}\mathrm{Tr}[\rho'\Pi]` and
    :math:`\mathrm{Tr}[\rho'\Pi] - e^{\varepsilon}\mathrm{Tr}[\sigma'\Pi] \le \delta`, so
    :math:`\mathrm{Tr}[\rho'\Pi](1 - e^{\varepsilon - \varepsilon'}) \le \delta`.

    Args:
        epsilon: QLDP :math:`\varepsilon \ge 0` (nats).
        delta: QLDP :math:`\delta \in [0, 1]`.
        epsilon_prime: target :math:`\varepsilon' > \varepsilon` (nats).

    Returns:
        :math:`\delta' \in [0, 1]`, rounded up.

    Raises:
        ValueError: if ``epsilon_prime <= epsilon`` or a parameter is out of range.

    References:
        Shi, arXiv:2607.06307 (abstract: "the converse holds after a change of parameters");
        the formula and proof are derived here.

    Example:
        >>> round(qldp_to_qprldp_delta(epsilon=0.5, delta=0.1, epsilon_prime=1.0), 6)
        0.254149
    """
    epsilon = check_epsilon(epsilon)
    epsilon_prime = check_epsilon(epsilon_prime, "epsilon_prime")
    delta = check_delta(delta)
    if not epsilon_prime > epsilon:
        raise ValueError(
            f"`epsilon_prime` must be > `epsilon` = {format_number(epsilon)}. "
            f"Found {format_number(epsilon_prime)}."
        )
    if delta == 0.0:
        return 0.0
    # e^{ε'}/(e^{ε'} - e^{ε}) = 1 / (1 - e^{ε - ε'}) = -1/expm1(ε - ε'), stable for ε' ≈ ε.
    return min(1.0, round_up(delta / -math.expm1(epsilon - epsilon_prime)))


@dataclass(frozen=True)
class ConverseWitness:
    r"""Witness of :math:`V_{\varepsilon'}(\rho'\|\sigma') \le
    E_{e^\varepsilon}(\rho'\|\sigma')\,e^{\varepsilon'}/(e^{\varepsilon'} - e^\varepsilon)`.

    Attributes:
        epsilon, epsilon_prime: the two privacy parameters (nats), ``epsilon_prime > epsilon``.
        hockey_stick: :math:`E_{e^\varepsilon}(\rho'\|\sigma')`.
        violation_probability: :math:`V_{\varepsilon'}(\rho'\|\sigma')`.
        bound: the right-hand side, capped at 1.
        holds: whether ``violation_probability <= bound`` within the tolerance.
    """

    epsilon: float
    epsilon_prime: float
    hockey_stick: float
    violation_probability: float
    bound: float
    holds: bool


def qldp_implies_qprldp(
    channel: Channel,
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    epsilon_prime: float,
    atol: float = DEFAULT_ATOL,
) -> ConverseWitness:
    r"""Check the converse with a change of parameters on one input pair.

    .. math::
        V_{\varepsilon'}(\rho'\|\sigma') \le
        \frac{e^{\varepsilon'}}{e^{\varepsilon'} - e^{\varepsilon}}
        E_{e^\varepsilon}(\rho'\|\sigma'), \qquad \varepsilon' > \varepsilon,

    the pairwise form of :func:`qldp_to_qprldp_delta` (derived here, ``docs/qprldp.md`` §4.2).

    Args:
        channel: the channel :math:`\mathcal A`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        epsilon_prime: :math:`\varepsilon' > \varepsilon` (nats).
        atol: tolerance passed to the validators and divergences.

    Returns:
        :class:`ConverseWitness`.

    Raises:
        ValueError: if ``epsilon_prime <= epsilon`` or an input is invalid.

    References:
        Shi, arXiv:2607.06307 (statement announced in the abstract); proof derived here.

    Example:
        >>> import numpy as np
        >>> from qprldp_core.channels import depolarizing
        >>> w = qldp_implies_qprldp(depolarizing(0.5, 2), np.diag([1.0, 0]), np.diag([0, 1.0]),
        ...                         epsilon=0.5, epsilon_prime=1.0)
        >>> round(w.violation_probability, 6), round(w.bound, 6), w.holds
        (0.75, 0.858567, True)
    """
    epsilon = check_epsilon(epsilon)
    epsilon_prime = check_epsilon(epsilon_prime, "epsilon_prime")
    if not epsilon_prime > epsilon:
        raise ValueError(
            f"`epsilon_prime` must be > `epsilon` = {format_number(epsilon)}. "
            f"Found {format_number(epsilon_prime)}."
        )
    rp, sp = channel_outputs(channel, rho, sigma, atol)
    e = float(hockey_stick_divergence(rp, sp, gamma=math.exp(epsilon), atol=atol))
    v = float(violation_probability(rp, sp, epsilon=epsilon_prime, atol=atol))
    bound = qldp_to_qprldp_delta(epsilon=epsilon, delta=min(1.0, max(0.0, e)),
                                 epsilon_prime=epsilon_prime)
    slack = rp.shape[0] * max(atol, 1e-12) / -math.expm1(epsilon - epsilon_prime)
    return ConverseWitness(epsilon, epsilon_prime, e, v, bound, bool(v <= bound + slack))
