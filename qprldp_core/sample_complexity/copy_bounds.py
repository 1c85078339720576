r"""The bracket :class:`CopyBounds` on the minimal number of copies that every bound returns."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CopyBounds"]


@dataclass(frozen=True)
class CopyBounds:
    r"""Bracket on the minimal number of copies :math:`n^*` of a testing task.

    Attributes:
        lower: proven :math:`n^* \ge` ``lower`` (an int, or ``math.inf``).
        upper: proven :math:`n^* \le` ``upper`` (an int, or ``math.inf`` if no finite bound).
        task: ``"symmetric"``, ``"asymmetric"``, ``"mary"`` or ``"qspri"``.
        lower_method, upper_method: which derivation produced each side (``docs/qprldp.md`` §6).
    """

    lower: int | float
    upper: int | float
    task: str
    lower_method: str
    upper_method: str
