r"""The :class:`Certificate`: a frozen privacy statement about a channel at one ε.

A :class:`Certificate` states one of three things about a channel :math:`\mathcal A` at a given
ε (nats), with :math:`\delta^*(\varepsilon)` the channel's worst case over all input pairs:

* ``side == "exact"``: :math:`\delta^*(\varepsilon) = \delta` (closed form, proven);
* ``side == "upper_bound"``: :math:`\delta^*(\varepsilon) \le \delta` (proven: the channel is
  (ε, δ)-private), with a proven lower bound ``delta_lower`` where one is known;
* ``side == "lower_bound"``: :math:`\delta^*(\varepsilon) \ge \delta` (a witness pair attains δ);
  the channel is *not* (ε, δ′)-private for δ′ < δ. This is never a privacy certificate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._formatting import format_bound

__all__ = ["Certificate"]


@dataclass(frozen=True, eq=False, repr=False)
class Certificate:
    r"""A frozen privacy statement about a channel at one ε.

    ``print(cert)`` shows the statement in words and ``repr(cert)`` one line; neither prints the
    witness matrices. Get them with ``rho, sigma = cert.witness`` (two d × d density matrices of
    the channel's *input*, or None): for an exact or lower-bound certificate the pair attains
    ``delta``, e.g. ``qldp_value(channel, *cert.witness, epsilon=cert.epsilon) == cert.delta``.

    Attributes:
        epsilon: ε in nats.
        delta: the certified δ (meaning fixed by ``side``).
        notion: "QLDP" or "QPrLDP".
        channel_description: human-readable description of the channel.
        exact: True iff ``side == "exact"``.
        side: "exact", "upper_bound" (proven: the channel is (ε, δ)-private) or "lower_bound"
            (proven: it is not (ε, δ′)-private for any δ′ < δ).
        witness: a pair (ρ, σ) of input states whose value equals ``delta`` ("exact",
            "lower_bound") or ``delta_lower`` ("upper_bound"), or None.
        reference: where the statement comes from.
        delta_lower: for ``side == "upper_bound"``, a proven lower bound on δ*(ε) (else None).

    Example:
        >>> from qprldp_core import local_depolarizing, qprldp_certificate
        >>> c = qprldp_certificate(local_depolarizing(0.3, 3), epsilon=1.0)
        >>> c.side, c.delta, c.vacuous
        ('upper_bound', 1.0, True)
        >>> print(repr(c)[:81])
        Certificate(notion='QPrLDP', epsilon=1, delta=1, side='upper_bound', vacuous=True
        >>> rho, sigma = c.witness
        >>> rho.shape
        (8, 8)
    """

    epsilon: float
    delta: float
    notion: str
    channel_description: str
    exact: bool
    side: str
    witness: tuple[np.ndarray, np.ndarray] | None
    reference: str
    delta_lower: float | None = None

    @property
    def vacuous(self) -> bool:
        r"""True if the statement holds for *every* channel, so it says nothing about this one.

        That is an upper bound δ ≥ 1 (every channel is (ε, 1)-QLDP and -QPrLDP, both quantities
        being probabilities at most 1) or a lower bound δ ≤ 0. An *exact* δ = 1 is not vacuous:
        it proves that the channel offers no (ε, δ < 1) privacy.
        """
        if self.side == "upper_bound":
            return self.delta >= 1.0
        if self.side == "lower_bound":
            return self.delta <= 0.0
        return False

    def _witness_text(self, where: str | None = None) -> str:
        if self.witness is None:
            return "none"
        d = int(np.shape(self.witness[0])[0])
        attains = "delta_lower" if self.side == "upper_bound" else "delta"
        if where is None:
            return f"available as `.witness` (ρ, σ) of shape {d}×{d}; the pair attains {attains}"
        return f"a pair (ρ, σ) of {d}×{d} input states attains {attains} ({where})"

    def _side_text(self) -> str:
        side = self.side.replace("_", " ")
        return f"{side}, VACUOUS" if self.vacuous else side

    def __repr__(self) -> str:
        lower = "" if self.delta_lower is None else f", delta_lower={self.delta_lower:.6g}"
        witness = "None" if self.witness is None else f"<{self._witness_text()}>"
        return (
            f"Certificate(notion={self.notion!r}, epsilon={self.epsilon:.6g}, "
            f"delta={self.delta:.6g}, side={self.side!r}, vacuous={self.vacuous}{lower}, "
            f"channel_description={self.channel_description!r}, witness={witness}, "
            f"reference={self.reference!r})"
        )

    def __str__(self) -> str:
        return self.describe()

    def describe(self, *, witness: str | None = None) -> str:
        """The statement in words, as ``str(cert)``.

        Args:
            witness: where a reader finds the witness pair, for the ``witness`` line (default:
                the attribute ``.witness``, for Python; a command line names a file).

        Returns:
            str: several lines.
        """
        # on the safe side of each claim: "is (ε, δ)" with ε and δ rounded up, "is NOT (ε, δ)
        # for any δ < δ_lower" with ε and δ_lower rounded down
        up = self.side != "lower_bound"
        e, dl = format_bound(self.epsilon, up=up), format_bound(self.delta, up=up)
        e_low = format_bound(self.epsilon, up=False)
        lower = None if self.delta_lower is None else format_bound(self.delta_lower, up=False)
        if self.vacuous and self.side == "upper_bound":
            meaning = (
                f"VACUOUS: ({e}, {dl})-{self.notion} holds for every channel (delta >= 1), so "
                "this upper bound certifies no privacy"
            )
            if lower is not None:
                meaning += (
                    f"; the channel is NOT ({e_low}, delta)-{self.notion} for any delta < "
                    f"{lower} (proven lower bound)"
                )
        elif self.vacuous:
            meaning = f"VACUOUS: delta* >= {dl} holds for every channel"
        else:
            meaning = "the channel " + {
                "exact": f"is ({e}, {dl})-{self.notion}, and no smaller delta holds (exact)"
                + (": no privacy at this epsilon" if self.delta >= 1.0 else ""),
                "upper_bound": f"is ({e}, {dl})-{self.notion} (proven upper bound on delta)",
                "lower_bound": f"is NOT ({e}, delta)-{self.notion} for any delta < {dl} (lower "
                "bound from a witness; not a certificate)",
            }[self.side]
        lines = [
            f"{self.notion} certificate" + (" (VACUOUS)" if self.vacuous else ""),
            f"  channel   : {self.channel_description}",
            f"  epsilon   : {e} nats",
            f"  delta     : {dl} ({self._side_text()})",
        ]
        if lower is not None:
            lines.append(f"  delta >=  : {lower} (proven lower bound)")
        lines += [
            f"  statement : {meaning}",
            f"  witness   : {self._witness_text(witness)}",
            f"  reference : {self.reference}",
        ]
        return "\n".join(lines)
