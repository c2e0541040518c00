"""Samplers: which indices, in which order (torch.utils.data.sampler and .distributed)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

import ember.tensor as et

__all__ = [
    "BatchSampler",
    "BucketBatchSampler",
    "DistributedSampler",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "SubsetRandomSampler",
    "WeightedRandomSampler",
]


def _seed_from(generator: et.Generator | None) -> int:
    """A fresh 62-bit seed drawn from ``generator`` (or ember's global RNG)."""
    return int(et.randint(0, 2**62, (), dtype=et.int64, generator=generator).item())


def _generator_for(generator: et.Generator | None) -> et.Generator:
    if generator is not None:
        return generator
    g = et.Generator()
    g.manual_seed(_seed_from(None))
    return g


class Sampler:
    """Base class: an iterable over dataset indices (or lists of indices)."""

    def __init__(self, data_source: Any = None):
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Any):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation, or ``num_samples`` draws with ``replacement``.

    Without a ``generator``, each pass draws its seed from ember's global RNG, so
    ``ember.tensor.manual_seed`` pins the order.
    """

    def __init__(
        self,
        data_source: Any,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: et.Generator | None = None,
    ):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(
                "num_samples should be a positive integer value, "
                f"but got num_samples={self.num_samples}"
            )

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        generator = _generator_for(self.generator)
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from et.randint(0, n, (32,), dtype=et.int64, generator=generator).tolist()
            rest = self.num_samples % 32
            if rest:
                yield from et.randint(0, n, (rest,), dtype=et.int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from et.randperm(n, generator=generator).tolist()
            rest = self.num_samples % n
            if rest:
                yield from et.randperm(n, generator=generator).tolist()[:rest]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: et.Generator | None = None):
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in et.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: et.Generator | None = None,
    ):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(
                f"num_samples should be a positive integer value, but got num_samples={num_samples}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                f"replacement should be a boolean value, but got replacement={replacement}"
            )
        w = np.asarray(
            weights.numpy() if isinstance(weights, et.Tensor) else weights, dtype=np.float64
        )
        if w.ndim != 1:
            raise ValueError(
                f"weights should be a 1d sequence but given weights have shape {w.shape}"
            )
        if not replacement and num_samples > w.size:
            raise RuntimeError(
                "WeightedRandomSampler: cannot draw more samples than weights without replacement"
            )
        self.weights = et.from_numpy(w)
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        rand = et.multinomial(
            self.weights, self.num_samples, self.replacement, generator=self.generator
        )
        yield from rand.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Group the indices of ``sampler`` into lists of ``batch_size``.

    >>> list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=False))
    [[0, 1], [2, 3], [4]]
    """

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size  # type: ignore[arg-type]
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size  # type: ignore[arg-type]


def _check_replica(num_replicas: int | None, rank: int | None) -> tuple[int, int]:
    num_replicas = 1 if num_replicas is None else num_replicas
    rank = 0 if rank is None else rank
    if num_replicas < 1:
        raise ValueError(f"Invalid num_replicas {num_replicas}, should be >= 1")
    if rank >= num_replicas or rank < 0:
        raise ValueError(
            f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
        )
    return num_replicas, rank


class DistributedSampler(Sampler):
    """The share of the indices that replica ``rank`` of ``num_replicas`` sees.

    Every replica computes the same permutation (seeded by ``seed + epoch``: call
    ``set_epoch`` at the start of each epoch) and takes every ``num_replicas``-th index from
    ``rank``. The index list is padded by wrapping around so all replicas get the same count,
    or cut with ``drop_last``. ember has no process group, so ``num_replicas`` and ``rank``
    default to 1 and 0.
    """

    def __init__(
        self,
        dataset: Any,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ):
        self.num_replicas, self.rank = _check_replica(num_replicas, rank)
        self.dataset = dataset
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            g = et.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = et.randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch


class BucketBatchSampler(Sampler):
    """BucketIterator's bucketing as a batch sampler: batches of indices of similar length.

    Each pass shuffles the indices, cuts them into pools of ``pool_size`` batches, sorts each
    pool by ``lengths`` (stably), cuts it into batches of ``batch_size`` and shuffles the
    batches. Within a batch indices are in descending length (``pack_padded_sequence``'s
    order) when ``sort_within_batch``. ``shuffle=False`` sorts the whole dataset (evaluation).

    Randomness: with ``seed=None`` each pass draws a fresh seed from ``generator`` (or ember's
    global RNG). With an integer ``seed`` the order is a function of ``seed + epoch``
    (``set_epoch``), which is what sharding needs: ``num_replicas`` / ``rank`` give every
    replica an equal share of the batches (wrapping around, or cut with ``drop_last``), as
    DistributedSampler does for indices.
    """

    def __init__(
        self,
        lengths: Sequence[int],
        batch_size: int,
        shuffle: bool = True,
        drop_last: bool = False,
        pool_size: int = 100,
        sort_within_batch: bool = True,
        seed: int | None = None,
        generator: et.Generator | None = None,
        num_replicas: int | None = None,
        rank: int | None = None,
    ):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(
                f"batch_size should be a positive integer value, but got batch_size={batch_size}"
            )
        if pool_size <= 0:
            raise ValueError(f"pool_size should be positive, got {pool_size}")
        lengths_np = np.asarray(lengths.numpy() if isinstance(lengths, et.Tensor) else lengths)
        if lengths_np.ndim != 1:
            raise ValueError(f"lengths should be 1-d, got shape {lengths_np.shape}")
        self.lengths = lengths_np
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.pool_size = pool_size
        self.sort_within_batch = sort_within_batch
        self.seed = seed
        self.generator = generator
        self.num_replicas, self.rank = _check_replica(num_replicas, rank)
        if self.num_replicas > 1 and seed is None and shuffle:
            raise ValueError(
                "BucketBatchSampler: sharding (num_replicas > 1) needs an integer seed"
            )
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _all_batches(self) -> list[np.ndarray]:
        n = self.lengths.shape[0]
        if n == 0:
            return []
        bs = self.batch_size
        if not self.shuffle:
            order = np.argsort(self.lengths, kind="stable")
            batches = [order[i : i + bs] for i in range(0, n, bs)]
        else:
            seed = _seed_from(self.generator) if self.seed is None else self.seed + self.epoch
            rng = np.random.default_rng(seed)
            perm = rng.permutation(n)
            pool = bs * self.pool_size
            batches = []
            for start in range(0, n, pool):
                chunk = perm[start : start + pool]
                chunk = chunk[np.argsort(self.lengths[chunk], kind="stable")]
                batches.extend(chunk[i : i + bs] for i in range(0, chunk.shape[0], bs))
            order = rng.permutation(len(batches))
            batches = [batches[i] for i in order]
        if self.drop_last:
            batches = [b for b in batches if b.shape[0] == bs]
        return batches

    def _shard(self, batches: list) -> list:
        r = self.num_replicas
        if r == 1:
            return batches
        if self.drop_last:
            total = (len(batches) // r) * r
            batches = batches[:total]
        else:
            total = math.ceil(len(batches) / r) * r
            while batches and len(batches) < total:
                batches = batches + batches[: total - len(batches)]
        return batches[self.rank : total : r]

    def __iter__(self) -> Iterator[list[int]]:
        for b in self._shard(self._all_batches()):
            if self.sort_within_batch:
                b = b[np.argsort(-self.lengths[b], kind="stable")]
            yield b.tolist()

    def __len__(self) -> int:
        n, bs = self.lengths.shape[0], self.batch_size
        if self.drop_last:
            if self.shuffle:
                # every pool but the last is a whole number of batches
                pool = bs * self.pool_size
                full, rest = divmod(n, pool)
                count = full * self.pool_size + rest // bs
            else:
                count = n // bs
            return count // self.num_replicas
        pool = bs * self.pool_size
        full, rest = divmod(n, pool)
        count = full * self.pool_size + math.ceil(rest / bs) if self.shuffle else math.ceil(n / bs)
        return math.ceil(count / self.num_replicas)
