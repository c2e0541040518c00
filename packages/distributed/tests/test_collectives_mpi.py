"""Every collective on 2 processes (mpiexec through the launcher) against a NumPy oracle."""
import numpy as np
import pytest
from _ember_distributed_test_helpers import launch, load_worker, needs_mpi

pytestmark = needs_mpi
N = 2


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch("collectives.py", tmp_path_factory.mktemp("collectives"), N)


@pytest.fixture(scope="module")
def inp():
    w = load_worker("collectives")
    return [w.inputs(r) for r in range(N)]


def xs(inp, key="x"):
    return np.stack([inp[r][key] for r in range(N)])


def test_world(ranks):
    for res in ranks:
        assert int(res["world_size"]) == N
        assert str(res["backend"]) == "mpi"
        assert not bool(res["initialized_after_destroy"])


@pytest.mark.parametrize("name,oracle", [
    ("SUM", lambda a: a.sum(0)), ("AVG", lambda a: a.mean(0)),
    ("MAX", lambda a: a.max(0)), ("MIN", lambda a: a.min(0))])
def test_all_reduce(ranks, inp, name, oracle):
    for res in ranks:
        np.testing.assert_allclose(res[f"all_reduce_{name}"], oracle(xs(inp)), rtol=1e-12)


def test_all_reduce_product_int_and_requires_grad(ranks, inp):
    for res in ranks:
        np.testing.assert_allclose(res["all_reduce_PRODUCT"], xs(inp, "p").prod(0), rtol=1e-12)
        assert res["all_reduce_int"].dtype == np.int64
        np.testing.assert_array_equal(res["all_reduce_int"], xs(inp, "i").sum(0))
        np.testing.assert_allclose(res["all_reduce_requires_grad"], xs(inp, "p").sum(0))
        bools = np.array([[True, False, r == 0, r == 1] for r in range(N)])
        np.testing.assert_array_equal(res["all_reduce_bool_SUM"], bools.any(0))
        np.testing.assert_array_equal(res["all_reduce_bool_MIN"], bools.all(0))


def test_async_all_reduce(ranks, inp):
    for res in ranks:
        assert bool(res["async_wait"]) and bool(res["async_completed"])
        assert bool(res["async_result_is_tensor"])
        np.testing.assert_allclose(res["async_all_reduce"], xs(inp).mean(0), rtol=1e-12)


def test_broadcast(ranks, inp):
    for res in ranks:
        np.testing.assert_array_equal(res["broadcast"], inp[1]["x"])
        np.testing.assert_array_equal(res["broadcast_async"], inp[0]["x"])
        np.testing.assert_array_equal(res["group_broadcast"], inp[1]["x"])


def test_all_gather(ranks, inp):
    for res in ranks:
        np.testing.assert_array_equal(res["all_gather"], xs(inp))
        np.testing.assert_array_equal(res["all_gather_async"], xs(inp))
        np.testing.assert_array_equal(res["all_gather_into_tensor"], np.concatenate(xs(inp)))
        np.testing.assert_array_equal(res["all_gather_into_tensor_stacked"], xs(inp))


@pytest.mark.parametrize("name,oracle", [
    ("SUM", lambda a: a.sum(0)), ("AVG", lambda a: a.mean(0)), ("MAX", lambda a: a.max(0))])
def test_reduce_scatter_tensor(ranks, name, oracle):
    src = np.stack([np.arange(N * 2 * 4, dtype=np.float64).reshape(N * 2, 4) * (r + 1)
                    for r in range(N)])
    reduced = oracle(src)
    for r, res in enumerate(ranks):
        np.testing.assert_allclose(res[f"reduce_scatter_{name}"], reduced[2 * r:2 * r + 2])


def test_reduce_gather_scatter(ranks, inp):
    np.testing.assert_allclose(ranks[1]["reduce"], xs(inp).sum(0), rtol=1e-12)
    np.testing.assert_array_equal(ranks[0]["gather"], xs(inp))
    assert "gather" not in ranks[1]
    for r, res in enumerate(ranks):
        np.testing.assert_array_equal(res["scatter"], np.full(4, 10.0 * r + 1))


def test_send_recv(ranks, inp):
    assert int(ranks[1]["recv_from"]) == 0
    np.testing.assert_array_equal(ranks[1]["recv"], inp[0]["x"])
    for r, res in enumerate(ranks):
        np.testing.assert_array_equal(res["irecv"], inp[1 - r]["x"])


def test_groups(ranks, inp):
    assert bool(ranks[0]["solo_is_non_member"]) and int(ranks[0]["solo_rank"]) == -1
    assert int(ranks[1]["solo_rank"]) == 0 and int(ranks[1]["solo_size"]) == 1
    np.testing.assert_array_equal(ranks[1]["solo_all_reduce"], inp[1]["x"])
    for res in ranks:
        np.testing.assert_array_equal(res["group_all_reduce"], xs(inp).max(0))
