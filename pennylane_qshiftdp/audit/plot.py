r"""Histograms of an audit's scores with the chosen thresholds (matplotlib, imported lazily)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .result import AuditResult

__all__ = ["plot_audit", "plot_one_run"]


def plot_audit(result: AuditResult, path: str | os.PathLike) -> None:
    r"""Histograms of the scores on :math:`D` and :math:`D'` with the chosen thresholds (PNG).

    One panel per score; the thresholds chosen on the selection trials (Clopper–Pearson and
    Gaussian DP) are vertical lines; the title gives the claims, the audited bound and the
    ceilings. Uses matplotlib's Agg backend (no display).

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
        b = result.bounds.get(name)
        title = []
        if b is not None:
            if math.isfinite(b.threshold):
                ax.axvline(b.threshold, color="k", ls="--",
                           label=f"Clopper–Pearson threshold ({b.direction} is D')")
            title.append(f"CP ε ≥ {b.epsilon_lower_bound:.3f}")
        g = result.gdp_bounds.get(name)
        if g is not None:
            if math.isfinite(g.threshold):
                ax.axvline(g.threshold, color="tab:red", ls=":",
                           label=f"Gaussian-DP threshold ({g.direction} is D')")
            title.append(f"GDP μ ≥ {g.mu_lower_bound:.3f}, ε ≥ {g.epsilon_lower_bound:.3f}")
        ax.set_title(f"{name}: " + "; ".join(title), fontsize=9)
        ax.set_xlabel(f"{name} score")
        ax.set_ylabel("trials")
        ax.legend(fontsize=8)
    def f(x):
        return "-" if x is None else f"{x:.3f}"

    ceiling = ", ".join(f"{k} {v:.2f}" for k, v in result.ceilings.items())
    fig.suptitle(f"{result.label}: claimed ε {f(result.claimed_epsilon)} (proven), "
                 f"{f(result.credited_epsilon)} (credited); audited ε ≥ "
                 f"{result.epsilon_lower_bound:.3f} (ceiling {ceiling}) — {result.verdict}",
                 fontsize=10)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_one_run(result: Mapping[str, Any], path: str | os.PathLike) -> None:
    r"""Histogram of a one-run audit's canary scores, included vs excluded, with the guesses.

    The scores of the canaries whose coin included them and of those it left out, and the
    thresholds of the best guess of :func:`~pennylane_qshiftdp.audit.one_run_bound`: scores at
    or above ``thresholds["in"]`` were guessed in, at or below ``thresholds["out"]`` out. The
    title gives the claim, the bound and the ceiling. Matplotlib's Agg backend (no display).

    Args:
        result: a :class:`~pennylane_qshiftdp.audit.OneRunResult` with ``scores`` and
            ``included`` (as :func:`~pennylane_qshiftdp.audit.audit_run` returns).
        path: the PNG file to write (parent directories are created).
    """
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = np.asarray(result["scores"], dtype=float)
    inc = np.asarray(result["included"], dtype=bool)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ok = np.isfinite(s)
    if ok.any():
        lo, hi = float(s[ok].min()), float(s[ok].max())
        bins = np.linspace(lo, hi if hi > lo else lo + 1.0, 51).tolist()
        ax.hist(s[ok & ~inc], bins=bins, alpha=0.55, color="tab:blue",
                label=f"canaries left out ({int((~inc).sum())})")
        ax.hist(s[ok & inc], bins=bins, alpha=0.55, color="tab:orange",
                label=f"canaries included ({int(inc.sum())})")
    th = result.get("thresholds") or {}
    bound = result.get("bound")
    if th.get("in") is not None:
        k = getattr(bound, "k_positive", None)
        ax.axvline(th["in"], color="k", ls="--", label=f"guess in: top {k} (score ≥ this)")
    if th.get("out") is not None:
        k = getattr(bound, "k_negative", None)
        ax.axvline(th["out"], color="tab:red", ls=":",
                   label=f"guess out: bottom {k} (score ≤ this)")
    ax.set(xlabel="canary score (update projected on the canary's clipped gradient)",
           ylabel="canaries")
    ax.legend(fontsize=7)
    claim = result.get("claimed_epsilon")
    claim = "-" if claim is None else f"{claim:.3f}"
    correct = "" if bound is None else f", {bound.correct}/{bound.guesses} guesses right"
    ax.set_title(f"one run, {result['canaries']} canaries, {result['steps']} steps: claimed "
                 f"ε {claim}; audited ε ≥ {result['epsilon_lower_bound']:.3f} (ceiling "
                 f"{result['ceiling']:.2f}){correct}\n{result['verdict']}", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
