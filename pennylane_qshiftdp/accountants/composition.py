r"""ε of a history of Poisson-subsampled Gaussian steps, composed on Opacus's accountants.

A history is a list of ``(σ, q, steps)`` triples, merged as Opacus's accountants merge them
(:func:`extend_history`). :func:`epsilon_from_history` composes it with the accountant Opacus's
registry holds under a name, as its entry says (:mod:`.registry`): dp-accounting's privacy loss
distributions (``"pld"``, the default, :mod:`.pld`), Opacus's ``RDPAccountant`` (:mod:`.rdp`,
whose one-step RDP vectors are cached, bit for bit ``RDPAccountant(history).get_epsilon``) or
``PRVAccountant``, or one a user registered; no privacy analysis is written here.

All ε are in nats.

References:
    Mironov, Talwar, Zhang, arXiv:1908.10530 (RDP of the sampled Gaussian mechanism);
    Gopi, Lee, Wutschitz, arXiv:2106.02848 (PRV); Doroshenko et al., arXiv:2207.04380 (PLD,
    dp-accounting); Opacus ``opacus.accountants``.
"""

from __future__ import annotations

from .._validation import (
    check_positive_float,
    check_positive_int,
    check_sample_rate,
)
from .pld import one_step_cache_clear
from .rdp import quiet_opacus, rdp_cache_clear
from .registry import (
    ACCOUNTANTS,
    DEFAULT_ACCOUNTANT,
    check_accountant,
    make_accountant,
    resolve_accountant,
)

__all__ = [
    "ACCOUNTANTS",
    "DEFAULT_ACCOUNTANT",
    "check_accountant",
    "clear_caches",
    "epsilon_from_history",
    "extend_history",
    "make_accountant",
    "normalise_history",
    "quiet_opacus",
    "truncate_history",
]

History = list[tuple[float, float, int]]


def extend_history(history, sigma: float, q: float, k: int) -> History:
    """History after ``k`` more steps at (σ, q), merged exactly as Opacus's ``step`` merges.

    Example:
        >>> extend_history([(1.0, 0.1, 3)], 1.0, 0.1, 2)
        [(1.0, 0.1, 5)]
        >>> extend_history([(1.0, 0.1, 3)], 2.0, 0.1, 1)
        [(1.0, 0.1, 3), (2.0, 0.1, 1)]
    """
    out = list(history)
    if k <= 0:
        return out
    if out and out[-1][0] == sigma and out[-1][1] == q:
        s, r, n = out.pop()
        out.append((s, r, n + k))
    else:
        out.append((sigma, q, k))
    return out


def truncate_history(history, k: int) -> History:
    """The first ``k`` steps of ``history`` (a list of (σ, q, steps) triples).

    Example:
        >>> truncate_history([(1.0, 0.1, 3), (2.0, 0.1, 4)], 5)
        [(1.0, 0.1, 3), (2.0, 0.1, 2)]
        >>> truncate_history([(1.0, 0.1, 3)], 3)
        [(1.0, 0.1, 3)]
    """
    out: History = []
    left = int(k)
    for s, q, n in history:
        if left <= 0:
            break
        out.append((s, q, min(int(n), left)))
        left -= int(n)
    return out


def normalise_history(history) -> History:
    """Validate a (σ, q, steps) history read from a state dict and return it as tuples.

    Raises:
        TypeError: if ``history`` is not a list or tuple.
        ValueError: for an entry that is not a triple of σ > 0, q ∈ (0, 1] and steps ≥ 1.
    """
    if not isinstance(history, list | tuple):
        raise TypeError(
            f"`history` must be a list of (sigma, q, steps) triples. Found {history!r}."
        )
    out = []
    for i, entry in enumerate(history):
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError(
                f"`history[{i}]` must be a (noise_multiplier, sample_rate, steps) triple. "
                f"Found {entry!r}."
            )
        s, q, n = entry
        out.append(
            (
                check_positive_float(s, f"history[{i}].noise_multiplier"),
                check_sample_rate(q, f"history[{i}].sample_rate"),
                check_positive_int(n, f"history[{i}].steps"),
            )
        )
    return out


def clear_caches() -> None:
    """Empty the process-wide caches of one-step quantities (RDP vectors, one-step PLDs).

    They hold pure functions of (σ, q) (and the PLD interval) and change no ε; clearing them
    makes the next composition pay what it pays in a fresh process, which a benchmark needs
    before each variant it times. Compositions of histories are never cached process-wide
    (a :class:`~pennylane_qshiftdp.accountants.ledger.PrivacyLedger` remembers its own).

    Example:
        >>> from pennylane_qshiftdp.accountants.rdp import _unit_rdp
        >>> clear_caches()
        >>> _unit_rdp.cache_info().currsize
        0
    """
    rdp_cache_clear()
    one_step_cache_clear()


def epsilon_from_history(history, *, delta: float,
                         accountant: str = DEFAULT_ACCOUNTANT,
                         cache: dict | None = None) -> float:
    r"""ε (nats, an upper bound) spent by a history of (σ, q, steps) triples at ``delta``.

    ``"pld"`` (the default): dp-accounting's pessimistic privacy loss distributions
    (:func:`.pld.pld_epsilon`; its one-step distributions kept in ``cache``, a dict of the
    caller's, or process-wide without one; compositions are not cached). ``"rdp"``: bit for
    bit the computation of Opacus's ``RDPAccountant.get_privacy_spent``
    (``compute_rdp(..., steps=n)`` is ``compute_rdp(..., steps=1) * n`` and the vectors are
    summed in history order; the conversion to (ε, δ) is Opacus's ``get_privacy_spent``), with
    the per-step vectors cached (:mod:`.rdp`). ``"prv"``: Opacus's ``PRVAccountant``. Any other
    name of Opacus's registry: that accountant's own ``get_epsilon`` (its claim;
    :func:`~.registry.resolve_accountant`, which refuses ``"gdp"``). An empty history has
    spent ε = 0.

    Args:
        history: list of ``(σ > 0, q ∈ (0, 1], steps ≥ 1)`` triples.
        delta: δ ∈ (0, 1).
        accountant: ``"pld"``, ``"rdp"``, ``"prv"`` or another name of Opacus's registry.
        cache: for ``"pld"``, a dict in which the caller keeps its one-step PLDs (``None``:
            the process-wide cache); ignored by the other accountants. It changes no ε.

    Returns:
        ε in nats.

    Example:
        >>> from opacus.accountants import RDPAccountant
        >>> acct = RDPAccountant()
        >>> acct.history = [(1.0, 0.01, 1000)]
        >>> epsilon_from_history([(1.0, 0.01, 1000)], delta=1e-5,
        ...                      accountant="rdp") == acct.get_epsilon(1e-5)
        True
    """
    if not history:
        return 0.0
    return resolve_accountant(accountant).epsilon_of(history, delta=delta, cache=cache)
