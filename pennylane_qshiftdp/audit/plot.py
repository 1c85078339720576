r"""Histograms of an audit's scores with the chosen thresholds (matplotlib, imported lazily)."""

from __future__ import annotations

import math

import numpy as np

from .result import AuditResult

__all__ = ["plot_audit"]


def plot_audit(result: AuditResult, path) -> None:
    r"""Histograms of the scores on :math:`D` and :math:`D'` with the chosen thresholds (PNG).

    One panel per score; the threshold chosen on the first half is a vertical line; the title
    gives the claims and the audited bound. Uses matplotlib's Agg backend (no display).

    Args:
        result: an audited :class:`AuditResult` (a refused one has no scores).
        path: the PNG file to write (parent directories are created).

    Raises:
        ValueError: if ``result`` was refused (no scores to plot).
    """
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if result.refused or not result.scores:
        raise ValueError(f"`result` has no scores to plot (status {result.status!r}).")
    names = list(result.scores)
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        s_d, s_dp = result.scores[name]
        lo, hi = float(min(s_d.min(), s_dp.min())), float(max(s_d.max(), s_dp.max()))
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 61)
        ax.hist(s_d, bins=bins, alpha=0.55, label="D", color="tab:blue")
        ax.hist(s_dp, bins=bins, alpha=0.55, label="D' (with canary)", color="tab:orange")
        b = result.bounds[name]
        if math.isfinite(b.threshold):
            ax.axvline(b.threshold, color="k", ls="--",
                       label=f"threshold ({b.direction} is D')")
        ax.set_title(f"{name}: ε ≥ {b.epsilon_lower_bound:.3f}")
        ax.set_xlabel(f"{name} score")
        ax.set_ylabel("trials")
        ax.legend(fontsize=8)
    fig.suptitle(f"{result.label}: claimed ε {result.claimed_epsilon:.3f} (proven), "
                 f"{result.credited_epsilon:.3f} (credited); audited ε ≥ "
                 f"{result.epsilon_lower_bound:.3f} — {result.verdict}", fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
