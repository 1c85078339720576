"""Which optimizer class for which mode: :func:`get_optimizer_class` (a table, as Opacus's
``opacus.optimizers.get_optimizer_class``), and :func:`build_optimizer`, which builds one from
the keywords :class:`~pennylane_qshiftdp.QShiftDPOptimizer` has always taken.

A new clip mode is one subclass of :class:`~pennylane_qshiftdp.QShiftDPOptimizer` overriding
the hooks it changes, plus one entry of :data:`CLIP_CLASSES`; its data-parallel variant is made
by putting :class:`~.DistributedQShiftDPOptimizer` in front of it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import torch

from .._validation import check_beta, check_nonnegative_float, check_positive_int
from ..credit.shot_noise import CREDIT_MODES
from .adaptive_optimizer import AdaptiveClipDPOptimizer
from .automatic_optimizer import AUTOMATIC_COMBINATION, AutomaticClipDPOptimizer
from .credit_optimizer import CreditSettings, ShotNoiseCreditDPOptimizer, check_credit_clipping
from .distributed_optimizer import DistributedQShiftDPOptimizer
from .optimizer import QShiftDPOptimizer, register_builder
from .public_optimizer import PUBLIC_CLIP_COMBINATION, PublicClipDPOptimizer

__all__ = ["CLIP_CLASSES", "CREDIT_CLASSES", "build_optimizer", "get_optimizer_class"]

#: clip mode -> its optimizer class (flat, certified and per-group clipping are the base's).
#: Every key but "flat" and "per_layer" (a float C) is also a ``max_grad_norm`` mode of
#: ``make_private`` (:data:`pennylane_qshiftdp.specs.CLIP_MODES` is read from this table).
CLIP_CLASSES: Mapping[str, type[QShiftDPOptimizer]] = {
    "flat": QShiftDPOptimizer,
    "per_layer": QShiftDPOptimizer,
    "certified": QShiftDPOptimizer,
    "public": PublicClipDPOptimizer,
    "adaptive": AdaptiveClipDPOptimizer,
    "automatic": AutomaticClipDPOptimizer,
}

#: credit mode -> its optimizer class (``None``: the clip mode's class).
CREDIT_CLASSES: Mapping[str, type[QShiftDPOptimizer] | None] = {
    "none": None,
    "depolarizing": ShotNoiseCreditDPOptimizer,
    "adaptive": ShotNoiseCreditDPOptimizer,
    "isotropic": ShotNoiseCreditDPOptimizer,
}
assert set(CREDIT_CLASSES) == set(CREDIT_MODES)


def get_optimizer_class(clipping: str, credit: str = "none",
                        distributed: bool = False) -> type[QShiftDPOptimizer]:
    """The optimizer class of a clip mode, a credit mode and data-parallel training.

    Args:
        clipping: a key of :data:`CLIP_CLASSES` (``"flat"``, ``"per_layer"``,
            ``"certified"``, ``"adaptive"``, ``"automatic"``, ``"public"``).
        credit: a shot-noise credit mode (``"none"``, ``"depolarizing"``, ``"adaptive"``,
            ``"isotropic"``); needs certified (flat) clipping.
        distributed: data-parallel training (:class:`~.DistributedQShiftDPOptimizer` in front
            of the clip mode's class).

    Returns:
        type: a subclass of :class:`~pennylane_qshiftdp.QShiftDPOptimizer` (or itself).

    Raises:
        ValueError: for an unknown ``clipping`` or ``credit``.
        NotImplementedError: for a credit mode with a clip mode other than flat or certified
            clipping, or in distributed training.

    Example:
        >>> get_optimizer_class("adaptive").__name__
        'AdaptiveClipDPOptimizer'
    """
    if clipping not in CLIP_CLASSES:
        raise ValueError(f"`clipping` must be one of {tuple(CLIP_CLASSES)}. Found {clipping!r}.")
    if credit not in CREDIT_CLASSES:
        raise ValueError(f"`credit` must be one of {CREDIT_MODES}. Found {credit!r}.")
    base = CLIP_CLASSES[clipping]
    credited = CREDIT_CLASSES[credit]
    if credited is not None:
        check_credit_clipping(credit, True, adaptive_clipping=base is not QShiftDPOptimizer)
        if distributed:
            raise NotImplementedError(f"credit={credit!r} is not supported with "
                                      f"distributed training; use credit='none'.")
        return credited
    return _distributed(base) if distributed else base


@functools.cache
def _distributed(cls: type[QShiftDPOptimizer]) -> type[QShiftDPOptimizer]:
    """``cls`` in data-parallel training (:class:`~.DistributedQShiftDPOptimizer` first)."""
    if cls is QShiftDPOptimizer:
        return DistributedQShiftDPOptimizer
    meta: Any = type(cls)  # the base class's metaclass
    return meta(f"Distributed{cls.__name__}", (DistributedQShiftDPOptimizer, cls),
                     {"__module__": __name__, "__doc__": f"{cls.__name__} in data-parallel "
                      f"training (:class:`~.DistributedQShiftDPOptimizer`)."})


@functools.cache
def _with_subclass(user: type[QShiftDPOptimizer],
                   cls: type[QShiftDPOptimizer]) -> type[QShiftDPOptimizer]:
    """The mode class ``cls`` with the overrides of ``user``, a subclass of the base class
    (e.g. an audit's deliberately broken optimizer) in front."""
    if issubclass(user, cls):
        return user
    if issubclass(cls, user):
        return cls
    meta: Any = type(cls)
    return meta(user.__name__, (user, cls),
                     {"__module__": user.__module__, "__qualname__": user.__qualname__,
                      "__doc__": user.__doc__, "_selects_mode": False})


def _clip_mode(settings: dict[str, Any], credit: str) -> tuple[str, dict[str, Any]]:
    """Pop the clip mode's keywords from ``settings``: the clip mode and its class's
    keywords (combinations refused with today's messages)."""
    adaptive = settings.pop("adaptive_clipping", None)
    gamma = settings.pop("automatic_gamma", None)
    fn = settings.pop("clip_norm_fn", None)
    if credit not in CREDIT_MODES:
        raise ValueError(f"`credit` must be one of {CREDIT_MODES}. Found {credit!r}.")
    certified = settings.get("certified", False)
    check_credit_clipping(credit, certified, adaptive is not None)
    if fn is not None and adaptive is not None:
        raise ValueError(PUBLIC_CLIP_COMBINATION)
    refresh = check_positive_int(settings.pop("clip_refresh_steps", 1), "clip_refresh_steps")
    any_certified = bool(certified) if isinstance(certified, bool) else any(certified)
    if gamma is not None and (adaptive is not None or fn is not None or any_certified):
        raise ValueError(AUTOMATIC_COMBINATION)
    if adaptive is not None:
        return "adaptive", {"adaptive_clipping": adaptive}
    if gamma is not None:
        return "automatic", {"automatic_gamma": gamma}
    if fn is not None:
        return "public", {"clip_norm_fn": fn, "clip_refresh_steps": refresh}
    return "flat", {}


_CREDIT_KEYWORDS = ("credit_layer", "recorder", "noise_floor_multiplier", "beta",
                    "variance_floor", "confidence", "outcome_range")


def build_optimizer(optimizer: torch.optim.Optimizer, /, *,
                    optimizer_class: type[QShiftDPOptimizer] | None = None,
                    **settings: Any) -> QShiftDPOptimizer:
    """An optimizer from the keywords :class:`~pennylane_qshiftdp.QShiftDPOptimizer` has
    always taken: the mode's class (:func:`get_optimizer_class`), with the ledger attached.

    ``QShiftDPOptimizer(optimizer, **settings)`` calls it when ``settings`` name a mode or a
    ledger.

    Args:
        optimizer: the wrapped :class:`torch.optim.Optimizer`.
        optimizer_class: a subclass of :class:`~pennylane_qshiftdp.QShiftDPOptimizer` whose
            overrides go in front of the mode's class (default: none).
        **settings: the keywords of :class:`~pennylane_qshiftdp.QShiftDPOptimizer`: the
            shared ones, ``adaptive_clipping``, ``automatic_gamma``, ``clip_norm_fn`` and
            ``clip_refresh_steps``, ``credit`` with ``credit_layer``, ``recorder``,
            ``noise_floor_multiplier``, ``beta``, ``variance_floor``, ``confidence`` and
            ``outcome_range``, ``distributed`` and ``ledger``.

    Returns:
        QShiftDPOptimizer: an instance of the mode's class.

    Raises:
        ValueError: for invalid settings or combinations of modes (as the classes do).
        NotImplementedError: for a credit mode without certified clipping, or with
            distributed training.
    """
    s = dict(settings)
    ledger = s.pop("ledger", None)
    distributed = bool(s.pop("distributed", False))
    credit = s.pop("credit", "none")
    clipping, mode = _clip_mode(s, credit)
    credit_kw = {k: s.pop(k) for k in _CREDIT_KEYWORDS if k in s}
    recorder = credit_kw.get("recorder")
    if credit != "none":
        mode["credit_settings"] = CreditSettings(credit, **credit_kw)
    else:  # checked as they always were, though no credit reads them
        check_beta(credit_kw.get("beta", 0.0), "beta", required=False)
        check_nonnegative_float(credit_kw.get("variance_floor", 0.0), "variance_floor")
    cls = get_optimizer_class(clipping, credit=credit, distributed=distributed)
    if optimizer_class is not None:
        cls = _with_subclass(optimizer_class, cls)
    opt = type.__call__(cls, optimizer, **s, **mode)
    if credit == "none" and recorder is not None:
        opt.recorder = recorder  # cleared at every zero_grad, as it always was
    opt.attach_ledger(ledger)
    return opt


register_builder(build_optimizer)
