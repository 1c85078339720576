"""The README's Python examples run as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102 - our own README
    ledger = namespace["optimizer"].ledger
    assert ledger.steps == 30 and ledger.epsilon <= 2.0


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
