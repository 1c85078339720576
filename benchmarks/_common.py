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


def result_name(name: str, quick: bool) -> str:
    """File stem of a result: ``name`` in full mode, ``name_quick`` in quick mode."""
    return f"{name}_quick" if quick else name


def save_figure(fig, json_path: Path) -> Path:
    """Save a matplotlib figure as a PNG beside ``json_path`` (same stem); close it."""
    import matplotlib.pyplot as plt

    path = Path(json_path).with_suffix(".png")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def pyplot():
    """matplotlib.pyplot with the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mean_std(values) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value) of ``values``."""
    import statistics

    vals = [float(v) for v in values]
    if not vals:
        return float("nan"), float("nan")
    return statistics.fmean(vals), (statistics.stdev(vals) if len(vals) > 1 else 0.0)
