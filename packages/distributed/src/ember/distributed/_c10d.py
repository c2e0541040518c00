"""Process groups and collectives under ``torch.distributed``'s names.

The default group is created by :func:`init_process_group`; its rank and size come from the MPI
launcher (``MPI.COMM_WORLD``; see ``python -m ember.distributed.run``). Every collective checks
its arguments here (PyTorch's exception types, messages naming the op) and hands contiguous
tensors to the group's backend, which works on their memory in place. ``src``/``dst`` arguments
are global ranks, as in PyTorch.
"""
from __future__ import annotations

import os
import warnings
from datetime import timedelta
from importlib.util import find_spec

from ember.tensor import Tensor

from ._mpi import MPIBackend, mpi
from ._nccl import NCCLBackend, nccl_available
from ._work import ReduceOp, Work, _DoneWork

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather",
    "all_gather_into_tensor", "all_reduce", "barrier", "broadcast", "destroy_process_group",
    "gather", "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks",
    "get_rank", "get_world_size", "init_process_group", "irecv", "is_available",
    "is_initialized", "is_mpi_available", "is_nccl_available", "isend", "new_group", "recv",
    "reduce", "reduce_scatter_tensor", "scatter", "send",
]

default_pg_timeout = timedelta(minutes=30)


class Backend(str):
    """A backend name: ``Backend.MPI`` ("mpi") or ``Backend.NCCL`` ("nccl").

    >>> Backend("MPI") == Backend.MPI
    True
    >>> Backend("gloo")
    Traceback (most recent call last):
        ...
    ValueError: Invalid backend: 'gloo'; ember.distributed supports 'mpi' ...
    """

    UNDEFINED = "undefined"
    MPI = "mpi"
    NCCL = "nccl"

    def __new__(cls, name: str):
        if not isinstance(name, str):
            raise TypeError(f"Backend name must be a string, but got: {name!r}")
        value = name.lower()
        if value not in (cls.MPI, cls.NCCL):
            raise ValueError(f"Invalid backend: '{name}'; ember.distributed supports 'mpi' "
                             "(CPU tensors) and 'nccl' (CUDA tensors)")
        return str.__new__(cls, value)


class ProcessGroup:
    """A set of processes running collectives together; ``rank()`` and ``size()`` within it."""

    def __init__(self, impl, ranks: list[int], backend: str, name: str = "") -> None:
        self._impl = impl
        self._ranks = list(ranks)
        self._backend = backend
        self.group_name = name

    def rank(self) -> int:
        return self._impl.rank()

    def size(self) -> int:
        return self._impl.size()

    def name(self) -> str:
        return self._backend.upper()

    def __repr__(self) -> str:
        return f"<ember.distributed.ProcessGroup {self._backend} ranks={self._ranks}>"


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``GroupMember.NON_GROUP_MEMBER`` (what
    :func:`new_group` returns on a rank outside the new group)."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


class _State:
    default: ProcessGroup | None = None
    backend: str | None = None
    timeout: timedelta = default_pg_timeout
    groups: list = []


_state = _State()


# ----------------------------------------------------------------------------- availability
def is_available() -> bool:
    """ember.distributed is always importable; backends may not be (see is_mpi_available)."""
    return True


def is_mpi_available() -> bool:
    return find_spec("mpi4py") is not None


def is_nccl_available() -> bool:
    return nccl_available()


def is_initialized() -> bool:
    return _state.default is not None


# ----------------------------------------------------------------------------- setup
def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"init_process_group: environment variable {name}={value!r} is not "
                         "an integer") from None


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Create the default process group.

    ``backend``: "mpi" (CPU tensors; the default) or "nccl" (CUDA tensors). Rank and world size
    come from the MPI launcher (``mpiexec`` / ``python -m ember.distributed.run``); an explicit
    ``rank``/``world_size`` or the ``RANK``/``WORLD_SIZE`` environment variables must agree
    with it.
    """
    if _state.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("init_process_group: ember.distributed has no Store; processes meet "
                         "through the MPI launcher (leave store=None)")
    if init_method not in (None, "env://", "mpi://"):
        raise ValueError(f"init_process_group: unsupported init_method {init_method!r}; "
                         "ember.distributed takes its processes from the MPI launcher "
                         "('env://' or None)")
    if timeout is not None and not isinstance(timeout, timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    name = Backend(backend if backend is not None else Backend.MPI)
    if world_size == -1:
        world_size = _env_int("WORLD_SIZE") or -1
    if rank == -1:
        env_rank = _env_int("RANK")
        rank = env_rank if env_rank is not None else -1
    comm = None
    if is_mpi_available():
        comm = mpi().COMM_WORLD
        mpi_rank, mpi_size = comm.Get_rank(), comm.Get_size()
        for what, given, actual in (("world_size", world_size, mpi_size),
                                    ("rank", rank, mpi_rank)):
            if given != -1 and given != actual:
                raise ValueError(f"init_process_group: {what}={given} disagrees with the MPI "
                                 f"launcher, which gives {what}={actual}")
        rank, world_size = mpi_rank, mpi_size
    elif name == Backend.MPI:
        raise RuntimeError("Distributed package doesn't have MPI built in: install mpi4py and "
                           "an MPI library (pip install 'ember-distributed[mpi]')")
    else:
        world_size = 1 if world_size == -1 else world_size
        rank = 0 if rank == -1 else rank
        if world_size != 1:
            raise RuntimeError("init_process_group: the nccl backend shares its unique id over "
                               "MPI; install mpi4py (ember-distributed[mpi]) to run more than "
                               "one process")
    if name == Backend.MPI:
        impl = MPIBackend(comm)
    else:
        impl = NCCLBackend(comm, rank, world_size)
    pg = ProcessGroup(impl, list(range(world_size)), name, group_name)
    _state.default, _state.backend = pg, name
    _state.timeout = timeout if timeout is not None else default_pg_timeout
    _state.groups = [pg]
    GroupMember.WORLD = pg


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroy ``group`` (all groups, the default one included, when None)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group is None or group is _state.default:
        _default()
        for g in reversed(_state.groups):
            g._impl.destroy()
        _state.default, _state.backend, _state.groups = None, None, []
        GroupMember.WORLD = None
        return
    if group not in _state.groups:
        raise ValueError("destroy_process_group: the group is not a live process group")
    group._impl.destroy()
    _state.groups.remove(group)


def _default() -> ProcessGroup:
    if _state.default is None:
        raise ValueError("Default process group has not been initialized, please make sure to "
                         "call init_process_group.")
    return _state.default


def _group(group, op: str):
    """The group to run on, or None on a rank outside ``group`` (PyTorch warns and skips)."""
    pg = _default()
    if group is None or group is GroupMember.WORLD:
        return pg
    if group is GroupMember.NON_GROUP_MEMBER:
        warnings.warn(f"Running {op} on global rank {pg.rank()} which does not belong to the "
                      "given group.", stacklevel=3)
        return None
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"{op}: group must be a ProcessGroup, got {type(group).__name__}")
    return group


def new_group(ranks=None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options=None, use_local_synchronization: bool = False,
              group_desc: str | None = None) -> ProcessGroup:
    """A group of the given global ranks. Every process of the default group must call it, in
    the same order; a process outside ``ranks`` gets ``GroupMember.NON_GROUP_MEMBER``."""
    pg = _default()
    n = pg.size()
    ranks = list(range(n)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: duplicate ranks in {ranks}")
    for r in ranks:
        if not 0 <= r < n:
            raise ValueError(f"new_group: rank {r} is out of range for a world of size {n}")
    if backend is not None and Backend(backend) != _state.backend:
        raise ValueError(f"new_group: backend {backend!r} differs from the default group's "
                         f"{_state.backend!r}")
    impl = pg._impl.subgroup(ranks)
    if impl is None:
        return GroupMember.NON_GROUP_MEMBER
    group = ProcessGroup(impl, ranks, _state.backend, group_desc or "")
    _state.groups.append(group)
    return group


# ----------------------------------------------------------------------------- queries
def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (-1 outside it)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return (group if group is not None else _default()).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in ``group`` (-1 outside it)."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return (group if group is not None else _default()).size()


def get_backend(group: ProcessGroup | None = None) -> str:
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    return (group if group is not None else _default())._backend


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    return list((group if group is not None else _default())._ranks)


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if global_rank not in ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return ranks.index(global_rank)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    ranks = get_process_group_ranks(group)
    if not 0 <= group_rank < len(ranks):
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return ranks[group_rank]


# ----------------------------------------------------------------------------- checks
def _check_tensor(t, name: str, op: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}: Invalid function argument. Expected parameter `{name}` of type "
                        f"Tensor but got {type(t)} instead.")


def _check_list(ts, name: str, op: str) -> None:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"{op}: Invalid function argument. Expected parameter `{name}` of type "
                        f"List[Tensor] but got {type(ts)} instead.")


def _check_device(pg: ProcessGroup, t: Tensor, op: str) -> None:
    cuda = t.device.type == "cuda"
    if pg._backend == Backend.MPI and cuda:
        raise RuntimeError(f"{op}: the mpi backend takes CPU tensors, got a tensor on "
                           f"{t.device}; use the nccl backend for CUDA tensors")
    if pg._backend == Backend.NCCL and not cuda:
        raise RuntimeError(f"{op}: No backend type associated with device type {t.device.type} "
                           "(the nccl backend takes CUDA tensors)")


def _check_contiguous(t: Tensor, op: str) -> None:
    if not t.is_contiguous():
        raise RuntimeError(f"{op}: input tensor has to be contiguous (got strides "
                           f"{t.stride()} for shape {tuple(t.shape)})")


def _check_like(t: Tensor, ref: Tensor, op: str, what: str) -> None:
    if t.dtype != ref.dtype:
        raise RuntimeError(f"{op}: {what} has dtype {t.dtype}, expected {ref.dtype}")
    if tuple(t.shape) != tuple(ref.shape):
        raise RuntimeError(f"{op}: {what} has shape {tuple(t.shape)}, expected "
                           f"{tuple(ref.shape)}")
    if t.device != ref.device:
        raise RuntimeError(f"{op}: {what} is on {t.device}, expected {ref.device}")


def _check_op(op, name: str, t: Tensor) -> ReduceOp:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}: op must be a ReduceOp (ReduceOp.SUM, ...), got {op!r}")
    if op is ReduceOp.AVG and not t.is_floating_point():
        raise RuntimeError(f"{name}: ReduceOp.AVG needs a floating point tensor, got {t.dtype}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and t.is_floating_point():
        raise RuntimeError(f"{name}: {op.name} needs an integer or bool tensor, got {t.dtype}")
    return op


def _root(pg: ProcessGroup, global_rank, op: str, what: str) -> int:
    """The group rank of a global ``src``/``dst`` rank."""
    if not isinstance(global_rank, int) or isinstance(global_rank, bool):
        raise TypeError(f"{op}: {what} must be an int rank, got {type(global_rank).__name__}")
    world = _default().size()
    if not 0 <= global_rank < world:
        raise RuntimeError(f"{op}: invalid {what} rank {global_rank} for a world of size "
                           f"{world}")
    if global_rank not in pg._ranks:
        raise ValueError(f"{op}: Global rank {global_rank} is not part of group {pg}")
    return pg._ranks.index(global_rank)


def _run(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _single(pg: ProcessGroup, t: Tensor, name: str, op: str) -> None:
    _check_tensor(t, name, op)
    _check_device(pg, t, op)
    _check_contiguous(t, op)


# ----------------------------------------------------------------------------- collectives
def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None,
               async_op: bool = False):
    """Reduce ``tensor`` across the group, in place on every process."""
    pg = _group(group, "all_reduce")
    if pg is None:
        return None
    _single(pg, tensor, "tensor", "all_reduce")
    _check_op(op, "all_reduce", tensor)
    if not async_op and getattr(pg._impl, "name", None) == "mpi":
        return _run(pg._impl.allreduce(tensor, op, blocking=True), False)
    return _run(pg._impl.allreduce(tensor, op), async_op)


def broadcast(tensor: Tensor, src: int | None = None, group=None, async_op: bool = False,
              group_src: int | None = None):
    """Copy ``tensor`` of global rank ``src`` into ``tensor`` on every process."""
    pg = _group(group, "broadcast")
    if pg is None:
        return None
    _single(pg, tensor, "tensor", "broadcast")
    root = _group_root(pg, src, group_src, "broadcast", "src")
    return _run(pg._impl.broadcast(tensor, root), async_op)


def _group_root(pg, global_rank, group_rank, op: str, what: str) -> int:
    if (global_rank is None) == (group_rank is None):
        raise ValueError(f"{op}: give exactly one of {what} and group_{what}")
    if group_rank is not None:
        if not isinstance(group_rank, int) or not 0 <= group_rank < pg.size():
            raise ValueError(f"{op}: group_{what}={group_rank!r} is not a rank of the group "
                             f"(size {pg.size()})")
        return group_rank
    return _root(pg, global_rank, op, what)


def _check_per_rank(pg, ts, ref: Tensor, name: str, op: str) -> None:
    """``ts`` (a list) holds one tensor per process of the group, each like ``ref``."""
    if len(ts) != pg.size():
        raise RuntimeError(f"{op}: {name} has {len(ts)} tensors, expected one per process of "
                           f"the group ({pg.size()})")
    for i, t in enumerate(ts):
        _check_like(t, ref, op, f"{name}[{i}]")


def _root_list(pg, root: int, ts, ref: Tensor, name: str, op: str, role: str):
    """The list argument of a rooted collective (``gather_list``, ``scatter_list``): given,
    with one tensor per process like ``ref``, on the ``role`` rank ``root`` (returned as a
    list); not given elsewhere (None)."""
    if pg.rank() != root:
        if ts:
            raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")
        return None
    if not ts:
        raise ValueError(f"Argument ``{name}`` must be specified on {role} rank.")
    _check_list(ts, name, op)
    _check_per_rank(pg, ts, ref, name, op)
    return list(ts)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Fill ``tensor_list[i]`` with ``tensor`` of group rank ``i``."""
    pg = _group(group, "all_gather")
    if pg is None:
        return None
    _check_list(tensor_list, "tensor_list", "all_gather")
    _single(pg, tensor, "tensor", "all_gather")
    _check_per_rank(pg, tensor_list, tensor, "tensor_list", "all_gather")
    return _run(pg._impl.allgather(list(tensor_list), tensor), async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None,
                           async_op: bool = False):
    """Gather every process's ``input_tensor`` into ``output_tensor``, concatenated along dim 0
    (``output_tensor`` has ``world_size`` times the elements, or is stacked)."""
    op = "all_gather_into_tensor"
    pg = _group(group, op)
    if pg is None:
        return None
    _single(pg, output_tensor, "output_tensor", op)
    _single(pg, input_tensor, "input_tensor", op)
    if output_tensor.dtype != input_tensor.dtype:
        raise RuntimeError(f"{op}: output tensor must have the same type as input tensor "
                           f"(got {output_tensor.dtype} and {input_tensor.dtype})")
    if output_tensor.numel() != input_tensor.numel() * pg.size():
        raise RuntimeError(f"{op}: output tensor size must be equal to world_size times input "
                           f"tensor size (got shapes {tuple(output_tensor.shape)} and "
                           f"{tuple(input_tensor.shape)}, world size {pg.size()})")
    return _run(pg._impl.allgather_into(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group=None, async_op: bool = False):
    """Reduce ``input`` across the group and give each process its chunk (along dim 0)."""
    name = "reduce_scatter_tensor"
    pg = _group(group, name)
    if pg is None:
        return None
    _single(pg, output, "output", name)
    _single(pg, input, "input", name)
    _check_op(op, name, output)
    if output.dtype != input.dtype:
        raise RuntimeError(f"{name}: input tensor must be the same type as the output tensor "
                           f"(got {input.dtype} and {output.dtype})")
    if input.numel() != output.numel() * pg.size():
        raise RuntimeError(f"{name}: input tensor must be the same size as output size times "
                           f"world size (got shapes {tuple(input.shape)} and "
                           f"{tuple(output.shape)}, world size {pg.size()})")
    return _run(pg._impl.reduce_scatter_into(output, input, op), async_op)


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Reduce ``tensor`` across the group into ``tensor`` of global rank ``dst``."""
    pg = _group(group, "reduce")
    if pg is None:
        return None
    _single(pg, tensor, "tensor", "reduce")
    _check_op(op, "reduce", tensor)
    root = _group_root(pg, dst, group_dst, "reduce", "dst")
    return _run(pg._impl.reduce(tensor, root, op), async_op)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int | None = None, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Collect every process's ``tensor`` into ``gather_list`` on global rank ``dst``."""
    pg = _group(group, "gather")
    if pg is None:
        return None
    _single(pg, tensor, "tensor", "gather")
    if dst is None and group_dst is None:
        dst = 0
    root = _group_root(pg, dst, group_dst, "gather", "dst")
    outs = _root_list(pg, root, gather_list, tensor, "gather_list", "gather", "destination")
    return _run(pg._impl.gather(tensor, outs, root), async_op)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int | None = None,
            group=None, async_op: bool = False, group_src: int | None = None):
    """Give process ``i`` the tensor ``scatter_list[i]`` of global rank ``src``."""
    pg = _group(group, "scatter")
    if pg is None:
        return None
    _single(pg, tensor, "tensor", "scatter")
    if src is None and group_src is None:
        src = 0
    root = _group_root(pg, src, group_src, "scatter", "src")
    ins = _root_list(pg, root, scatter_list, tensor, "scatter_list", "scatter", "source")
    return _run(pg._impl.scatter(tensor, ins, root), async_op)


def _p2p(tensor, peer, group, op: str, what: str, group_peer=None):
    pg = _group(group, op)
    if pg is None:
        return None, None
    _single(pg, tensor, "tensor", op)
    if peer is None and group_peer is None:
        return pg, None
    root = _group_root(pg, peer, group_peer, op, what)
    if root == pg.rank():
        if what == "dst":
            raise ValueError("Invalid destination rank: destination rank should not be the "
                             "same as the rank of the current process.")
        raise ValueError("Invalid source rank: source rank should not be the same as the rank "
                         "of the current process.")
    return pg, root


def _check_tag(tag, op: str) -> int:
    if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
        raise ValueError(f"{op}: tag must be a non-negative int, got {tag!r}")
    return tag


def _send(tensor, dst, group, tag, group_dst, op: str):
    """Start sending ``tensor`` to ``dst``: its Work, or None outside the group."""
    _check_tag(tag, op)
    pg, root = _p2p(tensor, dst, group, op, "dst", group_dst)
    if pg is None:
        return None
    if root is None:
        raise ValueError(f"{op}: give dst or group_dst")
    return pg._impl.send(tensor, root, tag)


def _recv(tensor, src, group, tag, group_src, op: str):
    """Start receiving into ``tensor`` from ``src`` (any rank when None): the group and the
    Work, or (None, None) outside the group."""
    _check_tag(tag, op)
    pg, root = _p2p(tensor, src, group, op, "src", group_src)
    if pg is None:
        return None, None
    return pg, pg._impl.recv(tensor, root, tag)


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
          group_dst: int | None = None):
    """Send ``tensor`` to global rank ``dst`` without blocking; returns a Work."""
    return _send(tensor, dst, group, tag, group_dst, "isend")


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send ``tensor`` to global rank ``dst`` (blocks until it can be reused)."""
    work = _send(tensor, dst, group, tag, group_dst, "send")
    if work is not None:
        work.wait()


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
          group_src: int | None = None):
    """Receive into ``tensor`` from global rank ``src`` (any rank when None) without blocking."""
    return _recv(tensor, src, group, tag, group_src, "irecv")[1]


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into ``tensor`` from global rank ``src`` (any when None); returns the sender's
    global rank."""
    pg, work = _recv(tensor, src, group, tag, group_src, "recv")
    if pg is None:
        return -1
    work.wait()
    return pg._ranks[work.source_rank]


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Block until every process of the group has reached the barrier."""
    pg = _group(group, "barrier")
    if pg is None:
        return None
    if pg.size() == 1:
        return _run(_DoneWork("barrier"), async_op)
    return _run(pg._impl.barrier(), async_op)
