r"""Shared argument validators for :mod:`pennylane_qshiftdp`.

Every validator raises with one message shape (after dp-accounting),
``ValueError("`name` must be <condition>. Found <value>.")``, and returns the
normalised value (a built-in ``float``/``int``/``str``) so callers can write
``epsilon = check_epsilon(epsilon)``. Wrong *types* raise :class:`TypeError`.

Booleans are refused where a number is expected: ``True`` is an ``int`` in Python,
but ``steps=True`` is always a mistake.
"""

from __future__ import annotations

import math
import numbers
import re
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

__all__ = [
    "ignoring_warnings",
    "check_beta",
    "check_choice",
    "check_delta",
    "check_epsilon",
    "check_finite_float",
    "check_nonnegative_float",
    "check_positive_float",
    "check_positive_int",
    "check_probability",
    "check_sample_rate",
]


def _as_float(value, name: str) -> float:
    """Convert a real number (Python, numpy or 0-d torch scalar) to ``float``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # 0-d arrays / tensors that are not registered as numbers.Real
        try:
            if getattr(value, "ndim", None) == 0 and not isinstance(value, bool):
                return float(value)
        except (TypeError, ValueError):
            pass
        raise TypeError(f"`{name}` must be a real number. Found {value!r}.")
    return float(value)


def check_finite_float(value, name: str) -> float:
    r"""Check that ``value`` is a finite real number.

    Args:
        value: the value to check.
        name: the argument name used in the error message.

    Returns:
        ``value`` as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if ``value`` is NaN or infinite.

    Example:
        >>> check_finite_float(2, "x")
        2.0
    """
    x = _as_float(value, name)
    if not math.isfinite(x):
        raise ValueError(f"`{name}` must be finite. Found {x}.")
    return x


def check_positive_float(value, name: str) -> float:
    r"""Check that ``value`` is a finite real number strictly greater than 0.

    Args:
        value: the value to check.
        name: the argument name used in the error message.

    Returns:
        ``value`` as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if ``value`` is not finite or ``value <= 0``.

    Example:
        >>> check_positive_float(0.5, "noise_multiplier")
        0.5
    """
    x = _as_float(value, name)
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"`{name}` must be positive and finite. Found {x}.")
    return x


def check_nonnegative_float(value, name: str) -> float:
    r"""Check that ``value`` is a finite real number ``>= 0``.

    Args:
        value: the value to check.
        name: the argument name used in the error message.

    Returns:
        ``value`` as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if ``value`` is not finite or negative.

    Example:
        >>> check_nonnegative_float(0, "beta")
        0.0
    """
    x = _as_float(value, name)
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"`{name}` must be non-negative and finite. Found {x}.")
    return x


def check_epsilon(value, name: str = "epsilon") -> float:
    r"""Check a privacy parameter ε (in nats): finite and strictly positive.

    Args:
        value: the ε to check, in nats.
        name: the argument name used in the error message.

    Returns:
        ε as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if ε is not finite or ε ≤ 0.

    Example:
        >>> check_epsilon(1, "target_epsilon")
        1.0
    """
    x = _as_float(value, name)
    if not math.isfinite(x):
        raise ValueError(f"`{name}` must be finite. Found {x}.")
    if x <= 0:
        raise ValueError(f"`{name}` must be positive. Found {x}.")
    return x


def check_delta(value, name: str = "delta") -> float:
    r"""Check a privacy parameter δ: a probability in the open interval (0, 1).

    Args:
        value: the δ to check.
        name: the argument name used in the error message.

    Returns:
        δ as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if δ is not in (0, 1).

    Example:
        >>> check_delta(1e-5, "target_delta")
        1e-05
    """
    x = _as_float(value, name)
    if not (0.0 < x < 1.0):
        raise ValueError(f"`{name}` must be in (0, 1). Found {x}.")
    return x


def check_probability(value, name: str, *, open_low: bool = False, open_high: bool = False):
    r"""Check that ``value`` is a probability in [0, 1] (ends optionally open).

    Args:
        value: the value to check.
        name: the argument name used in the error message.
        open_low: exclude 0.
        open_high: exclude 1.

    Returns:
        ``value`` as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if ``value`` lies outside the interval.

    Example:
        >>> check_probability(0.25, "p")
        0.25
    """
    x = _as_float(value, name)
    low_ok = x > 0 if open_low else x >= 0
    high_ok = x < 1 if open_high else x <= 1
    if not (low_ok and high_ok):
        interval = ("(" if open_low else "[") + "0, 1" + (")" if open_high else "]")
        raise ValueError(f"`{name}` must be in {interval}. Found {x}.")
    return x


def check_sample_rate(value, name: str = "sample_rate") -> float:
    r"""Check a Poisson sampling rate q ∈ (0, 1].

    Args:
        value: the rate q = expected batch size / dataset size.
        name: the argument name used in the error message.

    Returns:
        q as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if q is not in (0, 1].

    Example:
        >>> check_sample_rate(1)
        1.0
    """
    return check_probability(value, name, open_low=True)


def check_beta(value, name: str = "beta", *, required: bool) -> float:
    r"""Check the failure probability β of the adaptive shot-noise credit.

    Args:
        value: β.
        name: the argument name used in the error message.
        required: ``True`` if β is in use (adaptive credit): then β must lie in (0, 1);
            otherwise β must be exactly 0.

    Returns:
        β as a Python ``float``.

    Raises:
        TypeError: if ``value`` is not a real number.
        ValueError: if β is out of range for the mode.

    Example:
        >>> check_beta(1e-3, required=True)
        0.001
    """
    x = _as_float(value, name)
    if required:
        if not (0.0 < x < 1.0):
            raise ValueError(f"`{name}` must be in (0, 1) for the adaptive and isotropic credit "
                             f"modes (e.g. 1e-6, well below 1/N). Found {x}.")
    elif x != 0.0:
        raise ValueError(
            f"`{name}` must be 0 unless the credit mode is 'adaptive' or 'isotropic'. Found {x}."
        )
    return x


def check_positive_int(value, name: str) -> int:
    r"""Check that ``value`` is an integer ≥ 1 (Python or numpy integer, not ``bool``).

    Args:
        value: the value to check.
        name: the argument name used in the error message.

    Returns:
        ``value`` as a Python ``int``.

    Raises:
        TypeError: if ``value`` is not an integer (a float such as ``10.0`` is refused).
        ValueError: if ``value < 1``.

    Example:
        >>> check_positive_int(3, "steps")
        3
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive integer. Found {value!r}.")
    n = int(value)
    if n < 1:
        raise ValueError(f"`{name}` must be a positive integer. Found {n}.")
    return n


def check_choice(value, name: str, choices: Iterable[str]) -> str:
    r"""Check that ``value`` is one of ``choices``.

    Args:
        value: the value to check.
        name: the argument name used in the error message.
        choices: the allowed values (their order is kept in the message).

    Returns:
        ``value``.

    Raises:
        ValueError: if ``value`` is not among ``choices``; the message lists them.

    Example:
        >>> check_choice("rdp", "accountant", ("rdp", "prv"))
        'rdp'
    """
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        listed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"`{name}` must be one of {listed}. Found {value!r}.")
    return value


@contextmanager
def ignoring_warnings(*rules: tuple[str, type[Warning]]) -> Iterator[None]:
    """Ignore warnings matching ``(message regex, category)`` rules inside the block, without
    resetting Python's once-per-location deduplication.

    :class:`warnings.catch_warnings` marks the filters as changed on entry and exit, which
    empties every module's record of warnings already shown: a library that uses it on every
    training step makes the user's own once-only warnings (torch's backward-hook notice under
    Opacus) print again at every step. Here the rules are put at the front of
    :data:`warnings.filters` and removed afterwards without that reset. An ignored warning is
    never recorded as shown, so nothing the block suppresses is lost later.

    Args:
        rules: ``(message, category)`` pairs; ``message`` is a regular expression matched at
            the start of the warning's text (``""`` matches every message).

    Example:
        >>> with ignoring_warnings(("spam", UserWarning)):
        ...     warnings.warn("spam and eggs")   # ignored
    """
    entries = [("ignore", re.compile(message, re.I) if message else None, category, None, 0)
               for message, category in rules]
    filters: list = warnings.filters  # type: ignore[assignment]  # a list at run time
    filters[:0] = entries
    try:
        yield
    finally:
        for entry in entries:
            for i, existing in enumerate(filters):
                if existing is entry:
                    del filters[i]
                    break
