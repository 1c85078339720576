r"""Accounting: σ calibrated by an Opacus accountant, and the privacy ledger.

* :mod:`.calibration`: :func:`calibrate_noise_multiplier`, :func:`compute_epsilon`,
  :func:`epochs_to_steps`, :func:`plan_shots` (Opacus's RDP or PRV accountant);
* :mod:`.ledger`: :class:`PrivacyLedger`, the proven and credited histories, the budget guard,
  persistence and the privacy statement.
"""

from .calibration import (
    ACCOUNTANTS,
    calibrate_noise_multiplier,
    compute_epsilon,
    epochs_to_steps,
    plan_shots,
)
from .ledger import PrivacyLedger

__all__ = [
    "ACCOUNTANTS",
    "PrivacyLedger",
    "calibrate_noise_multiplier",
    "compute_epsilon",
    "epochs_to_steps",
    "plan_shots",
]
