"""Convolution, fold/unfold, padding and pooling: NumPy references for forward values and
float64 gradcheck / gradgradcheck for every functional, plus the layers and their errors."""
import contextlib
import itertools
import math

import numpy as np
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et

RNG = np.random.default_rng(1234)


def _t(a, grad=False):
    return et.tensor(np.asarray(a), requires_grad=grad)


def _noncontig(a, grad=True):
    """A float64 tensor with ``a``'s values whose memory is transposed (non-contiguous)."""
    a = np.asarray(a, dtype=np.float64)
    base = et.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)))
    t = base.transpose(-1, -2).detach()
    assert not t.is_contiguous()
    t.requires_grad_(grad)
    return t


# --------------------------------------------------------------------------- NumPy references
def _np_pad(x, p, value=0.0):
    return np.pad(x, [(0, 0), (0, 0)] + [(v, v) for v in p], constant_values=value)


def _np_conv(x, w, b, s, p, d, g):
    """Direct convolution by looping over kernel offsets."""
    nd = x.ndim - 2
    xp = _np_pad(x, p)
    N, C = x.shape[:2]
    O = w.shape[0]
    k = w.shape[2:]
    o = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros((N, O, *o))
    cg, og = C // g, O // g
    for off in itertools.product(*[range(v) for v in k]):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + (o[i] - 1) * s[i] + 1, s[i])
                   for i in range(nd))
        patch = xp[(slice(None), slice(None)) + sl]  # (N, C, *o)
        for gi in range(g):
            wk = w[(slice(gi * og, (gi + 1) * og), slice(None)) + off]  # (og, cg)
            out[:, gi * og:(gi + 1) * og] += np.einsum(
                "oc,nc...->no...", wk, patch[:, gi * cg:(gi + 1) * cg])
    if b is not None:
        out += b.reshape((1, O) + (1,) * nd)
    return out


def _np_conv_transpose(x, w, b, s, p, op, g, d):
    """Scatter each input element times the kernel into the output."""
    nd = x.ndim - 2
    N, Cin = x.shape[:2]
    cog = w.shape[1]
    k = w.shape[2:]
    size = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1
            for i in range(nd)]
    full = np.zeros((N, cog * g, *[size[i] + 2 * p[i] for i in range(nd)]))
    cig = Cin // g
    for off in itertools.product(*[range(v) for v in k]):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + (x.shape[2 + i] - 1) * s[i] + 1, s[i])
                   for i in range(nd))
        for gi in range(g):
            wk = w[(slice(gi * cig, (gi + 1) * cig), slice(None)) + off]  # (cig, cog)
            full[(slice(None), slice(gi * cog, (gi + 1) * cog)) + sl] += np.einsum(
                "ic,ni...->nc...", wk, x[:, gi * cig:(gi + 1) * cig])
    out = full[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + size[i])
                                                  for i in range(nd))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


def _np_pool(x, k, s, p, d, ceil_mode, reduce, pad_value):
    """Windows of (N, C, *spatial) with PyTorch's output size rule, reduced by ``reduce``."""
    nd = x.ndim - 2
    size = x.shape[2:]
    o = []
    for i in range(nd):
        eff = d[i] * (k[i] - 1) + 1
        n = (size[i] + 2 * p[i] - eff + ((s[i] - 1) if ceil_mode else 0)) // s[i] + 1
        if ceil_mode and (n - 1) * s[i] >= size[i] + p[i]:
            n -= 1
        o.append(n)
    need = [max((o[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1, size[i] + p[i]) for i in range(nd)]
    xp = np.full(x.shape[:2] + tuple(need[i] + p[i] for i in range(nd)), pad_value)
    xp[(slice(None), slice(None)) + tuple(slice(p[i], p[i] + size[i]) for i in range(nd))] = x
    out = np.zeros(x.shape[:2] + tuple(o))
    for pos in itertools.product(*[range(v) for v in o]):
        sl = tuple(slice(pos[i] * s[i], pos[i] * s[i] + d[i] * (k[i] - 1) + 1, d[i])
                   for i in range(nd))
        win = xp[(slice(None), slice(None)) + sl].reshape(x.shape[0], x.shape[1], -1)
        out[(slice(None), slice(None)) + pos] = reduce(win, pos)
    return out


# --------------------------------------------------------------------------- convolution
CONV_CASES = [
    # nd, groups, stride, padding, dilation
    (1, 1, 1, 0, 1), (1, 2, 2, 1, 1), (1, 1, 1, 2, 2),
    (2, 1, 1, 0, 1), (2, 2, 2, 1, 1), (2, 1, (2, 1), (1, 0), (1, 2)),
    (3, 1, 1, 1, 1), (3, 2, 2, 0, 1),
]


@pytest.mark.parametrize("nd,g,s,p,d", CONV_CASES)
def test_conv_forward_matches_numpy(nd, g, s, p, d):
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    x = RNG.standard_normal((2, 4) + (6,) * nd)
    w = RNG.standard_normal((6, 4 // g) + (3,) * nd)
    b = RNG.standard_normal(6)
    out = fn(_t(x), _t(w), _t(b), s, p, d, g)
    tup = lambda v: (v,) * nd if isinstance(v, int) else v  # noqa: E731
    ref = _np_conv(x, w, b, tup(s), tup(p), tup(d), g)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_padding_strings(nd):
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    x = RNG.standard_normal((1, 2) + (5,) * nd)
    w = RNG.standard_normal((3, 2) + (4,) * nd)  # even kernel: the odd pad goes right
    same = fn(_t(x), _t(w), padding="same", dilation=1)
    assert tuple(same.shape) == (1, 3) + (5,) * nd
    xp = np.pad(x, [(0, 0), (0, 0)] + [(1, 2)] * nd)
    ref = _np_conv(xp, w, None, (1,) * nd, (0,) * nd, (1,) * nd, 1)
    np.testing.assert_allclose(same.numpy(), ref, rtol=1e-10, atol=1e-10)
    valid = fn(_t(x), _t(w), padding="valid")
    assert tuple(valid.shape) == (1, 3) + (2,) * nd


@pytest.mark.parametrize("nd,g,s,p,op,d", [
    (1, 1, 1, 0, 0, 1), (1, 2, 2, 1, 1, 1), (2, 1, 2, 1, 1, 1), (2, 2, 3, 1, 2, 2),
    (3, 1, 2, 0, 1, 1),
])
def test_conv_transpose_matches_numpy(nd, g, s, p, op, d):
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    x = RNG.standard_normal((2, 4) + (4,) * nd)
    w = RNG.standard_normal((4, 6 // g) + (3,) * nd)
    b = RNG.standard_normal(6)
    out = fn(_t(x), _t(w), _t(b), s, p, op, g, d)
    tup = lambda v: (v,) * nd  # noqa: E731
    ref = _np_conv_transpose(x, w, b, tup(s), tup(p), tup(op), g, tup(d))
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-10)


def test_conv_transpose_is_adjoint_of_conv():
    x = RNG.standard_normal((2, 3, 7, 6))
    w = RNG.standard_normal((4, 3, 3, 2))
    y = RNG.standard_normal((2, 4, 4, 4))
    conv = F.conv2d(_t(x), _t(w), stride=2, padding=1).numpy()
    convt = F.conv_transpose2d(_t(y), _t(w), stride=2, padding=1)
    assert tuple(convt.shape) == x.shape
    np.testing.assert_allclose((conv * y).sum(), (x * convt.numpy()).sum(), rtol=1e-10)


@pytest.mark.parametrize("nd,g,s,p,d", [(1, 2, 2, 1, 1), (2, 1, 1, 1, 2), (2, 2, 2, 0, 1),
                                        (3, 1, 1, 1, 1)])
def test_conv_gradcheck(nd, g, s, p, d):
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    n = 4 if nd < 3 else 3
    x = _noncontig(RNG.standard_normal((1, 2) + (n,) * nd))
    w = _t(RNG.standard_normal((2, 2 // g) + (2,) * nd), True)
    b = _t(RNG.standard_normal(2), True)
    f = lambda x, w, b: fn(x, w, b, s, p, d, g)  # noqa: E731
    assert ag.gradcheck(f, (x, w, b))
    assert ag.gradgradcheck(f, (x, w, b))


@pytest.mark.parametrize("nd,g,s,p,op", [(1, 1, 2, 1, 1), (2, 2, 2, 0, 1), (3, 1, 1, 0, 0)])
def test_conv_transpose_gradcheck(nd, g, s, p, op):
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
    x = _noncontig(RNG.standard_normal((1, 2) + (3,) * nd))
    w = _t(RNG.standard_normal((2, 2 // g) + (2,) * nd), True)
    b = _t(RNG.standard_normal(2 // g * g), True)
    f = lambda x, w, b: fn(x, w, b, s, p, op, g)  # noqa: E731
    assert ag.gradcheck(f, (x, w, b))
    assert ag.gradgradcheck(f, (x, w, b))


def test_conv_unbatched_and_float32():
    x = RNG.standard_normal((3, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
    out = F.conv2d(_t(x), _t(w), padding=1)
    assert out.dtype == et.float32 and tuple(out.shape) == (2, 6, 6)
    ref = _np_conv(x[None].astype(np.float64), w.astype(np.float64), None, (1, 1), (1, 1),
                   (1, 1), 1)[0]
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-4, atol=1e-4)


def test_conv_errors():
    x = et.randn(1, 3, 5, 5)
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(x, et.randn(2, 4, 3, 3))
    with pytest.raises(RuntimeError, match="Kernel size"):
        F.conv2d(x, et.randn(2, 3, 7, 7))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, et.randn(2, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match="dtype"):
        F.conv2d(x, et.randn(2, 3, 3, 3, dtype=et.float64))
    with pytest.raises(RuntimeError, match="4D"):
        F.conv2d(et.randn(5, 5), et.randn(2, 3, 3, 3))
    with pytest.raises(RuntimeError, match="output padding"):
        F.conv_transpose2d(x, et.randn(3, 2, 3, 3), stride=1, output_padding=1)


# --------------------------------------------------------------------------- unfold / fold
def test_unfold_matches_numpy_and_fold_is_adjoint():
    x = RNG.standard_normal((2, 3, 6, 5))
    k, d, p, s = (2, 3), (1, 2), (1, 0), (2, 1)
    cols = F.unfold(_t(x), k, d, p, s).numpy()
    xp = _np_pad(x, p)
    oh = (6 + 2 - 1 - 1) // 2 + 1
    ow = (5 - 2 * 2 - 1) // 1 + 1
    ref = np.zeros((2, 3, 2, 3, oh, ow))
    for i, j in itertools.product(range(2), range(3)):
        ref[:, :, i, j] = xp[:, :, i:i + (oh - 1) * 2 + 1:2, 2 * j:2 * j + ow]
    np.testing.assert_allclose(cols, ref.reshape(2, 18, oh * ow))
    y = RNG.standard_normal(cols.shape)
    back = F.fold(_t(y), (6, 5), k, d, p, s).numpy()
    np.testing.assert_allclose((cols * y).sum(), (x * back).sum(), rtol=1e-10)


def test_fold_unfold_gradcheck():
    x = _noncontig(RNG.standard_normal((1, 2, 4, 4)))
    assert ag.gradcheck(lambda x: F.unfold(x, 2, 1, 1, 2), (x,))
    assert ag.gradgradcheck(lambda x: F.unfold(x, 2, 1, 1, 2), (x,))
    c = _t(RNG.standard_normal((1, 8, 9)), True)
    assert ag.gradcheck(lambda c: F.fold(c, (4, 4), 2, 1, 1, 2), (c,))
    assert ag.gradgradcheck(lambda c: F.fold(c, (4, 4), 2, 1, 1, 2), (c,))


def test_fold_errors():
    with pytest.raises(RuntimeError, match="divisible"):
        F.fold(et.randn(1, 5, 4), (3, 3), 2)
    with pytest.raises(RuntimeError, match="sliding blocks"):
        F.fold(et.randn(1, 4, 5), (3, 3), 2)


# --------------------------------------------------------------------------- padding
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_numpy(mode):
    x = RNG.standard_normal((2, 3, 5, 6))
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    out = F.pad(_t(x), (2, 1, 3, 0), mode)
    ref = np.pad(x, [(0, 0), (0, 0), (3, 0), (2, 1)], mode=np_mode)
    np.testing.assert_allclose(out.numpy(), ref)


def test_pad_constant_value_and_negative():
    x = RNG.standard_normal((2, 4))
    out = F.pad(_t(x), (-1, 2), value=7.0).numpy()
    np.testing.assert_allclose(out, np.concatenate([x[:, 1:], np.full((2, 2), 7.0)], 1))
    out3 = F.pad(_t(x[None]), (0, 0, 1, 1, 1, 0)).numpy()
    assert out3.shape == (2, 4, 4) and out3[1, 1:3].tolist() == x.tolist()
    assert not out3[0].any()


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    x = _noncontig(RNG.standard_normal((1, 2, 3, 4)))
    f = lambda x: F.pad(x, (2, 1, 1, 2), mode)  # noqa: E731
    assert ag.gradcheck(f, (x,))
    assert ag.gradgradcheck(f, (x,))


def test_pad_errors():
    with pytest.raises(RuntimeError, match="divisible by 2"):
        F.pad(et.randn(2, 3), (1,))
    with pytest.raises(RuntimeError, match="Padding size"):
        F.pad(et.randn(1, 2, 3), (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError):
        F.pad(et.randn(1, 2, 3), (1, 1), mode="bogus")


# --------------------------------------------------------------------------- pooling
def _np_maxpool(x, k, s, p, d, ceil_mode):
    return _np_pool(x, k, s, p, d, ceil_mode, lambda w, pos: w.max(-1), -np.inf)


POOL_CASES = [
    # nd, kernel, stride, padding, dilation, ceil_mode
    (1, 3, 2, 1, 1, False), (1, 2, 2, 0, 2, True),
    (2, 2, None, 0, 1, False), (2, 3, 2, 1, 1, True), (2, (3, 2), (2, 1), (1, 0), (1, 2), True),
    (3, 2, 1, 1, 1, False), (3, 3, 2, 1, 1, True),
]


def _tup(v, nd):
    return (v,) * nd if isinstance(v, int) else tuple(v)


@pytest.mark.parametrize("nd,k,s,p,d,ceil", POOL_CASES)
def test_max_pool_matches_numpy(nd, k, s, p, d, ceil):
    fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    x = RNG.standard_normal((2, 3) + (7,) * nd)
    out, idx = fn(_t(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    ref = _np_maxpool(x, _tup(k, nd), _tup(s if s is not None else k, nd), _tup(p, nd),
                      _tup(d, nd), ceil)
    np.testing.assert_allclose(out.numpy(), ref)
    flat = x.reshape(2, 3, -1)
    picked = np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_allclose(picked.reshape(ref.shape), ref)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_gradcheck_and_unpool(nd):
    fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[nd - 1]
    n = 5 if nd < 3 else 4
    # distinct values so that the max is unique and finite differences are exact
    x = _noncontig(RNG.permutation(2 * n ** nd).reshape((1, 2) + (n,) * nd) / 7.0)
    f = lambda x: fn(x, 2, 2, 1)  # noqa: E731
    assert ag.gradcheck(f, (x,))
    assert ag.gradgradcheck(f, (x,))
    out, idx = fn(x.detach(), 2, 2, 1, return_indices=True)
    up = unpool(out, idx, 2, 2, 1, output_size=x.shape[2:])
    ref = np.zeros(x.shape).reshape(1, 2, -1)
    np.put_along_axis(ref, idx.numpy().reshape(1, 2, -1), out.numpy().reshape(1, 2, -1), 2)
    np.testing.assert_allclose(up.numpy(), ref.reshape(x.shape))
    o2 = out.detach().requires_grad_(True)
    g = lambda o: unpool(o, idx, 2, 2, 1, output_size=x.shape[2:])  # noqa: E731
    assert ag.gradcheck(g, (o2,))
    assert ag.gradgradcheck(g, (o2,))


def test_max_pool_nan_and_errors():
    x = et.tensor([[[1.0, float("nan"), 3.0, 2.0]]])
    out = F.max_pool1d(x, 2)
    assert math.isnan(out[0, 0, 0].item()) and out[0, 0, 1].item() == 3.0
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(et.randn(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="too small"):
        F.max_pool2d(et.randn(1, 1, 1, 1), 3)


@pytest.mark.parametrize("nd,k,s,p,ceil,cip,div", [
    (1, 3, 2, 1, False, True, None), (1, 3, 2, 1, True, False, None),
    (2, 2, None, 0, False, True, None), (2, 3, 2, 1, True, True, None),
    (2, 3, 2, 1, True, False, None), (2, 3, 1, 1, False, True, 4),
    (3, 2, 2, 1, True, False, None), (3, 3, 1, 1, False, True, 5),
])
def test_avg_pool_matches_numpy(nd, k, s, p, ceil, cip, div):
    x = RNG.standard_normal((2, 3) + (6,) * nd)
    kw = {} if nd == 1 else {"divisor_override": div}
    fn = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
    out = fn(_t(x), k, s, p, ceil, cip, **kw)
    kk, ss, pp = _tup(k, nd), _tup(s if s is not None else k, nd), _tup(p, nd)
    size = x.shape[2:]

    def reduce(win, pos):
        total = win.sum(-1)
        if div:
            return total / div
        n = 1
        for i in range(nd):
            start = pos[i] * ss[i] - pp[i]
            end = min(start + kk[i], size[i] + pp[i])
            n *= (end - start) if cip else (min(end, size[i]) - max(start, 0))
        return total / n

    ref = _np_pool(x, kk, ss, pp, (1,) * nd, ceil, reduce, 0.0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_avg_and_lp_pool_gradcheck(nd):
    avg = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
    lp = (F.lp_pool1d, F.lp_pool2d, F.lp_pool3d)[nd - 1]
    x = _noncontig(RNG.random((1, 2) + (4,) * nd) + 0.5)
    f = lambda x: avg(x, 3, 2, 1, True, False)  # noqa: E731
    assert ag.gradcheck(f, (x,))
    assert ag.gradgradcheck(f, (x,))
    g = lambda x: lp(x, 2.0, 2)  # noqa: E731
    assert ag.gradcheck(g, (x,))
    assert ag.gradgradcheck(g, (x,))


def test_lp_pool_matches_numpy():
    x = RNG.random((2, 3, 6, 5))
    out = F.lp_pool2d(_t(x), 3, (2, 2), (2, 1))
    ref = _np_pool(x, (2, 2), (2, 1), (0, 0), (1, 1), False,
                   lambda w, pos: (w ** 3).sum(-1) ** (1 / 3), 0.0)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10)
    out1 = F.lp_pool1d(_t(x[:, :, 0]), 2, 3)
    ref1 = np.sqrt((x[:, :, 0, :3] ** 2).sum(-1, keepdims=True))
    np.testing.assert_allclose(out1.numpy(), ref1, rtol=1e-10)


def _adaptive_ref(x, o, reduce):
    nd = x.ndim - 2
    size = x.shape[2:]
    out = np.zeros(x.shape[:2] + tuple(o))
    for pos in itertools.product(*[range(v) for v in o]):
        sl = tuple(slice(pos[i] * size[i] // o[i], -(-(pos[i] + 1) * size[i] // o[i]))
                   for i in range(nd))
        win = x[(slice(None), slice(None)) + sl].reshape(x.shape[0], x.shape[1], -1)
        out[(slice(None), slice(None)) + pos] = reduce(win)
    return out


@pytest.mark.parametrize("nd,o", [(1, 3), (1, 1), (2, (3, 2)), (2, (7, 4)), (3, (2, 3, 1))])
def test_adaptive_pools_match_numpy(nd, o):
    x = RNG.standard_normal((2, 3) + (5, 7, 4)[:nd])
    ot = _tup(o, nd)
    amax = (F.adaptive_max_pool1d, F.adaptive_max_pool2d, F.adaptive_max_pool3d)[nd - 1]
    aavg = (F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d)[nd - 1]
    out, idx = amax(_t(x), o, return_indices=True)
    np.testing.assert_allclose(out.numpy(), _adaptive_ref(x, ot, lambda w: w.max(-1)))
    picked = np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_allclose(picked.reshape(out.shape), out.numpy())
    np.testing.assert_allclose(aavg(_t(x), o).numpy(),
                               _adaptive_ref(x, ot, lambda w: w.mean(-1)), rtol=1e-12)


def test_adaptive_none_size_and_gradcheck():
    x = RNG.standard_normal((1, 2, 5, 4))
    assert tuple(F.adaptive_avg_pool2d(_t(x), (2, None)).shape) == (1, 2, 2, 4)
    xt = _noncontig(RNG.permutation(40).reshape(1, 2, 5, 4) / 3.0)
    for f in (lambda x: F.adaptive_max_pool2d(x, (3, 3)), lambda x: F.adaptive_avg_pool2d(x, 3),
              lambda x: F.adaptive_avg_pool1d(x[:, :, 0], 3),
              lambda x: F.adaptive_max_pool3d(x.unsqueeze(2), (1, 2, 3))):
        assert ag.gradcheck(f, (xt,))
        assert ag.gradgradcheck(f, (xt,))


def test_fractional_max_pool2d():
    x = RNG.standard_normal((2, 3, 9, 8))
    samples = RNG.random((2, 3, 2))
    out, idx = F.fractional_max_pool2d(_t(x), 2, output_size=(4, 5), return_indices=True,
                                       _random_samples=_t(samples))
    assert tuple(out.shape) == (2, 3, 4, 5)

    def starts(sample, size, o, k):
        alpha = (size - k) / (o - 1)
        seq = [int((i + sample) * alpha) - int(sample * alpha) for i in range(o - 1)]
        return seq + [size - k]

    ref = np.zeros((2, 3, 4, 5))
    for n, c in itertools.product(range(2), range(3)):
        hs = starts(samples[n, c, 1], 9, 4, 2)
        ws = starts(samples[n, c, 0], 8, 5, 2)
        for i, j in itertools.product(range(4), range(5)):
            ref[n, c, i, j] = x[n, c, hs[i]:hs[i] + 2, ws[j]:ws[j] + 2].max()
    np.testing.assert_allclose(out.numpy(), ref)
    picked = np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), 2)
    np.testing.assert_allclose(picked.reshape(ref.shape), ref)
    xt = _noncontig(RNG.permutation(36).reshape(1, 1, 6, 6) / 5.0)
    s = _t(RNG.random((1, 1, 2)))
    f = lambda x: F.fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.5),  # noqa: E731
                                          _random_samples=s)
    assert ag.gradcheck(f, (xt,))
    assert ag.gradgradcheck(f, (xt,))


# --------------------------------------------------------------------------- layers
def test_conv_layers_shapes_init_and_repr():
    et.manual_seed(0)
    conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, groups=2, bias=True)
    assert tuple(conv.weight.shape) == (8, 2, 3, 3)
    bound = 1 / math.sqrt(2 * 9)
    assert float(conv.weight.abs().max()) <= bound + 1e-6
    assert float(conv.bias.abs().max()) <= bound + 1e-6
    assert repr(conv) == "Conv2d(4, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), " \
                         "groups=2)"
    assert tuple(conv(et.randn(2, 4, 9, 9)).shape) == (2, 8, 5, 5)
    for mode in ("reflect", "replicate", "circular"):
        c = nn.Conv1d(2, 3, 3, padding="same", padding_mode=mode)
        x = et.randn(1, 2, 6)
        ref = F.conv1d(F.pad(x, (1, 1), mode=mode), c.weight, c.bias)
        np.testing.assert_allclose(c(x).detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    t = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1)
    assert tuple(t.weight.shape) == (3, 2, 3, 3)
    assert tuple(t(et.randn(1, 3, 4, 4), output_size=(8, 8)).shape) == (1, 2, 8, 8)
    assert tuple(nn.ConvTranspose3d(2, 2, 2)(et.randn(1, 2, 2, 2, 2)).shape) == (1, 2, 3, 3, 3)
    with pytest.raises(ValueError):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError):
        nn.Conv2d(3, 4, 3, padding_mode="bogus")


def test_pool_pad_fold_layers():
    x = et.randn(2, 3, 8, 8)
    out, idx = nn.MaxPool2d(2, return_indices=True)(x)
    assert tuple(nn.MaxUnpool2d(2)(out, idx).shape) == (2, 3, 8, 8)
    assert tuple(nn.AvgPool2d(3, 2, 1)(x).shape) == (2, 3, 4, 4)
    assert tuple(nn.AdaptiveAvgPool2d((2, 3))(x).shape) == (2, 3, 2, 3)
    assert tuple(nn.AdaptiveMaxPool1d(3)(x[:, :, 0]).shape) == (2, 3, 3)
    assert tuple(nn.LPPool2d(2, 2)(x.abs()).shape) == (2, 3, 4, 4)
    assert tuple(nn.FractionalMaxPool2d(3, output_size=5)(x).shape) == (2, 3, 5, 5)
    assert tuple(nn.ZeroPad2d((1, 2, 3, 4))(x).shape) == (2, 3, 15, 11)
    assert tuple(nn.ReflectionPad2d(2)(x).shape) == (2, 3, 12, 12)
    assert tuple(nn.ReplicationPad1d(1)(x[:, :, 0]).shape) == (2, 3, 10)
    assert tuple(nn.CircularPad2d(1)(x).shape) == (2, 3, 10, 10)
    assert float(nn.ConstantPad3d(1, 2.0)(et.zeros(1, 1, 1, 1)).sum()) == 2.0 * 26
    cols = nn.Unfold(3, padding=1)(x)
    assert tuple(cols.shape) == (2, 27, 64)
    assert tuple(nn.Fold((8, 8), 3, padding=1)(cols).shape) == (2, 3, 8, 8)


def test_lenet_trains():
    et.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 3 * 3, 3))
    x = et.randn(12, 1, 8, 8)
    y = et.tensor(np.arange(12) % 3)
    losses = []
    params = list(model.parameters())
    for _ in range(30):
        for p in params:
            p.grad = None
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        with ag.no_grad():
            for p in params:
                p.sub_(p.grad * 0.5)
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("pool, shapes, out", [
    (F.adaptive_max_pool1d, [(3, 7), (3, 5), (3, 7)], 2),
    (F.adaptive_max_pool2d, [(2, 5, 6), (2, 4, 4), (2, 5, 6)], (2, 3)),
])
def test_adaptive_max_pool_inside_autobatch_is_the_unbatched_run(pool, shapes, out):
    # the windows' maxima are found with tensor ops: an input whose values are not computed
    # yet (deferred by autobatch) is pooled as the unbatched run pools it
    rng = np.random.default_rng(3)
    w = et.tensor(rng.standard_normal(shapes[0][0]), dtype=et.float64, requires_grad=True)
    xs = [et.tensor(rng.standard_normal(s)) for s in shapes]
    grads = []
    for batched in (False, True):
        w.grad = None
        with ag.autobatch() if batched else contextlib.nullcontext():
            ys = [pool(x * w.reshape((-1,) + (1,) * (x.dim() - 1)), out, return_indices=True)
                  for x in xs]
            loss = et.stack([(v * v).sum() for v, _ in ys]).sum()
        loss.backward()
        grads.append((loss.item(), [i.numpy() for _, i in ys], w.grad.numpy()))
    (l0, i0, g0), (l1, i1, g1) = grads
    np.testing.assert_allclose(l1, l0, rtol=1e-12)
    for a, b in zip(i0, i1):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(g1, g0, rtol=1e-12)


def test_convolution_and_pooling_batch_across_examples():
    # per-example images (a batch of one each, two sizes): the convolutions, poolings and
    # im2col / col2im of one size run as one call over the examples' rows
    rng = np.random.default_rng(4)
    conv = nn.Conv2d(2, 3, 3, padding=1).double()
    tconv = nn.ConvTranspose2d(3, 2, 2, stride=2).double()
    xs = [et.tensor(rng.standard_normal((1, 2) + hw)) for hw in ((5, 6), (4, 4), (5, 6), (4, 4))]

    def per_example(x):
        h = F.max_pool2d(F.relu(conv(x)), 2, ceil_mode=True)
        cols = F.unfold(h, 2)
        back = F.fold(cols, h.shape[-2:], 2)
        return (tconv(h) ** 2).mean() + back.tanh().sum() + F.avg_pool2d(h, 1).sum()

    grads = []
    for batched in (False, True):
        for p in list(conv.parameters()) + list(tconv.parameters()):
            p.grad = None
        with ag.autobatch() if batched else contextlib.nullcontext() as ctx:
            loss = et.stack([per_example(x) for x in xs]).sum()
        loss.backward()
        grads.append((loss.item(), [p.grad.numpy() for p in conv.parameters()] +
                      [p.grad.numpy() for p in tconv.parameters()]))
    assert not {"convolution", "im2col", "col2im",
                "max_pool2d_with_indices"} & set(ctx.stats["unbatched"])
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    for a, b in zip(grads[0][1], grads[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)
