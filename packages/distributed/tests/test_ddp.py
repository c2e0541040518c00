"""DistributedDataParallel in one process: wrapping, state_dict, hooks, errors."""
import numpy as np
import pytest
from _ember_distributed_test_helpers import needs_mpi

import ember.distributed as dist
import ember.nn as nn
import ember.tensor as et
from ember.autograd import no_grad
from ember.distributed import DistributedDataParallel as DDP

pytestmark = needs_mpi


@pytest.fixture(autouse=True)
def pg():
    dist.init_process_group("mpi")
    yield
    dist.destroy_process_group()


def net():
    et.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2), nn.BatchNorm1d(2))
    return m.double()


def grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


def test_is_a_module_wrapping_module():
    inner = net()
    model = DDP(inner)
    assert isinstance(model, nn.Module) and model.module is inner
    assert [n for n, _ in model.named_children()] == ["module"]
    assert list(model.parameters()) == list(inner.parameters())


def test_state_dict_keys_are_prefixed_with_module():
    inner = net()
    model = DDP(inner)
    keys = list(model.state_dict())
    assert keys == ["module." + k for k in inner.state_dict()]
    assert "module.3.running_mean" in keys and "module.0.weight" in keys
    other = DDP(net())
    with no_grad():
        for p in other.module.parameters():
            p.zero_()
    other.load_state_dict(model.state_dict())
    for a, b in zip(other.module.parameters(), inner.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("view", [False, True])
def test_gradients_equal_the_plain_modules(view):
    x = et.from_numpy(np.random.default_rng(0).standard_normal((5, 4)))
    plain = net()
    plain(x).pow(2).sum().backward()
    model = DDP(net(), bucket_cap_mb=0.0001, gradient_as_bucket_view=view)
    assert len(model._buckets) > 1
    for _ in range(2):  # twice: the second backward starts from the first's .grad
        model(x).pow(2).sum().backward()
    for g, ref in zip(grads(model.module), grads(plain)):
        np.testing.assert_allclose(g, 2 * ref, rtol=1e-12)


def test_gradient_as_bucket_view_shares_the_bucket():
    model = DDP(net(), gradient_as_bucket_view=True)
    x = et.ones(3, 4, dtype=et.float64)
    model(x).sum().backward()
    flat = model._buckets[0].flat.numpy()
    for p in model.module.parameters():
        assert np.shares_memory(p.grad.numpy(), flat)


def test_no_sync_accumulates():
    x = et.from_numpy(np.random.default_rng(1).standard_normal((5, 4)))
    plain = net()
    plain(x).sum().backward()
    model = DDP(net())
    with model.no_sync():
        assert not model.require_backward_grad_sync
        model(x).sum().backward()
    assert model.require_backward_grad_sync
    model(x).sum().backward()
    for g, ref in zip(grads(model.module), grads(plain)):
        np.testing.assert_allclose(g, 2 * ref, rtol=1e-12)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(3, 2)
        self.unused = nn.Linear(3, 2)

    def forward(self, x):
        return self.used(x)


def test_unused_parameters():
    x = et.ones(2, 3)
    model = DDP(TwoHeads(), find_unused_parameters=True)
    for _ in range(2):
        model(x).sum().backward()
    np.testing.assert_allclose(model.module.used.bias.grad.numpy(), [4.0, 4.0])
    assert model.module.unused.weight.grad is None
    strict = DDP(TwoHeads())
    strict(x).sum().backward()
    with pytest.raises(RuntimeError, match="Expected to have finished reduction in the prior "
                                           "iteration"):
        strict(x)


def test_forward_without_backward_is_fine():
    model = DDP(net())
    x = et.ones(3, 4, dtype=et.float64)
    model(x)
    model(x).sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_constructor_errors():
    frozen = nn.Linear(2, 2).requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a "
                                           "gradient"):
        DDP(frozen)
    with pytest.raises(ValueError, match="device_ids and output_device arguments only work"):
        DDP(net(), device_ids=[0])
    with pytest.raises(TypeError, match="must be an ember.nn.Module"):
        DDP(lambda x: x)
    with pytest.raises(ValueError, match="bucket_cap_mb must be positive"):
        DDP(net(), bucket_cap_mb=0)


def test_bucket_reductions_start_during_backward():
    inner = net()
    seen = []
    first = inner[0].weight  # its gradient is among the last to arrive: the last bucket

    def probe(g):  # registered before DDP's hooks, so it runs before DDP's hook for `first`
        seen.append([b.work is not None for b in model._buckets])
    first.register_hook(probe)
    model = DDP(inner, bucket_cap_mb=0.0001)
    assert len(model._buckets) > 2
    model(et.ones(3, 4, dtype=et.float64)).sum().backward()
    launched = seen[0]
    assert launched[0] and not launched[-1]  # early buckets were already in flight
    assert all(b.work.is_completed() for b in model._buckets)


class Pair(nn.Module):
    """Two heads, both returned."""

    def __init__(self):
        super().__init__()
        et.manual_seed(1)
        self.a = nn.Linear(3, 2).double()
        self.b = nn.Linear(3, 2).double()

    def forward(self, x):
        return self.a(x), self.b(x)


def x3():
    return et.from_numpy(np.arange(6.0).reshape(2, 3))


def test_hooks_are_post_accumulate_and_one_callback_per_backward(monkeypatch):
    import ember.distributed._ddp as ddp_mod

    queued = []
    real = ddp_mod.queue_callback
    monkeypatch.setattr(ddp_mod, "queue_callback", lambda fn: (queued.append(fn), real(fn)))
    model = DDP(net(), bucket_cap_mb=0.0001)
    model(et.ones(3, 4, dtype=et.float64)).sum().backward()
    assert len(queued) == 1
    assert all(p.grad is not None for p in model.parameters())
    assert not model._expect and not model._pending


def test_second_backward_after_the_reduction_accumulates_locally():
    # PyTorch: once the iteration's reduction finished, further backward passes (retain_graph)
    # are not reduced; their gradients accumulate into .grad
    x = x3()
    model = DDP(Pair())
    a, b = model(x)
    loss = a.sum() + b.sum()
    loss.backward(retain_graph=True)
    first = model.module.a.weight.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(model.module.a.weight.grad.numpy(), 2 * first)
    model(x)  # the iteration finished: no complaint


def test_backward_reaching_a_parameter_twice_in_one_reduction_raises():
    x = x3()
    model = DDP(Pair())
    a, b = model(x)
    a.sum().backward(retain_graph=True)  # b gets nothing: the bucket stays open
    assert model._pending and model._launched == 0
    with pytest.raises(RuntimeError, match="Expected to mark a variable ready only once"):
        (a.sum() + b.sum()).backward()


def test_two_backward_passes_can_complete_one_reduction():
    x = x3()
    model = DDP(Pair())
    a, b = model(x)
    a.sum().backward()
    assert model._pending
    b.sum().backward()  # the rest of the parameters: the reduction completes
    assert not model._pending and not model._expect
    plain = Pair()
    pa, pb = plain(x)
    (pa.sum() + pb.sum()).backward()
    for p, q in zip(model.module.parameters(), plain.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)
    model(x)


def test_find_unused_parameters_covers_outputs_left_out_of_the_loss():
    model = DDP(Pair(), find_unused_parameters=True)
    for _ in range(2):
        a, b = model(x3())
        a.sum().backward()  # b is in the graph of the output but gets no gradient
        assert not model._pending
    assert model.module.b.weight.grad is None
    np.testing.assert_allclose(model.module.a.bias.grad.numpy(), [4.0, 4.0])


def test_no_sync_allows_several_backward_passes():
    x = x3()
    model = DDP(Pair())
    with model.no_sync():
        a, b = model(x)
        a.sum().backward(retain_graph=True)
        (a.sum() + b.sum()).backward()
    np.testing.assert_allclose(model.module.a.bias.grad.numpy(), [4.0, 4.0])
    np.testing.assert_allclose(model.module.b.bias.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("view", [False, True])
def test_zero_grad_in_place_keeps_working(view):
    x = et.from_numpy(np.random.default_rng(2).standard_normal((5, 4)))
    plain = net()
    plain(x).pow(2).sum().backward()
    model = DDP(net(), bucket_cap_mb=0.0001, gradient_as_bucket_view=view)
    for _ in range(3):
        model.zero_grad(set_to_none=False)
        model(x).pow(2).sum().backward()
    for g, ref in zip(grads(model.module), grads(plain)):
        np.testing.assert_allclose(g, ref, rtol=1e-12)


def test_static_graph_learns_the_unused_parameters_once():
    x = et.ones(2, 3)
    model = DDP(TwoHeads(), static_graph=True)
    for _ in range(3):
        model(x).sum().backward()
        assert not model._pending
    assert model._static_unused == frozenset(
        i for i, p in enumerate(model._params) if p is model.module.unused.weight
        or p is model.module.unused.bias)
    np.testing.assert_allclose(model.module.used.bias.grad.numpy(), [6.0, 6.0])
    assert model.module.unused.weight.grad is None
    model(x)
    with pytest.raises(RuntimeError, match="training graph has changed"):
        model.module.unused(x).sum().backward()
