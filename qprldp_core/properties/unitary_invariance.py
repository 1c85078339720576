r"""Unitary post-processing leaves the QLDP and QPrLDP quantities of every input pair unchanged."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import DEFAULT_ATOL, check_epsilon, format_number
from ..channels import Channel
from ..divergences import hockey_stick_divergence, violation_probability
from ._common import channel_outputs, hermitian_part

__all__ = ["UnitaryInvarianceWitness", "unitary_invariance"]


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


def unitary_invariance(
    channel: Channel,
    unitary: ArrayLike,
    rho: ArrayLike,
    sigma: ArrayLike,
    *,
    epsilon: float,
    atol: float = DEFAULT_ATOL,
) -> UnitaryInvarianceWitness:
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
    rp, sp = channel_outputs(channel, rho, sigma, atol)
    ru, su = hermitian_part(u @ rp @ u.conj().T), hermitian_part(u @ sp @ u.conj().T)
    g = math.exp(epsilon)
    return UnitaryInvarianceWitness(
        float(hockey_stick_divergence(rp, sp, gamma=g, atol=atol)),
        float(hockey_stick_divergence(ru, su, gamma=g, atol=atol)),
        float(violation_probability(rp, sp, epsilon=epsilon, atol=atol)),
        float(violation_probability(ru, su, epsilon=epsilon, atol=atol)),
    )
