r"""Data-parallel private training of a quantum classifier with ``torchrun`` (gloo on CPU).

Every process runs this script with the same arguments. ``make_private(..., distributed=True)``
broadcasts the initial weights from rank 0; each process Poisson-samples its share of the data
set, computes and clips the per-example parameter-shift gradients of its examples, the clipped
sums are all-reduced, and rank 0 draws the Gaussian noise once for everybody. The privacy
ledger is the single-process one (same σ, q and steps).

One machine, two processes::

    torchrun --nproc_per_node 2 examples/distributed_training.py --out runs/ddp

Several machines (run on each, with its own ``--node_rank``)::

    torchrun --nnodes 2 --nproc_per_node 2 --node_rank 0 \
        --master_addr HOST0 --master_port 29500 examples/distributed_training.py --out runs/ddp

Each process writes ``rank<r>.json`` (ε, steps, final weights, test accuracy) to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path


def make_data(n: int = 64, seed: int = 0):
    """A generated two-feature task: the label is the sign of sin(x₁ − 1)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g, dtype=torch.float64) * math.pi
    y = torch.where(torch.sin(x[:, 1] - 1.0) >= 0, 1.0, -1.0).double()
    return torch.utils.data.TensorDataset(x, y)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="directory for rank<r>.json")
    parser.add_argument("--epsilon", type=float, default=8.0)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--single-process", action="store_true",
                        help="run the same job without torch.distributed (for comparison)")
    args = parser.parse_args(argv)

    import torch
    import torch.distributed as dist

    import pennylane_qshiftdp as qs
    from pennylane_qshiftdp.app.models import QuantumClassifier
    from pennylane_qshiftdp.losses import LinearLoss

    distributed = not args.single_process
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    model = QuantumClassifier(2, 1, device="default.qubit", shots=None, init_seed=args.seed)
    data = make_data(seed=args.seed)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch_size)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = LinearLoss()
    model, optimizer, loader = qs.make_private(
        model, optimizer, loader, target_epsilon=args.epsilon, target_delta=1e-5,
        epochs=args.epochs, loss=loss_fn, seed=args.seed, distributed=distributed)
    for _ in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            if len(x):  # this process's share of the Poisson batch may be empty
                loss_fn(model(x), y).mean().backward()
            optimizer.step()
    x, y = data.tensors
    with torch.no_grad():
        accuracy = float((torch.where(model(x) >= 0, 1.0, -1.0) == y).double().mean())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = "single.json" if not distributed else f"rank{rank}.json"
    (out / name).write_text(json.dumps({
        "epsilon": optimizer.ledger.epsilon, "steps": optimizer.ledger.steps,
        "history": optimizer.ledger.history, "accuracy": accuracy,
        "expected_batch_size": optimizer.expected_batch_size,
        "examples_seen": sum(r["batch_examples"] for r in optimizer.history),
        "weights": [float(w) for w in model._module.qlayer.weights.detach().reshape(-1)],
    }))
    if distributed:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
