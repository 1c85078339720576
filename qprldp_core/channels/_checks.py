"""Argument checks shared by the channel constructors, the converters and the certificates.

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_real, format_number
from .channel import Channel

__all__ = [
    "PARAM_ATOL",
    "check_dimension",
    "clamp_to_range",
    "check_depolarizing_p",
    "check_channel",
]


# Boundary tolerance of the depolarizing parameter converters and of the CPTP-range check: a value
# within PARAM_ATOL outside an end of its range is taken to *be* that end and clamped onto it
# exactly. The ends are computed in double precision (1 - d^2/(d^2 - 1) is 2 ulps above -1/15 for
# d = 4), so a user's -1/15 must not be rejected. 1e-12 is ~4500 ulps at 1: far above the rounding
# of the one-line conversion formulas, far below any physically meaningful difference in p.
PARAM_ATOL = 1e-12


def check_dimension(d, name: str, minimum: int = 2) -> int:
    if isinstance(d, bool) or not isinstance(d, int | np.integer):
        raise TypeError(f"`{name}` must be an integer. Found {type(d).__name__}.")
    d = int(d)
    if d < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}. Found {d}.")
    return d


def clamp_to_range(x: float, lo: float, hi: float) -> float | None:
    """x clamped onto [lo, hi] if it lies within PARAM_ATOL of it, else None."""
    if lo <= x <= hi:
        return x
    if lo - PARAM_ATOL <= x < lo:
        return lo
    if hi < x <= hi + PARAM_ATOL:
        return hi
    return None


def check_depolarizing_p(p, d: int, name: str = "p") -> float:
    p = check_real(p, name)
    pmax = d * d / (d * d - 1.0)
    out = clamp_to_range(p, 0.0, pmax)
    if out is None:
        raise ValueError(
            f"`{name}` must be in [0, {pmax:.6g}] (the CPTP range d^2/(d^2-1) for d={d}). "
            f"Found {format_number(p)}."
        )
    return out


def check_channel(channel) -> Channel:
    """``channel`` itself if it is a :class:`Channel`, else TypeError."""
    if not isinstance(channel, Channel):
        raise TypeError(f"`channel` must be a qprldp_core.Channel. Found {type(channel).__name__}.")
    return channel
