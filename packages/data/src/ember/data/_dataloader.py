"""DataLoader: batches from a dataset, in the main process or in worker processes.

Worker processes start the way PyTorch starts them: with the platform's default start method
(``fork`` on Linux with Python < 3.14, ``spawn`` on macOS and Windows), so a script without an
``if __name__ == "__main__":`` guard works on Linux exactly as it does with PyTorch. Forking is
safe with ember's Numba kernels for two reasons, both needed:

* the kernels select Numba's ``forksafe`` threading layer (``tbb`` where installed, otherwise the
  built-in ``workqueue`` pool, which a forked child re-creates), never GNU OpenMP, whose thread
  pool deadlocks or aborts in a child forked after a parallel region ran in the parent;
* like PyTorch (``torch.set_num_threads(1)`` in each worker), every worker limits ember's CPU
  kernels to one thread before it fetches anything, so no parallel kernel (and no thread pool)
  runs in a forked worker at all: the workers are the parallelism.

Pass ``multiprocessing_context="spawn"`` or ``"forkserver"`` to avoid fork; those need the
``__main__`` guard and a picklable dataset, collate function and ``worker_init_fn``.
"""

from __future__ import annotations

import itertools
import multiprocessing
import pickle
import queue
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import ember.tensor as et

from . import _worker
from ._collate import default_collate, default_convert
from ._dataset import IterableDataset
from ._sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _seed_from

__all__ = ["DataLoader"]

# How long the main process waits on the result queue before checking that workers live.
_POLL_INTERVAL = 0.25
_JOIN_TIMEOUT = 5.0


class _InfiniteConstantSampler(Sampler):
    """For IterableDataset: each item asks a worker for one more batch (or sample)."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class _IterableBatchSizer(Sampler):
    def __init__(self, batch_size: int):
        self.batch_size = batch_size

    def __iter__(self) -> Iterator[int]:
        while True:
            yield self.batch_size


def _default_context() -> Any:
    """The platform's default start method, as PyTorch uses (see the module docstring)."""
    return multiprocessing.get_context()


class DataLoader:
    """Iterate over a dataset in batches (``torch.utils.data.DataLoader``).

    Map-style datasets are indexed through ``sampler`` (``RandomSampler`` with ``shuffle``)
    grouped by ``batch_sampler`` (``BatchSampler(sampler, batch_size, drop_last)``);
    ``batch_size=None`` turns batching off. ``num_workers > 0`` fetches in worker processes
    and still yields batches in sampler order. A worker's exception is re-raised here with its
    original type; a worker that dies raises RuntimeError naming it and its exit code;
    ``timeout > 0`` bounds the wait for each batch. ``pin_memory`` is accepted and ignored
    (CPU). Each worker seeds ``random``, NumPy and ember with ``base_seed + worker_id``,
    ``base_seed`` being drawn from ``generator`` (or ember's global RNG) per iterator.
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable | None = None,
        multiprocessing_context: Any = None,
        generator: et.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
    ):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; "
                "use num_workers=0 to disable multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing. "
                "let num_workers > 0 to enable multiprocessing, "
                "otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 1:
            raise ValueError("prefetch_factor option should be positive")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.persistent_workers = persistent_workers
        self.generator = generator

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (None, False):
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            self._dataset_kind = "map"
            shuffle = bool(shuffle)

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, "
                    "shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually "
                "exclusive with drop_last"
            )

        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            if self._dataset_kind == "iterable":
                batch_sampler = _IterableBatchSizer(batch_size)
            else:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator: _MultiProcessIter | None = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def _mp_context(self) -> Any:
        ctx = self.multiprocessing_context
        if ctx is None:
            return _default_context()
        if isinstance(ctx, str):
            return multiprocessing.get_context(ctx)
        return ctx

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None or self._iterator._shut_down:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)

    def __del__(self) -> None:
        it = getattr(self, "_iterator", None)
        if it is not None:
            it._shutdown()


class _BaseIter:
    def __init__(self, loader: DataLoader):
        self._dataset = loader.dataset
        self._kind = loader._dataset_kind
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._num_yielded = 0
        self._sampler_iter = iter(loader._index_sampler)
        self._length = None
        try:
            self._length = len(loader)
        except TypeError:
            pass

    def __iter__(self) -> _BaseIter:
        return self

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("this DataLoader has no length")
        return self._length


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(
            self._kind, self._dataset, self._auto_collation, self._collate_fn, self._drop_last
        )

    def __next__(self) -> Any:
        index = next(self._sampler_iter)
        data = self._fetcher.fetch(index)
        self._num_yielded += 1
        return data


class _MultiProcessIter(_BaseIter):
    """Workers get (epoch, idx, indices) on their own queue, round-robin, with at most
    ``prefetch_factor`` tasks each outstanding; results come back on one queue and are
    reordered by ``idx``."""

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        self._shut_down = True
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        ctx = loader._mp_context()
        self._data_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues: list = []
        self._workers: list = []
        base_seed = _seed_from(loader.generator)
        self._shut_down = False
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(
                target=_worker.worker_loop,
                args=(
                    self._kind,
                    self._dataset,
                    index_queue,
                    self._data_queue,
                    self._done_event,
                    self._auto_collation,
                    self._collate_fn,
                    self._drop_last,
                    base_seed,
                    loader.worker_init_fn,
                    i,
                    self._num_workers,
                ),
                daemon=True,
            )
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._epoch = 0
        self._reset(loader, first_iter=True)

    def _reset(self, loader: DataLoader, first_iter: bool = False) -> None:
        self._epoch += 1
        if not first_iter:
            self._sampler_iter = iter(loader._index_sampler)
            self._num_yielded = 0
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._workers_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self) -> None:
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_cycle)
            if self._workers_active[worker_id]:
                break
        else:
            return
        self._index_queues[worker_id].put((self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._send_idx += 1

    def __next__(self) -> Any:
        if self._shut_down:
            raise StopIteration
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]  # its worker's stream ended
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            epoch, idx, data = self._get_data()
            if epoch != self._epoch:
                continue  # a leftover of an epoch that was abandoned
            if isinstance(data, _worker.IterationEnd):
                self._workers_active[data.worker_id] = False
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data: Any) -> Any:
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        self._num_yielded += 1
        return data

    def _get_data(self) -> tuple:
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_INTERVAL
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._shutdown(force=True)
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                wait = min(wait, left)
            try:
                payload = self._data_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers()
                continue
            return pickle.loads(payload)

    def _check_workers(self) -> None:
        for worker_id, w in enumerate(self._workers):
            if not w.is_alive():
                code = w.exitcode
                pid = w.pid
                self._shutdown(force=True)
                raise RuntimeError(
                    f"DataLoader worker {worker_id} (pid {pid}) exited unexpectedly with exit code "
                    f"{code}"
                    + (f" (killed by signal {-code})" if code is not None and code < 0 else "")
                )

    def _shutdown(self, force: bool = False) -> None:
        """Stop the workers: ask them to exit, or with ``force`` (a timeout, a dead sibling)
        terminate them at once, since they may be stuck inside the dataset."""
        if getattr(self, "_shut_down", True):
            return
        self._shut_down = True
        try:
            self._done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except Exception:
                    pass
            for w in self._workers:
                w.join(timeout=0 if force else _JOIN_TIMEOUT)
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=1.0)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()
        except Exception:  # noqa: S110 - interpreter shutdown may have torn down the queues
            pass

    def __del__(self) -> None:
        self._shutdown()
