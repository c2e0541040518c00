"""Lazy modules: shapes inferred from the first input, the eager class afterwards, state-dict
loading before the first call, copies, and the eager twin's outputs on the same weights."""
import copy

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember.nn.modules.lazy import LazyModuleMixin

CONV = [
    (nn.LazyConv1d, nn.Conv1d, (2, 3, 9), F.conv1d, {}),
    (nn.LazyConv2d, nn.Conv2d, (2, 4, 7, 6), F.conv2d, {"groups": 2}),
    (nn.LazyConv3d, nn.Conv3d, (1, 2, 5, 5, 4), F.conv3d, {}),
    (nn.LazyConvTranspose1d, nn.ConvTranspose1d, (2, 3, 6), F.conv_transpose1d, {}),
    (nn.LazyConvTranspose2d, nn.ConvTranspose2d, (2, 4, 5, 5), F.conv_transpose2d,
     {"groups": 2}),
    (nn.LazyConvTranspose3d, nn.ConvTranspose3d, (1, 2, 3, 4, 3), F.conv_transpose3d, {}),
]


@pytest.mark.parametrize("lazy_cls, eager_cls, shape, fn, kw", CONV)
def test_lazy_conv_infers_in_channels(lazy_cls, eager_cls, shape, fn, kw):
    m = lazy_cls(6, 3, **kw)
    assert m.has_uninitialized_params()
    x = et.randn(*shape)
    y = m(x)
    assert type(m) is eager_cls and m.in_channels == shape[1]
    g = kw.get("groups", 1)
    want = ((shape[1], 6 // g, *(3,) * (len(shape) - 2)) if "Transpose" in eager_cls.__name__
            else (6, shape[1] // g, *(3,) * (len(shape) - 2)))
    assert tuple(m.weight.shape) == want and tuple(m.bias.shape) == (6,)
    ref = fn(x, m.weight, m.bias, groups=g)
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    # initialized as the eager class initializes: kaiming_uniform(a=sqrt(5)) bounds
    fan_in = m.weight.shape[1] * int(np.prod(m.weight.shape[2:]))
    assert float(m.weight.abs().max()) <= 1 / np.sqrt(fan_in) + 1e-7
    assert float(m.weight.abs().max()) > 0


def test_lazy_conv_unbatched_input_and_bad_rank():
    m = nn.LazyConv1d(4, 2)
    assert m(et.randn(3, 8)).shape == (4, 7) and m.in_channels == 3
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input "
                                           r"to LazyConv2d, but got input of size: \[5\]"):
        nn.LazyConv2d(4, 2)(et.randn(5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.LazyConv2d(4, 2, groups=2)(et.randn(1, 3, 4, 4))


@pytest.mark.parametrize("lazy_cls, eager_cls, shape", [
    (nn.LazyBatchNorm1d, nn.BatchNorm1d, (4, 3)),
    (nn.LazyBatchNorm2d, nn.BatchNorm2d, (2, 3, 4, 4)),
    (nn.LazyBatchNorm3d, nn.BatchNorm3d, (2, 3, 2, 2, 2)),
    (nn.LazyInstanceNorm1d, nn.InstanceNorm1d, (2, 3, 5)),
    (nn.LazyInstanceNorm2d, nn.InstanceNorm2d, (2, 3, 4, 4)),
    (nn.LazyInstanceNorm3d, nn.InstanceNorm3d, (2, 3, 2, 2, 2)),
])
def test_lazy_norms(lazy_cls, eager_cls, shape):
    m = lazy_cls(momentum=0.5)
    x = et.randn(*shape)
    y = m(x)
    assert type(m) is eager_cls and m.num_features == 3
    assert np.array_equal(m.weight.detach().numpy(), np.ones(3))
    assert np.array_equal(m.bias.detach().numpy(), np.zeros(3))
    axes = (0,) + tuple(range(2, len(shape)))
    xn = x.numpy()
    if eager_cls.__name__.startswith("Batch"):
        assert int(m.num_batches_tracked) == 1
        mean, var = xn.mean(axis=axes), xn.var(axis=axes)
        n = xn.size // 3
        np.testing.assert_allclose(m.running_mean.numpy(), 0.5 * mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.running_var.numpy(), 0.5 + 0.5 * var * n / (n - 1),
                                   rtol=1e-5, atol=1e-6)
        ref = (xn - mean.reshape((1, 3) + (1,) * (len(shape) - 2))) / np.sqrt(
            var.reshape((1, 3) + (1,) * (len(shape) - 2)) + 1e-5)
    else:
        inst = tuple(range(2, len(shape)))
        ref = (xn - xn.mean(axis=inst, keepdims=True)) / np.sqrt(
            xn.var(axis=inst, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-4, atol=1e-5)


def test_lazy_norm_without_affine_or_stats():
    # nothing to materialize: PyTorch leaves num_features at 0 and just normalizes
    m = nn.LazyBatchNorm1d(affine=False, track_running_stats=False)
    x = et.randn(5, 2)
    y = m(x).numpy()
    assert type(m) is nn.BatchNorm1d and m.weight is None and m.running_mean is None
    xn = x.numpy()
    np.testing.assert_allclose(y, (xn - xn.mean(0)) / np.sqrt(xn.var(0) + 1e-5), rtol=1e-4,
                               atol=1e-5)


def test_lazy_linear_in_a_sequential_trains():
    net = nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.LazyLinear(1))
    x = et.randn(8, 5)
    net(x).sum().backward()
    assert [tuple(p.shape) for p in net.parameters()] == [(4, 5), (4,), (1, 4), (1,)]
    assert all(p.grad is not None and p.grad.shape == p.shape for p in net.parameters())
    assert [type(m).__name__ for m in net] == ["Linear", "Tanh", "Linear"]


def test_load_state_dict_materializes_before_the_first_call():
    src = nn.Conv2d(3, 5, 3)
    m = nn.LazyConv2d(5, 3)
    m.load_state_dict(src.state_dict())
    assert tuple(m.weight.shape) == (5, 3, 3, 3) and not m.has_uninitialized_params()
    x = et.randn(1, 3, 6, 6)
    np.testing.assert_array_equal(m(x).detach().numpy(), src(x).detach().numpy())
    assert type(m) is nn.Conv2d


def test_copies_stay_lazy_and_keys_are_saved():
    m = nn.LazyBatchNorm2d()
    c = copy.deepcopy(m)
    assert c.has_uninitialized_params() and type(c.running_mean).__name__ == "UninitializedBuffer"
    assert list(m.state_dict()) == ["weight", "bias", "running_mean", "running_var",
                                    "num_batches_tracked"]
    c(et.randn(2, 4, 3, 3))
    assert m.has_uninitialized_params() and c.num_features == 4


def test_mixin_requires_initialize_parameters():
    class Half(LazyModuleMixin, nn.Module):
        def forward(self, x):
            return x

    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented "
                                                  "for Half"):
        Half()(et.ones(1))
