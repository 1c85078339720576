r"""Printing a bound on the safe side: 6 significant digits rounded up (an upper bound) or down
(a lower bound), so that the printed number, read back, never crosses the value.

The decimal rounded is the float's shortest round-trip representation (:func:`repr`): a δ typed
as ``1e-5`` prints ``1e-05``. Standard library only (no numpy).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext

__all__ = ["format_bound"]


def format_bound(x: float, *, up: bool, digits: int = 6) -> str:
    """``x`` with ``digits`` significant digits, rounded up (``up=True``) or down, written as
    the ``g`` format writes it.

    Args:
        x: the value (a real number; ``nan``, ``±inf`` are written as such).
        up: ``True`` for an upper bound (``float(result) >= x``), ``False`` for a lower bound
            (``float(result) <= x``).
        digits: significant digits, 1 to 17.

    Returns:
        str: the bound as text.

    Raises:
        TypeError: if ``x`` is not a real number.
        ValueError: if ``digits`` is not an integer in [1, 17].

    Example:
        >>> format_bound(1e-5, up=True), format_bound(1.0000001e-5, up=True)
        ('1e-05', '1.00001e-05')
        >>> format_bound(0.93925049, up=False), format_bound(0.93924951, up=True)
        ('0.93925', '0.93925')
    """
    if isinstance(x, bool) or not isinstance(x, (int, float)) and not hasattr(x, "__float__"):
        raise TypeError(f"`x` must be a real number. Found {x!r}.")
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 17:
        raise ValueError(f"`digits` must be an integer in [1, 17]. Found {digits!r}.")
    value = float(x)
    if not math.isfinite(value) or value == 0.0:
        return f"{value:.{digits}g}"
    with localcontext() as ctx:
        ctx.prec = 400
        d = Decimal(repr(value))
        quantum = Decimal(1).scaleb(d.adjusted() - digits + 1)
        r = d.quantize(quantum, rounding=ROUND_CEILING if up else ROUND_FLOOR)
    return f"{float(r):.{digits}g}"
