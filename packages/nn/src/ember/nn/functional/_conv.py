"""Convolutions (1-d, 2-d, 3-d, transposed) and ``unfold`` / ``fold``.

Every convolution is an im2col (on the CPU the Numba kernel of ember.tensor, elsewhere an
``as_strided`` window view copied into columns) followed by one batched BLAS matmul per call;
the input gradient is a matmul followed by col2im (the scatter kernel of ember.tensor). The
first-order backward works on arrays; with ``create_graph`` it is built from ops, and
``_Im2col`` and ``_Col2im`` are adjoint linear maps, each the other's backward, so every
convolution is differentiable any number of times.

    >>> import ember.tensor as et
    >>> import ember.nn.functional as F
    >>> F.conv2d(et.ones(1, 1, 3, 3), et.ones(1, 1, 2, 2)).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
"""
from __future__ import annotations

import math

import numpy as np

import ember.autograd as ag
import ember.tensor as et  # noqa: F401  (the docstring examples use it)
from ember.tensor._registry import array_module
from ember.tensor._tensor import Tensor
from ember.tensor.kernels import get as _kernel

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]

_make = Tensor._make


# ----------------------------------------------------------------------------- helpers
def _ntuple(op: str, name: str, value, n: int) -> tuple[int, ...]:
    """``value`` (an int or a sequence of n ints) as an n-tuple of ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    t = tuple(int(v) for v in value)
    if len(t) == 1 and n > 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"{op}(): expected {name} to be a single int or a tuple of {n} "
                           f"ints, got {value!r}")
    return t


_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _im2col_array(x, k, s, p, d, o):
    """Columns (N, C*prod(k), prod(o)) of the (N, C, *spatial) array ``x``.

    ``p`` is the padding before each spatial dim; zeros are added after it as far as the
    windows of an ``o``-sized output reach.
    """
    xp = array_module(x)
    nd = len(k)
    N, C = x.shape[:2]
    sp = x.shape[2:]
    L = math.prod(o)
    K = math.prod(k)
    if L == 0 or N * C == 0:
        return xp.zeros((N, C * K, L), dtype=x.dtype)
    if K == 1 and not any(p) and all(v == 1 for v in s) and tuple(o) == tuple(sp):
        return x.reshape(N, C, L)  # 1x1 convolution: the input already is the columns
    if xp is np and x.dtype in _KERNEL_DTYPES:
        # the Numba kernel writes the columns in one pass (padding as zeros): several times
        # faster than NumPy's copy of the strided window view, whose rows are short runs
        out = _kernel("im2col", np)(x.reshape(N, C, *_three(sp, 1)), _three(k, 1),
                                    _three(s, 1), _three(p, 0), _three(d, 1), _three(o, 1))
        return out.reshape(N, C * K, L)
    need = [(o[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 for i in range(nd)]
    if any(p) or any(need[i] > sp[i] for i in range(nd)):
        full = [max(need[i], sp[i] + p[i]) for i in range(nd)]
        padded = xp.zeros((N, C, *full), dtype=x.dtype)
        padded[(slice(None), slice(None),
                *(slice(p[i], p[i] + sp[i]) for i in range(nd)))] = x
        x = padded
    st = x.strides
    shape = (N, C, *k, *o)
    strides = (st[0], st[1], *(st[2 + i] * d[i] for i in range(nd)),
               *(st[2 + i] * s[i] for i in range(nd)))
    view = xp.lib.stride_tricks.as_strided(x, shape, strides)
    return view.reshape(N, C * K, L)


def _three(t, fill):
    return (fill,) * (3 - len(t)) + tuple(t)


def _col2im_array(cols, channels, size, k, s, p, d, o):
    """Adjoint of :func:`_im2col_array`: sums columns back into (N, C, *size)."""
    xp = array_module(cols)
    fn = _kernel("col2im", xp)
    out = fn(cols, channels, _three(size, 1), _three(k, 1), _three(s, 1), _three(p, 0),
             _three(d, 1), _three(o, 1))
    return out.reshape(cols.shape[0], channels, *size)


class _Im2col(ag.Function):
    """``cols = im2col(x)``; geometry ``(channels, in_size, k, s, p, d, o)``."""

    @staticmethod
    def forward(ctx, x, geom):
        _, _, k, s, p, d, o = geom
        ctx.geom = geom
        cols = _im2col_array(x._data, k, s, p, d, o)
        if cols.base is not None:  # a 1x1 window: a view of x, but a result owns its memory
            cols = cols.copy()
        return _make(cols)

    @staticmethod
    def backward(ctx, g):
        return _Col2im.apply(g, ctx.geom), None


class _Col2im(ag.Function):
    """``x = col2im(cols)``, the adjoint of :class:`_Im2col`."""

    @staticmethod
    def forward(ctx, cols, geom):
        c, size, k, s, p, d, o = geom
        ctx.geom = geom
        return _make(_col2im_array(cols._data, c, size, k, s, p, d, o))

    @staticmethod
    def backward(ctx, g):
        return _Im2col.apply(g, ctx.geom), None


def _im2col(x: Tensor, geom) -> Tensor:
    return _Im2col.apply(x, geom)


def _col2im(cols: Tensor, geom) -> Tensor:
    return _Col2im.apply(cols, geom)


# ----------------------------------------------------------------------------- convolution
class _Conv(ag.Function):
    """``out = W @ im2col(x) + b`` with groups; ``geom`` as for :class:`_Im2col`."""

    @staticmethod
    def forward(ctx, x, w, b, geom, groups):
        C, _, k, s, p, d, o = geom
        xd, wd = x._data, w._data
        N = xd.shape[0]
        O = wd.shape[0]
        G = groups
        cols = _im2col_array(xd, k, s, p, d, o)
        K = cols.shape[1]
        L = cols.shape[2]
        if G == 1:
            out = np.matmul(wd.reshape(O, K), cols) if xd.__class__ is np.ndarray else \
                wd.reshape(O, K) @ cols
        else:
            out = (wd.reshape(G, O // G, K // G) @ cols.reshape(N, G, K // G, L)).reshape(
                N, O, L)
        if b is not None:
            out += b._data.reshape(O, 1)
        ctx.geom, ctx.groups, ctx.cols = geom, G, cols
        ctx.needs = (x._requires_grad, w._requires_grad, b is not None and b._requires_grad)
        ctx.save_for_backward(x, w)
        return _make(out.reshape(N, O, *o))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        geom, G = ctx.geom, ctx.groups
        o = geom[6]
        N, O = g.shape[0], g.shape[1]
        L = math.prod(o)
        K = w.numel() // O * G
        if not ag.is_grad_enabled() and _fast_dtype(g._data):
            return _conv_backward_arrays(ctx, g._data, w._data, N, O, L, K, G)
        gx = gw = gb = None
        g3 = g.reshape(N, O, L)
        if ctx.needs[0]:
            if G == 1:
                gcols = w.reshape(O, K).t() @ g3
            else:
                gcols = (w.reshape(G, O // G, K // G).mT @ g3.reshape(N, G, O // G, L)).reshape(
                    N, K, L)
            gx = _col2im(gcols, geom)
        if ctx.needs[1]:
            if ag.is_grad_enabled():  # double backward: columns as a function of x
                cols = _im2col(x, geom)
            else:
                cols = _make(ctx.cols)
            # one small GEMM per sample, summed: robust and faster than one skinny GEMM
            gw = (g3.reshape(N, G, O // G, L) @ cols.reshape(N, G, K // G, L).mT).sum(
                0).reshape(w.shape)
        if ctx.needs[2]:
            gb = g3.sum((0, 2))
        return gx, gw, gb, None, None


def _fast_dtype(a) -> bool:
    """float32 / float64: the array path of the backwards (float16 takes the op path, which
    multiplies in float32)."""
    return a.dtype.kind == "f" and a.dtype.itemsize >= 4


def _batched_wgrad(a, b, N, G):
    """``sum_n b[n] @ a[n].T`` per group, shape (G, Rb, Ra), of the arrays ``a`` (N, G*Ra, L)
    and ``b`` (N, G*Rb, L): a weight gradient, transposed.

    One small GEMM per sample (BLAS runs those faster here than one long skinny GEMM), with
    the columns ``b`` as the left, row-major operand: faster than ``a @ b.T``."""
    L = a.shape[-1]
    at = a.reshape(N, G, a.shape[1] // G, L).transpose(0, 1, 3, 2)
    if a.size * 8 <= b.size and at.__class__ is np.ndarray:
        at = np.ascontiguousarray(at)  # a small operand: its transposed copy pays
    return (b.reshape(N, G, b.shape[1] // G, L) @ at).sum(0)


def _conv_backward_arrays(ctx, gd, wd, N, O, L, K, G):
    """:class:`_Conv`'s backward on arrays, for the common first-order case (no graph)."""
    geom = ctx.geom
    g3 = gd.reshape(N, O, L)
    gx = gw = gb = None
    if ctx.needs[0]:
        if G == 1:
            wt = wd.reshape(O, K).T
            gcols = (wt.copy() if wt.__class__ is np.ndarray else wt) @ g3
        else:
            gcols = (wd.reshape(G, O // G, K // G).transpose(0, 2, 1)
                     @ g3.reshape(N, G, O // G, L)).reshape(N, K, L)
        gx = _make(_col2im_array(gcols, *geom))
    if ctx.needs[1]:
        gwt = _batched_wgrad(g3, ctx.cols, N, G)  # (G, K/G, O/G)
        gw = _make(gwt.transpose(0, 2, 1).reshape(wd.shape))
    if ctx.needs[2]:
        gb = _make(g3.sum((0, 2)))
    return gx, gw, gb, None, None


class _ConvTranspose(ag.Function):
    """``out = col2im(W^T @ x) + b``: the adjoint of a convolution with the same geometry
    (``geom`` describes that convolution: its input is this op's output)."""

    @staticmethod
    def forward(ctx, x, w, b, geom, groups):
        Cout, size, k, s, p, d, o = geom
        xd, wd = x._data, w._data
        N, Cin = xd.shape[:2]
        G = groups
        L = math.prod(o)
        Kg = wd.size // Cin  # Cout/G * prod(k)
        xg = xd.reshape(N, G, Cin // G, L)
        wg = wd.reshape(G, Cin // G, Kg)
        cols = (wg.transpose(0, 2, 1) @ xg).reshape(N, G * Kg, L)
        out = _col2im_array(cols, Cout, size, k, s, p, d, o)
        if b is not None:
            out += b._data.reshape((Cout,) + (1,) * len(size))
        ctx.geom, ctx.groups = geom, G
        ctx.needs = (x._requires_grad, w._requires_grad, b is not None and b._requires_grad)
        ctx.save_for_backward(x, w)
        return _make(out)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        geom, G = ctx.geom, ctx.groups
        Cout, size, k, s, p, d, o = geom
        N, Cin = x.shape[0], x.shape[1]
        L = math.prod(o)
        Kg = w.numel() // Cin
        gx = gw = gb = None
        if not ag.is_grad_enabled() and _fast_dtype(g._data):  # first order: on arrays
            gd, wd = g._data, w._data
            gc = _im2col_array(gd, geom[2], geom[3], geom[4], geom[5], geom[6])
            if ctx.needs[0]:
                gx = _make((wd.reshape(G, Cin // G, Kg) @ gc.reshape(N, G, Kg, L)).reshape(
                    x.shape))
            if ctx.needs[1]:
                gwt = _batched_wgrad(gc, x._data.reshape(N, Cin, L), N, G)  # (G, Cin/G, Kg)
                gw = _make(gwt.reshape(w.shape))
            if ctx.needs[2]:
                gb = _make(gd.sum(tuple([0] + list(range(2, gd.ndim)))))
            return gx, gw, gb, None, None
        gcols = _im2col(g, geom).reshape(N, G, Kg, L)
        if ctx.needs[0]:
            gx = (w.reshape(G, Cin // G, Kg) @ gcols).reshape(x.shape)
        if ctx.needs[1]:
            gw = (x.reshape(N, G, Cin // G, L) @ gcols.mT).sum(0).reshape(w.shape)
        if ctx.needs[2]:
            gb = g.sum([0] + list(range(2, g.dim())))
        return gx, gw, gb, None, None


def _check_conv(op, input, weight, bias, nd, groups, transposed):
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): expected Tensor input and weight, got "
                        f"{type(input).__name__} and {type(weight).__name__}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"{op}(): expected weight to be {nd + 2}-d, got weight of size "
                           f"{list(weight.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) "
                           f"input to {op}, but got input of size: {list(input.shape)}")
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"{op}(): non-positive groups is not supported (got {groups})")
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != input.dtype):
        raise RuntimeError(
            f"{op}(): expected input, weight and bias of one dtype, got {input.dtype}, "
            f"{weight.dtype}" + (f", {bias.dtype}" if bias is not None else ""))
    if input.device != weight.device:
        raise RuntimeError(f"{op}(): input on {input.device} and weight on {weight.device}")
    if not input.is_floating_point():
        raise RuntimeError(f"{op}(): expected a floating point input, got {input.dtype}")


def _same_padding(op, k, s, d, nd, size):
    """PyTorch's ``padding='same'``: total ``d*(k-1)``, the odd element on the right."""
    if any(v != 1 for v in s):
        raise ValueError(f"{op}(): padding='same' is not supported for strided convolutions")
    left = [d[i] * (k[i] - 1) // 2 for i in range(nd)]
    right = [d[i] * (k[i] - 1) - left[i] for i in range(nd)]
    return left, right


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    _check_conv(op, input, weight, bias, nd, groups, False)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    C = x.shape[1]
    O = weight.shape[0]
    k = tuple(weight.shape[2:])
    if C != weight.shape[1] * groups:
        raise RuntimeError(
            f"{op}(): Given groups={groups}, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[1] * groups} channels, but got {C} "
            f"channels instead")
    if O % groups:
        raise RuntimeError(f"{op}(): Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    if bias is not None and tuple(bias.shape) != (O,):
        raise RuntimeError(f"{op}(): Given weight of size {list(weight.shape)}, expected bias "
                           f"to be 1-dimensional with {O} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    s = _ntuple(op, "stride", stride, nd)
    d = _ntuple(op, "dilation", dilation, nd)
    if min(s) < 1:
        raise RuntimeError(f"{op}(): non-positive stride is not supported (got {s})")
    if min(d) < 1:
        raise RuntimeError(f"{op}(): dilation should be greater than zero (got {d})")
    if isinstance(padding, str):
        if padding == "valid":
            p = (0,) * nd
        elif padding == "same":
            left, right = _same_padding(op, k, s, d, nd, x.shape[2:])
            if left != right:
                from ._padding import pad as _pad

                extra = []
                for i in reversed(range(nd)):
                    extra += [0, right[i] - left[i]]
                x = _pad(x, extra)
            p = tuple(left)
        else:
            raise ValueError(f"{op}(): Invalid padding string {padding!r}, should be one of "
                             "'valid' or 'same'")
    else:
        p = _ntuple(op, "padding", padding, nd)
        if min(p) < 0:
            raise RuntimeError(f"{op}(): negative padding is not supported (got {p})")
    size = tuple(x.shape[2:])
    o = tuple(_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(nd))
    if min(o) < 1:
        eff = [d[i] * (k[i] - 1) + 1 for i in range(nd)]
        raise RuntimeError(
            f"{op}(): Calculated padded input size per channel: "
            f"({' x '.join(str(size[i] + 2 * p[i]) for i in range(nd))}). Kernel size: "
            f"({' x '.join(str(v) for v in eff)}). Kernel size can't be greater than actual "
            f"input size")
    geom = (C, size, k, s, p, d, o)
    out = _Conv.apply(x, weight, bias, geom, groups)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of (N, C, L) ``input`` with (O, C/groups, k)
    ``weight``; ``padding`` is an int, a tuple, ``'valid'`` or ``'same'``.

    >>> conv1d(et.ones(1, 1, 4), et.ones(1, 1, 2)).tolist()
    [[[2.0, 2.0, 2.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) ``input`` with (O, C/groups, kH, kW) ``weight``.

    >>> conv2d(et.ones(1, 1, 3, 3), et.ones(2, 1, 3, 3), padding="same").shape
    ember.Size([1, 2, 3, 3])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-d convolution of (N, C, D, H, W) ``input`` with (O, C/groups, kD, kH, kW) ``weight``.

    >>> conv3d(et.ones(1, 1, 2, 2, 2), et.ones(1, 1, 2, 2, 2)).tolist()
    [[[[[8.0]]]]]
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, nd, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    _check_conv(op, input, weight, bias, nd, groups, True)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    Cin = x.shape[1]
    if Cin != weight.shape[0]:
        raise RuntimeError(
            f"{op}(): Given transposed=1, weight of size {list(weight.shape)}, expected "
            f"input{list(x.shape)} to have {weight.shape[0]} channels, but got {Cin} channels "
            f"instead")
    if Cin % groups:
        raise RuntimeError(f"{op}(): Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{list(weight.shape)} instead")
    Cout = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (Cout,):
        raise RuntimeError(f"{op}(): expected bias of size [{Cout}], got {list(bias.shape)}")
    k = tuple(weight.shape[2:])
    s = _ntuple(op, "stride", stride, nd)
    p = _ntuple(op, "padding", padding, nd)
    op_ = _ntuple(op, "output_padding", output_padding, nd)
    d = _ntuple(op, "dilation", dilation, nd)
    if min(s) < 1 or min(d) < 1 or min(p) < 0 or min(op_) < 0:
        raise RuntimeError(f"{op}(): invalid stride {s}, dilation {d}, padding {p} or "
                           f"output_padding {op_}")
    for i in range(nd):
        if op_[i] >= s[i] and op_[i] >= d[i]:
            raise RuntimeError(f"{op}(): output padding must be smaller than either stride or "
                               f"dilation, but got output_padding={op_}, stride={s}, "
                               f"dilation={d}")
    insize = tuple(x.shape[2:])
    size = tuple((insize[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op_[i] + 1
                 for i in range(nd))
    if min(size) < 1:
        raise RuntimeError(f"{op}(): Given input size per channel {list(insize)}, calculated "
                           f"output size {list(size)} is too small")
    geom = (Cout, size, k, s, p, d, insize)
    out = _ConvTranspose.apply(x, weight, bias, geom, groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 1-d convolution; ``weight`` is (C_in, C_out/groups, k).

    >>> conv_transpose1d(et.ones(1, 1, 2), et.ones(1, 1, 2)).tolist()
    [[[1.0, 2.0, 1.0]]]
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 2-d convolution; ``weight`` is (C_in, C_out/groups, kH, kW).

    >>> conv_transpose2d(et.ones(1, 1, 2, 2), et.ones(1, 1, 2, 2), stride=2).shape
    ember.Size([1, 1, 4, 4])
    """
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 3-d convolution; ``weight`` is (C_in, C_out/groups, kD, kH, kW).

    >>> conv_transpose3d(et.ones(1, 1, 1, 1, 1), et.ones(1, 2, 2, 2, 2)).shape
    ember.Size([1, 2, 2, 2, 2])
    """
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ----------------------------------------------------------------------------- unfold / fold
def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Extract sliding 2-d blocks: (N, C, H, W) -> (N, C*kH*kW, L), rows ordered
    (c, kh, kw) as in PyTorch.

    >>> unfold(et.arange(9.).view(1, 1, 3, 3), 2).shape
    ember.Size([1, 4, 4])
    """
    op = "unfold"
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"{op}(): Input Error: Only 3D or 4D input Tensors are "
                                  f"supported (got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    k = _ntuple(op, "kernel_size", kernel_size, 2)
    d = _ntuple(op, "dilation", dilation, 2)
    p = _ntuple(op, "padding", padding, 2)
    s = _ntuple(op, "stride", stride, 2)
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise RuntimeError(f"{op}(): kernel_size, dilation and stride must be positive and "
                           f"padding non-negative, got {k}, {d}, {s}, {p}")
    size = tuple(x.shape[2:])
    o = tuple(_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(2))
    if min(o) < 1:
        raise RuntimeError(f"{op}(): Given input with spatial size {list(size)}, "
                           f"kernel_size={k}, dilation={d}, padding={p}, calculated shape of "
                           f"the array of sliding blocks as {list(o)}, but its components must "
                           f"be at least one.")
    out = _im2col(x, (x.shape[1], size, k, s, p, d, o))
    return out if batched else out.squeeze(0)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0,
         stride=1) -> Tensor:
    """Combine sliding blocks (N, C*kH*kW, L) into (N, C, H, W), summing overlaps.

    >>> fold(et.ones(1, 4, 4), (3, 3), 2)[0, 0].tolist()
    [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
    """
    op = "fold"
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"{op}(): Input Error: Only unbatched (2D) or batched (3D) "
                                  f"input Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 3
    x = input if batched else input.unsqueeze(0)
    size = _ntuple(op, "output_size", output_size, 2)
    k = _ntuple(op, "kernel_size", kernel_size, 2)
    d = _ntuple(op, "dilation", dilation, 2)
    p = _ntuple(op, "padding", padding, 2)
    s = _ntuple(op, "stride", stride, 2)
    K = k[0] * k[1]
    if x.shape[1] % K:
        raise RuntimeError(f"{op}(): Expected size of input's dimension 1 to be divisible by "
                           f"the product of kernel_size, but got input.size(1)={x.shape[1]} "
                           f"and kernel_size={k}")
    o = tuple(_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(2))
    if o[0] * o[1] != x.shape[2]:
        raise RuntimeError(f"{op}(): Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {o[0]} * {o[1]} = "
                           f"{o[0] * o[1]}, but got input.size(2)={x.shape[2]}.")
    out = _col2im(x, (x.shape[1] // K, size, k, s, p, d, o))
    return out if batched else out.squeeze(0)


def _conv_params(op: str, value, nd: int) -> tuple[int, ...]:
    """Public helper for the modules: an int or a tuple as an ``nd``-tuple."""
    return _ntuple(op, "argument", value, nd)

