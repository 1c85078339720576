r"""A private step on qiskit.aer: the batched SamplerV2 route against pennylane-qiskit and native.

One process, alternated rounds. Each round times, in a rotating order, three variants that run
the same circuits (the digits job's classifier: angle embedding and StronglyEntanglingLayers,
4 qubits, 2 layers, a batch of 2 examples, 1000 shots per circuit, device sampling: 74
circuits):

* ``library``: one private step (forward, backward, noised optimizer step) of
  ``make_private`` on ``qiskit.aer``, on the default batched route (one SamplerV2 job);
* ``pennylane_qiskit``: the same step with the route switched off
  (``set_sampler(model, None)``: pennylane-qiskit converts and transpiles every circuit);
* ``native``: qiskit-aer's ``SamplerV2`` on the same parametrised circuit, written in Qiskit
  and transpiled once, run over the same 74 parameter rows with 1000 shots.

Every variant pays what a lone run pays: each round builds a fresh model, device, optimizer
and template cache (the library's transpiled templates live in the layer, so a fresh layer
starts empty) and a fresh native circuit and transpile. With ``--noise-model FakeManilaV2``
the device and the native sampler simulate that backend's noise. Reported per variant: the
median seconds per step [min, max] over the rounds, circuits per second, and the per-round
ratios library/native and pennylane_qiskit/library (median [min, max]). One untimed round of
every variant comes first (imports and first-call set-up are paid once per process).

    python benchmarks/bench_hardware.py [--rounds 5] [--noise-model FakeManilaV2] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import result_name, table, write_result  # noqa: E402

N_QUBITS, LAYERS, BATCH, SHOTS = 4, 2, 2, 1000


def _noise(name):
    if not name:
        return None
    from qiskit_aer.noise import NoiseModel
    from qiskit_ibm_runtime import fake_provider

    return NoiseModel.from_backend(getattr(fake_provider, name)())


def _private_step(noise_name, *, batched: bool) -> tuple[float, int]:
    """Seconds of one private step (model, device and optimizer built before the clock), and
    the circuits the device's tracker counted."""
    import pennylane as qml
    import torch

    from pennylane_qshiftdp import make_private
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.hardware import set_sampler

    options = {"noise_model": _noise(noise_name)} if noise_name else None
    model = QuantumClassifier(N_QUBITS, LAYERS, device="qiskit.aer", shots=SHOTS,
                              device_options=options)
    if not batched:
        set_sampler(model, None)
    x = torch.rand(64, N_QUBITS, dtype=torch.float64) * 3
    y = torch.where(torch.rand(64) < 0.5, -1.0, 1.0).double()
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = make_private(model, opt, loader, target_epsilon=1.0,
                                          target_delta=1e-5, epochs=1, max_grad_norm=1.0)
    xb, yb = x[:BATCH], y[:BATCH]
    dev = next(m.qnode.device for m in model.modules() if isinstance(m, qml.qnn.TorchLayer))
    with qml.Tracker(dev) as tracker:
        start = time.perf_counter()
        opt.zero_grad()
        loss = ((model(xb) - yb) ** 2).mean()
        loss.backward()
        opt.step()
        seconds = time.perf_counter() - start
    return seconds, int(tracker.totals.get("executions", 0))


def _native(noise_name, rows: int) -> float:
    """Seconds of qiskit-aer's SamplerV2 on the circuit transpiled once, ``rows`` parameter
    rows of 1000 shots (circuit built and transpiled inside the clock, as a lone run)."""
    import numpy as np
    from qiskit import QuantumCircuit, transpile
    from qiskit.circuit import ParameterVector
    from qiskit_aer import AerSimulator
    from qiskit_aer.primitives import SamplerV2

    start = time.perf_counter()
    backend = AerSimulator(noise_model=_noise(noise_name)) if noise_name else AerSimulator()
    x = ParameterVector("x", N_QUBITS)
    w = ParameterVector("w", 3 * N_QUBITS * LAYERS)
    qc = QuantumCircuit(N_QUBITS, N_QUBITS)
    for i in range(N_QUBITS):
        qc.ry(x[i], i)
    k = 0
    for layer in range(LAYERS):
        for i in range(N_QUBITS):
            qc.rz(w[k], i)
            qc.ry(w[k + 1], i)
            qc.rz(w[k + 2], i)
            k += 3
        r = layer % (N_QUBITS - 1) + 1
        for i in range(N_QUBITS):
            qc.cx(i, (i + r) % N_QUBITS)
    qc.measure(range(N_QUBITS), range(N_QUBITS))
    isa = transpile(qc, backend=backend)
    values = np.random.default_rng(0).uniform(0, np.pi, (rows, len(isa.parameters)))
    result = SamplerV2.from_backend(backend).run([(isa, values, SHOTS)]).result()
    counts = result[0].data.c.get_counts(0)
    assert sum(counts.values()) == SHOTS
    return time.perf_counter() - start


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--noise-model", default="", help="a fake backend, e.g. FakeManilaV2")
    p.add_argument("--quick", action="store_true", help="2 rounds")
    p.add_argument("--out", default=None, help="result directory (default benchmarks/results)")
    args = p.parse_args(argv)
    rounds = 2 if args.quick else args.rounds
    variants = ["library", "pennylane_qiskit", "native"]
    times: dict = {v: [] for v in variants}
    # one untimed round first: imports and first-call set-up of qiskit-aer, PennyLane and
    # Opacus are paid once per process, not per run of a variant
    _private_step(args.noise_model, batched=True)
    _private_step(args.noise_model, batched=False)
    _native(args.noise_model, 74)
    circuits = None
    load = []
    for r in range(rounds):
        order = variants[r % 3:] + variants[:r % 3]
        for v in order:
            if v == "native":
                times[v].append(_native(args.noise_model, circuits or 74))
            else:
                sec, n = _private_step(args.noise_model, batched=(v == "library"))
                circuits = circuits or n
                assert n == circuits, (v, n, circuits)
                times[v].append(sec)
        load.append(os.getloadavg()[0])
        print(f"round {r}: " + ", ".join(f"{v} {times[v][-1]:.3f} s" for v in variants),
              flush=True)

    def med(vals):
        return {"median": statistics.median(vals), "min": min(vals), "max": max(vals)}

    rows = [{"variant": v, "seconds_per_step": statistics.median(times[v]),
             "circuits_per_second": circuits / statistics.median(times[v])} for v in variants]
    ratios = {"library_over_native": med([a / b for a, b in zip(times["library"],
                                                                 times["native"], strict=True)]),
              "pennylane_qiskit_over_library": med(
                  [a / b for a, b in zip(times["pennylane_qiskit"], times["library"],
                                         strict=True)])}
    quick = args.quick
    name = "bench_hardware" + (f"_{args.noise_model}" if args.noise_model else "")
    path = write_result(result_name(name, quick), {
        "quick": quick, "rounds": rounds, "qubits": N_QUBITS, "layers": LAYERS, "batch": BATCH,
        "shots": SHOTS, "circuits_per_step": circuits, "noise_model": args.noise_model or None,
        "load_average_1min": load, "seconds": times,
        "variants": {v: med(times[v]) for v in variants}, "rows": rows, "ratios": ratios},
        Path(args.out) if args.out else None)
    print(table(rows, ["variant", "seconds_per_step", "circuits_per_second"]))
    print({k: {a: round(b, 3) for a, b in v.items()} for k, v in ratios.items()})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
