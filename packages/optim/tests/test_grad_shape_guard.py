"""Issue 21, item 12: a gradient of the wrong shape never reaches an optimizer's update (it
used to broadcast silently through RMSprop, Adagrad and SGD)."""
from __future__ import annotations

import pytest

import ember.optim as optim
import ember.tensor as et


@pytest.mark.parametrize("cls", [optim.SGD, optim.RMSprop, optim.Adagrad, optim.Adam])
def test_wrong_shape_grad_is_refused_and_the_step_keeps_shapes(cls):
    p = et.ones(3, requires_grad=True)
    opt = cls([p], lr=0.1)
    with pytest.raises(RuntimeError, match="size"):
        p.grad = et.ones(1)
    p.grad = et.full((3,), 0.5)
    opt.step()
    assert tuple(p.shape) == (3,) and tuple(p.grad.shape) == (3,)
    assert all(v < 1.0 for v in p.tolist())
