"""DistributedDataParallel of an LSTM on 2 processes against single-process training on the
whole batch (float64, 10 SGD steps), and a checkpoint written by rank 0 only that a single
process loads."""
import numpy as np
import pytest
from _ember_distributed_test_helpers import launch, load_worker, needs_mpi

import ember.tensor as et

pytestmark = needs_mpi
N = 2


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    return tmp_path_factory.mktemp("lstm")


@pytest.fixture(scope="module")
def ranks(out):
    return launch("lstm.py", out, N)


@pytest.fixture(scope="module")
def w():
    return load_worker("lstm")


@pytest.fixture(scope="module")
def single(w):
    """Rank 0's initial model trained in one process on every step's whole batch."""
    model = w.make_model(seed=11)
    init = w.params(model)
    for step in range(w.STEPS):
        x, y = w.data(step)
        model.zero_grad()
        w.mse(model(et.from_numpy(x)), et.from_numpy(y)).backward()
        w.sgd(model)
    return init, model


def test_lstm_training_matches_single_process(ranks, single):
    init, model = single
    for res in ranks:
        assert int(res["nbuckets"]) > 1
        np.testing.assert_array_equal(res["init"], init)
        np.testing.assert_allclose(res["final"], w_params(model), rtol=1e-10, atol=1e-12)
    assert not np.allclose(init, w_params(model))


def w_params(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def test_state_dict_keys_are_pytorchs(ranks, single):
    # torch's DDP.state_dict() prefixes "module."; module.state_dict() is the plain one
    _, model = single
    for res in ranks:
        assert list(res["state_keys"]) == sorted("module." + k for k in model.state_dict())


def test_rank0_checkpoint_loads_in_one_process(ranks, out, w, single):
    _, trained = single
    ckpt = et.load(out / "checkpoint.pt")
    assert ckpt["step"] == w.STEPS
    fresh = w.make_model(seed=123)  # different weights until the checkpoint is loaded
    fresh.load_state_dict(ckpt["model"])
    for (name, a), (_, b) in zip(fresh.state_dict().items(), trained.state_dict().items()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    # only rank 0 wrote: no other checkpoint files appeared
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint.pt", "rank0.npz", "rank1.npz"]
