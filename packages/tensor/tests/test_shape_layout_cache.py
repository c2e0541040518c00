"""The shape ops that work out their layouts once per shape and arguments (transpose, movedim,
diagonal, unfold, stack, flatten, unflatten) key their caches on an integer argument's value:
a 0-d integer tensor passed as a dim and changed in place afterwards gives the layout of its
new value, never the one cached for its old value. Checked against NumPy."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et

A = np.arange(24.0).reshape(2, 3, 4)


def _cases():
    x = et.tensor(A)
    return [
        ("transpose", lambda d: x.transpose(d, 2), lambda v: np.swapaxes(A, v, 2), 0, 1),
        ("movedim", lambda d: et.movedim(x, (d,), (2,)), lambda v: np.moveaxis(A, v, 2), 0, 1),
        ("diagonal", lambda d: et.diagonal(x, d, 1, 2),
         lambda v: np.diagonal(A, v, 1, 2), 0, 1),
        ("unfold", lambda d: x.unfold(d, 2, 1),
         lambda v: np.moveaxis(np.lib.stride_tricks.sliding_window_view(A, 2, axis=v), -1, -1),
         1, 2),
        ("stack", lambda d: et.stack([x, x + 1], d), lambda v: np.stack([A, A + 1], v), 0, 2),
        ("flatten", lambda d: x.flatten(d), lambda v: A.reshape(A.shape[:v] + (-1,)), 0, 1),
        ("unflatten", lambda d: x.reshape(24).unflatten(0, (d, -1)),
         lambda v: A.reshape(v, -1), 3, 4),
    ]


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_a_dim_tensor_changed_in_place_gives_its_new_layout(case):
    _, op, ref, first, second = _cases()[case]
    d = et.tensor(first)
    np.testing.assert_array_equal(op(d).numpy(), ref(first))
    d.fill_(second)
    np.testing.assert_array_equal(op(d).numpy(), ref(second))
    np.testing.assert_array_equal(op(np.int64(second)).numpy(), ref(second))
