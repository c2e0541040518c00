"""``nn.SyncBatchNorm`` against PyTorch 2.13 in one process (no process group: batch norm's
arithmetic, over inputs of rank 2 to 5), ``convert_sync_batchnorm``'s result (reprs, state
dict, shared parameters) and the error for 1-D input. The synchronized statistics across
processes are tested on 2 MPI processes in ``packages/distributed/tests/test_syncbn_mpi.py``."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as nn  # noqa: E402
import ember.tensor as et  # noqa: E402


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_forward_backward_and_running_stats(shape, momentum):
    rng = np.random.default_rng(len(shape))
    em = nn.SyncBatchNorm(3, momentum=momentum).double()
    tm = torch.nn.SyncBatchNorm(3, momentum=momentum).double()
    assert repr(em) == repr(tm)
    for _ in range(2):
        x = rng.standard_normal(shape) * 2 + 1
        ex = et.from_numpy(x.copy()).requires_grad_()
        tx = torch.from_numpy(x.copy()).requires_grad_()
        eo, to = em(ex), tm(tx)
        np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), atol=1e-12)
        g = rng.standard_normal(shape)
        eo.backward(et.from_numpy(g))
        to.backward(torch.from_numpy(g))
        np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), atol=1e-11)
    for (k, v), (k2, v2) in zip(em.state_dict().items(), tm.state_dict().items()):
        assert k == k2
        np.testing.assert_allclose(v.numpy(), v2.numpy(), atol=1e-12)
    np.testing.assert_allclose(em.weight.grad.numpy(), tm.weight.grad.numpy(), atol=1e-11)


def test_convert_sync_batchnorm():
    def net(m):
        return m.Sequential(m.Conv2d(1, 3, 3), m.BatchNorm2d(3, momentum=0.3),
                            m.Sequential(m.BatchNorm1d(4, affine=False, eps=1e-3)),
                            m.InstanceNorm2d(3))

    e, t = net(nn), net(torch.nn)
    ew, tw = e[1].weight, t[1].weight
    ec = nn.SyncBatchNorm.convert_sync_batchnorm(e)
    tc = torch.nn.SyncBatchNorm.convert_sync_batchnorm(t)
    assert repr(ec) == repr(tc)
    assert list(ec.state_dict()) == list(tc.state_dict())
    assert (ec[1].weight is ew) == (tc[1].weight is tw)
    assert type(nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm3d(2))).__name__ == \
        type(torch.nn.SyncBatchNorm.convert_sync_batchnorm(torch.nn.BatchNorm3d(2))).__name__


def test_one_dimensional_input_raises():
    for m, mod in ((et, nn), (torch, torch.nn)):
        with pytest.raises(ValueError, match="expected at least 2D input"):
            mod.SyncBatchNorm(3)(m.ones(3))
