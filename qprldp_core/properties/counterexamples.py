r"""QPrLDP is neither convex nor closed under post-processing: two executable counterexamples.

QLDP, by contrast, is convex and closed under post-processing (data processing of
:math:`E_\gamma`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..channels import Channel, bit_flip, measure_prepare_channel
from ..divergences import violation_probability

__all__ = [
    "NonConvexityWitness",
    "PostProcessingWitness",
    "non_convexity_witness",
    "post_processing_counterexample",
]


@dataclass(frozen=True)
class NonConvexityWitness:
    r"""Two :math:`(\varepsilon,\delta)`-QPrLDP channels whose equal mixture is not.

    Attributes:
        epsilon, delta: the privacy parameters (nats; :math:`\delta > 0`).
        channel_a, channel_b: the two channels, each :math:`(\varepsilon,\delta)`-QPrLDP (proof
            in ``docs/qprldp.md`` §4.6).
        weight: mixture weight :math:`\lambda`; the mixture is
            :math:`\lambda\mathcal A + (1-\lambda)\mathcal B`.
        mixture: the mixed channel.
        rho, sigma: input pair violating the mixture's :math:`(\varepsilon,\delta)`-QPrLDP.
        violation_probability: :math:`V_\varepsilon` of the mixture on the pair (> ``delta``).
    """

    epsilon: float
    delta: float
    channel_a: Channel
    channel_b: Channel
    weight: float
    mixture: Channel
    rho: np.ndarray
    sigma: np.ndarray
    violation_probability: float


# Hard-coded witness parameters (derived here, docs/qprldp.md §4.6): ε = 1, δ = 0.1, and a
# randomized-response channel with ratio γ_B = 2.5 < e.
_NC_EPSILON = 1.0
_NC_DELTA = 0.1
_NC_GAMMA_B = 2.5


def _leaky_channel(delta: float) -> Channel:
    # W(.|0) = (δ, 1 − δ), W(.|1) = (0, 1): QPrLDP δ exactly δ for δ < 1 − e^{−ε}.
    return measure_prepare_channel([[delta, 0.0], [1.0 - delta, 1.0]])


def _randomized_response(gamma: float) -> Channel:
    a = gamma / (1.0 + gamma)
    return measure_prepare_channel([[a, 1.0 - a], [1.0 - a, a]])


def non_convexity_witness() -> NonConvexityWitness:
    r"""Two :math:`(1, 0.1)`-QPrLDP qubit channels whose equal mixture is not
    :math:`(1, 0.1)`-QPrLDP.

    Channel A measures in the computational basis and outputs :math:`|0\rangle` with probability
    0.1 on input 0 and never on input 1: its output on :math:`\rho` is
    :math:`\mathrm{diag}(0.1a, 1 - 0.1a)`, :math:`a = \rho_{00}`, and only outcome 0 can be
    violated, with mass at most 0.1. Channel B is randomized response with likelihood ratio
    :math:`2.5 < e`, hence :math:`(1, 0)`-QPrLDP. Their equal mixture on
    :math:`\rho = |0\rangle\langle 0|, \sigma = |1\rangle\langle 1|` has outcome-0 likelihood ratio
    :math:`(0.1 + 2.5/3.5)/(1/3.5) = 2.85 > e`, violated with mass
    :math:`(0.1 + 2.5/3.5)/2 = 0.407143 > 0.1` (derived here, ``docs/qprldp.md`` §4.6).

    Returns:
        :class:`NonConvexityWitness`.

    References:
        Shi, arXiv:2607.06307 (abstract: "the set of QPrLDP channels is not convex for δ > 0");
        this witness is constructed here.

    Example:
        >>> w = non_convexity_witness()
        >>> w.delta, round(w.violation_probability, 6)
        (0.1, 0.407143)
    """
    a = _leaky_channel(_NC_DELTA)
    b = _randomized_response(_NC_GAMMA_B)
    lam = 0.5
    mix = Channel([math.sqrt(lam) * k for k in a.kraus] + [math.sqrt(1 - lam) * k for k in b.kraus])
    rho = np.diag([1.0, 0.0]).astype(np.complex128)
    sigma = np.diag([0.0, 1.0]).astype(np.complex128)
    v = float(violation_probability(mix(rho), mix(sigma), epsilon=_NC_EPSILON))
    return NonConvexityWitness(_NC_EPSILON, _NC_DELTA, a, b, lam, mix, rho, sigma, v)


@dataclass(frozen=True)
class PostProcessingWitness:
    r"""A QPrLDP channel whose post-processing by a bit flip raises the violation probability.

    Attributes:
        epsilon, delta: :math:`(\varepsilon,\delta)` of ``channel`` (exact QPrLDP supremum).
        channel: the :math:`(\varepsilon,\delta)`-QPrLDP channel :math:`\mathcal A`.
        flip_probability: :math:`q` of the bit flip :math:`\mathcal N(\rho)=(1-q)\rho + qX\rho X`.
        composed: :math:`\mathcal N\circ\mathcal A`.
        rho, sigma: input pair.
        violation_probability: :math:`V_\varepsilon` of ``composed`` on the pair (> ``delta``).
    """

    epsilon: float
    delta: float
    channel: Channel
    flip_probability: float
    composed: Channel
    rho: np.ndarray
    sigma: np.ndarray
    violation_probability: float


_PP_FLIP = 0.02


def post_processing_counterexample() -> PostProcessingWitness:
    r"""QPrLDP is not closed under post-processing: a bit flip (identity/X mixture) after a
    :math:`(1, 0.1)`-QPrLDP channel.

    :math:`\mathcal A` is channel A of :func:`non_convexity_witness` (exact QPrLDP
    :math:`\delta = 0.1` at :math:`\varepsilon = 1`). After :math:`\mathcal N(\rho) = 0.98\rho +
    0.02X\rho X`, the pair :math:`|0\rangle, |1\rangle` gives outputs
    :math:`\mathrm{diag}(0.116, 0.884)` and :math:`\mathrm{diag}(0.02, 0.98)`; outcome 0 has ratio
    :math:`5.8 > e` and mass :math:`0.116 > 0.1` (derived here, ``docs/qprldp.md`` §4.7). QLDP, by
    contrast, is closed under post-processing (data processing of :math:`E_\gamma`).

    Returns:
        :class:`PostProcessingWitness`.

    References:
        Shi, arXiv:2607.06307 (abstract: identity and bit-flip mixture counterexample); this
        instance is constructed here.

    Example:
        >>> w = post_processing_counterexample()
        >>> w.delta, round(w.violation_probability, 6)
        (0.1, 0.116)
    """
    a = _leaky_channel(_NC_DELTA)
    n = bit_flip(_PP_FLIP)
    comp = n.compose(a)
    rho = np.diag([1.0, 0.0]).astype(np.complex128)
    sigma = np.diag([0.0, 1.0]).astype(np.complex128)
    v = float(violation_probability(comp(rho), comp(sigma), epsilon=_NC_EPSILON))
    return PostProcessingWitness(_NC_EPSILON, _NC_DELTA, a, _PP_FLIP, comp, rho, sigma, v)
