r"""The smallest ε (nats) for which a channel is certified (ε, δ)-QLDP or -QPrLDP."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from .._validation import DEFAULT_ATOL, check_probability
from ..channels import Channel
from ..channels._checks import check_channel
from ._depolarizing import TIE_RTOL, p_eff_qubit
from ._dispatch import certificate_for
from ._local_depolarizing import local_threshold

__all__ = ["qldp_epsilon", "qprldp_epsilon"]


def _certified_upper(channel, eps: float, notion: str) -> float | None:
    """A proven upper bound on δ*(ε), or None if none is available."""
    cert = certificate_for(channel, eps, notion, 1, 0, 1, DEFAULT_ATOL)
    return cert.delta if cert.side in ("exact", "upper_bound") else None


def _le(value: float | None, delta: float) -> bool:
    """value ≤ delta up to a relative TIE_RTOL (so a δ* computed 1 ulp above δ still counts).

    ``value`` is a certified upper bound: never None for the channels that reach the callers.
    """
    return cast(float, value) <= delta * (1.0 + TIE_RTOL)


def _recheck_up(channel, eps: float, delta: float, notion: str) -> float:
    """Return the smallest of eps, nextafter(eps), ... whose certified δ is ≤ delta."""
    for _ in range(64):
        if _le(_certified_upper(channel, eps, notion), delta):
            return eps
        eps = max(np.nextafter(eps, math.inf), eps * (1 + 1e-15))
    return math.inf  # pragma: no cover - not reached for the closed forms


def _smallest_epsilon(channel, delta: float, notion: str) -> float:
    channel = check_channel(channel)
    kind, prm = channel.kind, channel.params
    desc = channel.description
    name = f"{notion.lower()}_epsilon"
    if channel.input_dim == 1 or channel.output_dim == 1:
        return 0.0
    if kind in ("unitary", "bit_flip"):
        return 0.0 if delta >= 1.0 else math.inf
    if kind == "local_depolarizing" and prm["n"] == 1:  # one qubit: the global channel's
        kind, prm = "depolarizing", {"p": prm["p"], "d": 2}  # closed form, not a bisection
    if kind == "depolarizing" and (prm["p"] <= 1.0 or prm["d"] == 2):
        d = prm["d"]
        p = p_eff_qubit(prm["p"]) if d == 2 else prm["p"]
        if p == 0.0:
            return 0.0 if delta >= 1.0 else math.inf
        if notion == "QLDP":
            # invert δ = (1 − p) − (e^ε − 1)p/d
            eps = math.log1p(d * max(0.0, 1.0 - p - delta) / p)
        else:
            if _le((1.0 - p) + p * (d - 1) / d, delta):
                eps = 0.0
            else:
                kmax = math.floor((delta - (1.0 - p)) * d / p * (1 + TIE_RTOL))
                kmax = min(kmax, d - 1)
                eps = math.log1p(d * (1.0 - p) / (p * (max(kmax, 0) + 1)))
        return _recheck_up(channel, eps, delta, notion)
    if kind == "local_depolarizing":
        pe = p_eff_qubit(prm["p"])
        if pe == 0.0:
            return 0.0 if delta >= 1.0 else math.inf
        thr = hi = local_threshold(pe, prm["n"])  # ε₀: the pure-QLDP ε, where δ* reaches 0
        lo = 0.0
        if _le(_certified_upper(channel, 0.0, notion), delta):
            return 0.0
        # bisection; invariant: certified δ(hi) ≤ delta < certified δ(lo), compared strictly
        # (no TIE_RTOL window: accepting a δ up to 1e-12 above delta let hi end up to 1e-11
        # below the exact ε, on the side of less privacy loss); the high end is returned
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            upper = _certified_upper(channel, mid, notion)
            if upper is not None and upper <= delta:
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-12 * max(1.0, hi):
                break
        if hi >= thr * (1.0 - TIE_RTOL):
            # inside the certificate's tie window below ε₀ (where it reports δ = 0): the exact
            # ε may be ε₀ itself, so ε₀ is returned, rounded up by a few ulps (its closed form
            # n ln((2 − p)/p) evaluated in floats differs from others by about one)
            hi = thr
            for _ in range(4):
                hi = math.nextafter(hi, math.inf)
        return _recheck_up(channel, hi, delta, notion)
    raise NotImplementedError(
        f"{name}: no certified upper bound on delta for {desc}; use "
        "qprldp_core.privacy.worst_case_search for lower bounds."
    )


def qldp_epsilon(channel: Channel, *, delta: float) -> float:
    r"""Smallest ε (nats) for which ``channel`` is certified (ε, δ)-QLDP.

    Global depolarizing inverts the closed form,
    :math:`\varepsilon = \ln(1 + d\max(0, 1-p-\delta)/p)` (one qubit of local depolarizing too);
    local depolarizing on n ≥ 2 qubits bisects its proven upper bound, comparing the certified
    δ with ``delta`` strictly, and returns the high end of the bracket (the side of more privacy
    loss; within the certificate's 1e-12 tie window below the pure threshold
    :math:`\varepsilon_0 = n\ln((2-p)/p)`, :math:`\varepsilon_0` rounded up). The result is
    re-checked against the certificate (and moved up by ulps if rounding requires), so it is an
    upper bound on the exact smallest ε; the re-check accepts a certified δ up to a relative
    1e-12 above ``delta`` (floating rounding of the closed form, e.g. 0.9 + 0.05 =
    0.9500000000000001). ``math.inf`` if no finite ε works (e.g. identity channel, δ < 1).

    Args:
        channel: a depolarizing, local depolarizing, unitary or bit-flip
            :class:`~qprldp_core.channels.Channel`.
        delta: δ in [0, 1].

    Returns:
        ε ≥ 0 in nats (possibly ``math.inf``).

    Raises:
        ValueError: if δ is outside [0, 1].
        NotImplementedError: for channels without a certified bound (general channels).

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> round(qldp_epsilon(depolarizing(0.5, 2), delta=0.337820), 4)
        0.5
    """
    delta = check_probability(delta, "delta")
    return _smallest_epsilon(channel, delta, "QLDP")


def qprldp_epsilon(channel: Channel, *, delta: float) -> float:
    r"""Smallest ε (nats) for which ``channel`` is certified (ε, δ)-QPrLDP.

    Global depolarizing (derived here): the QPrLDP δ* is a step function; with
    :math:`k_{\max} = \lfloor (\delta - (1-p))d/p\rfloor` (capped at d − 1), the answer is 0 if
    :math:`\delta \ge (1-p) + p(d-1)/d`, :math:`\varepsilon_0` if :math:`k_{\max} < 1`, else
    :math:`\ln(1 + d(1-p)/(p(k_{\max}+1)))`. Local depolarizing bisects the proven upper bound.
    Re-checked against the certificate as in :func:`qldp_epsilon`.

    Args:
        channel: a depolarizing, local depolarizing, unitary or bit-flip
            :class:`~qprldp_core.channels.Channel`.
        delta: δ in [0, 1].

    Returns:
        ε ≥ 0 in nats (possibly ``math.inf``).

    Raises:
        ValueError: if δ is outside [0, 1].
        NotImplementedError: for channels without a certified bound (general channels).

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> round(qprldp_epsilon(depolarizing(0.3, 2), delta=0.0), 6)
        1.734601
    """
    delta = check_probability(delta, "delta")
    return _smallest_epsilon(channel, delta, "QPrLDP")
