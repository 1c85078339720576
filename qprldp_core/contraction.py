r"""Contraction coefficients of the trace distance and of :math:`E_\gamma` under private channels.

Definitions (``docs/qprldp.md`` §5). For a channel :math:`\mathcal A` and :math:`\gamma \ge 0`,

.. math::
    \eta_\gamma(\mathcal A)
    = \sup_{\psi\perp\varphi} E_\gamma(\mathcal A(\psi)\|\mathcal A(\varphi)),
    \qquad \eta_{\rm TD}(\mathcal A) = \eta_1(\mathcal A),

the supremum over orthogonal pure states. For :math:`\gamma \ge 1` this equals the ratio form
:math:`\sup_{\rho,\sigma} E_\gamma(\mathcal A(\rho)\|\mathcal A(\sigma))/E_\gamma(\rho\|\sigma)`
(derived here, §5.1; Hirche, Rouzé, França, arXiv:2202.10717 state the same), so
:math:`\eta_{\rm TD}(\mathcal A) = \sup T(\mathcal A(\rho),\mathcal A(\sigma))/T(\rho,\sigma)`.
(For :math:`\gamma < 1` the ratio form is :math:`\ge 1` for every channel, because
:math:`E_\gamma(\rho\|\rho) = 1-\gamma`; only the orthogonal-pair form is meaningful there.)

Proven bound (derived here, §5.2; the trace-distance case matches Nuradha–Wilde,
arXiv:2406.18651): if :math:`\mathcal A` is :math:`(\varepsilon,\delta)`-QLDP, for
:math:`\gamma \in [e^{-\varepsilon}, e^{\varepsilon}]`

.. math::
    \eta_\gamma(\mathcal A)
    \le \frac{e^\varepsilon - \gamma + (\gamma + 1)\delta}{e^\varepsilon + 1},
    \qquad \eta_{\rm TD}(\mathcal A) \le \frac{e^\varepsilon - 1 + 2\delta}{e^\varepsilon + 1},

and :math:`\eta_\gamma \le \delta` for :math:`\gamma \ge e^\varepsilon`. The same holds under
:math:`(\varepsilon,\delta)`-QPrLDP because QPrLDP implies QLDP with the same parameters.

The bound :math:`\eta_\gamma \le (\gamma + 1)\delta - \gamma` stated in the QPrLDP summary
(arXiv:2607.06307) is false as an upper bound: see :func:`summary_bound_counterexample`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from qprldp_core._numerics import round_up
from qprldp_core._validation import (
    DEFAULT_ATOL,
    check_epsilon,
    check_probability,
    format_number,
)
from qprldp_core.channels import Channel, depolarizing
from qprldp_core.divergences import hockey_stick_divergence

__all__ = [
    "ContractionEstimate",
    "SummaryBoundCounterexample",
    "hockey_stick_contraction_bound",
    "trace_distance_contraction_bound",
    "depolarizing_hockey_stick_contraction",
    "depolarizing_trace_distance_contraction",
    "estimate_contraction",
    "summary_bound_counterexample",
]

_NOTIONS = ("qldp", "qprldp")


def _check_notion(notion) -> str:
    if notion not in _NOTIONS:
        raise ValueError(f"`notion` must be one of {_NOTIONS}. Found {notion!r}.")
    return notion


def _check_nonneg(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise TypeError(f"`{name}` must be a real number. Found {type(x).__name__}.")
    x = float(x)
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"`{name}` must be finite and >= 0. Found {format_number(x)}.")
    return x


def hockey_stick_contraction_bound(
    *, epsilon: float, delta: float, gamma: float, notion: str = "qldp"
) -> float:
    r"""Upper bound on :math:`\eta_\gamma(\mathcal A)` for every
    :math:`(\varepsilon,\delta)`-private channel.

    .. math::
        \eta_\gamma(\mathcal A) \le \begin{cases}
        \dfrac{e^\varepsilon - \gamma + (\gamma + 1)\delta}{e^\varepsilon + 1},
            & e^{-\varepsilon} \le \gamma \le e^\varepsilon,\\
        \delta, & \gamma \ge e^\varepsilon,
        \end{cases}

    capped at 1. Derived here (``docs/qprldp.md`` §5.2): for orthogonal pure inputs and any
    effect :math:`0 \le M \le I`, :math:`a = \mathrm{Tr}M\mathcal A(\psi)`,
    :math:`b = \mathrm{Tr}M\mathcal A(\varphi)` satisfy :math:`a - e^\varepsilon b \le \delta` and
    (with :math:`I - M`) :math:`e^\varepsilon a - b \le e^\varepsilon - 1 + \delta`; the bound is
    the value of the linear programme :math:`\max a - \gamma b`, certified by the dual multipliers
    :math:`\lambda_1 = (e^\varepsilon\gamma - 1)/(e^{2\varepsilon} - 1)`,
    :math:`\lambda_2 = (e^\varepsilon - \gamma)/(e^{2\varepsilon} - 1)`. The QPrLDP case follows
    from QPrLDP :math:`\Rightarrow` QLDP.

    Args:
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        gamma: :math:`\gamma \ge e^{-\varepsilon}`.
        notion: ``"qldp"`` or ``"qprldp"``: which privacy notion :math:`(\varepsilon,\delta)` refers
            to (the bound is the same).

    Returns:
        Upper bound in [0, 1], rounded up.

    Raises:
        ValueError: if ``gamma < exp(-epsilon)`` or a parameter is out of range.

    References:
        Nuradha, Wilde, arXiv:2406.18651 (contraction of trace distance under QLDP, the
        :math:`\gamma = 1` case); the :math:`E_\gamma` form is derived here.

    Example:
        >>> round(hockey_stick_contraction_bound(epsilon=0.5, delta=0.75, gamma=0.7), 6)
        0.839545
    """
    epsilon = check_epsilon(epsilon)
    delta = check_probability(delta, "delta")
    gamma = _check_nonneg(gamma, "gamma")
    _check_notion(notion)
    g = math.exp(epsilon)
    if gamma < math.exp(-epsilon) * (1 - 1e-15):
        raise ValueError(
            f"`gamma` must be >= exp(-epsilon) = {format_number(1 / g)}. "
            f"Found {format_number(gamma)}."
        )
    if gamma >= g:
        return delta
    value = (g - gamma + (gamma + 1) * delta) / (g + 1)
    return min(1.0, round_up(max(0.0, value)))


def trace_distance_contraction_bound(
    *, epsilon: float, delta: float, notion: str = "qldp"
) -> float:
    r"""Upper bound on :math:`\eta_{\rm TD}(\mathcal A)` for every
    :math:`(\varepsilon,\delta)`-private channel.

    .. math::
        \eta_{\rm TD}(\mathcal A) \le \frac{e^\varepsilon - 1 + 2\delta}{e^\varepsilon + 1}.

    The :math:`\gamma = 1` case of :func:`hockey_stick_contraction_bound`.

    Args:
        epsilon: :math:`\varepsilon \ge 0` (nats).
        delta: :math:`\delta \in [0, 1]`.
        notion: ``"qldp"`` or ``"qprldp"`` (same bound: QPrLDP implies QLDP).

    Returns:
        Upper bound in [0, 1], rounded up.

    Raises:
        ValueError: if a parameter is out of range.

    References:
        Nuradha, Wilde, arXiv:2406.18651 (contraction of trace distance under local privacy);
        re-derived here (``docs/qprldp.md`` §5.2).

    Example:
        >>> round(trace_distance_contraction_bound(epsilon=math.log(3), delta=0.0), 6)
        0.5
    """
    return hockey_stick_contraction_bound(epsilon=epsilon, delta=delta, gamma=1.0, notion=notion)


def _check_depol(p, d) -> tuple[float, int]:
    p = check_probability(p, "p")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"`d` must be an integer >= 1. Found {d!r}.")
    return p, int(d)


def depolarizing_hockey_stick_contraction(*, p: float, d: int, gamma: float) -> float:
    r"""Exact :math:`\eta_\gamma(D_p)` for the global depolarizing channel.

    For orthogonal pure :math:`\psi, \varphi`, :math:`D_p(\psi) - \gamma D_p(\varphi)` has
    eigenvalues :math:`(1-p) + (1-\gamma)p/d`, :math:`-\gamma(1-p) + (1-\gamma)p/d` and
    :math:`(1-\gamma)p/d` (multiplicity :math:`d - 2`), independent of the pair, so

    .. math::
        \eta_\gamma(D_p) = \bigl[(1-p) + \tfrac{(1-\gamma)p}{d}\bigr]_+
        + \bigl[\tfrac{(1-\gamma)p}{d} - \gamma(1-p)\bigr]_+
        + (d-2)\bigl[\tfrac{(1-\gamma)p}{d}\bigr]_+.

    For :math:`\gamma = e^\varepsilon \ge 1` this is the QLDP :math:`\delta^*(\varepsilon)` of
    :math:`D_p`. Derived here (``docs/qprldp.md`` §5.3).

    Args:
        p: depolarizing parameter in [0, 1] of :math:`D_p(\rho) = (1-p)\rho + pI/d`.
        d: dimension :math:`\ge 2`.
        gamma: :math:`\gamma \ge 0`.

    Returns:
        :math:`\eta_\gamma(D_p) \in [0, 1]`.

    Raises:
        ValueError: if ``p`` is outside [0, 1], ``d < 2`` or ``gamma < 0``.

    Example:
        >>> round(depolarizing_hockey_stick_contraction(p=0.5, d=2, gamma=0.7), 6)
        0.575
    """
    p, d = _check_depol(p, d)
    if d < 2:
        raise ValueError(f"`d` must be an integer >= 2. Found {d!r}.")
    gamma = _check_nonneg(gamma, "gamma")
    base = (1 - gamma) * p / d
    vals = [(1 - p) + base, base - gamma * (1 - p)] + [base] * (d - 2)
    return min(1.0, float(sum(max(0.0, v) for v in vals)))


def depolarizing_trace_distance_contraction(*, p: float, d: int) -> float:
    r"""Exact :math:`\eta_{\rm TD}(D_p) = 1 - p`.

    :math:`D_p(\rho) - D_p(\sigma) = (1-p)(\rho - \sigma)`, so every trace distance shrinks by
    exactly :math:`1 - p` (derived here, ``docs/qprldp.md`` §5.3).

    Args:
        p: depolarizing parameter in [0, 1].
        d: dimension :math:`\ge 1` (:math:`\eta_{\rm TD}` of the trivial :math:`d = 1` channel is
            reported as :math:`1-p` as well: there are no distinct states).

    Returns:
        :math:`1 - p`.

    Raises:
        ValueError: if ``p`` is outside [0, 1] or ``d < 1``.

    Example:
        >>> depolarizing_trace_distance_contraction(p=0.25, d=4)
        0.75
    """
    p, _ = _check_depol(p, d)
    return 1.0 - p


@dataclass(frozen=True)
class ContractionEstimate:
    r"""Numerical *lower bound* on :math:`\eta_\gamma(\mathcal A)` with its witness pair.

    Attributes:
        gamma: the threshold :math:`\gamma`.
        value: :math:`E_\gamma(\mathcal A(\psi)\|\mathcal A(\varphi))` of the best orthogonal pure
            pair found; a lower bound on :math:`\eta_\gamma`, never a certificate.
        psi, phi: the orthogonal unit vectors attaining ``value``, shape (d_in,).
        is_lower_bound: always ``True``.
    """

    gamma: float
    value: float
    psi: np.ndarray
    phi: np.ndarray
    is_lower_bound: bool = True


def _adjoint_apply(channel: Channel, m: np.ndarray) -> np.ndarray:
    out = sum(k.conj().T @ m @ k for k in channel.kraus)
    return (out + out.conj().T) / 2


def estimate_contraction(
    channel: Channel, *, gamma: float = 1.0, restarts: int = 8, iterations: int = 100,
    seed: int | np.random.Generator | None = None, atol: float = DEFAULT_ATOL,
) -> ContractionEstimate:
    r"""Search for :math:`\eta_\gamma(\mathcal A)` over orthogonal pure pairs (a lower bound).

    Alternating maximisation of
    :math:`\mathrm{Tr}[M(\mathcal A(\psi) - \gamma\mathcal A(\varphi))]`:
    for fixed :math:`M` the best orthogonal pair is the top and bottom eigenvectors of
    :math:`B = \mathcal A^\dagger(M)` (value :math:`\lambda_{\max}(B) - \gamma\lambda_{\min}(B)`,
    valid for :math:`\gamma \ge 0`); for fixed pair the best :math:`M` is the projector onto the
    positive part. Each step does not decrease the objective. Random restarts are seeded.

    Args:
        channel: the channel :math:`\mathcal A`, input dimension :math:`\ge 2`.
        gamma: :math:`\gamma \ge 0` (``1`` for the trace distance).
        restarts: number of random restarts :math:`\ge 1`.
        iterations: alternating steps per restart :math:`\ge 1`.
        seed: ``None``, an int or a ``numpy.random.Generator``; an int repeats the search.
        atol: tolerance passed to the divergence.

    Returns:
        :class:`ContractionEstimate` (a lower bound on :math:`\eta_\gamma`).

    Raises:
        ValueError: if ``gamma < 0``, ``restarts < 1``, ``iterations < 1`` or the input dimension
            is 1.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> est = estimate_contraction(depolarizing(0.3, 2), seed=0)
        >>> round(est.value, 6)
        0.7
    """
    gamma = _check_nonneg(gamma, "gamma")
    for name, count in (("restarts", restarts), ("iterations", iterations)):
        if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 1:
            raise ValueError(f"`{name}` must be an integer >= 1. Found {count!r}.")
    din = channel.input_dim
    if din < 2:
        raise ValueError(f"`channel` must have input dimension >= 2. Found {din}.")
    rng = np.random.default_rng(seed)
    best: tuple[float, Any, Any] = (-1.0, None, None)
    for _ in range(int(restarts)):
        g = rng.normal(size=(din, din)) + 1j * rng.normal(size=(din, din))
        q, _ = np.linalg.qr(g)
        psi, phi = q[:, 0], q[:, 1]
        prev = -np.inf
        for _ in range(int(iterations)):
            rp = channel(np.outer(psi, psi.conj()))
            sp = channel(np.outer(phi, phi.conj()))
            diff = rp - gamma * sp
            w, v = np.linalg.eigh((diff + diff.conj().T) / 2)
            pos = v[:, w > 0]
            m = pos @ pos.conj().T
            bw, bv = np.linalg.eigh(_adjoint_apply(channel, m))
            psi, phi = bv[:, -1], bv[:, 0]
            val = float(bw[-1] - gamma * bw[0])
            if val <= prev + 1e-13:
                break
            prev = val
        rp = channel(np.outer(psi, psi.conj()))
        sp = channel(np.outer(phi, phi.conj()))
        value = float(hockey_stick_divergence(rp, sp, gamma=gamma, atol=atol)) if gamma >= 1 else (
            float(np.sum(np.clip(np.linalg.eigvalsh((rp - gamma * sp + (rp - gamma * sp).conj().T)
                                                    / 2), 0, None)))
        )
        if value > best[0]:
            best = (value, psi.copy(), phi.copy())
    return ContractionEstimate(gamma, min(1.0, max(0.0, best[0])), best[1], best[2])


@dataclass(frozen=True)
class SummaryBoundCounterexample:
    r"""Counterexample to :math:`\eta_\gamma \le (\gamma + 1)\delta - \gamma` (arXiv:2607.06307
    summary).

    Attributes:
        p, d: the depolarizing channel :math:`D_p` on dimension :math:`d`.
        epsilon, delta: :math:`D_p` is exactly :math:`(\varepsilon,\delta)`-QPrLDP.
        gamma: :math:`\gamma \in (e^{-\varepsilon}, e^\varepsilon)`.
        claimed_bound: :math:`(\gamma + 1)\delta - \gamma`.
        actual: :math:`\eta_\gamma(D_p)`, strictly larger than ``max(0, claimed_bound)``.
        proven_bound: :func:`hockey_stick_contraction_bound` (which ``actual`` respects).
    """

    p: float
    d: int
    epsilon: float
    delta: float
    gamma: float
    claimed_bound: float
    actual: float
    proven_bound: float


def summary_bound_counterexample() -> SummaryBoundCounterexample:
    r"""Show that :math:`\eta_\gamma \le (\gamma+1)\delta - \gamma` fails as an upper bound.

    Take :math:`D_{1/2}` on a qubit and :math:`\varepsilon = \ln 3 = \varepsilon_0`: it is
    :math:`(\ln 3, 0)`-QPrLDP (closed form, ``docs/qprldp.md`` §3), so the claim at
    :math:`\gamma = 1 \in (1/3, 3)` reads :math:`\eta_{\rm TD} \le -1` (and :math:`\le 0` even after
    clipping), but :math:`\eta_{\rm TD}(D_{1/2}) = 1/2`. The claim can only hold when
    :math:`\delta \ge \gamma/(\gamma + 1)`; it is *attained* by qubit :math:`D_p` for
    :math:`\varepsilon < \varepsilon_0`, where :math:`\delta = 1 - p/2` is the largest output
    eigenvalue, which suggests it is an identity for that family rather than a general bound
    (``docs/qprldp.md`` §5.4).

    Returns:
        :class:`SummaryBoundCounterexample`.

    References:
        Shi, arXiv:2607.06307 (technical summary's statement, checked here).

    Example:
        >>> c = summary_bound_counterexample()
        >>> c.claimed_bound, c.actual, round(c.proven_bound, 6)
        (-1.0, 0.5, 0.5)
    """
    p, d, eps = 0.5, 2, math.log(3.0)
    delta = 0.0  # QPrLDP δ*(ε) = 0 for ε ≥ ε₀ = ln(1 + d(1 − p)/p) = ln 3.
    gamma = 1.0
    actual = depolarizing_hockey_stick_contraction(p=p, d=d, gamma=gamma)
    # Cross-check with the channel object (exact on the pair |0>, |1>).
    ch = depolarizing(p, d)
    pair = float(hockey_stick_divergence(ch(np.diag([1.0, 0.0])), ch(np.diag([0.0, 1.0])),
                                         gamma=gamma))
    actual = max(actual, pair)
    proven = hockey_stick_contraction_bound(epsilon=eps, delta=delta, gamma=gamma)
    return SummaryBoundCounterexample(p, d, eps, delta, gamma, (gamma + 1) * delta - gamma,
                                      actual, proven)
