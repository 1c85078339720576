r"""Private training on your own CSV file, and what its preprocessing leaves unprotected.

``pennylane_qshiftdp.load_dataset("csv", csv_path=..., label_column=...)`` reads a CSV file with
a header row, numeric feature columns and a label column with two values (or pick two with
``classes=``). This example uses ``"standardize_pca"``: standardisation, PCA to ``n_features``
components, and a linear map of each component's training range to angles in [0, π], all
**fitted on the training split**. When the columns' ranges are known a priori (from the data's
specification, not its values), ``preprocessing="fixed"`` with ``feature_range=`` (the CLI's
``--preprocessing fixed --feature-range``) scales with them instead and leaks nothing.

**Not protected by the guarantee** (they are computed from the training data outside the
private mechanism): the per-feature means and variances of the standardisation, the principal
components, and the per-component minima and maxima used to scale features to angles. Anyone
who receives the model together with the preprocessing pipeline receives these statistics.
``Dataset.preprocessing_note`` says so; passing it to ``make_private(preprocessing_note=...)``
puts it in the privacy statement.

    python examples/csv_dataset.py                              # writes and uses a demo CSV
    python examples/csv_dataset.py --csv data.csv --label-column label
    python examples/csv_dataset.py --tiny                       # seconds

Without ``--csv`` the script writes a small generated two-class CSV file to a temporary
directory and trains on it.
"""

from __future__ import annotations

import argparse
import csv
import math
import tempfile
import warnings
from pathlib import Path


def write_demo_csv(path: Path, n: int = 1000, seed: int = 0) -> Path:
    """A generated CSV: 5 numeric columns (two informative), label column ``label`` in {a, b}."""
    import numpy as np

    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, size=n)
    signal = np.where(label == 1, 1.0, -1.0)
    rows = np.column_stack([
        3.0 * signal + rng.normal(0, 2.0, n) + 40.0,   # e.g. an age-like column
        0.8 * signal + rng.normal(0, 1.0, n),
        rng.normal(0, 5.0, n),                          # noise columns
        rng.normal(10, 1.0, n),
        rng.uniform(0, 1, n),
    ])
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["f1", "f2", "f3", "f4", "f5", "label"])
        for r, y in zip(rows, label, strict=True):
            writer.writerow([f"{v:.4f}" for v in r] + ["b" if y else "a"])
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--csv", default=None, help="CSV file (default: a generated demo file)")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--classes", default=None,
                        help="two labels NEGATIVE,POSITIVE (default: the column's two values)")
    parser.add_argument("--tiny", action="store_true", help="a few seconds: 2 qubits, 1 epoch")
    parser.add_argument("--qubits", type=int, default=4, help="features after PCA = qubits")
    parser.add_argument("--epsilon", type=float, default=2.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.8)
    parser.add_argument("--shots", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import pennylane as qml
    import torch

    import pennylane_qshiftdp as qshiftdp

    n_qubits = 2 if args.tiny else args.qubits
    epochs = 1 if args.tiny else args.epochs
    batch_size = 15 if args.tiny else args.batch_size
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.csv) if args.csv else write_demo_csv(Path(tmp) / "demo.csv",
                                                               n=60 if args.tiny else 1000)
        classes = tuple(args.classes.split(",")) if args.classes else None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", qshiftdp.PrivacyWarning)
            data = qshiftdp.load_dataset("csv", csv_path=path, label_column=args.label_column,
                                         classes=classes, n_features=n_qubits,
                                         preprocessing="standardize_pca", seed=args.seed)
    for w in caught:  # load_dataset warns about the data-dependent preprocessing
        print(f"{w.category.__name__}: {w.message}")
    print(data.description)

    dev = qml.device("default.qubit", wires=n_qubits, seed=args.seed)

    @qml.set_shots(shots=args.shots)
    @qml.qnode(dev, diff_method=qshiftdp.param_shift)
    def circuit(inputs, weights):
        qml.AngleEmbedding(inputs, wires=range(n_qubits), rotation="Y")
        qml.StronglyEntanglingLayers(weights, wires=range(n_qubits))
        return qml.expval(qml.Z(0))

    torch.manual_seed(args.seed)
    layer = qml.qnn.TorchLayer(circuit, {"weights": (1 if args.tiny else 2, n_qubits, 3)})
    x_train, y_train = (torch.as_tensor(a) for a in (data.X_train, data.y_train))
    x_test, y_test = (torch.as_tensor(a) for a in (data.X_test, data.y_test))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x_train, y_train),
                                         batch_size=batch_size)
    optimizer = torch.optim.SGD(layer.parameters(), lr=args.lr)
    model, optimizer, loader = qshiftdp.make_private(
        layer, optimizer, loader, target_epsilon=args.epsilon, target_delta=args.delta,
        epochs=epochs, seed=args.seed, preprocessing_note=data.preprocessing_note)
    loss_fn = qshiftdp.losses.LinearLoss()
    for epoch in range(epochs):
        for xb, yb in loader:
            optimizer.zero_grad()
            if len(xb):
                loss_fn(model(xb), yb).mean().backward()
            optimizer.step()
        with torch.no_grad():
            accuracy = float((torch.sign(layer(x_test)) == y_test).double().mean())
        print(f"epoch {epoch + 1}: test accuracy {accuracy:.3f}, "
              f"ε spent {optimizer.ledger.epsilon:.3f}")
    statement = optimizer.ledger.statement()
    print(statement)
    assert data.data_dependent_preprocessing and "NOT protected" in data.preprocessing_note
    assert optimizer.ledger.epsilon <= args.epsilon and math.isfinite(accuracy)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
