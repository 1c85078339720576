r"""What every audit is told about its trials (:class:`TrialSpec`), and keyword arguments on specs.

Each audit takes what describes the mechanism audited as one frozen dataclass
(:class:`~pennylane_qshiftdp.audit.setting.SettingSpec`,
:class:`~pennylane_qshiftdp.audit.white_box.WhiteBoxSpec`,
:class:`~pennylane_qshiftdp.audit.white_box.OptimizerSpec`) and how it runs and analyses its
trials as a :class:`TrialSpec`, each validated once, when it is built. The audits also accept
the fields of their specs as keyword arguments (``audit_setting("none", trials=40)``): those
given replace the fields of a spec passed alongside, or build one from the audit's defaults.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from .._validation import check_positive_int, check_probability

__all__ = ["TrialSpec"]

_Spec = TypeVar("_Spec")


@dataclasses.dataclass(frozen=True)
class TrialSpec:
    """How an audit runs its trials and bounds ε from them.

    Attributes:
        trials: trials per world, a positive integer (each audit states its own minimum:
            4 for one step, 8 for a release function).
        seed: derives every trial's seeds (repeatable).
        confidence: joint confidence of every reported bound, in (0, 1).
        estimators: which estimators bound ε, a subset of ``("clopper_pearson", "gdp")``
            (:mod:`~pennylane_qshiftdp.audit.statistics`).
        progress: optional callback ``progress(done, total)`` after every trial.

    Raises:
        TypeError: if ``trials`` is not an integer or ``confidence`` not a real number.
        ValueError: if ``trials < 1`` or ``confidence`` is not in (0, 1).

    Source:
        This module; the estimators are those of Jagielski et al., arXiv:2006.07709 (v1) and
        Nasr et al., arXiv:2302.07956 (v1).

    Example:
        >>> TrialSpec(400, seed=1).confidence
        0.95
    """

    trials: int
    seed: int = 0
    confidence: float = 0.95
    estimators: Collection[str] = ("clopper_pearson", "gdp")
    progress: Callable | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "trials", check_positive_int(self.trials, "trials"))
        object.__setattr__(self, "confidence", check_probability(
            self.confidence, "confidence", open_low=True, open_high=True))


def spec_from(cls: type[_Spec], spec: _Spec | None, options: dict[str, Any],
              name: str, **defaults: Any) -> _Spec:
    """``spec`` with the fields named in ``options`` replaced (they are popped from it), or a
    new ``cls`` from ``defaults`` and those fields if ``spec`` is ``None``.

    Raises:
        TypeError: if ``spec`` is neither ``None`` nor a ``cls`` (named ``name``).
    """
    names = {f.name for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    given = {k: options.pop(k) for k in list(options) if k in names}
    if spec is None:
        return cls(**{**defaults, **given})
    if not isinstance(spec, cls):
        raise TypeError(f"`{name}` must be a {cls.__name__} or None. Found "
                        f"{type(spec).__name__}.")
    return dataclasses.replace(spec, **given) if given else spec  # type: ignore[type-var]


def reject_unknown(function: str, options: dict[str, Any]) -> None:
    """Refuse keyword arguments that no spec of ``function`` took (as Python does)."""
    if options:
        raise TypeError(f"{function}() got an unexpected keyword argument "
                        f"{next(iter(options))!r}")
