"""Pooling: max (with indices, Numba kernel), unpool, average, power-average, fractional and
adaptive pooling in 1-d, 2-d and 3-d.

Max pooling is the ``max_pool{2,3}d_with_indices`` op of ember.tensor's registry (the
``max_pool_forward`` kernel); its derivative is ``max_pool{2,3}d_with_indices_backward`` (the
``max_pool_backward`` scatter kernel), whose own derivative is a gather, so double backward
works. Average pooling sums ``im2col`` columns; adaptive and fractional pooling gather each
window through an index table.

    >>> import ember.tensor as et
    >>> import ember.nn.functional as F
    >>> F.max_pool2d(et.arange(16.).view(1, 1, 4, 4), 2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
"""
from __future__ import annotations

import functools
import math

import numpy as np

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Tensor
from ember.tensor import extension as _ext

from ._conv import _ntuple
from ._padding import _index_select

__all__ = [
    "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d",
    "lp_pool3d", "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d", "fractional_max_pool3d_with_indices",
    "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
    "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
    "adaptive_max_pool3d_with_indices", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
]



# ----------------------------------------------------------------------------- helpers


def _batched(op: str, input: Tensor, nd: int) -> tuple[Tensor, bool]:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dim() == nd + 2:
        return input, True
    if input.dim() == nd + 1:
        return input.unsqueeze(0), False
    raise RuntimeError(f"{op}(): Expected {nd + 1}D or {nd + 2}D input, but got input of size "
                       f"{list(input.shape)}")


def _geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode, max_pad):
    return _ext.pool_geometry(op, tuple(x.shape), nd, kernel_size, stride, padding, dilation,
                              ceil_mode, max_pad)


def _plane_gather(x: Tensor, ind: Tensor) -> Tensor:
    """``out[n, c, j] = x[n, c, ind[n, c, j]]`` over flat spatial positions."""
    N, C = x.shape[0], x.shape[1]
    return x.reshape(N, C, -1).gather(2, ind.reshape(N, C, -1))


# ----------------------------------------------------------------------------- max pooling
def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode,
              return_indices):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if stride is None:
        stride = ()
    fn = (et.max_pool1d_with_indices, et.max_pool2d_with_indices,
          et.max_pool3d_with_indices)[nd - 1]
    out, idx = fn(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """1-d max pooling over (N, C, L); ``stride`` defaults to ``kernel_size``.

    >>> max_pool1d(et.tensor([[[1., 3., 2., 0.]]]), 2).tolist()
    [[[3.0, 2.0]]]
    """
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """2-d max pooling over (N, C, H, W); indices are flat offsets into H*W.

    >>> max_pool2d(et.arange(9.).view(1, 1, 3, 3), 2, ceil_mode=True).tolist()
    [[[[4.0, 5.0], [7.0, 8.0]]]]
    """
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """3-d max pooling over (N, C, D, H, W).

    >>> max_pool3d(et.arange(8.).view(1, 1, 2, 2, 2), 2).tolist()
    [[[[[7.0]]]]]
    """
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation,
                     ceil_mode, return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """:func:`max_pool1d` returning ``(output, indices)``."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """:func:`max_pool2d` returning ``(output, indices)``."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """:func:`max_pool3d` returning ``(output, indices)``."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _max_unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    x, batched = _batched(op, input, nd)
    idx = indices if batched else indices.unsqueeze(0)
    if tuple(idx.shape) != tuple(x.shape):
        raise RuntimeError(f"{op}(): Expected shape of indices to be same as that of the input "
                           f"tensor ({list(x.shape)}) but got indices tensor with shape: "
                           f"{list(idx.shape)}")
    if idx.dtype != et.int64:
        raise RuntimeError(f"{op}(): expected indices of dtype int64, got {idx.dtype}")
    k = _ntuple(op, "kernel_size", kernel_size, nd)
    s = k if stride is None else _ntuple(op, "stride", stride, nd)
    p = _ntuple(op, "padding", padding, nd)
    default = tuple((x.shape[2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(nd))
    if output_size is None:
        size = default
    else:
        size = tuple(int(v) for v in output_size)
        if len(size) == nd + 2:
            size = size[2:]
        if len(size) != nd:
            raise ValueError(f"{op}(): output_size should be a sequence containing {nd} or "
                             f"{nd + 2} elements, but it has a length of {len(size)}")
        for i in range(nd):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise ValueError(f"{op}(): invalid output_size {list(size)} (dim {i} must be "
                                 f"between {lo} and {hi})")
    N, C = x.shape[0], x.shape[1]
    P = math.prod(size)
    flat = idx.reshape(N, C, -1)
    if flat.numel():
        lo, hi = int(flat.min()), int(flat.max())
        if lo < 0 or hi >= P:
            raise RuntimeError(f"{op}(): Found an invalid max index: {lo if lo < 0 else hi} "
                             f"(output volumes are of size {'x'.join(map(str, size))})")
    # overlapping pool windows repeat an index: PyTorch writes it once (scatter, not add)
    out = et.zeros(N, C, P, dtype=x.dtype, device=x.device).scatter(
        2, flat, x.reshape(N, C, -1)).reshape(N, C, *size)
    return out if batched else out.squeeze(0)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of :func:`max_pool1d`: values go back to their indices, zeros elsewhere.

    >>> out, idx = max_pool1d(et.tensor([[[1., 3., 2., 0.]]]), 2, return_indices=True)
    >>> max_unpool1d(out, idx, 2).tolist()
    [[[0.0, 3.0, 2.0, 0.0]]]
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of :func:`max_pool2d`.

    >>> out, idx = max_pool2d(et.arange(4.).view(1, 1, 2, 2), 2, return_indices=True)
    >>> max_unpool2d(out, idx, 2).tolist()
    [[[[0.0, 0.0], [0.0, 3.0]]]]
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of :func:`max_pool3d`.

    >>> out, idx = max_pool3d(et.arange(8.).view(1, 1, 2, 2, 2), 2, return_indices=True)
    >>> max_unpool3d(out, idx, 2).sum().item()
    7.0
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


# ----------------------------------------------------------------------------- average pooling
def _avg_divisor(size, k, s, p, o, count_include_pad):
    """Per output position, the number of elements PyTorch divides by."""
    div = np.ones((), dtype=np.float64)
    for i in range(len(k)):
        start = np.arange(o[i]) * s[i] - p[i]
        end = np.minimum(start + k[i], size[i] + p[i])
        if count_include_pad:
            n = end - start
        else:
            n = np.minimum(end, size[i]) - np.maximum(start, 0)
        div = np.multiply.outer(div, n.astype(np.float64))
    return div.reshape(-1)


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x, batched = _batched(op, input, nd)
    if not x.is_floating_point():
        raise RuntimeError(f"{op}(): expected a floating point input, got {x.dtype}")
    k, s, p, _, size, o = _geometry(op, x, nd, kernel_size, stride, padding, 1, ceil_mode,
                                    lambda k, d: k // 2)
    N, C = x.shape[0], x.shape[1]
    # windows reaching past the input (ceil_mode) read zeros, as padding does: pad the input
    # on the right so every window lies inside the padded input, then im2col
    need = [(o[i] - 1) * s[i] + k[i] - size[i] - 2 * p[i] for i in range(nd)]
    xr = x.reshape(N * C, 1, *size)
    for i in range(nd):
        if need[i] > 0:
            shape = list(xr.shape)
            shape[2 + i] = need[i]
            xr = et.cat([xr, et.zeros(shape, dtype=x.dtype, device=x.device)], 2 + i)
    cols = et.im2col(xr, k, (1,) * nd, p, s)  # (N*C, prod(k), L)
    total = cols.sum(1)
    if divisor_override:
        out = total / float(divisor_override)
    else:
        div = _avg_divisor(size, k, s, p, o, count_include_pad)
        if np.all(div == div[0]):
            out = total / float(div[0])
        else:
            out = total / et.from_numpy(div).to(dtype=x.dtype, device=x.device)
    out = out.reshape(N, C, *o)
    return out if batched else out.squeeze(0)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling over (N, C, L).

    >>> avg_pool1d(et.tensor([[[1., 3., 2., 0.]]]), 2).tolist()
    [[[2.0, 1.0]]]
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-d average pooling; ``count_include_pad`` counts zero padding in the divisor,
    ``divisor_override`` replaces it.

    >>> avg_pool2d(et.ones(1, 1, 2, 2), 2, padding=1, count_include_pad=False).tolist()
    [[[[1.0, 1.0], [1.0, 1.0]]]]
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-d average pooling over (N, C, D, H, W).

    >>> avg_pool3d(et.arange(8.).view(1, 1, 2, 2, 2), 2).item()
    3.5
    """
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def _lp_pool(op, nd, input, norm_type, kernel_size, stride, ceil_mode):
    k = _ntuple(op, "kernel_size", kernel_size, nd)
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = pool(input.pow(norm_type), k, stride, 0, ceil_mode)
    return (et.sign(out) * out.abs().clamp(min=0)).mul(math.prod(k)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """Power-average pooling: ``(sum x**p)**(1/p)`` over each window.

    >>> lp_pool1d(et.tensor([[[3., 4.]]]), 2, 2).tolist()
    [[[5.0]]]
    """
    return _lp_pool("lp_pool1d", 1, input, float(norm_type), kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling.

    >>> lp_pool2d(et.ones(1, 1, 2, 2), 1, 2).item()
    4.0
    """
    return _lp_pool("lp_pool2d", 2, input, float(norm_type), kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """3-d power-average pooling.

    >>> lp_pool3d(et.ones(1, 1, 2, 2, 2), 1, 2).item()
    8.0
    """
    return _lp_pool("lp_pool3d", 3, input, float(norm_type), kernel_size, stride, ceil_mode)


# ----------------------------------------------------------------------------- window tables
def _window_table(size, starts, ends):
    """Flat input offsets (L, Kmax) of each output window and a validity mask; short windows
    repeat their last element, so a max over a row is unaffected."""
    nd = len(size)
    idx_dims, mask_dims = [], []
    for i in range(nd):
        st = np.asarray(starts[i], dtype=np.int64)
        en = np.asarray(ends[i], dtype=np.int64)
        kmax = int((en - st).max()) if st.size else 1
        j = np.arange(kmax)
        pos = st[:, None] + j[None, :]
        mask_dims.append(pos < en[:, None])
        idx_dims.append(np.minimum(pos, en[:, None] - 1))
    table = np.zeros((1, 1), dtype=np.int64)
    mask = np.ones((1, 1), dtype=bool)
    for i in range(nd):
        stride_i = math.prod(size[i + 1:])
        o_i, k_i = idx_dims[i].shape
        table = table[:, None, :, None] + idx_dims[i][None, :, None, :] * stride_i
        mask = mask[:, None, :, None] & mask_dims[i][None, :, None, :]
        table = table.reshape(table.shape[0] * o_i, -1)
        mask = mask.reshape(mask.shape[0] * o_i, -1)
    return table, mask


def _adaptive_size(op, x, output_size, nd):
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * nd
    out = tuple(output_size)
    if len(out) == 1 and nd > 1:
        out = out * nd
    if len(out) != nd:
        raise RuntimeError(f"{op}(): output_size must be an int or a tuple of {nd} ints, got "
                           f"{output_size!r}")
    out = tuple(x.shape[2 + i] if v is None else int(v) for i, v in enumerate(out))
    if min(out) < 0:
        raise RuntimeError(f"{op}(): output_size must be non-negative, got {out}")
    if min(x.shape[2:]) < 1:
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(x.shape)}")
    return out


@functools.lru_cache(maxsize=256)
def _adaptive_windows(size, o):
    """The window table and mask of adaptive pooling from ``size`` to ``o`` (tuples), made once
    per pair (read-only: shared by every call)."""
    starts = [[(j * size[i]) // o[i] for j in range(o[i])] for i in range(len(size))]
    ends = [[-((-(j + 1) * size[i]) // o[i]) for j in range(o[i])] for i in range(len(size))]
    table, mask = _window_table(size, starts, ends)
    table.setflags(write=False)
    mask.setflags(write=False)
    return table, mask


def _gather_windows(x: Tensor, table: np.ndarray) -> Tensor:
    """(N, C, L, Kmax) values of ``x`` (N, C, *spatial) at the window table's offsets."""
    N, C = x.shape[0], x.shape[1]
    L, K = table.shape
    return _index_select(x.reshape(N, C, -1), 2, table.reshape(-1)).reshape(N, C, L, K)


def _argmax_windows(x: Tensor, table) -> Tensor:
    """Flat offsets (N, C, L) of each window's maximum (the first one; NaN wins), from a
    shared (L, K) table or a per-plane (N, C, L, K) one (NumPy integer arrays). Tensor ops, so
    the windows of an input whose values are not computed yet (inside ``autobatch()``) are
    found as the unbatched run finds them."""
    N, C = x.shape[0], x.shape[1]
    t = et.tensor(table, dtype=et.int64, device=x.device)
    with no_grad():
        flat = x.reshape(N, C, -1)
        if table.ndim == 2:
            L, K = table.shape
            win = flat.index_select(2, t.reshape(-1)).reshape(N, C, L, K)
            t = t.expand(N, C, L, K)
        else:
            L, K = table.shape[2:]
            win = flat.gather(2, t.reshape(N, C, L * K)).reshape(N, C, L, K)
        return t.gather(3, win.argmax(-1, keepdim=True)).squeeze(-1)


def _adaptive_max(op, nd, input, output_size, return_indices):
    x, batched = _batched(op, input, nd)
    o = _adaptive_size(op, x, output_size, nd)
    size = tuple(x.shape[2:])
    table, _ = _adaptive_windows(size, o)
    N, C = x.shape[0], x.shape[1]
    ind = _argmax_windows(x, table)
    out = _plane_gather(x, ind).reshape(N, C, *o)
    ind = ind.reshape(N, C, *o)
    if not batched:
        out, ind = out.squeeze(0), ind.squeeze(0)
    return (out, ind) if return_indices else out


def _adaptive_avg(op, nd, input, output_size):
    x, batched = _batched(op, input, nd)
    o = _adaptive_size(op, x, output_size, nd)
    size = tuple(x.shape[2:])
    N, C = x.shape[0], x.shape[1]
    if all(v == 1 for v in o):
        out = x.mean(tuple(range(2, nd + 2)), keepdim=True)
    else:
        table, mask = _adaptive_windows(size, o)
        weights = mask / mask.sum(1, keepdims=True)
        w = et.from_numpy(weights).to(dtype=x.dtype, device=x.device)
        out = (_gather_windows(x, table) * w).sum(-1).reshape(N, C, *o)
    return out if batched else out.squeeze(0)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Max over ``output_size`` adaptive windows (``floor(i*L/out)`` to ``ceil((i+1)*L/out)``).

    >>> adaptive_max_pool1d(et.tensor([[[1., 3., 2., 5., 4.]]]), 2).tolist()
    [[[3.0, 5.0]]]
    """
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """2-d adaptive max pooling; ``output_size`` entries may be None (keep the input size).

    >>> adaptive_max_pool2d(et.arange(9.).view(1, 1, 3, 3), (1, None)).tolist()
    [[[[6.0, 7.0, 8.0]]]]
    """
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """3-d adaptive max pooling.

    >>> adaptive_max_pool3d(et.arange(8.).view(1, 1, 2, 2, 2), 1).item()
    7.0
    """
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool1d` returning ``(output, indices)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool2d` returning ``(output, indices)``."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """:func:`adaptive_max_pool3d` returning ``(output, indices)``."""
    return adaptive_max_pool3d(input, output_size, True)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Average over ``output_size`` adaptive windows.

    >>> adaptive_avg_pool1d(et.tensor([[[1., 3., 2.]]]), 2).tolist()
    [[[2.0, 2.5]]]
    """
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """2-d adaptive average pooling (``output_size=1`` is global average pooling).

    >>> adaptive_avg_pool2d(et.arange(4.).view(1, 1, 2, 2), 1).item()
    1.5
    """
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """3-d adaptive average pooling.

    >>> adaptive_avg_pool3d(et.arange(8.).view(1, 1, 2, 2, 2), 1).item()
    3.5
    """
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


# ----------------------------------------------------------------------------- fractional
def _intervals(sample: np.ndarray, size: int, out: int, k: int, dtype) -> np.ndarray:
    """PyTorch's pseudo-random window starts for one dim, per plane (``sample`` (B,))."""
    seq = np.empty((sample.shape[0], out), dtype=np.int64)
    if out > 1:
        alpha = dtype.type(size - k) / dtype.type(out - 1)
        i = np.arange(out - 1, dtype=dtype)
        s = sample.astype(dtype)[:, None]
        seq[:, :-1] = ((i[None, :] + s) * alpha).astype(np.int64) - (s * alpha).astype(np.int64)
    if out > 0:
        seq[:, -1] = size - k
    return seq


def _fractional(op: str, nd: int, input: Tensor, kernel_size, output_size, output_ratio,
                return_indices: bool, _random_samples):
    """Fractional max pooling over ``nd`` spatial dims (2 or 3): per plane, each dim's window
    starts from its random sample (PyTorch's order: W then H in 2-D, T, H, W in 3-D)."""
    x, batched = _batched(op, input, nd)
    k = _ntuple(op, "kernel_size", kernel_size, nd)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    size = tuple(x.shape[2:])
    if output_size is None:
        ratio = _ratios(op, output_ratio, nd)
        o = tuple(int(size[i] * ratio[i]) for i in range(nd))
    else:
        o = _ntuple(op, "output_size", output_size, nd)
    for i in range(nd):
        if o[i] + k[i] - 1 > size[i]:
            raise RuntimeError(f"{op}(): output_size[{i}] + pool_size[{i}] - 1 "
                               f"({o[i] + k[i] - 1}) is too large for input size {size[i]}")
    N, C = x.shape[0], x.shape[1]
    if _random_samples is None:
        _random_samples = et.rand(N, C, nd, dtype=x.dtype, device=x.device)
    samples = _random_samples.detach().cpu().numpy().reshape(N * C, nd)
    dt = np.dtype(_ext.unwrap(x).dtype)
    sample_of = (1, 0) if nd == 2 else (0, 1, 2)  # the sample column of each spatial dim
    flat = None  # the flat offsets of every window's positions, (B, o..., k...)
    for d in range(nd):
        starts = _intervals(samples[:, sample_of[d]], size[d], o[d], k[d], dt)  # (B, o_d)
        pos = starts[:, :, None] + np.arange(k[d])[None, None, :]              # (B, o_d, k_d)
        shape = [pos.shape[0]] + [1] * (2 * nd)
        shape[1 + d], shape[1 + nd + d] = o[d], k[d]
        pos = pos.reshape(shape)
        flat = pos if flat is None else flat * size[d] + pos
    table = flat.reshape(N, C, math.prod(o), math.prod(k))
    ind = _argmax_windows(x, table)
    out = _plane_gather(x, ind).reshape(N, C, *o)
    ind = ind.reshape(N, C, *o)
    if not batched:
        out, ind = out.squeeze(0), ind.squeeze(0)
    return (out, ind) if return_indices else out


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """Fractional max pooling (Graham, 2014): windows of ``kernel_size`` at pseudo-random
    starts giving ``output_size`` (or ``output_ratio`` of the input size).

    >>> fractional_max_pool2d(et.randn(1, 1, 8, 8), 2, output_size=4).shape
    ember.Size([1, 1, 4, 4])
    """
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=True,
                                       _random_samples=None):
    """:func:`fractional_max_pool2d` returning ``(output, indices)``."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-d fractional max pooling over (N, C, T, H, W) or (C, T, H, W).

    >>> fractional_max_pool3d(et.randn(1, 1, 6, 6, 6), 2, output_ratio=0.5).shape
    ember.Size([1, 1, 3, 3, 3])
    """
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, return_indices, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=True,
                                       _random_samples=None):
    """:func:`fractional_max_pool3d` returning ``(output, indices)``."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def _ratios(op: str, r, nd: int):
    if isinstance(r, (int, float)):
        r = (r,) * nd
    r = tuple(float(v) for v in r)
    if len(r) == 1:
        r = r * nd
    if not all(0 < v < 1 for v in r):
        raise ValueError(f"{op}(): output_ratio must be between 0 and 1 (got {r})")
    return r
