"""API semantics and errors in one process (world size 1): PyTorch's exception types, with
messages naming the op."""
from datetime import timedelta

import numpy as np
import pytest
from _ember_distributed_test_helpers import needs_mpi

import ember.distributed as dist
import ember.tensor as et
from ember.distributed import ReduceOp

pytestmark = needs_mpi


@pytest.fixture
def pg():
    dist.init_process_group("mpi")
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_not_initialized():
    assert not dist.is_initialized()
    assert dist.is_available() and dist.is_mpi_available()
    for call in (dist.get_rank, dist.get_world_size, dist.get_backend,
                 lambda: dist.all_reduce(et.ones(2)), dist.destroy_process_group):
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            call()


def test_init_queries_and_destroy(pg):
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "mpi")
    assert dist.GroupMember.WORLD is not None and dist.GroupMember.WORLD.size() == 1
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("mpi")
    dist.destroy_process_group()
    assert not dist.is_initialized() and dist.GroupMember.WORLD is None
    dist.init_process_group(backend="MPI", timeout=timedelta(seconds=30))  # again, by any case
    assert dist.get_backend() == dist.Backend.MPI


def test_init_errors():
    with pytest.raises(ValueError, match="Invalid backend: 'gloo'"):
        dist.init_process_group("gloo")
    with pytest.raises(TypeError, match="timedelta"):
        dist.init_process_group("mpi", timeout=30)
    with pytest.raises(ValueError, match="world_size=4 disagrees with the MPI launcher"):
        dist.init_process_group("mpi", world_size=4, rank=0)
    with pytest.raises(ValueError, match="init_method"):
        dist.init_process_group("mpi", init_method="tcp://10.0.0.1:23456")
    assert not dist.is_initialized()


def test_env_rank_must_agree(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ValueError, match="world_size=3 disagrees"):
        dist.init_process_group("mpi")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("RANK", "0")
    dist.init_process_group("mpi")
    assert dist.get_world_size() == 1
    dist.destroy_process_group()


def test_reduce_op_names():
    assert [op.name for op in ReduceOp][:5] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]


@pytest.mark.parametrize("op", [ReduceOp.SUM, ReduceOp.AVG, ReduceOp.PRODUCT, ReduceOp.MIN,
                                ReduceOp.MAX])
def test_all_reduce_one_process_in_place(pg, op):
    a = np.arange(6.0).reshape(2, 3)
    t = et.from_numpy(a.copy())
    arr, ptr = t.numpy(), t.data_ptr()
    dist.all_reduce(t, op=op)
    assert t.data_ptr() == ptr and t.numpy() is arr  # no copy, no new buffer
    np.testing.assert_array_equal(t.numpy(), a)  # the reduction of one process is itself


def test_numpy_shares_memory_with_a_slice_of_storage(pg):
    base = et.zeros(4, 3, dtype=et.float64)
    row = base[2]  # a contiguous view into a larger storage
    dist.broadcast(row, src=0)
    row.numpy()[...] = 7.0
    np.testing.assert_array_equal(base.numpy()[2], np.full(3, 7.0))


def test_async_work(pg):
    t = et.ones(3)
    work = dist.all_reduce(t, async_op=True)
    assert isinstance(work, dist.Work)
    assert work.wait() is True and work.is_completed() and work.is_success()
    assert work.result()[0] is t and work.exception() is None
    assert dist.all_reduce(t) is None  # synchronous calls return None
    assert dist.barrier(async_op=True).wait()


def test_collectives_one_process(pg):
    x = et.arange(4.0)
    outs = [et.zeros(4)]
    dist.all_gather(outs, x)
    np.testing.assert_array_equal(outs[0].numpy(), x.numpy())
    big = et.zeros(4)
    dist.all_gather_into_tensor(big, x)
    np.testing.assert_array_equal(big.numpy(), x.numpy())
    out = et.zeros(4)
    dist.reduce_scatter_tensor(out, x, op=ReduceOp.MAX)
    np.testing.assert_array_equal(out.numpy(), x.numpy())
    g = [et.zeros(4)]
    dist.gather(x, g, dst=0)
    np.testing.assert_array_equal(g[0].numpy(), x.numpy())
    s = et.zeros(4)
    dist.scatter(s, [x * 2], src=0)
    np.testing.assert_array_equal(s.numpy(), 2 * x.numpy())
    y = x.clone()
    dist.reduce(y, dst=0, op=ReduceOp.PRODUCT)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_type_errors_name_the_op(pg):
    with pytest.raises(TypeError, match="all_reduce: .*`tensor` of type Tensor"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(TypeError, match="all_gather: .*`tensor_list` of type List"):
        dist.all_gather(et.zeros(2), et.zeros(2))
    with pytest.raises(TypeError, match="all_reduce: op must be a ReduceOp"):
        dist.all_reduce(et.ones(2), op="sum")
    with pytest.raises(TypeError, match="broadcast: src must be an int"):
        dist.broadcast(et.ones(2), src=0.0)


def test_runtime_errors_name_the_op(pg):
    nc = et.zeros(3, 4).t()
    with pytest.raises(RuntimeError, match="all_reduce: input tensor has to be contiguous"):
        dist.all_reduce(nc)
    with pytest.raises(RuntimeError, match="all_reduce: ReduceOp.AVG needs a floating point"):
        dist.all_reduce(et.ones(2, dtype=et.int64), op=ReduceOp.AVG)
    with pytest.raises(RuntimeError, match="all_gather: tensor_list has 2 tensors"):
        dist.all_gather([et.zeros(2), et.zeros(2)], et.zeros(2))
    with pytest.raises(RuntimeError, match=r"all_gather: tensor_list\[0\] has shape \(3,\)"):
        dist.all_gather([et.zeros(3)], et.zeros(2))
    with pytest.raises(RuntimeError, match=r"all_gather: tensor_list\[0\] has dtype"):
        dist.all_gather([et.zeros(2, dtype=et.float64)], et.zeros(2))
    with pytest.raises(RuntimeError, match="all_gather_into_tensor: output tensor size"):
        dist.all_gather_into_tensor(et.zeros(3), et.zeros(2))
    with pytest.raises(RuntimeError, match="all_gather_into_tensor: output tensor must have"):
        dist.all_gather_into_tensor(et.zeros(2, dtype=et.float64), et.zeros(2))
    with pytest.raises(RuntimeError, match="reduce_scatter_tensor: input tensor must be"):
        dist.reduce_scatter_tensor(et.zeros(2), et.zeros(3))
    with pytest.raises(RuntimeError, match="broadcast: invalid src rank 1"):
        dist.broadcast(et.ones(2), src=1)
    with pytest.raises(RuntimeError, match="reduce: invalid dst rank 5"):
        dist.reduce(et.ones(2), dst=5)


def test_value_errors(pg):
    with pytest.raises(ValueError, match="Invalid destination rank: destination rank should "
                                         "not be the same as the rank of the current process"):
        dist.send(et.ones(2), dst=0)
    with pytest.raises(ValueError, match="Invalid source rank"):
        dist.recv(et.ones(2), src=0)
    with pytest.raises(ValueError, match="Argument ``gather_list`` must be specified on "
                                         "destination rank"):
        dist.gather(et.ones(2), dst=0)
    with pytest.raises(ValueError, match="Argument ``scatter_list`` must be specified on "
                                         "source rank"):
        dist.scatter(et.ones(2), src=0)
    with pytest.raises(ValueError, match="tag must be a non-negative int"):
        dist.isend(et.ones(2), dst=0, tag=-1)
    with pytest.raises(ValueError, match="new_group: rank 3 is out of range"):
        dist.new_group([0, 3])
    with pytest.raises(ValueError, match="new_group: duplicate ranks"):
        dist.new_group([0, 0])


def test_new_group(pg):
    g = dist.new_group([0])
    assert dist.get_rank(g) == 0 and dist.get_world_size(g) == 1
    assert dist.get_process_group_ranks(g) == [0]
    assert dist.get_group_rank(g, 0) == 0 and dist.get_global_rank(g, 0) == 0
    t = et.full((2,), 3.0)
    dist.all_reduce(t, op=ReduceOp.SUM, group=g)
    np.testing.assert_array_equal(t.numpy(), [3.0, 3.0])
    dist.destroy_process_group(g)
    with pytest.raises(ValueError, match="not a live process group"):
        dist.destroy_process_group(g)


def test_non_member_group_warns_and_skips(pg):
    t = et.ones(2)
    with pytest.warns(UserWarning, match="Running all_reduce on global rank 0 which does not "
                                         "belong to the given group"):
        assert dist.all_reduce(t, group=dist.GroupMember.NON_GROUP_MEMBER) is None
    assert dist.get_rank(dist.GroupMember.NON_GROUP_MEMBER) == -1


def test_in_place_collectives_bump_the_version(pg):
    w = et.tensor([1.0, 2.0], requires_grad=True)
    t = et.tensor([3.0, 4.0])
    y = (w * t).sum()  # mul saves t for backward
    before = t._version
    dist.all_reduce(t)
    assert t._version == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
