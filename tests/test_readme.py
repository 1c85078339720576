"""The README's Python examples run as written."""

import re
import statistics
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
    ledger = namespace["optimizer"].ledger
    assert ledger.steps == 25 and ledger.epsilon <= 2.0  # q = 1/⌈133/32⌉, 5 epochs
    assert namespace["accuracy"] >= 0.8
    assert "fixed clip norm C = 1 (DP-SGD)" in ledger.statement()
    assert namespace["optimizer"].stuck_run_cause() is None  # a run that learns


def _hybrid_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if "class Hybrid" in b]
    return block


@pytest.mark.slow
def test_readme_hybrid_learns_wine_at_epsilon_2():
    """Issue 34's goal: the README's hybrid reaches >= 0.80 test accuracy on wine at ε = 2 in 5
    epochs, median of seeds 0, 1, 2 (the README quotes the three accuracies). Issue 44: with the
    best call measured for it, a fixed clip C = 1 (0.889 over seeds 0-9, the calibrated default
    0.833, automatic clipping 0.844)."""
    block = _hybrid_block()
    assert "max_grad_norm=1.0" in block and "classical_max_grad_norm" not in block
    accuracies = []
    for seed in (0, 1, 2):
        namespace: dict = {}
        code = block.replace("seed = 0\n", f"seed = {seed}\n", 1)
        assert code != block or seed == 0
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
        assert namespace["optimizer"].ledger.epsilon <= 2.0
        accuracies.append(namespace["accuracy"])
    assert statistics.median(accuracies) >= 0.80, accuracies
    text = README.read_text(encoding="utf-8")
    assert "test accuracy " + ", ".join(f"{a:.3f}" for a in accuracies[:2]) in _squash(text)


#: metrics.json keys beside the per-epoch fields that the outputs lists must name.
METRICS_KEYS = ("test_majority_rate", "majority_class_warning", "test_split")


def _metrics_row(text: str) -> str:
    return next(r for r in text.splitlines() if r.startswith("| `metrics.json`, `metrics.csv`"))


def test_readme_outputs_list_names_every_metrics_key():
    from pennylane_qshiftdp.app.records import PUBLIC_EPOCH_FIELDS

    row = _metrics_row(README.read_text(encoding="utf-8"))
    missing = [k for k in (*PUBLIC_EPOCH_FIELDS, *METRICS_KEYS) if f"`{k}`" not in row]
    assert not missing, missing
    assert "majority-class rate" in _readme_row("`accuracy_epsilon.png`")


def _readme_row(start: str) -> str:
    return next(r for r in README.read_text(encoding="utf-8").splitlines()
                if r.startswith(f"| {start}"))
