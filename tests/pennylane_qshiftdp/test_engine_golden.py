"""Golden runs of every optimizer mode and of the app: the engine's refactor (issue 46) changes
no number.

Each case is a seeded short training through one route (``make_private`` in each clip mode,
per-group clipping, a shot-noise credit, replace-one adjacency, the ``PrivacyEngine`` subclass
in flat and per-layer clipping, the CLI's ``train`` job). What is compared: the ledger's history
and ε, each step record's public fields, the step at which the budget refuses (if it does), the
statement (package versions masked) and the final weights, exactly.

The numbers in ``engine_golden.json`` were recorded on the code before issue 46's refactor
(grouped specs, one optimizer class per mode, the app as phases). Regenerate it only for a
deliberate change of numbers, with the reason in the commit::

    PYTHONPATH=. python tests/pennylane_qshiftdp/test_engine_golden.py \\
        > tests/pennylane_qshiftdp/engine_golden.json
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import pennylane as qml
import pytest
import torch

import pennylane_qshiftdp as qs

#: step-record fields compared (the public ones every mode writes)
RECORD_FIELDS = ("step", "epsilon", "clip_norm", "next_clip_norm", "proven_noise_multiplier",
                 "certified", "credit_mode", "artificial_variance_mean")


def _circuit(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return [qml.expval(qml.Z(w)) for w in range(2)]


def _one_output(inputs, weights):
    qml.AngleEmbedding(inputs, wires=range(2))
    qml.StronglyEntanglingLayers(weights, wires=range(2))
    return qml.expval(qml.Z(0))


def _qnode(shots=None, recorder=None):
    kwargs = {"recorder": recorder} if recorder is not None else {}
    circuit = _one_output if recorder is not None else _circuit
    qnode = qml.QNode(circuit, qml.device("default.qubit", seed=5), interface="torch",
                      diff_method=qs.param_shift, gradient_kwargs=kwargs)
    return qml.set_shots(qnode, shots=shots) if shots else qnode


def _data(n=30, features=2):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, features, generator=g, dtype=torch.float64) * 3
    y = (x.sum(1) > 1.5 * features).long()
    return torch.utils.data.TensorDataset(x, y)


def _quantum(shots=None, recorder=None):
    torch.manual_seed(3)
    return qml.qnn.TorchLayer(_qnode(shots, recorder), {"weights": (1, 2, 3)})


def _hybrid():
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(4, 2).double(), torch.nn.Tanh(),
                               qml.qnn.TorchLayer(_qnode(), {"weights": (1, 2, 3)}),
                               torch.nn.Linear(2, 2).double())


def _ce(out, y):
    return torch.nn.functional.cross_entropy(out * 3, y)


def _linear(out, y):
    return -(out.reshape(-1) * (2.0 * y - 1)).mean()


#: case -> (model, features, make_private keyword arguments)
CASES = {
    "certified_rdp": ("quantum", 2, dict(max_grad_norm="certified", accountant="rdp",
                                         loss=qs.losses.SoftmaxCrossEntropyLoss(3.0))),
    "calibrated_hybrid": ("hybrid", 4, dict()),
    "fixed_hybrid": ("hybrid", 4, dict(max_grad_norm=1.0)),
    "fixed_replace_one": ("quantum", 2, dict(max_grad_norm=0.5, adjacency="replace_one")),
    "per_group_hybrid": ("hybrid", 4, dict(max_grad_norm="certified",
                                           classical_max_grad_norm=0.7,
                                           loss=qs.losses.SoftmaxCrossEntropyLoss(3.0))),
    "automatic": ("quantum", 2, dict(max_grad_norm="automatic")),
    "adaptive": ("quantum", 2, dict(max_grad_norm="adaptive", adaptive_clipping=dict(
        target_unclipped_quantile=0.5, clipbound_learning_rate=0.2, initial_clipbound=0.4))),
    "public": ("quantum", 2, dict(max_grad_norm="public", input_range=(0.0, 3.0),
                                  loss=qs.losses.SoftmaxCrossEntropyLoss(3.0))),
    "credit_adaptive": ("credit", 2, dict(credit="adaptive", beta=1e-6,
                                          loss=qs.losses.LinearLoss())),
    "sample_rate_declared": ("quantum", 2, dict(max_grad_norm=0.8, sample_rate=0.25,
                                                expected_batch_size=7.5)),
    "refused": ("quantum", 2, dict(max_grad_norm=0.8, target_epsilon=0.5, epochs=1)),
}


def _record(r: dict) -> dict:
    return {k: r.get(k) for k in RECORD_FIELDS}


def _summary(model, opt, refused_at) -> dict:
    ledger = opt.ledger
    statement = re.sub(r"\d+\.\d+\.\d+(\.dev\d+|\+cpu)?", "X", ledger.statement())
    return {
        "history": [list(e) for e in ledger.history],
        "epsilon": ledger.epsilon,
        "records": [_record(r) for r in opt.history],
        "refused_at": refused_at,
        "statement": statement,
        "weights": [p.detach().reshape(-1).tolist() for p in model.parameters()],
    }


def _train(model, opt, loader, epochs, criterion):
    refused_at = None
    try:
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                if len(xb):
                    criterion(model(xb), yb).backward()
                opt.step()
    except qs.PrivacyBudgetExceededError:
        refused_at = opt.ledger.steps + 1
    return refused_at


def _run_make_private(kind, features, kwargs):
    kwargs = dict(kwargs)
    recorder = qs.ShotRecorder() if kind == "credit" else None
    if kind == "hybrid":
        module = _hybrid()
    else:
        module = _quantum(shots=100 if recorder else None, recorder=recorder)
    if recorder is not None:
        kwargs["recorder"] = recorder
    loader = torch.utils.data.DataLoader(_data(features=features), batch_size=6)
    kwargs.setdefault("target_epsilon", 3.0)
    kwargs.setdefault("epochs", 2)
    train_epochs = 4 if kwargs["target_epsilon"] < 1 else kwargs["epochs"]
    criterion = _linear if kind == "credit" else _ce
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = qs.make_private(
            module, torch.optim.SGD(module.parameters(), lr=0.3), loader, target_delta=1e-5,
            seed=0, criterion=criterion, **kwargs)
        refused_at = _train(model, opt, loader, train_epochs, criterion)
    return _summary(model, opt, refused_at)


def _run_engine(clipping):
    module = _hybrid()
    loader = torch.utils.data.DataLoader(_data(features=4), batch_size=6)
    engine = qs.PrivacyEngine(accountant="rdp")
    norm = 1.0 if clipping == "flat" else [0.5] * len(list(module.parameters()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model, opt, loader = engine.make_private_with_epsilon(
            module=module, optimizer=torch.optim.SGD(module.parameters(), lr=0.3),
            data_loader=loader, target_epsilon=3.0, target_delta=1e-5, epochs=2,
            max_grad_norm=norm, clipping=clipping, poisson_sampling=True)
        refused_at = _train(model, opt, loader, 2, _ce)
    return {
        "epsilon": engine.get_epsilon(1e-5),
        "noise_multiplier": opt.noise_multiplier,
        "refused_at": refused_at,
        "weights": [p.detach().reshape(-1).tolist() for p in model.parameters()],
    }


def _run_app(extra):
    from pennylane_qshiftdp.app.job import TrainConfig, train

    dataset = "breast_cancer" if "credit" in extra else "iris"  # a credit needs one output
    config = TrainConfig(dataset=dataset, qubits=4, layers=1, epochs=2, shots=100, seed=1,
                         secure_mode=False, test_size=0.5, device="default.qubit", **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = train(config, progress=False)
    return {
        "test_accuracy": result.test_accuracy,
        "epsilon": result.epsilon,
        "credited_epsilon": None if math.isinf(result.credited_epsilon)
        else result.credited_epsilon,
        "steps": result.steps,
        "records": [_record(r) for r in result.step_records],
        "statement": re.sub(r"\d+\.\d+\.\d+(\.dev\d+|\+cpu)?", "X", result.statement),
        "weights": result.weights.reshape(-1).tolist(),
    }


APP_CASES = {"app_default": {}, "app_credit": {"credit": "adaptive", "beta": 1e-3},
             "app_fixed_clip": {"max_grad_norm": 0.5}}


def _run(case: str) -> dict:
    if case in CASES:
        return _run_make_private(*CASES[case])
    if case.startswith("engine_"):
        return _run_engine(case.removeprefix("engine_"))
    return _run_app(APP_CASES[case])


ALL_CASES = sorted([*CASES, "engine_flat", "engine_per_layer", *APP_CASES])
GOLDEN_FILE = Path(__file__).parent / "engine_golden.json"


@pytest.mark.parametrize("case", ALL_CASES)
def test_seeded_run_gives_the_recorded_numbers(case):
    """Same history, ε, step records, refusal, statement and weights as before the refactor."""
    golden = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(_run(case)))
    want = golden[case]
    assert set(got) == set(want)
    for key in want:
        assert got[key] == want[key], key


def test_the_golden_cases_are_not_vacuous():
    """Every run trained (weights moved, steps recorded) and the refusal case was refused."""
    golden = json.loads(GOLDEN_FILE.read_text(encoding="utf-8"))
    assert set(golden) == set(ALL_CASES)
    assert golden["refused"]["refused_at"] is not None
    for case in CASES:
        assert len(golden[case]["records"]) >= 5, case
    assert len({json.dumps(golden[c]["weights"]) for c in CASES}) >= len(CASES) - 2
    assert golden["credit_adaptive"]["records"][0]["credit_mode"] == "adaptive"


if __name__ == "__main__":
    print(json.dumps({case: _run(case) for case in ALL_CASES}, indent=1))
