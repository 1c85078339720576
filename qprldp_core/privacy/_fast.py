"""Unvalidated channel actions and random pure states used inside the worst-case searches.

Private module: the names are public so that other modules of :mod:`qprldp_core` may import them.
"""

from __future__ import annotations

import numpy as np

from ..channels import Channel
from ..channels._apply import local_depolarizing_apply

__all__ = ["fast_apply", "fast_adjoint", "pure_state", "random_pure_state"]


def fast_apply(channel: Channel, rho: np.ndarray) -> np.ndarray:
    """A(ρ) without input validation (ρ Hermitian)."""
    if channel.kind == "depolarizing":
        p, d = channel.params["p"], channel.params["d"]
        return (1 - p) * rho + p * np.trace(rho) * np.eye(d) / d
    if channel.kind == "local_depolarizing":  # self-adjoint, no Kraus operators
        return local_depolarizing_apply(rho, channel.params["p"], channel.params["n"])
    out = sum(k @ rho @ k.conj().T for k in channel.kraus)
    return (out + out.conj().T) / 2


def fast_adjoint(channel: Channel, x: np.ndarray) -> np.ndarray:
    """A†(X) without validation (X Hermitian)."""
    if channel.kind == "depolarizing":
        p, d = channel.params["p"], channel.params["d"]
        return (1 - p) * x + p * np.trace(x) * np.eye(d) / d
    if channel.kind == "local_depolarizing":
        return local_depolarizing_apply(x, channel.params["p"], channel.params["n"])
    out = sum(k.conj().T @ x @ k for k in channel.kraus)
    return (out + out.conj().T) / 2


def pure_state(v: np.ndarray) -> np.ndarray:
    v = v / np.linalg.norm(v)
    return np.outer(v, v.conj())


def random_pure_state(rng: np.random.Generator, d: int) -> np.ndarray:
    return pure_state(rng.normal(size=d) + 1j * rng.normal(size=d))
