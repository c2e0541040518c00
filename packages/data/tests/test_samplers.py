import numpy as np
import pytest

import ember.tensor as et
from ember.data import (
    BatchSampler,
    BucketBatchSampler,
    ConcatDataset,
    DataLoader,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    WeightedRandomSampler,
    random_split,
)


def _gen(seed):
    g = et.Generator()
    g.manual_seed(seed)
    return g


def test_sequential_and_random_sampler():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    a = list(RandomSampler(range(10), generator=_gen(3)))
    assert a == list(RandomSampler(range(10), generator=_gen(3))) and sorted(a) == list(range(10))
    r = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=_gen(0)))
    assert len(r) == 50 and set(r) <= {0, 1, 2}
    more = list(RandomSampler(range(3), num_samples=7, generator=_gen(0)))
    assert len(more) == 7 and sorted(more[:3]) == [0, 1, 2]
    et.manual_seed(11)
    x = list(RandomSampler(range(10)))
    et.manual_seed(11)
    assert list(RandomSampler(range(10))) == x  # the global seed pins it
    with pytest.raises(ValueError):
        RandomSampler(range(3), num_samples=0)


def test_subset_and_weighted_samplers():
    s = list(SubsetRandomSampler([10, 20, 30], generator=_gen(1)))
    assert sorted(s) == [10, 20, 30]
    w = list(WeightedRandomSampler([0.0, 1.0, 0.0], 20, generator=_gen(0)))
    assert w == [1] * 20
    w2 = list(WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=_gen(0)))
    assert sorted(w2) == [0, 1, 2]
    with pytest.raises(ValueError):
        WeightedRandomSampler([1.0], 0)


def test_batch_sampler_len_and_drop_last():
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert list(BatchSampler(range(10), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    with pytest.raises(ValueError):
        BatchSampler(range(3), 0, False)


def test_distributed_sampler_partitions_and_pads():
    n, r = 10, 3
    shards = [
        list(DistributedSampler(range(n), num_replicas=r, rank=k, shuffle=False)) for k in range(r)
    ]
    assert shards == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    shuffled = [
        list(DistributedSampler(range(n), num_replicas=r, rank=k, seed=4)) for k in range(r)
    ]
    assert sorted(set(sum(shuffled, []))) == list(range(n)) and all(len(s) == 4 for s in shuffled)
    dropped = [
        list(DistributedSampler(range(n), num_replicas=r, rank=k, drop_last=True)) for k in range(r)
    ]
    assert all(len(s) == 3 for s in dropped) and len(set(sum(dropped, []))) == 9
    s = DistributedSampler(range(n), num_replicas=2, rank=0)
    e0 = list(s)
    assert list(s) == e0
    s.set_epoch(1)
    assert list(s) != e0
    with pytest.raises(ValueError):
        DistributedSampler(range(n), num_replicas=2, rank=2)


def test_bucket_batch_sampler_buckets_and_covers_everything():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 200, size=5000)
    s = BucketBatchSampler(lengths, batch_size=16, seed=0)
    batches = list(s)
    assert len(batches) == len(s)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(5000))
    for b in batches:
        lb = lengths[b]
        assert list(lb) == sorted(lb, reverse=True)  # descending for pack_padded_sequence
    spread = np.mean([lengths[b].max() - lengths[b].min() for b in batches])
    assert spread < 3
    assert batches == list(BucketBatchSampler(lengths, batch_size=16, seed=0))
    s.set_epoch(1)
    assert list(s) != batches
    g1 = list(BucketBatchSampler(lengths, 16, generator=_gen(2)))
    assert g1 == list(BucketBatchSampler(lengths, 16, generator=_gen(2)))


def test_bucket_batch_sampler_sharding_and_drop_last():
    lengths = list(range(103))
    shards = [
        list(BucketBatchSampler(lengths, 10, seed=1, num_replicas=2, rank=k)) for k in range(2)
    ]
    assert len(shards[0]) == len(shards[1]) == 6  # 11 batches padded to 12
    assert set(map(tuple, shards[0])).isdisjoint(map(tuple, shards[1][:5]))
    covered = {i for s in shards for b in s for i in b}
    assert covered == set(range(103))
    dl = list(BucketBatchSampler(lengths, 10, seed=1, drop_last=True))
    assert all(len(b) == 10 for b in dl) and len(dl) == len(
        BucketBatchSampler(lengths, 10, drop_last=True)
    )
    ev = list(BucketBatchSampler(lengths, 10, shuffle=False, sort_within_batch=False))
    assert ev[0] == list(range(10))
    with pytest.raises(ValueError, match="seed"):
        BucketBatchSampler(lengths, 10, num_replicas=2, rank=0)


def test_bucket_batch_sampler_with_dataloader_workers():
    lengths = [3, 1, 2, 5, 4, 6, 2, 1]
    data = [np.arange(n) for n in lengths]
    loader = DataLoader(
        data, batch_sampler=BucketBatchSampler(lengths, 2, seed=0), collate_fn=list, num_workers=2
    )
    got = [[len(a) for a in b] for b in loader]
    assert sorted(sum(got, [])) == sorted(lengths)
    assert all(b == sorted(b, reverse=True) for b in got)


def test_concat_subset_random_split():
    c = ConcatDataset([range(3), range(10, 12)])
    assert len(c) == 5 and c[3] == 10 and c[-1] == 11 and c.cumulative_sizes == [3, 5]
    with pytest.raises(IndexError):
        c[5]
    s = Subset(range(10, 20), [2, 4])
    assert list(s[i] for i in range(len(s))) == [12, 14]
    a, b = random_split(range(10), [3, 7], generator=_gen(0))
    assert (
        len(a) == 3 and len(b) == 7 and sorted(list(a.indices) + list(b.indices)) == list(range(10))
    )
    parts = random_split(range(10), [0.5, 0.3, 0.2], generator=_gen(0))
    assert [len(p) for p in parts] == [5, 3, 2]
    parts = random_split(range(11), [0.5, 0.5], generator=_gen(0))
    assert [len(p) for p in parts] == [6, 5]
    with pytest.raises(ValueError):
        random_split(range(10), [3, 3])
