"""nn's primitives as registry ops: convolution and its im2col / col2im, max pooling, embedding,
the fused recurrent cells, CTC, softmax, cross entropy, nll loss and sequence packing, each with
its backward as a registry op of its own.

PyTorch has these at torch level too (``torch.conv2d``, ``torch.max_pool2d``,
``torch.embedding``, ``torch.lstm_cell``, ``torch.ctc_loss``, ...): the same names and
signatures are exported from ``ember.tensor``, and ``ember.nn.functional`` calls them. Each
primitive is declared once with :func:`defop`; its derivative lives in ember-autograd's table
(``derivatives_nn.py``) and calls the backward op named here (``convolution_backward``,
``max_pool2d_with_indices_backward``, ``embedding_dense_backward``, ``lstm_cell_backward``,
``gru_cell_backward``, ``_ctc_loss_backward``, ``nll_loss_backward``,
``_pack_padded_sequence_backward``), whose CPU implementation is the fused kernel of
``ember.tensor.kernels`` (nll loss: a Numba loop of ``kernels/cpu/softmax.py`` on the CPU;
packing: one NumPy gather / scatter); those backward ops have derivatives of their own in the
same table, so double backward runs through them.

    >>> import ember.tensor as et
    >>> et.conv2d(et.ones(1, 1, 3, 3), et.ones(1, 1, 2, 2)).tolist()
    [[[[4.0, 4.0], [4.0, 4.0]]]]
"""
from __future__ import annotations

import functools
import math

import numpy as np

from . import _dtype as D
from ._checks import check_same_device, not_implemented, scalar_type_name
from ._creation import tensor, zeros
from ._dtype import from_numpy_dtype
from ._fpstate import quiet
from ._linalg import linear
from ._registry import array_module, defop
from ._tensor import Tensor, _wrap_dim
from .kernels import get as _kernel

__all__ = [
    "convolution", "convolution_backward", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "im2col", "col2im",
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "max_pool2d_with_indices_backward",
    "max_pool3d_with_indices_backward",
    "embedding", "embedding_dense_backward",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell_fused",
    "lstm_cell_backward", "gru_cell_fused", "gru_cell_backward",
    "ctc_loss", "_ctc_loss", "_ctc_loss_backward",
    "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data",
    "native_layer_norm", "native_layer_norm_backward", "cross_entropy_loss",
    "_cross_entropy_loss_backward",
    "nll_loss_forward", "nll_loss_backward", "nll_loss_nd", "nll_loss",
    "_pack_padded_sequence", "_pack_padded_sequence_backward", "_pad_packed_sequence",
]

_make = Tensor._make
_ndarray = np.ndarray
_umax = np.maximum.reduce
_add_reduce = np.add.reduce
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_INT64 = np.dtype(np.int64)
# the dtypes the softmax row kernels take (float16 runs in float32 inside them)
_ROW_DTYPES = frozenset(_KERNEL_DTYPES + (np.dtype(np.float16),))


# ----------------------------------------------------------------------------- helpers
def _ntuple(op: str, name: str, value, n: int) -> tuple[int, ...]:
    """``value`` (an int or a sequence of n ints) as an n-tuple of ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * n
    t = tuple(map(int, value))
    if len(t) == 1 and n > 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"{op}(): expected {name} to be a single int or a tuple of {n} "
                           f"ints, got {value!r}")
    return t


def _three(t, fill):
    return (fill,) * (3 - len(t)) + tuple(t)


def _out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def _work_dtype(a):
    """float16 arrays are multiplied in float32 (NumPy's float16 matmul is slow and loses
    precision); returns the array to compute on."""
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _im2col_array(x, k, s, p, d, o):
    """Columns (N, C*prod(k), prod(o)) of the (N, C, *spatial) array ``x``; ``p`` is the
    padding before each spatial dim (zeros after it as far as ``o`` windows reach)."""
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
    if xp is not np or x.dtype in _KERNEL_DTYPES:
        # the Numba kernel writes the columns in one pass (padding as zeros): several times
        # faster than NumPy's copy of the strided window view, whose rows are short runs
        one = (1,) * (3 - nd)  # the kernel's (d, h, w) geometry: leading dims of size 1
        if xp is not np:
            x = xp.ascontiguousarray(x)
        # (the kernel's columns are (N, C*K, L) already, an array of their own)
        return _kernel("im2col", xp)(x.reshape(N, C, *one, *sp), one + k, one + s,
                                     (0,) * (3 - nd) + p, one + d, one + o)
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
    view = np.lib.stride_tricks.as_strided(x, shape, strides)
    return view.reshape(N, C * K, L)


def _col2im_array(cols, channels, size, k, s, p, d, o):
    """Adjoint of :func:`_im2col_array`: sums columns back into (N, C, *size)."""
    xp = array_module(cols)
    dt = cols.dtype
    if dt not in _KERNEL_DTYPES and xp is np:
        cols = cols.astype(np.float32)
    one = (1,) * (3 - len(k))  # the kernel's (d, h, w) geometry: leading dims of size 1
    out = _kernel("col2im", xp)(xp.ascontiguousarray(cols), channels, one + size, one + k,
                                one + s, (0,) * (3 - len(k)) + p, one + d, one + o)
    return out.reshape(cols.shape[0], channels, *size).astype(dt, copy=False)


def _need_tensor(x, op: str, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(x).__name__}")
    return x


# ----------------------------------------------------------------------------- im2col / col2im
def _fold_geometry(op, nd, kernel_size, dilation, padding, stride):
    k = _ntuple(op, "kernel_size", kernel_size, nd)
    d = _ntuple(op, "dilation", dilation, nd)
    p = _ntuple(op, "padding", padding, nd)
    s = _ntuple(op, "stride", stride, nd)
    if min(k) < 1 or min(d) < 1 or min(s) < 1 or min(p) < 0:
        raise RuntimeError(f"{op}(): kernel_size, dilation and stride must be positive and "
                           f"padding non-negative, got {k}, {d}, {s}, {p}")
    return k, d, p, s


def _memo(plan, *args):
    """``plan(*args)`` through its ``functools.lru_cache``; arguments that cannot be hashed
    (a list) are worked out uncached, as given (so that errors name them as given)."""
    try:
        return plan(*args)
    except TypeError:
        return plan.__wrapped__(*args)


@functools.lru_cache(maxsize=1024, typed=True)
def _im2col_plan(shape, kernel_size, dilation, padding, stride):
    """``(k, d, p, s, o)`` of an im2col of an input of ``shape``, checked as PyTorch checks
    them; memoized (a bad argument raises, and nothing is stored)."""
    nd = len(kernel_size) if not isinstance(kernel_size, int) else len(shape) - 2
    if len(shape) != nd + 2:
        raise RuntimeError(f"im2col(): expected a batched {nd + 2}-D input, got input of size "
                           f"{list(shape)}")
    k, d, p, s = _fold_geometry("im2col", nd, kernel_size, dilation, padding, stride)
    size = shape[2:]
    o = tuple(_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(nd))
    if min(o) < 1:
        raise RuntimeError(f"im2col(): Given input with spatial size {list(size)}, "
                           f"kernel_size={k}, dilation={d}, padding={p}, calculated shape of "
                           f"the array of sliding blocks as {list(o)}, but its components must "
                           f"be at least one.")
    return k, d, p, s, o


@defop("im2col")
def im2col(input: Tensor, kernel_size, dilation, padding, stride) -> Tensor:
    """Sliding blocks of a batched (N, C, *spatial) input as columns (N, C*prod(k), L), rows
    ordered (c, k...) as in PyTorch; 1, 2 or 3 spatial dims (``len(kernel_size)``)."""
    _need_tensor(input, "im2col", "input")
    x = input._data
    k, d, p, s, o = _memo(_im2col_plan, x.shape, kernel_size, dilation, padding, stride)
    cols = _im2col_array(x, k, s, p, d, o)
    if cols.base is not None or cols is x:  # a 1x1 window: a view, but a result owns memory
        cols = cols.copy()
    return _make(cols)


@functools.lru_cache(maxsize=1024, typed=True)
def _col2im_plan(shape, output_size, kernel_size, dilation, padding, stride):
    """``(C, size, k, s, p, d, o)`` of a col2im of columns of ``shape`` (the arguments of
    :func:`_col2im_array`), checked as PyTorch checks them; memoized (a bad argument raises,
    and nothing is stored)."""
    nd = len(kernel_size) if not isinstance(kernel_size, int) else len(output_size)
    size = _ntuple("col2im", "output_size", output_size, nd)
    k, d, p, s = _fold_geometry("col2im", nd, kernel_size, dilation, padding, stride)
    if len(shape) != 3:
        raise RuntimeError(f"col2im(): expected a batched 3-D input, got input of size "
                           f"{list(shape)}")
    K = math.prod(k)
    if shape[1] % K:
        raise RuntimeError(f"col2im(): Expected size of input's dimension 1 to be divisible by "
                           f"the product of kernel_size, but got input.size(1)={shape[1]} "
                           f"and kernel_size={k}")
    o = tuple(_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(nd))
    if math.prod(o) != shape[2] or min(o) < 1:
        raise RuntimeError(f"col2im(): Given output_size={size}, kernel_size={k}, "
                           f"dilation={d}, padding={p}, stride={s}, expected size of input's "
                           f"dimension 2 to match the calculated number of sliding blocks "
                           f"{' * '.join(map(str, o))} = {math.prod(o)}, but got "
                           f"input.size(2)={shape[2]}.")
    return shape[1] // K, size, k, s, p, d, o


@defop("col2im")
def col2im(input: Tensor, output_size, kernel_size, dilation, padding, stride) -> Tensor:
    """Sum columns (N, C*prod(k), L) back into (N, C, *output_size): the adjoint of
    :func:`im2col`."""
    _need_tensor(input, "col2im", "input")
    x = input._data
    return _make(_col2im_array(x, *_memo(_col2im_plan, x.shape, output_size, kernel_size,
                                         dilation, padding, stride)))


# ----------------------------------------------------------------------------- convolution
def _conv_geom(x_shape, w_shape, out_spatial, stride, padding, dilation, transposed, groups):
    """``(C, size, k, s, p, d, o)`` of the (plain) convolution involved: for a transposed
    one, the convolution it is the adjoint of (whose input is the transposed one's output)."""
    nd = len(w_shape) - 2
    k = tuple(w_shape[2:])
    s = _ntuple("convolution", "stride", stride, nd)
    p = _ntuple("convolution", "padding", padding, nd)
    d = _ntuple("convolution", "dilation", dilation, nd)
    if transposed:
        return (w_shape[1] * groups, tuple(out_spatial), k, s, p, d, tuple(x_shape[2:]))
    return (x_shape[1], tuple(x_shape[2:]), k, s, p, d, tuple(out_spatial))


def _check_convolution(x, w, b, stride, padding, dilation, transposed, output_padding,
                       groups):
    op = "convolution"
    _need_tensor(x, op, "input")
    _need_tensor(w, op, "weight")
    nd = w.dim() - 2
    if nd < 1 or nd > 3:
        raise RuntimeError(f"{op}(): expected a 3-D, 4-D or 5-D weight, got weight of size "
                           f"{list(w.shape)}")
    if x.dim() != nd + 2:
        raise RuntimeError(f"{op}(): expected a batched {nd + 2}-D input for a {nd + 2}-D "
                           f"weight, got input of size {list(x.shape)}")
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise RuntimeError(f"{op}(): non-positive groups is not supported (got {groups})")
    if w.shape[0] == 0:
        raise RuntimeError(f"{op}(): Given groups={groups}, expected weight to be at least 1 at "
                           f"dimension 0, but got weight of size {list(w.shape)} instead")
    if x.dtype != w.dtype or (b is not None and b.dtype != x.dtype):
        raise RuntimeError(
            f"{op}(): expected input, weight and bias of one dtype, got {x.dtype}, "
            f"{w.dtype}" + (f", {b.dtype}" if b is not None else ""))
    if x.device != w.device or (b is not None and b.device != x.device):
        raise RuntimeError(f"{op}(): input on {x.device} and weight on {w.device}")
    if not x.is_floating_point():
        raise RuntimeError(f"{op}(): expected a floating point input, got {x.dtype}")
    s = _ntuple(op, "stride", stride, nd)
    d = _ntuple(op, "dilation", dilation, nd)
    p = _ntuple(op, "padding", padding, nd)
    if min(s) < 1 or min(d) < 1 or min(p) < 0:
        raise RuntimeError(f"{op}(): invalid stride {s}, dilation {d} or padding {p}")
    C = x.shape[1]
    if transposed:
        if C != w.shape[0]:
            raise RuntimeError(
                f"{op}(): Given transposed=1, weight of size {list(w.shape)}, expected "
                f"input{list(x.shape)} to have {w.shape[0]} channels, but got {C} channels "
                f"instead")
        if C % groups:
            raise RuntimeError(f"{op}(): Given groups={groups}, expected weight to be "
                               f"divisible by {groups} at dimension 0, but got weight of size "
                               f"{list(w.shape)} instead")
        O = w.shape[1] * groups
        op_ = _ntuple(op, "output_padding", output_padding, nd)
        if min(op_) < 0 or any(op_[i] >= s[i] and op_[i] >= d[i] for i in range(nd)):
            raise RuntimeError(f"{op}(): output padding must be smaller than either stride or "
                               f"dilation, but got output_padding={op_}, stride={s}, "
                               f"dilation={d}")
        insize = tuple(x.shape[2:])
        k = tuple(w.shape[2:])
        size = tuple((insize[i] - 1) * s[i] - 2 * p[i] + d[i] * (k[i] - 1) + op_[i] + 1
                     for i in range(nd))
        if min(size) < 1:
            raise RuntimeError(f"{op}(): Given input size per channel {list(insize)}, "
                               f"calculated output size {list(size)} is too small")
        out_spatial = size
    else:
        if C != w.shape[1] * groups:
            raise RuntimeError(
                f"{op}(): Given groups={groups}, weight of size {list(w.shape)}, expected "
                f"input{list(x.shape)} to have {w.shape[1] * groups} channels, but got {C} "
                f"channels instead")
        O = w.shape[0]
        if O % groups:
            raise RuntimeError(f"{op}(): Given groups={groups}, expected weight to be "
                               f"divisible by {groups} at dimension 0, but got weight of size "
                               f"{list(w.shape)} instead")
        size = tuple(x.shape[2:])
        k = tuple(w.shape[2:])
        out_spatial = tuple(_out_size(size[i], k[i], s[i], p[i], d[i]) for i in range(nd))
        if min(out_spatial) < 1:
            eff = [d[i] * (k[i] - 1) + 1 for i in range(nd)]
            raise RuntimeError(
                f"{op}(): Calculated padded input size per channel: "
                f"({' x '.join(str(size[i] + 2 * p[i]) for i in range(nd))}). Kernel size: "
                f"({' x '.join(str(v) for v in eff)}). Kernel size can't be greater than "
                f"actual input size")
    if b is not None and tuple(b.shape) != (O,):
        raise RuntimeError(f"{op}(): Given weight of size {list(w.shape)}, expected bias to be "
                           f"1-dimensional with {O} elements, but got bias of size "
                           f"{list(b.shape)} instead")
    return out_spatial


@defop("convolution")
def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation,
                transposed: bool, output_padding, groups: int) -> Tensor:
    """N-d convolution (cross-correlation) or transposed convolution of a batched input."""
    out_spatial = _check_convolution(input, weight, bias, stride, padding, dilation, transposed,
                                     output_padding, groups)
    xd, wd = input._data, weight._data
    dt = xd.dtype
    xd, wd = _work_dtype(xd), _work_dtype(wd)
    C, size, k, s, p, d, o = _conv_geom(xd.shape, wd.shape, out_spatial, stride, padding,
                                        dilation, transposed, groups)
    N = xd.shape[0]
    G = groups
    if not transposed:
        O = wd.shape[0]
        cols = _im2col_array(xd, k, s, p, d, o)
        K, L = cols.shape[1], cols.shape[2]
        if G == 1:
            out = wd.reshape(O, K) @ cols
        else:
            out = (wd.reshape(G, O // G, K // G) @ cols.reshape(N, G, K // G, L)).reshape(
                N, O, L)
        if bias is not None:
            out += _work_dtype(bias._data).reshape(O, 1)
        out = out.reshape(N, O, *o)
    else:
        Cin = xd.shape[1]
        L = math.prod(o)
        Kg = wd.size // Cin  # Cout/G * prod(k)
        cols = (wd.reshape(G, Cin // G, Kg).transpose(0, 2, 1)
                @ xd.reshape(N, G, Cin // G, L)).reshape(N, G * Kg, L)
        out = _col2im_array(cols, C, size, k, s, p, d, o)
        if bias is not None:
            out += _work_dtype(bias._data).reshape((C,) + (1,) * len(size))
    return _make(out.astype(dt, copy=False))


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


@defop("convolution_backward")
def convolution_backward(grad_output: Tensor, input: Tensor, weight: Tensor, bias_sizes,
                         stride, padding, dilation, transposed: bool, output_padding,
                         groups: int, output_mask) -> tuple:
    """Gradients ``(grad_input, grad_weight, grad_bias)`` of :func:`convolution` for the
    output gradient ``grad_output``; an entry of ``output_mask`` that is False gives None."""
    gd = _work_dtype(grad_output._data)
    xd, wd = input._data, weight._data
    dt = xd.dtype
    wd = _work_dtype(wd)
    geom = _conv_geom(xd.shape, wd.shape, gd.shape[2:], stride, padding, dilation, transposed,
                      groups)
    C, size, k, s, p, d, o = geom
    N = gd.shape[0]
    G = groups
    L = math.prod(o)
    gx = gw = gb = None
    if not transposed:
        O = gd.shape[1]
        K = wd.size // O * G
        g3 = gd.reshape(N, O, L)
        if output_mask[0]:
            if G == 1:
                wt = wd.reshape(O, K).T
                gcols = (wt.copy() if wt.__class__ is np.ndarray else wt) @ g3
            else:
                gcols = (wd.reshape(G, O // G, K // G).transpose(0, 2, 1)
                         @ g3.reshape(N, G, O // G, L)).reshape(N, K, L)
            gx = _col2im_array(gcols, *geom)
        if output_mask[1]:
            cols = _im2col_array(_work_dtype(xd), k, s, p, d, o)
            gwt = _batched_wgrad(g3, cols, N, G)  # (G, K/G, O/G)
            gw = gwt.transpose(0, 2, 1).reshape(wd.shape)
        if output_mask[2]:
            gb = g3.sum((0, 2))
    else:
        Cin = xd.shape[1]
        Kg = wd.size // Cin
        gc = _im2col_array(gd, k, s, p, d, o)
        if output_mask[0]:
            gx = (wd.reshape(G, Cin // G, Kg) @ gc.reshape(N, G, Kg, L)).reshape(xd.shape)
        if output_mask[1]:
            gwt = _batched_wgrad(gc, _work_dtype(xd).reshape(N, Cin, L), N, G)  # (G, Cin/G, Kg)
            gw = gwt.reshape(wd.shape)
        if output_mask[2]:
            gb = gd.sum(tuple([0] + list(range(2, gd.ndim))))
    return tuple(None if a is None else _make(a.astype(dt, copy=False)) for a in (gx, gw, gb))


def _same_padding(op, k, s, d, nd):
    """PyTorch's ``padding='same'``: total ``d*(k-1)``, the odd element on the right."""
    if any(v != 1 for v in s):
        raise ValueError(f"{op}(): padding='same' is not supported for strided convolutions")
    left = [d[i] * (k[i] - 1) // 2 for i in range(nd)]
    right = [d[i] * (k[i] - 1) - left[i] for i in range(nd)]
    return left, right


def _conv_input(op, nd, input, weight):
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError(f"{op}(): expected Tensor input and weight, got "
                        f"{type(input).__name__} and {type(weight).__name__}")
    if weight.dim() != nd + 2:
        raise RuntimeError(f"{op}(): expected weight to be {nd + 2}-d, got weight of size "
                           f"{list(weight.shape)}")
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) "
                           f"input to {op}, but got input of size: {list(input.shape)}")
    batched = input.dim() == nd + 2
    return (input if batched else input.unsqueeze(0)), batched


def _conv(op, nd, input, weight, bias, stride, padding, dilation, groups):
    x, batched = _conv_input(op, nd, input, weight)
    s = _ntuple(op, "stride", stride, nd)
    d = _ntuple(op, "dilation", dilation, nd)
    if isinstance(padding, str):
        if padding == "valid":
            p = (0,) * nd
        elif padding == "same":
            k = tuple(weight.shape[2:])
            left, right = _same_padding(op, k, s, d, nd)
            if left != right:
                # pad the odd element on the right by hand (constant zeros)
                for i in range(nd):
                    extra = right[i] - left[i]
                    if extra:
                        shape = list(x.shape)
                        shape[2 + i] = extra
                        from ._shape import cat

                        x = cat([x, zeros(shape, dtype=x.dtype, device=x.device)], 2 + i)
            p = tuple(left)
        else:
            raise ValueError(f"{op}(): Invalid padding string {padding!r}, should be one of "
                             "'valid' or 'same'")
    else:
        p = _ntuple(op, "padding", padding, nd)
    out = convolution(x, weight, bias, s, p, d, False, (0,) * nd, groups)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-d convolution (cross-correlation) of (N, C, L) ``input`` with (O, C/groups, k)
    ``weight``; ``padding`` is an int, a tuple, ``'valid'`` or ``'same'``.

    >>> import ember.tensor as et
    >>> et.conv1d(et.ones(1, 1, 4), et.ones(1, 1, 2)).tolist()
    [[[2.0, 2.0, 2.0]]]
    """
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-d convolution of (N, C, H, W) ``input`` with (O, C/groups, kH, kW) ``weight``.

    >>> import ember.tensor as et
    >>> et.conv2d(et.ones(1, 1, 3, 3), et.ones(2, 1, 3, 3), padding="same").shape
    ember.Size([1, 2, 3, 3])
    """
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-d convolution of (N, C, D, H, W) ``input`` with (O, C/groups, kD, kH, kW) ``weight``.

    >>> import ember.tensor as et
    >>> et.conv3d(et.ones(1, 1, 2, 2, 2), et.ones(1, 1, 2, 2, 2)).tolist()
    [[[[[8.0]]]]]
    """
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(op, nd, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    x, batched = _conv_input(op, nd, input, weight)
    out = convolution(x, weight, bias, _ntuple(op, "stride", stride, nd),
                      _ntuple(op, "padding", padding, nd),
                      _ntuple(op, "dilation", dilation, nd), True,
                      _ntuple(op, "output_padding", output_padding, nd), groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 1-d convolution; ``weight`` is (C_in, C_out/groups, k).

    >>> import ember.tensor as et
    >>> et.conv_transpose1d(et.ones(1, 1, 2), et.ones(1, 1, 2)).tolist()
    [[[1.0, 2.0, 1.0]]]
    """
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 2-d convolution; ``weight`` is (C_in, C_out/groups, kH, kW)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """Transposed 3-d convolution; ``weight`` is (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# ----------------------------------------------------------------------------- max pooling
def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output size (a window may not start in the right padding)."""
    eff = d * (k - 1) + 1
    num = size + 2 * p - eff + ((s - 1) if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool_geometry(op, shape, nd, kernel_size, stride, padding, dilation, ceil_mode, max_pad):
    """``(k, s, p, d, size, o)`` of a pooling over the last ``nd`` dims of ``shape`` (checked
    as PyTorch checks them; ``max_pad(k, d)``: the largest padding allowed)."""
    k = _ntuple(op, "kernel_size", kernel_size, nd)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _ntuple(op, "stride", stride, nd)
    p = _ntuple(op, "padding", padding, nd)
    d = _ntuple(op, "dilation", dilation, nd)
    if min(k) < 1 or min(s) < 1 or min(d) < 1 or min(p) < 0:
        raise RuntimeError(f"{op}(): kernel_size, stride and dilation must be greater than zero "
                           f"and padding non-negative, got kernel_size={k}, stride={s}, "
                           f"padding={p}, dilation={d}")
    for i in range(nd):
        if p[i] > max_pad(k[i], d[i]):
            raise RuntimeError(f"{op}(): pad should be at most half of effective kernel size, "
                               f"but got pad={p[i]}, kernel_size={k[i]} and dilation={d[i]}")
    size = tuple(shape[-nd:])
    o = tuple(_pool_out(size[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(nd))
    if min(o) < 1 or min(size) < 1:
        raise RuntimeError(f"{op}(): Given input size {list(shape)}, calculated output size "
                           f"{list(shape[:-nd]) + list(o)} is too small (kernel_size={k}, "
                           f"stride={s}, padding={p}, dilation={d})")
    return k, s, p, d, size, o


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode):
    _need_tensor(input, op, "input")
    xd = input._data
    if xd.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D input, but got input of "
                           f"size {list(xd.shape)}")
    if xd.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point input, got {input.dtype}")
    view, geom, shape = _max_pool_plan(op, xd.shape, nd, _hashable(kernel_size),
                                       _hashable(stride), _hashable(padding),
                                       _hashable(dilation), ceil_mode)
    out, idx = _kernel("max_pool_forward", array_module(xd))(xd.reshape(view), *geom)
    return _make(out.reshape(shape)), _make(idx.reshape(shape))


def _hashable(v):
    """A pooling argument as a key of :func:`_max_pool_plan` (a list as a tuple)."""
    return tuple(v) if isinstance(v, (list, np.ndarray)) else v


@functools.lru_cache(maxsize=1024, typed=True)
def _max_pool_plan(op, shape, nd, kernel_size, stride, padding, dilation, ceil_mode):
    """``(input view shape, kernel geometry, output shape)`` of a max pooling, memoized by
    shape and arguments: checking and working them out costs more than a small pooling
    (a bad argument raises, and nothing is stored)."""
    k, s, p, d, size, o = pool_geometry(op, shape, nd, kernel_size, stride, padding,
                                        dilation, ceil_mode, _max_pool_pad)
    lead = shape[:-nd]
    return ((math.prod(lead),) + _three(size, 1),
            (_three(k, 1), _three(s, 1), _three(p, 0), _three(d, 1), _three(o, 1)), lead + o)


def _max_pool_pad(k: int, d: int) -> int:
    return (d * (k - 1) + 1) // 2


@defop("max_pool2d_with_indices")
def max_pool2d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False):
    """2-d max pooling of (N, C, H, W) or (C, H, W): ``(output, indices)``, indices flat
    offsets into H*W."""
    return _max_pool("max_pool2d_with_indices", 2, input, kernel_size, stride, padding,
                     dilation, ceil_mode)


@defop("max_pool3d_with_indices")
def max_pool3d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False):
    """3-d max pooling of (N, C, D, H, W) or (C, D, H, W): ``(output, indices)``."""
    return _max_pool("max_pool3d_with_indices", 3, input, kernel_size, stride, padding,
                     dilation, ceil_mode)


def _max_pool_backward(grad_output, input, indices, nd):
    gd, xd, idx = grad_output._data, input._data, indices._data
    B = math.prod(xd.shape[:-nd])
    L = math.prod(gd.shape[-nd:])
    P = math.prod(xd.shape[-nd:])
    if tuple(gd.shape) != tuple(idx.shape) or tuple(gd.shape[:-nd]) != tuple(xd.shape[:-nd]):
        raise RuntimeError(f"max_pool{nd}d_with_indices_backward(): grad_output of size "
                           f"{list(gd.shape)}, indices of size {list(idx.shape)} and input of "
                           f"size {list(xd.shape)} do not match")
    xp = array_module(gd)
    fn = _kernel("max_pool_backward", xp)
    out = fn(xp.ascontiguousarray(gd).reshape(B, 1, 1, L),
             xp.ascontiguousarray(idx).reshape(B, 1, 1, L), (1, 1, P))
    return _make(out.reshape(xd.shape).astype(xd.dtype, copy=False))


@defop("max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(grad_output: Tensor, input: Tensor, kernel_size, stride,
                                     padding, dilation, ceil_mode: bool, indices: Tensor):
    """Gradient of :func:`max_pool2d_with_indices`: ``grad_output`` scattered (added) to the
    argmax positions ``indices`` of each plane of ``input``'s shape."""
    return _max_pool_backward(grad_output, input, indices, 2)


@defop("max_pool3d_with_indices_backward")
def max_pool3d_with_indices_backward(grad_output: Tensor, input: Tensor, kernel_size, stride,
                                     padding, dilation, ceil_mode: bool, indices: Tensor):
    """Gradient of :func:`max_pool3d_with_indices`."""
    return _max_pool_backward(grad_output, input, indices, 3)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False):
    """1-d max pooling of (N, C, L) or (C, L): ``(output, indices)`` (a 2-d pooling over a
    height of one)."""
    if not isinstance(input, Tensor) or input.dim() not in (2, 3):
        _need_tensor(input, "max_pool1d", "input")
        raise RuntimeError(f"max_pool1d(): Expected 2D or 3D input, but got input of size "
                           f"{list(input.shape)}")
    k = _ntuple("max_pool1d", "kernel_size", kernel_size, 1)
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _ntuple("max_pool1d", "stride", stride, 1)
    out, idx = max_pool2d_with_indices(
        input.unsqueeze(-2), (1,) + k, (1,) + s,
        (0,) + _ntuple("max_pool1d", "padding", padding, 1),
        (1,) + _ntuple("max_pool1d", "dilation", dilation, 1), ceil_mode)
    return out.squeeze(-2), idx.squeeze(-2)


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """1-d max pooling (values only)."""
    return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """2-d max pooling (values only).

    >>> import ember.tensor as et
    >>> et.max_pool2d(et.arange(16.).view(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """3-d max pooling (values only)."""
    return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


# ----------------------------------------------------------------------------- embedding
# the index dtypes of a lookup and their unsigned twins: seen as unsigned, a negative index is
# larger than any table, so one maximum checks both ends of the range
_LOOKUP_UNSIGNED = {np.dtype(np.int64): np.dtype(np.uint64),
                    np.dtype(np.int32): np.dtype(np.uint32)}


def check_lookup_indices(op: str, indices: Tensor, n: int) -> None:
    """PyTorch's checks of lookup indices into a table of ``n`` rows (embedding and its bag):
    int64 or int32 (RuntimeError), every index in ``[0, n)`` (IndexError)."""
    idx = indices._data
    unsigned = _LOOKUP_UNSIGNED.get(idx.dtype)
    if unsigned is None:  # PyTorch: Long or Int only
        raise RuntimeError(f"{op}(): Expected tensor for argument 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {indices.dtype} instead")
    if idx.size:
        if idx.size <= 16:  # a handful of ids (one word, one sentence): Python is quicker
            vals = idx.ravel().tolist()
            lo, hi = min(vals), max(vals)
        # the largest seen as unsigned (a negative index is larger than any size): on NumPy
        # its ufunc reduction itself (the array's max method adds a Python wrapper of ~0.7 us)
        elif int(_umax(idx.view(unsigned), None) if idx.__class__ is _ndarray else
                 idx.view(unsigned).max()) < n:
            return
        else:
            lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            raise IndexError(f"{op}(): index {lo if lo < 0 else hi} is out of range for a "
                             f"table of {n} rows")


@defop("embedding")
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of the 2-D ``weight`` at the integer ``indices`` (any shape): output
    ``(*indices.shape, D)``. ``padding_idx`` rows get no gradient; ``scale_grad_by_freq``
    divides each row's gradient by its count in ``indices``.

    >>> import ember.tensor as et
    >>> et.embedding(et.arange(6.).view(3, 2), et.tensor([2, 0])).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    """
    try:
        w, idx = weight._data, indices._data
    except AttributeError:  # PyTorch's TypeError for an argument that is not a tensor
        _need_tensor(weight, "embedding", "weight")
        _need_tensor(indices, "embedding", "indices")
        raise
    if w.ndim != 2:
        raise RuntimeError(f"embedding(): 'weight' must be 2-D, got {list(w.shape)}")
    check_same_device("embedding", w, idx)
    check_lookup_indices("embedding", indices, w.shape[0])
    return _make(w.take(idx.reshape(-1), axis=0).reshape(idx.shape + (w.shape[1],)))


@defop("embedding_dense_backward")
def embedding_dense_backward(grad_output: Tensor, indices: Tensor, num_weights: int,
                             padding_idx: int, scale_grad_by_freq: bool) -> Tensor:
    """Gradient of :func:`embedding` w.r.t. its weight: ``(num_weights, D)`` zeros plus the
    rows of ``grad_output`` at ``indices`` (none for ``padding_idx``, divided by their count
    with ``scale_grad_by_freq``)."""
    gd, idx = grad_output._data, indices._data
    D = gd.shape[-1]
    g2 = gd.reshape(-1, D)
    flat = idx.reshape(-1)
    if flat.dtype != np.int64:
        flat = flat.astype(np.int64)
    xp = array_module(gd)
    if xp is np and gd.dtype in _KERNEL_DTYPES:
        return _make(_kernel("embedding_backward", np)(np.ascontiguousarray(g2), flat,
                                                       num_weights, padding_idx,
                                                       bool(scale_grad_by_freq)))
    if xp is not np:
        return _make(_kernel("embedding_backward", xp)(xp.ascontiguousarray(g2), flat,
                                                       num_weights, padding_idx,
                                                       bool(scale_grad_by_freq)))
    w = g2.astype(np.float32)
    if padding_idx >= 0:
        w = w * (flat != padding_idx)[:, None]
    if scale_grad_by_freq:
        counts = np.bincount(flat, minlength=num_weights)
        w = w / counts[flat][:, None]
    out = np.zeros((num_weights, D), dtype=np.float32)
    np.add.at(out, flat, w)
    return _make(out.astype(gd.dtype))


# ----------------------------------------------------------------------------- recurrent cells
# The pointwise math of a cell step runs as one fused kernel per direction (lstm_cell_forward /
# lstm_cell_backward, gru_cell_forward / gru_cell_backward of ember.tensor.kernels): measured
# in benchmarks/bench_kernels.py at 1.2-2.4x faster than the NumPy expression from N=4, H=64
# to N=256, H=512. The backward ops recompute the activations with the forward kernel.
def _cell_arrays(*arrays):
    """The arrays in one floating dtype (their promotion), C-contiguous."""
    dt = np.result_type(*arrays)
    xp = array_module(arrays[0])
    return [xp.ascontiguousarray(a, dtype=dt) for a in arrays]


def _lstm_forward(input_gates, hidden_gates, cx):
    """``(h, c, act, tanh(c))`` of an LSTM step, ``act`` the activated gates (i, f, g, o)."""
    gates = input_gates + hidden_gates
    gates, c0 = _cell_arrays(gates, cx)
    return _kernel("lstm_cell_forward", array_module(c0))(gates, c0)


def _check_cell(op, gates, state, k):
    if gates.ndim != 2 or state.ndim != 2 or gates.shape != (state.shape[0], k * state.shape[1]):
        raise RuntimeError(f"{op}(): expected gates of shape (N, {k}H) and a state of shape "
                           f"(N, H), got {list(gates.shape)} and {list(state.shape)}")


@defop("lstm_cell_fused")
def lstm_cell_fused(input_gates: Tensor, hidden_gates: Tensor, cx: Tensor) -> tuple:
    """The pointwise part of an LSTM step: from gate pre-activations ``input_gates +
    hidden_gates`` (N, 4H; gates i, f, g, o) and the cell state ``cx`` (N, H), returns
    ``(hy, cy)``."""
    a, b, c0 = input_gates._data, hidden_gates._data, cx._data
    _check_cell("lstm_cell_fused", a, c0, 4)
    h, c, _, _ = _lstm_forward(a, b, c0)
    dt = c0.dtype
    return _make(h.astype(dt, copy=False)), _make(c.astype(dt, copy=False))


@defop("lstm_cell_backward")
def lstm_cell_backward(grad_hy: Tensor | None, grad_cy: Tensor | None, input_gates: Tensor,
                       hidden_gates: Tensor, cx: Tensor) -> tuple:
    """Gradient of :func:`lstm_cell_fused`: ``(grad_gates, grad_cx)`` (``grad_gates`` is the
    gradient of both gate inputs); a None output gradient counts as zero."""
    a, b, c0 = input_gates._data, hidden_gates._data, cx._data
    _, _, act, tc = _lstm_forward(a, b, c0)
    dt = c0.dtype
    xp = array_module(c0)
    wd = act.dtype
    gh = None if grad_hy is None else xp.ascontiguousarray(grad_hy._data, dtype=wd)
    gc = None if grad_cy is None else xp.ascontiguousarray(grad_cy._data, dtype=wd)
    dgates, dcx = _kernel("lstm_cell_backward", xp)(gh, gc, act, c0.astype(wd, copy=False), tc)
    return _make(dgates.astype(dt, copy=False)), _make(dcx.astype(dt, copy=False))


def _gru_forward(input_gates, hidden_gates, hx):
    """``(h, r, z, n, gh, hx)`` of a GRU step on arrays of one dtype."""
    gi, gh, h0 = _cell_arrays(input_gates, hidden_gates, hx)
    h, r, z, n = _kernel("gru_cell_forward", array_module(h0))(gi, gh, h0)
    return h, r, z, n, gh, h0


@defop("gru_cell_fused")
def gru_cell_fused(input_gates: Tensor, hidden_gates: Tensor, hx: Tensor) -> Tensor:
    """The pointwise part of a GRU step from ``input_gates = x W_ih^T + b_ih`` and
    ``hidden_gates = h W_hh^T + b_hh`` (N, 3H; gates r, z, n): ``(1 - z) * n + z * hx``."""
    _check_cell("gru_cell_fused", input_gates._data, hx._data, 3)
    h = _gru_forward(input_gates._data, hidden_gates._data, hx._data)[0]
    return _make(h.astype(hx._data.dtype, copy=False))


@defop("gru_cell_backward")
def gru_cell_backward(grad_hy: Tensor, input_gates: Tensor, hidden_gates: Tensor,
                      hx: Tensor) -> tuple:
    """Gradient of :func:`gru_cell_fused`: ``(grad_input_gates, grad_hidden_gates,
    grad_hx)``."""
    _, r, z, n, gh, h0 = _gru_forward(input_gates._data, hidden_gates._data, hx._data)
    H = h0.shape[1]
    xp = array_module(h0)
    g = xp.ascontiguousarray(grad_hy._data, dtype=h0.dtype)
    dgi, dgh, dhx = _kernel("gru_cell_backward", xp)(g, r, z, n,
                                                     xp.ascontiguousarray(gh[:, 2 * H:]), h0)
    dt = hx._data.dtype
    return tuple(_make(a.astype(dt, copy=False)) for a in (dgi, dgh, dhx))




def _cell_check(name: str, input: Tensor, hx: Tensor, w_ih: Tensor) -> bool:
    if input.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
    if input.shape[-1] != w_ih.shape[1]:
        raise RuntimeError(f"{name}: input has inconsistent input_size: got "
                           f"{input.shape[-1]} expected {w_ih.shape[1]}")
    return input.dim() == 2


def lstm_cell(input: Tensor, hx, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple:
    """One LSTM step: ``(h, c)`` from ``hx = (h, c)``; gates in PyTorch's order (i, f, g, o).

    >>> import ember.tensor as et
    >>> h, c = et.lstm_cell(et.ones(1, 1), (et.zeros(1, 1), et.ones(1, 1)), et.zeros(4, 1),
    ...                     et.zeros(4, 1))
    >>> round(c.item(), 4)  # f * c + i * g = 0.5 * 1 + 0.5 * 0
    0.5
    """
    h, c = hx
    return lstm_cell_fused(linear(input, w_ih, b_ih), linear(h, w_hh, b_hh), c)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gates r, z, n as in PyTorch).

    >>> import ember.tensor as et
    >>> et.gru_cell(et.ones(1, 1), et.ones(1, 1), et.zeros(3, 1), et.zeros(3, 1)).tolist()
    [[0.5]]
    """
    return gru_cell_fused(linear(input, w_ih, b_ih), linear(hx, w_hh, b_hh), hx)


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step ``tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)``."""
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with ReLU."""
    return (linear(input, w_ih, b_ih) + linear(hx, w_hh, b_hh)).relu()


# ----------------------------------------------------------------------------- CTC
_ctc_batch = None  # kernels/cpu/ctc.py's, imported by the first call (Numba)


def _ctc(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity, want_grad):
    """Per-sequence losses and (``want_grad``) the gradient of their sum, as host float64
    arrays, from ``kernels/cpu/ctc.py`` after every length and label is checked (the kernel
    indexes with them unchecked)."""
    global _ctc_batch
    if _ctc_batch is None:  # (an import statement per call costs a microsecond or more)
        from .kernels.cpu.ctc import ctc_batch as _ctc_batch
    lp = log_probs._data
    lp = lp if isinstance(lp, np.ndarray) else lp.get()
    if lp.dtype != np.float32:  # (the kernel reads float32 as float64 itself: no copy)
        lp = lp.astype(np.float64, copy=False)
    batched = lp.ndim == 3
    if not batched:
        lp = lp[:, None, :]
    T, n, C = lp.shape
    tg = targets._data
    tg = (tg if isinstance(tg, np.ndarray) else tg.get()).astype(np.int64)
    # the lengths are checked as Python ints (a NumPy reduction costs more than a short list)
    ils = [int(v) for v in input_lengths]
    tls = [int(v) for v in target_lengths]
    if len(ils) != n or len(tls) != n:
        raise RuntimeError(f"ctc_loss: expected {n} input_lengths and target_lengths (the batch "
                           f"size of log_probs {list(log_probs.shape)}), got {len(ils)} and "
                           f"{len(tls)}")
    if n and (min(ils) < 0 or max(ils) > T):
        raise RuntimeError(f"ctc_loss: input_lengths must be in [0, {T}] (the input length), "
                           f"got {ils}")
    if n and min(tls) < 0:
        raise RuntimeError(f"ctc_loss: target_lengths must be non-negative, got {tls}")
    if not 0 <= blank < C:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {C}), got {blank}")
    il = np.array(ils, dtype=np.int64)
    tl = np.array(tls, dtype=np.int64)
    if tg.ndim == 2:  # padded (N, S)
        if tg.shape[0] != n or (n and max(tls) > tg.shape[1]):
            raise RuntimeError(f"ctc_loss: targets of shape {list(tg.shape)} do not hold "
                               f"target_lengths {tls} for {n} sequences")
        used = tg[np.arange(tg.shape[1]) < tl[:, None]]
        starts = np.arange(n, dtype=np.int64) * tg.shape[1]
        tg = tg.reshape(-1)
    else:  # concatenated
        total = sum(tls)
        starts = np.cumsum(tl) - tl
        if total > tg.size:
            raise RuntimeError(f"ctc_loss: {tg.size} targets do not hold target_lengths "
                               f"{tls}")
        used = tg[:total]
    # one reduction for both bounds: a negative label is a large unsigned one
    if used.size and int(used.view(np.uint64).max()) >= C:
        raise RuntimeError(f"ctc_loss: target labels must be in [0, {C}), got {used.min()} .. "
                           f"{used.max()}")
    losses, grad = _ctc_batch(np.ascontiguousarray(lp), np.ascontiguousarray(tg), starts, tl,
                             il, int(blank), bool(want_grad), bool(zero_infinity))
    if not batched:
        losses = losses.reshape(())
        grad = grad[:, 0, :]
    return losses, (grad if want_grad else None)


def _to_device(arr, like: Tensor):
    xp = array_module(like._data)
    return xp.asarray(arr).astype(like._data.dtype)


@defop("_ctc_loss")
def _ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
              blank: int = 0, zero_infinity: bool = False) -> Tensor:
    """Per-sequence CTC negative log likelihoods of ``log_probs`` (T, N, C) or (T, C)."""
    losses, _ = _ctc(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity,
                     False)
    return _make(_to_device(losses, log_probs))


@defop("_ctc_loss_backward")
def _ctc_loss_backward(grad: Tensor, log_probs: Tensor, targets: Tensor, input_lengths,
                       target_lengths, blank: int, zero_infinity: bool) -> Tensor:
    """Gradient of :func:`_ctc_loss` w.r.t. ``log_probs`` for the loss gradient ``grad``: the
    exact partial derivative (PyTorch's kernel adds ``exp(log_probs)``, a term that cancels
    through ``log_softmax``)."""
    _, jac = _ctc(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity,
                  True)
    g = grad._data
    g = g if isinstance(g, np.ndarray) else g.get()
    jac = jac * (g.reshape(1, -1, 1) if jac.ndim == 3 else g)
    return _make(_to_device(jac, log_probs))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    """CTC loss (``torch.ctc_loss``): ``reduction`` 0 none, 1 mean (each loss divided by
    its target length), 2 sum."""
    il = input_lengths.tolist() if isinstance(input_lengths, Tensor) else list(input_lengths)
    tl = target_lengths.tolist() if isinstance(target_lengths, Tensor) else \
        list(target_lengths)
    il = [int(v) for v in np.asarray(il).reshape(-1)]
    tl = [int(v) for v in np.asarray(tl).reshape(-1)]
    losses = _ctc_loss(log_probs, targets, il, tl, blank, zero_infinity)
    if reduction == 0:
        return losses
    if reduction == 2:
        return losses.sum()
    denom = tensor([max(v, 1) for v in tl], dtype=log_probs.dtype, device=log_probs.device)
    if losses.dim() == 0:
        return losses / denom.reshape(())
    return (losses / denom).mean()


# ----------------------------------------------------------------------------- softmax family
# softmax and log_softmax over one dim, with their backward ops (PyTorch's aten names). Rows
# over the last dim of a float32 / float64 array run the fused row kernels (one pass for the
# max, one for the sum of exponentials, one for the output: measured in
# benchmarks/bench_kernels.py at 1.1-5x NumPy's expression from 4x64 to 700x10000); other dims
# and dtypes run the same math as one NumPy expression. Both subtract the row max before
# exponentiating and keep ``(x - max) - log(sum)`` apart, so they are shift-invariant: logits
# near 1e6 in float32 give the probabilities of logits near 0.
def _float_input(op: str, x, half_to_float: bool = False):
    if x.dtype.kind != "f":  # PyTorch has no kernel for bool or integer tensors
        raise not_implemented(op, x.dtype)
    if half_to_float and x.dtype != np.float16:
        raise RuntimeError(f"{op}(): conversion from {_dtype_str(x.dtype)} to float is only "
                           f"supported for half (float16) inputs")


def _dtype_str(dt) -> str:
    return str(from_numpy_dtype(dt))


def _rows_of(x, xp):
    """``x`` as a C-contiguous (rows, cols) array over its last dim (a view when it can be)."""
    if x.ndim == 2 and x.flags.c_contiguous:
        return x
    return xp.ascontiguousarray(x).reshape(-1, x.shape[-1])


def _softmax_op(op: str, log: bool, doc: str):
    """The registry op ``op``: softmax (log_softmax with ``log``) of ``input`` along ``dim``,
    in its dtype (float32 with ``half_to_float``); a 0-d input is one row of one element.
    (The op's own function, not a wrapper's call: a frame costs 0.1 us of a 2 us call.)"""

    def impl(input: Tensor, dim: int, half_to_float: bool = False) -> Tensor:
        # ``input`` not a Tensor fails at ``._data``: the registry then raises PyTorch's
        # TypeError
        x = input._data
        dt = x.dtype
        if dt.kind != "f" or half_to_float:
            _float_input(op, x, half_to_float)
            if half_to_float:
                x = x.astype(np.float32)
                dt = x.dtype
        shape = x.shape
        nd = len(shape)
        n = nd or 1
        if not -n <= dim < n:
            _wrap_dim(dim, nd, op)  # (raises PyTorch's IndexError)
        d = dim + n if dim < 0 else dim
        xp = np if x.__class__ is _ndarray else array_module(x)
        if d == n - 1 and dt in _ROW_DTYPES and x.size:  # (the last dim; a 0-d input: a row)
            rows = x if nd == 2 and x.flags.c_contiguous else \
                xp.ascontiguousarray(x).reshape(-1, shape[-1] if nd else 1)
            if xp is np and dt in _KERNEL_DTYPES:  # the CPU kernel's rows, checked here
                y = (_sm or _softmax_kernels())._rows_forward(rows, log)
            else:  # CuPy's kernel; float16 through the CPU kernel's float32 copy
                y = _kernel("log_softmax_forward" if log else "softmax_forward", xp)(rows)
            return _make(y if rows is x else y.reshape(shape))
        if nd == 0:
            x = x.reshape(1)
        if x.size == 0:
            return _make(xp.empty(shape, dtype=dt))
        w = x.astype(np.float32) if dt == np.float16 else x
        s = w - w.max(axis=d, keepdims=True)
        if log:
            e = xp.exp(s)
            s -= xp.log(e.sum(axis=d, keepdims=True))
        else:
            xp.exp(s, out=s)
            s /= s.sum(axis=d, keepdims=True)
        return _make((s if nd else s.reshape(())).astype(dt, copy=False))

    impl.__name__, impl.__qualname__, impl.__doc__ = op, op, doc
    return defop(op, out=True)(impl)


_softmax = _softmax_op("_softmax", False, """``exp(x - max) / sum(exp(x - max))`` along ``dim``
    (``torch._softmax``).

    >>> import ember.tensor as et
    >>> et._softmax(et.tensor([1e6, 1e6 + 1.0]), 0, False).tolist()
    [0.2689414322376251, 0.7310585975646973]
    """)
_log_softmax = _softmax_op("_log_softmax", True, """``(x - max) - log(sum(exp(x - max)))``
    along ``dim`` (``torch._log_softmax``).""")


def _softmax_bw_impl(op: str, grad_output: Tensor, output: Tensor, dim: int, input_dtype,
                     log: bool) -> Tensor:
    g, y = grad_output._data, output._data
    if g.shape != y.shape:
        raise RuntimeError(f"{op}(): grad_output of shape {list(g.shape)} does not match "
                           f"output of shape {list(y.shape)}")
    _float_input(op, y)
    out_dt = D.to_dtype(input_dtype, op).np if input_dtype is not None else y.dtype
    if g.dtype != y.dtype:
        g = g.astype(y.dtype)
    xp = array_module(y)
    shape = y.shape
    if y.ndim == 0:
        y, g = y.reshape(1), g.reshape(1)
    d = _wrap_dim(dim, y.ndim, op)
    if d == y.ndim - 1 and y.dtype in _ROW_DTYPES and y.size:
        k = _kernel("log_softmax_backward" if log else "softmax_backward", xp)
        dx = k(_rows_of(y, xp), _rows_of(g, xp)).reshape(y.shape)
    elif y.size == 0:
        dx = xp.empty(y.shape, dtype=y.dtype)
    else:
        wy = y.astype(np.float32) if y.dtype == np.float16 else y
        wg = g.astype(wy.dtype, copy=False)
        if log:
            dx = wg - xp.exp(wy) * wg.sum(axis=d, keepdims=True)
        else:
            dx = wg * wy
            dx -= wy * dx.sum(axis=d, keepdims=True)
    return _make(dx.reshape(shape).astype(out_dt, copy=False))


@defop("_softmax_backward_data", out=True)
def _softmax_backward_data(grad_output: Tensor, output: Tensor, dim: int,
                           input_dtype) -> Tensor:
    """Gradient of :func:`_softmax` from its output ``y``: ``y * (g - sum(g * y, dim))``,
    in ``input_dtype``."""
    return _softmax_bw_impl("_softmax_backward_data", grad_output, output, dim, input_dtype,
                            False)


@defop("_log_softmax_backward_data", out=True)
def _log_softmax_backward_data(grad_output: Tensor, output: Tensor, dim: int,
                               input_dtype) -> Tensor:
    """Gradient of :func:`_log_softmax` from its output ``y``: ``g - exp(y) * sum(g, dim)``,
    in ``input_dtype``."""
    return _softmax_bw_impl("_log_softmax_backward_data", grad_output, output, dim,
                            input_dtype, True)


# ----------------------------------------------------------------------------- layer norm
def _layer_norm_dtypes(op: str, x, w, b) -> None:
    """PyTorch's CPU rule: the affine parameters (arrays or None) share the input's dtype, or
    are float32 for a half-precision input."""
    xd = x.dtype
    wd = xd if w is None else w.dtype
    bd = xd if b is None else b.dtype
    if wd == xd and bd == xd:
        return
    if xd in (np.float16, D.BF16_NP) and (w is None or wd == np.float32) and \
            (b is None or bd == np.float32):
        return
    if xd != np.float32:
        raise RuntimeError(f"{op}(): mixed dtype (CPU): all inputs must share same datatype.")
    if w is None or wd != xd:
        raise RuntimeError(f"{op}(): mixed dtype (CPU): expect parameter to have scalar type "
                           "of Float")
    raise RuntimeError(f"{op}(): expected scalar type Float but found "
                       f"{scalar_type_name(bd)}")


@defop("native_layer_norm")
def native_layer_norm(input: Tensor, normalized_shape: list, weight: Tensor | None,
                      bias: Tensor | None, eps: float) -> tuple:
    """Layer norm over the trailing ``normalized_shape`` dims with an optional elementwise
    affine, returning ``(out, mean, rstd)`` (``torch.native_layer_norm``): ``mean`` and
    ``rstd = 1 / sqrt(var + eps)`` (biased variance) keep the normalized dims with size 1.
    One row kernel (``layer_norm_forward``; float16 computes in float32).

    >>> import ember.tensor as et
    >>> out, mean, rstd = et.native_layer_norm(et.tensor([[1., 3.]]), [2], None, None, 1e-5)
    >>> out.round().tolist(), mean.tolist()
    ([[-1.0, 1.0]], [[2.0]])
    """
    op = "native_layer_norm"
    x = input._data
    ns = _normalized_shape(normalized_shape)
    nd = len(ns)
    shape = x.shape
    lead = shape[:len(shape) - nd]
    if nd == 0 or len(shape) < nd or shape[len(shape) - nd:] != ns:
        raise RuntimeError(f"{op}(): Given normalized_shape={list(ns)}, expected input with "
                           f"shape [*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(shape)}")
    w = b = None
    if weight is not None:
        w = weight._data
        if w.shape != ns:
            _layer_norm_param_error(op, "weight", w, ns)
    if bias is not None:
        b = bias._data
        if b.shape != ns:
            _layer_norm_param_error(op, "bias", b, ns)
    _layer_norm_dtypes(op, x, w, b)
    if x.dtype.kind != "f":  # PyTorch has no kernel for bool or integer tensors
        raise not_implemented(op, x.dtype)
    # (reshapes only where the layout differs: each costs a view)
    x2 = x if len(shape) == 2 and nd == 1 else x.reshape(math.prod(lead), math.prod(ns))
    w2 = None if w is None else w if nd == 1 else w.reshape(-1)
    b2 = None if b is None else b if nd == 1 else b.reshape(-1)
    stat = lead + (1,) * nd
    if x.__class__ is np.ndarray:  # the CPU kernel, its results in the op's shapes
        global _kn
        if _kn is None:
            from .kernels.cpu import norm as _kn
        out, mean, rstd = _kn._layer_norm_run(x2, w2, b2, eps, shape, stat)
        return _make(out), _make(mean), _make(rstd)
    out, mean, rstd = _kernel("layer_norm_forward", array_module(x))(x2, w2, b2, eps)
    return (_make(out if out.shape == shape else out.reshape(shape)), _make(mean.reshape(stat)),
            _make(rstd.reshape(stat)))


_kn = None  # kernels/cpu/norm.py, imported by the first layer norm on the CPU (Numba)


def _layer_norm_param_error(op: str, name: str, a, ns: tuple):
    raise RuntimeError(f"{op}(): Expected {name} to be of same shape as normalized_shape, but "
                       f"got {name} of shape {list(a.shape)} and normalized_shape = {list(ns)}")


def _normalized_shape(normalized_shape) -> tuple:
    return (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) else \
        tuple(map(int, normalized_shape))


@defop("native_layer_norm_backward")
def native_layer_norm_backward(grad_out: Tensor, input: Tensor, normalized_shape: list,
                               mean: Tensor, rstd: Tensor, weight: Tensor | None,
                               bias: Tensor | None, output_mask: list) -> tuple:
    """The gradient of :func:`native_layer_norm`'s normalized output ``grad_out``:
    ``(grad_input, grad_weight, grad_bias)`` from the input and the ``mean`` and ``rstd`` the
    forward returned, None where ``output_mask`` is False (and ``grad_weight`` without a
    ``weight``) (``torch.ops.aten.native_layer_norm_backward``). One row kernel
    (``layer_norm_backward``; float16 computes in float32).

    >>> import ember.tensor as et
    >>> x = et.tensor([[1., 3.]])
    >>> _, mean, rstd = et.native_layer_norm(x, [2], None, None, 0.0)
    >>> gx, gw, gb = et.native_layer_norm_backward(et.tensor([[1., 0.]]), x, [2], mean, rstd,
    ...                                             None, None, [True, False, False])
    >>> gx.tolist(), gw, gb
    ([[0.0, 0.0]], None, None)
    """
    op = "native_layer_norm_backward"
    x = input._data
    ns = _normalized_shape(normalized_shape)
    nd = len(ns)
    if nd == 0 or x.ndim < nd or tuple(x.shape[x.ndim - nd:]) != ns or \
            tuple(grad_out._data.shape) != tuple(x.shape):
        raise RuntimeError(f"{op}(): Given normalized_shape={list(ns)}, expected input and "
                           f"grad_out with shape [*, {', '.join(map(str, ns))}], but got input "
                           f"of size {list(x.shape)} and grad_out of size "
                           f"{list(grad_out._data.shape)}")
    _float_input(op, x)
    check_same_device(op, x, grad_out._data, mean._data, rstd._data,
                      *(t._data for t in (weight, bias) if t is not None))
    xp = array_module(x)
    R, n = math.prod(x.shape[:x.ndim - nd]), math.prod(ns)
    gx, gw, gb = _kernel("layer_norm_backward", xp)(
        grad_out._data.reshape(R, n), x.reshape(R, n), mean._data.reshape(R),
        rstd._data.reshape(R), None if weight is None else weight._data.reshape(-1))
    mask = [bool(v) for v in output_mask]
    return (_make(gx.reshape(x.shape)) if mask[0] else None,
            _make(gw.reshape(ns).astype(weight._data.dtype, copy=False))
            if mask[1] and weight is not None else None,
            _make(gb.reshape(ns).astype(x.dtype if bias is None else bias._data.dtype,
                                        copy=False)) if mask[2] else None)


# ----------------------------------------------------------------------------- cross entropy
# cross_entropy_loss with class-index targets as one op per direction: the fused row kernels
# of kernels/cpu/softmax.py and kernels/cuda/softmax.cu compute each row's max, log-sum-exp,
# loss (weight, ignore_index, label smoothing) and gradient without any intermediate (N, C)
# array. Reductions: 0 none, 1 mean (divided by the summed weights of the counted targets,
# as PyTorch), 2 sum.
_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(op: str, reduction) -> int:
    if isinstance(reduction, str):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{reduction} is not a valid value for reduction")
        return _REDUCTIONS[reduction]
    r = int(reduction)
    if r not in (0, 1, 2):
        raise ValueError(f"{op}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {r}")
    return r


def _same(dx):
    return dx


def _ce_layout(op: str, input: Tensor, target: Tensor, weight: Tensor | None,
               rows_needed: bool = True):
    """``(rows (M, C), flat int64 targets (M,), weight array or None, restore)`` of a class-dim
    layout: (C,) with a 0-d target, (N, C) with (N,), or (N, C, d1, ...) with (N, d1, ...);
    ``restore(dx_rows)`` puts a rows-shaped gradient back in the input's layout. Without
    ``rows_needed`` a (N, C, d1, ...) input's rows are not copied out (``rows`` is None)."""
    try:
        x, t = input._data, target._data
    except AttributeError:
        _need_tensor(input, op, "self")
        _need_tensor(target, op, "target")
        raise
    if x.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected a floating point input, got "
                           f"{_dtype_str(x.dtype)}")
    if t.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): expected a target of an integer dtype (class indices), "
                           f"got {_dtype_str(t.dtype)}")
    if t.__class__ is not x.__class__:
        raise RuntimeError(f"{op}(): target on {target.device} but input on {input.device}")
    xs, ts = x.shape, t.shape
    nd = len(xs)
    if nd == 2 and ts == xs[:1]:
        C, rows, restore = xs[1], x, _same
    elif nd < 2:
        if nd == 0:
            raise ValueError(f"{op}(): input must have at least 1 dim, got a 0-d tensor")
        if ts:
            raise ValueError(f"{op}(): for 1-D input of shape {list(xs)} the target must "
                             f"be 0-D, got {list(ts)}")
        C = xs[0]
        rows = x.reshape(1, C)

        def restore(dx):
            return dx.reshape(C)
    else:
        n, C = xs[0], xs[1]
        if ts != xs[:1] + xs[2:]:
            if ts and ts[0] != n:
                raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                                 f"({ts[0]}).")
            raise RuntimeError(f"{op}(): expected target of shape {[n] + list(xs[2:])} "
                               f"for input of shape {list(xs)}, got {list(ts)}")
        xp = array_module(x)
        moved = xp.moveaxis(x, 1, -1)
        mshape = moved.shape
        rows = xp.ascontiguousarray(moved).reshape(-1, C) if rows_needed else None

        def restore(dx):
            return xp.ascontiguousarray(xp.moveaxis(dx.reshape(mshape), -1, 1))
    flat = t if len(ts) == 1 else t.reshape(-1)
    if flat.dtype != _INT64:  # (a dtype: comparing with np.int64 converts it on each call)
        flat = flat.astype(np.int64)
    w = None
    if weight is not None:
        _need_tensor(weight, op, "weight")
        w = weight._data
        if w.ndim != 1 or w.shape[0] != C:
            raise RuntimeError(f"weight tensor should be defined either for all {C} classes or "
                               f"no classes but got weight tensor of shape: {list(w.shape)}")
        if w.__class__ is not x.__class__:
            raise RuntimeError(f"{op}(): weight on {weight.device} but input on "
                               f"{input.device}")
        w = w.astype(x.dtype, copy=False)
    return rows, flat, w, restore


def _ce_check_targets(C: int, flat, ignore_index: int) -> None:
    if flat.size:
        bad = (flat != ignore_index) & ((flat < 0) | (flat >= C))
        if bool(bad.any()):
            raise IndexError(f"Target {int(flat[bad][0])} is out of bounds.")


def _ce_denominator(flat, w, ignore_index: int, dtype):
    """The mean's divisor: the summed weights of the counted targets (their count without a
    weight)."""
    xp = array_module(flat)
    valid = flat != ignore_index
    if w is None:
        return float(xp.count_nonzero(valid))
    return float(w[xp.where(valid, flat, 0)][valid].sum(dtype=np.float64))


def _ce_kernel_ok(rows) -> bool:
    return rows.dtype in _ROW_DTYPES and rows.shape[1] > 0


def _ce_rows_numpy(rows, flat, w, ignore_index, eps):
    """Per-row losses with NumPy (float16, or no class): the kernels' math."""
    xp = array_module(rows)
    x = rows.astype(np.float32) if rows.dtype == np.float16 else rows
    N, C = x.shape
    valid = flat != ignore_index
    safe = xp.where(valid, flat, 0)
    m = x.max(axis=1, keepdims=True)
    s = m - x  # >= 0
    ls = xp.log(xp.exp(-s).sum(axis=1, keepdims=True))
    nll = s[xp.arange(N), safe] + ls[:, 0]
    ww = xp.ones(C, dtype=x.dtype) if w is None else w.astype(x.dtype)
    loss = (1.0 - eps) * ww[safe] * nll
    if eps > 0:
        loss = loss + eps / C * ((s * ww).sum(axis=1) + ls[:, 0] * ww.sum())
    return xp.where(valid, loss, 0).astype(x.dtype)


@defop("cross_entropy_loss")
def cross_entropy_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                       reduction: int = 1, ignore_index: int = -100,
                       label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input`` (C,), (N, C) or (N, C, d1, ...) against class indices
    ``target``, with class ``weight``, ``ignore_index`` and ``label_smoothing``; ``reduction``
    0 none, 1 mean, 2 sum (``torch._C._nn.cross_entropy_loss`` for class-index targets).

    >>> import ember.tensor as et
    >>> round(et.cross_entropy_loss(et.tensor([[1e6, 1e6]]), et.tensor([0])).item(), 4)
    0.6931
    """
    op = "cross_entropy_loss"
    r = _reduction_enum(op, reduction)
    eps = float(label_smoothing)
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {eps}")
    rows, flat, w, _ = _ce_layout(op, input, target, weight)
    ignore_index = int(ignore_index)
    xp = array_module(rows)
    dt = rows.dtype
    total = None  # the losses' sum and the mean's divisor, where the CPU kernel gives them
    if rows.shape[0] == 0:
        loss = xp.zeros(0, dtype=dt)
    elif _ce_kernel_ok(rows):
        try:  # the kernel checks the targets itself; PyTorch's message only when one is bad
            if xp is np and dt in _KERNEL_DTYPES:  # the CPU kernel's rows, checked here
                sm, asc = _sm or _softmax_kernels(), np.ascontiguousarray
                loss, _, total, denom = sm._ce_forward_rows(
                    asc(rows), asc(flat), sm._unit_weights(rows.shape[1], dt) if w is None
                    else asc(w), ignore_index, eps)
            else:  # CuPy's kernel; float16 through the CPU kernel's float32 copy
                loss, _ = _kernel("cross_entropy_forward", xp)(rows, flat, w, ignore_index,
                                                               eps)
        except IndexError:
            _ce_check_targets(rows.shape[1], flat, ignore_index)
            raise
    else:
        _ce_check_targets(rows.shape[1], flat, ignore_index)
        loss = _ce_rows_numpy(rows, flat, w, ignore_index, eps)
    if r == 0:
        return _make(loss.reshape(target.shape).astype(dt, copy=False))
    if total is None:  # NumPy's / CuPy's sums, as Python floats too
        acc = np.float64 if dt == np.float16 else dt
        # (on NumPy the ufunc reduction itself: the array's sum method adds a Python wrapper)
        total = float(_add_reduce(loss, None, acc) if xp is np else loss.sum(dtype=acc))
        denom = _ce_denominator(flat, w, ignore_index, dt)
    if r == 2:
        return _make(xp.asarray(total, dtype=dt))
    # (Python floats: an overflow is inf and inf / inf NaN, without NumPy's warnings)
    return _make(xp.asarray(total / denom if denom else total * math.nan, dtype=dt))


@defop("_cross_entropy_loss_backward")
def _cross_entropy_loss_backward(grad_output: Tensor, input: Tensor, target: Tensor,
                                 weight: Tensor | None, reduction: int, ignore_index: int,
                                 label_smoothing: float) -> Tensor:
    """Gradient of :func:`cross_entropy_loss` w.r.t. its input for the loss gradient
    ``grad_output`` (a scalar, or the target's shape with reduction 0): per row,
    ``g ((1 - eps) w[t] + eps/C sum(w)) softmax(x) - g ((1 - eps) w[t] onehot(t) + eps/C w)``,
    zero on ignored rows."""
    op = "_cross_entropy_loss_backward"
    r = _reduction_enum(op, reduction)
    eps = float(label_smoothing)
    rows, flat, w, restore = _ce_layout(op, input, target, weight)
    ignore_index = int(ignore_index)
    xp = array_module(rows)
    dt = rows.dtype
    N = rows.shape[0]
    g = grad_output._data
    if r == 0:
        go = g.reshape(-1).astype(dt, copy=False)
        if go.shape[0] != N:
            raise RuntimeError(f"{op}(): grad_output of shape {list(g.shape)} does not match "
                               f"target of shape {list(target.shape)}")
    else:
        scale = g.reshape(()).astype(np.float64)
        if r == 1:
            denom = _ce_denominator(flat, w, ignore_index, dt)
            with quiet():
                scale = scale / denom if denom else scale * np.nan
        go = xp.full(N, scale, dtype=dt) if xp is np else xp.broadcast_to(
            xp.asarray(scale, dtype=dt), (N,))
    if rows.size == 0:
        dx = xp.zeros(rows.shape, dtype=dt)
    elif _ce_kernel_ok(rows):
        dx = _kernel("cross_entropy_backward", xp)(rows, flat, w, ignore_index, eps,
                                                   xp.ascontiguousarray(go))
    else:
        x = rows.astype(np.float32) if dt == np.float16 else rows
        C = x.shape[1]
        valid = flat != ignore_index
        safe = xp.where(valid, flat, 0)
        ww = xp.ones(C, dtype=x.dtype) if w is None else w.astype(x.dtype)
        gv = xp.where(valid, go.astype(x.dtype), 0)
        p = xp.exp(x - x.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        hot = (1.0 - eps) * ww[safe] * gv
        p *= (hot + eps / C * ww.sum() * gv)[:, None]
        p[xp.arange(N), safe] -= hot
        if eps > 0:
            p -= (eps / C * gv)[:, None] * ww
        dx = p.astype(dt)
    return _make(restore(dx))


# ----------------------------------------------------------------------------- nll loss
# nll_loss with class-index targets as one op per direction, PyTorch's nll_loss_forward /
# nll_loss_backward, for every layout nll_loss_nd takes ((C,) with a 0-d target, (N, C) with
# (N,), (N, C, d1, ...) with (N, d1, ...); PyTorch splits the last into nll_loss2d_*): one
# gather of the picked log-probabilities, weighted and masked, and PyTorch's second output
# ``total_weight`` (the summed weights of the counted targets: the mean's divisor), which the
# backward reads. Reductions: 0 none, 1 mean, 2 sum. On the CPU (float32, float64) both are one
# Numba loop over the targets (``kernels/cpu/softmax.py``), reading the input as (N, C, L).
_sm = None  # kernels/cpu/softmax.py, imported by the first call that runs on it (Numba)


def _softmax_kernels():
    global _sm
    if _sm is None:
        from .kernels.cpu import softmax as _sm
    return _sm


def _nll_view(x):
    """A (C,), (N, C) or (N, C, d1, ...) array as (N, C, L): a view when it is contiguous."""
    if x.ndim == 2:
        return x[:, :, None]
    if x.ndim == 1:
        return x[None, :, None]
    return x.reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:]))


def _nll_targets(rows, flat, ignore_index: int, xp):
    """``(row mask of the counted targets or None when every row counts, safe class indices,
    number of counted targets)``; a counted target outside ``[0, C)`` raises PyTorch's
    IndexError. One pass finds both ends of the range: as unsigned integers, negative
    targets are above ``C`` too."""
    valid = flat != ignore_index
    counted = int(xp.count_nonzero(valid))
    if counted == flat.shape[0]:
        valid, safe = None, flat
    else:
        safe = xp.where(valid, flat, 0)
    if int(xp.count_nonzero(safe.view(np.uint64) >= rows.shape[1])):
        _ce_check_targets(rows.shape[1], flat, ignore_index)
    return valid, safe, counted


@defop("nll_loss_forward", out=True)
def nll_loss_forward(input: Tensor, target: Tensor, weight: Tensor | None, reduction: int,
                     ignore_index: int) -> tuple:
    """``(output, total_weight)``: the negative log likelihood of log-probabilities ``input``
    (C,), (N, C) or (N, C, d1, ...) at class indices ``target``, weighted by ``weight[target]``,
    ``ignore_index`` entries counting for nothing; ``reduction`` 0 none, 1 mean (divided by
    ``total_weight``; NaN when nothing counts, with a zero gradient), 2 sum. ``total_weight``
    is 0 for an unreduced batched loss, as PyTorch's.

    >>> import ember.tensor as et
    >>> loss, total = et.nll_loss_forward(et.tensor([[-1., -2.]]), et.tensor([1]), None, 1, -100)
    >>> loss.item(), total.item()
    (2.0, 1.0)
    """
    op = "nll_loss_forward"
    r = _reduction_enum(op, reduction)
    x = input._data
    on_kernel = x.__class__ is np.ndarray and x.dtype in _KERNEL_DTYPES
    rows, flat, w, _ = _ce_layout(op, input, target, weight, rows_needed=not on_kernel)
    ignore_index = int(ignore_index)
    dt = x.dtype
    if on_kernel:  # one pass over the targets: the gather, the weights and both sums
        sm, x3 = _softmax_kernels(), _nll_view(x)
        out = np.empty(flat.shape[0] if r == 0 else 0, dt)
        bad, loss, total_weight = sm.nll_forward(
            x3, flat, sm._unit_weights(x3.shape[1], dt) if w is None else w, ignore_index,
            r == 1, out)
        if bad >= 0:
            _ce_check_targets(x3.shape[1], flat, ignore_index)
        if r == 0:
            out = out.reshape(target.shape)
            if x.ndim > 1:
                total_weight = 0.0
        else:
            out = loss
        return _make(np.asarray(out, dtype=dt)), _make(np.asarray(total_weight, dtype=dt))
    xp = array_module(rows)
    valid, safe, counted = _nll_targets(rows, flat, ignore_index, xp)
    picked = rows[xp.arange(rows.shape[0]), safe]
    if w is not None:
        ww = w[safe]
        picked = picked * ww
    if valid is not None:  # ignored rows are +0 once negated, whatever their input (-inf too)
        picked = xp.where(valid, picked, dt.type(-0.0))
    acc = np.float64 if dt == np.float16 else None  # else the sum's own dtype, a cheaper call
    if r == 0 and input.dim() > 1:
        total_weight = 0.0
    elif w is None:
        total_weight = float(counted)
    else:
        total_weight = (ww if valid is None else ww * valid).sum(dtype=acc)
    if r == 0:
        out = (-picked).reshape(target.shape)
    else:  # negating the sum, not each row, saves a pass
        out = -picked.sum(dtype=acc)
        if r == 1:
            with quiet():
                out = out / total_weight
    return _make(xp.asarray(out, dtype=dt)), _make(xp.asarray(total_weight, dtype=dt))


@defop("nll_loss_backward", out=True)
def nll_loss_backward(grad_output: Tensor, input: Tensor, target: Tensor,
                      weight: Tensor | None, reduction: int, ignore_index: int,
                      total_weight: Tensor) -> Tensor:
    """Gradient of :func:`nll_loss_forward` w.r.t. its input for the loss gradient
    ``grad_output`` (the target's shape with reduction 0, else a scalar): zeros but
    ``-weight[t] g`` (``g / total_weight`` for the mean) at each counted row's target class;
    all zeros for a mean with ``total_weight`` 0."""
    op = "nll_loss_backward"
    r = _reduction_enum(op, reduction)
    _need_tensor(grad_output, op, "grad_output")
    _need_tensor(total_weight, op, "total_weight")
    _, flat, w, restore = _ce_layout(op, input, target, weight, rows_needed=False)
    ignore_index = int(ignore_index)
    x = input._data
    xp = array_module(x)
    dt = x.dtype
    M, C = flat.shape[0], (x.shape[0] if x.ndim == 1 else x.shape[1])
    g = grad_output._data
    if r == 0 and input.dim() > 1:
        if g.shape != target._data.shape:
            raise RuntimeError(f"{op}(): grad_output of shape {list(g.shape)} does not match "
                               f"target of shape {list(target.shape)}")
        go = g.reshape(-1).astype(dt, copy=False)
    else:
        if g.size != 1:
            raise RuntimeError(f"{op}(): expected a single-element grad_output for a reduced "
                               f"loss, got shape {list(g.shape)}")
        go = g.reshape(()).astype(dt)
        if r == 1:
            tw = total_weight._data.reshape(()).astype(dt)
            # nothing to average (every target ignored or weighted 0): the loss is NaN, but
            # its gradient is zero, never NaN (PyTorch's is NaN at the zero-weight targets)
            go = go / tw if bool(tw != 0) else xp.zeros_like(go)
    if x.__class__ is np.ndarray and dt in _KERNEL_DTYPES:  # one pass, into the input's layout
        sm, dx = _softmax_kernels(), np.zeros(x.shape, dt)
        if sm.nll_backward(flat, sm._unit_weights(C, dt) if w is None else w, ignore_index,
                           go.reshape(-1), _nll_view(dx)) >= 0:
            _ce_check_targets(C, flat, ignore_index)
        return _make(dx)
    valid = flat != ignore_index
    if int(xp.count_nonzero(valid)) == M:
        at, cls = xp.arange(M), flat
    else:
        at = xp.nonzero(valid)[0]
        cls = flat[at]
        if go.ndim:
            go = go[at]
    vals = -go
    if w is not None:
        vals = vals * w[cls]
    dx = xp.zeros((M, C), dtype=dt)
    dx[at, cls] = vals
    return _make(restore(dx))


def nll_loss_nd(input: Tensor, target: Tensor, weight: Tensor | None = None,
                reduction: int = 1, ignore_index: int = -100) -> Tensor:
    """The loss of :func:`nll_loss_forward` for any layout (``torch._C._nn.nll_loss_nd``,
    what ``F.nll_loss`` calls).

    >>> import ember.tensor as et
    >>> et.nll_loss_nd(et.tensor([[-1., -2.]]), et.tensor([1])).item()
    2.0
    """
    return nll_loss_forward(input, target, weight, reduction, ignore_index)[0]


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, reduction: int = 1,
             ignore_index: int = -100) -> Tensor:
    """:func:`nll_loss_nd` for (C,) and (N, C) inputs (``torch._C._nn.nll_loss``)."""
    if isinstance(input, Tensor) and input.dim() > 2:
        raise RuntimeError("nll_loss(): input tensor should be 1D or 2D, got "
                           f"{input.dim()}D (nll_loss_nd takes more dims)")
    return nll_loss_forward(input, target, weight, reduction, ignore_index)[0]


# ----------------------------------------------------------------------------- packed sequences
# PyTorch's packing primitives: ``_pack_padded_sequence`` gathers the running steps of a
# padded batch sorted by decreasing length into ``data`` (time-major: step 0 of every
# sequence, then step 1 of those still running, ...) and returns ``batch_sizes`` (int64, on
# the CPU); ``_pack_padded_sequence_backward`` scatters a gradient back into the padded
# layout; ``_pad_packed_sequence`` is the inverse of the pack. The index arithmetic runs on the
# host (lengths and batch sizes are CPU tensors), the gather / scatter on the data's device.
def _host_ints(op: str, t: Tensor, name: str) -> np.ndarray:
    """A 1-D integer tensor as a host int64 array (PyTorch's error otherwise)."""
    _need_tensor(t, op, name)
    a = t._data
    if not isinstance(a, np.ndarray):
        a = a.get()
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): '{name}' argument should be a 1D CPU int64 tensor, but "
                           f"got {a.ndim}D {t.device.type} {_dtype_str(a.dtype)} tensor")
    return a.astype(np.int64, copy=False)


def _padded_rows(running: np.ndarray, T: int, batch_first: bool, xp):
    """The rows, in a padded batch seen as ``(T * B, *)`` (``(B * T, *)`` when
    ``batch_first``), of the running steps in packed order (step-major), on ``xp``'s device;
    ``running`` (steps, B): whether sequence ``b`` runs at step ``t``."""
    if batch_first:
        t, s = running.nonzero()
        rows = s * T + t
    else:  # t * B + s: the flat positions in ``running`` itself
        rows = running.ravel().nonzero()[0]
    return rows if xp is np else xp.asarray(rows)


def _flat_rows(a):
    """``a`` (T, B, *) as (T * B, *): a view of a C-contiguous array, else a copy."""
    return a.reshape((a.shape[0] * a.shape[1],) + a.shape[2:])


def _lengths_of(batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(sorted lengths, running)`` of a packed batch from its batch sizes: ``running``
    (steps, B) as :func:`_padded_rows` takes it."""
    B = int(batch_sizes[0]) if batch_sizes.size else 0
    running = batch_sizes[:, None] > np.arange(B)
    return running.sum(axis=0).astype(np.int64, copy=False), running


def _check_batch_sizes(op: str, bs: np.ndarray) -> None:
    if bs.size and (bs[-1] <= 0 or (bs[1:] > bs[:-1]).any()):
        raise RuntimeError(f"{op}(): batch_sizes must be positive and non-increasing, got "
                           f"{bs.tolist()}")


@defop("_pack_padded_sequence", out=True)
def _pack_padded_sequence(input: Tensor, lengths: Tensor, batch_first: bool) -> tuple:
    """``(data, batch_sizes)`` of a padded batch ``(T, B, *)`` (``(B, T, *)`` when
    ``batch_first``) whose sequences have the decreasing ``lengths``.

    >>> import ember.tensor as et
    >>> data, bs = et._pack_padded_sequence(et.tensor([[1., 4.], [2., 5.], [3., 0.]]),
    ...                                     et.tensor([3, 2]), False)
    >>> data.tolist(), bs.tolist()
    ([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
    """
    op = "_pack_padded_sequence"
    _need_tensor(input, op, "input")
    lens = _host_ints(op, lengths, "lengths")
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"{op}(): input must have at least 2 dimensions (time and batch), "
                           f"got shape {list(x.shape)}")
    if x.size == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    T, B = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    if lens.size != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lens.size} (batch_size={B})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if B > 1 and (lens[1:] > lens[:-1]).any():
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX "
            "exportability.")
    top = int(lens[0])
    if top > T:
        raise RuntimeError(f"{op}(): a length of {top} exceeds the padded sequence "
                           f"length {T} of input of shape {list(x.shape)}")
    running = lens > np.arange(top)[:, None]
    data = _flat_rows(x).take(_padded_rows(running, T, batch_first, array_module(x)), axis=0)
    return _make(data), _make(running.sum(axis=1).astype(np.int64, copy=False))


@defop("_pack_padded_sequence_backward")
def _pack_padded_sequence_backward(grad: Tensor, input_size, batch_sizes: Tensor,
                                   batch_first: bool) -> Tensor:
    """Gradient of :func:`_pack_padded_sequence` w.r.t. its input: zeros of ``input_size``
    with the packed rows of ``grad`` at their (step, sequence) places."""
    op = "_pack_padded_sequence_backward"
    _need_tensor(grad, op, "grad")
    bs = _host_ints(op, batch_sizes, "batch_sizes")
    _check_batch_sizes(op, bs)
    size = tuple(int(s) for s in input_size)
    g = grad._data
    lens, running = _lengths_of(bs)
    n = int(bs.sum())
    if len(size) < 2 or g.shape[0] != n or g.shape[1:] != size[2:] or \
            lens.size != size[0 if batch_first else 1] or bs.size > size[1 if batch_first else 0]:
        raise RuntimeError(f"{op}(): grad of shape {list(g.shape)} does not fit input_size "
                           f"{list(size)} with batch_sizes {bs.tolist()}")
    xp = array_module(g)
    out = xp.zeros(size, dtype=g.dtype)
    _flat_rows(out)[_padded_rows(running, size[1 if batch_first else 0], batch_first, xp)] = g
    return _make(out)


@defop("_pad_packed_sequence")
def _pad_packed_sequence(data: Tensor, batch_sizes: Tensor, batch_first: bool,
                         padding_value: float, total_length: int) -> tuple:
    """``(padded, lengths)``: the packed ``data`` back in a padded ``(T, B, *)`` batch
    (``(B, T, *)`` when ``batch_first``), the sequences in their packed (sorted) order, the
    steps past each length filled with ``padding_value``; ``T`` is ``total_length`` when it is
    positive, else the longest length. ``lengths`` is an int64 CPU tensor.

    >>> import ember.tensor as et
    >>> padded, lengths = et._pad_packed_sequence(et.tensor([1., 4., 2., 5., 3.]),
    ...                                           et.tensor([2, 2, 1]), True, -1.0, 0)
    >>> padded.tolist(), lengths.tolist()
    ([[1.0, 2.0, 3.0], [4.0, 5.0, -1.0]], [3, 2])
    """
    op = "_pad_packed_sequence"
    _need_tensor(data, op, "data")
    bs = _host_ints(op, batch_sizes, "batch_sizes")
    _check_batch_sizes(op, bs)
    d = data._data
    T_max = bs.size
    T = T_max
    total_length = int(total_length)
    if total_length > 0:
        if total_length < T_max:
            raise RuntimeError(f"Expected total_length to be at least the length of the longest "
                               f"sequence in input, but got total_length={total_length} "
                               f"and max sequence length being {T_max}")
        T = total_length
    lens, running = _lengths_of(bs)
    xp = array_module(d)
    rows = _padded_rows(running, T, batch_first, xp)
    n = rows.size  # the sum of the batch sizes (checked above)
    if d.ndim < 1 or d.shape[0] != n:
        raise RuntimeError(f"{op}(): data of shape {list(d.shape)} does not hold the {n} rows "
                           f"batch_sizes {bs.tolist()} count")
    B = lens.size
    out = xp.full(((B, T) if batch_first else (T, B)) + d.shape[1:], padding_value,
                  dtype=d.dtype)
    _flat_rows(out)[rows] = d
    return _make(out), _make(lens)
