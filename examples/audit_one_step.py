r"""Audit the privacy claim of one private step empirically (``pennylane_qshiftdp.audit``).

A claim (ε, δ) bounds how well *any* test can tell a data set D from D plus one example (the
canary). The audit runs ``make_private`` and one optimizer step (q = 1) many times on D and on
D', scores every release, and turns the true- and false-positive rates of the best threshold
(chosen on half of the trials, measured on the other half) into a Clopper–Pearson lower bound
on ε. A lower bound above the **proven** ε refutes the library's guarantee; above the
**credited** ε it refutes only the Gaussian approximation of shot noise. A bound below both
refutes nothing — it is not a proof of privacy (an audit with T trials per world cannot certify
more than about ln T).

Two parts:

1. ``audit_setting``: the fixed one-qubit setting (RY(x) RY(θ), ⟨Z⟩, 30 examples of maximal
   shot variance, a zero-variance canary, Ns = 2 shots) in which the first version's shot-noise
   credit was refuted, for the modes given by ``--modes``;
2. ``audit_one_step``: the same experiment on a model, loss, data set and canary of your own
   (here a two-qubit circuit and a canary with an outlying input).

    python examples/audit_one_step.py                 # every mode, 1000 trials per world
    python examples/audit_one_step.py --tiny          # two modes, 40 trials: seconds

Exit status 1 if a proven claim is refuted.
"""

from __future__ import annotations

import argparse

DEFAULT_MODES = ("none", "depolarizing", "adaptive", "isotropic", "fixed_clip", "adaptive_clip")


def custom_audit(trials: int, seed: int):
    """``audit_one_step`` on a two-qubit model: D = 20 examples, canary = an outlier."""
    import math

    import pennylane as qml
    import torch

    import pennylane_qshiftdp as qshiftdp
    from pennylane_qshiftdp.audit import TrialSpec, audit_one_step

    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(2), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(2))
        return qml.expval(qml.Z(0))

    def make_model(device_seed):
        # The audit re-seeds the device before every trial: build it from `device_seed`.
        dev = qml.device("default.qubit", wires=2, seed=device_seed)
        qnode = qml.set_shots(qml.QNode(circuit, dev, diff_method=qshiftdp.param_shift),
                              shots=50)
        layer = qml.qnn.TorchLayer(qnode, {"weights": (1, 2, 3)}).double()
        with torch.no_grad():
            layer.weights.copy_(torch.linspace(0.1, 0.6, 6).reshape(1, 2, 3))
        return layer

    g = torch.Generator().manual_seed(seed)
    xs = torch.rand(20, 2, generator=g, dtype=torch.float64) * math.pi / 2
    ys = torch.where(xs[:, 0] > math.pi / 4, 1.0, -1.0).double()
    canary = (torch.tensor([math.pi, 0.0], dtype=torch.float64), torch.tensor(1.0))
    return audit_one_step(make_model, qshiftdp.losses.LinearLoss,
                          torch.utils.data.TensorDataset(xs, ys), canary,
                          TrialSpec(trials, seed=seed), target_epsilon=2.0, target_delta=1e-5,
                          label="custom two-qubit model")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="seconds: 2 modes, 40 trials")
    parser.add_argument("--modes", nargs="+", default=list(DEFAULT_MODES),
                        choices=DEFAULT_MODES, help="modes of audit_setting")
    parser.add_argument("--trials", type=int, default=1000, help="trials per world")
    parser.add_argument("--shots", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from pennylane_qshiftdp.audit import SettingSpec, TrialSpec, audit_setting

    modes = ["none", "adaptive"] if args.tiny else args.modes
    trials = 40 if args.tiny else args.trials
    results = []
    for mode in modes:
        r = audit_setting(spec=SettingSpec(mode, shots=args.shots),
                          trial_spec=TrialSpec(trials, seed=args.seed))
        results.append(r)
        print(r)
    r = custom_audit(trials=trials, seed=args.seed)
    results.append(r)
    print(r)

    print("\n| configuration | claimed proven ε | claimed credited ε | audited ε ≥ | verdict |")
    print("|---|---|---|---|---|")
    for r in results:
        if r.refused:
            print(f"| {r.label} | - | - | - | refused: {r.message} |")
        else:
            print(f"| {r.label} | {r.claimed_epsilon:.3f} | {r.credited_epsilon:.3f} | "
                  f"{r.epsilon_lower_bound:.3f} | {r.verdict} |")
    return 1 if any(r.proven_refuted for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
