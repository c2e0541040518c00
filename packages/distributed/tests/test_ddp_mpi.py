"""DistributedDataParallel on 2 processes against single-process training (float64)."""
import numpy as np
import pytest
from _ember_distributed_test_helpers import launch, load_worker, needs_mpi

import ember.autograd as ag
import ember.tensor as et

pytestmark = needs_mpi
N = 2


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch("ddp.py", tmp_path_factory.mktemp("ddp"), N)


@pytest.fixture(scope="module")
def w():
    return load_worker("ddp")


def full(a):
    return et.from_numpy(a.copy())


@pytest.mark.parametrize("tag", ["plain", "view"])
def test_training_matches_single_process(ranks, w, tag):
    model = w.make_model(seed=7)  # rank 0's model: DDP broadcasts it at construction
    init = w.params(model)
    for step in range(w.STEPS):
        x, y = w.data(step)
        model.zero_grad()
        w.mse(model(full(x)), full(y)).backward()  # the concatenated batch
        w.sgd(model)
    for res in ranks:
        assert int(res[f"{tag}_nbuckets"]) > 1  # the tiny cap made several buckets
        np.testing.assert_array_equal(res[f"{tag}_init"], init)
        np.testing.assert_allclose(res[f"{tag}_final"], w.params(model), rtol=1e-12,
                                   atol=1e-14)
    assert not np.allclose(init, w.params(model))  # training moved the weights


def test_no_sync_accumulates_locally_then_averages(ranks, w):
    model = w.make_model(seed=7)
    params = list(model.parameters())
    for step in range(2):
        x0, y0 = w.data(step, micro=0)
        x1, y1 = w.data(step, micro=1)
        for r, res in enumerate(ranks):  # inside no_sync: each rank's own gradient
            loss = w.mse(model(full(x0[4 * r:4 * r + 4])), full(y0[4 * r:4 * r + 4]))
            local = np.concatenate([g.numpy().ravel() for g in ag.grad(loss, params)])
            np.testing.assert_allclose(res[f"nosync_local_grad{step}"], local, rtol=1e-12)
        model.zero_grad()
        w.mse(model(full(x0)), full(y0)).backward()
        w.mse(model(full(x1)), full(y1)).backward()
        w.sgd(model)
    for res in ranks:
        np.testing.assert_allclose(res["nosync_final"], w.params(model), rtol=1e-12)


def test_find_unused_parameters(ranks):
    x = ranks[0]["unused_x"]
    rows = [x[4 * r:4 * r + 4].sum(0) for r in range(N)]
    # d sum(a(x)) / d a.weight = ones(3) x (sum of the rows); b is used on rank 0 only
    a_grad = np.outer(np.ones(3), np.mean(rows, axis=0))
    b_grad = np.outer(np.ones(3), rows[0] / N)
    for res in ranks:
        np.testing.assert_allclose(res["unused_a_grad"], a_grad, rtol=1e-12)
        np.testing.assert_allclose(res["unused_b_grad"], b_grad, rtol=1e-12)
        assert bool(res["unused_c_grad_is_none"])  # unused everywhere: left alone


def test_unfinished_reduction_is_reported(ranks):
    for res in ranks:
        msg = str(res["unfinished_error"])
        assert msg.startswith("Expected to have finished reduction in the prior iteration")
        assert "find_unused_parameters=True" in msg


def test_buffers_broadcast(ranks):
    for r, res in enumerate(ranks):
        np.testing.assert_array_equal(res["buffersTrue_init"], np.full(3, 10.0))
        np.testing.assert_array_equal(res["buffersFalse_init"], np.full(3, 10.0))
        # before each forward rank 0's buffers overwrite the others' (99 on rank 0)
        np.testing.assert_array_equal(res["buffersTrue_after_forward"], np.full(3, 99.0))
        np.testing.assert_array_equal(res["buffersFalse_after_forward"], np.full(3, 99.0 + r))


def test_backward_after_the_reduction_accumulates_locally(ranks, w):
    # PyTorch's DDP: a retain_graph backward after the iteration's reduction is not averaged
    model = w.make_model(seed=7)
    params = list(model.parameters())
    x, y = w.data(0)
    local = []
    for r in range(N):
        loss = w.mse(model(full(x[4 * r:4 * r + 4])), full(y[4 * r:4 * r + 4]))
        local.append(np.concatenate([g.numpy().ravel() for g in ag.grad(loss, params)]))
    avg = np.mean(local, axis=0)
    for r, res in enumerate(ranks):
        np.testing.assert_allclose(res["retain_first"], avg, rtol=1e-12)
        np.testing.assert_allclose(res["retain_second"], avg + local[r], rtol=1e-12)


def test_static_graph_with_unused_parameters(ranks):
    x = ranks[0]["unused_x"]
    rows = [x[4 * r:4 * r + 4].sum(0) for r in range(N)]
    for res in ranks:
        np.testing.assert_allclose(res["static_a_grad"],
                                   np.outer(np.ones(3), np.mean(rows, axis=0)), rtol=1e-12)
        np.testing.assert_allclose(res["static_b_grad"], np.outer(np.ones(3), rows[0] / N),
                                   rtol=1e-12)
        assert bool(res["static_c_grad_is_none"])


def test_parameter_used_only_under_no_sync_is_still_averaged(ranks):
    x = ranks[0]["unused_x"]
    mean_rows = np.mean([x[4 * r:4 * r + 4].sum(0) for r in range(N)], axis=0)
    for res in ranks:
        np.testing.assert_allclose(res["nosync_unused_a_grad"],
                                   2 * np.outer(np.ones(3), mean_rows), rtol=1e-12)
        np.testing.assert_allclose(res["nosync_unused_b_grad"],
                                   np.outer(np.ones(3), mean_rows), rtol=1e-12)
