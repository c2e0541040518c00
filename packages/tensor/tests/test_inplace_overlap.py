"""In-place writes into a tensor whose elements share memory (an expanded view): refused with
PyTorch's RuntimeError naming the op, but for the fills and the masked or indexed writes that
PyTorch lets through (their values checked against NumPy writing the same storage). PyTorch
parity: ``tests/parity/test_parity_inplace_overlap.py``."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et

MESSAGE = "more than one element of the written-to tensor refers to a single memory location"


def _expanded():
    base = et.tensor([[1.0, -2.0, 3.0]])
    return base, base.expand(4, 3)


REFUSED = {
    "add_": lambda e: e.add_(1.0),
    "mul_": lambda e: e.mul_(2.0),
    "exp_": lambda e: e.exp_(),
    "clamp_": lambda e: e.clamp_(0.0, 1.0),
    "copy_": lambda e: e.copy_(et.zeros(4, 3)),
    "index_add_": lambda e: e.index_add_(0, et.tensor([0, 1]), et.ones(2, 3)),
    "scatter_": lambda e: e.scatter_(0, et.tensor([[0, 1, 2]]), 1.0),
    "uniform_": lambda e: e.uniform_(),
    "normal_": lambda e: e.normal_(),
    "bernoulli_": lambda e: e.bernoulli_(0.5),
    "random_": lambda e: e.random_(0, 5),
    "exponential_": lambda e: e.exponential_(),
    "geometric_": lambda e: e.geometric_(0.5),
    "cauchy_": lambda e: e.cauchy_(),
    "log_normal_": lambda e: e.log_normal_(),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_and_storage_unchanged(name):
    base, e = _expanded()
    before = base.numpy().copy()
    with pytest.raises(RuntimeError, match=f"^{name}\\(\\): unsupported operation: {MESSAGE}"):
        REFUSED[name](e)
    np.testing.assert_array_equal(base.numpy(), before)  # refused before anything was written


def _numpy_write(name):
    """What each allowed op leaves in the (1, 3) storage, written through NumPy's own expanded
    view of it in the same element order (the last write to an element stays)."""
    st = np.array([[1.0, -2.0, 3.0]])
    v = np.lib.stride_tricks.as_strided(st, (4, 3), (0, 8))
    if name == "fill_":
        v[...] = 7.0
    elif name == "zero_":
        v[...] = 0.0
    elif name == "masked_fill_":
        v[np.array([[True, False, True]] * 4)] = 5.0
    elif name == "index_fill_":
        v[[0, 2]] = -1.0
    elif name == "index_put_":
        v[[1]] = 4.0
    elif name == "setitem_":
        v[0] = 9.0
    return st


ALLOWED = {
    "fill_": lambda e: e.fill_(7.0),
    "zero_": lambda e: e.zero_(),
    "masked_fill_": lambda e: e.masked_fill_(et.tensor([[True, False, True]] * 4), 5.0),
    "index_fill_": lambda e: e.index_fill_(0, et.tensor([0, 2]), -1.0),
    "index_put_": lambda e: e.index_put_((et.tensor([1]),), et.tensor(4.0)),
    "setitem_": lambda e: e.__setitem__(0, 9.0),
}


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_fills_and_indexed_writes_allowed(name):
    base, e = _expanded()
    ALLOWED[name](e)
    np.testing.assert_array_equal(base.numpy(), _numpy_write(name))
    assert base._version > 0  # the write is recorded on the shared version counter


def test_contiguous_and_plain_strided_writes_unaffected():
    x = et.zeros(4, 3)
    x.t().add_(1.0)             # strided, no element shared
    x[:, ::2].mul_(3.0)
    np.testing.assert_array_equal(x.numpy(), np.array([[3.0, 1.0, 3.0]] * 4))
