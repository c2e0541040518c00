"""The NCCL backend: CUDA tensors through CuPy's NCCL bindings (``cupy.cuda.nccl``).

Operations are enqueued on CuPy's current stream on the tensors' device pointers
(``Tensor.data_ptr()``), in place; a Work handle waits on a CUDA event recorded after the
operation. NCCL's unique id is handed from rank 0 to the others over MPI, the one transport the
process group already has (``mpiexec`` starts the processes). CuPy is imported only here, and
only when an NCCL group is created.
"""
from __future__ import annotations

from ._mpi import mpi
from ._work import ReduceOp, Work, _mark_written

__all__ = ["NCCLBackend", "nccl_available"]


def _nccl():
    try:
        from cupy.cuda import nccl
    except ImportError as exc:
        raise RuntimeError("the nccl backend needs CuPy built with NCCL: "
                           "pip install 'ember-distributed[nccl]'") from exc
    if not getattr(nccl, "available", True):
        raise RuntimeError("CuPy was built without NCCL support; the nccl backend is unavailable")
    return nccl


def nccl_available() -> bool:
    try:
        _nccl()
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


class _NCCLWork(Work):
    def __init__(self, op, finish=None, outputs=()) -> None:
        super().__init__(op, finish, outputs)
        import cupy

        self._event = cupy.cuda.Event(disable_timing=True)
        self._event.record(cupy.cuda.get_current_stream())

    def _test(self) -> bool:
        return bool(self._event.done)

    def _block(self) -> None:
        self._event.synchronize()


class NCCLBackend:
    """Collectives over one NCCL communicator; ``comm`` is the MPI communicator of the same
    ranks (None for a single process), used to share NCCL's unique id."""

    name = "nccl"

    def __init__(self, comm, rank: int, size: int) -> None:
        nccl = _nccl()
        self._mod = nccl
        self.comm = comm
        self._rank, self._size = rank, size
        uid = nccl.get_unique_id() if rank == 0 else None
        if comm is not None:
            uid = comm.bcast(uid, root=0)
        self.nccl = nccl.NcclCommunicator(size, uid, rank)
        self._ops = {ReduceOp.SUM: nccl.NCCL_SUM, ReduceOp.AVG: nccl.NCCL_SUM,
                     ReduceOp.PRODUCT: nccl.NCCL_PROD, ReduceOp.MIN: nccl.NCCL_MIN,
                     ReduceOp.MAX: nccl.NCCL_MAX}
        self._types = {"float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32,
                       "float64": nccl.NCCL_FLOAT64, "int8": nccl.NCCL_INT8,
                       "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
                       "int64": nccl.NCCL_INT64, "bool": nccl.NCCL_UINT8}

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def _type(self, t, op_name: str):
        name = str(t.dtype).rsplit(".", 1)[-1]
        if name not in self._types:
            raise RuntimeError(f"{op_name}: the nccl backend does not support dtype {t.dtype}")
        return self._types[name]

    def _op(self, op, op_name: str):
        if op not in self._ops:
            raise RuntimeError(f"{op_name}: the nccl backend does not support {op}")
        return self._ops[op]

    @staticmethod
    def _stream() -> int:
        import cupy

        return cupy.cuda.get_current_stream().ptr

    def _finish(self, op, written):
        n = self._size

        def finish():
            if op is ReduceOp.AVG:
                for t in written:
                    t.detach().div_(n)  # an ember op: bumps the version itself
            else:
                _mark_written(written)
        return finish

    # -- collectives -----------------------------------------------------------------------
    def allreduce(self, t, op) -> Work:
        p = t.data_ptr()
        self.nccl.allReduce(p, p, t.numel(), self._type(t, "all_reduce"),
                            self._op(op, "all_reduce"), self._stream())
        return _NCCLWork("all_reduce", self._finish(op, [t]), [t])

    def broadcast(self, t, root: int) -> Work:
        p = t.data_ptr()
        self.nccl.broadcast(p, p, t.numel(), self._type(t, "broadcast"), root, self._stream())
        return _NCCLWork("broadcast", self._finish(None, [t]), [t])

    def allgather_into(self, out, t, op_name="all_gather_into_tensor") -> Work:
        self.nccl.allGather(t.data_ptr(), out.data_ptr(), t.numel(), self._type(t, op_name),
                            self._stream())
        return _NCCLWork(op_name, self._finish(None, [out]), [out])

    def allgather(self, outs, t) -> Work:
        import ember.tensor as et

        stage = et.empty((self._size,) + tuple(t.shape), dtype=t.dtype, device=t.device)
        self.allgather_into(stage, t, "all_gather")
        for i, o in enumerate(outs):
            o.detach().copy_(stage[i])
        return _NCCLWork("all_gather", None, outs)

    def reduce_scatter_into(self, out, inp, op) -> Work:
        self.nccl.reduceScatter(inp.data_ptr(), out.data_ptr(), out.numel(),
                                self._type(out, "reduce_scatter_tensor"),
                                self._op(op, "reduce_scatter_tensor"), self._stream())
        return _NCCLWork("reduce_scatter_tensor", self._finish(op, [out]), [out])

    def reduce(self, t, root: int, op) -> Work:
        p = t.data_ptr()
        self.nccl.reduce(p, p, t.numel(), self._type(t, "reduce"), self._op(op, "reduce"),
                         root, self._stream())
        mine = [t] if self._rank == root else []
        return _NCCLWork("reduce", self._finish(op, mine), [t])

    def gather(self, t, outs, root: int) -> Work:
        nccl, s, n, typ = self._mod, self._stream(), t.numel(), self._type(t, "gather")
        nccl.groupStart()
        if self._rank == root:
            for r, o in enumerate(outs):
                if r == root:
                    o.detach().copy_(t)
                else:
                    self.nccl.recv(o.data_ptr(), n, typ, r, s)
        else:
            self.nccl.send(t.data_ptr(), n, typ, root, s)
        nccl.groupEnd()
        return _NCCLWork("gather", self._finish(None, outs or []), outs or [])

    def scatter(self, t, ins, root: int) -> Work:
        nccl, s, n, typ = self._mod, self._stream(), t.numel(), self._type(t, "scatter")
        nccl.groupStart()
        if self._rank == root:
            for r, x in enumerate(ins):
                if r == root:
                    t.detach().copy_(x)
                else:
                    self.nccl.send(x.data_ptr(), n, typ, r, s)
        else:
            self.nccl.recv(t.data_ptr(), n, typ, root, s)
        nccl.groupEnd()
        return _NCCLWork("scatter", self._finish(None, [t]), [t])

    def send(self, t, dst: int, tag: int) -> Work:
        self.nccl.send(t.data_ptr(), t.numel(), self._type(t, "send"), dst, self._stream())
        return _NCCLWork("send", None, [t])

    def recv(self, t, src: int | None, tag: int) -> Work:
        if src is None:
            raise RuntimeError("recv: the nccl backend needs an explicit src rank")
        self.nccl.recv(t.data_ptr(), t.numel(), self._type(t, "recv"), src, self._stream())
        work = _NCCLWork("recv", self._finish(None, [t]), [t])
        work.source_rank = src
        return work

    def barrier(self) -> Work:
        import cupy

        import ember.tensor as et

        dev = f"cuda:{cupy.cuda.Device().id}"
        return self.allreduce(et.zeros(1, device=dev), _sum())

    # -- groups ----------------------------------------------------------------------------
    def subgroup(self, ranks: list[int]):
        sub = None
        if self.comm is not None:
            group = self.comm.Get_group().Incl(ranks)
            sub = self.comm.Create(group)
            group.Free()
            if sub == mpi().COMM_NULL:
                return None
        elif self._rank not in ranks:
            return None
        return NCCLBackend(sub, ranks.index(self._rank), len(ranks))

    def destroy(self) -> None:
        self.nccl.destroy()


def _sum():
    return ReduceOp.SUM
