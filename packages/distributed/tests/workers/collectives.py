"""Run under the launcher with 2 processes: every collective on known inputs; each rank saves
what it got to OUTDIR/rank<r>.npz for the test to compare with a NumPy oracle."""
import sys

import numpy as np

import ember.distributed as dist
import ember.tensor as et
from ember.distributed import ReduceOp


def inputs(r):
    """The per-rank inputs (the test rebuilds them for its oracle)."""
    rng = np.random.default_rng(100 + r)
    return {"x": rng.standard_normal((3, 4)), "i": rng.integers(-5, 6, (5,)),
            "p": rng.uniform(0.5, 1.5, (4,))}


def main(out):
    dist.init_process_group("mpi")
    r, n = dist.get_rank(), dist.get_world_size()
    inp = inputs(r)
    res = {"world_size": np.array(n), "backend": np.array(dist.get_backend())}

    for name in ("SUM", "AVG", "MAX", "MIN"):
        t = et.from_numpy(inp["x"].copy())
        ptr = t.data_ptr()
        dist.all_reduce(t, op=getattr(ReduceOp, name))
        assert t.data_ptr() == ptr  # in place
        res[f"all_reduce_{name}"] = t.numpy().copy()
    t = et.from_numpy(inp["p"].copy())
    dist.all_reduce(t, ReduceOp.PRODUCT)
    res["all_reduce_PRODUCT"] = t.numpy().copy()
    t = et.from_numpy(inp["i"].copy())
    dist.all_reduce(t)
    res["all_reduce_int"] = t.numpy().copy()
    for name in ("SUM", "MIN"):  # bool: logical or / and
        t = et.tensor([True, False, r == 0, r == 1])
        dist.all_reduce(t, op=getattr(ReduceOp, name))
        res[f"all_reduce_bool_{name}"] = t.numpy().copy()
    # a parameter-like tensor that requires grad is reduced in place too
    w = et.tensor(inp["p"].copy(), requires_grad=True)
    dist.all_reduce(w)
    res["all_reduce_requires_grad"] = w.detach().numpy().copy()

    # asynchronous: the work handle completes the op
    t = et.from_numpy(inp["x"].copy())
    work = dist.all_reduce(t, op=ReduceOp.AVG, async_op=True)
    res["async_wait"] = np.array(work.wait())
    res["async_completed"] = np.array(work.is_completed())
    res["async_all_reduce"] = t.numpy().copy()
    res["async_result_is_tensor"] = np.array(work.result()[0] is t)

    t = et.from_numpy(inp["x"].copy())
    dist.broadcast(t, src=1)
    res["broadcast"] = t.numpy().copy()
    t = et.from_numpy(inp["x"].copy())
    dist.broadcast(t, src=0, async_op=True).wait()
    res["broadcast_async"] = t.numpy().copy()

    outs = [et.zeros(3, 4, dtype=et.float64) for _ in range(n)]
    dist.all_gather(outs, et.from_numpy(inp["x"].copy()))
    res["all_gather"] = np.stack([o.numpy() for o in outs])
    outs = [et.zeros(3, 4, dtype=et.float64) for _ in range(n)]
    w = dist.all_gather(outs, et.from_numpy(inp["x"].copy()), async_op=True)
    w.wait()
    res["all_gather_async"] = np.stack([o.numpy() for o in outs])

    big = et.zeros(n * 3, 4, dtype=et.float64)
    dist.all_gather_into_tensor(big, et.from_numpy(inp["x"].copy()))
    res["all_gather_into_tensor"] = big.numpy().copy()
    stacked = et.zeros(n, 3, 4, dtype=et.float64)
    dist.all_gather_into_tensor(stacked, et.from_numpy(inp["x"].copy()))
    res["all_gather_into_tensor_stacked"] = stacked.numpy().copy()

    src = np.arange(n * 2 * 4, dtype=np.float64).reshape(n * 2, 4) * (r + 1)
    for name in ("SUM", "AVG", "MAX"):
        o = et.zeros(2, 4, dtype=et.float64)
        dist.reduce_scatter_tensor(o, et.from_numpy(src.copy()), op=getattr(ReduceOp, name))
        res[f"reduce_scatter_{name}"] = o.numpy().copy()

    t = et.from_numpy(inp["x"].copy())
    dist.reduce(t, dst=1, op=ReduceOp.SUM)
    res["reduce"] = t.numpy().copy()

    t = et.from_numpy(inp["x"].copy())
    glist = [et.zeros(3, 4, dtype=et.float64) for _ in range(n)] if r == 0 else None
    dist.gather(t, glist, dst=0)
    if r == 0:
        res["gather"] = np.stack([g.numpy() for g in glist])

    t = et.zeros(4, dtype=et.float64)
    slist = [et.full((4,), 10.0 * k + 1) .double() for k in range(n)] if r == 1 else None
    dist.scatter(t, slist, src=1)
    res["scatter"] = t.numpy().copy()

    # point to point: blocking, then both directions at once without blocking
    t = et.from_numpy(inp["x"].copy())
    if r == 0:
        dist.send(t, dst=1, tag=3)
    else:
        got = et.zeros(3, 4, dtype=et.float64)
        res["recv_from"] = np.array(dist.recv(got, tag=3))
        res["recv"] = got.numpy().copy()
    other = 1 - r
    box = et.zeros(3, 4, dtype=et.float64)
    ws = [dist.isend(et.from_numpy(inp["x"].copy()), dst=other),
          dist.irecv(box, src=other)]
    for w in ws:
        w.wait()
    res["irecv"] = box.numpy().copy()

    dist.barrier()
    dist.barrier(async_op=True).wait()

    # groups: a one-rank group and a group of everybody
    solo = dist.new_group([1])
    t = et.from_numpy(inp["x"].copy())
    if r == 1:
        res["solo_rank"] = np.array(dist.get_rank(solo))
        res["solo_size"] = np.array(dist.get_world_size(solo))
        dist.all_reduce(t, group=solo)
        res["solo_all_reduce"] = t.numpy().copy()
    else:
        res["solo_is_non_member"] = np.array(solo is dist.GroupMember.NON_GROUP_MEMBER)
        res["solo_rank"] = np.array(dist.get_rank(solo))
    both = dist.new_group([0, 1])
    t = et.from_numpy(inp["x"].copy())
    dist.all_reduce(t, op=ReduceOp.MAX, group=both)
    res["group_all_reduce"] = t.numpy().copy()
    t = et.from_numpy(inp["x"].copy())
    dist.broadcast(t, src=1, group=both)
    res["group_broadcast"] = t.numpy().copy()

    dist.destroy_process_group()
    res["initialized_after_destroy"] = np.array(dist.is_initialized())
    np.savez(f"{out}/rank{r}.npz", **res)


if __name__ == "__main__":
    main(sys.argv[1])
