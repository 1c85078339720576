r"""Choose the learning rate on private data and pay for it: K runs and a private choice.

The README's hybrid (``Linear(13, 3)`` → 3-qubit circuit → ``Linear(3, 3)``) on scikit-learn's
wine data, features mapped to [−2, 2] by the shipped published ranges. A fifth of the training
split is held out for validation (still private data). Every candidate learning rate trains with
``make_private`` at the per-run budget ``PrivateSelection.run_epsilon`` gives; each run's number
of correct validation predictions is reported, and ``select()`` draws the winner by the
exponential mechanism. The total (ε, δ) covers every run's released model and the choice; the
test split is used only once, for the chosen model.

    python examples/private_selection.py               # 3 learning rates, 5 epochs, ε = 2
    python examples/private_selection.py --tiny        # 2 learning rates, 1 epoch

Prints each run's budget, the chosen learning rate, its test accuracy and the statement.
"""

from __future__ import annotations

import argparse
import math


def build_model(seed: int):
    """The README's hybrid model."""
    import pennylane as qml
    import torch

    import pennylane_qshiftdp as qshiftdp

    dev = qml.device("default.qubit", wires=3)

    @qml.qnode(dev, diff_method=qshiftdp.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(3), rotation="Y")
        qml.BasicEntanglerLayers(weights, wires=range(3), rotation=qml.RY)
        return [qml.expval(qml.Z(i)) for i in range(3)]

    class Hybrid(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Linear(13, 3)
            self.quantum = qml.qnn.TorchLayer(
                circuit, {"weights": (1, 3)},
                init_method=lambda w: torch.nn.init.normal_(w, std=0.1))
            self.post = torch.nn.Linear(3, 3)

        def forward(self, x):
            return self.post(self.quantum(math.pi / 2 * (1 + torch.tanh(self.pre(x)))))

    torch.manual_seed(seed)
    return Hybrid()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lrs", type=float, nargs="+", default=[0.1, 0.5, 1.0],
                   help="candidate learning rates (a public grid)")
    p.add_argument("--epsilon", type=float, default=2.0, help="total ε of runs and choice")
    p.add_argument("--selection-epsilon", type=float, default=0.2, help="ε of the choice")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tiny", action="store_true", help="2 learning rates, 1 epoch (seconds)")
    args = p.parse_args(argv)
    if args.tiny:
        args.lrs, args.epochs = args.lrs[:2], 1

    import warnings

    import numpy as np
    import torch
    from sklearn.datasets import load_wine
    from sklearn.model_selection import train_test_split

    import pennylane_qshiftdp as qshiftdp
    from pennylane_qshiftdp.app.data import WINE_FEATURE_RANGES
    from pennylane_qshiftdp.grad_sample import ignore_output_hook_warning

    X, y = load_wine(return_X_y=True)
    lo, hi = np.array(WINE_FEATURE_RANGES).T
    X = 4 * (X - lo) / (hi - lo) - 2
    X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                                      random_state=args.seed)
    X_train, X_val, y_train, y_val = train_test_split(X_rest, y_rest, test_size=0.2,
                                                      stratify=y_rest, random_state=args.seed)
    t = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    x_train, x_val, x_test = t(X_train), t(X_val), t(X_test)
    y_train, y_val, y_test = (torch.tensor(a) for a in (y_train, y_val, y_test))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                         batch_size=32)

    search = qshiftdp.PrivateSelection([{"lr": lr} for lr in args.lrs],
                                       target_epsilon=args.epsilon, target_delta=1e-5,
                                       selection_epsilon=args.selection_epsilon,
                                       seed=args.seed)
    run_epsilon = search.run_epsilon(sample_rate=1 / len(loader), epochs=args.epochs)
    print(f"{len(args.lrs)} runs at ε = {run_epsilon:.4f} each; the choice ε = "
          f"{args.selection_epsilon:g}")
    for i, candidate in enumerate(search.candidates):
        model = build_model(args.seed)
        optimizer = torch.optim.SGD(model.parameters(), lr=candidate["lr"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", qshiftdp.PrivacyWarning)
            pmodel, poptimizer, ploader = qshiftdp.make_private(
                model, optimizer, loader, target_epsilon=run_epsilon, target_delta=1e-5,
                epochs=args.epochs, seed=args.seed)   # seeded noise: research, not a release
        for _ in range(args.epochs):
            for xb, yb in ploader:
                poptimizer.zero_grad()
                if len(xb):  # torch warns that the inputs need no gradient: harmless here
                    with ignore_output_hook_warning():
                        torch.nn.functional.cross_entropy(pmodel(xb), yb).backward()
                poptimizer.step()
        with torch.no_grad():
            correct = int((model(x_val).argmax(1) == y_val).sum())
        search.report(i, poptimizer, score=correct, result=model)  # the score stays private
    chosen = search.select()
    with torch.no_grad():
        accuracy = float((chosen.result(x_test).argmax(1) == y_test).float().mean())
    print(f"chosen: lr = {chosen.candidate['lr']:g}; test accuracy {accuracy:.3f}")
    print(chosen.statement())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
