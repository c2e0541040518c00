"""as_strided's gradient works over the storage, as PyTorch's: the output gradient is added at
the storage positions its elements view (overlapping elements sum), and the input reads its
gradient from its own positions, so positions the input does not hold (the gaps of a sliced
input, elements before its offset) give it nothing. Checked against a NumPy reference built on
the storage, and by finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _reference(base_shape, make, size, stride, offset, w):
    """The gradient of sum(as_strided(make(base), ...) * w) w.r.t. base, by NumPy: w added at
    each viewed storage position, then kept only where make(base)'s elements lie."""
    n = int(np.prod(base_shape))
    ids = make(np.arange(n).reshape(base_shape))  # storage position of each input element
    start = ids.flat[0] if ids.size else 0
    off = start if offset is None else offset
    pos = np.full(size, off, dtype=np.int64)
    for k, (m, s) in enumerate(zip(size, stride)):
        shape = [1] * len(size)
        shape[k] = m
        pos = pos + (np.arange(m) * s).reshape(shape)
    storage = np.zeros(max(n, int(pos.max()) + 1 if pos.size else 0))
    np.add.at(storage, pos.reshape(-1), np.asarray(w, dtype=np.float64).reshape(-1))
    grad = np.zeros(n)
    grad[ids.reshape(-1)] = storage[ids.reshape(-1)]
    return grad.reshape(base_shape)


CASES = [
    ("contiguous, transposed view", lambda b: b, (8, 6), (1, 8), None),
    ("overlapping windows", lambda b: b, (3, 3), (2, 3), 5),
    ("transposed input", lambda b: b.T if isinstance(b, np.ndarray) else b.t(), (4, 4), (8, 1),
     0),
    ("sliced rows, offset inside", lambda b: b[2:], (3, 3), (1, 2), 20),
    ("sliced rows, view before the input's offset", lambda b: b[2:], (3, 3), (1, 2), 3),
    ("strided columns: gaps between the input's elements", lambda b: b[:, ::2], (3, 3), (1, 1),
     None),
    ("empty view", lambda b: b, (0, 3), (1, 2), 0),
    ("0-d view", lambda b: b, (), (), 7),
]


@pytest.mark.parametrize("name, make, size, stride, offset", CASES, ids=[c[0] for c in CASES])
def test_as_strided_gradient_matches_the_storage_reference(name, make, size, stride, offset):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 8))
    w = rng.standard_normal(size)
    base = et.tensor(a, requires_grad=True)
    y = et.as_strided(make(base), size, stride, offset)
    (y * et.tensor(w)).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), _reference(a.shape, make, size, stride, offset,
                                                             w))


# finite differences of the base see every position the view reads; those that read storage
# the input does not hold (the two cases outside it) are a function of more than the input
_OUTSIDE = ("sliced rows, view before the input's offset",
            "strided columns: gaps between the input's elements")
_NONEMPTY = [c for c in CASES if np.prod(c[2]) > 0 and c[0] not in _OUTSIDE]


@pytest.mark.parametrize("name, make, size, stride, offset", _NONEMPTY,
                         ids=[c[0] for c in _NONEMPTY])
def test_as_strided_gradcheck_and_gradgradcheck(name, make, size, stride, offset):
    a = et.tensor(np.random.default_rng(1).standard_normal((6, 8)), requires_grad=True)

    def fn(t):
        return et.as_strided(make(t), size, stride, offset)

    assert ag.gradcheck(fn, (a,))
    assert ag.gradgradcheck(fn, (a,))
