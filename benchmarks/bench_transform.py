"""Time pennylane_qshiftdp.param_shift (recording shot statistics) against
qml.gradients.param_shift on the same device, shots and batch, alternating the two in one run.

Default configuration (issue #2): 4 qubits, 2 StronglyEntanglingLayers, Ns = 1000, batch 32;
default.qubit with input broadcasting, and lightning.qubit. Prints the median time ratio
(ours / PennyLane's) and the number of circuits executed per gradient.

    python benchmarks/bench_transform.py            # issue #2 configuration
    python benchmarks/bench_transform.py --quick    # seconds
    python benchmarks/bench_transform.py --qubits 4 8 --shots 100 1000   # wider sweep
    python benchmarks/bench_transform.py --sweep    # issue #5: 4 and 8 qubits, Ns 100 and 1000,
                                                    # both devices (with --quick: fewer repeats)

Results: ``benchmarks/results/bench_transform.json`` (issue #2 default),
``bench_transform_sweep.json`` (issue #5 sweep), ``*_quick.json`` for quick runs; a PNG beside
each JSON.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import pyplot, save_figure, table, write_result  # noqa: E402

# Heavy libraries (torch, PennyLane, Opacus, SciPy; pennylane_qshiftdp and qprldp_core import
# them) are bound by _import_heavy(), which main() calls after parsing the arguments, so that
# `--help` and argument errors answer without loading them. Module-level names stay None
# until then.
qml = pnp = qs = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global qml, pnp, qs
    import pennylane as qml
    from pennylane import numpy as pnp

    import pennylane_qshiftdp as qs



def _qnode(devname, n_qubits, shots, seed):
    dev = qml.device(devname, wires=n_qubits, seed=seed)

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n_qubits))
        qml.StronglyEntanglingLayers(weights, wires=range(n_qubits))
        return qml.expval(qml.Z(0))

    return qml.set_shots(qml.QNode(circuit, dev), shots=shots)


def run_config(devname, n_qubits, layers, shots, batch, repeats, seed=0):
    rng = np.random.default_rng(seed)
    inputs = pnp.array(rng.uniform(0, np.pi, (batch, n_qubits)), requires_grad=False)
    weights = pnp.array(rng.normal(0, 0.1, (layers, n_qubits, 3)), requires_grad=True)
    qnode = _qnode(devname, n_qubits, shots, seed)
    tape = qml.workflow.construct_tape(qnode)(inputs, weights)
    [tape], _ = qs.param_shift.expand_transform(tape)
    dev = qnode.device

    def ours():
        rec = qs.ShotRecorder()
        tapes, fn = qs.param_shift(tape, recorder=rec)
        fn(qml.execute(tapes, dev))
        return len(tapes)

    def theirs():
        tapes, fn = qml.gradients.param_shift(tape)
        fn(qml.execute(tapes, dev))
        return len(tapes)

    ours(), theirs()  # warm up
    t_ours, t_theirs = [], []
    for _ in range(repeats):
        for fun, acc in ((ours, t_ours), (theirs, t_theirs)):
            start = time.perf_counter()
            n_tapes = fun()
            acc.append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(t_ours, t_theirs, strict=True)]
    circuits = n_tapes * (batch if devname != "default.qubit" else 1)
    return {
        "device": devname, "qubits": n_qubits, "layers": layers, "shots": shots,
        "batch": batch, "repeats": repeats, "tapes_per_gradient": n_tapes,
        "circuits_executed": n_tapes * batch, "device_executions": circuits,
        "median_ours_s": statistics.median(t_ours),
        "median_pennylane_s": statistics.median(t_theirs),
        "median_ratio": statistics.median(ratios),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny configuration (seconds)")
    p.add_argument("--devices", nargs="+", default=["default.qubit", "lightning.qubit"])
    p.add_argument("--qubits", nargs="+", type=int, default=[4])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--shots", nargs="+", type=int, default=[1000])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=None,
                   help="alternated repeats (default 15; 5 for the full --sweep)")
    p.add_argument("--sweep", action="store_true",
                   help="issue #5 sweep: 4 and 8 qubits, Ns 100 and 1000, both devices")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=None, help="output directory for the JSON")
    args = p.parse_args(argv)
    _import_heavy()
    if args.tiny:  # test configuration: the quick default, one device
        args.quick, args.sweep, args.devices = True, False, ["default.qubit"]
    if args.sweep:
        args.qubits, args.shots = [4, 8], [100, 1000]
        args.devices = ["default.qubit", "lightning.qubit"]
        if args.quick:
            args.batch, args.repeats = 8, 3
        elif args.repeats is None:
            args.repeats = 5
    elif args.quick:
        args.qubits, args.shots, args.batch, args.repeats, args.layers = [2], [100], 4, 3, 1
    args.repeats = 15 if args.repeats is None else args.repeats
    rows = [run_config(d, q, args.layers, s, args.batch, args.repeats)
            for d in args.devices for q in args.qubits for s in args.shots]
    cols = ["device", "qubits", "shots", "batch", "tapes_per_gradient", "circuits_executed",
            "median_ours_s", "median_pennylane_s", "median_ratio"]
    print(table(rows, cols))
    name = "bench_transform" + ("_sweep" if args.sweep else "") + ("_quick" if args.quick else "")
    path = write_result(name, {"quick": args.quick, "sweep": args.sweep, "rows": rows}, args.out)
    figure(rows, path)
    print(f"wrote {path}")
    return rows


def figure(rows, json_path):
    """Time ratio (ours / PennyLane's) per configuration."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [f"{r['device'].split('.')[0]}\n{r['qubits']}q Ns={r['shots']}" for r in rows]
    ax.bar(range(len(rows)), [r["median_ratio"] for r in rows])
    ax.axhline(1.0, c="k", ls="--")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set(ylabel="median time ratio (ours / qml.gradients.param_shift)",
           title="Gradient transform overhead")
    return save_figure(fig, json_path)


if __name__ == "__main__":
    main()
