r"""QLDP and QPrLDP are not equivalent: a depolarizing channel with a strict gap at the same ε."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._validation import check_epsilon, check_probability, format_number
from ..certify import qldp_certificate
from ..channels import Channel, depolarizing
from ..divergences import violation_probability

__all__ = ["NonEquivalenceWitness", "non_equivalence_witness"]


@dataclass(frozen=True)
class NonEquivalenceWitness:
    r"""A channel whose QLDP :math:`\delta` is strictly below a QPrLDP violation at the same
    :math:`\varepsilon`.

    Attributes:
        channel: the global depolarizing channel :math:`D_p` on dimension ``d``.
        p, d, epsilon: its parameters (``epsilon`` in nats).
        qldp_delta: the exact QLDP :math:`\delta^*(\varepsilon)` (supremum over all pairs).
        rho, sigma: the input pair attaining the QPrLDP supremum.
        violation_probability: :math:`V_\varepsilon(D_p(\rho)\|D_p(\sigma))`, strictly larger
            than ``qldp_delta``.
    """

    channel: Channel
    p: float
    d: int
    epsilon: float
    qldp_delta: float
    rho: np.ndarray
    sigma: np.ndarray
    violation_probability: float


def non_equivalence_witness(
    *, p: float = 0.5, d: int = 2, epsilon: float = 0.5
) -> NonEquivalenceWitness:
    r"""Show that QLDP and QPrLDP are not equivalent at the same :math:`(\varepsilon, \delta)`.

    For :math:`D_p` on dimension :math:`d` with :math:`\varepsilon < \varepsilon_0`, the exact QLDP
    parameter is :math:`\delta^*_{\rm QLDP} = (1-p) - (e^\varepsilon - 1)p/d`, while the pair
    :math:`\rho = ` uniform on :math:`k^*` basis states, :math:`\sigma = |k^*\rangle\langle k^*|`
    has violation probability :math:`(1-p) + pk^*/d > \delta^*_{\rm QLDP}` (``docs/qprldp.md`` §3).
    At the default :math:`(p, d, \varepsilon) = (0.5, 2, 0.5)`: 0.337820 vs 0.75. So
    :math:`D_p` is :math:`(\varepsilon, 0.33782)`-QLDP but not :math:`(\varepsilon, 0.7)`-QPrLDP.

    Args:
        p: depolarizing parameter in (0, 1) of :math:`D_p(\rho) = (1-p)\rho + pI/d`.
        d: dimension :math:`\ge 2`.
        epsilon: :math:`\varepsilon \ge 0` (nats), below :math:`\varepsilon_0 = \ln(1 + d(1-p)/p)`.

    Returns:
        :class:`NonEquivalenceWitness`.

    Raises:
        ValueError: if ``p`` is not in (0, 1), ``d < 2`` or ``epsilon >= epsilon_0`` (then both
            parameters are 0 and no strict gap exists).

    References:
        Shi, arXiv:2607.06307 (abstract: "the two notions are not equivalent"); closed forms
        derived here (``docs/qprldp.md`` §3).

    Example:
        >>> w = non_equivalence_witness()
        >>> round(w.qldp_delta, 6), round(w.violation_probability, 6)
        (0.33782, 0.75)
    """
    p = check_probability(p, "p")
    if not 0.0 < p < 1.0:
        raise ValueError(f"`p` must be in (0, 1). Found {format_number(p)}.")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2:
        raise ValueError(f"`d` must be an integer >= 2. Found {d!r}.")
    d = int(d)
    epsilon = check_epsilon(epsilon)
    eps0 = math.log1p(d * (1 - p) / p)
    if epsilon >= eps0:
        raise ValueError(
            f"`epsilon` must be < epsilon_0 = {format_number(eps0)}. "
            f"Found {format_number(epsilon)}."
        )
    channel = depolarizing(p, d)
    denom = math.expm1(epsilon) * p  # 0 for ε = 0 and for subnormal ε (underflow)
    x = d * (1 - p) / denom if denom > 0 else math.inf
    k = d - 1 if math.isinf(x) else min(d - 1, math.ceil(x) - 1)
    k = max(k, 1)
    rho = np.zeros((d, d), dtype=np.complex128)
    rho[np.arange(k), np.arange(k)] = 1.0 / k
    sigma = np.zeros((d, d), dtype=np.complex128)
    sigma[k, k] = 1.0
    v = float(violation_probability(channel(rho), channel(sigma), epsilon=epsilon))
    qldp = float(qldp_certificate(channel, epsilon=epsilon).delta)
    return NonEquivalenceWitness(channel, p, d, epsilon, qldp, rho, sigma, v)
