"""The MPI backend: CPU tensors through mpi4py's buffer-protocol (uppercase) calls.

Every operation is a non-blocking MPI call (``Iallreduce``, ``Ibcast``, ...) on the NumPy array
that shares the tensor's memory, so a tensor is reduced in place without a copy; the blocking
form is the non-blocking one followed by ``wait()``, except ``all_reduce``, whose blocking form
is MPI's blocking ``Allreduce`` (faster in Open MPI). Only list-shaped arguments (``all_gather``'s
output list, ``gather``/``scatter`` lists) go through one contiguous staging buffer.
"""
from __future__ import annotations

import numpy as np

from ._work import ReduceOp, Work, _mark_written

__all__ = ["MPIBackend", "mpi"]

_MPI = None


def mpi():
    """The ``mpi4py.MPI`` module (importing it initializes MPI)."""
    global _MPI
    if _MPI is None:
        try:
            from mpi4py import MPI
        except ImportError as exc:  # pragma: no cover - exercised only without mpi4py
            raise RuntimeError(
                "the mpi backend needs mpi4py and an MPI library: "
                "pip install 'ember-distributed[mpi]'") from exc
        _MPI = MPI
    return _MPI


class _MPIWork(Work):
    def __init__(self, op, requests, finish=None, outputs=(), status=None) -> None:
        super().__init__(op, finish, outputs)
        self._reqs = list(requests)
        self._status = status

    def _test(self) -> bool:
        if not self._reqs:
            return True
        if self._status is not None:
            return bool(self._reqs[0].Test(self._status))
        return bool(mpi().Request.Testall(self._reqs))

    def _block(self) -> None:
        if not self._reqs:
            return
        if self._status is not None:
            self._reqs[0].Wait(self._status)
        else:
            mpi().Request.Waitall(self._reqs)


def _arr(t) -> np.ndarray:
    """The NumPy array sharing ``t``'s memory (``t`` is a contiguous CPU tensor)."""
    return t.detach().numpy()


class MPIBackend:
    """Collectives over one MPI communicator. Roots are ranks within this communicator."""

    name = "mpi"

    def __init__(self, comm) -> None:
        self.comm = comm
        MPI = mpi()
        self._ops = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
                     ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX, ReduceOp.BAND: MPI.BAND,
                     ReduceOp.BOR: MPI.BOR, ReduceOp.BXOR: MPI.BXOR}
        # bool tensors: MPI has no arithmetic on C_BOOL; PyTorch's meaning is logical
        self._bool_ops = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.BOR: MPI.LOR,
                          ReduceOp.PRODUCT: MPI.LAND, ReduceOp.MIN: MPI.LAND,
                          ReduceOp.BAND: MPI.LAND, ReduceOp.BXOR: MPI.LXOR}

    def _mop(self, op, a: np.ndarray):
        if a.dtype == np.bool_:
            return self._bool_ops[op]
        return self._ops[op]

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def _avg(self, a: np.ndarray, op, written):
        n = self.size()

        def finish():
            if op is ReduceOp.AVG:
                np.divide(a, n, out=a)
            _mark_written(written)
        return finish

    # -- collectives -----------------------------------------------------------------------
    def allreduce(self, t, op, blocking: bool = False) -> Work:
        a = _arr(t)
        if blocking:
            # the blocking call: Open MPI's tuned Allreduce is about twice as fast on large
            # buffers as its non-blocking (libnbc) Iallreduce followed by a wait
            self.comm.Allreduce(mpi().IN_PLACE, a, self._mop(op, a))
            return _MPIWork("all_reduce", [], self._avg(a, op, [t]), [t])
        req = self.comm.Iallreduce(mpi().IN_PLACE, a, self._mop(op, a))
        return _MPIWork("all_reduce", [req], self._avg(a, op, [t]), [t])

    def broadcast(self, t, root: int) -> Work:
        req = self.comm.Ibcast(_arr(t), root=root)
        written = [t] if self.rank() != root else []
        return _MPIWork("broadcast", [req], lambda: _mark_written(written), [t])

    def allgather_into(self, out, t, op_name="all_gather_into_tensor") -> Work:
        req = self.comm.Iallgather(_arr(t), _arr(out).reshape(-1))
        return _MPIWork(op_name, [req], lambda: _mark_written([out]), [out])

    def allgather(self, outs, t) -> Work:
        a = _arr(t)
        stage = np.empty((self.size(),) + a.shape, dtype=a.dtype)
        req = self.comm.Iallgather(a, stage)
        return _MPIWork("all_gather", [req], _scatter_rows(stage, outs), outs)

    def reduce_scatter_into(self, out, inp, op) -> Work:
        o = _arr(out)
        req = self.comm.Ireduce_scatter_block(_arr(inp).reshape(-1), o.reshape(-1),
                                              self._mop(op, o))
        return _MPIWork("reduce_scatter_tensor", [req], self._avg(o, op, [out]), [out])

    def reduce(self, t, root: int, op) -> Work:
        a = _arr(t)
        if self.rank() == root:
            req = self.comm.Ireduce(mpi().IN_PLACE, a, self._mop(op, a), root=root)
            return _MPIWork("reduce", [req], self._avg(a, op, [t]), [t])
        req = self.comm.Ireduce(a, None, self._mop(op, a), root=root)
        return _MPIWork("reduce", [req], None, [t])

    def gather(self, t, outs, root: int) -> Work:
        a = _arr(t)
        if self.rank() == root:
            stage = np.empty((self.size(),) + a.shape, dtype=a.dtype)
            req = self.comm.Igather(a, stage, root=root)
            return _MPIWork("gather", [req], _scatter_rows(stage, outs), outs)
        req = self.comm.Igather(a, None, root=root)
        return _MPIWork("gather", [req], None, [])

    def scatter(self, t, ins, root: int) -> Work:
        a = _arr(t)
        stage = None
        if self.rank() == root:
            stage = np.empty((self.size(),) + a.shape, dtype=a.dtype)
            for i, x in enumerate(ins):
                stage[i] = x.detach().numpy()
        req = self.comm.Iscatter(stage, a, root=root)
        # the staging buffer must outlive the request: the closure keeps it
        return _MPIWork("scatter", [req], lambda: (stage, _mark_written([t])), [t])

    def send(self, t, dst: int, tag: int) -> Work:
        req = self.comm.Isend(_arr(t), dest=dst, tag=tag)
        return _MPIWork("send", [req], None, [t])

    def recv(self, t, src: int | None, tag: int) -> Work:
        MPI = mpi()
        status = MPI.Status()
        req = self.comm.Irecv(_arr(t), source=MPI.ANY_SOURCE if src is None else src, tag=tag)
        work = _MPIWork("recv", [req], None, [t], status=status)

        def finish():
            work.source_rank = status.Get_source()
            _mark_written([t])
        work._finish = finish
        return work

    def barrier(self) -> Work:
        return _MPIWork("barrier", [self.comm.Ibarrier()])

    # -- groups ----------------------------------------------------------------------------
    def subgroup(self, ranks: list[int]):
        """Collective over this communicator: the backend for ``ranks`` (ranks of this
        communicator), or None on a rank outside it."""
        group = self.comm.Get_group().Incl(ranks)
        comm = self.comm.Create(group)
        group.Free()
        if comm == mpi().COMM_NULL:
            return None
        return MPIBackend(comm)

    def destroy(self) -> None:
        MPI = mpi()
        if self.comm not in (MPI.COMM_WORLD, MPI.COMM_SELF, MPI.COMM_NULL) and \
                not MPI.Is_finalized():
            self.comm.Free()


def _scatter_rows(stage: np.ndarray, outs):
    """A finish step copying row ``i`` of the staging buffer into ``outs[i]``."""
    def finish():
        for i, o in enumerate(outs):
            o.detach().numpy()[...] = stage[i]
        _mark_written(outs)
    return finish
