"""The privacy ledger as a step hook of the optimizer.

Opacus's ``PrivacyEngine`` attaches its accountant to the optimizer as a step hook
(``optimizer.attach_step_hook(accountant.get_optimizer_hook_fn(...))``);
:meth:`~pennylane_qshiftdp.QShiftDPOptimizer.attach_ledger` attaches a
:class:`~pennylane_qshiftdp.PrivacyLedger` the same way, with one more hook: the budget is
checked *before* a step's per-example gradients are touched, so a step the budget refuses
releases nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..accountants.ledger import PrivacyLedger
from ..exceptions import PrivacyBudgetExceededError

__all__ = ["LedgerHook"]


class LedgerHook:
    """A ledger's two step hooks: the budget check before a step, the charge after it.

    Args:
        ledger: the :class:`~pennylane_qshiftdp.PrivacyLedger` to check and charge.
    """

    def __init__(self, ledger: PrivacyLedger):
        self.ledger = ledger

    def before_step(self, noise_multiplier: float) -> None:
        """Refuse the next step if it would exceed the ledger's target ε.

        Args:
            noise_multiplier: the σ the step would be taken at (the one currently set).

        Raises:
            PrivacyBudgetExceededError: if one more step at ``noise_multiplier`` would spend
                more than the target (nothing has changed then).
        """
        ledger = self.ledger
        if ledger.would_exceed(1, noise_multiplier=noise_multiplier):
            raise PrivacyBudgetExceededError(
                f"Stopping before step {ledger.steps + 1}: at noise_multiplier "
                f"{noise_multiplier:g} it would spend ε = "
                f"{ledger.epsilon_after(1, noise_multiplier=noise_multiplier):.4f} > target "
                f"{ledger.target_epsilon:.4f}."
            )

    def after_step(self, noise_multiplier: float, stats: Mapping[str, Any], *,
                   credited: bool) -> None:
        """Charge the ledger the step just released.

        Args:
            noise_multiplier: the σ the step was taken at.
            stats: the step's statistics (``proven_noise_multiplier`` and
                ``credited_noise_multiplier``).
            credited: a shot-noise credit mode is on (the credited multiplier is charged too).
        """
        self.ledger.charge(noise_multiplier=noise_multiplier,
                           proven_noise_multiplier=stats["proven_noise_multiplier"],
                           credited_noise_multiplier=(stats["credited_noise_multiplier"]
                                                      if credited else None))
