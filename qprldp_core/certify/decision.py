r"""Decide whether a channel is (ε, δ)-QLDP or -QPrLDP, from its certificates.

The answer is ``True`` or ``False`` only when a certificate proves it; otherwise the functions
raise :class:`NotImplementedError` rather than claim privacy they cannot prove.
"""

from __future__ import annotations

import numpy as np

from .._validation import DEFAULT_ATOL, check_epsilon, check_probability
from ..channels import Channel
from ..channels._checks import check_channel
from .certificates import qldp_certificate, qprldp_certificate

__all__ = ["is_qldp", "is_qprldp"]


def _decide(channel, epsilon, delta, notion, restarts, seed, max_iter, atol) -> bool:
    if delta >= 1.0:
        return True  # both quantities are probabilities / at most 1 for every pair
    fn = qldp_certificate if notion == "qldp" else qprldp_certificate
    cert = fn(channel, epsilon=epsilon, restarts=restarts, seed=seed, max_iter=max_iter, atol=atol)
    if cert.side == "exact":
        return cert.delta <= delta
    if cert.side == "upper_bound":
        if cert.delta <= delta:
            return True
        if cert.delta_lower is not None and cert.delta_lower > delta:
            return False
    elif cert.delta > delta:  # lower bound from the worst-case search
        return False
    name = "is_qldp" if notion == "qldp" else "is_qprldp"
    raise NotImplementedError(
        f"{name}: cannot decide for {channel.description} at epsilon={epsilon:.6g}, "
        f"delta={delta:.6g}: the best proven bounds are {cert} ."
    )


def is_qldp(
    channel: Channel,
    *,
    epsilon: float,
    delta: float,
    restarts: int = 8,
    seed: int | np.random.Generator | None = 0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> bool:
    r"""Decide whether ``channel`` is (ε, δ)-QLDP, or raise if that cannot be decided honestly.

    Depolarizing, unitary and bit-flip channels use the exact closed forms of
    :mod:`qprldp_core.certify`; local depolarizing uses its proven upper and lower bounds. For a
    general channel only a *refutation* is possible: if the worst-case search finds a pair with
    :math:`E_{e^\varepsilon} > \delta` the answer is ``False`` (with a witness); otherwise the
    function raises :class:`NotImplementedError` rather than claim privacy it cannot prove.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        epsilon: ε ≥ 0 in nats.
        delta: δ in [0, 1].
        restarts, seed, max_iter: passed to :func:`worst_case_search` for general channels.
        atol: numerical tolerance.

    Returns:
        True if proven (ε, δ)-QLDP, False if proven not.

    Raises:
        ValueError: for invalid ε or δ.
        NotImplementedError: if neither can be proven (general channel, or δ between the local
            depolarizing bounds).

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> is_qldp(depolarizing(0.5, 2), epsilon=0.5, delta=0.34)
        True
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability(delta, "delta")
    return _decide(check_channel(channel), epsilon, delta, "qldp", restarts, seed, max_iter, atol)


def is_qprldp(
    channel: Channel,
    *,
    epsilon: float,
    delta: float,
    restarts: int = 8,
    seed: int | np.random.Generator | None = 0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> bool:
    r"""Decide whether ``channel`` is (ε, δ)-QPrLDP, or raise if that cannot be decided honestly.

    Same policy as :func:`is_qldp`, with the violation probability in place of
    :math:`E_{e^\varepsilon}`.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        epsilon: ε ≥ 0 in nats.
        delta: δ in [0, 1].
        restarts, seed, max_iter: passed to :func:`worst_case_search` for general channels.
        atol: numerical tolerance.

    Returns:
        True if proven (ε, δ)-QPrLDP, False if proven not.

    Raises:
        ValueError: for invalid ε or δ.
        NotImplementedError: if neither can be proven.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> is_qprldp(depolarizing(0.5, 2), epsilon=0.5, delta=0.7)
        False
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability(delta, "delta")
    return _decide(
        check_channel(channel), epsilon, delta, "qprldp", restarts, seed, max_iter, atol
    )
