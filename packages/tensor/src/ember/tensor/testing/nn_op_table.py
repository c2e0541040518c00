"""The op table's entries for nn's primitives (``ember.tensor._nn_ops``), with NumPy references
written independently of the implementations (direct loops over windows, brute-force CTC).

``op_table`` adds :data:`NN_ENTRIES` to its table and :data:`NN_NON_TABLE_OPS` (the backward
ops, which the forward entries' gradgradchecks run and differentiate) to its exercised set.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

import ember.tensor as et

from ._harness import FLOAT, OpEntry, Sample, _rand

__all__ = ["NN_ENTRIES", "NN_NON_TABLE_OPS"]

NN_NON_TABLE_OPS = {
    "convolution_backward", "max_pool2d_with_indices_backward",
    "max_pool3d_with_indices_backward", "embedding_dense_backward", "lstm_cell_backward",
    "gru_cell_backward", "_ctc_loss_backward", "_softmax_backward_data",
    "_log_softmax_backward_data", "_cross_entropy_loss_backward", "nll_loss_backward",
    "_pack_padded_sequence_backward", "native_layer_norm_backward", "silu_backward",
    "gelu_backward", "softplus_backward", "elu_backward", "hardsigmoid_backward",
    "hardswish_backward", "mish_backward", "log_sigmoid_backward",
}


def _pairs(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# --------------------------------------------------------------------------- references
def _ref_im2col(x, kernel_size, dilation, padding, stride):
    nd = x.ndim - 2
    k, d, p, s = (_pairs(v, nd) for v in (kernel_size, dilation, padding, stride))
    N, C = x.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i]) for i in range(nd)])
    o = [(x.shape[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    rows = []
    for c in range(C):
        for off in itertools.product(*(range(n) for n in k)):
            sl = tuple(slice(off[i] * d[i], off[i] * d[i] + (o[i] - 1) * s[i] + 1, s[i])
                       for i in range(nd))
            rows.append(xp[(slice(None), c) + sl].reshape(N, -1))
    return np.stack(rows, 1)


def _ref_col2im(cols, output_size, kernel_size, dilation, padding, stride):
    nd = len(output_size)
    k, d, p, s = (_pairs(v, nd) for v in (kernel_size, dilation, padding, stride))
    N = cols.shape[0]
    K = math.prod(k)
    C = cols.shape[1] // K
    full = [output_size[i] + 2 * p[i] for i in range(nd)]
    o = [(full[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    out = np.zeros((N, C, *full), dtype=np.float64)
    r = 0
    for c in range(C):
        for off in itertools.product(*(range(n) for n in k)):
            sl = tuple(slice(off[i] * d[i], off[i] * d[i] + (o[i] - 1) * s[i] + 1, s[i])
                       for i in range(nd))
            out[(slice(None), c) + sl] += cols[:, r].reshape(N, *o)
            r += 1
    crop = tuple(slice(p[i], p[i] + output_size[i]) for i in range(nd))
    return out[(slice(None), slice(None)) + crop].astype(cols.dtype)


def _ref_convolution(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    nd = w.ndim - 2
    G = groups
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    if not transposed:
        cols = _ref_im2col(x64, w.shape[2:], dilation, padding, stride)  # (N, C*K, L)
        N, CK, L = cols.shape
        O = w.shape[0]
        out = np.einsum("gok,ngkl->ngol", w64.reshape(G, O // G, CK // G),
                        cols.reshape(N, G, CK // G, L)).reshape(N, O, L)
        k = w.shape[2:]
        o = [(x.shape[2 + i] + 2 * _pairs(padding, nd)[i] - _pairs(dilation, nd)[i] *
              (k[i] - 1) - 1) // _pairs(stride, nd)[i] + 1 for i in range(nd)]
        out = out.reshape(N, O, *o)
    else:
        N, Cin = x.shape[:2]
        Cout = w.shape[1] * G
        s, p, d, op = (_pairs(v, nd) for v in (stride, padding, dilation, output_padding))
        k = w.shape[2:]
        size = [(x.shape[2 + i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op[i] + 1
                for i in range(nd)]
        L = math.prod(x.shape[2:])
        Kg = w.size // Cin
        cols = np.einsum("gck,ngcl->ngkl", w64.reshape(G, Cin // G, Kg),
                         x64.reshape(N, G, Cin // G, L)).reshape(N, G * Kg, L)
        out = _ref_col2im(cols, size, k, d, p, s)
        O = Cout
    if b is not None:
        out = out + b.astype(np.float64).reshape((O,) + (1,) * nd)
    return out.astype(x.dtype)


def _ref_max_pool(x, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False, nd=2):
    k = _pairs(kernel_size, nd)
    s = k if not stride else _pairs(stride, nd)
    p, d = _pairs(padding, nd), _pairs(dilation, nd)
    size = x.shape[-nd:]
    o = []
    for i in range(nd):
        num = size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1 + (s[i] - 1 if ceil_mode else 0)
        n = num // s[i] + 1
        if ceil_mode and (n - 1) * s[i] >= size[i] + p[i]:
            n -= 1
        o.append(n)
    lead = x.shape[:-nd]
    flat = x.reshape(-1, *size)
    vals = np.empty((flat.shape[0], *o), dtype=x.dtype)
    idx = np.empty((flat.shape[0], *o), dtype=np.int64)
    for b in range(flat.shape[0]):
        for pos in itertools.product(*(range(n) for n in o)):
            best, arg = -np.inf, -1
            for off in itertools.product(*(range(n) for n in k)):
                q = [pos[i] * s[i] - p[i] + off[i] * d[i] for i in range(nd)]
                if all(0 <= q[i] < size[i] for i in range(nd)):
                    v = flat[(b, *q)]
                    if v > best or arg < 0:
                        best, arg = v, int(np.ravel_multi_index(q, size))
            vals[(b, *pos)] = best
            idx[(b, *pos)] = arg
    return vals.reshape(*lead, *o), idx.reshape(*lead, *o)


def _sig(a):
    return 1 / (1 + np.exp(-a))


def _ref_lstm(ig, hg, cx):
    a = (ig + hg).astype(np.float64)
    i, f, g, o = np.split(a, 4, axis=1)
    c = _sig(f) * cx + _sig(i) * np.tanh(g)
    return (_sig(o) * np.tanh(c)).astype(ig.dtype), c.astype(ig.dtype)


def _ref_gru(ig, hg, hx):
    xr, xz, xn = np.split(ig.astype(np.float64), 3, axis=1)
    hr, hz, hn = np.split(hg.astype(np.float64), 3, axis=1)
    r, z = _sig(xr + hr), _sig(xz + hz)
    n = np.tanh(xn + r * hn)
    return ((1 - z) * n + z * hx).astype(ig.dtype)


def _ref_ctc(log_probs, targets, input_lengths, target_lengths, blank=0, zero_infinity=False):
    """Brute force: the log of the summed probability of every path that collapses to the
    target."""
    T, N, C = log_probs.shape
    out = np.zeros(N)
    for b in range(N):
        tgt = list(targets[b, :target_lengths[b]])
        total = -np.inf
        for path in itertools.product(range(C), repeat=input_lengths[b]):
            collapsed = [c for j, c in enumerate(path) if c != blank and
                         (j == 0 or path[j - 1] != c)]
            if collapsed == tgt:
                lp = sum(log_probs[t, b, c] for t, c in enumerate(path))
                total = np.logaddexp(total, lp)
        out[b] = -total
    return out.astype(log_probs.dtype)


# --------------------------------------------------------------------------- samples
def _conv_samples(dtype, rng):
    r = lambda *s: _rand(s, dtype, rng)  # noqa: E731
    return [
        Sample((r(2, 4, 5, 5), r(6, 2, 3, 2), r(6), (2, 1), (1, 0), (1, 2), False, (0, 0), 2)),
        Sample((r(1, 3, 6), r(2, 3, 2), None, (1,), (0,), (2,), False, (0,), 1)),
        Sample((r(2, 4, 3, 3), r(4, 1, 3, 2), r(2), (2, 1), (1, 0), (1, 1), True, (1, 0), 2)),
        Sample((r(1, 2, 2, 2, 3), r(3, 2, 2, 1, 2), r(3), (1, 1, 1), (1, 0, 0), (1, 1, 1),
                False, (0, 0, 0), 1)),
    ]


def _pool_samples(nd):
    def gen(dtype, rng):
        if nd == 2:
            return [Sample((_rand((2, 2, 5, 6), dtype, rng, distinct=True), (3, 2), (2, 2), 1)),
                    Sample((_rand((2, 5, 5), dtype, rng, distinct=True), 2),
                           dict(ceil_mode=True, dilation=1)),
                    Sample((_rand((1, 2, 7, 7), dtype, rng, distinct=True), 2, 1, 0, 2))]
        return [Sample((_rand((1, 2, 4, 5, 4), dtype, rng, distinct=True), 2, (1, 2, 2), 1)),
                Sample((_rand((2, 3, 3, 3), dtype, rng, distinct=True), (2, 2, 1)),
                       dict(ceil_mode=True))]
    return gen


def _ctc_samples(dtype, rng):
    x = _rand((4, 2, 3), dtype, rng)
    lp = (x - np.log(np.exp(x.astype(np.float64)).sum(2, keepdims=True))).astype(dtype)
    tg = np.asarray([[1, 2], [2, 2]], dtype=np.int64)
    return [Sample((lp, tg, [4, 4], [2, 1])), Sample((lp, tg, [3, 4], [1, 2], 0, True))]


def _ref_softmax(x, dim, half_to_float=False, log=False):
    x64 = x.astype(np.float64)
    s = x64 - x64.max(axis=dim, keepdims=True)
    ls = np.log(np.exp(s).sum(axis=dim, keepdims=True))
    out = s - ls if log else np.exp(s - ls)
    return out.astype(np.float32 if half_to_float else x.dtype)


def _softmax_samples(dtype, rng):
    return [Sample((_rand((3, 5), dtype, rng), 1, False)),
            Sample((_rand((2, 3, 4), dtype, rng), 1, False)),
            Sample((_rand((4,), dtype, rng), -1, False)),
            Sample((_rand((), dtype, rng), 0, False))]


def _ref_cross_entropy(x, t, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    x64 = x.astype(np.float64)
    cdim = 0 if x.ndim == 1 else 1
    logp = _ref_softmax(x64, cdim, log=True)
    C = x.shape[cdim]
    rows = np.moveaxis(logp, cdim, -1).reshape(-1, C)
    tt = np.asarray(t).reshape(-1)
    w = np.ones(C) if weight is None else weight.astype(np.float64)
    loss = np.zeros(len(tt))
    denom = 0.0
    for i, ti in enumerate(tt):
        if ti == ignore_index:
            continue
        loss[i] = -(1 - label_smoothing) * w[ti] * rows[i, ti] - \
            label_smoothing / C * (w * rows[i]).sum()
        denom += w[ti]
    if reduction == 0:
        return loss.reshape(np.shape(t)).astype(x.dtype)
    total = loss.sum()
    return np.asarray(total if reduction == 2 else total / denom, dtype=x.dtype)


def _ref_layer_norm(x, normalized_shape, weight, bias, eps):
    x64 = x.astype(np.float64)
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mean = x64.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(((x64 - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    out = (x64 - mean) * rstd
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return tuple(a.astype(x.dtype) for a in (out, mean, rstd))


def _layer_norm_samples(dtype, rng):
    return [Sample((_rand((3, 4), dtype, rng), [4], _rand((4,), dtype, rng),
                    _rand((4,), dtype, rng), 1e-5)),
            Sample((_rand((2, 3, 4), dtype, rng), [3, 4], None, None, 1e-5)),
            Sample((_rand((5,), dtype, rng), [5], _rand((5,), dtype, rng), None, 0.1))]


def _ce_samples(dtype, rng):
    x = _rand((4, 5), dtype, rng)
    w = _rand((5,), dtype, rng, 0.5, 2.0)
    t = np.asarray([0, 4, 2, 2])
    return [Sample((x, t)),
            Sample((x, t, w, 2, 2, 0.2)),
            Sample((x, t), dict(reduction=0, ignore_index=4)),
            Sample((_rand((2, 3, 2, 2), dtype, rng), np.asarray([[[0, 1], [2, 1]],
                                                                 [[1, 1], [0, 2]]]), w[:3],
                    1, 1, 0.1)),
            Sample((_rand((3,), dtype, rng), np.asarray(1)))]


def _ref_nll(x, t, weight=None, reduction=1, ignore_index=-100):
    """(loss, total_weight), one target at a time."""
    cdim = 0 if x.ndim == 1 else 1
    C = x.shape[cdim]
    rows = np.moveaxis(x.astype(np.float64), cdim, -1).reshape(-1, C)
    tt = np.asarray(t).reshape(-1)
    w = np.ones(C) if weight is None else weight.astype(np.float64)
    loss = np.zeros(len(tt))
    total = 0.0
    for i, ti in enumerate(tt):
        if ti == ignore_index:
            continue
        loss[i] = -w[ti] * rows[i, ti]
        total += w[ti]
    if reduction == 0:
        out = loss.reshape(np.shape(t))
        total = total if x.ndim == 1 else 0.0
    else:
        out = loss.sum() if reduction == 2 else loss.sum() / total
    return np.asarray(out, dtype=x.dtype), np.asarray(total, dtype=x.dtype)


def _nll_samples(dtype, rng):
    x = _rand((4, 5), dtype, rng)
    w = _rand((5,), dtype, rng, 0.5, 2.0)
    t = np.asarray([0, 4, 2, 2])
    return [Sample((x, t, None, 1, -100)),
            Sample((x, t, w, 2, 2)),
            Sample((x, t, w, 0, 4)),
            Sample((x, t), dict(weight=None, reduction=1, ignore_index=2)),
            Sample((_rand((2, 3, 2, 2), dtype, rng), np.asarray([[[0, 1], [2, 1]],
                                                                 [[1, 1], [0, 2]]]), w[:3],
                    1, 1)),
            Sample((_rand((3,), dtype, rng), np.asarray(1), w[:3], 0, -100))]


def _ref_pack(x, lengths, batch_first):
    """(data, batch_sizes): the running steps, step by step, sequence by sequence."""
    if batch_first:
        x = np.swapaxes(x, 0, 1)
    rows, sizes = [], []
    for t in range(max(lengths)):
        running = [b for b, n in enumerate(lengths) if n > t]
        sizes.append(len(running))
        rows += [x[t, b] for b in running]
    return np.stack(rows).astype(x.dtype), np.asarray(sizes, dtype=np.int64)


def _ref_pad(data, batch_sizes, batch_first, padding_value, total_length):
    """(padded, lengths): the packed rows placed back step by step."""
    sizes = list(batch_sizes)
    B = sizes[0]
    T = total_length if total_length > 0 else len(sizes)
    out = np.full((T, B) + data.shape[1:], padding_value, dtype=data.dtype)
    r = 0
    for t, n in enumerate(sizes):
        for s in range(n):
            out[t, s] = data[r]
            r += 1
    lengths = np.asarray([sum(1 for n in sizes if n > s) for s in range(B)], dtype=np.int64)
    return (np.swapaxes(out, 0, 1) if batch_first else out), lengths


def _split_ref(x, sizes, dim=0):
    return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=dim))


def _act_ref(fn):
    """A float64 NumPy reference of an activation, cast to the input's dtype."""
    def ref(x, *args):
        with np.errstate(all="ignore"):
            return fn(x.astype(np.float64), *args).astype(x.dtype)
    return ref


def _gelu_ref(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    from scipy.special import erf

    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def _elu_ref(x, alpha=1.0, scale=1.0, input_scale=1.0):
    return np.where(x <= 0, np.expm1(x * input_scale) * alpha * scale, x * scale)


def _act_samples(*arg_sets, low=-4.0, high=4.0):
    """Samples over [low, high] (the pieces of the piecewise ones), one per argument set."""
    def gen(dtype, rng):
        return [Sample((_rand((3, 5), dtype, rng, low, high),) + tuple(a)) for a in arg_sets]
    return gen


NN_ENTRIES = (
    OpEntry("convolution", et.convolution, _ref_convolution, _conv_samples, dtypes=FLOAT,
            operands=(0, 1, 2), method=None, atol=1e-4, rtol=1e-4),
    OpEntry("im2col", et.im2col, _ref_im2col,
            lambda d, rng: [Sample((_rand((2, 3, 5, 4), d, rng), (2, 3), (1, 1), (1, 0),
                                    (2, 1))),
                            Sample((_rand((1, 2, 6), d, rng), (3,), (2,), (1,), (1,)))],
            method=None),
    OpEntry("col2im", et.col2im, _ref_col2im,
            lambda d, rng: [Sample((_rand((2, 12, 6), d, rng), (4, 5), (2, 3), 1, 0, (2, 1))),
                            Sample((_rand((1, 6, 3), d, rng), (5,), (3,), (1,), (1,), (2,)))],
            method=None),
    OpEntry("max_pool2d_with_indices", et.max_pool2d_with_indices,
            lambda *a, **k: _ref_max_pool(*a, **k, nd=2), _pool_samples(2), method=None,
            out_dtype=lambda s, d: (d, "int64")),
    OpEntry("max_pool3d_with_indices", et.max_pool3d_with_indices,
            lambda *a, **k: _ref_max_pool(*a, **k, nd=3), _pool_samples(3), method=None,
            out_dtype=lambda s, d: (d, "int64")),
    OpEntry("embedding", et.embedding, lambda w, i, *a: w[i],
            lambda d, rng: [Sample((_rand((5, 3), d, rng), np.asarray([[0, 2, 2], [4, 1, 0]]))),
                            Sample((_rand((4, 2), d, rng), np.asarray([3, 3, 1])))],
            method=None),
    OpEntry("lstm_cell_fused", et.lstm_cell_fused, _ref_lstm,
            lambda d, rng: [Sample((_rand((3, 8), d, rng), _rand((3, 8), d, rng),
                                    _rand((3, 2), d, rng)))],
            operands=(0, 1, 2), method=None),
    OpEntry("gru_cell_fused", et.gru_cell_fused, _ref_gru,
            lambda d, rng: [Sample((_rand((3, 6), d, rng), _rand((3, 6), d, rng),
                                    _rand((3, 2), d, rng)))],
            operands=(0, 1, 2), method=None),
    OpEntry("split_with_sizes", et.split_with_sizes, _split_ref,
            lambda d, rng: [Sample((_rand((6, 4), d, rng), [1, 3, 2])),
                            Sample((_rand((2, 5), d, rng), [2, 0, 3], 1))],
            method=None),
    OpEntry("silu", et.silu, _act_ref(lambda x: x / (1 + np.exp(-x))), _act_samples(()),
            method=None),
    OpEntry("gelu", et.gelu, _act_ref(_gelu_ref), _act_samples((), ("tanh",)), method=None),
    OpEntry("softplus", et.softplus,
            _act_ref(lambda x, b=1.0, t=20.0: np.where(x * b > t, x, np.log1p(np.exp(x * b)) / b)),
            _act_samples((), (2.0, 3.0), (0.5, 1.5)), method=None),
    OpEntry("elu", et.elu, _act_ref(_elu_ref),
            _act_samples((), (0.7,), (1.6732632423543772, 1.0507009873554805), (2.0, 1.0, 0.5)),
            method=None),
    OpEntry("hardsigmoid", et.hardsigmoid,
            _act_ref(lambda x: np.minimum(np.maximum(x + 3, 0), 6) / 6), _act_samples(()),
            method=None),
    OpEntry("hardswish", et.hardswish,
            _act_ref(lambda x: x * np.minimum(np.maximum(x + 3, 0), 6) / 6), _act_samples(()),
            method=None),
    OpEntry("mish", et.mish, _act_ref(lambda x: x * np.tanh(np.log1p(np.exp(x)))),
            _act_samples(()), method=None),
    OpEntry("log_sigmoid", et.log_sigmoid,
            _act_ref(lambda x: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))),
            _act_samples(()), method=None),
    OpEntry("_softmax", et._softmax, _ref_softmax, _softmax_samples, method=None),
    OpEntry("_log_softmax", et._log_softmax, lambda *a: _ref_softmax(*a, log=True),
            _softmax_samples, method=None),
    OpEntry("native_layer_norm", et.native_layer_norm, _ref_layer_norm, _layer_norm_samples,
            operands=(0, 2, 3), method=None),
    OpEntry("cross_entropy_loss", et.cross_entropy_loss, _ref_cross_entropy, _ce_samples,
            method=None),
    OpEntry("_ctc_loss", et._ctc_loss, _ref_ctc, _ctc_samples, method=None, gradgrad=False,
            atol=1e-5, rtol=1e-5),
    OpEntry("nll_loss_forward", et.nll_loss_forward, _ref_nll, _nll_samples, method=None),
    OpEntry("nll_loss_nd", et.nll_loss_nd, lambda *a, **k: _ref_nll(*a, **k)[0],
            lambda d, rng: [Sample((_rand((3, 4), d, rng), np.asarray([3, 0, 3]))),
                            Sample((_rand((2, 4, 3), d, rng), np.asarray([[0, 1, 3], [2, 2, 1]])),
                                   dict(reduction=2, ignore_index=1))],
            method=None, ops=("nll_loss_forward",)),
    OpEntry("_pack_padded_sequence", et._pack_padded_sequence, _ref_pack,
            lambda d, rng: [Sample((_rand((4, 3, 2), d, rng), np.asarray([4, 2, 2]), False)),
                            Sample((_rand((3, 5), d, rng), np.asarray([5, 4, 1]), True))],
            method=None, out_dtype=lambda s, d: (d, "int64"), host_outputs=(1,)),
    OpEntry("_pad_packed_sequence", et._pad_packed_sequence, _ref_pad,
            lambda d, rng: [Sample((_rand((6, 2), d, rng), np.asarray([3, 2, 1]), False, 0.0,
                                    0)),
                            Sample((_rand((5,), d, rng), np.asarray([2, 2, 1]), True, -1.5, 4))],
            method=None, out_dtype=lambda s, d: (d, "int64"), host_outputs=(1,)),
)
