r"""The depolarizing part of a channel: the largest p with N = D_p ∘ M for a channel M.

A device's noise is rarely a pure depolarizing channel (a noise model from hardware calibration
composes depolarizing and thermal-relaxation errors, for instance), but every channel whose Choi
matrix is full rank contains one. Derived here (docs/qprldp.md §3, "The depolarizing part of a
channel"): for a channel :math:`\mathcal N` on dimension d with unnormalised Choi matrix
:math:`J(\mathcal N) = \sum_{ij} |i\rangle\langle j| \otimes \mathcal N(|i\rangle\langle j|)`,

.. math::

    \mathcal N = \mathcal D_p \circ \mathcal M \text{ for a channel } \mathcal M
    \iff J(\mathcal N) - \tfrac{p}{d} I_{d^2} \succeq 0
    \iff p \le d\,\lambda_{\min}(J(\mathcal N)),

because :math:`\mathcal D_p\circ\mathcal M(\rho) = (1-p)\mathcal M(\rho) + p\,\mathrm{Tr}(\rho)
I/d`, whose Choi matrix is :math:`(1-p)J(\mathcal M) + (p/d) I`; :math:`\mathcal M` is then
trace preserving because :math:`\mathcal N` and the replacement channel are. Any notion of privacy
that is a supremum over pairs of input states (QLDP, QPrLDP) holds for
:math:`\mathcal D_p\circ\mathcal M` whenever it holds for :math:`\mathcal D_p`: the pairs
:math:`(\mathcal M(\rho), \mathcal M(\sigma))` are among all pairs. So the certificates of
:math:`\mathcal D_p` are proven upper bounds for :math:`\mathcal N` (not exact ones).
"""

from __future__ import annotations

import numpy as np

from ._checks import check_channel

__all__ = ["depolarizing_part"]


#: Subtracted from p (a few ulps of the eigenvalue solver): rounds toward less credited noise.
_ROUNDING = 1e-12


def depolarizing_part(channel) -> float:
    r"""The largest p such that ``channel`` = :math:`\mathcal D_p \circ \mathcal M` for a channel M.

    .. math::

        p^*(\mathcal N) = \min\bigl(1,\ \max(0,\ d\,\lambda_{\min}(J(\mathcal N)))\bigr)

    (derived here, docs/qprldp.md §3). For :math:`\mathcal D_p` itself (:math:`p \le 1`) it is
    p; for a unitary channel 0. Rounded toward less noise (:math:`10^{-12}` is subtracted, above
    the eigenvalue solver's rounding), so the p returned is never above the true one.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel` with equal input and output
            dimension d.

    Returns:
        float: p in [0, 1] (the probability of the depolarizing step in
        :math:`\mathcal D_p(\rho) = (1-p)\rho + p I/d`).

    Raises:
        TypeError: if ``channel`` is not a Channel.
        ValueError: if its input and output dimensions differ.

    References:
        Derived here (docs/qprldp.md §3, "The depolarizing part of a channel").

    Example:
        >>> from qprldp_core.channels import depolarizing, unitary
        >>> round(depolarizing_part(depolarizing(0.3, 2)), 9)
        0.3
        >>> depolarizing_part(unitary(np.eye(2)))
        0.0
    """
    ch = check_channel(channel)
    d = ch.input_dim
    if ch.output_dim != d:
        raise ValueError(f"`channel` must map a dimension to itself (a depolarizing part needs "
                         f"d_in = d_out). Found {d} -> {ch.output_dim}.")
    j = ch.choi()
    lam = float(np.linalg.eigvalsh((j + j.conj().T) / 2)[0])
    return float(min(1.0, max(0.0, d * lam - _ROUNDING)))
