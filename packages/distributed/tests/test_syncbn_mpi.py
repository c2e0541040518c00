"""SyncBatchNorm on 2 processes, each with half of every batch, against one process with
BatchNorm on the whole batch (float64): the same outputs and input gradients for each half,
parameter gradients that sum (plain) or average (under DistributedDataParallel) to the whole
batch's, and the same running statistics and parameters after training."""
import numpy as np
import pytest
from _ember_distributed_test_helpers import launch, load_worker, needs_mpi

import ember.tensor as et

pytestmark = needs_mpi
N = 2


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    return launch("syncbn.py", tmp_path_factory.mktemp("syncbn"), N)


@pytest.fixture(scope="module")
def w():
    return load_worker("syncbn")


@pytest.mark.parametrize("tag", ["plain", "ddp"])
def test_matches_one_process_on_the_whole_batch(ranks, w, tag):
    model = w.make_model(seed=3)
    half = w.BATCH // N
    for step in range(w.STEPS):
        x, wt = w.data(step)
        xt = et.from_numpy(x.copy()).requires_grad_()
        model.zero_grad()
        o = model(xt)
        w.loss_fn(o, et.from_numpy(wt)).backward()
        grads = np.concatenate([p.grad.numpy().ravel() for p in model.parameters()])
        for r, res in enumerate(ranks):
            sl = slice(r * half, (r + 1) * half)
            np.testing.assert_allclose(res[f"{tag}_out{step}"], o.detach().numpy()[sl],
                                       rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(res[f"{tag}_xgrad{step}"], xt.grad.numpy()[sl],
                                       rtol=1e-10, atol=1e-12)
        total = sum(res[f"{tag}_pgrad{step}"] for res in ranks)
        if tag == "ddp":  # DDP averages the ranks' gradients of their own losses
            np.testing.assert_allclose(ranks[0][f"{tag}_pgrad{step}"], total / N, rtol=1e-10)
            np.testing.assert_allclose(total / N * N, grads, rtol=1e-10, atol=1e-12)
        else:
            np.testing.assert_allclose(total, grads, rtol=1e-10, atol=1e-12)
        if tag == "ddp":  # DDP's step: the mean of the ranks' gradients, the whole batch's / N
            for p in model.parameters():
                p.grad.div_(N)
        w.sgd(model)
    for res in ranks:
        np.testing.assert_allclose(res[f"{tag}_state"], w.state(model), rtol=1e-10, atol=1e-12)
