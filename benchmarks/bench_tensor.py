"""ember.tensor vs PyTorch CPU in one process: per-op overhead, large elementwise ops and
reductions, matmul, fancy indexing, index_add, and import time.

    python benchmarks/bench_tensor.py
"""
from __future__ import annotations

import numpy as np
from _harness import import_time, table, timeit


def main() -> list[tuple]:
    import torch

    import ember.tensor as et

    torch.set_num_threads(2)
    rows = []
    a, b = et.ones(1, 1), et.ones(1, 1)
    ta, tb = torch.ones(1, 1), torch.ones(1, 1)
    rows.append(("add 1x1 (per-op overhead)", timeit(lambda: a + b), timeit(lambda: ta + tb)))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000_000, dtype=np.float32)
    y = rng.standard_normal(10_000_000, dtype=np.float32)
    ex, ey = et.from_numpy(x), et.from_numpy(y)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    rows.append(("add 10M float32", timeit(lambda: ex + ey), timeit(lambda: tx + ty)))
    rows.append(("mul 10M float32", timeit(lambda: ex * ey), timeit(lambda: tx * ty)))
    rows.append(("exp 10M float32", timeit(lambda: ex.exp()), timeit(lambda: tx.exp())))
    rows.append(("tanh 10M float32", timeit(lambda: ex.tanh()), timeit(lambda: tx.tanh())))
    rows.append(("sum 10M float32", timeit(lambda: ex.sum()), timeit(lambda: tx.sum())))
    m2 = ex.view(1000, 10000)
    t2 = tx.view(1000, 10000)
    rows.append(("sum dim=1 1000x10000", timeit(lambda: m2.sum(1)), timeit(lambda: t2.sum(1))))
    rows.append(("max dim=1 1000x10000", timeit(lambda: m2.max(1)), timeit(lambda: t2.max(1))))
    for n in (512, 2048):
        p = rng.standard_normal((n, n), dtype=np.float32)
        q = rng.standard_normal((n, n), dtype=np.float32)
        ep, eq = et.from_numpy(p), et.from_numpy(q)
        tp, tq = torch.from_numpy(p), torch.from_numpy(q)
        rows.append((f"matmul {n}", timeit(lambda ep=ep, eq=eq: ep @ eq),
                     timeit(lambda tp=tp, tq=tq: tp @ tq)))
    src = rng.standard_normal((100_000, 64), dtype=np.float32)
    idx = rng.integers(0, 100_000, 50_000)
    es, ei = et.from_numpy(src), et.from_numpy(idx)
    ts, ti = torch.from_numpy(src), torch.from_numpy(idx)
    rows.append(("fancy index 50k rows of 100kx64", timeit(lambda: es[ei]), timeit(lambda: ts[ti])))
    out = np.zeros((10_000, 64), dtype=np.float32)
    idx2 = rng.integers(0, 10_000, 100_000)
    src2 = rng.standard_normal((100_000, 64), dtype=np.float32)
    eo, ei2, es2 = et.from_numpy(out.copy()), et.from_numpy(idx2), et.from_numpy(src2)
    to, ti2, ts2 = torch.from_numpy(out.copy()), torch.from_numpy(idx2), torch.from_numpy(src2)
    rows.append(("index_add_ 100k rows into 10kx64", timeit(lambda: eo.index_add_(0, ei2, es2)),
                 timeit(lambda: to.index_add_(0, ti2, ts2))))
    rows.append(("import (s)", import_time("ember.tensor"), import_time("torch")))
    return rows


if __name__ == "__main__":
    print(table(main(), "ember.tensor"))
