r"""Pure QLDP: the smallest ε for which a channel is (ε, 0)-QLDP, :math:`\sup D_{\max}`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._numerics import as_generator
from .._validation import DEFAULT_ATOL, support_tol
from ..channels import Channel
from ..channels._checks import check_channel
from ..divergences import max_relative_entropy
from ._fast import fast_adjoint, fast_apply, pure_state, random_pure_state
from .search import SearchResult

__all__ = ["pure_qldp_epsilon"]


def _dep_ratio(p: float, d: int) -> float:
    """max/min output eigenvalue ratio of D_p over pure inputs (inf if an eigenvalue is 0)."""
    a, b = (1 - p) + p / d, p / d
    hi, lo = max(a, b), min(a, b)
    return math.inf if lo <= 0 else hi / lo


def pure_qldp_epsilon(
    channel: Channel,
    *,
    restarts: int = 8,
    seed: int | np.random.Generator | None = 0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> float | SearchResult:
    r"""Smallest ε such that ``channel`` is (ε, 0)-QLDP (nats).

    .. math::

        \varepsilon_0(\mathcal A) =
        \sup_{\rho,\sigma} D_{\max}(\mathcal A(\rho)\|\mathcal A(\sigma)).

    Exact closed forms (derived here):

    * global :math:`\mathcal D_p` on dimension d: with :math:`a = 1 - p + p/d`, :math:`b = p/d`
      (the output eigenvalues of a pure input), :math:`\varepsilon_0 = \ln(\max(a,b)/\min(a,b))`,
      i.e. :math:`\ln(1 + d(1-p)/p)` for p ≤ 1. Upper bound: every output lies between
      :math:`\min(a,b) I` and :math:`\max(a,b) I`; attained by orthogonal pure inputs.
    * local :math:`\mathcal D_p^{\otimes n}`: n times the single-qubit value (see
      :mod:`qprldp_core.certify` for the proof that entangled inputs do not do better).
    * unitary and bit-flip channels: ∞ (orthogonal inputs stay orthogonal).

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        restarts, seed, max_iter: search settings for general channels.
        atol: numerical tolerance.

    Returns:
        A float (possibly ``math.inf``) for the channels above. For a general channel a
        :class:`SearchResult` with ``notion="pure_qldp"`` whose ``value`` is a *lower bound* on
        :math:`\varepsilon_0` found by alternating maximisation of the pencil ratio
        :math:`\langle u|\mathcal A(\rho)|u\rangle / \langle u|\mathcal A(\sigma)|u\rangle`: a
        lower bound is not a privacy guarantee, so it is not returned as a bare float.

    Raises:
        TypeError: if ``channel`` is not a Channel.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> round(pure_qldp_epsilon(depolarizing(0.3, 2)), 6)
        1.734601
    """
    channel = check_channel(channel)
    kind, prm = channel.kind, channel.params
    if channel.input_dim == 1 or channel.output_dim == 1:
        return 0.0
    if kind == "depolarizing":
        return math.log(_dep_ratio(prm["p"], prm["d"]))
    if kind == "local_depolarizing":
        r = _dep_ratio(prm["p"], 2)
        return math.inf if math.isinf(r) else prm["n"] * math.log(r)
    if kind in ("unitary", "bit_flip"):
        return math.inf
    return _pure_search(channel, restarts, seed, max_iter, atol)


def _pure_search(channel, restarts, seed, max_iter, atol) -> SearchResult:
    d = channel.input_dim
    rng = as_generator(seed)
    best: tuple[float, Any, Any] = (-1.0, None, None)
    for r in range(restarts):
        if r == 0:
            rho, sigma = np.zeros((d, d), complex), np.zeros((d, d), complex)
            rho[0, 0] = sigma[1, 1] = 1.0
        else:
            rho, sigma = random_pure_state(rng, d), random_pure_state(rng, d)
        val = max_relative_entropy(
            fast_apply(channel, rho), fast_apply(channel, sigma), atol=1e-7
        )
        for _ in range(max_iter):
            if math.isinf(val):
                break
            # top generalised eigenvector u of the pencil (A(ρ), A(σ)) on supp A(σ)
            ws, vs = np.linalg.eigh(fast_apply(channel, sigma))
            keep = ws > support_tol(ws.size)  # supp A(σ), as in max_relative_entropy
            s_inv = (vs[:, keep] / np.sqrt(ws[keep])) @ vs[:, keep].conj().T
            _, wv = np.linalg.eigh(s_inv @ fast_apply(channel, rho) @ s_inv)
            u = s_inv @ wv[:, -1]
            _, v = np.linalg.eigh(fast_adjoint(channel, np.outer(u, u.conj())))
            r_new, s_new = pure_state(v[:, -1]), pure_state(v[:, 0])
            new = max_relative_entropy(
                fast_apply(channel, r_new), fast_apply(channel, s_new), atol=1e-7
            )
            if not new > val + 1e-12:
                break
            rho, sigma, val = r_new, s_new, new
        if val > best[0]:
            best = (val, rho, sigma)
        if math.isinf(val):
            break
    return SearchResult(best[0], best[1], best[2], "pure_qldp", None, True)
