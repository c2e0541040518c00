"""nll_loss_forward / nll_loss_backward on the CPU's one-pass kernels, against NumPy: every
layout, weights, ignored targets, signed zeros, empty batches, strided inputs, bad targets."""
import numpy as np
import pytest

import ember.tensor as et

LAYOUTS = [((5, 4), (5,)), ((4,), ()), ((3, 4, 2, 5), (3, 2, 5)), ((0, 4), (0,)),
           ((3, 4, 0), (3, 0))]


def _oracle(x, t, w, r, ignore=-100):
    """``(loss, total_weight)`` by NumPy, float64."""
    C = x.shape[0] if x.ndim == 1 else x.shape[1]
    rows = x.reshape(1, C) if x.ndim == 1 else np.moveaxis(x, 1, -1).reshape(-1, C)
    flat = t.reshape(-1)
    valid = flat != ignore
    safe = np.where(valid, flat, 0)
    ww = np.ones(C) if w is None else w.astype(np.float64)
    picked = np.where(valid, -rows[np.arange(len(flat)), safe] * ww[safe], 0.0)
    total = float((ww[safe] * valid).sum())
    if r == 0:
        return picked.reshape(t.shape), 0.0 if x.ndim > 1 else total
    s = picked.sum()
    with np.errstate(all="ignore"):
        return (np.float64(s) / total if r == 1 else s), total


@pytest.mark.parametrize("shape,tshape", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("r", [0, 1, 2])
def test_forward_matches_numpy(shape, tshape, dtype, weighted, r):
    rng = np.random.default_rng(0)
    x = np.log(rng.random(shape)).astype(dtype)
    t = rng.integers(0, 4, tshape)
    if t.size > 1:
        t.reshape(-1)[0] = -100
    w = rng.random(4).astype(dtype) if weighted else None
    loss, total = et.nll_loss_forward(et.tensor(x), et.tensor(t),
                                      None if w is None else et.tensor(w), r, -100)
    want, want_total = _oracle(x.astype(np.float64), t, w, r)
    assert loss.dtype == total.dtype == et.tensor(x).dtype
    assert loss.shape == np.shape(want)
    rtol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(loss.numpy(), want, rtol=rtol, equal_nan=True)
    np.testing.assert_allclose(total.numpy(), want_total, rtol=rtol)


def test_ignored_rows_are_positive_zero_and_nothing_counted_is_nan():
    x = et.tensor([[-np.inf, -1.0], [-2.0, -3.0]])
    t = et.tensor([-100, -100])
    none = et.nll_loss_forward(x, t, None, 0, -100)[0].numpy()
    assert (none == 0).all() and not np.signbit(none).any()
    total = et.nll_loss_forward(x, t, None, 2, -100)[0].numpy()
    assert total == 0 and not np.signbit(total)
    assert np.isnan(et.nll_loss_forward(x, t, None, 1, -100)[0].item())


def test_strided_input_and_target():
    rng = np.random.default_rng(1)
    x = np.log(rng.random((6, 8))).astype(np.float32)
    t = rng.integers(0, 6, 16)
    xt, tt = et.tensor(x).t(), et.tensor(t)[::2]  # (8, 6) transposed, every other target
    got = et.nll_loss_forward(xt, tt, None, 0, -100)[0].numpy()
    np.testing.assert_array_equal(got, -x.T[np.arange(8), t[::2]])


@pytest.mark.parametrize("bad,first", [([0, 4], 4), ([0, -1], -1), ([-100, 7], 7)])
def test_bad_target_raises_pytorch_error(bad, first):
    x = et.tensor(np.zeros((2, 4), np.float32))
    with pytest.raises(IndexError, match=f"Target {first} is out of bounds"):
        et.nll_loss_forward(x, et.tensor(bad), None, 1, -100)
    with pytest.raises(IndexError, match=f"Target {first} is out of bounds"):
        et.nll_loss_backward(et.tensor(1.0), x, et.tensor(bad), None, 1, -100, et.tensor(1.0))


@pytest.mark.parametrize("shape,tshape", LAYOUTS[:3])
@pytest.mark.parametrize("r", [0, 1, 2])
def test_backward_writes_the_input_layout(shape, tshape, r):
    rng = np.random.default_rng(2)
    x = np.log(rng.random(shape)).astype(np.float32)
    t = rng.integers(0, 4, tshape)
    if t.size > 1:
        t.reshape(-1)[-1] = -100
    w = rng.random(4).astype(np.float32)
    xe, te, we = et.tensor(x), et.tensor(t), et.tensor(w)
    loss, total = et.nll_loss_forward(xe, te, we, r, -100)
    g = et.nll_loss_backward(et.ones_like(loss), xe, te, we, r, -100, total).numpy()
    assert g.shape == x.shape and g.dtype == x.dtype and g.flags.c_contiguous
    C = 4
    rows = np.moveaxis(g, 1, -1).reshape(-1, C) if g.ndim > 1 else g.reshape(1, C)
    flat = t.reshape(-1)
    valid = flat != -100
    scale = 1.0 / w[flat[valid]].sum() if r == 1 else 1.0
    want = np.zeros_like(rows)
    want[np.nonzero(valid)[0], flat[valid]] = -w[flat[valid]] * scale
    np.testing.assert_allclose(rows, want, rtol=1e-6)
