r"""Worst-case search: lower bounds on a channel's QLDP and QPrLDP suprema, with witnesses.

What is proven about the search: :math:`E_\gamma(\mathcal A(\rho)\|\mathcal A(\sigma))` is convex
in each argument (it is a supremum of functions linear in ρ and in σ), so its supremum is
attained at pure states, and by the dual form

.. math::

    \sup_{\rho,\sigma} E_\gamma(\mathcal A(\rho)\|\mathcal A(\sigma)) =
    \sup_{0 \le M \le I} \big[\lambda_{\max}(\mathcal A^\dagger M) - \gamma\,
    \lambda_{\min}(\mathcal A^\dagger M)\big]

(derived here: swap the two suprema in :math:`\max_M \mathrm{Tr} M(\mathcal A\rho - \gamma
\mathcal A\sigma)`). The alternating maximisation over (M; ρ, σ) increases the value
monotonically but can stop at a local maximum: it is a *lower bound*. For QPrLDP no such
reduction is known: the violation probability is not convex in ρ (for global depolarizing the
worst ρ is a *mixed* state, see :mod:`qprldp_core.certify`), so the search also tries uniform
mixtures over eigenvectors of :math:`\mathcal A^\dagger(\Pi)` for ρ. It is a heuristic whose value
is always evaluated exactly on the returned witness pair, hence always a valid lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numerics import as_generator
from .._validation import DEFAULT_ATOL, check_epsilon
from ..channels import Channel
from ..channels._checks import check_channel
from ._fast import fast_adjoint, fast_apply, pure_state, random_pure_state
from .values import qldp_value, qprldp_value

__all__ = ["SearchResult", "worst_case_search"]


@dataclass(frozen=True, eq=False)
class SearchResult:
    r"""Result of :func:`worst_case_search`: a lower bound on a channel's worst-case quantity.

    Attributes:
        value: the quantity evaluated exactly on the witness pair (for ``notion="qldp"``:
            :math:`E_{e^\varepsilon}`; ``"qprldp"``: violation probability; ``"pure_qldp"``:
            :math:`D_{\max}` in nats).
        rho, sigma: witness input states of shape (d, d).
        notion: "qldp", "qprldp" or "pure_qldp".
        epsilon: ε in nats used (None for "pure_qldp").
        is_lower_bound: True: the supremum over all states is at least ``value``; it is not a
            certificate that the channel is private.
    """

    value: float
    rho: np.ndarray
    sigma: np.ndarray
    notion: str
    epsilon: float | None
    is_lower_bound: bool = True


def _ehs(a: np.ndarray, b: np.ndarray, gamma: float) -> tuple[float, np.ndarray]:
    w, v = np.linalg.eigh(a - gamma * b)
    pos = v[:, w > 0]
    return float(np.sum(w[w > 0])), pos @ pos.conj().T


def _viol(a: np.ndarray, b: np.ndarray, gamma: float, atol: float) -> tuple[float, np.ndarray]:
    w, v = np.linalg.eigh(a - gamma * b)
    pos = v[:, w > atol]
    proj = pos @ pos.conj().T
    return float(np.real(np.trace(proj @ a))), proj


def _qldp_alternate(channel, rho, sigma, gamma, max_iter):
    a, b = fast_apply(channel, rho), fast_apply(channel, sigma)
    val, proj = _ehs(a, b, gamma)
    for _ in range(max_iter):
        w, v = np.linalg.eigh(fast_adjoint(channel, proj))
        r_new, s_new = pure_state(v[:, -1]), pure_state(v[:, 0])
        a, b = fast_apply(channel, r_new), fast_apply(channel, s_new)
        new, proj_new = _ehs(a, b, gamma)
        if new <= val + 1e-13:
            if new >= val:
                rho, sigma, val = r_new, s_new, new
            break
        rho, sigma, val, proj = r_new, s_new, new, proj_new
    return val, rho, sigma


def _qprldp_refine(channel, rho, sigma, gamma, max_iter, atol):
    a, b = fast_apply(channel, rho), fast_apply(channel, sigma)
    val, proj = _viol(a, b, gamma, atol)
    d = channel.input_dim
    for _ in range(max_iter):
        w, v = np.linalg.eigh(fast_adjoint(channel, proj))
        s_new = pure_state(v[:, 0])
        b_new = fast_apply(channel, s_new)
        best = (val, None, None, None)
        acc = np.zeros((d, d), dtype=np.complex128)
        for k in range(1, d):
            acc = acc + pure_state(v[:, d - k])  # top-k eigenvectors, orthogonal to s_new
            r_k = acc / k
            cand, proj_k = _viol(fast_apply(channel, r_k), b_new, gamma, atol)
            if cand > best[0] + 1e-13:
                best = (cand, r_k, s_new, proj_k)
        if best[1] is None:
            break
        val, rho, sigma, proj = best
    return val, rho, sigma


def worst_case_search(
    channel: Channel,
    *,
    epsilon: float,
    notion: str = "qldp",
    restarts: int = 8,
    seed: int | np.random.Generator | None = 0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> SearchResult:
    r"""Lower bound on a channel's worst-case QLDP or QPrLDP quantity, with its witness pair.

    Alternating maximisation (derived here; see the module docstring): for QLDP, starting from a
    pair of pure states, alternately take the projector :math:`M` onto the positive part of
    :math:`\mathcal A(\rho) - \gamma\mathcal A(\sigma)` and the top/bottom eigenvectors of
    :math:`\mathcal A^\dagger(M)` as the new ρ/σ; the value never decreases. For QPrLDP the QLDP
    optimum seeds a refinement that takes σ as the bottom eigenvector of
    :math:`\mathcal A^\dagger(\Pi)` and ρ as the best uniform mixture of its top-k eigenvectors.
    The first restart starts from :math:`|0\rangle, |1\rangle`, the others from Haar-random pure
    states.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel` with d_in ≥ 2.
        epsilon: ε ≥ 0 in nats.
        notion: "qldp" or "qprldp".
        restarts: number of starting pairs, ≥ 1.
        seed: integer, None or ``np.random.Generator``; an integer seed repeats the search.
        max_iter: iterations per restart, ≥ 1.
        atol: tolerance of the eigenvalue sign in the violation probability.

    Returns:
        A frozen :class:`SearchResult` with ``is_lower_bound=True``; ``value`` is recomputed on
        the witness with the validated public functions.

    Raises:
        ValueError: for an unknown notion, ε < 0, or non-positive ``restarts``/``max_iter``.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> res = worst_case_search(depolarizing(0.5, 2), epsilon=0.5, notion="qprldp", restarts=2)
        >>> round(res.value, 6), res.is_lower_bound
        (0.75, True)
    """
    channel = check_channel(channel)
    epsilon = check_epsilon(epsilon)
    if notion not in ("qldp", "qprldp"):
        raise ValueError(f"`notion` must be 'qldp' or 'qprldp'. Found {notion!r}.")
    for name, val in (("restarts", restarts), ("max_iter", max_iter)):
        if isinstance(val, bool) or not isinstance(val, int | np.integer) or val < 1:
            raise ValueError(f"`{name}` must be a positive integer. Found {val!r}.")
    d = channel.input_dim
    if d < 2:
        rho = np.ones((1, 1), dtype=np.complex128)
        return SearchResult(0.0, rho, rho.copy(), notion, epsilon)
    gamma = math.exp(epsilon)
    rng = as_generator(seed)
    best: tuple[float, Any, Any] = (-1.0, None, None)
    for r in range(restarts):
        if r == 0:
            rho0, sigma0 = np.zeros((d, d), complex), np.zeros((d, d), complex)
            rho0[0, 0] = sigma0[1, 1] = 1.0
        else:
            rho0, sigma0 = random_pure_state(rng, d), random_pure_state(rng, d)
        val, rho, sigma = _qldp_alternate(channel, rho0, sigma0, gamma, max_iter)
        if notion == "qprldp":
            val, rho, sigma = _qprldp_refine(channel, rho, sigma, gamma, max_iter, atol)
        if val > best[0]:
            best = (val, rho, sigma)
    _, rho, sigma = best
    rho, sigma = (rho + rho.conj().T) / 2, (sigma + sigma.conj().T) / 2
    if notion == "qldp":
        value = qldp_value(channel, rho, sigma, epsilon=epsilon, atol=max(atol, 1e-7))
    else:
        value = qprldp_value(channel, rho, sigma, epsilon=epsilon, atol=max(atol, 1e-7))
    return SearchResult(value, rho, sigma, notion, epsilon, True)
