r"""The configuration of a :class:`~.PrivacyLedger`, checked once: :class:`LedgerConfig`.

A frozen record of everything a ledger is constructed with (the budget, the mechanism, the
accountant and what the privacy statement shows), validated in ``__post_init__`` with the
ledger's error messages; :class:`~.PrivacyLedger` takes one (or its fields as keywords), and
:meth:`~.PrivacyLedger.load_state_dict` builds one from a saved state. All ε are in nats.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .._validation import (
    check_beta,
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_float,
    check_positive_int,
    check_sample_rate,
)
from ..credit.shot_noise import CREDIT_MODES
from .composition import DEFAULT_ACCOUNTANT, check_accountant
from .persistence import normalise_extra

__all__ = ["LedgerConfig", "ADJACENCIES", "SAMPLE_RATE_SOURCES"]

#: Neighbouring-dataset relations. ``replace_one`` requires Δ to include the factor 2.
ADJACENCIES = ("add_remove", "replace_one")

#: How the sampling rate q was obtained (:attr:`PrivacyLedger.sample_rate_source`).
SAMPLE_RATE_SOURCES = ("sample_rate", "dataset_size", "dataset_length")


@dataclasses.dataclass(frozen=True)
class LedgerConfig:
    r"""The checked configuration of a :class:`~.PrivacyLedger` (its constructor's keywords).

    Every field is validated once, in the order below, when the record is made; numbers are
    stored as the checks return them (``float``/``int``) and ``extra`` as its JSON round-trip.

    Args:
        target_epsilon: budget ε > 0, in nats.
        target_delta: budget δ ∈ (0, 1); ``target_delta + beta`` must be below 1.
        noise_multiplier: σ > 0, the noise standard deviation in units of Δ.
        sample_rate: Poisson sampling rate q ∈ (0, 1].
        sensitivity: per-example L2 sensitivity Δ > 0 of the summed gradient, adjacency
            factor included (×2 for ``replace_one``).
        adjacency: one of :data:`ADJACENCIES`.
        credit_mode: one of :data:`~pennylane_qshiftdp.CREDIT_MODES`.
        beta: failure probability β of the shot-noise credit: in (0, 1) for ``"adaptive"``
            and ``"isotropic"``, exactly 0 otherwise.
        accountant: a name of Opacus's accountant registry (``"pld"``, ``"rdp"``, ``"prv"``...;
            :func:`~.registry.resolve_accountant`).
        dataset_size: the public number N ≥ 1 of training examples, or ``None``.
        preprocessing_note: which data-dependent statistics are not protected (text), or
            ``None``.
        extra: JSON-able metadata with finite numbers (a dict), or ``None``.
        expected_batch_size: the public divisor b > 0 of the noisy sum, or ``None``.
        sample_rate_source: one of :data:`SAMPLE_RATE_SOURCES`, or ``None``; ``"sample_rate"``
            refuses a ``dataset_size``, the other two need one.

    Raises:
        ValueError: if a value is out of range or a choice is unknown.
        TypeError: if a value has the wrong type or ``extra`` is not JSON-able.

    Source:
        the checks of :class:`~.PrivacyLedger` before issue 46 (unchanged).

    Example:
        >>> LedgerConfig(target_epsilon=1, target_delta=1e-5, noise_multiplier=1.5,
        ...              sample_rate=0.01, sensitivity=2.0).target_epsilon
        1.0
    """

    target_epsilon: float
    target_delta: float
    noise_multiplier: float
    sample_rate: float
    sensitivity: float
    adjacency: str = "add_remove"
    credit_mode: str = "none"
    beta: float = 0.0
    accountant: str = DEFAULT_ACCOUNTANT
    dataset_size: int | None = None
    preprocessing_note: str | None = None
    extra: dict[str, Any] | None = None
    expected_batch_size: float | None = None
    sample_rate_source: str | None = None

    def __post_init__(self) -> None:
        self._set(target_epsilon=check_epsilon(self.target_epsilon, "target_epsilon"),
                  target_delta=check_delta(self.target_delta, "target_delta"),
                  noise_multiplier=check_positive_float(self.noise_multiplier,
                                                        "noise_multiplier"),
                  sample_rate=check_sample_rate(self.sample_rate, "sample_rate"),
                  sensitivity=check_positive_float(self.sensitivity, "sensitivity"),
                  adjacency=check_choice(self.adjacency, "adjacency", ADJACENCIES),
                  credit_mode=check_choice(self.credit_mode, "credit_mode", CREDIT_MODES))
        self._set(beta=check_beta(self.beta, "beta",
                                  required=self.credit_mode in ("adaptive", "isotropic")))
        delta, beta = self.target_delta, self.beta
        if delta + beta >= 1.0:
            raise ValueError(
                f"`target_delta` + `beta` must be below 1. Found {delta} + {beta} = {delta + beta}."
            )
        self._set(accountant=check_accountant(self.accountant))
        if self.dataset_size is not None:
            self._set(dataset_size=check_positive_int(self.dataset_size, "dataset_size"))
        if self.preprocessing_note is not None and not isinstance(self.preprocessing_note, str):
            raise TypeError(
                f"`preprocessing_note` must be a str or None. Found {self.preprocessing_note!r}."
            )
        self._set(extra=normalise_extra(self.extra))
        if self.expected_batch_size is not None:
            self._set(expected_batch_size=check_positive_float(self.expected_batch_size,
                                                               "expected_batch_size"))
        if self.sample_rate_source is not None:
            self._check_sample_rate_source()

    def _set(self, **values: Any) -> None:
        """Store checked values on the frozen record."""
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _check_sample_rate_source(self) -> None:
        source = check_choice(self.sample_rate_source, "sample_rate_source", SAMPLE_RATE_SOURCES)
        self._set(sample_rate_source=source)
        if source == "sample_rate" and self.dataset_size is not None:
            raise ValueError(
                f"`dataset_size` must be None when q was given (sample_rate_source="
                f"'sample_rate'): the statement would show a count of the private data. "
                f"Found {self.dataset_size!r}.")
        if source != "sample_rate" and self.dataset_size is None:
            raise ValueError(
                f"`dataset_size` must be given with sample_rate_source="
                f"{source!r} (q was computed from it). Found None.")
