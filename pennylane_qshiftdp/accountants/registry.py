r"""Accountant names, resolved through Opacus's registry (``opacus.accountants.registry``).

There is one table of accountant names: Opacus's (``register_accountant`` /
``create_accountant``; this package registers dp-accounting's PLD there as ``"pld"``,
:mod:`.pld`). :func:`resolve_accountant` looks a name up in it and returns an
:class:`AccountantEntry`, which says how this package uses the class registered under that
name: how ε of a (σ, q, steps) history is computed, the tolerance of the calibration's
bisection, whether the budget check may rely on ε growing with the steps, and whether ε is
known to be an upper bound. The entries are keyed by the **class**, so a name re-registered
with another class (``register_accountant(..., force=True)``) is never computed as the class
it replaced.

* Opacus's ``RDPAccountant``, ``PRVAccountant`` and the ``PLDAccountant`` of :mod:`.pld` have
  entries of their own (:data:`ACCOUNTANTS`, the names this package ships and vouches for).
* Opacus's ``GaussianAccountant`` (``"gdp"``) is refused (:data:`REFUSED`): its ε is the
  central-limit approximation of the composed subsampled Gaussian (Bu, Dong, Long, Su,
  arXiv:1911.11607), valid only as the number of steps grows, and it can underestimate ε
  (Opacus warns so, citing Gopi et al. arXiv:2106.02848); it also refuses a σ that changes
  during a run. Numerics round toward more privacy here, so an ε that is not an upper bound
  never reaches a guarantee.
* Any other class a user registers with Opacus works end to end: its ε of a history is its
  own ``get_epsilon(delta)`` on a fresh instance holding the history. This package cannot
  check that it is an upper bound; the privacy statement says so (``vouched`` is false).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from opacus.accountants import GaussianAccountant, IAccountant, PRVAccountant, RDPAccountant
from opacus.accountants import registry as opacus_registry

from .pld import PLD_MAX_STEPS, PLDAccountant, pld_epsilon
from .rdp import quiet_opacus, rdp_epsilon

__all__ = ["ACCOUNTANTS", "DEFAULT_ACCOUNTANT", "REFUSED", "AccountantEntry", "check_accountant",
           "make_accountant", "resolve_accountant"]

History = list[tuple[float, float, int]]

#: With the PLD accountant the bisection's tolerance is at least this fraction of the target:
#: its discretisation interval (about 1e-3 × ε, pld.PLD_RELATIVE_INTERVAL) halves at some σ,
#: where ε(σ) steps down by a fraction of that interval; a fixed 0.01 nats could fall inside
#: such a step at a large ε and the bisection would never end.
PLD_RELATIVE_TOLERANCE = 5e-3

#: Above this target ε (nats) the PLD budget check composes at every step: near 700 nats
#: dp-accounting's conversion to ε overflows and :func:`~.pld.pld_epsilon` substitutes bounds
#: of neighbouring histories, which need not grow with k.
PLD_MONOTONE_MAX_EPSILON = 256.0


def _own_epsilon(cls: type[IAccountant]) -> Callable[..., float]:
    """ε of a history by a fresh ``cls()`` holding it (``get_epsilon(delta=...)``)."""

    def epsilon(history, delta: float, cache: dict | None = None) -> float:
        acct = cls()
        acct.history = [(float(s), float(q), int(n)) for s, q, n in history]
        with quiet_opacus():
            return float(acct.get_epsilon(delta=delta))

    return epsilon


def _rdp(history, delta: float, cache: dict | None = None) -> float:
    return rdp_epsilon(history, delta=delta)


def _pld(history, delta: float, cache: dict | None = None) -> float:
    return pld_epsilon([(float(s), float(q), int(n)) for s, q, n in history], delta=delta,
                       cache=cache)


def _requested(target_epsilon: float, tolerance: float) -> float:
    return tolerance


def _pld_tolerance(target_epsilon: float, tolerance: float) -> float:
    return max(tolerance, PLD_RELATIVE_TOLERANCE * target_epsilon)


@dataclasses.dataclass(frozen=True)
class AccountantEntry:
    """How this package uses the accountant class registered with Opacus under ``name``.

    Attributes:
        name: the mechanism name in Opacus's registry.
        cls: the class registered under it.
        epsilon: ``epsilon(history, delta, cache)``, ε (nats) of a list of (σ, q, steps)
            triples at δ; ``cache`` is a dict the caller keeps one-step quantities in, or
            ``None`` (only the PLD entry uses it; it changes no ε).
        tolerance: ``tolerance(target_epsilon, requested)``, the absolute tolerance (nats) of
            the calibration's bisection on ε for a requested one.
        monotone: whether ε is known to grow, in floating point, with the number of steps
            appended at one (σ, q), so the ledger's budget check may search the admissible
            step count once instead of composing at every step.
        monotone_max_epsilon: above this target ε (nats) ``monotone`` is not relied on.
        max_steps: the longest history whose ε the entry computes itself (``None``: any);
            the ledger's search for the admissible step count stops there.
        vouched: whether ε is known to be an upper bound (the accountants shipped); false for
            a class a user registered, whose ε is its own claim.
    """

    name: str
    cls: type[IAccountant]
    epsilon: Callable[..., float]
    tolerance: Callable[[float, float], float] = _requested
    monotone: bool = False
    monotone_max_epsilon: float = math.inf
    max_steps: int | None = None
    vouched: bool = False

    def epsilon_of(self, history, *, delta: float, cache: dict | None = None) -> float:
        """ε (nats) of ``history`` (a list of (σ, q, steps) triples) at ``delta``; 0 if empty.

        Args:
            history: list of ``(σ > 0, q ∈ (0, 1], steps ≥ 1)`` triples.
            delta: δ ∈ (0, 1).
            cache: a dict of the caller's for one-step quantities, or ``None``.

        Returns:
            ε in nats.
        """
        if not history:
            return 0.0
        return self.epsilon(history, delta, cache)


# The entries of the accountants shipped, by the class Opacus's registry holds for them. RDP:
# k·(RDP of one step) plus the prefix, then Opacus's conversion, all non-decreasing in floating
# point. PLD: pessimistic discretisation on an interval that only grows with k (it follows the
# history's RDP ε). PRV is not monotone here: Opacus sizes its grid from the history and its ε
# is not known to be monotone numerically, so its checks compose at every step.
_ENTRIES: dict[type[IAccountant], dict[str, Any]] = {
    RDPAccountant: dict(epsilon=_rdp, monotone=True, vouched=True),
    PRVAccountant: dict(epsilon=_own_epsilon(PRVAccountant), vouched=True),
    PLDAccountant: dict(epsilon=_pld, tolerance=_pld_tolerance, monotone=True,
                        monotone_max_epsilon=PLD_MONOTONE_MAX_EPSILON, max_steps=PLD_MAX_STEPS,
                        vouched=True),
}

#: The accountants this package ships and vouches for (ε an upper bound), by Opacus mechanism
#: name, in the order the command line lists them. Any other name of Opacus's registry is
#: resolved by :func:`resolve_accountant` too.
ACCOUNTANTS: Mapping[str, type[IAccountant]] = MappingProxyType(
    {"rdp": RDPAccountant, "prv": PRVAccountant, "pld": PLDAccountant})

#: The accountant used when none is named: dp-accounting's PLD (pessimistic). At the same ε
#: it calibrates 6–9 % less noise than RDP on the shipped tasks, in about the same time
#: (benchmarks/RESULTS.md §5). A composition costs milliseconds to tens of milliseconds; a
#: ledger's budget check needs none once it knows the admissible step count (issue 43).
DEFAULT_ACCOUNTANT = "pld"

#: Accountant classes refused, with the reason (an ε that is not an upper bound).
REFUSED: Mapping[type[IAccountant], str] = MappingProxyType({
    GaussianAccountant: (
        "Opacus's GaussianAccountant computes ε from the central-limit approximation of the "
        "composed subsampled Gaussian (Bu, Dong, Long, Su, arXiv:1911.11607), valid only as "
        "the number of steps grows: it can underestimate ε (Opacus warns so, citing "
        "arXiv:2106.02848) and it refuses a σ that changes during a run. pennylane_qshiftdp "
        "reports only upper bounds of ε; use 'pld', 'rdp' or 'prv'"),
})


def _unknown(accountant, name: str, registered: Mapping[str, type]) -> ValueError:
    listed = ", ".join(repr(c) for c in ACCOUNTANTS)
    others = [k for k, cls in registered.items() if k not in ACCOUNTANTS
              and not any(isinstance(cls, type) and issubclass(cls, r) for r in REFUSED)]
    extra = (f" (or another name of Opacus's accountant registry: "
             f"{', '.join(repr(k) for k in others)})") if others else ""
    return ValueError(f"`{name}` must be one of {listed}. Found {accountant!r}{extra}. "
                      f"An accountant of your own is registered with "
                      f"opacus.accountants.register_accountant(name, cls).")


def resolve_accountant(accountant: str, name: str = "accountant") -> AccountantEntry:
    """The :class:`AccountantEntry` of the accountant Opacus's registry holds under a name.

    Args:
        accountant: a mechanism name of ``opacus.accountants.registry`` (``"pld"``, ``"rdp"``,
            ``"prv"``, or one registered with ``opacus.accountants.register_accountant``).
        name: the argument's name in error messages.

    Returns:
        AccountantEntry: how ε of a history is computed, the calibration's tolerance, and
        what the budget check may rely on.

    Raises:
        ValueError: for a name Opacus's registry does not hold, or an accountant refused
            (:data:`REFUSED`, e.g. ``"gdp"``); the message names the argument, the value and
            the reason.
        TypeError: if the class registered under the name is not an Opacus ``IAccountant``.

    Example:
        >>> resolve_accountant("pld").monotone, resolve_accountant("prv").monotone
        (True, False)
        >>> resolve_accountant("gdp")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        ValueError: `accountant` must be one of 'rdp', 'prv', 'pld'. Found 'gdp'. Opacus ...
    """
    registered = opacus_registry._ACCOUNTANTS
    if not isinstance(accountant, str) or accountant not in registered:
        raise _unknown(accountant, name, registered)
    cls = registered[accountant]
    if not (isinstance(cls, type) and issubclass(cls, IAccountant)):
        raise TypeError(f"`{name}`={accountant!r}: Opacus's registry holds {cls!r} under that "
                        f"name, which is not an opacus.accountants.IAccountant subclass.")
    for refused, reason in REFUSED.items():
        if issubclass(cls, refused):
            listed = ", ".join(repr(c) for c in ACCOUNTANTS)
            raise ValueError(f"`{name}` must be one of {listed}. Found {accountant!r}. "
                             f"Opacus registers {accountant!r} ({cls.__qualname__}) but it is "
                             f"refused: {reason}.")
    fields = _ENTRIES.get(cls, {"epsilon": _own_epsilon(cls)})
    return AccountantEntry(name=accountant, cls=cls, **fields)


def check_accountant(accountant: str, name: str = "accountant") -> str:
    """Check that ``accountant`` resolves (:func:`resolve_accountant`) and return it.

    Args:
        accountant: a mechanism name of Opacus's accountant registry.
        name: the argument's name in error messages.

    Returns:
        str: ``accountant``.

    Raises:
        ValueError: for an unknown or refused accountant (the message lists the choices).
        TypeError: if the registry holds no ``IAccountant`` subclass under the name.
    """
    return resolve_accountant(accountant, name).name


def make_accountant(accountant: str = DEFAULT_ACCOUNTANT, history=None) -> IAccountant:
    """A fresh Opacus accountant of kind ``accountant`` with a copy of ``history``.

    Args:
        accountant: a mechanism name of Opacus's accountant registry (checked).
        history: a list of (σ, q, steps) triples, or ``None``.

    Returns:
        IAccountant: ``opacus.accountants.create_accountant(accountant)`` holding the history.
    """
    acct = opacus_registry.create_accountant(check_accountant(accountant))
    acct.history = [(float(s), float(q), int(n)) for s, q, n in (history or [])]
    return acct
