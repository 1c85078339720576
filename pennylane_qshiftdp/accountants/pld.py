r"""A privacy-loss-distribution (PLD) accountant on Google's dp-accounting, for Opacus.

:class:`PLDAccountant` is an Opacus accountant (``opacus.accountants.IAccountant``: a history
of ``(noise_multiplier, sample_rate, steps)`` triples, ``step``, ``get_epsilon(delta)``,
``mechanism()``, ``state_dict``) registered under the mechanism name ``"pld"`` through Opacus's
public :func:`opacus.accountants.register_accountant`, so Opacus's own
``create_accountant("pld")`` and ``get_noise_multiplier(..., accountant="pld")`` use it. The
analysis is dp-accounting's (``dp_accounting.pld``): every history entry is the Poisson-
subsampled Gaussian mechanism self-composed ``steps`` times, under add/remove adjacency, with
the **pessimistic** estimate (every discretisation rounds the privacy loss up, so the reported
ε is an upper bound; the connect-the-dots discretisation of Doroshenko et al.,
arXiv:2207.04380). Nothing of the PLD is written here:
the one-step distributions are cached per (σ, q) and composed as dp-accounting's own
``PLDAccountant`` composes them, so both give the same ε (a test checks it).

All ε are in nats.

References:
    Koskela, Jälkö, Honkela, arXiv:1906.03049 (PLD accounting of the subsampled Gaussian);
    Doroshenko, Ghazi, Kamath, Kumar, Manurangsi, arXiv:2207.04380 (connect the dots);
    Google's dp-accounting, ``dp_accounting.pld`` (0.6.0).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from opacus.accountants import IAccountant, create_accountant, register_accountant

__all__ = ["PLDAccountant", "PLD_VALUE_DISCRETIZATION", "pld_epsilon"]

#: Discretisation interval (nats) of every privacy loss distribution. Pessimistic rounding makes
#: any interval an upper bound; 1e-3 instead of dp-accounting's default 1e-4 is about ten times
#: faster, and the ε it reports is larger by less than 2 % (measured in
#: benchmarks/bench_accounting.py, "PLD discretisation"), never smaller.
PLD_VALUE_DISCRETIZATION = 1e-3


@functools.lru_cache(maxsize=64)
def _one_step(sigma: float, q: float, interval: float):
    """dp-accounting's PLD of one Poisson-subsampled Gaussian step (pessimistic; cached)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                       pessimistic_estimate=True,
                                       value_discretization_interval=interval)


def pld_epsilon(history, *, delta: float,
                value_discretization_interval: float = PLD_VALUE_DISCRETIZATION) -> float:
    r"""ε (nats, an upper bound) of a history of Poisson-subsampled Gaussian steps, by PLD.

    For every ``(σ, q, steps)`` triple, dp-accounting's pessimistic PLD of one step is
    self-composed ``steps`` times; the entries are composed in order, starting from the
    identity, exactly as ``dp_accounting.pld.PLDAccountant.compose`` does for
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), steps)``.

    Args:
        history: list of ``(noise_multiplier σ > 0, sample_rate q ∈ (0, 1], steps ≥ 1)``.
        delta: δ ∈ (0, 1).
        value_discretization_interval: the PLD's discretisation interval (nats, > 0).

    Returns:
        float: ε at ``delta`` (0 for an empty history).

    References:
        dp-accounting ``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism``.

    Example:
        >>> round(pld_epsilon([(1.0, 0.2, 50)], delta=1e-5), 2)  # RDP says 11.29
        10.13
    """
    if not history:
        return 0.0
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = pld.identity(value_discretization_interval=value_discretization_interval)
    for sigma, q, n in history:
        total = total.compose(
            _one_step(float(sigma), float(q), float(value_discretization_interval))
            .self_compose(int(n)))
    return float(total.get_epsilon_for_delta(delta))


class PLDAccountant(IAccountant):
    r"""Opacus accountant ``"pld"``: dp-accounting's privacy loss distributions (pessimistic).

    The history merges consecutive steps at the same (σ, q) as Opacus's RDP and PRV
    accountants do, so a history can be moved between them. ε is computed by
    :func:`pld_epsilon` (dp-accounting; add/remove adjacency, pessimistic estimate).

    Example:
        >>> from opacus.accountants import create_accountant
        >>> acct = create_accountant("pld")
        >>> for _ in range(50):
        ...     acct.step(noise_multiplier=1.0, sample_rate=0.2)
        >>> acct.history, len(acct), acct.mechanism()
        ([(1.0, 0.2, 50)], 50, 'pld')
        >>> round(acct.get_epsilon(1e-5), 2)
        10.13
    """

    def __init__(self) -> None:
        self.history: list[tuple[float, float, int]] = []

    def step(self, *, noise_multiplier: float, sample_rate: float) -> None:
        """Record one step at (σ, q), merged with the last entry if it has the same (σ, q)."""
        if self.history and self.history[-1][:2] == (noise_multiplier, sample_rate):
            s, q, n = self.history.pop()
            self.history.append((s, q, n + 1))
        else:
            self.history.append((noise_multiplier, sample_rate, 1))

    def get_epsilon(self, delta: float, *args: Any, **kwargs: Any) -> float:
        """ε (nats, an upper bound) spent so far at ``delta``; ``inf`` for σ = 0 steps."""
        if any(s == 0 for s, _, _ in self.history):
            return math.inf
        return pld_epsilon(self.history, delta=delta)

    def __len__(self) -> int:
        return sum(n for _, _, n in self.history)

    @classmethod
    def mechanism(cls) -> str:
        return "pld"


def _register() -> None:
    """Register :class:`PLDAccountant` as Opacus's ``"pld"`` (once; a foreign one is refused)."""
    try:
        register_accountant("pld", PLDAccountant)
    except ValueError:  # already registered: by this module (a re-import) or by someone else
        found = type(create_accountant("pld"))
        if f"{found.__module__}.{found.__qualname__}" != (
                f"{PLDAccountant.__module__}.{PLDAccountant.__qualname__}"):
            raise ImportError(
                f"Opacus already has an accountant for mechanism 'pld' "
                f"({found.__module__}.{found.__qualname__}); pennylane_qshiftdp registers its "
                f"own PLDAccountant under that name and will not replace another.") from None


_register()
