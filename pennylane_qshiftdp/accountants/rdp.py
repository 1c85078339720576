r"""ε of a history by Opacus's RDP analysis, with the one-step RDP vectors cached.

:func:`rdp_epsilon` is bit for bit ``RDPAccountant(history).get_epsilon(delta)``: Opacus's
``compute_rdp(..., steps=n)`` is ``compute_rdp(..., steps=1) * n``, the vectors are summed in
history order and converted to (ε, δ) by Opacus's ``get_privacy_spent``; only the per-step
vectors are cached (without the cache a step costs tens of milliseconds). Nothing here imports
another module of :mod:`pennylane_qshiftdp.accountants`: the PLD accountant (:mod:`.pld`)
reads the scale of a history's loss from it, and :mod:`.composition` dispatches to both.

All ε are in nats.

References:
    Mironov, Talwar, Zhang, arXiv:1908.10530 (RDP of the sampled Gaussian mechanism); Opacus
    ``opacus.accountants.analysis.rdp``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from opacus.accountants import RDPAccountant
from opacus.accountants.analysis import rdp as rdp_analysis

from .._validation import ignoring_warnings

__all__ = ["quiet_opacus", "rdp_cache_clear", "rdp_epsilon"]


@contextmanager
def quiet_opacus() -> Iterator[None]:
    """Silence Opacus warnings that concern tightness, never validity.

    The RDP accountant warns when the optimal order is at the edge of its grid (the bound is
    then valid but loose); the PRV accountant emits ``divide by zero`` RuntimeWarnings at
    q = 1 (handled correctly by ``np.where``).
    """
    with ignoring_warnings(("Optimal order is the", UserWarning),
                           ("divide by zero", RuntimeWarning)):
        yield


@functools.lru_cache(maxsize=64)
def _unit_rdp(sigma: float, q: float) -> np.ndarray:
    """Opacus's RDP vector of one sampled-Gaussian step at its default orders (cached)."""
    with quiet_opacus():
        rdp = rdp_analysis.compute_rdp(
            q=q, noise_multiplier=sigma, steps=1, orders=RDPAccountant.DEFAULT_ALPHAS
        )
    rdp.setflags(write=False)
    return rdp


def rdp_cache_clear() -> None:
    """Empty the process-wide cache of one-step RDP vectors (it changes no ε)."""
    _unit_rdp.cache_clear()


def rdp_epsilon(history, *, delta: float) -> float:
    """ε (nats, an upper bound) of a (σ, q, steps) history by Opacus's RDP accountant.

    Args:
        history: list of ``(σ > 0, q ∈ (0, 1], steps ≥ 1)`` triples (not validated here).
        delta: δ ∈ (0, 1).

    Returns:
        ε in nats, equal to ``RDPAccountant`` with this history's ``get_epsilon(delta)``; 0 for
        an empty history.

    Example:
        >>> from opacus.accountants import RDPAccountant
        >>> acct = RDPAccountant()
        >>> acct.history = [(1.0, 0.01, 1000)]
        >>> rdp_epsilon([(1.0, 0.01, 1000)], delta=1e-5) == acct.get_epsilon(1e-5)
        True
    """
    if not history:
        return 0.0
    rdp = sum([_unit_rdp(float(s), float(q)) * n for s, q, n in history])
    with quiet_opacus():
        eps, _ = rdp_analysis.get_privacy_spent(
            orders=RDPAccountant.DEFAULT_ALPHAS, rdp=rdp, delta=delta
        )
    return float(eps)
