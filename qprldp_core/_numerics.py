"""Small numerical helpers shared by several modules of :mod:`qprldp_core`."""

from __future__ import annotations

import numpy as np

__all__ = ["round_up", "as_generator"]


def round_up(x: float) -> float:
    """Next float above ``x`` (a reported delta is an upper bound: round toward more privacy)."""
    return float(np.nextafter(x, np.inf))


def as_generator(seed) -> np.random.Generator:
    """``seed`` if it is a ``numpy.random.Generator``, else ``np.random.default_rng(seed)``."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
