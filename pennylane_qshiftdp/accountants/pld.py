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
``PLDAccountant`` composes them, so both give the same ε (a test checks it). Compositions are
not cached here: a :class:`~pennylane_qshiftdp.accountants.ledger.PrivacyLedger` remembers its
own, so one run never gets its ε free from another in the same process.

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

from .rdp import rdp_epsilon

__all__ = ["PLDAccountant", "PLD_MAX_STEPS", "PLD_RELATIVE_INTERVAL", "one_step_cache_clear",
           "pld_epsilon", "pld_interval"]

#: Discretisation interval of the privacy loss distributions of a history, relative to the
#: history's RDP ε at δ = min(δ, 1e-5) (a cheap upper bound of the scale of its privacy loss):
#: the interval is 2^⌊log₂(PLD_RELATIVE_INTERVAL · ε_RDP)⌋ nats, about 1e-3 at ε ≈ 1
#: (dp-accounting's default is a fixed 1e-4). Pessimistic rounding makes any interval an upper
#: bound; one relative to the ε keeps the distribution's support (its cost) about the same at
#: every scale: a fixed interval is too coarse for ε ≈ 1e-3 (it cannot resolve it) and far too
#: fine for ε ≈ 1e3 (σ ≪ 1: millions of points, gigabytes). The excess over a ten times finer
#: grid on the shipped tasks: benchmarks/RESULTS.md §5, "PLD discretisation".
PLD_RELATIVE_INTERVAL = 1e-3

# Bounds of the interval (nats): below, a grid far finer than any ε worth resolving (2^-20 ≈
# 1e-6); above, ε is tens of thousands of nats (no protection to resolve).
_MIN_INTERVAL, _MAX_INTERVAL = 2.0**-20, 2.0**4

#: Beyond this many steps in a history, :func:`pld_epsilon` returns the RDP accountant's ε of
#: the same history (Opacus's; also an upper bound, looser by a few per cent): composing a
#: discretised PLD takes seconds per evaluation at 10⁷ steps and tens of minutes at 10⁹ (a
#: calibration evaluates it dozens of times), while no real run takes a million steps.
PLD_MAX_STEPS = 10**6

# The scale of a history's privacy loss is read at this δ or a smaller one: at a large δ the
# RDP conversion can return ε ≤ 0 (Opacus), which says nothing of the loss's spread.
_SCALE_DELTA = 1e-5


def pld_interval(history, *, delta: float) -> float:
    r"""The discretisation interval (nats) :func:`pld_epsilon` uses for ``history`` at ``delta``.

    :math:`2^{\lfloor \log_2(10^{-3}\,\varepsilon_{RDP}) \rfloor}` with
    :math:`\varepsilon_{RDP}` the RDP accountant's ε of the same history at
    :math:`\min(\delta, 10^{-5})`, within [2⁻²⁰, 2⁴] (derived here: a numerical choice; any
    interval gives an upper bound).

    Example:
        >>> pld_interval([(1.0, 0.2, 50)], delta=1e-5) == 2.0**-7  # ε_RDP = 11.3
        True
    """
    eps = (rdp_epsilon(history, delta=min(delta, _SCALE_DELTA))
           if history else 0.0)
    if not math.isfinite(eps):
        return _MAX_INTERVAL
    x = PLD_RELATIVE_INTERVAL * max(eps, _MIN_INTERVAL)
    return min(max(2.0 ** math.floor(math.log2(x)), _MIN_INTERVAL), _MAX_INTERVAL)


def _one_step_pld(sigma: float, q: float, interval: float):
    """dp-accounting's PLD of one Poisson-subsampled Gaussian step (pessimistic)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q,
                                       pessimistic_estimate=True,
                                       value_discretization_interval=interval)


#: Above this ε (nats) :func:`pld_epsilon` also composes RDP and returns the smaller bound.
_RDP_CHECK_EPSILON = 50.0

#: One-step PLDs a caller's own cache (``pld_epsilon(..., cache=...)``) keeps.
_ONE_STEP_CACHE_SIZE = 64


@functools.lru_cache(maxsize=_ONE_STEP_CACHE_SIZE)
def _one_step(sigma: float, q: float, interval: float):
    """:func:`_one_step_pld`, cached process-wide for callers without a cache of their own.

    A pure function of (σ, q, interval) whose result is never modified (dp-accounting's
    ``compose`` and ``self_compose`` return new distributions), so the cache changes no ε. A
    :class:`~pennylane_qshiftdp.accountants.ledger.PrivacyLedger` passes its own cache
    instead, so no run's cost depends on another's;
    :func:`~pennylane_qshiftdp.accountants.composition.clear_caches` empties this one.
    """
    return _one_step_pld(sigma, q, interval)


def _cached_one_step(cache: dict | None, sigma: float, q: float, interval: float):
    """The one-step PLD from ``cache`` (a caller's dict) or, without one, the shared cache."""
    if cache is None:
        return _one_step(sigma, q, interval)
    key = (sigma, q, interval)
    if key not in cache:
        if len(cache) >= _ONE_STEP_CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = _one_step_pld(sigma, q, interval)
    return cache[key]


def one_step_cache_clear() -> None:
    """Empty the cache of one-step PLDs (see
    :func:`~pennylane_qshiftdp.accountants.composition.clear_caches`)."""
    _one_step.cache_clear()


def pld_epsilon(history, *, delta: float,
                value_discretization_interval: float | None = None,
                cache: dict | None = None) -> float:
    r"""ε (nats, an upper bound) of a history of Poisson-subsampled Gaussian steps, by PLD.

    For every ``(σ, q, steps)`` triple with q < 1, dp-accounting's pessimistic PLD of one step
    is self-composed ``steps`` times; at q = 1 the steps are one Gaussian of standard deviation
    σ/√steps. The entries are composed in order, starting from the identity, exactly as
    ``dp_accounting.pld.PLDAccountant.compose`` does for
    ``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(σ)), steps)`` (q < 1) and
    ``SelfComposedDpEvent(GaussianDpEvent(σ), steps)`` (q = 1).

    Args:
        history: list of ``(noise_multiplier σ > 0, sample_rate q ∈ (0, 1], steps ≥ 1)``.
        delta: δ ∈ (0, 1).
        value_discretization_interval: the PLDs' discretisation interval (nats, > 0);
            ``None``: :func:`pld_interval`, relative to the history's ε.
        cache: a dict in which the caller keeps its one-step PLDs (a ledger's own), or
            ``None`` for the process-wide cache. Either gives the same ε.

    Returns:
        float: ε at ``delta`` (0 for an empty history). For a history of more than
        :data:`PLD_MAX_STEPS` steps, the RDP accountant's ε (an upper bound too). Where
        dp-accounting's conversion to ε overflows (``inf`` for some histories whose ε is
        near 700 nats), the smaller of that RDP ε and the PLD ε of the history with up to
        three more steps (never below the true ε of this one). Above 50 nats, the smaller of
        the PLD ε and the RDP ε of the same history (both upper bounds; the pessimistic
        discretisation can exceed RDP's far out).

    References:
        dp-accounting ``dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism``.

    Example:
        >>> round(pld_epsilon([(1.0, 0.2, 50)], delta=1e-5), 2)  # RDP says 11.29
        10.13
    """
    if not history:
        return 0.0
    key = tuple((float(s), float(q), int(n)) for s, q, n in history)
    if sum(n for _, _, n in key) > PLD_MAX_STEPS:
        return rdp_epsilon(key, delta=delta)
    interval = (pld_interval(key, delta=delta) if value_discretization_interval is None
                else float(value_discretization_interval))
    eps = _composed_epsilon(key, float(delta), interval, cache)
    if not math.isfinite(eps):
        # dp-accounting 0.6's ε-for-δ overflows where the loss reaches ~709 nats (exp(-loss)
        # underflows): σ = 0.0887, q = 1/9 gives inf at 26 steps, finite at 25 and 27. One
        # more step never lowers the true ε (its release is post-processed away), so the PLD
        # bound of a longer history bounds this one; so does the RDP ε of the same history.
        bounds = [rdp_epsilon(key, delta=delta)]
        sigma, q, n = key[-1]
        for extra in (1, 2, 3):
            longer = _composed_epsilon(key[:-1] + ((sigma, q, n + extra),), float(delta),
                                       interval, cache)
            if math.isfinite(longer):
                bounds.append(longer)
                break
        return min(bounds)
    if eps > _RDP_CHECK_EPSILON:
        # Far out (hundreds of nats) the pessimistic discretisation can exceed RDP's bound of
        # the same history (σ = 0.4, q = 0.99, 242 steps: PLD 1004, RDP 1000.4): both bound
        # the true ε, so the smaller does.
        eps = min(eps, rdp_epsilon(key, delta=delta))
    return eps


def _composed_epsilon(history: tuple, delta: float, interval: float,
                      cache: dict | None = None) -> float:
    """:func:`pld_epsilon` of a history (a tuple), composed at every call (no process-wide
    cache: the ledger remembers its own compositions)."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    total = pld.identity(value_discretization_interval=interval)
    for sigma, q, n in history:
        if q == 1.0:  # n Gaussian steps are one Gaussian of std σ/√n (as dp-accounting composes
            # GaussianDpEvent): no n-fold convolution of a discretised distribution
            part = _cached_one_step(cache, sigma / math.sqrt(n), 1.0, interval)
        else:
            part = _cached_one_step(cache, sigma, q, interval).self_compose(n)
        total = total.compose(part)
    import numpy as np

    with np.errstate(over="ignore"):  # an overflow gives inf, handled by pld_epsilon
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
