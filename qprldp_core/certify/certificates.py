r"""QLDP and QPrLDP certificates of a channel at one ε.

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

import numpy as np

from .._validation import DEFAULT_ATOL, check_epsilon
from ..channels import Channel
from ..channels._checks import check_channel
from ._dispatch import certificate_for
from .statement import Certificate

__all__ = ["qldp_certificate", "qprldp_certificate"]


def qldp_certificate(
    channel: Channel,
    *,
    epsilon: float,
    restarts: int = 8,
    seed: int | np.random.Generator | None = 0,
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
        >>> from qprldp_core.channels import depolarizing
        >>> c = qldp_certificate(depolarizing(0.5, 2), epsilon=0.5)
        >>> round(c.delta, 6), c.side
        (0.33782, 'exact')
    """
    channel = check_channel(channel)
    eps = check_epsilon(epsilon)
    return certificate_for(channel, eps, "QLDP", restarts, seed, max_iter, atol)


def qprldp_certificate(
    channel: Channel,
    *,
    epsilon: float,
    restarts: int = 8,
    seed: int | np.random.Generator | None = 0,
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
      is 0. p = 1 gives 0; qubits with p > 1 reduce to 2 − p (``p_eff_qubit``). The tests
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
        >>> from qprldp_core.channels import depolarizing
        >>> c = qprldp_certificate(depolarizing(0.2, 4), epsilon=1.0)
        >>> round(c.delta, 6), c.side
        (0.95, 'exact')
    """
    channel = check_channel(channel)
    eps = check_epsilon(epsilon)
    return certificate_for(channel, eps, "QPrLDP", restarts, seed, max_iter, atol)
