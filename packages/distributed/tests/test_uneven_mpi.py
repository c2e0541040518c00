"""Uneven data on 2 processes: 13 rows sharded by DistributedSampler with PyTorch's padding
(drop_last=False) or cut (drop_last=True), short last batches, and DDP training that matches
one process training on each step's concatenated batches."""
import numpy as np
import pytest
from _ember_distributed_test_helpers import launch, load_worker, needs_mpi

import ember.tensor as et

pytestmark = needs_mpi
N = 2


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch("uneven.py", tmp_path_factory.mktemp("uneven"), N)


@pytest.fixture(scope="module")
def w():
    return load_worker("uneven")


# torch.utils.data.DistributedSampler(range(13), num_replicas=2, shuffle=False)
TORCH = {False: [[0, 2, 4, 6, 8, 10, 12], [1, 3, 5, 7, 9, 11, 0]],
         True: [[0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 11]]}


@pytest.mark.parametrize("drop_last", [False, True])
def test_sharding_is_pytorchs(ranks, w, drop_last):
    for r, res in enumerate(ranks):
        assert list(res[f"drop{drop_last}_indices"]) == TORCH[drop_last][r]
        assert w.reference_indices(13, N, r, drop_last) == TORCH[drop_last][r]


@pytest.mark.parametrize("drop_last", [False, True])
def test_training_with_short_last_batches_matches_single_process(ranks, w, drop_last):
    x, y = w.dataset()
    shards = [w.batches(TORCH[drop_last][r]) for r in range(N)]
    assert len(shards[0][-1]) < w.BATCH  # a short last batch on every rank
    model = w.make_model(seed=5)
    steps = 0
    for _ in range(w.EPOCHS):
        for parts in zip(*shards):  # equal batch sizes across ranks at every step
            b = [i for part in parts for i in part]
            model.zero_grad()
            w.mse(model(et.from_numpy(x[b])), et.from_numpy(y[b])).backward()
            w.sgd(model)
            steps += 1
    for res in ranks:
        assert int(res[f"drop{drop_last}_steps"]) == steps
        np.testing.assert_allclose(res[f"drop{drop_last}_final"], w.params(model), rtol=1e-12,
                                   atol=1e-14)
