"""The op core's contract as a user meets it: keyword calls record the same graph as
positional ones, ``out=`` writes through the registry, and backward frees saved tensors, not
nodes (so a graph whose nodes saved nothing can be backpropagated again)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _x(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return et.tensor(rng.standard_normal(shape), dtype=et.float64, requires_grad=True)


def test_index_select_and_gather_by_keyword_backpropagate():
    x = _x(4, 3)
    i = et.tensor([2, 0, 2])
    x.index_select(dim=0, index=i).sum().backward()
    want = np.zeros((4, 3))
    np.add.at(want, [2, 0, 2], 1.0)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    y = _x(2, 3)
    idx = et.tensor([[0, 1, 0]])
    et.gather(y, dim=0, index=idx).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [[1, 0, 1], [0, 1, 0]])


def test_lerp_weight_by_keyword_backpropagates():
    a, b = _x(3), _x(3, seed=1)
    et.lerp(a, b, weight=0.25).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 0.75)
    np.testing.assert_allclose(b.grad.numpy(), 0.25)


def test_clamp_bound_passed_by_keyword_gets_its_gradient():
    y = et.tensor([-1.0, 0.5, 2.0], dtype=et.float64, requires_grad=True)
    lo = et.tensor([0.0, 0.0, 0.0], dtype=et.float64, requires_grad=True)
    et.clamp(y, min=lo).sum().backward()
    np.testing.assert_array_equal(lo.grad.numpy(), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 1.0, 1.0])


def test_cat_tensors_by_keyword_records_the_graph():
    y = _x(2)
    z = et.cat(tensors=[y, y])
    assert z.grad_fn is not None
    (z * et.arange(4.0, dtype=et.float64)).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [2.0, 4.0])


def test_out_receives_the_result_and_refuses_autograd():
    a = et.tensor([1.0, 2.0])
    o = et.zeros(2)
    assert et.add(a, a, out=o) is o
    np.testing.assert_array_equal(o.numpy(), [2.0, 4.0])
    r = et.empty(0)
    et.index_select(a, 0, et.tensor([1, 1, 0]), out=r)
    np.testing.assert_array_equal(r.numpy(), [2.0, 2.0, 1.0])
    with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
        et.mul(_x(2), 2.0, out=et.empty(2, dtype=et.float64))
    with ag.no_grad():  # without grad mode it is an ordinary write
        et.mul(_x(2), 2.0, out=et.empty(2, dtype=et.float64))
    with pytest.raises(RuntimeError, match="Float can't be cast to the desired output type Long"):
        et.sum(a, out=et.empty(0, dtype=et.int64))
    with pytest.raises(TypeError, match="index_select.*unexpected keyword argument 'foo'"):
        et.index_select(a, 0, et.tensor([0]), foo=1)


def test_backward_twice_through_nodes_that_saved_nothing():
    """The seed documents' program: ``result = mean(w)``, backward three times,
    accumulating and zeroing ``w.grad`` in between."""
    w = et.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    result = et.mean(w)
    result.backward()
    np.testing.assert_allclose(w.grad.numpy(), 0.25)
    result.backward()
    np.testing.assert_allclose(w.grad.numpy(), 0.5)
    w.grad.zero_()
    result.backward()
    np.testing.assert_allclose(w.grad.numpy(), 0.25)


def test_backward_twice_through_saved_tensors_raises():
    w = _x(3)
    y = (w * w).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (w * w).sum()
    z.backward(retain_graph=True)
    z.backward()  # retained: fine
    np.testing.assert_allclose(w.grad.numpy(), 6 * w.detach().numpy())


def test_bound_call_is_read_by_name():
    x = _x(3, 2)
    y = et.index_select(index=et.tensor([1]), dim=0, input=x)
    assert y.grad_fn.args.dim == 0
    assert y.grad_fn.args._fields == ("input", "dim", "index")


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    w = _x(3)
    seen = []
    h = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    np.testing.assert_allclose(seen[0].numpy(), 2.0)
    np.testing.assert_allclose(seen[1].numpy(), 5.0)
    h.remove()
    (w * 1).sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)


def test_queued_callbacks_run_once_after_backward():
    from ember.autograd.engine import queue_callback

    w = _x(2)
    order = []

    def hook(g):
        order.append("hook")
        queue_callback(lambda: order.append(("done", w.grad is not None)))
        return g

    y = w * 2
    y.register_hook(hook)
    y.sum().backward()
    assert order == ["hook", ("done", True)]
    with pytest.raises(RuntimeError, match="during the backward pass"):
        queue_callback(lambda: None)
