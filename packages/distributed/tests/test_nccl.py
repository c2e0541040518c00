"""The nccl backend (CUDA tensors through CuPy's NCCL)."""
import importlib.util

import numpy as np
import pytest

import ember.distributed as dist
import ember.tensor as et

HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.skipif(HAS_CUPY, reason="checks the error raised where CuPy is not installed")
def test_nccl_without_cupy_names_the_extra():
    assert not dist.is_nccl_available()
    with pytest.raises(RuntimeError, match=r"ember-distributed\[nccl\]"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


@pytest.mark.cuda
@pytest.mark.skipif(not dist.is_nccl_available(),
                    reason="needs a CUDA GPU and CuPy with NCCL (ember-distributed[nccl])")
def test_nccl_one_process_collectives():
    dist.init_process_group("nccl")
    try:
        x = et.arange(6.0, device="cuda").view(2, 3)
        t = x.clone()
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        np.testing.assert_allclose(t.cpu().numpy(), x.cpu().numpy())
        work = dist.broadcast(t, src=0, async_op=True)
        assert work.wait() and work.is_completed()
        out = et.zeros(2, 3, device="cuda")
        dist.all_gather_into_tensor(out, x)
        np.testing.assert_allclose(out.cpu().numpy(), x.cpu().numpy())
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(et.ones(2))
    finally:
        dist.destroy_process_group()
