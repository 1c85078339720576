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

    python benchmarks/bench_transform.py --step     # issue #12: one private training step
                                                    # (device vs exact-law sampling) against one
                                                    # non-private param_shift step, 4/8/10/12 qubits

``--step`` times one private step on make_private's triple (Opacus's grad sampler with the fused
evaluation of forward and all shifted circuits, per-example clipping, noise) for a fixed batch,
with the device sampling every shot and with exact-law sampling
(``pennylane_qshiftdp.sampling.use_exact_law``), against one non-private step of the same model
differentiated by PennyLane's own ``diff_method="parameter-shift"`` on the same device and
shots. The three are alternated in one process. Default: 2 layers, batch 54, Ns = 1000,
default.qubit and lightning.qubit at 4, 8, 10 and 12 qubits; 5 repeats at 4 qubits, 3 at 8, 2 at
10 and 1 at 12 (two warm-up steps first). It prints a Markdown table (also stored in
the JSON) and the qubit count from which lightning.qubit is faster than default.qubit.
With ``--alternative`` the default.qubit rows add the private step with ``shots=None``, the
Opacus + backprop alternative, the same exact-law step on lightning.qubit, and the numpy limit,
the last in its own process with one BLAS thread (``_NumpyLimitWorker``), all alternated in the
same rounds; each row records the load average (``uptime``) before and after it. ``--step``
pins torch to one intra-op thread (``--torch-threads``) unless told otherwise.

``--scaling`` (issue 43) times the private exact-law step, the private analytic step
(``shots=None``) and the Opacus + backprop alternative at 4, 8, 12 and 16 qubits (default.qubit,
batch 54, Ns = 1000, 2 layers), each step in a fresh interpreter of its own (it pays what a lone
run pays: no cache, pool or allocation shared with another variant), the variants alternated
in rounds, and records each one's seconds per step, its peak resident memory and the peak's
increase over the memory before its first step, with the load average (``uptime``) before and
after every qubit count. Rounds and steps per round: 3 × 5 at 4 qubits, 3 × 3 at 8, 2 × 1 at
12, 1 × 1 at 16 (two warm-up steps below 13 qubits, none at 16: its one step includes the
run's one-time costs, about a second)::

    python benchmarks/bench_transform.py --scaling
    python benchmarks/bench_transform.py --scaling --qubits 4 8 12

Results: ``benchmarks/results/bench_transform.json`` (issue #2 default),
``bench_transform_sweep.json`` (issue #5 sweep), ``bench_transform_step.json`` (issue #12),
``bench_transform_scaling.json`` (issue 43),
``*_quick.json`` for quick runs; a PNG beside each JSON.
"""

from __future__ import annotations

import argparse
import json
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
qml = pnp = qs = torch = None


def _import_heavy() -> None:
    """Import the heavy libraries into this module's namespace (idempotent)."""
    global qml, pnp, qs, torch
    import pennylane as qml
    import torch
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


# --------------------------------------------------------------------------------------------
# Issue #12: one private training step against one non-private param_shift step
# --------------------------------------------------------------------------------------------

# Repeats per qubit count in --step mode (the 12-qubit steps take tens of seconds each).
_STEP_REPEATS = {4: 5, 8: 3, 10: 2, 12: 1}
# Warm-up steps are skipped from this many qubits on. Every size measured is warmed up, twice:
# the first private step records the circuit's structure and shift rule (a second construction
# of the tape), which at 10-12 qubits is comparable to a step itself, and the second finds the
# budget's admissible step count (issue 43: about 0.2-0.5 s once per run, which the 12-qubit
# row, timed once, paid before).
_NO_WARMUP_QUBITS = 13

# ``--versus``: from this many qubits, one step per round and one round (an old-library step
# takes seconds to half a minute there).
_VERSUS_SINGLE_STEP_QUBITS = 10


def _private_step_fn(devname, n_qubits, layers, shots, x, y, seed, exact_law):
    """One private step of make_private's triple on the fixed batch ``(x, y)``."""
    import warnings

    from pennylane_qshiftdp.accountants.composition import clear_caches
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.sampling import use_exact_law

    # Each variant pays its own accounting, as a lone run does (issue 43): the ledger keeps
    # its compositions and one-step PLDs to itself, and the process-wide one-step caches
    # (filled by the calibration of the variant built before) are emptied here.
    clear_caches()
    model = QuantumClassifier(n_qubits, layers, device=devname, shots=shots, seed=seed,
                              init_seed=seed, init_scale=0.3)
    if exact_law:
        use_exact_law(model)
    # 100 batches per epoch: q = 1/100, and a budget of 100 steps at ε = 1.
    data = torch.utils.data.TensorDataset(x.repeat(100, 1), y.repeat(100))
    loader = torch.utils.data.DataLoader(data, batch_size=len(x))
    loss = qs.losses.LinearLoss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, opt, _ = qs.make_private(model, torch.optim.SGD(model.parameters(), lr=0.1),
                                         loader, target_epsilon=1.0, target_delta=1e-5,
                                         epochs=1, loss=loss, seed=seed)

    def step():
        # The batch is fixed (not Poisson) so that every step has the same size: a timing
        # loop, not a private training run (the optimizer's warning about it is silenced).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.zero_grad()
            loss(pmodel(x), y).mean().backward()
            opt.step()

    return step


def _param_shift_step_fn(devname, n_qubits, layers, shots, x, y, seed):
    """One non-private step with PennyLane's own diff_method="parameter-shift"."""
    from pennylane_qshiftdp.app.models import QuantumClassifier

    model = QuantumClassifier(n_qubits, layers, device=devname, shots=shots, seed=seed,
                              init_seed=seed, init_scale=0.3)
    model.qlayer.qnode.diff_method = "parameter-shift"
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = qs.losses.LinearLoss()

    def step():
        sgd.zero_grad()
        loss(model(x), y).mean().backward()
        sgd.step()

    return step


def _opacus_backprop_step_fn(n_qubits, layers, x, y, seed):
    """The user's simulator alternative: Opacus's per-sample gradients by ``torch.func`` (vmap
    over examples, ``grad_sample_mode="functorch"``) through an analytic backprop QNode on
    default.qubit, clipping and noise by Opacus's ``DPOptimizer``.

    The module holds its weights as its own ``nn.Parameter`` and passes them to the QNode:
    with PennyLane's ``TorchLayer`` (weights read from ``qnode_weights``) ``functional_call``
    does not swap them and Opacus's functorch mode returns all-zero per-sample gradients.
    """
    import warnings

    from opacus import PrivacyEngine

    class BackpropClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            g = torch.Generator().manual_seed(seed)
            self.weights = torch.nn.Parameter(
                0.3 * torch.randn(layers, n_qubits, 3, generator=g, dtype=torch.float64))

            def circuit(inputs, weights):
                qml.AngleEmbedding(inputs, wires=range(n_qubits), rotation="Y")
                qml.StronglyEntanglingLayers(weights, wires=range(n_qubits))
                return qml.expval(qml.Z(0))

            self.qnode = qml.QNode(circuit, qml.device("default.qubit", wires=n_qubits),
                                   interface="torch", diff_method="backprop")

        def forward(self, inputs):
            return self.qnode(inputs, self.weights)

    model = BackpropClassifier()
    data = torch.utils.data.TensorDataset(x.repeat(100, 1), y.repeat(100))
    loader = torch.utils.data.DataLoader(data, batch_size=len(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pmodel, opt, _ = PrivacyEngine(accountant="rdp").make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
            data_loader=loader, noise_multiplier=1.0, max_grad_norm=1.0,
            grad_sample_mode="functorch", poisson_sampling=False)

    def step():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt.zero_grad()
            (-(y * pmodel(x))).mean().backward()
            opt.step()

    return step


def _numpy_limit_step_fn(n_qubits, layers, shots, x, y, seed):
    """The machine's limit for the same work, written by hand in numpy: the forward circuit
    and the 2P shifted circuits of every example (Y angle embedding, PennyLane's
    ``StronglyEntanglingLayers`` with its default ranges, ⟨Z0⟩) as one batched state vector,
    one batched 2×2 product per rotation (the embedding fused into the first ``Rot``) and an
    index swap per CNOT (no PennyLane, no torch; no light cone), Ns-shot
    estimates drawn from each circuit's exact law, per-example parameter-shift gradients of the
    linear loss, clipping, Gaussian noise and an SGD update."""
    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(seed)
    weights = (0.3 * torch.randn(layers, n_qubits, 3, generator=g, dtype=torch.float64)).numpy()
    xs, ys = x.numpy(), y.numpy()
    n_p = weights.size
    # circuit 0: forward; circuits 1 + 2k, 2 + 2k: parameter k shifted by +π/2, -π/2
    offsets = np.zeros((1 + 2 * n_p, n_p))
    offsets[1::2][np.arange(n_p), np.arange(n_p)] = np.pi / 2
    offsets[2::2][np.arange(n_p), np.arange(n_p)] = -np.pi / 2
    ranges = [(l % (n_qubits - 1)) + 1 if n_qubits > 1 else 0 for l in range(layers)]

    def one(state, m, w):  # state (R, 2, ..., 2); m (R, 2, 2): batched 2x2 products
        r = state.shape[0]
        left, right = 2 ** w, 2 ** (n_qubits - 1 - w)
        if right >= 8:
            v = state.reshape(r, left, 2, right)
            return np.matmul(m[:, None], v).reshape(state.shape)
        v = state.reshape(r, left, 2, right).swapaxes(-1, -2).reshape(r, left * right, 2)
        out = np.matmul(v, m.swapaxes(-1, -2))
        return np.ascontiguousarray(
            out.reshape(r, left, right, 2).swapaxes(-1, -2)).reshape(state.shape)

    def cnot(state, c, t):
        out = state.copy()
        i0 = [slice(None)] * state.ndim
        i0[1 + c] = 1
        a, b = list(i0), list(i0)
        a[1 + t], b[1 + t] = 0, 1
        out[tuple(a)], out[tuple(b)] = state[tuple(b)], state[tuple(a)]
        return out

    def rot(phi, theta, omega):
        c, s_ = np.cos(theta / 2), np.sin(theta / 2)
        m = np.empty((len(phi), 2, 2), dtype=complex)
        m[:, 0, 0] = np.exp(-0.5j * (phi + omega)) * c
        m[:, 0, 1] = -np.exp(0.5j * (phi - omega)) * s_
        m[:, 1, 0] = np.exp(-0.5j * (phi - omega)) * s_
        m[:, 1, 1] = np.exp(0.5j * (phi + omega)) * c
        return m

    def step():
        nonlocal weights
        n_c, b = offsets.shape[0], len(xs)
        params = (weights.reshape(-1)[None, :] + offsets)  # (C, P)
        rows = n_c * b
        state = np.zeros((rows, 2 ** n_qubits), dtype=complex)
        state[:, 0] = 1.0
        state = state.reshape(rows, *[2] * n_qubits)
        w = params.reshape(n_c, layers, n_qubits, 3)
        for layer in range(layers):
            for q in range(n_qubits):
                m = rot(*(w[:, layer, q, k] for k in range(3)))  # one per circuit (C, 2, 2)
                if layer == 0:  # RY(x_q) then the first Rot: one product per row
                    c, s_ = np.cos(xs[:, q] / 2), np.sin(xs[:, q] / 2)
                    ry = np.stack([np.stack([c, -s_], -1), np.stack([s_, c], -1)], -2)
                    m = np.matmul(m[:, None], ry[None]).reshape(rows, 2, 2)
                else:
                    m = np.repeat(m, b, axis=0)
                state = one(state, m, q)
            if n_qubits > 1:
                for q in range(n_qubits):
                    state = cnot(state, q, (q + ranges[layer]) % n_qubits)
        p0 = (np.abs(state[:, 0]) ** 2).reshape(rows, -1).sum(axis=1)
        expval = 2 * p0 - 1
        est = 2 * rng.binomial(shots, (1 + expval) / 2) / shots - 1
        est = est.reshape(n_c, b)
        jac = (est[1::2] - est[2::2]).T / 2  # (B, P)
        grads = -ys[:, None] * jac
        norms = np.linalg.norm(grads, axis=1)
        grads *= np.minimum(1.0, 1.0 / np.maximum(norms, 1e-12))[:, None]
        noisy = grads.sum(axis=0) + rng.normal(0.0, 1.0, n_p)
        weights = weights - 0.1 * (noisy / b).reshape(weights.shape)

    return step


def _step_batch(n_qubits, batch, seed):
    """The fixed batch ``(x, y)`` every step of a configuration uses."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(batch, n_qubits, generator=gen, dtype=torch.float64) * np.pi
    y = torch.where(torch.rand(batch, generator=gen) > 0.5, 1.0, -1.0).double()
    return x, y


# The numpy-limit step in its own interpreter, its BLAS and OpenMP pools pinned to one thread
# (the limit is a one-thread computation): in the parent process, OpenBLAS's threads kept
# spinning after each call and, on two busy cores, slowed the step timed next (the Opacus +
# backprop alternative: 0.03-0.08 s became 0.28-0.40 s per step at 4 qubits). The worker times
# one step per line "step" on its stdin, so the rounds stay alternated with the other steps.
_NUMPY_LIMIT_WORKER = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[2])
from threadpoolctl import threadpool_limits
threadpool_limits(1)
import bench_transform as bt
bt._import_heavy()
n_qubits, layers, shots, batch, seed = json.loads(sys.argv[1])
x, y = bt._step_batch(n_qubits, batch, seed)
step = bt._numpy_limit_step_fn(n_qubits, layers, shots, x, y, seed)
print("READY", flush=True)
for line in sys.stdin:
    if line.strip() != "step":
        break
    t = time.perf_counter(); step(); print(time.perf_counter() - t, flush=True)
"""

# Environment of the worker: one thread for every pool, set before numpy is imported.
_ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                "NUMEXPR_NUM_THREADS")}


class _NumpyLimitWorker:
    """``_numpy_limit_step_fn`` in a subprocess; calling it runs and times one step there."""

    def __init__(self, n_qubits, layers, shots, batch, seed):
        import os
        import subprocess

        here = Path(__file__).resolve().parent
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _NUMPY_LIMIT_WORKER,
             json.dumps([n_qubits, layers, shots, batch, seed]), str(here)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, **_ONE_THREAD), cwd=str(here.parent))
        if self.proc.stdout.readline().strip() != "READY":
            raise RuntimeError("the numpy-limit worker did not start")

    def __call__(self) -> float:
        self.proc.stdin.write("step\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.proc.wait(timeout=60)


def _load_average() -> list:
    """The 1-, 5- and 15-minute load averages (``uptime``'s), rounded."""
    import os

    return [round(v, 2) for v in os.getloadavg()]


def run_step_config(devname, n_qubits, layers, shots, batch, repeats, seed=0,
                    alternative=False):
    """Median seconds of the steps, alternated ``repeats`` times in this process.

    With ``alternative`` (default.qubit only): also the private step with ``shots=None``
    (the adjoint route), the Opacus + backprop alternative (:func:`_opacus_backprop_step_fn`),
    the private exact-law step on lightning.qubit, and the numpy limit (in its own process,
    one thread: :class:`_NumpyLimitWorker`), every one timed once per round.
    """
    x, y = _step_batch(n_qubits, batch, seed)
    load_before = _load_average()
    steps = {
        "param_shift": _param_shift_step_fn(devname, n_qubits, layers, shots, x, y, seed),
        "private_device": _private_step_fn(devname, n_qubits, layers, shots, x, y, seed, False),
        "private_exact_law": _private_step_fn(devname, n_qubits, layers, shots, x, y, seed,
                                              True),
    }
    worker = None
    if alternative:
        steps["private_analytic"] = _private_step_fn(devname, n_qubits, layers, None, x, y,
                                                     seed, False)
        steps["opacus_backprop"] = _opacus_backprop_step_fn(n_qubits, layers, x, y, seed)
        steps["lightning_exact_law"] = _private_step_fn("lightning.qubit", n_qubits, layers,
                                                        shots, x, y, seed, True)
        worker = _NumpyLimitWorker(n_qubits, layers, shots, batch, seed)
    if n_qubits < _NO_WARMUP_QUBITS:
        # two warm-up steps (_SCALING_WARMUP): the private step's second finds the budget's
        # admissible step count, once per run
        for _ in range(_SCALING_WARMUP):
            for step in steps.values():
                step()
        if worker is not None:
            worker()
    times = {k: [] for k in steps}
    if worker is not None:
        times["numpy_limit"] = []
    for _ in range(repeats):
        for name, step in steps.items():
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
        if worker is not None:
            times["numpy_limit"].append(worker())
        print(f"  {devname} {n_qubits}q: " + ", ".join(f"{k} {v[-1]:.3g} s"
                                                       for k, v in times.items()), flush=True)
    if worker is not None:
        worker.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {
        "device": devname, "qubits": n_qubits, "layers": layers, "shots": shots,
        "batch": batch, "repeats": repeats, "times_s": times,
        "load_average": [load_before, _load_average()],
        "param_shift_s": med["param_shift"],
        "private_device_s": med["private_device"],
        "private_exact_law_s": med["private_exact_law"],
        "device_over_param_shift": med["private_device"] / med["param_shift"],
        "exact_law_over_param_shift": med["private_exact_law"] / med["param_shift"],
        "exact_law_speedup": med["private_device"] / med["private_exact_law"],
    }
    if alternative:
        ratio = [a / p for a, p in zip(times["opacus_backprop"], times["private_exact_law"],
                                       strict=True)]
        ratio_an = [a / p for a, p in zip(times["opacus_backprop"], times["private_analytic"],
                                          strict=True)]
        to_numpy = [p / n for p, n in zip(times["private_exact_law"], times["numpy_limit"],
                                          strict=True)]
        lightning = [lt / d for lt, d in zip(times["lightning_exact_law"],
                                             times["private_exact_law"], strict=True)]
        row.update(lightning_exact_law_s=med["lightning_exact_law"],
                   lightning_over_exact_law=statistics.median(lightning),
                   lightning_over_exact_law_range=[min(lightning), max(lightning)])
        row.update(private_analytic_s=med["private_analytic"],
                   opacus_backprop_s=med["opacus_backprop"],
                   numpy_limit_s=med["numpy_limit"],
                   exact_law_over_numpy=statistics.median(to_numpy),
                   exact_law_over_numpy_range=[min(to_numpy), max(to_numpy)],
                   backprop_over_exact_law=statistics.median(ratio),
                   backprop_over_exact_law_range=[min(ratio), max(ratio)],
                   backprop_over_analytic=statistics.median(ratio_an),
                   backprop_over_analytic_range=[min(ratio_an), max(ratio_an)])
    return row


# --------------------------------------------------------------------------------------------
# Issue 43: scaling of the private steps against the alternative, each step in its own process
# --------------------------------------------------------------------------------------------

#: ``--scaling``: (rounds, steps per round) per qubit count.
_SCALING_PLAN = {4: (3, 5), 8: (3, 3), 12: (2, 1), 16: (1, 1)}
#: ``--scaling``: warm-up steps below :data:`_NO_WARMUP_QUBITS` qubits. The first private step
#: records the circuit's structure, the second finds the budget's admissible step count (a
#: bisection over PLD compositions, once per run: about 0.5 s); later steps pay neither.
_SCALING_WARMUP = 2
#: ``--scaling`` variants, in the order each round runs them.
SCALING_VARIANTS = ("exact_law", "analytic", "alternative")

_SCALING_WORKER = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
import bench_transform as bt
bt._import_heavy()
variant, n_qubits, layers, shots, batch, steps, warmup, threads, seed = json.loads(sys.argv[1])
if threads:
    bt.torch.set_num_threads(threads)
x, y = bt._step_batch(n_qubits, batch, seed)
if variant == "alternative":
    step = bt._opacus_backprop_step_fn(n_qubits, layers, x, y, seed)
else:
    step = bt._private_step_fn("default.qubit", n_qubits, layers,
                               shots if variant == "exact_law" else None, x, y, seed,
                               variant == "exact_law")
def rss_gb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**30
before = rss_gb()
for _ in range(warmup):
    step()
times = []
for _ in range(steps):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB (Linux)
print("RESULT " + json.dumps({"times": times, "rss_before_gb": before, "peak_rss_gb": peak}))
"""


def _scaling_step(variant, n_qubits, layers, shots, batch, steps, warmup, threads, seed=0):
    """Times and memory of ``steps`` steps of ``variant`` in a fresh interpreter."""
    import os
    import subprocess

    here = Path(__file__).resolve().parent
    spec = json.dumps([variant, n_qubits, layers, shots, batch, steps, warmup, threads, seed])
    out = subprocess.run([sys.executable, "-c", _SCALING_WORKER, spec, str(here)],
                         env=dict(os.environ), cwd=str(here.parent), check=True,
                         capture_output=True, text=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def run_scaling(args):
    """``--scaling``: the exact-law, analytic and alternative steps per qubit count, each in
    its own process, alternated in rounds (module docstring)."""
    rows = []
    for q in args.qubits or sorted(_SCALING_PLAN):
        rounds, steps = _SCALING_PLAN.get(q, (1, 1))
        rounds = args.rounds_scaling or rounds
        steps = args.repeats or steps
        warmup = _SCALING_WARMUP if q < _NO_WARMUP_QUBITS else 0
        load_before = _load_average()
        runs: dict = {v: [] for v in SCALING_VARIANTS}
        for r in range(rounds):
            for v in SCALING_VARIANTS:
                runs[v].append(_scaling_step(v, q, args.layers, args.shots[0],
                                             args.batch or 54, steps, warmup,
                                             args.torch_threads))
            print(f"  {q}q round {r}: " + ", ".join(
                f"{v} {statistics.median(runs[v][-1]['times']):.3g} s"
                for v in SCALING_VARIANTS) + f" (load {_load_average()[0]})", flush=True)
        row = {"qubits": q, "layers": args.layers, "shots": args.shots[0],
               "batch": args.batch or 54, "rounds": rounds, "steps_per_round": steps,
               "warmup": warmup, "torch_threads": args.torch_threads,
               "load_average": [load_before, _load_average()], "runs": runs}
        for v in SCALING_VARIANTS:
            every = [t for run in runs[v] for t in run["times"]]
            row[f"{v}_s"] = statistics.median(every)
            row[f"{v}_peak_gb"] = max(run["peak_rss_gb"] for run in runs[v])
            row[f"{v}_step_memory_gb"] = max(run["peak_rss_gb"] - run["rss_before_gb"]
                                              for run in runs[v])
        for v in ("exact_law", "analytic"):
            ratios = [statistics.median(a["times"]) / statistics.median(p["times"])
                      for a, p in zip(runs["alternative"], runs[v], strict=True)]
            row[f"alternative_over_{v}"] = statistics.median(ratios)
            row[f"alternative_over_{v}_range"] = [min(ratios), max(ratios)]
        row["load"] = f"{row['load_average'][0][0]:.2f} / {row['load_average'][1][0]:.2f}"
        rows.append(row)
    md = table(rows, SCALING_COLUMNS)
    print(md)
    path = write_result("bench_transform_scaling", {"scaling": True, "rows": rows,
                                                    "markdown": md}, args.out)
    scaling_figure(rows, path)
    print(f"wrote {path}")
    return rows


#: Columns of ``--scaling``'s table.
SCALING_COLUMNS = ["qubits", "rounds", "steps_per_round", "exact_law_s", "analytic_s",
                   "alternative_s", "alternative_over_exact_law", "alternative_over_analytic",
                   "exact_law_peak_gb", "analytic_peak_gb", "alternative_peak_gb",
                   "exact_law_step_memory_gb", "analytic_step_memory_gb",
                   "alternative_step_memory_gb", "load"]


def scaling_figure(rows, json_path):
    """Seconds per step of the three variants against the qubit count (log scale)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    qs_ = [r["qubits"] for r in rows]
    for v, lab in (("exact_law", "private, exact-law shots"), ("analytic", "private, analytic"),
                   ("alternative", "Opacus + vmap over backprop")):
        ax.plot(qs_, [r[f"{v}_s"] for r in rows], "o-", label=lab)
    ax.set_yscale("log")
    ax.set(xlabel="qubits", ylabel="seconds per step (median)",
           title=f"One training step, batch {rows[0]['batch']}, Ns = {rows[0]['shots']}")
    ax.legend(fontsize=7)
    return save_figure(fig, json_path)


def crossover(rows, column):
    """Smallest qubit count at which lightning.qubit's ``column`` is below default.qubit's."""
    by = {(r["device"], r["qubits"]): r[column] for r in rows}
    for q in sorted({r["qubits"] for r in rows}):
        d, lt = by.get(("default.qubit", q)), by.get(("lightning.qubit", q))
        if d is not None and lt is not None and lt < d:
            return q
    return None


STEP_COLUMNS = ["device", "qubits", "batch", "shots", "repeats", "param_shift_s",
                "private_device_s", "private_exact_law_s", "device_over_param_shift",
                "exact_law_over_param_shift", "exact_law_speedup"]
#: Columns of ``--step --alternative`` (default.qubit rows).
ALTERNATIVE_COLUMNS = ["private_analytic_s", "opacus_backprop_s", "numpy_limit_s",
                       "lightning_exact_law_s", "backprop_over_exact_law",
                       "backprop_over_analytic", "exact_law_over_numpy",
                       "lightning_over_exact_law"]


# A private step of an older version of the library (issue #12's "today's library"): its
# ``make_private`` returned a PrivateModel whose ``loss_backward`` ran the transform per batch.
_OLD_STEP_SCRIPT = r"""
import json, statistics, sys, time, warnings
import numpy as np, torch
from pennylane_qshiftdp.privacy_engine import make_private
from pennylane_qshiftdp.losses import LinearLoss
from pennylane_qshiftdp.app.models import QuantumClassifier
device, n_qubits, layers, shots, batch, repeats = json.loads(sys.argv[1])
gen = torch.Generator().manual_seed(0)
x = torch.rand(batch, n_qubits, generator=gen, dtype=torch.float64) * np.pi
y = torch.where(torch.rand(batch, generator=gen) > 0.5, 1.0, -1.0).double()
model = QuantumClassifier(n_qubits, layers, device=device, shots=shots, seed=0, init_seed=0,
                          init_scale=0.3)
data = torch.utils.data.TensorDataset(x.repeat(100, 1), y.repeat(100))
loader = torch.utils.data.DataLoader(data, batch_size=batch)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pmodel, opt, _ = make_private(model, torch.optim.SGD(model.parameters(), lr=0.1), loader,
                                  target_epsilon=1.0, target_delta=1e-5, epochs=1,
                                  loss=LinearLoss(), seed=0)
def step():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opt.zero_grad()
        pmodel.loss_backward(x, y, opt)
        opt.step()
step()
times = []
for _ in range(repeats):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
print("RESULT " + json.dumps(times))
"""

_NEW_STEP_SCRIPT = r"""
import json, sys, time
sys.path.insert(0, sys.argv[2])
import bench_transform as bt
bt._import_heavy()
import numpy as np, torch
device, n_qubits, layers, shots, batch, repeats = json.loads(sys.argv[1])
gen = torch.Generator().manual_seed(0)
x = torch.rand(batch, n_qubits, generator=gen, dtype=torch.float64) * np.pi
y = torch.where(torch.rand(batch, generator=gen) > 0.5, 1.0, -1.0).double()
step = bt._private_step_fn(device, n_qubits, layers, shots, x, y, 0, True)
step()
times = []
for _ in range(repeats):
    t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
print("RESULT " + json.dumps(times))
"""


def _timed_subprocess(script, argv, pythonpath):
    """Step times printed by ``script`` run in a fresh interpreter on ``pythonpath``."""
    import os
    import subprocess

    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    out = subprocess.run([sys.executable, "-c", script, *argv], env=env, check=True,
                         cwd=str(pythonpath),
                         capture_output=True, text=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def run_versus(args):
    """Current exact-law private step against an older checkout's private step (``--versus``),
    each in its own interpreter, alternated ``rounds`` times; median over all steps."""
    old_root = Path(args.versus).resolve()
    if not (old_root / "pennylane_qshiftdp" / "engine.py").is_file():
        raise SystemExit(f"--versus: {old_root} is not a checkout of pennylane-qshiftdp")
    here = Path(__file__).resolve().parent
    rows = []
    for q in args.qubits or [4]:
        # from 10 qubits one step takes seconds to half a minute: one step per round, one round
        repeats = args.repeats or (5 if q < _VERSUS_SINGLE_STEP_QUBITS else 1)
        rounds = args.rounds if q < _VERSUS_SINGLE_STEP_QUBITS else 1
        for d in args.devices:
            spec = json.dumps([d, q, args.layers, args.shots[0], args.batch or 54, repeats])
            old, new = [], []
            for r in range(rounds):
                old += _timed_subprocess(_OLD_STEP_SCRIPT, [spec], old_root)
                new += _timed_subprocess(_NEW_STEP_SCRIPT, [spec, str(here)], here.parent)
                print(f"  {d} {q}q round {r}: old {statistics.median(old):.3g} s, "
                      f"new {statistics.median(new):.3g} s", flush=True)
            rows.append({"device": d, "qubits": q, "layers": args.layers,
                         "shots": args.shots[0], "batch": args.batch or 54,
                         "old_version": args.versus_label or str(old_root),
                         "steps_each": len(old), "old_step_s": statistics.median(old),
                         "new_step_s": statistics.median(new),
                         "speedup": statistics.median(old) / statistics.median(new),
                         "old_times_s": old, "new_times_s": new})
    md = table(rows, ["device", "qubits", "batch", "shots", "old_version", "steps_each",
                      "old_step_s", "new_step_s", "speedup"])
    print(md)
    path = write_result("bench_transform_versus", {"quick": False, "rows": rows,
                                                   "markdown": md}, args.out)
    print(f"wrote {path}")
    return rows


def run_step(args):
    """``--step``: one private step against one non-private step (module docstring)."""
    previous = torch.get_num_threads()
    if args.torch_threads:
        # torch's intra-op pool: on a shared machine whose cores are busy its threads wait
        # for each other (the Opacus + backprop alternative at 4 qubits, alternated: 0.05 s
        # per step with one thread, 0.10-0.40 s with two at a load average of 2.5)
        torch.set_num_threads(args.torch_threads)
    try:
        return _run_step(args)
    finally:
        torch.set_num_threads(previous)


def _run_step(args):
    qubits = args.qubits or ([4] if args.quick else [4, 8, 10, 12])
    rows = []
    for q in qubits:
        repeats = args.repeats or (2 if args.quick else _STEP_REPEATS.get(q, 1))
        for d in args.devices:
            row = run_step_config(d, q, args.layers, args.shots[0], args.batch or 54,
                                  repeats, alternative=args.alternative
                                  and d == "default.qubit")
            row["torch_threads"] = torch.get_num_threads()
            rows.append(row)
    columns = STEP_COLUMNS + ([c for c in ALTERNATIVE_COLUMNS if any(c in r for r in rows)])
    md = table(rows, columns)
    cross = {c: crossover(rows, c) for c in ("param_shift_s", "private_device_s",
                                               "private_exact_law_s")}
    print(md)
    for c, q in cross.items():
        print(f"lightning.qubit faster than default.qubit ({c}): "
              + (f"from {q} qubits" if q is not None else "not at the sizes measured"))
    name = "bench_transform_step" + ("_quick" if args.quick else "")
    path = write_result(name, {"quick": args.quick, "step": True, "rows": rows,
                               "crossover_qubits": cross, "markdown": md}, args.out)
    step_figure(rows, path)
    print(f"wrote {path}")
    return rows


def step_figure(rows, json_path):
    """Step time of the three steps per device and qubit count (log scale)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    labels = [f"{r['device'].split('.')[0]}\n{r['qubits']}q" for r in rows]
    xs = np.arange(len(rows))
    for k, (col, lab) in enumerate((("param_shift_s", "non-private param_shift"),
                                    ("private_device_s", "private, device sampling"),
                                    ("private_exact_law_s", "private, exact-law sampling"))):
        ax.bar(xs + (k - 1) * 0.27, [r[col] for r in rows], 0.27, label=lab)
    ax.set_yscale("log")
    ax.set_xticks(xs, labels, fontsize=7)
    ax.set(ylabel="seconds per step (median)",
           title=f"One training step, batch {rows[0]['batch']}, Ns = {rows[0]['shots']}")
    ax.legend(fontsize=7)
    return save_figure(fig, json_path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny configuration (seconds)")
    p.add_argument("--devices", nargs="+", default=["default.qubit", "lightning.qubit"])
    p.add_argument("--qubits", nargs="+", type=int, default=None,
                   help="qubit counts (default 4; 4 8 10 12 with --step)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--shots", nargs="+", type=int, default=[1000])
    p.add_argument("--batch", type=int, default=None, help="batch size (default 32; 54 with "
                                                           "--step)")
    p.add_argument("--repeats", type=int, default=None,
                   help="alternated repeats (default 15; 5 for the full --sweep; per qubit "
                        "count with --step)")
    p.add_argument("--sweep", action="store_true",
                   help="issue #5 sweep: 4 and 8 qubits, Ns 100 and 1000, both devices")
    p.add_argument("--step", action="store_true",
                   help="issue #12: private step (device vs exact-law sampling) against a "
                        "non-private param_shift step at 4, 8, 10, 12 qubits, batch 54")
    p.add_argument("--alternative", action="store_true",
                   help="with --step: also time the private step with shots=None (the adjoint "
                        "route) and the user's simulator alternative, Opacus's per-sample "
                        "gradients by vmap over an analytic backprop QNode (default.qubit)")
    p.add_argument("--versus", default=None, metavar="CHECKOUT",
                   help="with --step: time the private step of an older checkout of the "
                        "library (e.g. `git worktree add /tmp/old 2c3b0c6`) against today's "
                        "exact-law step, each in its own interpreter, alternated")
    p.add_argument("--versus-label", default=None, help="name of the older version (a commit)")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="--step: torch's intra-op threads (default 1; 0 keeps torch's own "
                   "choice): on a busy shared machine a two-thread pool waits for busy cores")
    p.add_argument("--rounds", type=int, default=3,
                   help="alternations with --versus below 10 qubits (from 10 on: one round of "
                   "one step)")
    p.add_argument("--scaling", action="store_true",
                   help="issue 43: exact-law, analytic and alternative steps at 4, 8, 12, 16 "
                        "qubits, each step in its own process (time and peak memory)")
    p.add_argument("--rounds-scaling", type=int, default=None,
                   help="--scaling: rounds per qubit count (default 3 at 4 and 8 qubits, 2 at "
                        "12, 1 at 16)")
    p.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=None, help="output directory for the JSON")
    args = p.parse_args(argv)
    if args.versus:
        return run_versus(args)
    if args.scaling:
        return run_scaling(args)
    _import_heavy()
    if args.step:
        return run_step(args)
    args.qubits = args.qubits or [4]
    args.batch = args.batch or 32
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
