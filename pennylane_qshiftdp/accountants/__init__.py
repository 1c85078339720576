r"""Accounting: σ calibrated by an accountant of Opacus's registry, and the privacy ledger.

* :mod:`.pld`: :class:`PLDAccountant`, dp-accounting's privacy loss distributions registered
  with Opacus as ``"pld"`` (the default, :data:`DEFAULT_ACCOUNTANT`);
* :mod:`.calibration`: :func:`calibrate_noise_multiplier`, :func:`compute_epsilon`,
  :func:`epochs_to_steps`, :func:`plan_shots` (PLD, or Opacus's RDP or PRV accountant);
* :mod:`.config`: :class:`LedgerConfig`, a ledger's settings checked once;
* :mod:`.ledger`: :class:`PrivacyLedger`, the proven and credited histories, the budget guard,
  persistence and the privacy statement.
"""

from .calibration import (
    ACCOUNTANTS,
    DEFAULT_ACCOUNTANT,
    calibrate_noise_multiplier,
    compute_epsilon,
    epochs_to_steps,
    plan_shots,
)
from .config import LedgerConfig
from .ledger import PrivacyLedger
from .pld import PLDAccountant

__all__ = [
    "ACCOUNTANTS",
    "DEFAULT_ACCOUNTANT",
    "LedgerConfig",
    "PLDAccountant",
    "PrivacyLedger",
    "calibrate_noise_multiplier",
    "compute_epsilon",
    "epochs_to_steps",
    "plan_shots",
]
