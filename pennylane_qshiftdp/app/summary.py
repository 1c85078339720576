r"""The one-line privacy summary that ends every ``qshiftdp train`` run.

The full privacy statement (what is protected, sampling, mechanism, accountant, assumptions,
provenance) is written to ``privacy_statement.txt`` in the run directory; the last line a
person reads on the console is :func:`summary_line`: ε, δ, adjacency, accountant, whether the
numbers are proven or credited, the steps taken and where the statement is. ε and δ are rounded
*up* (an upper bound stays an upper bound when printed: the printed number, read back, is never
below the value; :mod:`pennylane_qshiftdp._formatting`).
"""

from __future__ import annotations

import math
from pathlib import Path

__all__ = ["format_epsilon", "summary_line"]

#: Accountant names as printed (the keys of ``calibration.ACCOUNTANTS``; unknown ones verbatim).
_ACCOUNTANTS = {"rdp": "Opacus RDP accountant", "prv": "Opacus PRV accountant",
                "pld": "dp-accounting PLD accountant"}

_ADJACENCY = {"add_remove": "add/remove-one adjacency", "replace_one": "replace-one adjacency"}


def format_epsilon(epsilon: float, digits: int = 4) -> str:
    """ε in nats with ``digits`` decimals, rounded up (``inf`` for ∞): the decimal rounded is
    the float's shortest representation, so ``float(result) >= epsilon`` always (rounding
    ``ε·10^digits`` to 6 decimals first, as before, printed 0.99300000004 as 0.9930).

    Example:
        >>> format_epsilon(0.99301), format_epsilon(1.0), format_epsilon(math.inf)
        ('0.9931', '1.0000', 'inf')
        >>> format_epsilon(0.99300000004)
        '0.9931'
    """
    from .._formatting import format_fixed_up

    if math.isinf(epsilon):
        return "inf"
    return format_fixed_up(epsilon, digits)


def summary_line(*, epsilon: float, delta: float, adjacency: str, accountant: str, steps: int,
                 credit: str = "none", beta: float = 0.0,
                 credited_epsilon: float | None = None, planned_steps: int | None = None,
                 interrupted: bool = False, statement_path: str | Path | None = None) -> str:
    r"""The one-line summary of a run's privacy guarantee.

    Args:
        epsilon: the proven ε spent (nats); ``inf`` for the non-private baseline.
        delta: δ of the guarantee.
        adjacency: ``"add_remove"`` or ``"replace_one"``.
        accountant: the accountant's name (``"rdp"``, ``"prv"``, ...).
        steps: private steps taken.
        credit: the shot-noise credit mode (``"none"``: no credited guarantee).
        beta: the adaptive credit's failure probability (added to δ of the credited claim).
        credited_epsilon: the credited ε (an approximation, computed from the private
            batches) when it was released (``--diagnostics``); ``None``: withheld.
        planned_steps: the steps the plan has; shown when fewer were taken.
        interrupted: the run was interrupted (``--resume`` continues it).
        statement_path: where the full statement is.

    Returns:
        str: one line, starting ``privacy:``.

    Example:
        >>> print(summary_line(epsilon=0.99301, delta=1e-5, adjacency="add_remove",
        ...       accountant="rdp", steps=50, statement_path="runs/x/privacy_statement.txt"))
        privacy: (ε = 0.9931, δ = 1e-05) proven · add/remove-one adjacency · Opacus RDP
        accountant · 50 steps · full statement: runs/x/privacy_statement.txt
    """
    where = f" · full statement: {statement_path}" if statement_path is not None else ""
    if math.isinf(epsilon):
        return ("privacy: none (--epsilon inf: a non-private baseline, no differential-privacy "
                "guarantee)" + where)
    from .._formatting import format_up

    claim = f"(ε = {format_epsilon(epsilon)}, δ = {format_up(delta)}) proven"
    if credit != "none":
        total = f"δ + β = {format_up(delta, beta)}" if beta else f"δ = {format_up(delta)}"
        if credited_epsilon is None:
            claim += (f"; credited ({credit}) ε withheld ({total}; --diagnostics releases it, "
                      f"NOT protected)")
        else:
            claim += (f"; credited ({credit}) (ε = {format_epsilon(credited_epsilon)}, {total}): "
                      f"Gaussian approximation of shot noise, NOT protected")
    taken = f"{steps} steps"
    if planned_steps is not None and steps < planned_steps:
        taken = f"{steps} of {planned_steps} planned steps"
    if interrupted:
        taken += " (interrupted: --resume continues the run)"
    parts = [claim, _ADJACENCY.get(adjacency, adjacency), _ACCOUNTANTS.get(accountant, accountant),
             taken]
    return "privacy: " + " · ".join(parts) + where
