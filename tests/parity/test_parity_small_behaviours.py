"""Issue 16, item 9 against PyTorch 2.13 CPU: ``size=`` keyword forms, ``randint(high,
size=...)``, ``tensor()`` of a deque or range, indexing with a ``range``, ``Tensor.new``, the
device predicates, and ``Dropout2d``'s warnings and mask shapes on 2-D and 3-D input.
(``torch.compile`` returns a compiled wrapper, ember's returns the model: no parity there.)"""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn.functional as F  # noqa: E402
import ember.tensor as et  # noqa: E402


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
@pytest.mark.parametrize("size", [(2, 3), [4], (), (0, 2)])
def test_size_keyword(name, size):
    assert tuple(getattr(et, name)(size=size).shape) == tuple(getattr(torch, name)(size=size).shape)


@pytest.mark.parametrize("name", ["zeros", "ones", "rand"])
def test_size_keyword_errors(name):
    for call in (lambda m: getattr(m, name)(2, size=(3,)), lambda m: getattr(m, name)(size=3)):
        with pytest.raises(TypeError):
            call(torch)
        with pytest.raises(TypeError):
            call(et)


def test_randint_high_size():
    e, t = et.randint(6, size=(300,)), torch.randint(6, size=(300,))
    assert e.dtype == et.int64 and t.dtype == torch.int64
    assert tuple(e.shape) == tuple(t.shape)
    assert set(e.tolist()) == set(t.tolist()) == set(range(6))
    assert tuple(et.randint(high=4, size=(2, 2)).shape) == tuple(
        torch.randint(high=4, size=(2, 2)).shape)


@pytest.mark.parametrize("data", [collections.deque([1, 2, 3]), range(5),
                                  collections.deque([1.5, 2.0]),
                                  [collections.deque([1, 2]), collections.deque([3, 4])],
                                  collections.deque([True, False])])
def test_tensor_of_sequence(data):
    e, t = et.tensor(data), torch.tensor(data)
    assert e.tolist() == t.tolist()
    assert str(e.dtype).split(".")[1] == str(t.dtype).split(".")[1]


@pytest.mark.parametrize("index", [range(2), (slice(None), range(0, 4, 2)),
                                   (range(2), range(1, 3)), range(0), (range(1, 3), 1)])
def test_index_with_range(index):
    e, t = et.arange(12.0).view(3, 4), torch.arange(12.0).view(3, 4)
    assert e[index].tolist() == t[index].tolist()
    e[index] = -1.0
    t[index] = -1.0
    assert e.tolist() == t.tolist()


def test_tensor_new():
    e, t = et.ones(2, dtype=et.float64), torch.ones(2, dtype=torch.float64)
    assert tuple(e.new().shape) == tuple(t.new().shape)
    assert tuple(e.new(2, 3).shape) == tuple(t.new(2, 3).shape)
    assert tuple(e.new(et.Size([4, 1])).shape) == tuple(t.new(torch.Size([4, 1])).shape)
    assert e.new((2, 3)).tolist() == t.new((2, 3)).tolist()
    assert e.new([1, 2]).tolist() == t.new([1, 2]).tolist()
    assert str(e.new([1, 2]).dtype) == "ember.float64" and t.new([1, 2]).dtype == torch.float64
    with pytest.raises(TypeError):
        t.new(2.5)
    with pytest.raises(TypeError):
        e.new(2.5)


@pytest.mark.parametrize("name", ["is_xpu", "is_mps", "is_meta", "is_ipu", "is_mtia",
                                  "is_maia", "is_xla", "is_vulkan", "is_mkldnn", "is_quantized",
                                  "is_nested", "is_cpu", "is_cuda"])
def test_device_predicates(name):
    assert getattr(et.ones(2), name) == getattr(torch.ones(2), name)


def _warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w]


@pytest.mark.parametrize("shape", [(40, 30), (8, 6, 50), (2, 3, 4, 5), (2, 3, 2, 2, 2)])
def test_dropout2d_warnings_and_mask_shape(shape):
    # seeded: with 6 channels a free run keeps or drops all of them about 3% of the time
    et.manual_seed(0)
    torch.manual_seed(0)
    e, we = _warnings(lambda: F.dropout2d(et.ones(*shape), 0.5))
    t, wt = _warnings(lambda: torch.nn.functional.dropout2d(torch.ones(*shape), 0.5))
    assert we == wt
    # the mask's shape: which dims a kept/dropped decision spans
    ea, ta = e.numpy(), t.numpy()
    assert set(np.unique(ea)) == set(np.unique(ta)) == {0.0, 2.0}
    for arr in (ea, ta):
        if arr.ndim > 2:
            flat = arr.reshape(*arr.shape[:2], -1)
            assert (flat.min(2) == flat.max(2)).all()
        else:
            assert len(set(arr.ravel().tolist())) == 2  # element-wise


@pytest.mark.parametrize("bdt", ["int64", "int32", "int16", "int8", "uint8"])
def test_integer_pow_with_negative_tensor_exponents(bdt):
    bases = [0, 1, 2, 3, 5, 7] + ([] if bdt == "uint8" else [-1, -2, -7])
    exps = [-3, -2, -1, 0, 1, 2, 3, -4, 4][: len(bases)]
    tb = torch.tensor(bases, dtype=getattr(torch, bdt))
    eb = et.tensor(bases, dtype=getattr(et, bdt))
    te, ee = torch.tensor(exps), et.tensor(exps)
    assert et.pow(eb, ee).tolist() == torch.pow(tb, te).tolist()
    assert (2 ** ee).tolist() == (2 ** te).tolist()
    x, y = eb.clone(), tb.clone()
    assert x.pow_(ee).tolist() == y.pow_(te).tolist()


@pytest.mark.parametrize("size", [0, 2, 5])
def test_nonzero_static_matches_pytorch(size):
    a = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])
    for kw in ({}, {"fill_value": 9}):
        t = torch.nonzero_static(torch.tensor(a), size=size, **kw)
        e = et.nonzero_static(et.tensor(a), size=size, **kw)
        assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_dim_order_output_nr_and_predicates_match_pytorch():
    # (layouts of one dim order: no two strides equal, no dim of size 1)
    shapes = [((2, 3, 4), None), ((2, 3, 4), (2, 0, 1)), ((3, 5, 2), (1, 2, 0))]
    for shape, perm in shapes:
        t, e = torch.zeros(shape), et.zeros(shape)
        if perm is not None:
            t, e = t.permute(perm), e.permute(perm)
        assert e.dim_order() == t.dim_order()
    tx = torch.ones(2, 4, requires_grad=True)
    ex = et.ones(2, 4, requires_grad=True)
    assert [o.output_nr for o in (tx * 2).chunk(2, 1)] == \
        [o.output_nr for o in (ex * 2).chunk(2, 1)]
    assert et.is_distributed(ex) == torch.is_distributed(tx)
    y = et.tensor([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(torch.from_dlpack(et.to_dlpack(y)).numpy(), [1.0, 2.0, 3.0])
