r"""Printing privacy parameters rounded toward *more* privacy loss (never below the value).

A printed ε or δ is a claim: rounded to nearest it can understate the value it stands for
(δ = 1.0000001e-5 printed ``.6g`` is ``1e-05``). These helpers round **up**, toward +∞, so that
the printed number, read back as a float, is never below the value printed.

The decimal rounded is the value's shortest round-trip representation (:func:`repr`): a δ the
user typed as ``1e-5`` stays ``1e-05`` (``float("1e-05")`` is the same float), while any float
strictly above it is printed above it. Sums of parameters (δ + β) can be formatted from their
decimal terms, so that floating-point addition (``1e-5 + 1e-6 == 1.1000000000000001e-05``) does
not bump a sum that is exactly representable in the digits shown.

Imports nothing heavy (the CLI uses it before torch is loaded).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from numbers import Real

__all__ = ["format_fixed_down", "format_fixed_up", "format_up"]


def _decimal(x, name: str) -> Decimal:
    if isinstance(x, bool) or not isinstance(x, Real):
        raise TypeError(f"`{name}` must be a real number. Found {x!r}.")
    return Decimal(repr(float(x)))


def _check_digits(digits, name: str, low: int) -> int:
    if isinstance(digits, bool) or not isinstance(digits, int) or not low <= digits <= 17:
        raise ValueError(f"`{name}` must be an integer in [{low}, 17]. Found {digits!r}.")
    return digits


def format_up(x: float, *more: float, digits: int = 6) -> str:
    """``x`` (plus the terms ``more``, added exactly) with ``digits`` significant digits, rounded
    up, written as the ``g`` format writes it.

    Args:
        x: the value (a real number; ``nan`` and ``±inf`` are written as such).
        *more: further terms of a sum (δ + β), added in decimal arithmetic to ``x``.
        digits: significant digits, 1 to 17.

    Returns:
        str: e.g. ``'1e-05'``. Never below the exact sum of the terms' decimals
        (``Decimal(repr(t))``); for a single term, ``float(result) >= x`` always.

    Raises:
        TypeError: if a value is not a real number.
        ValueError: if ``digits`` is not an integer in [1, 17].

    Example:
        >>> format_up(1e-5), format_up(1.0000001e-5), format_up(2.3456789e-7)
        ('1e-05', '1.00001e-05', '2.34568e-07')
        >>> format_up(1e-5, 1e-6), format_up(0.5), format_up(0.99999951)
        ('1.1e-05', '0.5', '1')
    """
    digits = _check_digits(digits, "digits", 1)
    terms = [_decimal(x, "x")] + [_decimal(v, "more") for v in more]
    total = float(x) + sum(float(v) for v in more)
    if not math.isfinite(total) or any(not t.is_finite() for t in terms):
        return f"{total:g}"
    with localcontext() as ctx:
        ctx.prec = 400
        d = sum(terms, Decimal(0))
        if d == 0:
            return f"{0.0 if total == 0 else total:.{digits}g}"
        quantum = Decimal(1).scaleb(d.adjusted() - digits + 1)
        r = d.quantize(quantum, rounding=ROUND_CEILING)
    # r has at most `digits` significant digits (10**k after a carry): `g` writes it exactly
    return f"{float(r):.{digits}g}"


def format_fixed_up(x: float, decimals: int = 4) -> str:
    """``x`` with ``decimals`` decimals, rounded up (``inf``, ``-inf``, ``nan`` as such).

    Args:
        x: the value (a real number).
        decimals: decimals shown, 0 to 17.

    Returns:
        str: e.g. ``'0.9931'`` for 0.99301; ``float(result) >= x`` always.

    Raises:
        TypeError: if ``x`` is not a real number.
        ValueError: if ``decimals`` is not an integer in [0, 17].

    Example:
        >>> format_fixed_up(0.99301), format_fixed_up(1.0), format_fixed_up(0.99300000004)
        ('0.9931', '1.0000', '0.9931')
    """
    return _fixed(x, decimals, ROUND_CEILING)


def format_fixed_down(x: float, decimals: int = 3) -> str:
    """``x`` with ``decimals`` decimals, rounded down: for a *lower* bound (an audited ε ≥ x),
    which must not be printed above what was shown.

    Args:
        x: the value (a real number).
        decimals: decimals shown, 0 to 17.

    Returns:
        str: e.g. ``'0.129'`` for 0.1299; ``float(result) <= x`` always.

    Raises:
        TypeError: if ``x`` is not a real number.
        ValueError: if ``decimals`` is not an integer in [0, 17].

    Example:
        >>> format_fixed_down(0.1299), format_fixed_down(2.0), format_fixed_down(-0.0001)
        ('0.129', '2.000', '-0.001')
    """
    return _fixed(x, decimals, ROUND_FLOOR)


def _fixed(x, decimals, rounding) -> str:
    decimals = _check_digits(decimals, "decimals", 0)
    d = _decimal(x, "x")
    if not d.is_finite():
        return f"{float(x):f}"
    with localcontext() as ctx:
        ctx.prec = 400
        r = d.quantize(Decimal(1).scaleb(-decimals), rounding=rounding)
    return f"{r:.{decimals}f}"
