"""Golden runs: seeded short trainings through ``make_private`` give the same numbers forever.

The numbers in :data:`GOLDEN` were recorded on the code before the budget check became O(1)
(issue 43: the admissible step count K* found once instead of a PLD composition per step).
Any change to when the ledger composes must leave every one of them identical: the ledger's
history, its ε under every accountant it reports, the ε of each step record, the step at
which the budget refuses, the statement and the final weights.

They are stored in ``ledger_golden.json`` beside this file. Regenerate it (only for a
deliberate change of numbers, with the reason in the commit)::

    PYTHONPATH=. python tests/pennylane_qshiftdp/accountants/test_ledger_golden.py \\
        > tests/pennylane_qshiftdp/accountants/ledger_golden.json
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs

# (accountant, target ε, epochs planned, epochs trained, σ factor after step 3 or None)
CASES = {
    "pld": ("pld", 2.0, 2, 2, None),
    "rdp": ("rdp", 2.0, 2, 2, None),
    # trains past the plan: refused by the budget at the same step as before
    "pld_refused": ("pld", 1.0, 1, 6, None),
    "rdp_refused": ("rdp", 1.0, 1, 6, None),
    # a σ changed mid-run (as a noise scheduler does): a history of two entries
    "pld_sigma_changed": ("pld", 1.5, 1, 6, 1.3),
}


def _circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.Z(0))


def _run(accountant, target_epsilon, epochs, train_epochs, sigma_factor):
    qnode = qml.QNode(_circuit, qml.device("default.qubit"), interface="torch",
                      diff_method=qs.param_shift)
    torch.manual_seed(3)
    layer = qs.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)})
    g = torch.Generator().manual_seed(0)
    x = torch.rand(24, 2, generator=g, dtype=torch.float64) * 3
    y = torch.where(torch.rand(24, generator=g) > 0.5, 1.0, -1.0).double()
    data = torch.utils.data.TensorDataset(x, y)
    loader = torch.utils.data.DataLoader(data, batch_size=6)
    model, opt, loader = qs.make_private(
        layer, torch.optim.SGD(layer.parameters(), lr=0.5), loader,
        target_epsilon=target_epsilon, target_delta=1e-5, epochs=epochs, seed=0,
        loss=qs.losses.LinearLoss(), accountant=accountant,
        max_grad_norm="certified")  # the recorded runs' clip (the default before issue 44)
    refused_at = None
    try:
        for _ in range(train_epochs):
            for xb, yb in loader:
                if sigma_factor is not None and opt.ledger.steps == 3:
                    opt.noise_multiplier = opt.noise_multiplier * sigma_factor
                opt.zero_grad()
                if len(xb):
                    (-model(xb) * yb).mean().backward()
                opt.step()
    except qs.PrivacyBudgetExceededError:
        refused_at = opt.ledger.steps + 1
    ledger = opt.ledger
    statement = re.sub(r"(Opacus|dp-accounting) \d+\.\d+\.\d+", r"\1 X", ledger.statement())
    return {
        "history": [list(e) for e in ledger.history],
        "proven_history": [list(e) for e in ledger.proven_history],
        "epsilon": ledger.epsilon,
        "epsilons": ledger.epsilons,
        "planned_epsilon": ledger.planned_epsilon,
        "record_epsilons": [r["epsilon"] for r in opt.history],
        "remaining_steps": ledger.remaining_steps(),
        "refused_at": refused_at,
        "statement": statement,
        "weights": [p.detach().reshape(-1).tolist() for p in model.parameters()],
    }


GOLDEN: dict = json.loads((Path(__file__).parent / "ledger_golden.json").read_text(
    encoding="utf-8"))


@pytest.mark.parametrize("case", sorted(CASES))
def test_seeded_run_gives_the_recorded_numbers(case):
    """Same history, ε (every accountant), step records, refusal, statement and weights."""
    got = json.loads(json.dumps(_run(*CASES[case])))
    want = GOLDEN[case]
    for key in want:
        assert got[key] == want[key], key
    assert set(got) == set(want)


def test_golden_cases_cover_a_refusal_and_a_changed_sigma():
    """The golden runs exercise what the O(1) check must get right (not vacuous)."""
    assert GOLDEN["pld_refused"]["refused_at"] is not None
    assert GOLDEN["rdp_refused"]["refused_at"] is not None
    assert GOLDEN["pld_sigma_changed"]["refused_at"] is not None
    assert len(GOLDEN["pld_sigma_changed"]["history"]) == 2


if __name__ == "__main__":
    print(json.dumps({case: _run(*CASES[case]) for case in sorted(CASES)}, indent=1))
