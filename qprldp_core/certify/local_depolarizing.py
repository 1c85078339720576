r"""Proven bounds on δ*(ε) of local depolarizing noise :math:`\mathcal D_p^{\otimes n}` on n qubits.

Cost :math:`O(n^2)` arithmetic on length-n vectors: n may be large (never a :math:`2^n` matrix).
"""

from __future__ import annotations

from .._validation import DEFAULT_ATOL, check_epsilon
from ..channels import local_depolarizing
from ._dispatch import certificate_for, check_notion
from ._local_depolarizing import local_bounds

__all__ = ["local_depolarizing_bounds"]


def local_depolarizing_bounds(
    p: float, n: int, *, epsilon: float, notion: str = "QLDP"
) -> tuple[float, float]:
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
    ``p_eff_qubit``).

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
    notion = check_notion(notion)
    if ch.params["n"] == 1:  # single qubit: the exact global d = 2 closed form
        cert = certificate_for(ch, epsilon, notion, 1, 0, 1, DEFAULT_ATOL)
        return cert.delta, cert.delta
    return local_bounds(ch.params["p"], ch.params["n"], epsilon, notion)[:2]
