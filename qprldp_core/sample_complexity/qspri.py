r"""Quantum spectral probabilistic indistinguishability (QSPrI) of many copies.

The first :math:`n` at which :math:`\rho^{\otimes n}, \sigma^{\otimes n}` stop being
:math:`(\varepsilon, \delta)`-QSPrI: bounds and a brute-force reference.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, check_epsilon, check_probability, format_number
from ..divergences import sandwiched_renyi_divergence, violation_probability
from ._common import COUNT_SLACK, RENYI_GRID, S_GRID, check_copies, check_pair, chernoff_q
from ._tensor_powers import hermitian_part, pair_blocks
from .copy_bounds import CopyBounds

__all__ = ["minimal_copies_qspri", "qspri_copy_bounds"]


def _block_violation(blocks, gamma: float, atol: float) -> float:
    tot = 0.0
    for m, rb, sb in blocks:
        w, v = np.linalg.eigh(hermitian_part(rb - gamma * sb))
        pos = v[:, w > atol]
        if pos.shape[1]:
            tot += m * float(np.real(np.trace(pos.conj().T @ rb @ pos)))
    return min(1.0, max(0.0, tot))


def minimal_copies_qspri(
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    delta: float,
    max_copies: int = 8,
    atol: float = DEFAULT_ATOL,
) -> int | None:
    r"""Brute-force first :math:`n` at which :math:`(\rho^{\otimes n}, \sigma^{\otimes n})` is not
    :math:`(\varepsilon,\delta)`-QSPrI.

    The pair :math:`(\rho, \sigma)` is :math:`(\varepsilon,\delta)`-QSPrI (quantum spectral
    probabilistic indistinguishability) if both violation probabilities
    :math:`V_\varepsilon(\rho\|\sigma)` and :math:`V_\varepsilon(\sigma\|\rho)` are
    :math:`\le\delta`. For :math:`n \le 8` and :math:`d^n \le 4096` the tensor powers are built
    explicitly when ``d != 2``; qubits use the exact Schur–Weyl blocks.

    Args:
        rho, sigma: density matrices of shape (d, d).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1)`.
        max_copies: largest :math:`n` tried.
        atol: tolerance of the checks and of the eigenvalue sign (as in
            :func:`~qprldp_core.divergences.violation_probability`).

    Returns:
        The first violating :math:`n`, or ``None`` if none up to ``max_copies``.

    Raises:
        ValueError: if an argument is out of range.

    Example:
        >>> minimal_copies_qspri(np.diag([0.75, 0.25]), np.diag([0.25, 0.75]), epsilon=1.5,
        ...                      delta=0.3)
        2
    """
    r, s = check_pair(rho, sigma, atol)
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_lt1(delta)
    max_copies = check_copies(max_copies, "max_copies")
    g = math.exp(epsilon)
    for n in range(1, max_copies + 1):
        if n == 1:
            v = max(violation_probability(r, s, epsilon=epsilon, atol=atol),
                    violation_probability(s, r, epsilon=epsilon, atol=atol))
        else:
            blocks = pair_blocks(r, s, n)
            swapped = [(m, sb, rb) for m, rb, sb in blocks]
            v = max(_block_violation(blocks, g, atol), _block_violation(swapped, g, atol))
        if v > delta:
            return n
    return None


def _check_delta_lt1(delta) -> float:
    delta = check_probability(delta, "delta")
    if delta >= 1.0:
        raise ValueError(f"`delta` must be in [0, 1). Found {format_number(delta)}.")
    return delta


def qspri_copy_bounds(
    rho: ArrayLike, sigma: ArrayLike, *, epsilon: float, delta: float, atol: float = DEFAULT_ATOL
) -> CopyBounds:
    r"""Bounds on the first :math:`n` at which :math:`(\rho^{\otimes n}, \sigma^{\otimes n})` stops
    being :math:`(\varepsilon,\delta)`-QSPrI.

    * Lower (derived here, ``docs/qprldp.md`` §6.6): for every :math:`a > 1`,
      :math:`V_\varepsilon(\rho\|\sigma) \le \exp\{(a-1)(\tilde D_a(\rho\|\sigma) - \varepsilon)\}`
      (data processing of :math:`\tilde D_a` under :math:`\{\Pi, I-\Pi\}` and
      :math:`\mathrm{Tr}\sigma\Pi \le e^{-\varepsilon}\mathrm{Tr}\rho\Pi`), and
      :math:`\tilde D_a(\rho^{\otimes n}\|\sigma^{\otimes n}) = n\tilde D_a(\rho\|\sigma)`. So every
      :math:`n \le \max_a[\varepsilon - \ln(1/\delta)/(a-1)]/\tilde D_a` (in both directions) is
      indistinguishable and the first violating :math:`n` exceeds it.
    * Upper: :math:`V_\varepsilon \ge E_{e^\varepsilon} \ge 1 - e^{\varepsilon(1-s)}Q_s^n`
      (Audenaert's inequality with :math:`B = e^\varepsilon\sigma^{\otimes n}`), so any
      :math:`n > \ln(e^{\varepsilon(1-s)}/(1-\delta))/\ln(1/Q_s)` violates.

    Args:
        rho, sigma: density matrices of shape (d, d).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1)`.
        atol: tolerance of the checks.

    Returns:
        :class:`CopyBounds` with ``task == "qspri"`` (``lower >= 1``).

    Raises:
        ValueError: if an argument is out of range.

    References:
        Shi, arXiv:2607.06307 (QSPrI via sandwiched Rényi relative entropy, abstract); the
        bounds are derived here. Müller-Lennert et al., arXiv:1306.3142 (sandwiched Rényi).

    Example:
        >>> b = qspri_copy_bounds(np.diag([0.75, 0.25]), np.diag([0.25, 0.75]), epsilon=1.5,
        ...                       delta=0.3)
        >>> b.lower <= 2 <= b.upper
        True
    """
    r, s = check_pair(rho, sigma, atol)
    epsilon = check_epsilon(epsilon)
    delta = _check_delta_lt1(delta)
    safe = math.inf
    for a_, b_ in ((r, s), (s, r)):
        best = 0.0
        if delta > 0:
            for a in RENYI_GRID:
                dt = float(sandwiched_renyi_divergence(a_, b_, alpha=a, atol=atol))
                num = epsilon - math.log(1 / delta) / (a - 1)
                if dt == 0.0:
                    best = math.inf if num >= 0 else best
                elif math.isfinite(dt) and num > 0:
                    best = max(best, num / dt)
        safe = min(safe, best)
    # every integer n <= safe is indistinguishable, so the first violating n is >= floor(safe) + 1
    lower = (math.inf if math.isinf(safe)
             else max(1, math.floor(safe - COUNT_SLACK * max(1.0, safe)) + 1))
    g = math.exp(epsilon)
    best_up = math.inf
    for a_, b_ in ((r, s), (s, r)):
        qs = chernoff_q(a_, b_, S_GRID, atol)
        for sv, qv in zip(S_GRID, qs, strict=True):
            if qv >= 1.0:
                continue
            if qv <= 0.0:
                best_up = min(best_up, 1.0)
                continue
            x = math.log(g ** (1 - sv) / (1 - delta)) / -math.log(qv)
            # first integer strictly above x, with slack upward
            best_up = min(best_up, math.floor(x + COUNT_SLACK * max(1.0, abs(x))) + 1)
    upper = math.inf if math.isinf(best_up) else max(1, int(best_up))
    return CopyBounds(lower, upper, "qspri", "sandwiched Renyi tail bound",
                      "Audenaert lower bound on E_gamma")
