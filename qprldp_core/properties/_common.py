"""Helpers shared by the structural-property modules (checked channel outputs, Hermitian parts).

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_density_matrix, check_probability
from ..channels import Channel

__all__ = ["check_delta", "channel_outputs", "hermitian_part"]


def check_delta(delta, name: str = "delta") -> float:
    return check_probability(delta, name)


def channel_outputs(channel: Channel, rho, sigma, atol: float) -> tuple[np.ndarray, np.ndarray]:
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
    return hermitian_part(channel(rho)), hermitian_part(channel(sigma))


def hermitian_part(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.complex128)
    return (a + a.conj().T) / 2
