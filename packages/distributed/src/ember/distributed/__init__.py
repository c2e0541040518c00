"""ember.distributed: data parallel training over MPI (CPU tensors) and NCCL (CUDA tensors).

``torch.distributed``'s names: process groups, collectives (in place, optionally asynchronous),
point-to-point messages and :class:`DistributedDataParallel`. Start the processes with the
launcher, which runs ``mpiexec``::

    python -m ember.distributed.run --nproc-per-node 2 train.py

    >>> import ember.distributed as dist, ember.tensor as et
    >>> dist.init_process_group("mpi")            # rank and size from the MPI launcher
    >>> t = et.tensor([float(dist.get_rank())])
    >>> dist.all_reduce(t)                        # t is now the sum over every process
    >>> t.tolist()                                # run alone: a world of one process
    [0.0]
    >>> dist.destroy_process_group()
"""
from __future__ import annotations

__version__ = "0.1.0"

from ._c10d import (
    Backend,
    GroupMember,
    ProcessGroup,
    ReduceOp,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    barrier,
    broadcast,
    destroy_process_group,
    gather,
    get_backend,
    get_global_rank,
    get_group_rank,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    irecv,
    is_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    isend,
    new_group,
    recv,
    reduce,
    reduce_scatter_tensor,
    scatter,
    send,
)
from ._ddp import DistributedDataParallel

__all__ = [
    "Backend", "DistributedDataParallel", "GroupMember", "ProcessGroup", "ReduceOp", "Work",
    "all_gather", "all_gather_into_tensor", "all_reduce", "barrier", "broadcast",
    "destroy_process_group", "gather", "get_backend", "get_global_rank", "get_group_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "init_process_group", "irecv",
    "is_available", "is_initialized", "is_mpi_available", "is_nccl_available", "isend",
    "new_group", "recv", "reduce", "reduce_scatter_tensor", "scatter", "send", "__version__",
]
