"""In-place ops recorded by autograd (an out-of-place result written back into the tensor)
refuse a tensor whose elements share memory exactly as the eager op does: an expanded view of
a value in the graph raised nothing and wrote the result into the shared storage."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag  # noqa: F401  (installs autograd)
import ember.tensor as et

MESSAGE = "more than one element of the written-to tensor refers to a single memory location"

REFUSED = {
    "add_": lambda e: e.add_(1.0),
    "mul_": lambda e: e.mul_(e.detach()),
    "sigmoid_": lambda e: e.sigmoid_(),
    "clamp_": lambda e: e.clamp_(min=0.0),
    "copy_": lambda e: e.copy_(et.zeros(4, 3, dtype=et.float64)),
    "lerp_": lambda e: e.lerp_(et.ones(4, 3, dtype=et.float64), 0.5),
    "index_add_": lambda e: e.index_add_(0, et.tensor([0, 1]), et.ones(2, 3, dtype=et.float64)),
    "scatter_add_": lambda e: e.scatter_add_(0, et.tensor([[0, 1, 2]]),
                                             et.ones(1, 3, dtype=et.float64)),
    "masked_scatter_": lambda e: e.masked_scatter_(et.ones(4, 3, dtype=et.bool),
                                                   et.ones(4, 3, dtype=et.float64)),
    "uniform_": lambda e: e.uniform_(),
}


def _graph_value():
    w = et.tensor([[0.5, -1.0, 2.0]], dtype=et.float64, requires_grad=True)
    y = w * 2.0
    return w, y


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_expanded_value_in_graph_refused(name):
    w, y = _graph_value()
    with pytest.raises(RuntimeError, match=f"^{name}\\(\\): unsupported operation: {MESSAGE}"):
        REFUSED[name](y.expand(4, 3))
    np.testing.assert_array_equal(y.detach().numpy(), [[1.0, -2.0, 4.0]])
    assert y._version == 0
    y.sum().backward()  # the graph is intact
    np.testing.assert_array_equal(w.grad.numpy(), [[2.0, 2.0, 2.0]])


def test_fill_of_expanded_value_in_graph_allowed():
    """fill_ is allowed (PyTorch's too); its gradient stops at the filled elements."""
    w, y = _graph_value()
    e = y.expand(4, 3)
    e.fill_(3.0)
    np.testing.assert_array_equal(y.detach().numpy(), [[3.0, 3.0, 3.0]])
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0.0, 0.0, 0.0]])


@pytest.mark.parametrize("write", [
    lambda e: e.masked_fill_(et.tensor([[True, False, True]] * 4), 5.0),
    lambda e: e.index_fill_(0, et.tensor([0]), 1.0),
    lambda e: e.index_put_((et.tensor([1]),), et.tensor(4.0, dtype=et.float64)),
    lambda e: e.__setitem__(0, 9.0),
], ids=["masked_fill_", "index_fill_", "index_put_", "setitem"])
def test_masked_and_indexed_writes_of_expanded_value_in_graph_refused(write):
    """Written back from an out-of-place result, rows of different new values would leave the
    last row's in the shared storage, not what the eager kernel writes: refused instead."""
    w, y = _graph_value()
    with pytest.raises(RuntimeError, match="share memory .* recorded for autograd"):
        write(y.expand(4, 3))
    np.testing.assert_array_equal(y.detach().numpy(), [[1.0, -2.0, 4.0]])
