r"""Poisson sampling for :func:`~pennylane_qshiftdp.make_private`, on Opacus's samplers.

The loader's examples (:func:`private_dataset`) are Poisson-sampled with Opacus's
``UniformWithReplacementSampler`` (as :class:`opacus.data_loader.DPDataLoader`; empty batches
supported), or, data-parallel, by a distributed sampler that yields one possibly empty batch per
process and step. The batch sampler counts its batches, so the optimizer can tell a step that
used no Poisson batch.
"""

from __future__ import annotations

import collections

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

    Raises:
        ValueError: an iterable data set, a batch sampler of the loader's own, a sampler other
            than these three, a subset that repeats indices or has none, or an empty data set.
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
    if len(dataset) == 0:  # a loader over no example has no first row and no batch
        raise ValueError("`data_loader`'s data set is empty (0 examples): there is nothing to "
                         "train on.")
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
    """A Poisson batch sampler that counts the batches it yields and remembers, in order, the
    size of every batch drawn and not yet stepped.

    The optimizer matches each step with the oldest batch drawn and not yet stepped
    (:meth:`consume`), so drawing several batches before stepping through them one by one, or
    a loader that prefetches (worker processes), is one batch per step; a step over several
    batches (concatenated, or one skipped) is not, and is refused. A step that drew no batch
    is reported (another loader's batches void the ledger's sampling assumption). Opacus's
    ``BatchMemoryManager`` splits the batches of this sampler; the optimizer matches the
    whole logical batch.
    """

    def __init__(self, inner):
        self.inner = inner
        self.batches_drawn = 0
        # (iteration, size, draw number) of every batch drawn and not yet stepped, oldest
        # first.
        self._outstanding: collections.deque[tuple[int, int, int]] = collections.deque()
        self._iterations = 0

    def __iter__(self):
        self._iterations += 1
        iteration = self._iterations
        for batch in self.inner:
            self.batches_drawn += 1
            self._outstanding.append((iteration, len(batch), self.batches_drawn))
            yield batch

    def __len__(self) -> int:
        return len(self.inner)

    @property
    def outstanding(self) -> int:
        """How many batches were drawn and not yet stepped."""
        return len(self._outstanding)

    def consume(self, rows: int) -> bool:
        """Mark the oldest batch drawn and not yet stepped as stepped, if it has ``rows``
        examples; ``False`` (nothing marked) otherwise.

        Batches left over from an abandoned iteration of the loader (a loop that stopped
        early while worker processes had prefetched) are dropped when the step matches the
        oldest batch of a later iteration: a batch never stepped releases nothing.
        """
        while self._outstanding:
            iteration, size, _ = self._outstanding[0]
            if size == rows:
                self._outstanding.popleft()
                return True
            later = next((j for j, (it, _, _) in enumerate(self._outstanding)
                          if it != iteration), None)
            if later is None or self._outstanding[later][1] != rows:
                return False
            for _ in range(later):
                self._outstanding.popleft()
        return False

    def drop_oldest(self) -> None:
        """Forget the oldest batch drawn and not yet stepped (a step over other examples was
        refused in its place: its rows were discarded, so it can never be stepped)."""
        if self._outstanding:
            self._outstanding.popleft()

    def settle(self, draw: int, rows: int) -> bool:
        """Mark the batch of draw number ``draw`` as stepped (``BatchMemoryManager``'s last
        physical batch of it); ``True`` if the step held all its ``rows``.

        Batches drawn before it and not stepped were left unfinished by the loop (with
        ``num_workers=0`` the splitter draws one logical batch at a time): they are
        forgotten, as their rows were discarded.
        """
        while self._outstanding and self._outstanding[0][2] < draw:
            self._outstanding.popleft()
        if self._outstanding and self._outstanding[0][2] == draw:
            size = self._outstanding.popleft()[1]
            return size == rows
        return False

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
