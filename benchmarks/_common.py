"""Shared helpers for the benchmark scripts: environment record, JSON output, tables."""

from __future__ import annotations

import json
import os
import platform
import sys
from importlib import metadata
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"

_PACKAGES = ("pennylane", "pennylane_lightning", "torch", "opacus", "numpy", "scipy",
             "scikit-learn", "pennylane-qshiftdp")


def environment() -> dict:
    """Package versions, Python, platform and CPU count of this run."""
    versions = {}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "packages": versions,
    }


def write_result(name: str, payload: dict, out_dir: Path | None = None) -> Path:
    """Write ``payload`` plus the environment to ``<out_dir>/<name>.json``; return the path."""
    out_dir = Path(out_dir) if out_dir is not None else RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps({"benchmark": name, "environment": environment(), **payload},
                               indent=2, default=float))
    return path


def table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table of ``rows`` restricted to ``columns``."""
    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines)
