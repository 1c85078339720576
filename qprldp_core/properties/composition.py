r"""Tensor products of QLDP and QPrLDP channels on product inputs: ε adds, with a proven δ."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._numerics import round_up
from .._validation import DEFAULT_ATOL, check_epsilon, format_number
from ..channels import Channel
from ..divergences import hockey_stick_divergence, violation_probability
from ._common import channel_outputs, check_delta
from .implications import qldp_to_qprldp_delta

__all__ = ["CompositionWitness", "tensor_qldp_delta", "tensor_qprldp_delta", "tensor_composition"]


def tensor_qldp_delta(
    *, epsilon1: float, delta1: float, epsilon2: float, delta2: float
) -> tuple[float, float]:
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
    d1 = check_delta(delta1, "delta1")
    d2 = check_delta(delta2, "delta2")
    delta = min(d1 + math.exp(e1) * d2, d2 + math.exp(e2) * d1)
    if delta > 0:
        delta = round_up(delta)
    return e1 + e2, min(1.0, delta)


def tensor_qprldp_delta(
    *, epsilon1: float, delta1: float, epsilon2: float, delta2: float, epsilon_prime: float
) -> float:
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
    rho1: ArrayLike,
    sigma1: ArrayLike,
    rho2: ArrayLike,
    sigma2: ArrayLike,
    *,
    epsilon1: float,
    epsilon2: float,
    epsilon_prime: float | None = None,
    atol: float = DEFAULT_ATOL,
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
    r1, s1 = channel_outputs(channel_a, rho1, sigma1, atol)
    r2, s2 = channel_outputs(channel_b, rho2, sigma2, atol)
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
