r"""The ``qshiftdp train`` flags of :class:`~.config.TrainConfig`'s fields, and their parsers.

Each field of :class:`~.config.TrainConfig` that the command line sets is declared with
:func:`flag`, which puts its :class:`Flag` (help text, parser, choices, flag name) in the
field's metadata beside its default: one place for all three. :func:`add_flags` adds every such
field's flag to an ``argparse`` parser, in the fields' order. Nothing here imports torch,
PennyLane or Opacus (``qshiftdp --help`` stays fast).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Callable
from typing import Any

__all__ = ["Flag", "add_flags", "auto_or", "flag", "flag_of", "parse_classes",
           "parse_clip_norm", "parse_feature_range", "parse_shots", "positive_int"]

class _FieldDefault:
    """The type of :data:`FIELD_DEFAULT`."""

    def __repr__(self) -> str:
        return "FIELD_DEFAULT"


#: :attr:`Flag.cli_default` when the flag's default is the field's.
FIELD_DEFAULT: Any = _FieldDefault()


@dataclasses.dataclass(frozen=True)
class Flag:
    """How a :class:`~.config.TrainConfig` field is set on the command line.

    Attributes:
        help: the ``--help`` text (``%(default)s`` is the default, as in argparse).
        type: the argparse type function (``None``: the string as given).
        choices: the allowed values, or ``None``.
        name: the flag, when it is not ``--<field with dashes>`` (e.g. ``--batch-size``).
        metavar: argparse's metavar, or ``None``.
        action: ``"store_true"`` for a switch (no value).
        inverted: the switch sets the field to ``False`` (``--seeded-noise``: ``secure_mode``).
        cli_default: the command line's default when it is not the field's (``output_dir``).
    """

    help: str
    type: Callable[[str], Any] | None = None
    choices: tuple | None = None
    name: str | None = None
    metavar: str | None = None
    action: str | None = None
    inverted: bool = False
    cli_default: Any = FIELD_DEFAULT

    def option(self, field: str) -> str:
        """The flag that sets ``field``: :attr:`name` or ``--<field with dashes>``."""
        return self.name or "--" + field.replace("_", "-")

    def dest(self, field: str) -> str:
        """The argparse destination: the field, or the flag's own name for an inverted one."""
        return self.option(field)[2:].replace("-", "_") if self.inverted else field


def flag(default: Any, help: str, **kwargs: Any) -> Any:
    """A dataclass field with ``default`` whose metadata holds its command-line :class:`Flag`.

    Args:
        default: the field's default.
        help: the ``--help`` text.
        **kwargs: the other :class:`Flag` attributes.

    Returns:
        dataclasses.Field: for a dataclass body (``name: T = flag(...)``).
    """
    return dataclasses.field(default=default, metadata={"flag": Flag(help=help, **kwargs)})


def flag_of(field: dataclasses.Field) -> Flag | None:
    """The :class:`Flag` of a dataclass field, or ``None`` if the command line does not set it."""
    return field.metadata.get("flag")


def add_flags(parser: argparse.ArgumentParser, config_cls: type) -> None:
    """Add the flag of every field of the dataclass ``config_cls`` declared with :func:`flag`.

    Args:
        parser: the parser (or argument group) to add them to.
        config_cls: a dataclass whose fields carry :class:`Flag` metadata.
    """
    for field in dataclasses.fields(config_cls):
        spec = flag_of(field)
        if spec is None:
            continue
        kwargs: dict[str, Any] = {"help": spec.help}
        if spec.action is not None:
            kwargs["action"] = spec.action
            if spec.inverted:
                kwargs["dest"] = spec.dest(field.name)
        else:
            kwargs["default"] = (field.default if spec.cli_default is FIELD_DEFAULT
                                 else spec.cli_default)
            for key in ("type", "choices", "metavar"):
                value = getattr(spec, key)
                if value is not None:
                    kwargs[key] = list(value) if key == "choices" else value
        if spec.option(field.name) != "--" + field.name.replace("_", "-"):
            kwargs.setdefault("dest", field.name)
        parser.add_argument(spec.option(field.name), **kwargs)


def parse_classes(text: str) -> tuple | str:
    """``--classes NEG,POS``, ``A,B,C,...`` or ``all`` (numbers where they parse as numbers).

    Example:
        >>> parse_classes("1,versicolor"), parse_classes("all")
        ((1, 'versicolor'), 'all')
    """
    if text.strip() == "all":
        return "all"
    parts = [t.strip() for t in text.split(",")]
    if len(parts) < 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"must be two classes NEGATIVE,POSITIVE, three or more "
                                         f"A,B,C,... or 'all', not {text!r}")

    def value(t):
        try:
            return int(t)
        except ValueError:
            try:
                return float(t)
            except ValueError:
                return t

    return tuple(value(t) for t in parts)


def parse_feature_range(text: str) -> tuple:
    """``--feature-range LO:HI`` (every column) or ``LO1:HI1,LO2:HI2,...`` (one per column).

    Example:
        >>> parse_feature_range("-1:1"), parse_feature_range("0:1,0:2")
        ((-1.0, 1.0), ((0.0, 1.0), (0.0, 2.0)))
    """
    pairs = []
    for part in text.split(","):
        bounds = part.split(":")
        try:
            if len(bounds) != 2:
                raise ValueError
            lo, hi = float(bounds[0]), float(bounds[1])
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be LO:HI or LO1:HI1,LO2:HI2,... with numbers, not {text!r}") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise argparse.ArgumentTypeError(f"needs finite LO < HI in every pair, not {part!r}")
        pairs.append((lo, hi))
    return pairs[0] if len(pairs) == 1 else tuple(pairs)


def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1 (the error names the flag)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer. Found {text!r}.")
    return value


def auto_or(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """argparse type: 'auto' or a value of ``kind`` (``int``, ``float`` or a type function)."""
    def parse(text: str):
        if text == "auto":
            return text
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be 'auto' or a number, not {text!r}") from None
    parse.__name__ = getattr(kind, "__name__", "value")
    return parse


def parse_shots(text: str) -> int | str:
    """``--shots``: a non-negative integer (0 = analytic) or 'auto'."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer or 'auto', not "
                                         f"{text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer or 'auto', not "
                                         f"{text!r}")
    return value


def parse_clip_norm(text: str) -> float | str:
    """``--max-grad-norm``: 'auto', 'certified', 'public', 'adaptive' or a positive number."""
    if text in ("auto", "certified", "public", "adaptive"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be 'certified', 'public', 'adaptive' or a positive number, not {text!r}"
        ) from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, not {text!r}")
    return value
