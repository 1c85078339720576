r"""The versioned state of a :class:`~.PrivacyLedger`: ``state_dict``, JSON and files.

Format 3 holds the configuration (with the public divisor b of the noisy sum and how the
sampling rate q was obtained), the planned history (the calibrated σ, or what a noise scheduler
set: what the budget check composes), the proven history (the Gaussian noise actually added)
and, with a credit mode, the credited history; for information also the proven ε under every
accountant the ledger reports (not read back). Formats 1 (no proven history: it is the
planned one) and 2 (no divisor, no sampling source: both ``None``) are still read.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import opacus

from .composition import History, normalise_history

__all__ = ["FORMAT_VERSION", "LedgerState", "ledger_state", "parse_state", "write_atomic"]

#: Version of the ``state_dict`` / JSON layout written by :func:`ledger_state`.
FORMAT_VERSION = 3

#: Layouts :func:`parse_state` reads (v1: no proven history; it then equals the planned one;
#: v1 and v2: no ``expected_batch_size`` / ``sample_rate_source``, read as ``None``).
READABLE_VERSIONS = (1, 2, 3)

#: Keys every readable state has: the version, the configuration (in the order of the
#: ledger's constructor), the history and the step count.
STATE_KEYS = (
    "format_version",
    "target_epsilon",
    "target_delta",
    "noise_multiplier",
    "sample_rate",
    "sensitivity",
    "adjacency",
    "credit_mode",
    "beta",
    "accountant",
    "dataset_size",
    "preprocessing_note",
    "extra",
    "history",
    "steps",
)

#: Configuration keys added in format 3 (``None`` when reading formats 1 and 2).
V3_KEYS = ("expected_batch_size", "sample_rate_source")

#: The configuration keys (the constructor's arguments).
CONFIG_KEYS = STATE_KEYS[1:-2] + V3_KEYS


def normalise_extra(extra) -> dict[str, Any] | None:
    """Check that ``extra`` is a JSON-able dict and return its JSON round-trip (a deep copy).

    Raises:
        TypeError: if ``extra`` is not a dict or not JSON-serialisable with finite numbers.
    """
    if extra is None:
        return None
    if not isinstance(extra, dict):
        raise TypeError(f"`extra` must be a dict or None. Found {type(extra).__name__}.")
    try:
        return json.loads(json.dumps(extra, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise TypeError(f"`extra` must be JSON-serialisable (finite numbers only): {err}") from err


def ledger_state(ledger) -> dict[str, Any]:
    """A JSON-able snapshot of the whole ledger (format :data:`FORMAT_VERSION`)."""
    return {
        "format_version": FORMAT_VERSION,
        "target_epsilon": ledger.target_epsilon,
        "target_delta": ledger.target_delta,
        "noise_multiplier": ledger.noise_multiplier,
        "sample_rate": ledger.sample_rate,
        "sensitivity": ledger.sensitivity,
        "adjacency": ledger.adjacency,
        "credit_mode": ledger.credit_mode,
        "beta": ledger.beta,
        "accountant": ledger.accountant,
        "dataset_size": ledger.dataset_size,
        "preprocessing_note": ledger.preprocessing_note,
        "extra": ledger.extra,
        "expected_batch_size": ledger.expected_batch_size,
        "sample_rate_source": ledger.sample_rate_source,
        # "history" is the noise actually added (what an Opacus accountant should be fed);
        # "planned_history" is the calibrated plan the budget check uses.
        "history": [[s, q, n] for s, q, n in ledger.proven_history],
        "planned_history": [[s, q, n] for s, q, n in ledger.history],
        "proven_history": [[s, q, n] for s, q, n in ledger.proven_history],
        "credited_history": [[s, q, n] for s, q, n in ledger.credited_history],
        "steps": ledger.steps,
        # for information (not read back): the proven ε under every reported accountant
        "epsilon_by_accountant": ledger.epsilons,
        "opacus_version": opacus.__version__,
    }


@dataclasses.dataclass(frozen=True)
class LedgerState:
    """A checked ledger state: the configuration and the three histories."""

    version: int
    config: dict[str, Any]
    planned: History
    proven: History
    credited: History


def parse_state(state_dict: dict[str, Any]) -> LedgerState:
    """Check a state written by :func:`ledger_state` (possibly via JSON) and split it.

    The configuration's values are checked by the ledger itself; here: the version, the keys,
    and that the histories cover the same number of steps as ``steps``.

    Raises:
        TypeError: if ``state_dict`` is not a dict or a history is not a list.
        ValueError: if the format version is unknown, a key is missing, or ``steps`` disagrees
            with a history.
    """
    if not isinstance(state_dict, dict):
        raise TypeError(f"`state_dict` must be a dict. Found {type(state_dict).__name__}.")
    version = state_dict.get("format_version")
    if version not in READABLE_VERSIONS:
        raise ValueError(f"`format_version` must be one of {READABLE_VERSIONS}. Found "
                         f"{version!r}.")
    missing = [k for k in STATE_KEYS + (V3_KEYS if version >= 3 else ())
               if k not in state_dict]
    if missing:
        raise ValueError(f"`state_dict` is missing the keys {missing}.")
    history = normalise_history(state_dict.get("planned_history", state_dict["history"]))
    steps = sum(n for _, _, n in history)
    if state_dict["steps"] != steps:
        raise ValueError(
            f"`steps` must equal the total steps in `history` ({steps}). "
            f"Found {state_dict['steps']!r}."
        )
    proven = (normalise_history(state_dict["proven_history"]) if version >= 2
              else list(history))
    if sum(n for _, _, n in proven) != steps:
        raise ValueError(
            f"`proven_history` must cover the same {steps} steps as `history`. Found "
            f"{sum(n for _, _, n in proven)}."
        )
    credited = (normalise_history(state_dict.get("credited_history", []))
                if version >= 2 else [])
    return LedgerState(version, {k: state_dict.get(k) for k in CONFIG_KEYS}, history, proven,
                       credited)


def write_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (a temporary file, then a rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path
