"""Views whose storage is modified in place after they were taken (through the base or
through another view) get their history rebuilt from the base's current one, as PyTorch
regenerates view nodes. Expected gradients are worked out by hand for x = [1, 2, 3]."""
from __future__ import annotations

import numpy as np

import ember.autograd as ag
import ember.tensor as et


def _x():
    return et.tensor([1.0, 2.0, 3.0], dtype=et.float64, requires_grad=True)


def test_a_view_sees_an_in_place_change_made_through_another_view():
    x = _x()
    b = x * 1
    v1, v2 = b[0:2], b[1:3]
    v2.mul_(2)  # b = [x0, 2 x1, 2 x2], so v1 = [x0, 2 x1]
    np.testing.assert_allclose(v1.detach().numpy(), [1.0, 4.0])
    (v1 * v1).sum().backward()  # x0^2 + 4 x1^2
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 16.0, 0.0])


def test_a_view_sees_an_in_place_change_of_its_base():
    x = _x()
    b = x * 1
    v = b[1:]
    b.mul_(3)
    (v * v).sum().backward()  # 9 x1^2 + 9 x2^2
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 36.0, 54.0])


def test_a_view_of_a_view_is_rebuilt_from_the_first_base():
    x = _x()
    b = (x * 1).view(3, 1)
    v = b[1:].view(2)
    b[0:2].add_(b[0:2])  # b = [2 x0, 2 x1, x2]
    v.sum().backward()  # 2 x1 + x2
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0, 1.0])


def test_an_in_place_op_on_a_stale_view_builds_on_the_current_values():
    x = _x()
    b = x * 1
    v1, v2 = b[0:2], b[1:3]
    v2.mul_(2)
    v1.add_(1)  # b = [x0 + 1, 2 x1 + 1, 2 x2]
    np.testing.assert_allclose(b.detach().numpy(), [2.0, 5.0, 6.0])
    (b * b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * 2.0, 2 * 5.0 * 2, 2 * 6.0 * 2])


def test_unmodified_views_keep_their_recorded_node():
    x = _x()
    b = x * 1
    v = b[0:2]
    fn = v.grad_fn
    (v * 2).sum().backward()
    assert v.grad_fn is fn
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0, 0.0])


def test_a_leaf_made_from_a_detached_view_stays_a_leaf():
    w = _x()
    d = w.detach()[0:2].requires_grad_()
    with ag.no_grad():
        w.mul_(2)  # shares d's storage and version counter
    (d * 3).sum().backward()
    assert d.is_leaf and w.grad is None
    np.testing.assert_allclose(d.grad.numpy(), [3.0, 3.0])


def test_rebuilt_views_pass_gradcheck():
    def f(x):
        b = x * 1
        v1, v2 = b[0:2], b[1:3]
        v2.mul_(v2)
        return (v1.exp() * b[2]).sum()

    assert ag.gradcheck(f, (et.tensor([0.3, -0.2, 0.5], dtype=et.float64,
                                      requires_grad=True),))
