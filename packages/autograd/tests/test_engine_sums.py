"""How the engine sums the gradients that reach one tensor from several uses: in place into
sums it made itself (never into a gradient someone else holds), and index_select's
row-sparse gradients concatenated and made dense once. Oracles: NumPy and gradcheck."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _leaf(rng, *shape):
    return et.tensor(rng.standard_normal(shape), dtype=et.float64, requires_grad=True)


def test_a_gradient_shared_by_two_inputs_is_never_summed_into():
    # add's derivative hands the same tensor to both inputs; later uses add more into each
    rng = np.random.default_rng(0)
    a, b = _leaf(rng, 3), _leaf(rng, 3)
    s = a + b
    y = (s * 1.0 + a * 2.0 + a * 3.0 + b * 4.0 + b * 5.0).sum()
    y.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full(3, 1 + 2 + 3))
    np.testing.assert_allclose(b.grad.numpy(), np.full(3, 1 + 4 + 5))


def test_many_uses_of_one_intermediate_sum_like_numpy():
    rng = np.random.default_rng(1)
    x = _leaf(rng, 4, 2)
    h = x.tanh()
    w = rng.standard_normal(7)
    y = sum((h * float(c)).sum() for c in w)
    (gx,) = ag.grad(y, x)
    expect = w.sum() * (1 - np.tanh(x.detach().numpy()) ** 2)
    np.testing.assert_allclose(gx.numpy(), expect, rtol=1e-12)


def _lookup_grads(weight_np, index_lists, dense_scale):
    """Reference: dense one-hot accumulation of the gradient of
    sum_k sum(rows(index_k) * k) + dense_scale * sum(weight)."""
    g = np.full_like(weight_np, dense_scale)
    for k, idx in enumerate(index_lists, 1):
        np.add.at(g, idx, float(k))
    return g


@pytest.mark.parametrize("dense_first", [True, False])
def test_repeated_lookups_and_a_dense_use_sum_like_numpy(dense_first):
    rng = np.random.default_rng(2)
    w = _leaf(rng, 6, 3)
    index_lists = [[1, 1, 4], [0], [5, 1], [4, 4, 4, 2]]
    terms = [(et.index_select(w, 0, et.tensor(idx)) * float(k)).sum()
             for k, idx in enumerate(index_lists, 1)]
    dense = w.sum() * 0.5
    loss = dense + sum(terms) if dense_first else sum(terms) + dense
    loss.backward()
    expect = _lookup_grads(w.detach().numpy(), index_lists, 0.5)
    np.testing.assert_allclose(w.grad.numpy(), expect, rtol=1e-12)
    loss2 = sum((et.index_select(w, 0, et.tensor(idx)) * float(k)).sum()
                for k, idx in enumerate(index_lists, 1))
    loss2.backward()  # accumulates into the existing .grad
    np.testing.assert_allclose(w.grad.numpy(), expect + _lookup_grads(
        w.detach().numpy(), index_lists, 0.0), rtol=1e-12)


def test_lookups_along_dim_1_and_through_an_intermediate():
    rng = np.random.default_rng(3)
    w = _leaf(rng, 2, 5)
    h = w * 2.0  # the sparse gradients meet at a non-leaf node first
    y = (et.index_select(h, 1, et.tensor([0, 3])).sum()
         + et.index_select(h, 1, et.tensor([3, 3, 4])).sum() * 2.0)
    (g,) = ag.grad(y, w)
    expect = np.zeros((2, 5))
    expect[:, [0, 3]] += 2.0
    np.add.at(expect, (slice(None), [3, 3, 4]), 4.0)
    np.testing.assert_allclose(g.numpy(), expect, rtol=1e-12)


def test_a_hook_on_the_table_sees_one_dense_gradient():
    rng = np.random.default_rng(4)
    w = _leaf(rng, 4, 2)
    seen = []
    w.register_hook(lambda g: seen.append(g.numpy().copy()))
    (et.index_select(w, 0, et.tensor([1])).sum()
     + et.index_select(w, 0, et.tensor([1, 2])).sum()).backward()
    assert len(seen) == 1
    expect = np.zeros((4, 2))
    expect[1] = 2.0
    expect[2] = 1.0
    np.testing.assert_allclose(seen[0], expect)


def test_double_backward_through_repeated_lookups():
    rng = np.random.default_rng(5)
    w = _leaf(rng, 5, 2)
    idx = (et.tensor([0, 2, 2]), et.tensor([2, 4]))

    def f(weight):
        return sum((et.index_select(weight, 0, i) ** 3).sum() for i in idx)

    assert ag.gradcheck(f, (w,))
    assert ag.gradgradcheck(f, (w,))


def test_no_intermediate_buffer_outlives_backward_with_lookups():
    import gc
    import weakref

    rng = np.random.default_rng(6)
    w = _leaf(rng, 50, 4)
    h = et.index_select(w, 0, et.tensor([1, 2])) * 2.0
    ref = weakref.ref(h)
    loss = h.sum() + et.index_select(w, 0, et.tensor([3])).sum()
    del h
    loss.backward()
    del loss
    gc.collect()
    assert ref() is None


def test_lookups_and_a_list_argument_reach_the_same_table():
    # cat's gradient arrives through a list edge; index_select's as lazily summed rows
    rng = np.random.default_rng(7)
    w = _leaf(rng, 3, 2)
    y = (et.index_select(w, 0, et.tensor([2, 2])).sum()
         + (et.cat([w, w * 2.0], 0) * 3.0).sum()
         + et.index_select(w, 0, et.tensor([0])).sum())
    y.backward()
    expect = np.full((3, 2), 3.0 + 6.0)
    expect[2] += 2.0
    expect[0] += 1.0
    np.testing.assert_allclose(w.grad.numpy(), expect, rtol=1e-12)


def test_index_select_along_two_dims_of_one_tensor():
    # the slice gradients of lookups along dim 0 and dim 1 of one leaf are summed densely
    x = et.tensor(np.arange(20.0).reshape(5, 4) / 7, requires_grad=True)
    i = et.tensor([3, 0, 3, 1])

    def f(t):
        return (t.index_select(dim=0, index=i) * 2).sum() + \
            et.index_select(t, dim=1, index=i[:2]).pow(2).sum() + t.index_select(0, i[1:]).sum()

    f(x).backward()
    want = np.zeros((5, 4))
    np.add.at(want, [3, 0, 3, 1], 2.0)
    np.add.at(want, [0, 3, 1], 1.0)
    want[:, [3, 0]] += 2 * x.detach().numpy()[:, [3, 0]]
    np.testing.assert_allclose(x.grad.numpy(), want)
    assert ag.gradcheck(f, (x,)) and ag.gradgradcheck(f, (x,))


def test_mean_and_sum_gradients_feed_unary_backwards():
    """The expanded gradients of sum and mean into unary ops and products by a number (computed
    once per distinct element, see tensor's test_expanded_operands.py)."""
    x = et.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    (x.tanh().mean() + (-x).sum() + (x * 3.0).mean()).backward()
    want = (1 - np.tanh(x.detach().numpy()) ** 2) / 12 - 1 + 3.0 / 12
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
