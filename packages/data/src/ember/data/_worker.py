"""What runs inside a DataLoader worker process, and what it sends back."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import random
import sys
import traceback
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np

import ember.tensor as et

__all__ = ["WorkerInfo", "get_worker_info"]

# How often a blocked worker checks that its parent is still alive (seconds).
_POLL_INTERVAL = 0.5


class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: ``id``, ``num_workers``,
    ``seed`` and ``dataset`` (this worker's copy)."""

    __initialized = False

    def __init__(self, **kwargs: Any):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key: str, val: Any) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__keys)
        return f"{type(self).__name__}({items})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """The WorkerInfo of the current DataLoader worker process; ``None`` in the main process."""
    return _worker_info


class _KeyErrorMessage(str):
    """Keeps a multi-line message readable when it is the argument of a KeyError."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception caught in a worker, carried to the main process and re-raised there
    with its original type; the message holds the worker's traceback."""

    def __init__(self, where: str):
        exc_type, exc, tb = sys.exc_info()
        try:
            pickle.dumps(exc_type)
            self.exc_type = exc_type
        except Exception:
            self.exc_type = RuntimeError
        self.exc_name = exc_type.__name__ if exc_type is not None else "Exception"
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self) -> None:
        msg = f"Caught {self.exc_name} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class IterationEnd:
    """Sent by a worker whose IterableDataset copy is exhausted."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class MapFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index: Any) -> Any:
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if getitems is not None else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class IterableFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, batch_size: Any) -> Any:
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in range(batch_size):
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < batch_size):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(
    kind: str, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool
) -> Any:
    cls = IterableFetcher if kind == "iterable" else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _seed_worker(seed: int) -> None:
    random.seed(seed)
    et.manual_seed(seed)
    np.random.seed(np.random.SeedSequence(seed).generate_state(4))


def _limit_threads() -> None:
    """One CPU-kernel thread per worker, as PyTorch's workers run ``torch.set_num_threads(1)``:
    the workers are the parallelism, and no Numba thread pool runs in a forked child. Where
    Numba is not imported yet, the environment tells it at import (no import cost here)."""
    if "numba" in sys.modules:
        et.set_num_threads(1)
    else:
        os.environ["NUMBA_NUM_THREADS"] = "1"


def _parent_alive() -> bool:
    parent = multiprocessing.parent_process()
    return parent is None or parent.is_alive()


def worker_loop(
    kind: str,
    dataset: Any,
    index_queue: Any,
    data_queue: Any,
    done_event: Any,
    auto_collation: bool,
    collate_fn: Any,
    drop_last: bool,
    base_seed: int,
    init_fn: Any,
    worker_id: int,
    num_workers: int,
) -> None:
    """Fetch the batches asked for on ``index_queue`` and put ``(epoch, idx, data)`` on
    ``data_queue`` until told to stop (``None``) or the parent dies."""
    global _worker_info
    where = f"in DataLoader worker process {worker_id}"
    try:
        _limit_threads()
        seed = base_seed + worker_id
        _seed_worker(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
        except Exception:
            init_error = ExceptionWrapper(where)
        epoch = None
        while True:
            try:
                task = index_queue.get(timeout=_POLL_INTERVAL)
            except queue.Empty:
                if done_event.is_set() or not _parent_alive():
                    break
                continue
            if task is None:
                break
            task_epoch, idx, index = task
            data: Any
            if init_error is not None:
                data = init_error
            else:
                try:
                    if task_epoch != epoch or fetcher is None:
                        epoch = task_epoch
                        fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                    data = fetcher.fetch(index)
                except StopIteration:
                    data = IterationEnd(worker_id)
                except Exception:
                    data = ExceptionWrapper(where)
            try:
                # pickle here, not in the queue's feeder thread, so a batch that does not
                # pickle is reported instead of being lost
                payload = ForkingPickler.dumps((task_epoch, idx, data))
            except Exception:
                payload = ForkingPickler.dumps((task_epoch, idx, ExceptionWrapper(where)))
            data_queue.put(bytes(payload))
            del data, payload
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
