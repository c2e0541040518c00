"""unfold's backward (windows grouped by offset, each group one reshape) against a scatter-add
of the window elements, over sizes and steps with and without overlap, every dim, 0-d."""
import numpy as np
import pytest

import ember.autograd  # noqa: F401  (registers the derivative table)
import ember.tensor as et


def _expected(x_shape, dim, size, step, g):
    """np.add.at of each window element's gradient at its input position."""
    out = np.zeros(x_shape, g.dtype)
    moved = np.moveaxis(out, dim, -1)  # a view: writes land in out
    gm = np.moveaxis(g, dim, -2)  # (..., n, size)
    for k in range(gm.shape[-2]):
        for j in range(size):
            moved[..., k * step + j] += gm[..., k, j]
    return out


@pytest.mark.parametrize("shape", [(7,), (2, 6), (3, 8, 2)])
@pytest.mark.parametrize("size,step", [(0, 1), (1, 1), (2, 2), (3, 1), (3, 2), (2, 3), (5, 2)])
def test_unfold_backward_matches_scatter_add(shape, size, step):
    rng = np.random.default_rng(0)
    for dim in range(len(shape)):
        if size > shape[dim]:
            continue
        x = et.tensor(rng.standard_normal(shape), requires_grad=True)
        y = x.unfold(dim, size, step)
        g = rng.standard_normal(tuple(y.shape))
        y.backward(et.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), _expected(shape, dim, size, step, g))


def test_unfold_backward_0d_and_complex():
    for size in (0, 1):
        x = et.tensor(2.0, requires_grad=True)
        x.unfold(0, size, 1).sum().backward()
        assert x.grad.shape == () and float(x.grad) == size
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((4, 6)) + 1j * rng.standard_normal((4, 6))
    x = et.tensor(xv, requires_grad=True)
    y = x.unfold(1, 3, 1)
    g = rng.standard_normal(tuple(y.shape)) + 1j * rng.standard_normal(tuple(y.shape))
    y.backward(et.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), _expected((4, 6), 1, 3, 1, g))
