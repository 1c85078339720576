r"""Kraus-free action of the local depolarizing channel (shared by :class:`Channel` and the search).

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["local_depolarizing_apply"]


def local_depolarizing_apply(x: np.ndarray, p: float, n: int) -> np.ndarray:
    r"""Apply :math:`\mathcal D_p^{\otimes n}` qubit by qubit without Kraus operators.

    On qubit i: :math:`X \mapsto (1-p)X + p\,\mathrm{Tr}_i(X)\otimes I_i/2` (self-adjoint, so
    this is also the Heisenberg-picture action).
    """
    t = x.reshape((2,) * (2 * n))
    for i in range(n):
        tr = np.trace(t, axis1=i, axis2=i + n)  # partial trace over qubit i
        mixed = np.expand_dims(np.expand_dims(tr, i), i + n) * (np.eye(2).reshape(
            [2 if k in (i, i + n) else 1 for k in range(2 * n)]) / 2)
        t = (1 - p) * t + p * mixed
    return t.reshape(x.shape)
