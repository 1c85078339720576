r"""Certificates of QLDP and QPrLDP for depolarizing noise, and for a PennyLane device's noise.

A :class:`Certificate` states one of three things about a channel :math:`\mathcal A` at a given
ε (nats), with :math:`\delta^*(\varepsilon)` the channel's worst case over all input pairs:

* ``side == "exact"``: :math:`\delta^*(\varepsilon) = \delta` (closed form, proven);
* ``side == "upper_bound"``: :math:`\delta^*(\varepsilon) \le \delta` (proven: the channel is
  (ε, δ)-private), with a proven lower bound ``delta_lower`` where one is known;
* ``side == "lower_bound"``: :math:`\delta^*(\varepsilon) \ge \delta` (a witness pair attains δ);
  the channel is *not* (ε, δ′)-private for δ′ < δ. This is never a privacy certificate.

Closed forms (derived here, proofs in the function docstrings and ``docs/qprldp.md``):
global depolarizing :math:`\mathcal D_p` on dimension d, p ∈ [0, 1],
:math:`\varepsilon_0 = \ln(1 + d(1-p)/p)`:

.. math::

    \delta^*_{\rm QLDP}(\varepsilon) = \max\big(0, (1-p) - (e^\varepsilon - 1)p/d\big),\qquad
    \delta^*_{\rm QPrLDP}(\varepsilon) = \begin{cases} 0 & \varepsilon \ge \varepsilon_0 \\
    (1-p) + p k^*/d & \text{else} \end{cases}

with :math:`x = d(1-p)/((e^\varepsilon - 1)p)` and :math:`k^* = \min(d-1, \lceil x\rceil - 1)`.

Numerical ties: ε within a relative ``1e-12`` of a threshold (ε₀, or the jumps of the QPrLDP step
function) is resolved as lying exactly on it, because a double-precision ε cannot be placed more
finely relative to a threshold computed from a double-precision p. Everywhere else values are
rounded toward more privacy loss (δ up, ε up).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import gammaln

from ._validation import DEFAULT_ATOL, check_epsilon, check_probability
from .channels import Channel, depolarizing, depolarizing_p_from_pennylane, local_depolarizing
from .privacy import worst_case_search

__all__ = [
    "Certificate",
    "DeviceCertificate",
    "qldp_certificate",
    "qprldp_certificate",
    "qldp_epsilon",
    "qprldp_epsilon",
    "local_depolarizing_bounds",
    "certify_device",
]

_TIE_RTOL = 1e-12  # relative window in which ε is taken to sit exactly on a threshold
_MAX_SEARCH_DIM = 64  # largest dimension for which certificates fall back to the search
_MAX_WITNESS_QUBITS = 8  # local depolarizing witnesses (2^n x 2^n arrays) only up to here

_REF_GLOBAL = (
    "derived here (docs/qprldp.md, 'Global depolarizing'); QLDP via the hockey-stick divergence "
    "of Hirche, Rouzé, França arXiv:2202.10717 (v2) Def. 3.1; QPrLDP of Shi arXiv:2607.06307"
)
_REF_LOCAL = (
    "derived here (qprldp_core.certify.local_depolarizing_bounds, docs/qprldp.md 'Local "
    "depolarizing'); QPrLDP from QLDP by the conversion of Shi arXiv:2607.06307"
)
_REF_SEARCH = "lower bound from qprldp_core.privacy.worst_case_search (not a certificate)"
_REF_ORTH = "derived here: orthogonal inputs stay orthogonal, so delta* = 1 for every epsilon"


@dataclass(frozen=True, eq=False, repr=False)
class Certificate:
    r"""A frozen privacy statement about a channel at one ε.

    ``print(cert)`` shows the statement in words and ``repr(cert)`` one line; neither prints the
    witness matrices. Get them with ``rho, sigma = cert.witness`` (two d × d density matrices of
    the channel's *input*, or None): for an exact or lower-bound certificate the pair attains
    ``delta``, e.g. ``qldp_value(channel, *cert.witness, epsilon=cert.epsilon) == cert.delta``.

    Attributes:
        epsilon: ε in nats.
        delta: the certified δ (meaning fixed by ``side``).
        notion: "QLDP" or "QPrLDP".
        channel_description: human-readable description of the channel.
        exact: True iff ``side == "exact"``.
        side: "exact", "upper_bound" (proven: the channel is (ε, δ)-private) or "lower_bound"
            (proven: it is not (ε, δ′)-private for any δ′ < δ).
        witness: a pair (ρ, σ) of input states whose value equals ``delta`` ("exact",
            "lower_bound") or ``delta_lower`` ("upper_bound"), or None.
        reference: where the statement comes from.
        delta_lower: for ``side == "upper_bound"``, a proven lower bound on δ*(ε) (else None).

    Example:
        >>> c = qprldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)
        >>> c.side, c.delta, c.vacuous
        ('upper_bound', 1.0, True)
        >>> print(repr(c)[:81])
        Certificate(notion='QPrLDP', epsilon=1, delta=1, side='upper_bound', vacuous=True
        >>> rho, sigma = c.witness
        >>> rho.shape
        (8, 8)
    """

    epsilon: float
    delta: float
    notion: str
    channel_description: str
    exact: bool
    side: str
    witness: tuple[np.ndarray, np.ndarray] | None
    reference: str
    delta_lower: float | None = None

    @property
    def vacuous(self) -> bool:
        r"""True if the statement holds for *every* channel, so it says nothing about this one.

        That is an upper bound δ ≥ 1 (every channel is (ε, 1)-QLDP and -QPrLDP, both quantities
        being probabilities at most 1) or a lower bound δ ≤ 0. An *exact* δ = 1 is not vacuous:
        it proves that the channel offers no (ε, δ < 1) privacy.
        """
        if self.side == "upper_bound":
            return self.delta >= 1.0
        if self.side == "lower_bound":
            return self.delta <= 0.0
        return False

    def _witness_text(self) -> str:
        if self.witness is None:
            return "none"
        d = int(np.shape(self.witness[0])[0])
        attains = "delta_lower" if self.side == "upper_bound" else "delta"
        return f"available as `.witness` (ρ, σ) of shape {d}×{d}; the pair attains {attains}"

    def _side_text(self) -> str:
        side = self.side.replace("_", " ")
        return f"{side}, VACUOUS" if self.vacuous else side

    def __repr__(self) -> str:
        lower = "" if self.delta_lower is None else f", delta_lower={self.delta_lower:.6g}"
        witness = "None" if self.witness is None else f"<{self._witness_text()}>"
        return (
            f"Certificate(notion={self.notion!r}, epsilon={self.epsilon:.6g}, "
            f"delta={self.delta:.6g}, side={self.side!r}, vacuous={self.vacuous}{lower}, "
            f"channel_description={self.channel_description!r}, witness={witness}, "
            f"reference={self.reference!r})"
        )

    def __str__(self) -> str:
        e, dl = f"{self.epsilon:.6g}", f"{self.delta:.6g}"
        if self.vacuous and self.side == "upper_bound":
            meaning = (
                f"VACUOUS: ({e}, {dl})-{self.notion} holds for every channel (delta >= 1), so "
                "this upper bound certifies no privacy"
            )
            if self.delta_lower is not None:
                meaning += (
                    f"; the channel is NOT ({e}, delta)-{self.notion} for any delta < "
                    f"{self.delta_lower:.6g} (proven lower bound)"
                )
        elif self.vacuous:
            meaning = f"VACUOUS: delta* >= {dl} holds for every channel"
        else:
            meaning = "the channel " + {
                "exact": f"is ({e}, {dl})-{self.notion}, and no smaller delta holds (exact)"
                + (": no privacy at this epsilon" if self.delta >= 1.0 else ""),
                "upper_bound": f"is ({e}, {dl})-{self.notion} (proven upper bound on delta)",
                "lower_bound": f"is NOT ({e}, delta)-{self.notion} for any delta < {dl} (lower "
                "bound from a witness; not a certificate)",
            }[self.side]
        lines = [
            f"{self.notion} certificate" + (" (VACUOUS)" if self.vacuous else ""),
            f"  channel   : {self.channel_description}",
            f"  epsilon   : {e} nats",
            f"  delta     : {dl} ({self._side_text()})",
        ]
        if self.delta_lower is not None:
            lines.append(f"  delta >=  : {self.delta_lower:.6g} (proven lower bound)")
        lines += [
            f"  statement : {meaning}",
            f"  witness   : {self._witness_text()}",
            f"  reference : {self.reference}",
        ]
        return "\n".join(lines)


# -- global depolarizing: closed forms -----------------------------------------------------------
def _basis(d: int, idx) -> np.ndarray:
    m = np.zeros((d, d), dtype=np.complex128)
    for i in idx:
        m[i, i] = 1.0
    return m / len(idx)


def _dep_qldp_delta(p: float, d: int, eps: float) -> float:
    # derived here: sup E_γ at orthogonal pure inputs; δ = (1 − p) − (γ − 1) p / d, floored at 0
    val = (1.0 - p) - math.expm1(eps) * p / d
    if val <= _TIE_RTOL * max(1.0 - p, 1e-300):
        return 0.0
    return min(1.0, val)


def _dep_qprldp_kstar(p: float, d: int, eps: float) -> int:
    """k* of the QPrLDP closed form (docs/qprldp.md); 0 means ε ≥ ε₀ (δ* = 0)."""
    if p == 0.0:
        return d - 1  # identity channel: every ε is below ε₀ = ∞
    if p >= 1.0:
        return 0
    g1 = math.expm1(eps)
    if g1 == 0.0:
        return d - 1  # ε = 0: x = ∞
    denom = g1 * p
    if denom == 0.0:
        return d - 1
    x = d * (1.0 - p) / denom
    if not math.isfinite(x) or x >= d:
        return d - 1
    if x <= 1.0 + _TIE_RTOL:
        return 0
    return int(min(d - 1, math.ceil(x * (1.0 - _TIE_RTOL)) - 1))


def _dep_qprldp_delta(p: float, d: int, eps: float) -> float:
    k = _dep_qprldp_kstar(p, d, eps)
    if k == 0:
        return 0.0
    return min(1.0, (1.0 - p) + p * k / d)


def _dep_witness(notion: str, p: float, d: int, eps: float):
    if notion == "QLDP":
        return _basis(d, [0]), _basis(d, [1])
    k = _dep_qprldp_kstar(p, d, eps)
    k = max(k, 1)
    return _basis(d, range(k)), _basis(d, [k])


def _p_eff_qubit(p: float) -> float:
    r"""For qubits, :math:`\mathcal D_p` (p > 1) has the worst cases of :math:`\mathcal D_{2-p}`.

    Derived here: :math:`\mathcal D_p = \mathcal D_{2-p}\circ\Theta` with
    :math:`\Theta(X) = Y X^{T} Y` (Bloch inversion); on n qubits :math:`\mathcal D_p^{\otimes n} =
    \mathcal D_{2-p}^{\otimes n}\circ\Theta^{\otimes n}` and :math:`\Theta^{\otimes n}(X) =
    Y^{\otimes n} X^T Y^{\otimes n}` maps states bijectively onto states, so every supremum over
    input pairs is unchanged.
    """
    return p if p <= 1.0 else 2.0 - p


# -- local depolarizing: exact threshold and bounds -----------------------------------------------
def _log_binom(n: int, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _binom_weights(n: int, p: float) -> np.ndarray:
    s = np.arange(n + 1)
    if p == 0.0:
        w = np.zeros(n + 1)
        w[0] = 1.0
        return w
    if p == 1.0:
        w = np.zeros(n + 1)
        w[n] = 1.0
        return w
    return np.exp(_log_binom(n, s) + (n - s) * math.log1p(-p) + s * math.log(p))


def _local_qldp_upper(p: float, n: int, gammas: np.ndarray) -> np.ndarray:
    r"""Dual upper bound U(γ) on sup E_γ for D_p^{⊗n}, p ∈ [0, 1] (derived here, see
    :func:`local_depolarizing_bounds`). Vectorised over ``gammas``."""
    w = _binom_weights(n, p)  # weight of "depolarise the subset S", |S| = s
    s = np.arange(n + 1)
    log_c = (n - s) * math.log(2.0)  # c_s = 2^(n−s)
    # candidate maximisers m: breakpoints 2^-(n-s) and 1 − 2^-(n-s), plus 0 and 1
    brk = np.exp(-log_c[:-1])
    ms = np.unique(np.concatenate([[0.0, 1.0], brk, 1.0 - brk]))
    with np.errstate(divide="ignore"):
        lm, l1m = np.log(ms), np.log(1.0 - ms)
    # min(1, c m) and min(1, c (1 − m)) in log space (no overflow for large n)
    up = np.exp(np.minimum(lm[:, None] + log_c[None, :], 0.0))  # (M, n+1)
    low = 1.0 - np.exp(np.minimum(l1m[:, None] + log_c[None, :], 0.0))
    hi = up @ w  # upper bound on λ_max(D^{⊗n}(M)) given Tr M = m 2^n
    lo = low @ w  # lower bound on λ_min
    vals = hi[None, :] - gammas[:, None] * lo[None, :]
    return np.clip(vals.max(axis=1), 0.0, 1.0)


def _local_pair_values(p: float, n: int, eps: float) -> tuple[float, float, int]:
    r"""QLDP and QPrLDP values of product basis pairs at Hamming distance m (max over m)."""
    a, b = 1.0 - p / 2.0, p / 2.0
    la, lb = math.log(a), math.log(b)
    gamma = math.exp(eps)
    best_v, best_m = 0.0, n
    e_n = 0.0
    for m in range(1, n + 1):
        j = np.arange(m + 1)
        lc = _log_binom(m, j)
        lp = lc + j * la + (m - j) * lb
        lq = lc + j * lb + (m - j) * la
        viol = (2 * j - m) * (la - lb) > eps + _TIE_RTOL * max(1.0, eps)
        v = float(np.sum(np.exp(lp[viol])))
        if v > best_v + 1e-15:
            best_v, best_m = v, m
        if m == n:
            e_n = float(np.sum(np.maximum(np.exp(lp) - gamma * np.exp(lq), 0.0)))
    return min(1.0, e_n), min(1.0, max(best_v, e_n)), best_m


def _local_threshold(p_eff: float, n: int) -> float:
    if p_eff == 0.0:
        return math.inf
    return n * math.log((2.0 - p_eff) / p_eff)


def local_depolarizing_bounds(p: float, n: int, *, epsilon: float, notion: str = "QLDP"):
    r"""Proven lower and upper bounds on δ*(ε) of :math:`\mathcal D_p^{\otimes n}`.

    Cost :math:`O(n^2)` arithmetic on length-n vectors (never a :math:`2^n` matrix).

    **Exact threshold** (derived here). For p ∈ (0, 1], write
    :math:`\mathcal D_p = (1-p)\,\mathrm{id} + p\,\mathcal T` with :math:`\mathcal T(X) =
    \mathrm{Tr}(X) I/2`, so

    .. math::

        \mathcal D_p^{\otimes n}(X) = \sum_{S\subseteq[n]} (1-p)^{n-|S|} p^{|S|}\,
        \mathrm{Tr}_S(X)\otimes \frac{I_S}{2^{|S|}}.

    For a state ρ, term S has eigenvalues in :math:`[0, 2^{-|S|}]` and the S = [n] term is
    :math:`(p/2)^n I`, so :math:`(p/2)^n I \le \mathcal D_p^{\otimes n}(\rho) \le (1-p/2)^n I`.
    Hence :math:`\mathcal D_p^{\otimes n}(\rho) \le ((2-p)/p)^n \mathcal D_p^{\otimes n}(\sigma)`
    for all (also entangled) ρ, σ: δ* = 0 for ε ≥ n ln((2 − p)/p). Below it, the product pair
    :math:`|0\rangle^{\otimes n}, |1\rangle^{\otimes n}` has :math:`D_{\max} = n\ln((2-p)/p)`, so
    the threshold is exact.

    **QLDP upper bound** (derived here). By the dual form
    :math:`\sup_{\rho,\sigma} E_\gamma = \sup_{0\le M\le I}[\lambda_{\max}(\mathcal D^{\otimes n}
    M) - \gamma\lambda_{\min}(\mathcal D^{\otimes n} M)]` (the channel is self-adjoint). Let
    :math:`m = \mathrm{Tr}M/2^n \in [0, 1]`. Term S equals :math:`\mathrm{Tr}_S(M)/2^{|S|}`
    (⊗ identity), a PSD operator :math:`\le I` of trace :math:`m\,2^{n-|S|}`, so its eigenvalues
    lie in :math:`[\max(0, 1 - 2^{n-|S|}(1-m)), \min(1, 2^{n-|S|} m)]`. Weyl's inequalities give

    .. math::

        \sup E_\gamma \le \max_{m\in[0,1]} \sum_{s=0}^{n} \binom ns (1-p)^{n-s}p^s
        \big[\min(1, 2^{n-s}m) - \gamma\max(0, 1 - 2^{n-s}(1-m))\big],

    a concave piecewise-linear function of m maximised at a breakpoint
    :math:`m \in \{0, 1, 2^{-k}, 1 - 2^{-k}\}`. For n = 1 it equals the exact global d = 2 value.

    **QPrLDP upper bound**. If the channel is (ε′, δ′)-QLDP with ε′ < ε it is
    (ε, δ′ e^ε/(e^ε − e^{ε′}))-QPrLDP (on the violation projector Π, :math:`\mathrm{Tr}\Pi
    \mathcal A\sigma \le P/e^\varepsilon`, so :math:`\delta' \ge P(1 - e^{\varepsilon'-
    \varepsilon})`); we minimise over a grid of ε′ (any ε′ gives a valid bound).

    **Lower bounds**: the product basis pairs at Hamming distance m = 1..n, whose outputs commute
    (classical binomial likelihood ratios :math:`((2-p)/p)^{2j-m}`): QLDP uses m = n (largest by
    data processing), QPrLDP the best m, and QPrLDP ≥ QLDP pairwise.

    For p ∈ (1, 4/3] all statements hold with p replaced by 2 − p (Bloch inversion, see
    ``_p_eff_qubit``).

    Args:
        p: single-qubit depolarizing probability in [0, 4/3].
        n: number of qubits, ≥ 1.
        epsilon: ε ≥ 0 in nats.
        notion: "QLDP" or "QPrLDP".

    Returns:
        ``(lower, upper)`` with lower ≤ δ*(ε) ≤ upper.

    Raises:
        ValueError: for p, n, ε or notion out of range.

    References:
        Derived here; conversion QLDP → QPrLDP as in Shi, arXiv:2607.06307.

    Example:
        >>> lo, up = local_depolarizing_bounds(0.5, 1, epsilon=0.5)
        >>> round(lo, 6), round(up, 6)
        (0.33782, 0.33782)
    """
    ch = local_depolarizing(p, n)  # validates p and n
    epsilon = check_epsilon(epsilon)
    notion = _check_notion(notion)
    if ch.params["n"] == 1:  # single qubit: the exact global d = 2 closed form
        cert = _certificate(ch, epsilon, notion, 1, 0, 1, DEFAULT_ATOL)
        return cert.delta, cert.delta
    return _local_bounds(ch.params["p"], ch.params["n"], epsilon, notion)[:2]


def _local_bounds(p: float, n: int, eps: float, notion: str):
    pe = _p_eff_qubit(p)
    if pe == 0.0:
        return 1.0, 1.0, n
    thr = _local_threshold(pe, n)
    if eps >= thr * (1.0 - _TIE_RTOL):
        return 0.0, 0.0, n
    qldp_lo, qprldp_lo, m = _local_pair_values(pe, n, eps)
    if notion == "QLDP":
        up = float(_local_qldp_upper(pe, n, np.array([math.exp(eps)]))[0])
        return qldp_lo, max(up, qldp_lo), n
    # QPrLDP: convert QLDP upper bounds at ε′ < ε
    if eps == 0.0:
        return qprldp_lo, 1.0, m
    t = np.linspace(0.0, 1.0, 65)[:-1]
    eps_p = eps * t
    ups = _local_qldp_upper(pe, n, np.exp(eps_p))
    factor = 1.0 / (-np.expm1(eps_p - eps))  # e^ε / (e^ε − e^ε′)
    cand = ups * factor
    i = int(np.argmin(cand))
    lo_t, hi_t = t[max(i - 1, 0)], (t[i + 1] if i + 1 < len(t) else 1.0)
    t2 = np.linspace(lo_t, hi_t, 34)[1:-1]
    eps2 = eps * t2
    cand2 = _local_qldp_upper(pe, n, np.exp(eps2)) / (-np.expm1(eps2 - eps))
    up = float(min(1.0, cand.min(), cand2.min()))
    return qprldp_lo, max(up, qprldp_lo), m


# -- dispatch ----------------------------------------------------------------------------------
def _check_notion(notion: str) -> str:
    key = str(notion).lower()
    if key not in ("qldp", "qprldp"):
        raise ValueError(f"`notion` must be 'QLDP' or 'QPrLDP'. Found {notion!r}.")
    return "QLDP" if key == "qldp" else "QPrLDP"


def _check_channel(channel) -> Channel:
    if not isinstance(channel, Channel):
        raise TypeError(f"`channel` must be a qprldp_core.Channel. Found {type(channel).__name__}.")
    return channel


def _certificate(channel, eps, notion, restarts, seed, max_iter, atol) -> Certificate:
    kind, prm, desc = channel.kind, channel.params, channel.description
    if channel.input_dim == 1 or channel.output_dim == 1:
        return Certificate(eps, 0.0, notion, desc, True, "exact", None,
                           "derived here: a channel with one input or output state leaks nothing")
    if kind == "depolarizing" and (prm["p"] <= 1.0 or prm["d"] == 2):
        d = prm["d"]
        p = _p_eff_qubit(prm["p"]) if d == 2 else prm["p"]
        fn = _dep_qldp_delta if notion == "QLDP" else _dep_qprldp_delta
        delta = fn(p, d, eps)
        return Certificate(eps, delta, notion, desc, True, "exact",
                           _dep_witness(notion, p, d, eps), _REF_GLOBAL)
    if kind == "local_depolarizing":
        n = prm["n"]
        if n == 1:
            return _certificate(depolarizing(prm["p"], 2), eps, notion, restarts, seed, max_iter,
                                atol)
        lo, up, m = _local_bounds(prm["p"], n, eps, notion)
        witness = None
        if n <= _MAX_WITNESS_QUBITS:
            dim = 2**n
            y = sum(2 ** (n - 1 - i) for i in range(m))  # |1^m 0^(n-m)>
            if _p_eff_qubit(prm["p"]) == 0.0:
                y = dim - 1
            witness = (_basis(dim, [0]), _basis(dim, [y]))
        if lo == up:
            return Certificate(eps, up, notion, desc, True, "exact", witness, _REF_LOCAL)
        return Certificate(eps, up, notion, desc, False, "upper_bound", witness, _REF_LOCAL,
                           delta_lower=lo)
    if kind == "unitary":
        u = prm["U"]
        d = u.shape[0]
        return Certificate(eps, 1.0, notion, desc, True, "exact",
                           (_basis(d, [0]), _basis(d, [1])), _REF_ORTH)
    if kind == "bit_flip":
        plus = np.full((2, 2), 0.5, dtype=np.complex128)
        minus = np.array([[0.5, -0.5], [-0.5, 0.5]], dtype=np.complex128)
        return Certificate(eps, 1.0, notion, desc, True, "exact", (plus, minus),
                           _REF_ORTH + " (|+>, |-> are fixed by a bit flip)")
    if channel.input_dim > _MAX_SEARCH_DIM:
        raise NotImplementedError(
            f"{notion.lower()}_certificate: no closed form for {desc}, and the worst-case search "
            f"is limited to input dimension <= {_MAX_SEARCH_DIM}. Found {channel.input_dim}."
        )
    res = worst_case_search(channel, epsilon=eps, notion=notion.lower(), restarts=restarts,
                            seed=seed, max_iter=max_iter, atol=atol)
    return Certificate(eps, res.value, notion, desc, False, "lower_bound", (res.rho, res.sigma),
                       _REF_SEARCH)


def qldp_certificate(
    channel,
    *,
    epsilon: float,
    restarts: int = 8,
    seed=0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> Certificate:
    r"""QLDP certificate of ``channel`` at ε: :math:`\sup E_{e^\varepsilon}(\mathcal A\rho\|
    \mathcal A\sigma)`.

    * Global :math:`\mathcal D_p` (p ∈ [0, 1], or d = 2): exact, δ = max(0, (1 − p) − (e^ε − 1)p/d).
      Derived here: by the dual form (see :mod:`qprldp_core.privacy`) δ* is the sup over
      0 ≤ M ≤ I of :math:`\lambda_{\max}(\mathcal D^\dagger M) - \gamma\lambda_{\min}
      (\mathcal D^\dagger M) = (1-p)(\lambda_{\max}(M) - \gamma\lambda_{\min}(M)) -
      (\gamma-1)p\,\mathrm{Tr}M/d \le \lambda_{\max}(M)[(1-p) - (\gamma-1)p/d]` (using
      :math:`\lambda_{\min}(M) \ge 0`, :math:`\mathrm{Tr}M \ge \lambda_{\max}(M)`), at most
      the closed form; attained by orthogonal pure inputs (the witness).
    * Local :math:`\mathcal D_p^{\otimes n}`: exact 0 for ε ≥ n ln((2 − p)/p); below it a proven
      upper bound with ``delta_lower`` (see :func:`local_depolarizing_bounds`).
    * Unitary and bit-flip channels: exact δ = 1 (orthogonal inputs stay orthogonal).
    * Any other channel (input dimension ≤ 64): ``side="lower_bound"`` from
      :func:`~qprldp_core.privacy.worst_case_search`, never a certificate.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        epsilon: ε ≥ 0 in nats.
        restarts, seed, max_iter: search settings (general channels only).
        atol: numerical tolerance (general channels only).

    Returns:
        A frozen :class:`Certificate`.

    Raises:
        ValueError: if ε < 0.
        NotImplementedError: general channel with input dimension > 64.

    References:
        Hirche, Rouzé, França, arXiv:2202.10717 (v2), Def. 3.1; derived here (docs/qprldp.md).

    Example:
        >>> c = qldp_certificate(depolarizing(0.5, 2), epsilon=0.5)
        >>> round(c.delta, 6), c.side
        (0.33782, 'exact')
    """
    channel = _check_channel(channel)
    eps = check_epsilon(epsilon)
    return _certificate(channel, eps, "QLDP", restarts, seed, max_iter, atol)


def qprldp_certificate(
    channel,
    *,
    epsilon: float,
    restarts: int = 8,
    seed=0,
    max_iter: int = 100,
    atol: float = DEFAULT_ATOL,
) -> Certificate:
    r"""QPrLDP certificate of ``channel`` at ε (sup of the violation probability).

    * Global :math:`\mathcal D_p` (p ∈ [0, 1], or d = 2): exact (docs/qprldp.md),
      δ = 0 if ε ≥ ε₀ = ln(1 + d(1 − p)/p), else (1 − p) + p k*/d with
      x = d(1 − p)/((e^ε − 1)p), k* = min(d − 1, ⌈x⌉ − 1); witness ρ uniform on k* basis states,
      σ an orthogonal basis state. Derivation (derived here): for that pair,
      :math:`\mathcal D(\rho) - \gamma\mathcal D(\sigma)` is diagonal with entries
      :math:`(1-p)/k + (1-\gamma)p/d` on ρ's k states (positive iff k < x), negative on σ's
      state and :math:`(1-\gamma)p/d \le 0` elsewhere, so the violation probability is
      :math:`(1-p) + kp/d`. Optimality over *all* pairs (derived here), p ∈ [0, 1): write
      :math:`\mathcal D(\rho) - \gamma\mathcal D(\sigma) = (1-p)[(\rho - \gamma\sigma) - cI]`
      with :math:`c = (\gamma-1)p/(d(1-p)) = 1/x`. The violation projector Π is the spectral
      projector of :math:`\rho - \gamma\sigma` for eigenvalues > c; with k = rank Π,
      :math:`ck < \mathrm{Tr}\,\Pi(\rho-\gamma\sigma) \le \mathrm{Tr}\,\Pi\rho \le 1`
      (for k ≥ 1), so k < x, and k = d is impossible since
      :math:`\mathrm{Tr}(\rho - \gamma\sigma) = 1 - \gamma \le 0 \le cd`. Hence
      :math:`k \le k^*` and the violation probability
      :math:`(1-p)\mathrm{Tr}\,\Pi\rho + pk/d \le (1-p) + pk^*/d`; if x ≤ 1 then k = 0 and it
      is 0. p = 1 gives 0; qubits with p > 1 reduce to 2 − p (``_p_eff_qubit``). The tests
      also check it against :func:`~qprldp_core.privacy.worst_case_search` (d ≤ 8) and random
      pairs.
    * Local :math:`\mathcal D_p^{\otimes n}`: exact 0 for ε ≥ n ln((2 − p)/p); below it a proven
      upper bound (QLDP → QPrLDP conversion) with ``delta_lower``.
    * Unitary and bit-flip channels: exact δ = 1.
    * Any other channel: ``side="lower_bound"`` from the worst-case search.

    Args:
        channel: a :class:`~qprldp_core.channels.Channel`.
        epsilon: ε ≥ 0 in nats.
        restarts, seed, max_iter: search settings (general channels only).
        atol: numerical tolerance (general channels only).

    Returns:
        A frozen :class:`Certificate`.

    Raises:
        ValueError: if ε < 0.
        NotImplementedError: general channel with input dimension > 64.

    References:
        Shi, arXiv:2607.06307 (QPrLDP; depolarizing conditions); derived here (docs/qprldp.md).

    Example:
        >>> c = qprldp_certificate(depolarizing(0.2, 4), epsilon=1.0)
        >>> round(c.delta, 6), c.side
        (0.95, 'exact')
    """
    channel = _check_channel(channel)
    eps = check_epsilon(epsilon)
    return _certificate(channel, eps, "QPrLDP", restarts, seed, max_iter, atol)


# -- smallest ε for a δ ------------------------------------------------------------------------
def _certified_upper(channel, eps: float, notion: str) -> float | None:
    """A proven upper bound on δ*(ε), or None if none is available."""
    cert = _certificate(channel, eps, notion, 1, 0, 1, DEFAULT_ATOL)
    return cert.delta if cert.side in ("exact", "upper_bound") else None


def _le(value: float, delta: float) -> bool:
    """value ≤ delta up to a relative _TIE_RTOL (so a δ* computed 1 ulp above δ still counts)."""
    return value <= delta * (1.0 + _TIE_RTOL)


def _recheck_up(channel, eps: float, delta: float, notion: str) -> float:
    """Return the smallest of eps, nextafter(eps), ... whose certified δ is ≤ delta."""
    for _ in range(64):
        if _le(_certified_upper(channel, eps, notion), delta):
            return eps
        eps = max(np.nextafter(eps, math.inf), eps * (1 + 1e-15))
    return math.inf  # pragma: no cover - not reached for the closed forms


def _smallest_epsilon(channel, delta: float, notion: str) -> float:
    channel = _check_channel(channel)
    kind, prm = channel.kind, channel.params
    desc = channel.description
    name = f"{notion.lower()}_epsilon"
    if channel.input_dim == 1 or channel.output_dim == 1:
        return 0.0
    if kind in ("unitary", "bit_flip"):
        return 0.0 if delta >= 1.0 else math.inf
    if kind == "depolarizing" and (prm["p"] <= 1.0 or prm["d"] == 2):
        d = prm["d"]
        p = _p_eff_qubit(prm["p"]) if d == 2 else prm["p"]
        if p == 0.0:
            return 0.0 if delta >= 1.0 else math.inf
        if notion == "QLDP":
            # invert δ = (1 − p) − (e^ε − 1)p/d
            eps = math.log1p(d * max(0.0, 1.0 - p - delta) / p)
        else:
            if _le((1.0 - p) + p * (d - 1) / d, delta):
                eps = 0.0
            else:
                kmax = math.floor((delta - (1.0 - p)) * d / p * (1 + _TIE_RTOL))
                kmax = min(kmax, d - 1)
                eps = math.log1p(d * (1.0 - p) / (p * (max(kmax, 0) + 1)))
        return _recheck_up(channel, eps, delta, notion)
    if kind == "local_depolarizing":
        pe = _p_eff_qubit(prm["p"])
        if pe == 0.0:
            return 0.0 if delta >= 1.0 else math.inf
        hi = _local_threshold(pe, prm["n"])
        lo = 0.0
        if _le(_certified_upper(channel, 0.0, notion), delta):
            return 0.0
        for _ in range(80):  # bisection; invariant: certified δ(hi) ≤ delta < certified δ(lo)
            mid = 0.5 * (lo + hi)
            if _le(_certified_upper(channel, mid, notion), delta):
                hi = mid
            else:
                lo = mid
            if hi - lo <= 1e-12 * max(1.0, hi):
                break
        return _recheck_up(channel, hi, delta, notion)
    raise NotImplementedError(
        f"{name}: no certified upper bound on delta for {desc}; use "
        "qprldp_core.privacy.worst_case_search for lower bounds."
    )


def qldp_epsilon(channel, *, delta: float) -> float:
    r"""Smallest ε (nats) for which ``channel`` is certified (ε, δ)-QLDP.

    Global depolarizing inverts the closed form,
    :math:`\varepsilon = \ln(1 + d\max(0, 1-p-\delta)/p)`; local depolarizing bisects its proven
    upper bound and returns the high end of the bracket. The result is re-checked against the
    certificate (and moved up by ulps if rounding requires), so it is an upper bound on the exact
    smallest ε; the re-check accepts a certified δ up to a relative 1e-12 above ``delta`` (floating
    rounding of the closed form, e.g. 0.9 + 0.05 = 0.9500000000000001). ``math.inf`` if no finite
    ε works (e.g. identity channel, δ < 1).

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
        >>> round(qldp_epsilon(depolarizing(0.5, 2), delta=0.337820), 4)
        0.5
    """
    delta = check_probability(delta, "delta")
    return _smallest_epsilon(channel, delta, "QLDP")


def qprldp_epsilon(channel, *, delta: float) -> float:
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
        >>> round(qprldp_epsilon(depolarizing(0.3, 2), delta=0.0), 6)
        1.734601
    """
    delta = check_probability(delta, "delta")
    return _smallest_epsilon(channel, delta, "QPrLDP")


# -- PennyLane devices -----------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class DeviceCertificate:
    r"""Certificates for the depolarizing noise of a PennyLane circuit or noise model.

    Attributes:
        source: "QNode", "tape" or "NoiseModel".
        depolarizing_q: PennyLane parameters q of every ``DepolarizingChannel`` found, in order.
        channel_certificates: for each distinct q, the QLDP and QPrLDP certificates of the
            single-qubit :math:`\mathcal D_p`, p = 4q/3, at ``epsilon``.
        final_noise_p: per wire, the effective p of the depolarizing noise after the last
            blocking operation on that wire (see :func:`certify_device`); empty for noise models.
        product_certificates: certificates of :math:`\mathcal D_p^{\otimes n}` on all n wires
            when every wire carries the same final noise p (else for QLDP only, with the
            smallest p, which is valid by data processing); empty if some wire has none.
        variance_floor: proven lower bound v_min on the single-shot variance of every Pauli-word
            measurement of the circuit (0 where nothing is proven).
        measurement_floors: per measurement, ``(repr, floor)``; floor None for measurements
            without an observable (``probs``, ``state``...), which do not enter v_min.
        epsilon: ε in nats of the certificates.
        delta: the δ asked for (or None).
        epsilon_for_delta: for each distinct q, ``(q, qldp_epsilon, qprldp_epsilon)`` at
            ``delta`` (empty if ``delta`` is None).
        rule: the rule used for the floor, in words.
    """

    source: str
    depolarizing_q: tuple[float, ...]
    channel_certificates: tuple[Certificate, ...]
    final_noise_p: dict = field(default_factory=dict)
    product_certificates: tuple[Certificate, ...] = ()
    variance_floor: float = 0.0
    measurement_floors: tuple[tuple[str, float], ...] = ()
    epsilon: float = 0.0
    delta: float | None = None
    epsilon_for_delta: tuple[tuple[float, float, float], ...] = ()
    rule: str = ""


_FLOOR_RULE = (
    "Walking back from each measurement, on every wire, over the operations after the last "
    "blocking one: single-qubit unitaries and single-qubit unital channels commute with "
    "depolarizing noise on that wire (D_p(N(X)) = N(D_p(X)) iff N(I) = I) and with every "
    "operation on other wires, so the circuit output is (⊗_i D_{p_i}) applied to some state, "
    "with 1 - p_i the product of (1 - 4q/3) over the DepolarizingChannel(q) on wire i. For a "
    "Pauli word P (eigenvalues ±1) on support S, <P> = prod_{i in S} (1 - p_i) <P'> with "
    "|<P'>| <= 1, so Var = 1 - <P>^2 >= 1 - prod_{i in S} (1 - p_i)^2. Blocking: multi-qubit "
    "operations, non-unital channels, mid-circuit measurements and anything unrecognised. "
    "Non-Pauli-word observables get floor 0. The floor depends only on the circuit's structure, "
    "so it holds for every parameter value (e.g. all parameter-shifted circuits)."
)


def _is_unital_single_qubit(op, qml) -> bool:
    if len(op.wires) != 1:
        return False
    if isinstance(op, qml.operation.Channel):
        try:
            ks = [np.asarray(qml.math.toarray(k), dtype=np.complex128) for k in op.kraus_matrices()]
        except Exception:  # noqa: BLE001 - unknown channel: treat as blocking
            return False
        s = sum(k @ k.conj().T for k in ks)
        return bool(np.allclose(s, np.eye(2), atol=1e-10))
    if getattr(op, "has_matrix", False) and isinstance(op, qml.operation.Operator):
        name = type(op).__name__
        return name not in ("MidMeasureMP", "Projector", "Hermitian")
    return False


def _final_noise(tape, qml) -> dict:
    """Per wire: effective contraction factor f_i = prod (1 - p) of the final noise segment."""
    factors = {w: 1.0 for w in tape.wires}
    blocked = set()
    for op in reversed(tape.operations):
        wires = list(op.wires)
        if type(op).__name__ == "Barrier":
            continue
        if len(wires) == 1 and wires[0] not in blocked:
            w = wires[0]
            if type(op).__name__ == "DepolarizingChannel":
                q = float(qml.math.toarray(op.parameters[0]))
                factors[w] *= 1.0 - depolarizing_p_from_pennylane(q)
                continue
            if _is_unital_single_qubit(op, qml):
                continue
        blocked.update(wires)
    return factors


def _measurement_floor(mp, factors, qml) -> float | None:
    obs = getattr(mp, "obs", None)
    if obs is None:
        return None  # no observable (probs, counts of wires, state): no Pauli-word variance
    try:
        ps = qml.pauli.pauli_sentence(obs)
    except Exception:  # noqa: BLE001 - not expressible as Pauli sentence
        return 0.0
    ps.simplify()
    if len(ps) != 1:
        return 0.0
    (word, coeff), = ps.items()
    c = complex(qml.math.toarray(coeff))
    if abs(abs(c) - 1.0) > 1e-12 or abs(c.imag) > 1e-12:
        return 0.0  # eigenvalues not ±1
    support = [w for w, pauli in word.items() if pauli != "I"]
    if not support:
        return 0.0
    prod = 1.0
    for w in support:
        prod *= factors.get(w, 1.0) ** 2
    # round toward less credit: subtract a few ulps
    return max(0.0, (1.0 - prod) * (1.0 - 1e-12))


def _noise_model_qs(nm, qml) -> list[float]:
    qs = []
    maps = list(nm.model_map.items()) + list(getattr(nm, "meas_map", {}).items())
    for _, fn in maps:
        with qml.queuing.AnnotatedQueue() as q:
            try:
                fn(qml.Identity(0), **nm.metadata)
            except Exception:  # noqa: BLE001 - noise function needs a real op; skip
                continue
        for op in q.queue:
            if type(op).__name__ == "DepolarizingChannel":
                qs.append(float(qml.math.toarray(op.parameters[0])))
    return qs


def certify_device(
    obj,
    *,
    epsilon: float,
    delta: float | None = None,
    args: tuple = (),
    kwargs: dict | None = None,
) -> DeviceCertificate:
    r"""Certify the depolarizing noise of a PennyLane QNode, tape or noise model.

    Reads every ``qml.DepolarizingChannel(q)`` (converted to :math:`\mathcal D_p`, p = 4q/3),
    certifies each distinct single-qubit channel (QLDP and QPrLDP at ``epsilon``), the n-qubit
    product of the final noise layer when it covers every wire, and computes the variance floor
    :math:`v_{\min}` used by the optimizer's ``depolarizing`` credit mode.

    Variance floor (derived here). Rule: for each wire, walk backwards from the measurements
    over the operations acting on it after its last *blocking* operation (multi-qubit gates,
    non-unital channels, mid-circuit measurements, unknown operations). Single-qubit unitaries
    and unital channels N commute with :math:`\mathcal D_p` on that wire (:math:`\mathcal D_p
    \circ N = N \circ \mathcal D_p` iff N(I) = I) and operations on other wires commute
    trivially, so the output is :math:`(\bigotimes_i \mathcal D_{p_i})(\tau)` for some state τ,
    with :math:`1 - p_i = \prod (1 - 4q_k/3)` over that wire's final channels. The adjoint of
    :math:`\mathcal D_p` maps a traceless Pauli to :math:`(1-p)` times itself, so for a Pauli word
    P with support S, :math:`\langle P\rangle = \prod_{i\in S}(1-p_i)\,\mathrm{Tr}[P\tau]` and

    .. math::

        \mathrm{Var}(P) = 1 - \langle P\rangle^2 \ge 1 - \prod_{i\in S}(1 - p_i)^2 =: v_{\min}(P).

    Noise *before* a later multi-qubit gate is not counted (a CNOT can undo the contraction of a
    single Bloch component). The returned ``variance_floor`` is the minimum over the circuit's
    measurements with a Pauli-word observable (coefficient ±1); other observables get 0, as does
    a bare ``NoiseModel`` (where the noise lands depends on the circuit: apply it with
    ``qml.add_noise`` and pass the QNode). The floor is attained when τ is an eigenstate of P.

    The certificates are about the device channel (indistinguishability of its input states),
    not about training data: the DP-SGD guarantee of ``pennylane_qshiftdp`` does not follow from
    them, and only ``variance_floor`` enters training, through the optional shot-noise credit
    (``docs/qprldp.md`` §7.2).

    Args:
        obj: a ``qml.QNode`` (its tape is constructed at ``level="device"`` with ``args`` and
            ``kwargs``, so ``qml.add_noise`` transforms are included), a ``QuantumScript``/tape,
            or a ``qml.NoiseModel``.
        epsilon: ε ≥ 0 in nats for the certificates.
        delta: optional δ in [0, 1]; if given, the smallest certified ε for it is reported.
        args, kwargs: arguments used to build the QNode's tape (the floor does not depend on
            their values, only on the circuit structure they produce).

    Returns:
        A frozen :class:`DeviceCertificate`.

    Raises:
        TypeError: if ``obj`` is not a QNode, tape or NoiseModel.
        ValueError: for invalid ε or δ.

    References:
        Derived here; PennyLane ``DepolarizingChannel`` convention p = 4q/3.

    Example:
        >>> import pennylane as qml
        >>> ops = [qml.Hadamard(0), qml.DepolarizingChannel(0.3, wires=0)]
        >>> tape = qml.tape.QuantumScript(ops, [qml.expval(qml.PauliX(0))])
        >>> dc = certify_device(tape, epsilon=1.0)
        >>> round(dc.variance_floor, 6), dc.final_noise_p
        (0.64, {0: 0.4})
    """
    import pennylane as qml  # lazy: qprldp_core must import without PennyLane

    eps = check_epsilon(epsilon)
    if delta is not None:
        delta = check_probability(delta, "delta")
    kwargs = dict(kwargs or {})
    factors: dict = {}
    floors: list[tuple[str, float]] = []
    if isinstance(obj, qml.NoiseModel):
        source = "NoiseModel"
        qs = _noise_model_qs(obj, qml)
    else:
        if isinstance(obj, qml.QNode):
            source = "QNode"
            tape = qml.workflow.construct_tape(obj, level="device")(*args, **kwargs)
        elif isinstance(obj, qml.tape.QuantumScript):
            source = "tape"
            tape = obj
        else:
            raise TypeError(
                "`obj` must be a qml.QNode, a QuantumScript/tape or a qml.NoiseModel. "
                f"Found {type(obj).__name__}."
            )
        qs = [
            float(qml.math.toarray(op.parameters[0]))
            for op in tape.operations
            if type(op).__name__ == "DepolarizingChannel"
        ]
        factors = _final_noise(tape, qml)
        floors = [(repr(mp), _measurement_floor(mp, factors, qml)) for mp in tape.measurements]
    distinct = sorted(set(qs))
    certs: list[Certificate] = []
    eps_delta = []
    for q in distinct:
        ch = depolarizing(depolarizing_p_from_pennylane(q), 2)
        certs += [qldp_certificate(ch, epsilon=eps), qprldp_certificate(ch, epsilon=eps)]
        if delta is not None:
            eps_delta.append((q, qldp_epsilon(ch, delta=delta), qprldp_epsilon(ch, delta=delta)))
    final_p = {w: 1.0 - f for w, f in factors.items()}
    prod: list[Certificate] = []
    if final_p and all(p > 0 for p in final_p.values()):
        ps = sorted(final_p.values())
        n = len(ps)
        same = ps[-1] - ps[0] <= 1e-12
        if all(p <= 1.0 for p in ps) or same:
            # QLDP: D_{p'} = D_s ∘ D_p for p ≤ p' ≤ 1, so the smallest p certifies by data
            # processing; QPrLDP is not closed under post-processing: only when all p are equal.
            ch = local_depolarizing(min(ps[0], 4.0 / 3.0), n)
            prod.append(qldp_certificate(ch, epsilon=eps))
            if same:
                prod.append(qprldp_certificate(ch, epsilon=eps))
    pauli_floors = [f for (_, f) in floors if f is not None]
    vmin = float(min(pauli_floors)) if pauli_floors else 0.0
    return DeviceCertificate(
        source=source,
        depolarizing_q=tuple(qs),
        channel_certificates=tuple(certs),
        final_noise_p=final_p,
        product_certificates=tuple(prod),
        variance_floor=vmin,
        measurement_floors=tuple(floors),
        epsilon=eps,
        delta=delta,
        epsilon_for_delta=tuple(eps_delta),
        rule=_FLOOR_RULE,
    )

