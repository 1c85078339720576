r"""Poisson sampling for :func:`~pennylane_qshiftdp.make_private`, on Opacus's samplers.

The loader's examples (:func:`private_dataset`) are Poisson-sampled with Opacus's
``UniformWithReplacementSampler`` (as :class:`opacus.data_loader.DPDataLoader`; empty batches
supported), or, data-parallel, by a distributed sampler that yields one possibly empty batch per
process and step. The batch sampler counts its batches, so the optimizer can tell a step that
used no Poisson batch.
"""

from __future__ import annotations

import torch
from opacus.data_loader import dtype_safe, shape_safe, wrap_collate_with_empty
from opacus.utils.uniform_sampler import (
    DistributedUniformWithReplacementSampler,
    UniformWithReplacementSampler,
)
from torch.utils.data import default_collate

__all__ = ["CountingBatchSampler", "poisson_loader", "private_dataset"]


def private_dataset(data_loader):
    """The examples the loader's own sampler draws from: ``(dataset, note)``.

    Poisson sampling replaces the loader's sampler, so it must run over the same examples: the
    whole data set for a sequential or shuffling sampler, the subset for a
    ``SubsetRandomSampler``; any other sampler or batch sampler is refused.
    """
    from torch.utils.data import (
        BatchSampler,
        IterableDataset,
        RandomSampler,
        SequentialSampler,
        Subset,
        SubsetRandomSampler,
    )

    dataset = data_loader.dataset
    if isinstance(dataset, IterableDataset):
        raise ValueError("`data_loader` must be over a map-style dataset (Poisson sampling "
                         "picks examples by index); found an IterableDataset.")
    if data_loader.batch_size is None or type(data_loader.batch_sampler) is not BatchSampler:
        raise ValueError(
            f"`data_loader` has its own batch sampler ({type(data_loader.batch_sampler).__name__})"
            f": make_private replaces it by Poisson sampling, which would ignore it. Pass a "
            f"loader with a batch_size (and at most a SubsetRandomSampler) instead.")
    sampler = data_loader.sampler
    if type(sampler) is SequentialSampler:
        return dataset, None
    if type(sampler) is RandomSampler and not sampler.replacement and (
            sampler.num_samples == len(dataset)):
        return dataset, None
    if type(sampler) is SubsetRandomSampler:
        indices = [int(i) for i in sampler.indices]
        if len(set(indices)) != len(indices):
            raise ValueError("`data_loader`'s SubsetRandomSampler repeats indices; Poisson "
                             "sampling needs each example once.")
        if not indices:
            raise ValueError("`data_loader`'s SubsetRandomSampler has no indices.")
        return Subset(dataset, indices), ("Poisson sampling over the examples of the "
                                          "loader's SubsetRandomSampler (a subset of its data "
                                          "set)")
    raise ValueError(
        f"`data_loader` has its own sampler ({type(sampler).__name__}): make_private replaces "
        f"it by Poisson sampling over the data set, which would ignore it. Pass a loader over "
        f"the examples to train on (a torch.utils.data.Subset, or a SubsetRandomSampler) with "
        f"a batch_size.")


class CountingBatchSampler:
    """A Poisson batch sampler that counts the batches it yields.

    The optimizer warns when a step used no batch drawn from it (a loop over another loader
    would void the ledger's Poisson-sampling assumption). Opacus's ``BatchMemoryManager``
    splits the batches of this sampler, so it keeps counting there too.
    """

    def __init__(self, inner):
        self.inner = inner
        self.batches_drawn = 0

    def __iter__(self):
        for batch in self.inner:
            self.batches_drawn += 1
            yield batch

    def __len__(self) -> int:
        return len(self.inner)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class _DistributedPoissonSampler(DistributedUniformWithReplacementSampler):
    """Opacus's distributed Poisson sampler, yielding empty local batches too.

    Opacus 1.6 skips a step when a process's share of the batch is empty, so processes would
    take different numbers of steps and deadlock in the all-reduce. Here every process yields
    one (possibly empty) batch per step.
    """

    def __iter__(self):
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.shuffle_seed + self.epoch)
            indices = torch.randperm(self.total_size, generator=g)
        else:
            indices = torch.arange(self.total_size)
        indices = indices[self.rank:self.total_size:self.num_replicas]
        for _ in range(self.num_batches):
            mask = torch.rand(self.num_samples, generator=self.generator) < self.sample_rate
            yield indices[mask.nonzero(as_tuple=False).reshape(-1)]


def poisson_loader(data_loader, dataset, sample_rate: float, generator, distributed: bool):
    """Opacus's Poisson sampling (as ``DPDataLoader``) over ``dataset``, counting batches."""
    if distributed:
        inner = _DistributedPoissonSampler(total_size=len(dataset), sample_rate=sample_rate,
                                           generator=generator)
    else:
        inner = UniformWithReplacementSampler(num_samples=len(dataset), sample_rate=sample_rate,
                                              generator=generator)
    collate = wrap_collate_with_empty(
        collate_fn=data_loader.collate_fn or default_collate,
        sample_empty_shapes=[(0, *shape_safe(x)) for x in dataset[0]],
        dtypes=[dtype_safe(x) for x in dataset[0]])
    loader = torch.utils.data.DataLoader(
        dataset, batch_sampler=CountingBatchSampler(inner), collate_fn=collate,
        num_workers=data_loader.num_workers, pin_memory=data_loader.pin_memory)
    loader.sample_rate = sample_rate
    return loader
