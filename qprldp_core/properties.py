r"""Structural properties of QLDP and QPrLDP, each returned with the witness a test can check.

For a channel :math:`\mathcal A` and states :math:`\rho, \sigma`, write
:math:`\rho' = \mathcal A(\rho)`, :math:`\sigma' = \mathcal A(\sigma)` and
:math:`\gamma = e^\varepsilon`.

* QLDP quantity of the pair:
  :math:`E_\gamma(\rho'\|\sigma') = \mathrm{Tr}(\rho' - \gamma\sigma')_+`.
* QPrLDP quantity of the pair: the violation probability
  :math:`V_\varepsilon(\rho'\|\sigma') = \mathrm{Tr}[\rho'\,\Pi\{\rho' - \gamma\sigma' > 0\}]`.

Results (all derived here, see ``docs/qprldp.md`` §4; the QPrLDP statements are those announced
in Shi, arXiv:2607.06307, whose proofs are not public):

* :func:`qprldp_implies_qldp` — :math:`E_\gamma \le V_\varepsilon` for every pair, so
  :math:`(\varepsilon,\delta)`-QPrLDP implies :math:`(\varepsilon,\delta)`-QLDP.
* :func:`qldp_implies_qprldp` / :func:`qldp_to_qprldp_delta` — for
  :math:`\varepsilon' > \varepsilon`, :math:`V_{\varepsilon'} \le
  E_{e^\varepsilon}\,e^{\varepsilon'}/(e^{\varepsilon'} - e^{\varepsilon})`.
* :func:`non_equivalence_witness` — a depolarizing channel whose QLDP :math:`\delta` is strictly
  below its QPrLDP :math:`\delta` at the same :math:`\varepsilon`.
* :func:`unitary_invariance` — unitary post-processing leaves both quantities unchanged.
* :func:`tensor_composition` / :func:`tensor_qldp_delta` / :func:`tensor_qprldp_delta` — product
  inputs, :math:`\varepsilon` adds; a proven :math:`\delta`.
* :func:`non_convexity_witness` — two :math:`(1, 0.1)`-QPrLDP channels whose equal mixture is not.
* :func:`post_processing_counterexample` — a bit flip after a :math:`(1, 0.1)`-QPrLDP channel raises
  the violation probability above 0.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from qprldp_core._validation import (
    DEFAULT_ATOL,
    check_density_matrix,
    check_epsilon,
    check_probability,
    format_number,
)
from qprldp_core.channels import Channel, bit_flip, depolarizing, measure_prepare_channel
from qprldp_core.divergences import hockey_stick_divergence, violation_probability

__all__ = [
    "ImplicationWitness",
    "ConverseWitness",
    "NonEquivalenceWitness",
    "UnitaryInvarianceWitness",
    "CompositionWitness",
    "NonConvexityWitness",
    "PostProcessingWitness",
    "qprldp_implies_qldp",
    "qldp_implies_qprldp",
    "qldp_to_qprldp_delta",
    "non_equivalence_witness",
    "unitary_invariance",
    "tensor_qldp_delta",
    "tensor_qprldp_delta",
    "tensor_composition",
    "non_convexity_witness",
    "post_processing_counterexample",
]


def _round_up(x: float) -> float:
    """Next float above ``x`` (a reported delta is an upper bound: round toward more privacy)."""
    return float(np.nextafter(x, np.inf))


def _check_delta(delta, name: str = "delta") -> float:
    return check_probability(delta, name)


def _outputs(channel: Channel, rho, sigma, atol: float) -> tuple[np.ndarray, np.ndarray]:
    rho = check_density_matrix(rho, "rho", atol=atol)
    sigma = check_density_matrix(sigma, "sigma", atol=atol)
    if rho.shape[0] != channel.input_dim:
        raise ValueError(
            f"`rho` must have the channel's input dimension {channel.input_dim}. "
            f"Found dimension {rho.shape[0]}."
        )
    if sigma.shape[0] != channel.input_dim:
        raise ValueError(
            f"`sigma` must have the channel's input dimension {channel.input_dim}. "
            f"Found dimension {sigma.shape[0]}."
        )
    return _herm(channel(rho)), _herm(channel(sigma))


def _herm(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.complex128)
    return (a + a.conj().T) / 2


@dataclass(frozen=True)
class ImplicationWitness:
    r"""Witness of :math:`E_{e^\varepsilon}(\rho'\|\sigma') \le V_\varepsilon(\rho'\|\sigma')`.

    Attributes:
        epsilon: privacy parameter :math:`\varepsilon` (nats).
        hockey_stick: :math:`E_{e^\varepsilon}(\mathcal A(\rho)\|\mathcal A(\sigma))` (QLDP side).
        violation_probability: :math:`V_\varepsilon(\mathcal A(\rho)\|\mathcal A(\sigma))`
            (QPrLDP side).
        holds: whether ``hockey_stick <= violation_probability`` within the tolerance.
    """

    epsilon: float
    hockey_stick: float
    violation_probability: float
    holds: bool


def qprldp_implies_qldp(channel: Channel, rho, sigma, *, epsilon, atol=DEFAULT_ATOL):
    r"""Check QPrLDP :math:`\Rightarrow` QLDP (same :math:`(\varepsilon,\delta)`) on one input pair.

    With :math:`\Pi = \Pi\{\rho' - \gamma\sigma' > 0\}`,

    .. math::
        E_\gamma(\rho'\|\sigma') = \mathrm{Tr}[(\rho' - \gamma\sigma')\Pi]
        \le \mathrm{Tr}[\rho'\Pi] = V_\varepsilon(\rho'\|\sigma'),

    because :math:`\gamma\,\mathrm{Tr}[\sigma'\Pi] \ge 0`. Taking the supremum over pairs gives the
    implication (derived here, see ``docs/qprldp.md`` §4.1).

    Args:
        channel: the channel :math:`\mathcal A`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: :math:`\varepsilon \ge 0` in nats.
        atol: tolerance passed to the validators and divergences.

    Returns:
        :class:`ImplicationWitness`.

    Raises:
        ValueError: if a state is invalid or ``epsilon`` is negative.

    References:
        Shi, arXiv:2607.06307 (abstract: "QPrLDP implies QLDP"); proof derived here.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> w = qprldp_implies_qldp(depolarizing(0.5, 2), np.diag([1.0, 0]), np.diag([0, 1.0]),
        ...                         epsilon=0.5)
        >>> round(w.hockey_stick, 6), round(w.violation_probability, 6), w.holds
        (0.33782, 0.75, True)
    """
    epsilon = check_epsilon(epsilon)
    rp, sp = _outputs(channel, rho, sigma, atol)
    e = hockey_stick_divergence(rp, sp, gamma=math.exp(epsilon), atol=atol)
    v = violation_probability(rp, sp, epsilon=epsilon, atol=atol)
    # Eigenvalues in (0, atol] may be kept by one routine and dropped by the other.
    slack = rp.shape[0] * max(atol, 1e-12)
    return ImplicationWitness(float(epsilon), float(e), float(v), bool(e <= v + slack))


def qldp_to_qprldp_delta(*, epsilon, delta, epsilon_prime) -> float:
    r"""QPrLDP parameter implied by QLDP: :math:`(\varepsilon,\delta)`-QLDP :math:`\Rightarrow`
    :math:`(\varepsilon', \delta')`-QPrLDP.

    .. math::
        \delta' = \min\Bigl(1, \frac{\delta\, e^{\varepsilon'}}{e^{\varepsilon'} - e^{\varepsilon}}
        \Bigr), \qquad \varepsilon' > \varepsilon.

    Derived here (``docs/qprldp.md`` §4.2): on
    :math:`\Pi = \Pi\{\rho' - e^{\varepsilon'}\sigma' > 0\}`,
    :math:`\mathrm{Tr}[\sigma'\Pi] \le e^{-\varepsilon'}\mathrm{Tr}[\rho'\Pi]` and
    :math:`\mathrm{Tr}[\rho'\Pi] - e^{\varepsilon}\mathrm{Tr}[\sigma'\Pi] \le \delta`, so
    :math:`\mathrm{Tr}[\rho'\Pi](1 - e^{\varepsilon - \varepsilon'}) \le \delta`.

    Args:
        epsilon: QLDP :math:`\varepsilon \ge 0` (nats).
        delta: QLDP :math:`\delta \in [0, 1]`.
        epsilon_prime: target :math:`\varepsilon' > \varepsilon` (nats).

    Returns:
        :math:`\delta' \in [0, 1]`, rounded up.

    Raises:
        ValueError: if ``epsilon_prime <= epsilon`` or a parameter is out of range.

    References:
        Shi, arXiv:2607.06307 (abstract: "the converse holds after a change of parameters");
        the formula and proof are derived here.

    Example:
        >>> round(qldp_to_qprldp_delta(epsilon=0.5, delta=0.1, epsilon_prime=1.0), 6)
        0.254149
    """
    epsilon = check_epsilon(epsilon)
    epsilon_prime = check_epsilon(epsilon_prime, "epsilon_prime")
    delta = _check_delta(delta)
    if not epsilon_prime > epsilon:
        raise ValueError(
            f"`epsilon_prime` must be > `epsilon` = {format_number(epsilon)}. "
            f"Found {format_number(epsilon_prime)}."
        )
    if delta == 0.0:
        return 0.0
    # e^{ε'}/(e^{ε'} - e^{ε}) = 1 / (1 - e^{ε - ε'}) = -1/expm1(ε - ε'), stable for ε' ≈ ε.
    return min(1.0, _round_up(delta / -math.expm1(epsilon - epsilon_prime)))


@dataclass(frozen=True)
class ConverseWitness:
    r"""Witness of :math:`V_{\varepsilon'}(\rho'\|\sigma') \le
    E_{e^\varepsilon}(\rho'\|\sigma')\,e^{\varepsilon'}/(e^{\varepsilon'} - e^\varepsilon)`.

    Attributes:
        epsilon, epsilon_prime: the two privacy parameters (nats), ``epsilon_prime > epsilon``.
        hockey_stick: :math:`E_{e^\varepsilon}(\rho'\|\sigma')`.
        violation_probability: :math:`V_{\varepsilon'}(\rho'\|\sigma')`.
        bound: the right-hand side, capped at 1.
        holds: whether ``violation_probability <= bound`` within the tolerance.
    """

    epsilon: float
    epsilon_prime: float
    hockey_stick: float
    violation_probability: float
    bound: float
    holds: bool


def qldp_implies_qprldp(channel: Channel, rho, sigma, *, epsilon, epsilon_prime, atol=DEFAULT_ATOL):
    r"""Check the converse with a change of parameters on one input pair.

    .. math::
        V_{\varepsilon'}(\rho'\|\sigma') \le
        \frac{e^{\varepsilon'}}{e^{\varepsilon'} - e^{\varepsilon}}
        E_{e^\varepsilon}(\rho'\|\sigma'), \qquad \varepsilon' > \varepsilon,

    the pairwise form of :func:`qldp_to_qprldp_delta` (derived here, ``docs/qprldp.md`` §4.2).

    Args:
        channel: the channel :math:`\mathcal A`.
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        epsilon_prime: :math:`\varepsilon' > \varepsilon` (nats).
        atol: tolerance passed to the validators and divergences.

    Returns:
        :class:`ConverseWitness`.

    Raises:
        ValueError: if ``epsilon_prime <= epsilon`` or an input is invalid.

    References:
        Shi, arXiv:2607.06307 (statement announced in the abstract); proof derived here.

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> w = qldp_implies_qprldp(depolarizing(0.5, 2), np.diag([1.0, 0]), np.diag([0, 1.0]),
        ...                         epsilon=0.5, epsilon_prime=1.0)
        >>> round(w.violation_probability, 6), round(w.bound, 6), w.holds
        (0.75, 0.858567, True)
    """
    epsilon = check_epsilon(epsilon)
    epsilon_prime = check_epsilon(epsilon_prime, "epsilon_prime")
    if not epsilon_prime > epsilon:
        raise ValueError(
            f"`epsilon_prime` must be > `epsilon` = {format_number(epsilon)}. "
            f"Found {format_number(epsilon_prime)}."
        )
    rp, sp = _outputs(channel, rho, sigma, atol)
    e = float(hockey_stick_divergence(rp, sp, gamma=math.exp(epsilon), atol=atol))
    v = float(violation_probability(rp, sp, epsilon=epsilon_prime, atol=atol))
    bound = qldp_to_qprldp_delta(epsilon=epsilon, delta=min(1.0, max(0.0, e)),
                                 epsilon_prime=epsilon_prime)
    slack = rp.shape[0] * max(atol, 1e-12) / -math.expm1(epsilon - epsilon_prime)
    return ConverseWitness(epsilon, epsilon_prime, e, v, bound, bool(v <= bound + slack))


@dataclass(frozen=True)
class NonEquivalenceWitness:
    r"""A channel whose QLDP :math:`\delta` is strictly below a QPrLDP violation at the same
    :math:`\varepsilon`.

    Attributes:
        channel: the global depolarizing channel :math:`D_p` on dimension ``d``.
        p, d, epsilon: its parameters (``epsilon`` in nats).
        qldp_delta: the exact QLDP :math:`\delta^*(\varepsilon)` (supremum over all pairs).
        rho, sigma: the input pair attaining the QPrLDP supremum.
        violation_probability: :math:`V_\varepsilon(D_p(\rho)\|D_p(\sigma))`, strictly larger
            than ``qldp_delta``.
    """

    channel: Channel
    p: float
    d: int
    epsilon: float
    qldp_delta: float
    rho: np.ndarray
    sigma: np.ndarray
    violation_probability: float


def non_equivalence_witness(*, p=0.5, d=2, epsilon=0.5) -> NonEquivalenceWitness:
    r"""Show that QLDP and QPrLDP are not equivalent at the same :math:`(\varepsilon, \delta)`.

    For :math:`D_p` on dimension :math:`d` with :math:`\varepsilon < \varepsilon_0`, the exact QLDP
    parameter is :math:`\delta^*_{\rm QLDP} = (1-p) - (e^\varepsilon - 1)p/d`, while the pair
    :math:`\rho = ` uniform on :math:`k^*` basis states, :math:`\sigma = |k^*\rangle\langle k^*|`
    has violation probability :math:`(1-p) + pk^*/d > \delta^*_{\rm QLDP}` (``docs/qprldp.md`` §3).
    At the default :math:`(p, d, \varepsilon) = (0.5, 2, 0.5)`: 0.337820 vs 0.75. So
    :math:`D_p` is :math:`(\varepsilon, 0.33782)`-QLDP but not :math:`(\varepsilon, 0.7)`-QPrLDP.

    Args:
        p: depolarizing parameter in (0, 1) of :math:`D_p(\rho) = (1-p)\rho + pI/d`.
        d: dimension :math:`\ge 2`.
        epsilon: :math:`\varepsilon \ge 0` (nats), below :math:`\varepsilon_0 = \ln(1 + d(1-p)/p)`.

    Returns:
        :class:`NonEquivalenceWitness`.

    Raises:
        ValueError: if ``p`` is not in (0, 1), ``d < 2`` or ``epsilon >= epsilon_0`` (then both
            parameters are 0 and no strict gap exists).

    References:
        Shi, arXiv:2607.06307 (abstract: "the two notions are not equivalent"); closed forms
        derived here (``docs/qprldp.md`` §3).

    Example:
        >>> w = non_equivalence_witness()
        >>> round(w.qldp_delta, 6), round(w.violation_probability, 6)
        (0.33782, 0.75)
    """
    from qprldp_core.certify import qldp_certificate

    p = check_probability(p, "p")
    if not 0.0 < p < 1.0:
        raise ValueError(f"`p` must be in (0, 1). Found {format_number(p)}.")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 2:
        raise ValueError(f"`d` must be an integer >= 2. Found {d!r}.")
    d = int(d)
    epsilon = check_epsilon(epsilon)
    eps0 = math.log1p(d * (1 - p) / p)
    if epsilon >= eps0:
        raise ValueError(
            f"`epsilon` must be < epsilon_0 = {format_number(eps0)}. "
            f"Found {format_number(epsilon)}."
        )
    channel = depolarizing(p, d)
    denom = math.expm1(epsilon) * p  # 0 for ε = 0 and for subnormal ε (underflow)
    x = d * (1 - p) / denom if denom > 0 else math.inf
    k = d - 1 if math.isinf(x) else min(d - 1, math.ceil(x) - 1)
    k = max(k, 1)
    rho = np.zeros((d, d), dtype=np.complex128)
    rho[np.arange(k), np.arange(k)] = 1.0 / k
    sigma = np.zeros((d, d), dtype=np.complex128)
    sigma[k, k] = 1.0
    v = float(violation_probability(channel(rho), channel(sigma), epsilon=epsilon))
    qldp = float(qldp_certificate(channel, epsilon=epsilon).delta)
    return NonEquivalenceWitness(channel, p, d, epsilon, qldp, rho, sigma, v)


@dataclass(frozen=True)
class UnitaryInvarianceWitness:
    r"""QLDP and QPrLDP quantities of a pair under :math:`\mathcal A` and
    :math:`U\mathcal A U^\dagger`.

    Attributes:
        hockey_stick, hockey_stick_rotated: :math:`E_{e^\varepsilon}` before / after the unitary.
        violation_probability, violation_probability_rotated: :math:`V_\varepsilon` before / after.
    """

    hockey_stick: float
    hockey_stick_rotated: float
    violation_probability: float
    violation_probability_rotated: float


def unitary_invariance(channel: Channel, unitary, rho, sigma, *, epsilon, atol=DEFAULT_ATOL):
    r"""Compare a pair's QLDP and QPrLDP quantities under :math:`\mathcal A` and
    :math:`\mathcal U\circ\mathcal A`, :math:`\mathcal U(X) = UXU^\dagger`.

    :math:`U\rho'U^\dagger - \gamma U\sigma'U^\dagger = U(\rho' - \gamma\sigma')U^\dagger` has the
    same spectrum and its positive projector is :math:`U\Pi U^\dagger`, so both
    :math:`E_\gamma` and :math:`V_\varepsilon` are unchanged pair by pair (derived here,
    ``docs/qprldp.md`` §4.4). Unitary *pre*-processing permutes the input pairs, so the suprema
    (the channel's :math:`\delta`) are unchanged too.

    Args:
        channel: the channel :math:`\mathcal A` with output dimension d_out.
        unitary: unitary matrix of shape (d_out, d_out).
        rho, sigma: input density matrices of shape (d_in, d_in).
        epsilon: :math:`\varepsilon \ge 0` (nats).
        atol: tolerance passed to the validators and divergences.

    Returns:
        :class:`UnitaryInvarianceWitness`.

    Raises:
        ValueError: if ``unitary`` is not unitary or has the wrong shape, or an input is invalid.

    References:
        Shi, arXiv:2607.06307 (abstract: "unitary post-processing preserves QPrLDP").

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> h = np.array([[1, 1], [1, -1]]) / np.sqrt(2)
        >>> w = unitary_invariance(depolarizing(0.5, 2), h, np.diag([1.0, 0]), np.diag([0, 1.0]),
        ...                        epsilon=0.5)
        >>> round(w.violation_probability, 6), round(w.violation_probability_rotated, 6)
        (0.75, 0.75)
    """
    epsilon = check_epsilon(epsilon)
    u = np.asarray(unitary, dtype=np.complex128)
    dout = channel.output_dim
    if u.shape != (dout, dout):
        raise ValueError(
            f"`unitary` must have shape ({dout}, {dout}). Found shape {u.shape}."
        )
    err = float(np.max(np.abs(u.conj().T @ u - np.eye(dout))))
    if err > max(atol, 1e-10) * 100:
        raise ValueError(
            f"`unitary` must be unitary. Found max |U^dagger U - I| entry {format_number(err)}."
        )
    rp, sp = _outputs(channel, rho, sigma, atol)
    ru, su = _herm(u @ rp @ u.conj().T), _herm(u @ sp @ u.conj().T)
    g = math.exp(epsilon)
    return UnitaryInvarianceWitness(
        float(hockey_stick_divergence(rp, sp, gamma=g, atol=atol)),
        float(hockey_stick_divergence(ru, su, gamma=g, atol=atol)),
        float(violation_probability(rp, sp, epsilon=epsilon, atol=atol)),
        float(violation_probability(ru, su, epsilon=epsilon, atol=atol)),
    )


def tensor_qldp_delta(*, epsilon1, delta1, epsilon2, delta2) -> tuple[float, float]:
    r"""QLDP parameters of :math:`\mathcal A\otimes\mathcal B` on product inputs.

    If :math:`\mathcal A` is :math:`(\varepsilon_1,\delta_1)`-QLDP and :math:`\mathcal B` is
    :math:`(\varepsilon_2,\delta_2)`-QLDP, then for all product inputs
    :math:`\rho_1\otimes\rho_2`, :math:`\sigma_1\otimes\sigma_2`,

    .. math::
        E_{e^{\varepsilon_1+\varepsilon_2}} \le
        \min(\delta_1 + e^{\varepsilon_1}\delta_2,\ \delta_2 + e^{\varepsilon_2}\delta_1).

    Derived here (``docs/qprldp.md`` §4.5) from
    :math:`\rho_1'\otimes\rho_2' - \gamma_1\gamma_2\sigma_1'\otimes\sigma_2' =
    (\rho_1' - \gamma_1\sigma_1')\otimes\rho_2'
    + \gamma_1\sigma_1'\otimes(\rho_2' - \gamma_2\sigma_2')`
    and subadditivity of :math:`\mathrm{Tr}(\cdot)_+`. Entangled inputs are not covered.

    Args:
        epsilon1, epsilon2: :math:`\varepsilon_i \ge 0` (nats).
        delta1, delta2: :math:`\delta_i \in [0, 1]`.

    Returns:
        ``(epsilon, delta)`` with :math:`\varepsilon = \varepsilon_1 + \varepsilon_2` and the
        :math:`\delta` above capped at 1 and rounded up.

    Raises:
        ValueError: if a parameter is out of range.

    References:
        Compare the composition results of Hirche, Rouzé, França, arXiv:2202.10717; this
        product-input bound is derived here.

    Example:
        >>> eps, delta = tensor_qldp_delta(epsilon1=0.5, delta1=0.1, epsilon2=1.0, delta2=0.0)
        >>> eps, round(delta, 6)
        (1.5, 0.1)
    """
    e1 = check_epsilon(epsilon1, "epsilon1")
    e2 = check_epsilon(epsilon2, "epsilon2")
    d1 = _check_delta(delta1, "delta1")
    d2 = _check_delta(delta2, "delta2")
    delta = min(d1 + math.exp(e1) * d2, d2 + math.exp(e2) * d1)
    if delta > 0:
        delta = _round_up(delta)
    return e1 + e2, min(1.0, delta)


def tensor_qprldp_delta(*, epsilon1, delta1, epsilon2, delta2, epsilon_prime) -> float:
    r"""QPrLDP :math:`\delta'` of :math:`\mathcal A\otimes\mathcal B` on product inputs at
    :math:`\varepsilon' > \varepsilon_1 + \varepsilon_2`.

    Chain of proven steps (derived here, ``docs/qprldp.md`` §4.5): each factor's
    :math:`(\varepsilon_i,\delta_i)`-QPrLDP implies :math:`(\varepsilon_i,\delta_i)`-QLDP
    (:func:`qprldp_implies_qldp`); :func:`tensor_qldp_delta` composes them; the converse
    :func:`qldp_to_qprldp_delta` converts back at :math:`\varepsilon'`:

    .. math::
        \delta' = \frac{e^{\varepsilon'}}{e^{\varepsilon'} - e^{\varepsilon_1+\varepsilon_2}}
        \min(\delta_1 + e^{\varepsilon_1}\delta_2,\ \delta_2 + e^{\varepsilon_2}\delta_1).

    This is weaker than the bound announced in arXiv:2607.06307 (additive :math:`\varepsilon`
    with no slack; its :math:`\delta` depends on the largest output eigenvalue), which we could
    not reconstruct with a proof.

    Args:
        epsilon1, epsilon2: :math:`\varepsilon_i \ge 0` (nats).
        delta1, delta2: QPrLDP :math:`\delta_i \in [0, 1]`.
        epsilon_prime: :math:`\varepsilon' > \varepsilon_1 + \varepsilon_2` (nats).

    Returns:
        :math:`\delta' \in [0, 1]`, rounded up.

    Raises:
        ValueError: if ``epsilon_prime <= epsilon1 + epsilon2`` or a parameter is out of range.

    References:
        Shi, arXiv:2607.06307 (abstract); this weaker bound is derived here.

    Example:
        >>> round(tensor_qprldp_delta(epsilon1=0.5, delta1=0.1, epsilon2=0.5, delta2=0.0,
        ...                           epsilon_prime=2.0), 6)
        0.158198
    """
    eps, delta = tensor_qldp_delta(
        epsilon1=epsilon1, delta1=delta1, epsilon2=epsilon2, delta2=delta2
    )
    epsilon_prime = check_epsilon(epsilon_prime, "epsilon_prime")
    if not epsilon_prime > eps:
        raise ValueError(
            f"`epsilon_prime` must be > `epsilon1 + epsilon2` = {format_number(eps)}. "
            f"Found {format_number(epsilon_prime)}."
        )
    return qldp_to_qprldp_delta(epsilon=eps, delta=delta, epsilon_prime=epsilon_prime)


@dataclass(frozen=True)
class CompositionWitness:
    r"""Pairwise quantities of :math:`\mathcal A\otimes\mathcal B` on product inputs.

    Attributes:
        epsilon1, epsilon2: per-factor :math:`\varepsilon_i` (nats).
        delta1, delta2: per-factor :math:`E_{e^{\varepsilon_i}}` of the pair.
        joint_hockey_stick: :math:`E_{e^{\varepsilon_1+\varepsilon_2}}` of the product pair.
        qldp_bound: :func:`tensor_qldp_delta` applied to ``delta1, delta2``.
        epsilon_prime: the QPrLDP parameter used, or ``None``.
        joint_violation_probability: :math:`V_{\varepsilon'}` of the product pair, or ``None``.
        qprldp_bound: :func:`tensor_qprldp_delta` applied to the factors' *violation
            probabilities* at :math:`\varepsilon_i`, or ``None``.
    """

    epsilon1: float
    epsilon2: float
    delta1: float
    delta2: float
    joint_hockey_stick: float
    qldp_bound: float
    epsilon_prime: float | None = None
    joint_violation_probability: float | None = None
    qprldp_bound: float | None = None


def tensor_composition(
    channel_a: Channel,
    channel_b: Channel,
    rho1,
    sigma1,
    rho2,
    sigma2,
    *,
    epsilon1,
    epsilon2,
    epsilon_prime=None,
    atol=DEFAULT_ATOL,
) -> CompositionWitness:
    r"""Evaluate the tensor-product composition bounds on one product input pair.

    Computes :math:`\delta_i = E_{e^{\varepsilon_i}}` of each factor's pair and the joint
    :math:`E_{e^{\varepsilon_1+\varepsilon_2}}(\mathcal A(\rho_1)\otimes\mathcal B(\rho_2)\|
    \mathcal A(\sigma_1)\otimes\mathcal B(\sigma_2))`, which :func:`tensor_qldp_delta` bounds. If
    ``epsilon_prime`` is given, also the joint violation probability at :math:`\varepsilon'`,
    bounded by :func:`tensor_qprldp_delta` of the factors' violation probabilities.

    Args:
        channel_a, channel_b: the channels :math:`\mathcal A`, :math:`\mathcal B`.
        rho1, sigma1: inputs of ``channel_a``, shape (d_a, d_a).
        rho2, sigma2: inputs of ``channel_b``, shape (d_b, d_b).
        epsilon1, epsilon2: :math:`\varepsilon_i \ge 0` (nats).
        epsilon_prime: optional :math:`\varepsilon' > \varepsilon_1 + \varepsilon_2` (nats).
        atol: tolerance passed to the validators and divergences.

    Returns:
        :class:`CompositionWitness`.

    Raises:
        ValueError: if an input is invalid or ``epsilon_prime`` is too small.

    References:
        Derived here (``docs/qprldp.md`` §4.5).

    Example:
        >>> from qprldp_core.channels import depolarizing
        >>> ch = depolarizing(0.5, 2)
        >>> z, o = np.diag([1.0, 0]), np.diag([0, 1.0])
        >>> w = tensor_composition(ch, ch, z, o, z, o, epsilon1=0.5, epsilon2=0.5)
        >>> w.joint_hockey_stick <= w.qldp_bound
        True
    """
    e1 = check_epsilon(epsilon1, "epsilon1")
    e2 = check_epsilon(epsilon2, "epsilon2")
    r1, s1 = _outputs(channel_a, rho1, sigma1, atol)
    r2, s2 = _outputs(channel_b, rho2, sigma2, atol)
    d1 = min(1.0, max(0.0, float(hockey_stick_divergence(r1, s1, gamma=math.exp(e1), atol=atol))))
    d2 = min(1.0, max(0.0, float(hockey_stick_divergence(r2, s2, gamma=math.exp(e2), atol=atol))))
    rj, sj = np.kron(r1, r2), np.kron(s1, s2)
    joint = float(hockey_stick_divergence(rj, sj, gamma=math.exp(e1 + e2), atol=atol))
    _, qldp_bound = tensor_qldp_delta(epsilon1=e1, delta1=d1, epsilon2=e2, delta2=d2)
    if epsilon_prime is None:
        return CompositionWitness(e1, e2, d1, d2, joint, qldp_bound)
    v1 = min(1.0, max(0.0, float(violation_probability(r1, s1, epsilon=e1, atol=atol))))
    v2 = min(1.0, max(0.0, float(violation_probability(r2, s2, epsilon=e2, atol=atol))))
    bound = tensor_qprldp_delta(
        epsilon1=e1, delta1=v1, epsilon2=e2, delta2=v2, epsilon_prime=epsilon_prime
    )
    vj = float(violation_probability(rj, sj, epsilon=float(epsilon_prime), atol=atol))
    return CompositionWitness(e1, e2, d1, d2, joint, qldp_bound, float(epsilon_prime), vj, bound)


@dataclass(frozen=True)
class NonConvexityWitness:
    r"""Two :math:`(\varepsilon,\delta)`-QPrLDP channels whose equal mixture is not.

    Attributes:
        epsilon, delta: the privacy parameters (nats; :math:`\delta > 0`).
        channel_a, channel_b: the two channels, each :math:`(\varepsilon,\delta)`-QPrLDP (proof
            in ``docs/qprldp.md`` §4.6).
        weight: mixture weight :math:`\lambda`; the mixture is
            :math:`\lambda\mathcal A + (1-\lambda)\mathcal B`.
        mixture: the mixed channel.
        rho, sigma: input pair violating the mixture's :math:`(\varepsilon,\delta)`-QPrLDP.
        violation_probability: :math:`V_\varepsilon` of the mixture on the pair (> ``delta``).
    """

    epsilon: float
    delta: float
    channel_a: Channel
    channel_b: Channel
    weight: float
    mixture: Channel
    rho: np.ndarray
    sigma: np.ndarray
    violation_probability: float


# Hard-coded witness parameters (derived here, docs/qprldp.md §4.6): ε = 1, δ = 0.1, and a
# randomized-response channel with ratio γ_B = 2.5 < e.
_NC_EPSILON = 1.0
_NC_DELTA = 0.1
_NC_GAMMA_B = 2.5


def _leaky_channel(delta: float) -> Channel:
    # W(.|0) = (δ, 1 − δ), W(.|1) = (0, 1): QPrLDP δ exactly δ for δ < 1 − e^{−ε}.
    return measure_prepare_channel([[delta, 0.0], [1.0 - delta, 1.0]])


def _randomized_response(gamma: float) -> Channel:
    a = gamma / (1.0 + gamma)
    return measure_prepare_channel([[a, 1.0 - a], [1.0 - a, a]])


def non_convexity_witness() -> NonConvexityWitness:
    r"""Two :math:`(1, 0.1)`-QPrLDP qubit channels whose equal mixture is not
    :math:`(1, 0.1)`-QPrLDP.

    Channel A measures in the computational basis and outputs :math:`|0\rangle` with probability
    0.1 on input 0 and never on input 1: its output on :math:`\rho` is
    :math:`\mathrm{diag}(0.1a, 1 - 0.1a)`, :math:`a = \rho_{00}`, and only outcome 0 can be
    violated, with mass at most 0.1. Channel B is randomized response with likelihood ratio
    :math:`2.5 < e`, hence :math:`(1, 0)`-QPrLDP. Their equal mixture on
    :math:`\rho = |0\rangle\langle 0|, \sigma = |1\rangle\langle 1|` has outcome-0 likelihood ratio
    :math:`(0.1 + 2.5/3.5)/(1/3.5) = 2.85 > e`, violated with mass
    :math:`(0.1 + 2.5/3.5)/2 = 0.407143 > 0.1` (derived here, ``docs/qprldp.md`` §4.6).

    Returns:
        :class:`NonConvexityWitness`.

    References:
        Shi, arXiv:2607.06307 (abstract: "the set of QPrLDP channels is not convex for δ > 0");
        this witness is constructed here.

    Example:
        >>> w = non_convexity_witness()
        >>> w.delta, round(w.violation_probability, 6)
        (0.1, 0.407143)
    """
    a = _leaky_channel(_NC_DELTA)
    b = _randomized_response(_NC_GAMMA_B)
    lam = 0.5
    mix = Channel([math.sqrt(lam) * k for k in a.kraus] + [math.sqrt(1 - lam) * k for k in b.kraus])
    rho = np.diag([1.0, 0.0]).astype(np.complex128)
    sigma = np.diag([0.0, 1.0]).astype(np.complex128)
    v = float(violation_probability(mix(rho), mix(sigma), epsilon=_NC_EPSILON))
    return NonConvexityWitness(_NC_EPSILON, _NC_DELTA, a, b, lam, mix, rho, sigma, v)


@dataclass(frozen=True)
class PostProcessingWitness:
    r"""A QPrLDP channel whose post-processing by a bit flip raises the violation probability.

    Attributes:
        epsilon, delta: :math:`(\varepsilon,\delta)` of ``channel`` (exact QPrLDP supremum).
        channel: the :math:`(\varepsilon,\delta)`-QPrLDP channel :math:`\mathcal A`.
        flip_probability: :math:`q` of the bit flip :math:`\mathcal N(\rho)=(1-q)\rho + qX\rho X`.
        composed: :math:`\mathcal N\circ\mathcal A`.
        rho, sigma: input pair.
        violation_probability: :math:`V_\varepsilon` of ``composed`` on the pair (> ``delta``).
    """

    epsilon: float
    delta: float
    channel: Channel
    flip_probability: float
    composed: Channel
    rho: np.ndarray
    sigma: np.ndarray
    violation_probability: float


_PP_FLIP = 0.02


def post_processing_counterexample() -> PostProcessingWitness:
    r"""QPrLDP is not closed under post-processing: a bit flip (identity/X mixture) after a
    :math:`(1, 0.1)`-QPrLDP channel.

    :math:`\mathcal A` is channel A of :func:`non_convexity_witness` (exact QPrLDP
    :math:`\delta = 0.1` at :math:`\varepsilon = 1`). After :math:`\mathcal N(\rho) = 0.98\rho +
    0.02X\rho X`, the pair :math:`|0\rangle, |1\rangle` gives outputs
    :math:`\mathrm{diag}(0.116, 0.884)` and :math:`\mathrm{diag}(0.02, 0.98)`; outcome 0 has ratio
    :math:`5.8 > e` and mass :math:`0.116 > 0.1` (derived here, ``docs/qprldp.md`` §4.7). QLDP, by
    contrast, is closed under post-processing (data processing of :math:`E_\gamma`).

    Returns:
        :class:`PostProcessingWitness`.

    References:
        Shi, arXiv:2607.06307 (abstract: identity and bit-flip mixture counterexample); this
        instance is constructed here.

    Example:
        >>> w = post_processing_counterexample()
        >>> w.delta, round(w.violation_probability, 6)
        (0.1, 0.116)
    """
    a = _leaky_channel(_NC_DELTA)
    n = bit_flip(_PP_FLIP)
    comp = n.compose(a)
    rho = np.diag([1.0, 0.0]).astype(np.complex128)
    sigma = np.diag([0.0, 1.0]).astype(np.complex128)
    v = float(violation_probability(comp(rho), comp(sigma), epsilon=_NC_EPSILON))
    return PostProcessingWitness(_NC_EPSILON, _NC_DELTA, a, _PP_FLIP, comp, rho, sigma, v)
