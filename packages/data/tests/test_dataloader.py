import collections
import pickle
import time

import numpy as np
import pytest
from _ember_data_test_helpers import (
    Dies,
    MissingKey,
    Raises,
    ReadsEnv,
    Sleeps,
    Squares,
    Stream,
    WorkerIds,
    init_fails,
    init_marks_env,
)

import ember.tensor as et
from ember.data import (
    BatchSampler,
    DataLoader,
    SequentialSampler,
    TensorDataset,
    default_collate,
    default_convert,
    get_worker_info,
)


def _flat(loader):
    out = []
    for idx, rows in loader:
        out.extend(idx.tolist())
        assert rows.numpy()[:, 1].tolist() == [i * i for i in idx.tolist()]
    return out


def test_single_process_batches_and_drop_last():
    loader = DataLoader(Squares(10), batch_size=4)
    assert len(loader) == 3
    assert _flat(loader) == list(range(10))
    assert len(DataLoader(Squares(10), batch_size=4, drop_last=True)) == 2
    assert [b[0].tolist() for b in DataLoader(Squares(10), batch_size=4, drop_last=True)] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
    ]


def test_shuffle_with_generator_is_reproducible_and_a_permutation():
    def order(seed):
        g = et.Generator()
        g.manual_seed(seed)
        return _flat(DataLoader(Squares(20), batch_size=3, shuffle=True, generator=g))

    assert order(1) == order(1)
    assert sorted(order(1)) == list(range(20)) and order(1) != list(range(20))


def test_batch_size_none_and_custom_batch_sampler():
    items = list(DataLoader(Squares(3), batch_size=None))
    assert items[1][0] == 1 and isinstance(items[1][1], et.Tensor)
    bs = BatchSampler(SequentialSampler(range(5)), 2, drop_last=False)
    assert [b[0].tolist() for b in DataLoader(Squares(5), batch_sampler=bs)] == [
        [0, 1],
        [2, 3],
        [4],
    ]
    with pytest.raises(ValueError):
        DataLoader(Squares(5), batch_sampler=bs, batch_size=2)
    with pytest.raises(ValueError):
        DataLoader(Squares(5), sampler=SequentialSampler(range(5)), shuffle=True)


def test_default_collate_structures():
    Point = collections.namedtuple("Point", "x y")
    out = default_collate([{"a": 1, "b": (2.5, "s"), "p": Point(1, np.float32(2))}] * 2)
    assert out["a"].dtype == et.int64 and out["a"].tolist() == [1, 1]
    assert out["b"][0].dtype == et.float64 and out["b"][1] == ("s", "s")
    assert isinstance(out["p"], Point) and out["p"].y.dtype == et.float32
    assert default_collate([True, False]).dtype == et.bool
    t = default_collate([et.ones((2, 3)), et.zeros((2, 3))])
    assert tuple(t.shape) == (2, 2, 3)
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="default_collate"):
        default_collate([object(), object()])
    assert isinstance(default_convert(np.arange(3)), et.Tensor)


def test_tensor_dataset_rows():
    x = et.arange(12).reshape(6, 2)
    y = et.arange(6, 12).reshape(6, 1)
    ds = TensorDataset(x, y)
    xb, yb = next(iter(DataLoader(ds, batch_size=4)))
    assert xb.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]] and yb.tolist() == [[6], [7], [8], [9]]
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(x, et.arange(5).reshape(5, 1))


def test_tensor_dataset_scalar_labels():
    ds = TensorDataset(et.arange(6).reshape(3, 2).float(), et.arange(3))
    xb, yb = next(iter(DataLoader(ds, batch_size=3)))
    assert yb.tolist() == [0, 1, 2] and tuple(xb.shape) == (3, 2)


def test_workers_preserve_order_and_match_single_process():
    ds = Squares(37, slow_every=3)
    loader = DataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=3)
    assert _flat(loader) == list(range(37))
    g1, g2 = et.Generator(), et.Generator()
    g1.manual_seed(5)
    g2.manual_seed(5)
    single = _flat(DataLoader(ds, batch_size=5, shuffle=True, generator=g1))
    multi = _flat(DataLoader(ds, batch_size=5, shuffle=True, generator=g2, num_workers=2))
    assert single == multi


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    g = et.Generator()
    g.manual_seed(0)
    rows = list(DataLoader(WorkerIds(), batch_size=None, num_workers=2, generator=g))
    ids = [r[0] for r in rows]
    assert ids == [0, 1] * 4  # round-robin, in order
    seeds = {r[0]: r[2] for r in rows}
    assert seeds[1] == seeds[0] + 1 and all(r[1] == 2 for r in rows)
    np_draws = {r[0]: r[3] for r in rows[:2]}
    assert np_draws[0] != np_draws[1]  # NumPy is seeded per worker
    envs = list(
        DataLoader(ReadsEnv(), batch_size=None, num_workers=2, worker_init_fn=init_marks_env)
    )
    assert envs == ["0", "1", "0", "1"]


def test_worker_exception_keeps_type_and_message():
    loader = DataLoader(Raises(10, bad=5), batch_size=2, num_workers=2)
    with pytest.raises(ValueError, match="bad item 5") as info:
        list(loader)
    assert "DataLoader worker process" in str(info.value)
    with pytest.raises(KeyError, match="no-such-key"):
        list(DataLoader(MissingKey(), batch_size=2, num_workers=1))
    with pytest.raises(RuntimeError, match="init failed in"):
        list(DataLoader(Squares(4), batch_size=2, num_workers=1, worker_init_fn=init_fails))


def test_worker_death_is_reported_not_hung():
    start = time.monotonic()
    with pytest.raises(
        RuntimeError, match=r"DataLoader worker \d \(pid \d+\) exited unexpectedly with exit code 7"
    ):
        list(DataLoader(Dies(8, bad=3), batch_size=1, num_workers=2))
    assert time.monotonic() - start < 20


def test_timeout_raises():
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        next(iter(DataLoader(Sleeps(), batch_size=1, num_workers=1, timeout=0.5)))


def test_iterable_dataset_sharded_across_workers():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    out = [b.tolist() for b in DataLoader(Stream(10), batch_size=2, num_workers=2)]
    # worker 0 streams evens, worker 1 odds; batches alternate between workers
    assert out == [[0, 2], [1, 3], [4, 6], [5, 7], [8], [9]]
    assert sorted(sum(out, [])) == list(range(10))
    assert len(DataLoader(Stream(10), batch_size=3, drop_last=True)) == 3
    with pytest.raises(ValueError):
        DataLoader(Stream(3), shuffle=True)


def test_persistent_workers_survive_epochs():
    loader = DataLoader(WorkerIds(), batch_size=None, num_workers=2, persistent_workers=True)
    pids1 = {r[4] for r in loader}
    pids2 = {r[4] for r in loader}
    assert pids1 == pids2 and len(pids1) == 2
    it = iter(loader)
    next(it)  # abandon mid-epoch
    assert len(list(loader)) == 8  # a fresh epoch, no leftovers
    p_loader = DataLoader(Stream(6), batch_size=2, num_workers=2, persistent_workers=True)
    assert sorted(sum((b.tolist() for b in p_loader), [])) == list(range(6))
    assert sorted(sum((b.tolist() for b in p_loader), [])) == list(range(6))


def test_argument_validation():
    with pytest.raises(ValueError):
        DataLoader(Squares(3), num_workers=-1)
    with pytest.raises(ValueError):
        DataLoader(Squares(3), prefetch_factor=2)
    with pytest.raises(ValueError):
        DataLoader(Squares(3), persistent_workers=True)
    DataLoader(Squares(3), pin_memory=True)  # accepted, ignored on CPU


def test_loader_pickles_its_dataset_for_workers():
    assert pickle.loads(pickle.dumps(Squares(3)))[2][0] == 2
