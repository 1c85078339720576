r"""Gaussian noise from the OS's CSPRNG, resistant to floating-point attacks (secure mode)."""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["SECURE_NOISE_DRAWS", "secure_normal"]


def _box_muller(size: int) -> np.ndarray:
    """``size`` standard normal float64 draws by Box–Muller on 53-bit ``os.urandom`` uniforms."""
    m = (size + 1) // 2
    raw = np.frombuffer(os.urandom(16 * m), dtype=np.uint64).reshape(2, m)
    u1 = ((raw[0] >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53  # (0, 1]
    u2 = (raw[1] >> np.uint64(11)).astype(np.float64) * 2.0**-53  # [0, 1)
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.concatenate([r * np.cos(2 * np.pi * u2), r * np.sin(2 * np.pi * u2)])
    return z[:size]


#: Secure mode sums this many independent standard normal draws per coordinate and divides by
#: its square root (2n with n = 2, as Opacus's ``_generate_noise``; Holohan & Braghin,
#: arXiv:2107.10138, §5.1).
SECURE_NOISE_DRAWS = 4


def secure_normal(size: int) -> np.ndarray:
    r"""Standard normal float64 draws from the OS's CSPRNG, resistant to floating-point attacks.

    Each draw is :math:`(Z_1 + Z_2 + Z_3 + Z_4)/2` with independent Box–Muller normals
    :math:`Z_j` built from 53-bit uniforms read from ``os.urandom``. One Box–Muller draw leaves
    gaps in the set of representable outputs that reveal the noiseless value (Mironov's attack
    on the Laplace mechanism, carried to the Gaussian by Holohan & Braghin); the sum of
    :math:`2n` draws raises the attack's cost to :math:`2^{53(2n-1)}` — :math:`2^{159}` for
    :math:`n = 2`, the choice of Opacus's ``secure_mode`` (``opacus/optimizers/optimizer.py``,
    ``_generate_noise``). Nothing is seeded, so ``torch.manual_seed`` or ``numpy.random.seed``
    cannot reproduce the draws. (Opacus's own ``secure_mode`` needs torchcsprng, which does not
    install with torch 2.13; opacus#504.)

    Args:
        size: number of draws, ≥ 0.

    Returns:
        np.ndarray: shape ``(size,)``, float64, each draw :math:`\mathcal N(0, 1)`.

    References:
        Holohan & Braghin, "Secure Random Sampling in Differential Privacy", arXiv:2107.10138,
        §5.1; Opacus ``opacus/optimizers/optimizer.py`` (``_generate_noise``, ``secure_mode``).

    Example:
        >>> secure_normal(3).shape
        (3,)
        >>> secure_normal(0).shape
        (0,)
    """
    if size <= 0:
        return np.zeros(0)
    draws = _box_muller(SECURE_NOISE_DRAWS * size).reshape(SECURE_NOISE_DRAWS, size)
    return draws.sum(axis=0) / math.sqrt(SECURE_NOISE_DRAWS)
