"""DataLoader worker start-up and shutdown, ember vs PyTorch (issue 16, item 8).

Run ``python benchmarks/bench_dataloader_workers.py``. Prints a Markdown table and returns rows
``(workload, ember, torch, unit)``; no assertions on time.

- first batch with 2 workers: seconds from ``iter(loader)`` to the first batch (workers start
  with the platform's default method, fork on Linux), median of 7 runs, after the parent has
  run a parallel kernel.
- abandoned iterator: seconds from dropping an iterator that has yielded one batch (the
  workers busy prefetching) until every worker process has exited, median of 7 runs.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import ember.data  # noqa: F401
except ImportError:  # run from a checkout without installing
    _root = Path(__file__).resolve().parents[1] / "packages"
    sys.path[:0] = [str(_root / n / "src") for n in ("tensor", "autograd", "nn", "data")]

import ember.tensor as et
from ember.data import DataLoader, Dataset

try:
    import torch
    import torch.utils.data as tud
except ImportError:
    torch = None
    tud = None

RUNS = 7


class _Rows(Dataset):
    def __init__(self, n: int = 4096, dim: int = 64):
        self.data = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int):
        return self.data[i], i


def _first_batch(make) -> float:
    times = []
    for _ in range(RUNS):
        loader = make()
        t0 = time.perf_counter()
        it = iter(loader)
        next(it)
        times.append(time.perf_counter() - t0)
        del it
        gc.collect()
    return statistics.median(times)


def _workers_of(it) -> list:
    return list(getattr(it, "_workers", []))


def _abandon(make) -> float:
    times = []
    for _ in range(RUNS):
        it = iter(make())
        next(it)
        workers = _workers_of(it)
        t0 = time.perf_counter()
        del it  # the last reference: shuts the workers down (no gc.collect in the timing)
        for w in workers:
            w.join(30)
        times.append(time.perf_counter() - t0)
        gc.collect()
    return statistics.median(times)


def main() -> list[tuple]:
    import ember.nn.functional as F

    F.log_softmax(et.randn(1024, 1024), dim=1)  # the parent's thread pool is live before fork
    ds = _Rows()
    ember_make = lambda: DataLoader(ds, batch_size=64, shuffle=True, num_workers=2)  # noqa: E731
    torch_make = (lambda: tud.DataLoader(ds, batch_size=64, shuffle=True,  # noqa: E731
                                         num_workers=2)) if tud is not None else None
    rows = [
        ("first batch, 2 workers", _first_batch(ember_make),
         _first_batch(torch_make) if torch_make else None, "s"),
        ("abandoned iterator shut down, 2 workers", _abandon(ember_make),
         _abandon(torch_make) if torch_make else None, "s"),
    ]
    print("| workload | ember | torch | ember / torch | unit |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, ours, theirs, unit in rows:
        ratio = f"{ours / theirs:.2f}" if theirs else "-"
        t = f"{theirs:.4f}" if theirs is not None else "-"
        print(f"| {name} | {ours:.4f} | {t} | {ratio} | {unit} |")
    return rows


if __name__ == "__main__":
    main()
