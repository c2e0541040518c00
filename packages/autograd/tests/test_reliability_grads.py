"""Gradients that must stay finite at the edges of their domain (issue 21, items 3-5, 8):
a NaN here poisons the weights at the next optimizer step."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _grad(f, *xs):
    xs = [et.tensor(x, dtype=et.float64, requires_grad=True) for x in xs]
    f(*xs).backward()
    return [x.grad.numpy() for x in xs]


def test_std_of_a_constant_has_zero_gradient():
    (g,) = _grad(lambda x: x.std(), [3.0, 3.0, 3.0, 3.0])
    np.testing.assert_array_equal(g, np.zeros(4))
    (g,) = _grad(lambda x: x.std(1).sum(), [[1.0, 1.0], [1.0, 3.0]])
    assert np.isfinite(g).all() and (g[0] == 0).all()
    (g,) = _grad(lambda x: et.std_mean(x)[0], [2.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 0.0])


def test_std_gradient_elsewhere_is_unchanged():
    x = et.tensor([[1.0, 2.0, 4.0], [0.5, 0.5, 0.5]], dtype=et.float64, requires_grad=True)
    assert ag.gradcheck(lambda t: t[0:1].std(1), (x,))
    assert ag.gradgradcheck(lambda t: t[0:1].std(1), (x,))


def test_var_of_one_element_backward_is_nan_not_an_exception():
    with pytest.warns(UserWarning, match="degrees of freedom"), np.errstate(invalid="ignore"):
        (g,) = _grad(lambda x: x.var(), [1.0])
    assert math.isnan(g[0])
    with pytest.warns(UserWarning, match="degrees of freedom"):
        (g,) = _grad(lambda x: x.var(correction=3), [1.0, 2.0])
    assert np.isinf(g).all()


def test_cumprod_gradient_with_zeros():
    (g,) = _grad(lambda x: x.cumprod(0).sum(), [2.0, 0.0, 3.0])
    np.testing.assert_array_equal(g, [1.0, 8.0, 0.0])
    (g,) = _grad(lambda x: (x.cumprod(1) * et.arange(8.0, dtype=et.float64).reshape(2, 4)).sum(),
                 [[2.0, 0.0, 3.0, 0.0], [0.0, 0.0, 1.0, 2.0]])
    np.testing.assert_array_equal(g, [[0.0, 14.0, 0.0, 0.0], [4.0, 0.0, 0.0, 0.0]])


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0, 1.5], [0.0, 1.5, 2.0, 0.7],
                                    [1.2, 0.8, 0.0, 0.0]])
def test_cumprod_with_zeros_passes_gradcheck_and_gradgradcheck(values):
    x = et.tensor(values, dtype=et.float64, requires_grad=True)
    assert ag.gradcheck(lambda t: t.cumprod(0), (x,))
    assert ag.gradgradcheck(lambda t: t.cumprod(0), (x,))


def test_prod_gradient_with_and_without_zeros():
    # without a zero the gradient is the product over each element, with one the products of
    # the other elements (one zero: nonzero only there; two: zero everywhere)
    (g,) = _grad(lambda x: x.prod(), [2.0, 0.5, 3.0])
    np.testing.assert_allclose(g, [1.5, 6.0, 1.0])
    (g,) = _grad(lambda x: (x.prod(1) * et.tensor([1.0, 2.0, 3.0], dtype=et.float64)).sum(),
                 [[2.0, 0.0, 3.0], [0.0, 0.0, 1.0], [4.0, 0.5, 2.0]])
    np.testing.assert_allclose(g, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [3.0, 24.0, 6.0]])


@pytest.mark.parametrize("values", [[[2.0, 0.0], [3.0, 1.5]], [[0.0, 0.0], [2.0, 0.7]],
                                    [[1.2, 0.8], [0.5, 1.5]]])
def test_prod_with_zeros_passes_gradcheck_and_gradgradcheck(values):
    x = et.tensor(values, dtype=et.float64, requires_grad=True)
    for f in (lambda t: t.prod(), lambda t: t.prod(0), lambda t: t.prod(1, keepdim=True)):
        assert ag.gradcheck(f, (x,))
        assert ag.gradgradcheck(f, (x,))


def test_atan2_at_the_origin_has_zero_gradient():
    ga, gb = _grad(lambda a, b: et.atan2(a, b).sum(), [0.0, 1.0], [0.0, 1.0])
    assert ga[0] == 0 and gb[0] == 0 and np.isfinite(ga).all() and np.isfinite(gb).all()
    np.testing.assert_allclose([ga[1], gb[1]], [0.5, -0.5])


def test_clamp_tensor_bound_modified_in_place_raises():
    x = et.randn(3, dtype=et.float64, requires_grad=True)
    low = et.zeros(3, dtype=et.float64)
    y = et.clamp(x, min=low).sum()
    low.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_gather_index_modified_in_place_raises():
    x = et.randn(3, 4, requires_grad=True)
    idx = et.tensor([[0], [1], [2]])
    y = x.gather(1, idx).sum()
    idx[0, 0] = 3
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_clamped_elements_get_zero_gradient_even_from_an_infinite_one():
    # sqrt(y - 1) at y = 1 has an infinite derivative; the clamped element's gradient is 0,
    # not inf * 0 = NaN (PyTorch selects, it does not multiply by a mask)
    a = et.tensor([0.5, 2.0, 3.0], requires_grad=True)
    (et.clamp(a, min=1.0) - 1.0).sqrt().sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [0.0, 0.5, 0.5 / np.sqrt(2.0)], rtol=1e-6)
    lo = et.tensor([1.0, 1.0, 4.0], requires_grad=True)
    b = et.tensor([0.5, 2.0, 3.0], requires_grad=True)
    (et.clamp(b, min=lo) - 1.0).sqrt().sum().backward()
    assert np.isfinite(b.grad.numpy()).all() and b.grad.numpy()[0] == 0.0


@pytest.mark.parametrize("split", [lambda t: t[:1].chunk(2, 0), lambda t: t.split(3, 0),
                                   lambda t: et.split_with_sizes(t, [3], 0),
                                   lambda t: et.tensor_split(t, 1, 1), lambda t: et.hsplit(t, 1),
                                   lambda t: t.reshape(-1).chunk(1), lambda t: t.split(4, 1)])
def test_split_into_one_piece_passes_gradcheck(split):
    # one piece: the node has one output, so its backward gets one gradient, not a tuple
    x = et.tensor(np.arange(12.0).reshape(3, 4) / 7, requires_grad=True)
    assert len(split(x)) == 1
    assert ag.gradcheck(lambda t: split(t)[0] * 3, (x,))
    assert ag.gradgradcheck(lambda t: split(t)[0] ** 2, (x,))


@pytest.mark.parametrize("eq, shapes", [
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("b...d,d->b...", [(2, 3, 4, 5), (5,)]),
    ("...i,...i", [(3, 4), (3, 4)]), ("i...->...", [(3, 2, 4)]), ("...ii->...i", [(2, 3, 3)]),
    ("ij...,jk->ik...", [(2, 3, 4), (3, 5)]), ("...", [(2, 3)]),
    ("a...,a...->...", [(3, 2), (3, 2)])])
def test_einsum_with_an_ellipsis_passes_gradcheck(eq, shapes):
    rng = np.random.default_rng(len(eq))
    xs = tuple(et.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes)
    np.testing.assert_allclose(et.einsum(eq, *xs).detach().numpy(),
                               np.einsum(eq, *[x.detach().numpy() for x in xs]), rtol=1e-12)
    assert ag.gradcheck(lambda *t: et.einsum(eq, *t), xs)
    assert ag.gradgradcheck(lambda *t: et.einsum(eq, *t), xs)


def test_einsum_ellipsis_that_broadcasts_names_the_shapes_in_backward():
    a = et.ones(1, 3, 4, requires_grad=True)
    y = et.einsum("...ij,...jk->...ik", a, et.ones(2, 4, 5))
    with pytest.raises(RuntimeError, match=r"'\.\.\.' stands for broadcast .*\[1, 3, 4\]"):
        y.sum().backward()


def test_list_arguments_changed_after_the_call_leave_backward_alone():
    # a node keeps the list arguments as they were at the call (PyTorch reads them into sizes
    # at once): dims, an index with lists, the tensors of a cat the caller appends to later
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 4))
    x = et.tensor(a, requires_grad=True)
    dims, rows, parts = [0], [0, 1], [x[0]]
    w = et.tensor(rng.standard_normal((3, 4)))
    ys = [x.sum(dim=dims), x[rows, :, [1]], et.cat(parts, 0)]
    dims[0] = 2
    rows.append(0)
    parts.append(x[1])
    loss = (ys[0] * w).sum() + ys[1].sum() * 2.0 + (ys[2] * et.cat([w, w], 0)[:3]).sum()
    loss.backward()
    wn = w.numpy()
    want = np.broadcast_to(wn, a.shape).copy()  # the sum over dim 0, times w
    want[:, :, 1] += 2.0  # x[[0, 1], :, [1]], twice
    want[0] += wn  # cat([x[0]])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
