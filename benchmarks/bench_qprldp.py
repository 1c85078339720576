"""Benchmark of qprldp_core: closed-form certificates and the worst-case search.

Times (median of repeats, wall clock):

* global depolarizing QLDP + QPrLDP certificates for d in {2, 4, ..., 1024};
* local depolarizing D_p^(⊗n) certificates for n in {1, ..., 50} (target: n = 50 < 10 ms);
* ``worst_case_search`` (QLDP and QPrLDP) for global depolarizing at d in {2, 4, 8, 16}
  (target: d = 16 < 5 s), with the gap to the closed form.

Writes ``benchmarks/results/bench_qprldp.json`` (with the environment: package versions, CPU
count) and prints a table. ``--quick`` runs a reduced configuration.

Usage::

    python benchmarks/bench_qprldp.py [--quick] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

# Heavy libraries (torch, PennyLane, Opacus, SciPy; pennylane_qshiftdp and qprldp_core import
# them) are bound by _import_heavy(), which main() calls after parsing the arguments, so that
# `--help` and argument errors answer without loading them. Module-level names stay None
# until then.
qldp_certificate = qprldp_certificate = Channel = depolarizing = local_depolarizing = None
worst_case_search = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global qldp_certificate, qprldp_certificate, Channel, depolarizing, local_depolarizing
    global worst_case_search
    from qprldp_core.certify import qldp_certificate, qprldp_certificate
    from qprldp_core.channels import Channel, depolarizing, local_depolarizing
    from qprldp_core.privacy import worst_case_search


RESULTS_DIR = Path(__file__).resolve().parent / "results"


def environment() -> dict:
    """Package versions, Python, platform and CPU count."""
    versions = {}
    for name in ("numpy", "scipy", "pennylane-qshiftdp"):
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


def random_channel(d: int, k: int, seed: int) -> Channel:
    """A random channel on dimension d with k Kraus operators (isometry from a QR)."""
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(k * d, d)) + 1j * rng.normal(size=(k * d, d))
    v, _ = np.linalg.qr(g)
    return Channel([v[i * d:(i + 1) * d] for i in range(k)], atol=1e-9)


def _time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(quick: bool = False) -> dict:
    """Run the benchmark and return the result dictionary."""
    eps, p = 1.0, 0.3
    repeats = 3 if quick else 20
    dims = [2, 4, 8] if quick else [2**k for k in range(1, 11)]
    qubits = [1, 2, 50] if quick else list(range(1, 51))
    search_dims = [2, 4] if quick else [2, 4, 8, 16]
    rows_global, rows_local, rows_search = [], [], []
    for d in dims:
        ch = depolarizing(p, d)
        t = _time(lambda ch=ch: (qldp_certificate(ch, epsilon=eps),
                                 qprldp_certificate(ch, epsilon=eps)), repeats)
        rows_global.append({"d": d, "seconds": t})
    for n in qubits:
        ch = local_depolarizing(p, n)
        t1 = _time(lambda ch=ch: qldp_certificate(ch, epsilon=eps), repeats)
        t2 = _time(lambda ch=ch: qprldp_certificate(ch, epsilon=eps), repeats)
        c1 = qldp_certificate(ch, epsilon=eps)
        c2 = qprldp_certificate(ch, epsilon=eps)
        rows_local.append({"n": n, "qldp_seconds": t1, "qprldp_seconds": t2,
                           "qldp_delta_upper": c1.delta, "qldp_delta_lower": c1.delta_lower,
                           "qprldp_delta_upper": c2.delta, "qprldp_delta_lower": c2.delta_lower})
    for d in search_dims:
        ch = depolarizing(p, d)
        for notion in ("qldp", "qprldp"):
            t0 = time.perf_counter()
            res = worst_case_search(ch, epsilon=0.5, notion=notion, restarts=8, seed=0)
            t = time.perf_counter() - t0
            cert = (qldp_certificate if notion == "qldp" else qprldp_certificate)(ch, epsilon=0.5)
            rows_search.append({"d": d, "channel": "depolarizing", "notion": notion,
                                "seconds": t, "found": res.value, "closed_form": cert.delta,
                                "gap": float(cert.delta - res.value)})
            gen = random_channel(d, 4, seed=d)
            t0 = time.perf_counter()
            res = worst_case_search(gen, epsilon=0.5, notion=notion, restarts=8, seed=0)
            rows_search.append({"d": d, "channel": "random (4 Kraus)", "notion": notion,
                                "seconds": time.perf_counter() - t0, "found": res.value,
                                "closed_form": None, "gap": None})
    return {
        "benchmark": "bench_qprldp",
        "quick": quick,
        "environment": environment(),
        "config": {"epsilon": eps, "p": p, "repeats": repeats, "search_epsilon": 0.5,
                   "search_restarts": 8},
        "global_certificates": rows_global,
        "local_certificates": rows_local,
        "worst_case_search": rows_search,
        "targets": {"local_n50_seconds": 0.01, "search_d16_seconds": 5.0},
    }


def _table(rows: list[dict], cols: list[str]) -> str:
    def f(v):
        if v is None:
            return "-"
        return f"{v:.4g}" if isinstance(v, float | np.floating) else str(v)

    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    out += ["| " + " | ".join(f(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(out)


def figure(result: dict, json_path: Path) -> Path:
    """Certificate and search times, saved as a PNG beside the JSON."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(14, 4))
    g = result["global_certificates"]
    ax[0].plot([r["d"] for r in g], [r["seconds"] for r in g], "o-")
    ax[0].set(xscale="log", yscale="log", xlabel="dimension d", ylabel="seconds",
              title="global depolarizing certificates")
    loc = result["local_certificates"]
    for key in ("qldp_seconds", "qprldp_seconds"):
        ax[1].plot([r["n"] for r in loc], [r[key] for r in loc], "o-", label=key)
    ax[1].set(yscale="log", xlabel="qubits n", ylabel="seconds",
              title="local depolarizing certificates")
    ax[1].legend(fontsize=7)
    for (ch, notion) in sorted({(r["channel"], r["notion"]) for r in result["worst_case_search"]}):
        rows = [r for r in result["worst_case_search"]
                if r["channel"] == ch and r["notion"] == notion]
        ax[2].plot([r["d"] for r in rows], [r["seconds"] for r in rows], "o-",
                   label=f"{ch} {notion}")
    ax[2].set(xscale="log", yscale="log", xlabel="dimension d", ylabel="seconds",
              title="worst-case search")
    ax[2].legend(fontsize=7)
    return save_figure(fig, json_path)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, write the JSON result and print tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small configuration (for tests)")
    ap.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=RESULTS_DIR, help="output directory")
    ns = ap.parse_args(argv)
    _import_heavy()
    ns.quick = ns.quick or ns.tiny
    result = run(quick=ns.quick)
    ns.out.mkdir(parents=True, exist_ok=True)
    path = ns.out / ("bench_qprldp_quick.json" if ns.quick else "bench_qprldp.json")
    path.write_text(json.dumps(result, indent=2, default=float))
    figure(result, path)
    print("Global depolarizing: QLDP + QPrLDP certificates (median seconds)")
    print(_table(result["global_certificates"], ["d", "seconds"]))
    print("\nLocal depolarizing D_p^(⊗n) certificates (median seconds, delta bounds at eps=1)")
    print(_table(result["local_certificates"],
                 ["n", "qldp_seconds", "qprldp_seconds", "qldp_delta_lower", "qldp_delta_upper",
                  "qprldp_delta_lower", "qprldp_delta_upper"]))
    print("\nWorst-case search (lower bounds), p=0.3 / random channel, eps=0.5, 8 restarts")
    print(_table(result["worst_case_search"],
                 ["d", "channel", "notion", "seconds", "found", "closed_form", "gap"]))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
