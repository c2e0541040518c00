"""repeat_interleave's derivative (the copies summed back: over a split axis for one count,
by index_add for a count per slice) against np.add.at of each copy's gradient at its source,
and gradcheck / gradgradcheck, over dims, counts, layouts and complex inputs."""
import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _expected(shape, reps, dim, g):
    """np.add.at of each output slice's gradient at the slice it was copied from."""
    flat = dim is None
    size = int(np.prod(shape)) if flat else shape[dim]
    src = np.repeat(np.arange(size), reps)
    out = np.zeros((size,) if flat else shape, g.dtype)
    np.add.at(np.moveaxis(out, 0 if flat else dim, 0), src,
              np.moveaxis(g, 0 if flat else dim, 0))
    return out.reshape(shape)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("reps", [0, 1, 3, "counts", "one-count"])
def test_repeat_interleave_backward_matches_add_at(shape, reps):
    rng = np.random.default_rng(1)
    for dim in [None, *range(len(shape)), -1]:
        n = int(np.prod(shape)) if dim is None else shape[dim]
        if reps == "counts":
            r_np = rng.integers(0, 3, n)
            r = et.tensor(r_np)
        elif reps == "one-count":
            r_np, r = 2, et.tensor([2])
        else:
            r_np = r = reps
        x = et.tensor(rng.standard_normal(shape), requires_grad=True)
        y = et.repeat_interleave(x, r, dim)
        g = rng.standard_normal(tuple(y.shape))
        y.backward(et.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), _expected(shape, r_np, dim, g),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("args", [(2,), (2, 1), (0, 0), (3, -1), ("counts", 0), ("one", 1),
                                  ("flat", None)])
def test_repeat_interleave_gradcheck(args):
    rng = np.random.default_rng(2)
    r, dim = (args + (None,))[:2]
    if r == "counts":
        r = et.tensor([1, 0, 2])
    elif r == "one":
        r = et.tensor([3])
    elif r == "flat":
        r = et.tensor(np.arange(12) % 3)
    for x in (et.tensor(rng.standard_normal((3, 4)), requires_grad=True),
              et.tensor(rng.standard_normal((4, 3)), requires_grad=True).t(),  # strided
              et.tensor(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)),
                        requires_grad=True)):
        fn = (lambda t: et.repeat_interleave(t, r, dim))
        assert ag.gradcheck(fn, (x,))
        assert ag.gradgradcheck(fn, (x,))


def test_repeat_interleave_of_a_zero_dim_input():
    s = et.tensor(1.5, dtype=et.float64, requires_grad=True)
    et.repeat_interleave(s, 3, 0).backward(et.tensor([1.0, 2.0, 4.0], dtype=et.float64))
    assert s.grad.shape == () and s.grad.item() == 7.0
