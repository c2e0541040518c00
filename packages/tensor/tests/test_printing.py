"""Tensor printing: every expected string below was produced by PyTorch 2.13 for the same data
(with ``torch.`` replaced by ``ember.``) and is pinned here as a literal."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _cupy
from ember.tensor._printing import get_printoptions, printoptions, set_printoptions, tensor_repr


@pytest.fixture(autouse=True)
def _default_options():
    set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")


def t(values, dtype=None):
    if not isinstance(values, list):  # 0-d: built from NumPy so the test only covers printing
        dt = et.get_default_dtype() if dtype is None and isinstance(values, float) else dtype
        np_dtype = dt.np if dt is not None else np.asarray(values).dtype
        return et.from_numpy(np.array(values, dtype=np_dtype))
    return et.tensor(values, dtype=dtype)


CASES = [
    (t([1.0, 2.0]), "tensor([1., 2.])"),
    (t([1, 2]), "tensor([1, 2])"),
    (t([True, False]), "tensor([ True, False])"),
    (t(3.5), "tensor(3.5000)"),
    (t(3.0), "tensor(3.)"),
    (t(7), "tensor(7)"),
    (t(True), "tensor(True)"),
    (t([1e-5, 1e5]), "tensor([1.0000e-05, 1.0000e+05])"),
    (t([0.1, 123.456, -7.5]), "tensor([ 1.0000e-01,  1.2346e+02, -7.5000e+00])"),
    (t([0.5, 1.25, -3.0]), "tensor([ 0.5000,  1.2500, -3.0000])"),
    (t([[1, 2], [30, 4]]), "tensor([[ 1,  2],\n        [30,  4]])"),
    (t([[True, False], [False, True]]), "tensor([[ True, False],\n        [False,  True]])"),
    (et.from_numpy(np.arange(12.0, dtype=np.float32).reshape(2, 2, 3) / 4),
     "tensor([[[0.0000, 0.2500, 0.5000],\n         [0.7500, 1.0000, 1.2500]],\n\n"
     "        [[1.5000, 1.7500, 2.0000],\n         [2.2500, 2.5000, 2.7500]]])"),
    (t([1.5, 2.0], et.float64), "tensor([1.5000, 2.0000], dtype=ember.float64)"),
    (t([1, 2], et.int32), "tensor([1, 2], dtype=ember.int32)"),
    (t([1, 2, 3], et.uint8), "tensor([1, 2, 3], dtype=ember.uint8)"),
    (t([1.5, 2.0], et.float16), "tensor([1.5000, 2.0000], dtype=ember.float16)"),
    (et.zeros(0, 3), "tensor([], size=(0, 3))"),
    (et.zeros(0), "tensor([])"),
    (et.zeros(0, dtype=et.int64), "tensor([], dtype=ember.int64)"),
    (et.zeros(2, 0, dtype=et.float64), "tensor([], size=(2, 0), dtype=ember.float64)"),
    (t([float("nan"), float("inf"), -float("inf"), 1.0]), "tensor([nan, inf, -inf, 1.])"),
    (t([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
    (t([0.0, -0.0]), "tensor([0., -0.])"),
    (et.from_numpy(np.arange(30, dtype=np.float32) * 1.5),
     "tensor([ 0.0000,  1.5000,  3.0000,  4.5000,  6.0000,  7.5000,  9.0000, 10.5000,\n"
     "        12.0000, 13.5000, 15.0000, 16.5000, 18.0000, 19.5000, 21.0000, 22.5000,\n"
     "        24.0000, 25.5000, 27.0000, 28.5000, 30.0000, 31.5000, 33.0000, 34.5000,\n"
     "        36.0000, 37.5000, 39.0000, 40.5000, 42.0000, 43.5000])"),
    (et.from_numpy(np.arange(20, dtype=np.float64).reshape(2, 10) * 1000.5),
     "tensor([[    0.0000,  1000.5000,  2001.0000,  3001.5000,  4002.0000,  5002.5000,\n"
     "          6003.0000,  7003.5000,  8004.0000,  9004.5000],\n"
     "        [10005.0000, 11005.5000, 12006.0000, 13006.5000, 14007.0000, 15007.5000,\n"
     "         16008.0000, 17008.5000, 18009.0000, 19009.5000]], dtype=ember.float64)"),
    # the dtype suffix moves to its own line when it would pass the line width
    (et.from_numpy(np.arange(5, dtype=np.float64) * 1.5 + 10),
     "tensor([10.0000, 11.5000, 13.0000, 14.5000, 16.0000], dtype=ember.float64)"),
    (et.from_numpy(np.arange(6, dtype=np.float64) * 1.5 + 10),
     "tensor([10.0000, 11.5000, 13.0000, 14.5000, 16.0000, 17.5000],\n"
     "       dtype=ember.float64)"),
    (et.from_numpy(np.arange(9, dtype=np.float64) * 1.5 + 10),
     "tensor([10.0000, 11.5000, 13.0000, 14.5000, 16.0000, 17.5000, 19.0000, 20.5000,\n"
     "        22.0000], dtype=ember.float64)"),
]


@pytest.mark.parametrize("x, expected", CASES, ids=[repr(c[1])[:40] for c in CASES])
def test_repr_matches_pytorch(x, expected):
    assert repr(x) == expected
    assert tensor_repr(x) == expected


def test_summarized_1d():
    x = et.from_numpy(np.arange(2000, dtype=np.float32))
    assert repr(x) == ("tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, "
                       "1.9980e+03,\n        1.9990e+03])")


def test_summarized_2d():
    x = et.from_numpy(np.arange(2000).reshape(40, 50))
    assert repr(x) == (
        "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
        "        [  50,   51,   52,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
        "        ...,\n"
        "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
        "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
        "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])")


def test_not_summarized_at_threshold():
    x = et.from_numpy(np.zeros(1000, dtype=np.int64))
    assert "..." not in repr(x)
    assert "..." in repr(et.from_numpy(np.zeros(1001, dtype=np.int64)))


def test_non_contiguous_view_prints_its_elements():
    x = et.from_numpy(np.arange(6).reshape(2, 3))
    assert repr(x.t()) == "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])"


def test_requires_grad_suffix():
    x = t([1.0, 2.0])
    x._requires_grad = True  # set directly: the tensor-only env has no autograd package
    assert repr(x) == "tensor([1., 2.], requires_grad=True)"


class AddBackward0:
    pass


class _Node:
    def name(self):
        return "MulBackward0"


def test_grad_fn_suffix_uses_type_name():
    x = t([2.0, 3.0])
    x.grad_fn = AddBackward0()
    x._requires_grad = True
    assert repr(x) == "tensor([2., 3.], grad_fn=<AddBackward0>)"


def test_grad_fn_suffix_prefers_name_method():
    x = et.from_numpy(np.arange(8, dtype=np.float32).reshape(2, 4) * 2.5)
    x.grad_fn = _Node()
    assert repr(x) == ("tensor([[ 0.0000,  2.5000,  5.0000,  7.5000],\n"
                       "        [10.0000, 12.5000, 15.0000, 17.5000]], grad_fn=<MulBackward0>)")


def test_precision():
    set_printoptions(precision=2)
    assert repr(t([1.12345, 2.5])) == "tensor([1.12, 2.50])"


def test_threshold():
    set_printoptions(threshold=5)
    assert repr(et.arange(10)) == "tensor([0, 1, 2,  ..., 7, 8, 9])"


def test_sci_mode_forced_on_and_off():
    set_printoptions(sci_mode=True)
    assert repr(t([1.5, 20.0])) == "tensor([1.5000e+00, 2.0000e+01])"
    set_printoptions(sci_mode=False)
    assert repr(t([1e-5, 1e5])) == "tensor([     0.0000, 100000.0000])"


def test_linewidth():
    set_printoptions(linewidth=30)
    assert repr(et.arange(12.0)) == ("tensor([ 0.,  1.,  2.,  3.,\n         4.,  5.,  6.,  7.,\n"
                                     "         8.,  9., 10., 11.])")


def test_edgeitems_zero():
    set_printoptions(edgeitems=0)
    assert repr(et.arange(2000)) == "tensor([...], size=(2000,))"


def test_profiles_and_context_manager():
    set_printoptions(profile="short")
    assert get_printoptions()["precision"] == 2
    assert get_printoptions()["edgeitems"] == 2
    set_printoptions(profile="full")
    assert "..." not in repr(et.arange(5000))
    set_printoptions(profile="default")
    with printoptions(precision=1):
        assert repr(t([1.25])) == "tensor([1.2])"
    assert repr(t([1.25])) == "tensor([1.2500])"
    with pytest.raises(ValueError, match="profile"):
        set_printoptions(profile="tiny")


def test_set_printoptions_is_public():
    assert et.set_printoptions is set_printoptions


@pytest.mark.cuda
@pytest.mark.skipif(not _cupy.available, reason="needs a CUDA GPU with CuPy")
def test_device_suffix():
    x = et.tensor([1.0, 2.0], device="cuda")
    assert repr(x) == "tensor([1., 2.], device='cuda:0')"
    big = et.arange(5000.0, device="cuda")
    assert repr(big) == repr(big.cpu())[:-1] + ", device='cuda:0')"
