"""The PyTorch 0.3-era constructors and casts DESIGN.md promises, checked against NumPy."""
import numpy as np
import pytest

import ember.tensor as et


def test_tensor_constructor_forms():
    assert et.Tensor().shape == (0,)
    assert et.Tensor().dtype is et.float32
    assert et.Tensor(2, 3).shape == (2, 3)
    t = et.Tensor([[1, 2], [3, 4]])
    assert t.dtype is et.float32
    np.testing.assert_array_equal(t.numpy(), np.array([[1, 2], [3, 4]], dtype=np.float32))
    assert et.Tensor(t.shape).shape == (2, 2)
    with pytest.raises(TypeError, match="size"):
        et.Tensor(2, "3")


@pytest.mark.parametrize("cls, dtype", [
    (et.FloatTensor, et.float32), (et.DoubleTensor, et.float64), (et.HalfTensor, et.float16),
    (et.LongTensor, et.int64), (et.IntTensor, et.int32), (et.ShortTensor, et.int16),
    (et.CharTensor, et.int8), (et.ByteTensor, et.uint8), (et.BoolTensor, et.bool),
])
def test_legacy_classes(cls, dtype):
    assert cls(3).dtype is dtype and cls(3).shape == (3,)
    v = cls([1, 0, 1])
    assert v.dtype is dtype
    np.testing.assert_array_equal(v.numpy(), np.array([1, 0, 1]).astype(dtype.np))
    name = v.type()
    assert name == f"ember.{cls.__name__}"
    back = et.ones(2).type(name)
    assert back.dtype is dtype
    assert et.ones(2).type(cls).dtype is dtype


def test_casts():
    x = et.tensor([1.5, -2.5])
    assert x.double().dtype is et.float64
    assert x.half().dtype is et.float16
    assert x.long().tolist() == [1, -2]
    assert x.int().dtype is et.int32
    assert x.bool().tolist() == [True, True]
    assert x.float() is x  # no copy when nothing changes
    assert x.to(et.float32) is x
    assert x.to(et.float32, copy=True) is not x
