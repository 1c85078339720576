r"""QLDP and QPrLDP quantities of a channel on one pair of input states."""

from __future__ import annotations

import math

from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, check_density_matrix, check_epsilon
from ..channels import Channel
from ..channels._checks import check_channel
from ..divergences import hockey_stick_divergence, violation_probability

__all__ = ["qldp_value", "qprldp_value"]


def _inputs(channel: Channel, rho, sigma, atol):
    r = check_density_matrix(rho, "rho", atol=atol)
    s = check_density_matrix(sigma, "sigma", atol=atol)
    for name, a in (("rho", r), ("sigma", s)):
        if a.shape[0] != channel.input_dim:
            raise ValueError(
                f"`{name}` must have the channel's input dimension {channel.input_dim}. "
                f"Found shape {a.shape}."
            )
    return r, s


def qldp_value(
    channel: Channel,
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    atol: float = DEFAULT_ATOL,
) -> float:
    r"""QLDP quantity of a pair: :math:`E_{e^\varepsilon}(\mathcal A(\rho)\|\mathcal A(\sigma))`.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: ε ≥ 0 in nats.
        atol: tolerance of the density-matrix checks.

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if a state is invalid or has the wrong dimension, or ε < 0.

    References:
        Hirche, Rouzé, França, arXiv:2202.10717 (v2), Def. 3.1.

    Example:
        >>> import numpy as np
        >>> from qprldp_core.channels import depolarizing
        >>> rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
        >>> round(qldp_value(depolarizing(0.5, 2), rho, sigma, epsilon=0.5), 6)
        0.33782
    """
    channel = check_channel(channel)
    epsilon = check_epsilon(epsilon)
    r, s = _inputs(channel, rho, sigma, atol)
    return hockey_stick_divergence(
        channel(r), channel(s), gamma=math.exp(epsilon), atol=max(atol, 1e-7)
    )


def qprldp_value(
    channel: Channel,
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    atol: float = DEFAULT_ATOL,
) -> float:
    r"""QPrLDP quantity of a pair (violation probability of the outputs).

    .. math::

        \mathrm{Tr}\big[\mathcal A(\rho)\,\Pi\{\mathcal A(\rho) - e^\varepsilon\mathcal A(\sigma)
        > 0\}\big].

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: ε ≥ 0 in nats.
        atol: tolerance of the density-matrix checks and of the eigenvalue sign (see
            :func:`~qprldp_core.divergences.violation_probability`).

    Returns:
        Value in [0, 1].

    Raises:
        ValueError: if a state is invalid or has the wrong dimension, or ε < 0.

    References:
        Shi, arXiv:2607.06307, definition of QPrLDP.

    Example:
        >>> import numpy as np
        >>> from qprldp_core.channels import depolarizing
        >>> rho, sigma = np.diag([1.0, 0.0]), np.diag([0.0, 1.0])
        >>> qprldp_value(depolarizing(0.5, 2), rho, sigma, epsilon=0.5)
        0.75
    """
    channel = check_channel(channel)
    epsilon = check_epsilon(epsilon)
    r, s = _inputs(channel, rho, sigma, atol)
    return violation_probability(channel(r), channel(s), epsilon=epsilon, atol=atol)
