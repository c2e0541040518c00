"""CUDA kernels of ember-tensor: the CuPy twins of ``ember.tensor.kernels.cpu``.

Every function here has exactly the name and signature of its Numba CPU twin, takes and returns
CuPy arrays, and runs CUDA C from the ``.cu`` files next to this module, compiled at first use
by ``cupy.RawModule`` (one module per file and device, memoized); the kernels that must take
every dtype (``scatter_dim``, the max / min of ``scan_dim``) are CuPy ElementwiseKernels instead,
which CuPy compiles per dtype. Shapes, dtypes and index
ranges are checked on the host before a launch, so a bad index raises IndexError naming the op,
the index and the valid range, and a kernel never reads or writes out of bounds.

Importing this module needs no CuPy; calling a kernel without CuPy or a GPU raises
RuntimeError (through :func:`ember.tensor._cupy.require`).

Example (on a machine with CuPy and a GPU; test_doctests.py runs it only there)::

    >>> import cupy as cp
    >>> from ember.tensor.kernels import cuda as K
    >>> out = cp.zeros((1, 3, 1))
    >>> K.index_add(out, cp.array([0, 0, 2]), cp.ones((1, 3, 1)))
    >>> out.ravel().tolist()
    [2.0, 0.0, 1.0]
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np

from ember.tensor import _cupy
from ember.tensor.kernels import KERNEL_NAMES

__all__ = [*KERNEL_NAMES, "KERNELS"]  # _check_names() (at the end) checks each is defined

#: The kernels of each CUDA C source file (``<family>.cu``); each exists as ``<name>_f32`` and
#: ``<name>_f64``. Launches look the family up here, and a test checks it against the sources.
KERNELS = {
    "scatter": ("index_add", "embedding_backward"),
    "pool": ("max_pool_forward", "max_pool_backward"),
    "col2im": ("im2col", "col2im"),
    "softmax": ("softmax_forward", "softmax_backward", "cross_entropy_forward",
                "cross_entropy_backward"),
    "rnn": ("lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"),
    "optim": ("adam_step", "sgd_step"),
}
_FAMILY = {name: family for family, names in KERNELS.items() for name in names}

_THREADS = 256  # block size of every launch; softmax.cu's EMBER_THREADS must match
_MAX_BLOCKS = 1 << 20  # kernels grid-stride, so larger problems loop instead of growing the grid
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


# ---------------------------------------------------------------------------------------------
# module loading and launching


def _source(family: str) -> str:
    return resources.files(__name__).joinpath(f"{family}.cu").read_text(encoding="utf-8")


@_cupy.memoize
def _module(family: str) -> Any:
    """The compiled RawModule of ``<family>.cu`` for the current device."""
    return _cupy.cupy.RawModule(code=_source(family))


@_cupy.memoize
def _function(family: str, name: str, suffix: str) -> Any:
    return _module(family).get_function(f"{name}_{suffix}")


def _blocks(n: int) -> int:
    return max(1, min((n + _THREADS - 1) // _THREADS, _MAX_BLOCKS))


def _launch(name: str, dtype: np.dtype, grid: int, args: tuple) -> None:
    """Launch ``<name>_f32`` or ``<name>_f64`` from its family's module, _THREADS per block."""
    _function(_FAMILY[name], name, _SUFFIX[dtype])((grid,), (_THREADS,), args)


def _i64(v: int) -> np.int64:
    return np.int64(v)


def _flag(v: Any) -> np.int32:
    return np.int32(1 if v else 0)


# ---------------------------------------------------------------------------------------------
# host-side validation


def _device_of(op: str, cp: Any, **arrays: Any) -> int:
    """Check that every given array is a CuPy array on one device; return that device id."""
    dev = first = None
    for name, a in arrays.items():
        if a is None:
            continue
        if not isinstance(a, cp.ndarray):
            raise TypeError(
                f"{op}: expected {name} to be a CuPy array (the data of a CUDA tensor), "
                f"got {type(a).__module__}.{type(a).__name__}"
            )
        if dev is None:
            dev, first = a.device.id, name
        elif a.device.id != dev:
            raise RuntimeError(
                f"{op}: expected all arrays on one device, but {first} is on cuda:{dev} "
                f"and {name} is on cuda:{a.device.id}"
            )
    return 0 if dev is None else dev


def _float_dtype(op: str, **arrays: Any) -> np.dtype:
    """The common floating dtype (float32 or float64) of the given arrays."""
    dtype = first = None
    for name, a in arrays.items():
        if a is None:
            continue
        if dtype is None:
            dtype, first = np.dtype(a.dtype), name
            if dtype not in _SUFFIX and dtype != np.float16:  # float16: see _half_as_float
                raise RuntimeError(
                    f"{op}: CUDA kernel supports float16, float32 and float64, got {name} of "
                    f"dtype {dtype}"
                )
        elif np.dtype(a.dtype) != dtype:
            raise RuntimeError(
                f"{op}: expected {name} to have dtype {dtype} like {first}, got {a.dtype}"
            )
    assert dtype is not None
    return dtype


def _index_array(op: str, cp: Any, name: str, idx: Any) -> Any:
    if np.dtype(idx.dtype).kind not in "iu":
        raise TypeError(f"{op}: expected {name} of an integer dtype, got {idx.dtype}")
    return cp.ascontiguousarray(idx, dtype=np.int64)


def _check_range(op: str, name: str, idx: Any, size: int, allowed: Any = None) -> None:
    """Raise IndexError unless every value of ``idx`` (except ``allowed``) is in [0, size)."""
    if allowed is not None:
        idx = idx[idx != allowed]
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if lo >= 0 and hi < size:
        return
    bad = lo if lo < 0 else hi
    if size <= 0:
        valid = "no valid index: the dimension is empty"
    else:
        valid = f"valid range [0, {size - 1}]"
    extra = f", or {allowed} (ignored)" if allowed is not None else ""
    raise IndexError(f"{op}: {name} {bad} is out of bounds for size {size} ({valid}{extra})")


def _check_shape(op: str, name: str, a: Any, expected: tuple) -> None:
    if tuple(a.shape) != tuple(expected):
        raise RuntimeError(
            f"{op}: expected {name} of shape {tuple(expected)}, got {tuple(a.shape)}"
        )


def _check_ndim(op: str, name: str, a: Any, ndim: int, layout: str) -> None:
    if a.ndim != ndim:
        raise RuntimeError(
            f"{op}: expected {name} to be {ndim}-d {layout}, got shape {tuple(a.shape)}"
        )


def _triple(op: str, name: str, v: Any, minimum: int) -> tuple[int, int, int]:
    t = tuple(int(x) for x in v)
    if len(t) != 3 or any(x < minimum for x in t):
        raise RuntimeError(f"{op}: expected {name} as 3 integers >= {minimum}, got {tuple(v)}")
    return t  # type: ignore[return-value]


def _work(cp: Any, a: Any) -> tuple[Any, bool]:
    """A C-contiguous array to update in place, and whether it must be copied back into ``a``."""
    if a.flags.c_contiguous:
        return a, False
    return cp.ascontiguousarray(a), True


def _half_as_float(*inplace: str) -> Callable[[Callable], Callable]:
    """Run a kernel wrapper on float16 inputs in float32, as the CPU twins do.

    When every floating array argument is float16, they are upcast to float32 copies, the
    wrapper runs, floating results are cast back to float16, and the arguments named in
    ``inplace`` (updated in place by the wrapper) are written back into the caller's arrays.
    """

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            floats = {k: v for k, v in bound.arguments.items()
                      if getattr(getattr(v, "dtype", None), "kind", None) == "f"}
            if not floats or any(np.dtype(v.dtype) != np.float16 for v in floats.values()):
                return fn(*args, **kwargs)
            for k, v in floats.items():
                bound.arguments[k] = v.astype(np.float32)
            result = fn(*bound.args, **bound.kwargs)
            for k in inplace:
                if k in floats:
                    floats[k][...] = bound.arguments[k]
            if result is None:
                return None
            results = result if isinstance(result, tuple) else (result,)
            results = tuple(r.astype(np.float16) if np.dtype(r.dtype).kind == "f" else r
                            for r in results)
            return results if isinstance(result, tuple) else results[0]

        return wrapper

    return decorate


# ---------------------------------------------------------------------------------------------
# scatter.cu


@_half_as_float("out")
def index_add(out: Any, index: Any, src: Any, alpha: float = 1) -> None:
    """``out[p, index[n], q] += alpha * src[p, n, q]`` in place; out (P, M, Q), src (P, N, Q)."""
    op = "index_add"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, out=out, index=index, src=src)
    dtype = _float_dtype(op, out=out, src=src)
    _check_ndim(op, "out", out, 3, "(P, M, Q)")
    _check_ndim(op, "index", index, 1, "(N,)")
    P, M, Q = (int(s) for s in out.shape)
    N = int(index.shape[0])
    _check_shape(op, "src", src, (P, N, Q))
    with cp.cuda.Device(dev):
        idx = _index_array(op, cp, "index", index)
        _check_range(op, "index", idx, M)
        total = P * N * Q
        if total == 0:
            return
        target, copy_back = _work(cp, out)
        src_c = cp.ascontiguousarray(src)
        _launch("index_add", dtype, _blocks(total),
                (target, idx, src_c, dtype.type(alpha), _i64(P), _i64(M), _i64(N), _i64(Q)))
        if copy_back:
            out[...] = target


def _first_bad(cp: Any, index: Any, size: int) -> int:
    bad = (index < 0) | (index >= size)
    return int(cp.flatnonzero(bad.ravel())[0]) if bool(bad.any()) else -1


def gather_dim(x: Any, index: Any) -> tuple[Any, int]:
    """``out[p, n, q] = x[p, index[p, n, q], q]``; returns ``(out, bad)``, ``bad`` the flat
    position of the first index outside ``[0, M)`` or -1 (CuPy's ``take_along_axis``)."""
    op = "gather_dim"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x, index=index)
    _check_ndim(op, "x", x, 3, "(P, M, Q)")
    _check_ndim(op, "index", index, 3, "(P, N, Q)")
    P, N, Q = (int(s) for s in index.shape)
    if x.shape[0] != P or x.shape[2] != Q:
        raise RuntimeError(f"{op}(): index of shape {tuple(index.shape)} does not match x of "
                           f"shape {tuple(x.shape)} outside dim 1")
    with cp.cuda.Device(dev):
        bad = _first_bad(cp, index, int(x.shape[1])) if index.size else -1
        if bad >= 0:
            return cp.empty(index.shape, dtype=x.dtype), bad
        return cp.take_along_axis(x, index, axis=1), -1


# The dtype-generic kernels (scatter_dim, scan_dim's max / min): CuPy ElementwiseKernels, so one
# source covers every dtype CuPy has (bool, the integers, float16/32/64, complex). One thread owns
# one (p, q) column and walks dim 1 in order, so no two threads touch one element: no atomics,
# duplicate indices reduce in index order (as on the CPU) and "set" keeps the last write.
_SCATTER_LOOP = r"""
    const long long p = i / Q, q = i % Q;
    for (long long n = 0; n < N; ++n) {
        const long long s = (p * N + n) * Q + q;
        T& o = out[(p * M + index[s]) * Q + q];
        const T v = src[s];
        UPDATE
    }
"""
_SCATTER_BODY = _SCATTER_LOOP.replace(
    "UPDATE", "if (mode == 0) o = v; else if (mode == 1) o = o + v; else o = o * v;")
# amax (3) / amin (4): a NaN on either side wins, as on the CPU; separate because complex
# numbers have no order and the arithmetic modes take them
_SCATTER_EXTREME_BODY = _SCATTER_LOOP.replace(
    "UPDATE", "if (v != v || (mode == 3 ? v > o : v < o)) o = v;")
# PyTorch's rule: a tie moves the index on (>= / <=), a NaN wins and stays
_SCAN_EXTREME_BODY = r"""
    const long long p = i / Q, q = i % Q;
    long long k = p * M * Q + q;
    if (M > 0) {
        T best = x[k];
        long long at = 0;
        out[k] = best;
        idx[k] = 0;
        for (long long m = 1; m < M; ++m) {
            k += Q;
            const T v = x[k];
            if (v != v || (best == best && (largest ? v >= best : v <= best))) {
                best = v;
                at = m;
            }
            out[k] = best;
            idx[k] = at;
        }
    }
"""


@_cupy.memoize
def _generic_kernel(name: str) -> Any:
    """The ElementwiseKernel ``name`` (compiled per dtype by CuPy on first launch)."""
    ek = _cupy.cupy.ElementwiseKernel
    if name == "scan_extreme":
        return ek("raw T x, int64 M, int64 Q, int32 largest", "raw T out, raw int64 idx",
                  _SCAN_EXTREME_BODY, "ember_scan_extreme")
    body = _SCATTER_EXTREME_BODY if name == "scatter_extreme" else _SCATTER_BODY
    return ek("raw T src, raw int64 index, int64 M, int64 N, int64 Q, int32 mode", "raw T out",
              body, f"ember_{name}")


_SCATTER_MODES = {"set": 0, "add": 1, "multiply": 2, "amax": 3, "amin": 4}


def _with_order_work(cp: Any, a: Any) -> Any:
    """``a`` as a C-contiguous array the generic kernels compute in: half-precision floats
    (float16, bfloat16) in float32, as the CPU twins do."""
    if (a.dtype.kind == "f" and a.dtype.itemsize == 2) or a.dtype.kind == "V":
        return cp.ascontiguousarray(a.astype(np.float32))
    return cp.ascontiguousarray(a)


def scatter_dim(out: Any, index: Any, src: Any, reduce: str) -> int:
    """In place: ``out[p, index[p, n, q], q] = src[p, n, q]`` ("set"), ``+=`` ("add"), ``*=``
    ("multiply") or the running maximum / minimum ("amax", "amin"; NaN propagates); returns the
    flat position of the first index outside ``[0, M)``, writing nothing, or -1."""
    op = "scatter_dim"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, out=out, index=index, src=src)
    _check_ndim(op, "out", out, 3, "(P, M, Q)")
    _check_ndim(op, "index", index, 3, "(P, N, Q)")
    P, N, Q = (int(s) for s in index.shape)
    M = int(out.shape[1])
    if out.shape[0] != P or out.shape[2] != Q or tuple(src.shape) != (P, N, Q):
        raise RuntimeError(f"{op}(): out of shape {tuple(out.shape)}, index of shape "
                           f"{tuple(index.shape)} and src of shape {tuple(src.shape)} do not "
                           "match")
    if src.dtype != out.dtype:
        raise RuntimeError(f"{op}(): src dtype {src.dtype} does not match out dtype {out.dtype}")
    if reduce not in _SCATTER_MODES:
        raise ValueError(f"{op}(): reduce must be 'set', 'add', 'multiply', 'amax' or 'amin', "
                         f"got {reduce!r}")
    mode = _SCATTER_MODES[reduce]
    if mode >= 3 and out.dtype.kind == "c":
        raise RuntimeError(f"{op}(): {reduce} is not defined for complex values")
    if index.size == 0:
        return -1
    with cp.cuda.Device(dev):
        bad = _first_bad(cp, index, M)
        if bad >= 0:
            return bad
        work = _with_order_work(cp, out)
        kernel = _generic_kernel("scatter_extreme" if mode >= 3 else "scatter")
        kernel(_with_order_work(cp, src), cp.ascontiguousarray(index, dtype=np.int64), _i64(M),
               _i64(N), _i64(Q), np.int32(mode), work, size=P * Q)
        if work is not out:
            out[...] = work
    return -1


@_half_as_float()
def embedding_backward(
    grad: Any, indices: Any, num_weights: int, padding_idx: int, scale_grad_by_freq: bool
) -> Any:
    """Gradient of an embedding lookup: grad (N, D), indices (N,) -> grad_weight (num_weights, D).

    Rows at ``padding_idx`` (-1: none) get no gradient; with ``scale_grad_by_freq`` each row's
    gradient is divided by how often it occurs in ``indices``.
    """
    op = "embedding_backward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, grad=grad, indices=indices)
    dtype = _float_dtype(op, grad=grad)
    num_weights = int(num_weights)
    padding_idx = -1 if padding_idx is None else int(padding_idx)
    _check_ndim(op, "grad", grad, 2, "(N, D)")
    _check_ndim(op, "indices", indices, 1, "(N,)")
    if grad.shape[0] != indices.shape[0]:
        raise RuntimeError(
            f"{op}: grad of shape {tuple(grad.shape)} does not match indices of shape "
            f"{tuple(indices.shape)}"
        )
    if not -1 <= padding_idx < max(num_weights, 0):
        raise IndexError(
            f"{op}: padding_idx {padding_idx} is out of bounds for num_weights {num_weights} "
            f"(valid range [0, {num_weights - 1}], or -1 for none)"
        )
    D = int(grad.shape[-1])
    n = int(indices.size)
    with cp.cuda.Device(dev):
        idx = _index_array(op, cp, "indices", indices)
        _check_range(op, "index", idx, num_weights)
        grad_weight = cp.zeros((num_weights, D), dtype=dtype)
        if n == 0 or D == 0:
            return grad_weight
        counts = cp.bincount(idx, minlength=num_weights) if scale_grad_by_freq else idx
        counts = cp.ascontiguousarray(counts, dtype=np.int64)
        g = cp.ascontiguousarray(grad)
        _launch("embedding_backward", dtype, _blocks(n * D),
                (grad_weight, g, idx, counts, _flag(scale_grad_by_freq), _i64(n), _i64(D),
                 _i64(num_weights), _i64(padding_idx)))
        return grad_weight


# ---------------------------------------------------------------------------------------------
# pool.cu


@_half_as_float()
def max_pool_forward(
    x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, out_size: Any
) -> tuple[Any, Any]:
    """Max pooling of x (B, D, H, W) over 3-d windows -> (out, int64 flat indices into D*H*W).

    Padding acts as -inf and a NaN in a window is its max, as in PyTorch.
    """
    op = "max_pool_forward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x)
    dtype = _float_dtype(op, x=x)
    _check_ndim(op, "x", x, 4, "(B, D, H, W)")
    k = _triple(op, "kernel", kernel, 1)
    s = _triple(op, "stride", stride, 1)
    p = _triple(op, "padding", padding, 0)
    d = _triple(op, "dilation", dilation, 1)
    o = _triple(op, "out_size", out_size, 0)
    B, D, H, W = (int(v) for v in x.shape)
    for axis, (name, size) in enumerate(zip("dhw", (D, H, W))):
        # every window must hold at least one input element (else its max would be -inf)
        starts = np.arange(o[axis]) * s[axis] - p[axis]
        pos = starts[:, None] + np.arange(k[axis]) * d[axis]
        inside = ((pos >= 0) & (pos < size)).any(axis=1)
        if not inside.all():
            bad = int(np.flatnonzero(~inside)[0])
            raise RuntimeError(
                f"{op}: output position {bad} along {name} has a window entirely in padding "
                f"(input size {size}, kernel {k[axis]}, stride {s[axis]}, padding {p[axis]}, "
                f"dilation {d[axis]}, output size {o[axis]})"
            )
    with cp.cuda.Device(dev):
        out = cp.empty((B, *o), dtype=dtype)
        indices = cp.empty((B, *o), dtype=np.int64)
        total = out.size
        if total == 0:
            return out, indices
        xc = cp.ascontiguousarray(x)
        _launch("max_pool_forward", dtype, _blocks(total),
                (xc, out, indices, *(_i64(v) for v in (B, D, H, W, *o, *k, *s, *p, *d))))
        return out, indices


@_half_as_float()
def max_pool_backward(grad_out: Any, indices: Any, in_size: Any) -> Any:
    """Route grad_out (B, oD, oH, oW) to grad_in (B, D, H, W) through the forward's indices.

    ``in_size`` is (D, H, W) (a leading B equal to grad_out's is accepted too).
    """
    op = "max_pool_backward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, grad_out=grad_out, indices=indices)
    dtype = _float_dtype(op, grad_out=grad_out)
    _check_ndim(op, "grad_out", grad_out, 4, "(B, oD, oH, oW)")
    _check_shape(op, "indices", indices, tuple(grad_out.shape))
    B = int(grad_out.shape[0])
    size = tuple(int(v) for v in in_size)
    if len(size) == 4 and size[0] == B:
        size = size[1:]
    if len(size) != 3 or any(v < 0 for v in size):
        raise RuntimeError(f"{op}: expected in_size (D, H, W), got {tuple(in_size)}")
    plane = size[0] * size[1] * size[2]
    with cp.cuda.Device(dev):
        idx = _index_array(op, cp, "indices", indices)
        _check_range(op, "index", idx, plane)
        grad_in = cp.zeros((B, *size), dtype=dtype)
        L = int(grad_out[0].size) if B else 0
        if B * L == 0:
            return grad_in
        g = cp.ascontiguousarray(grad_out)
        _launch("max_pool_backward", dtype, _blocks(B * L),
                (g, idx, grad_in, _i64(B), _i64(L), _i64(plane)))
        return grad_in


# ---------------------------------------------------------------------------------------------
# layer norm (CuPy array expressions; no CUDA C of its own)


def layer_norm_forward(x: Any, weight: Any, bias: Any, eps: float) -> tuple[Any, Any, Any]:
    """Layer norm of each row of ``x`` (rows, n): ``(out, mean, rstd)``, statistics (rows,)."""
    op = "layer_norm_forward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x)
    _check_ndim(op, "x", x, 2, "(rows, n)")
    dt = x.dtype
    wd = np.dtype(np.float32) if dt == np.float16 else dt
    with cp.cuda.Device(dev):
        rows = x.astype(wd, copy=False)
        R, n = (int(s) for s in rows.shape)
        if n == 0:
            out, mean = rows.copy(), cp.zeros(R, dtype=wd)
            rstd = cp.full(R, np.nan, dtype=wd)
        else:
            mean = rows.mean(axis=1)
            out = rows - mean[:, None]
            rstd = 1 / cp.sqrt((out * out).mean(axis=1) + wd.type(eps))
            out *= rstd[:, None]
        if weight is not None:
            out *= weight.astype(wd, copy=False)
        if bias is not None:
            out += bias.astype(wd, copy=False)
        return out.astype(dt, copy=False), mean.astype(dt, copy=False), rstd.astype(dt, copy=False)


def layer_norm_backward(grad_out: Any, x: Any, mean: Any, rstd: Any,
                        weight: Any) -> tuple[Any, Any, Any]:
    """Gradients of :func:`layer_norm_forward`: ``(grad_x, grad_weight, grad_bias)`` from
    ``grad_out`` and ``x`` (rows, n), ``mean`` and ``rstd`` (rows,), ``weight`` (n,) or None;
    computed in float64 as the CPU kernel does, returned in ``x``'s dtype."""
    op = "layer_norm_backward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, grad_out=grad_out, x=x)
    _check_ndim(op, "x", x, 2, "(rows, n)")
    dt = x.dtype
    with cp.cuda.Device(dev):
        f = cp.float64
        xh = (x.astype(f) - mean.astype(f).reshape(-1, 1)) * rstd.astype(f).reshape(-1, 1)
        g = grad_out.astype(f)
        gh = g if weight is None else g * weight.astype(f)
        gx = rstd.astype(f).reshape(-1, 1) * (gh - gh.mean(axis=1, keepdims=True) -
                                              xh * (gh * xh).mean(axis=1, keepdims=True))
        gw = (g * xh).sum(axis=0)
        gb = g.sum(axis=0)
        return gx.astype(dt), gw.astype(dt), gb.astype(dt)


# ---------------------------------------------------------------------------------------------
# scans


def scan_dim(x: Any, op: str, acc_dtype: Any = None) -> tuple[Any, Any]:
    """Scan ``x`` (P, M, Q) along dim 1: "sum" / "prod" -> ``(out, None)`` (CuPy's cumsum /
    cumprod), "max" / "min" -> ``(values, int64 indices)`` (a tie moves the index on, a NaN wins
    and stays)."""
    name = "scan_dim"
    cp = _cupy.require(name)
    dev = _device_of(name, cp, x=x)
    _check_ndim(name, "x", x, 3, "(P, M, Q)")
    if op not in ("sum", "prod", "max", "min"):
        raise ValueError(f"{name}(): op must be 'sum', 'prod', 'max' or 'min', got {op!r}")
    with cp.cuda.Device(dev):
        if op in ("sum", "prod"):
            fn = cp.cumsum if op == "sum" else cp.cumprod
            return fn(x, axis=1, dtype=acc_dtype).astype(x.dtype, copy=False), None
        work = _with_order_work(cp, x)
        out = cp.empty_like(work)
        idx = cp.empty(work.shape, dtype=np.int64)
        P, M, Q = (int(v) for v in work.shape)
        if P * Q:
            _generic_kernel("scan_extreme")(work, _i64(M), _i64(Q), np.int32(op == "max"), out,
                                            idx, size=P * Q)
        return out.astype(x.dtype, copy=False), idx


# ---------------------------------------------------------------------------------------------
# selection (the CPU twins select without sorting; here CuPy's stable sort, NaN last, gives the
# same order: by value, ties by index)


def _check_selectable(op: str, x: Any) -> None:
    _check_ndim(op, "x", x, 3, "(P, M, Q)")
    if np.dtype(x.dtype).kind not in "iuf":
        raise TypeError(f"{op}(): expected an integer or floating dtype, got {x.dtype}")


def select_dim(x: Any, pos: Any) -> tuple[Any, Any]:
    """The values and int64 indices (P, 1, Q) of the elements at positions ``pos`` (int64,
    (P, 1, Q), a dim of 1 broadcast, in ``[0, M)``) of the stable ascending sort of ``x``
    (P, M, Q) along dim 1, NaN last."""
    op = "select_dim"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x)
    _check_selectable(op, x)
    P, M, Q = (int(s) for s in x.shape)
    if pos.ndim != 3 or pos.shape[1] != 1 or pos.shape[0] not in (1, P) \
            or pos.shape[2] not in (1, Q):
        raise RuntimeError(f"{op}(): pos of shape {tuple(pos.shape)} does not match x of shape "
                           f"{tuple(x.shape)}: expected {(P, 1, Q)}")
    with cp.cuda.Device(dev):
        pos = cp.asarray(pos)  # (a host array of positions moves to the device)
        pos = _index_array(op, cp, "pos", cp.broadcast_to(pos, (P, 1, Q)))
        _check_range(op, "pos", pos, M)
        idx = cp.take_along_axis(cp.argsort(x, axis=1), pos, axis=1).astype(np.int64,
                                                                            copy=False)
        return cp.take_along_axis(x, idx, axis=1), idx


def topk_dim(x: Any, k: int, largest: bool) -> tuple[Any, Any]:
    """The values and int64 indices (P, k, Q) of the first ``k`` elements of the stable
    descending (``largest``, NaN first) or ascending (NaN last) sort of ``x`` (P, M, Q) along
    dim 1, in that order."""
    op = "topk_dim"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x)
    _check_selectable(op, x)
    M = int(x.shape[1])
    if not 0 <= k <= M:
        raise IndexError(f"{op}(): k={k} out of range for dim 1 of size {M}")
    with cp.cuda.Device(dev):
        if not largest:
            order = cp.argsort(x, axis=1)[:, :k]
        else:  # the ascending stable sort of the reversed dim, reversed: ties keep index order
            order = (M - 1) - cp.argsort(x[:, ::-1], axis=1)[:, ::-1][:, :k]
        idx = cp.ascontiguousarray(order, dtype=np.int64)
        return cp.take_along_axis(x, idx, axis=1), idx


# ---------------------------------------------------------------------------------------------
# activations (CuPy ElementwiseKernels; float16 and bfloat16 computed in float32)

_ACTIVATIONS = {
    "sigmoid": ("T x", "T y", "const T e = exp(-fabs(x)); const T r = (T)1 / ((T)1 + e); "
                "y = x >= (T)0 ? r : e * r;"),
    "sigmoid_backward": ("T g, T y", "T z", "z = g * (((T)1 - y) * y);"),
    "tanh_backward": ("T g, T y", "T z", "z = g * ((T)1 - y * y);"),
    # the activations of ember.tensor._activation_ops (the CPU kernels' formulas)
    "silu": ("T x", "T y", "y = x / ((T)1 + exp(-x));"),
    "silu_backward": ("T g, T x", "T z",
                      "const T s = (T)1 / ((T)1 + exp(-x)); z = g * s * ((T)1 + x * ((T)1 - s));"),
    "softplus": ("T x, T beta, T threshold", "T y",
                 "const T bx = x * beta; y = bx > threshold ? x : log1p(exp(bx)) / beta;"),
    "softplus_backward": ("T g, T x, T beta, T threshold", "T z",
                          "const T bx = x * beta; const T e = exp(bx); "
                          "z = bx > threshold ? g : g * e / (e + (T)1);"),
    "elu": ("T x, T alpha, T scale, T input_scale", "T y",
            "y = x <= (T)0 ? expm1(x * input_scale) * (alpha * scale) : x * scale;"),
    "elu_backward": ("T g, T v, T alpha, T scale, T input_scale", "T z",
                     "z = v <= (T)0 ? g * (input_scale * alpha * scale) * exp(v * input_scale)"
                     " : g * scale;"),
    "elu_backward_result": ("T g, T v, T alpha, T scale, T input_scale", "T z",
                            "z = v <= (T)0 ? g * input_scale * (v + alpha * scale) : g * scale;"),
    "gelu": ("T x", "T y", "y = x * ((T)0.5 * ((T)1 + erf(x * (T)0.7071067811865476)));"),
    "gelu_backward": ("T g, T x", "T z",
                      "const T cdf = (T)0.5 * ((T)1 + erf(x * (T)0.7071067811865476)); "
                      "z = g * (cdf + x * ((T)0.3989422804014327 * exp((T)-0.5 * (x * x))));"),
    "hardsigmoid": ("T x", "T y", "T t = x + (T)3; t = t < (T)0 ? (T)0 : t; "
                    "y = (t > (T)6 ? (T)6 : t) / (T)6;"),
    "hardsigmoid_backward": ("T g, T x", "T z",
                             "z = (x > (T)-3 && x < (T)3) ? g / (T)6 : (T)0;"),
    "hardswish": ("T x", "T y", "T t = x + (T)3; t = t < (T)0 ? (T)0 : t; "
                  "y = x * (t > (T)6 ? (T)6 : t) / (T)6;"),
    "hardswish_backward": ("T g, T x", "T z", "z = x <= (T)-3 ? (T)0 : "
                           "(x < (T)3 ? g * (x / (T)3 + (T)0.5) : g);"),
    "mish": ("T x", "T y", "y = x * tanh(log1p(exp(x)));"),
    "mish_backward": ("T g, T x", "T z", "const T s = (T)1 / ((T)1 + exp(-x)); "
                      "const T t = tanh(log1p(exp(x))); z = g * (t + x * s * ((T)1 - t * t));"),
    "log_sigmoid": ("T x", "T y", "y = (x < (T)0 ? x : (T)0) - log1p(exp(-fabs(x)));"),
    "log_sigmoid_backward": ("T g, T x", "T z", "z = g / ((T)1 + exp(x));"),
}


@_cupy.memoize
def _activation(name: str) -> Any:
    ins, outs, body = _ACTIVATIONS[name]
    return _cupy.cupy.ElementwiseKernel(ins, outs, body, f"ember_{name}")


def _run_activation(name: str, *arrays: Any, params: tuple = ()) -> Any:
    """The ElementwiseKernel ``name`` over ``arrays`` (float16 and bfloat16 through float32)
    and the scalar ``params`` (numbers, passed in the compute dtype)."""
    cp = _cupy.require(name)
    dev = _device_of(name, cp, **{f"x{i}": a for i, a in enumerate(arrays)})
    dtype = np.dtype(arrays[0].dtype)
    with cp.cuda.Device(dev):
        if dtype in _SUFFIX and all(a.dtype == dtype for a in arrays):
            return _activation(name)(*arrays, *(dtype.type(v) for v in params))
        if dtype.kind not in "fV":
            raise TypeError(f"{name}(): no kernel for dtype {dtype}")
        return _activation(name)(*(a.astype(np.float32) for a in arrays),
                                 *(np.float32(v) for v in params)).astype(dtype)


@_cupy.memoize
def _threshold_backward_kernel() -> Any:
    return _cupy.cupy.ElementwiseKernel("T g, T y, T t", "T z", "z = y <= t ? (T)0 : g;",
                                        "ember_threshold_backward")


def threshold_backward(grad: Any, y: Any, threshold: Any) -> Any:
    """``0 where y <= threshold, else grad`` (a NaN ``y`` passes its gradient; broadcast)."""
    name = "threshold_backward"
    cp = _cupy.require(name)
    dev = _device_of(name, cp, grad=grad, y=y)
    dtype = np.dtype(grad.dtype)
    if dtype != y.dtype or dtype.kind not in "fV":
        raise TypeError(f"{name}(): no kernel for dtypes {dtype}, {y.dtype}")
    work = dtype if dtype in _SUFFIX else np.dtype(np.float32)
    with cp.cuda.Device(dev):
        z = _threshold_backward_kernel()(grad.astype(work, copy=False),
                                         y.astype(work, copy=False), work.type(threshold))
        return z.astype(dtype, copy=False)


def silu(x: Any) -> Any:
    """``x * sigmoid(x)``."""
    return _run_activation("silu", x)


def silu_backward(grad: Any, x: Any) -> Any:
    """The gradient of :func:`silu`."""
    return _run_activation("silu_backward", grad, x)


def gelu(x: Any) -> Any:
    """``x Phi(x)`` (the exact GELU)."""
    return _run_activation("gelu", x)


def gelu_backward(grad: Any, x: Any) -> Any:
    """The gradient of :func:`gelu`."""
    return _run_activation("gelu_backward", grad, x)


def softplus(x: Any, beta: float, threshold: float) -> Any:
    """``log1p(exp(beta x)) / beta``; ``x`` where ``beta x > threshold``."""
    return _run_activation("softplus", x, params=(beta, threshold))


def softplus_backward(grad: Any, x: Any, beta: float, threshold: float) -> Any:
    """The gradient of :func:`softplus`."""
    return _run_activation("softplus_backward", grad, x, params=(beta, threshold))


def elu(x: Any, alpha: float, scale: float, input_scale: float) -> Any:
    """``alpha scale expm1(input_scale x)`` where ``x <= 0``, else ``scale x``."""
    return _run_activation("elu", x, params=(alpha, scale, input_scale))


def elu_backward(grad: Any, alpha: float, scale: float, input_scale: float, is_result: bool,
                 v: Any) -> Any:
    """The gradient of :func:`elu` from its input, or from its output (``is_result``)."""
    return _run_activation("elu_backward_result" if is_result else "elu_backward", grad, v,
                           params=(alpha, scale, input_scale))


def mish(x: Any) -> Any:
    """``x * tanh(log1p(exp(x)))``."""
    return _run_activation("mish", x)


def mish_backward(grad: Any, x: Any) -> Any:
    """The gradient of :func:`mish`."""
    return _run_activation("mish_backward", grad, x)


def log_sigmoid(x: Any) -> Any:
    """``min(x, 0) - log1p(exp(-|x|))``."""
    return _run_activation("log_sigmoid", x)


def log_sigmoid_backward(grad: Any, x: Any) -> Any:
    """``grad * sigmoid(-x)``."""
    return _run_activation("log_sigmoid_backward", grad, x)


def hardsigmoid(x: Any) -> Any:
    """``min(max(x + 3, 0), 6) / 6``."""
    return _run_activation("hardsigmoid", x)


def hardsigmoid_backward(grad: Any, x: Any) -> Any:
    """``grad / 6`` inside ``(-3, 3)``, else 0."""
    return _run_activation("hardsigmoid_backward", grad, x)


def hardswish(x: Any) -> Any:
    """``x min(max(x + 3, 0), 6) / 6``."""
    return _run_activation("hardswish", x)


def hardswish_backward(grad: Any, x: Any) -> Any:
    """0 up to -3, ``grad (x / 3 + 0.5)`` below 3, else ``grad``."""
    return _run_activation("hardswish_backward", grad, x)


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))`` of a real floating array, from ``exp(-|x|)`` (no overflow)."""
    return _run_activation("sigmoid", x)


def sigmoid_backward(grad: Any, y: Any) -> Any:
    """``grad * (1 - y) * y``: the gradient of sigmoid from its output (broadcast)."""
    return _run_activation("sigmoid_backward", grad, y)


def tanh_backward(grad: Any, y: Any) -> Any:
    """``grad * (1 - y * y)``: the gradient of tanh from its output (broadcast)."""
    return _run_activation("tanh_backward", grad, y)


# ---------------------------------------------------------------------------------------------
# col2im.cu


def _conv_geometry(op: str, kernel: Any, stride: Any, padding: Any,
                   dilation: Any) -> tuple[int, ...]:
    return (*_triple(op, "kernel", kernel, 1), *_triple(op, "stride", stride, 1),
            *_triple(op, "padding", padding, 0), *_triple(op, "dilation", dilation, 1))


@_half_as_float()
def im2col(x: Any, kernel: Any, stride: Any, padding: Any, dilation: Any, out_size: Any) -> Any:
    """Unfold x (N, C, D, H, W) into cols (N, C*kD*kH*kW, oD*oH*oW), rows as (c, kd, kh, kw)."""
    op = "im2col"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x)
    dtype = _float_dtype(op, x=x)
    _check_ndim(op, "x", x, 5, "(N, C, D, H, W)")
    geom = _conv_geometry(op, kernel, stride, padding, dilation)
    o = _triple(op, "out_size", out_size, 0)
    N, C, D, H, W = (int(v) for v in x.shape)
    K = geom[0] * geom[1] * geom[2]
    L = o[0] * o[1] * o[2]
    with cp.cuda.Device(dev):
        cols = cp.empty((N, C * K, L), dtype=dtype)
        if cols.size == 0:
            return cols
        xc = cp.ascontiguousarray(x)
        _launch("im2col", dtype, _blocks(cols.size),
                (xc, cols, *(_i64(v) for v in (N, C, D, H, W, *o, *geom))))
        return cols


@_half_as_float()
def col2im(cols: Any, channels: int, in_size: Any, kernel: Any, stride: Any, padding: Any,
           dilation: Any, out_size: Any) -> Any:
    """Fold cols (N, C*kD*kH*kW, oD*oH*oW) back into x (N, C, D, H, W), summing overlaps."""
    op = "col2im"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, cols=cols)
    dtype = _float_dtype(op, cols=cols)
    _check_ndim(op, "cols", cols, 3, "(N, C*kD*kH*kW, oD*oH*oW)")
    geom = _conv_geometry(op, kernel, stride, padding, dilation)
    o = _triple(op, "out_size", out_size, 0)
    size = _triple(op, "in_size", in_size, 0)
    C = int(channels)
    N = int(cols.shape[0])
    K = geom[0] * geom[1] * geom[2]
    _check_shape(op, "cols", cols, (N, C * K, o[0] * o[1] * o[2]))
    with cp.cuda.Device(dev):
        x = cp.empty((N, C, *size), dtype=dtype)
        if x.size == 0:
            return x
        cc = cp.ascontiguousarray(cols)
        _launch("col2im", dtype, _blocks(x.size),
                (cc, x, *(_i64(v) for v in (N, C, *size, *o, *geom))))
        return x


# ---------------------------------------------------------------------------------------------
# softmax.cu


def _rows_kernel(name: str, dtype: np.dtype, rows: int, args: tuple) -> None:
    """Launch a one-block-per-row kernel of softmax.cu."""
    _launch(name, dtype, max(1, min(rows, _MAX_BLOCKS)), args)


def _softmax_forward(op: str, x: Any, log_mode: bool) -> Any:
    cp = _cupy.require(op)
    dev = _device_of(op, cp, x=x)
    dtype = _float_dtype(op, x=x)
    _check_ndim(op, "x", x, 2, "(rows, cols)")
    rows, cols = (int(v) for v in x.shape)
    with cp.cuda.Device(dev):
        y = cp.empty((rows, cols), dtype=dtype)
        if y.size == 0:
            return y
        xc = cp.ascontiguousarray(x)
        _rows_kernel("softmax_forward", dtype, rows,
                     (xc, y, _i64(rows), _i64(cols), _flag(log_mode)))
        return y


def _softmax_backward(op: str, y: Any, g: Any, log_mode: bool) -> Any:
    cp = _cupy.require(op)
    dev = _device_of(op, cp, y=y, g=g)
    dtype = _float_dtype(op, y=y, g=g)
    _check_ndim(op, "y", y, 2, "(rows, cols)")
    _check_shape(op, "g", g, tuple(y.shape))
    rows, cols = (int(v) for v in y.shape)
    with cp.cuda.Device(dev):
        dx = cp.empty((rows, cols), dtype=dtype)
        if dx.size == 0:
            return dx
        yc, gc = cp.ascontiguousarray(y), cp.ascontiguousarray(g)
        _rows_kernel("softmax_backward", dtype, rows,
                     (yc, gc, dx, _i64(rows), _i64(cols), _flag(log_mode)))
        return dx


@_half_as_float()
def softmax_forward(x: Any) -> Any:
    """Numerically stable softmax over the last axis of x (rows, cols)."""
    return _softmax_forward("softmax_forward", x, False)


@_half_as_float()
def log_softmax_forward(x: Any) -> Any:
    """Numerically stable log-softmax over the last axis of x (rows, cols)."""
    return _softmax_forward("log_softmax_forward", x, True)


@_half_as_float()
def softmax_backward(y: Any, g: Any) -> Any:
    """Gradient of softmax from its output y: ``y * (g - sum(g * y, axis=-1))``."""
    return _softmax_backward("softmax_backward", y, g, False)


@_half_as_float()
def log_softmax_backward(y: Any, g: Any) -> Any:
    """Gradient of log-softmax from its output y: ``g - exp(y) * sum(g, axis=-1)``."""
    return _softmax_backward("log_softmax_backward", y, g, True)


def _cross_entropy_inputs(op: str, cp: Any, logits: Any, target: Any, weight: Any,
                          ignore_index: int, label_smoothing: float) -> tuple:
    dtype = _float_dtype(op, logits=logits, weight=weight)
    _check_ndim(op, "logits", logits, 2, "(N, C)")
    N, C = (int(v) for v in logits.shape)
    _check_shape(op, "target", target, (N,))
    if weight is not None:
        _check_shape(op, "weight", weight, (C,))
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(
            f"{op}: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}"
        )
    tgt = _index_array(op, cp, "target", target)
    _check_range(op, "target", tgt, C, allowed=int(ignore_index))
    w = cp.ones(C, dtype=dtype) if weight is None else cp.ascontiguousarray(weight)
    return dtype, N, C, tgt, w


@_half_as_float()
def cross_entropy_forward(logits: Any, target: Any, weight: Any, ignore_index: int,
                          label_smoothing: float) -> tuple[Any, Any]:
    """Per-sample cross-entropy of logits (N, C) and class targets (N,) -> (loss (N,), lse (N,)).

    ``loss_i = (1-eps) w[t_i] (lse_i - x[i, t_i]) + eps/C sum_c w[c] (lse_i - x[i, c])``, 0 where
    ``t_i == ignore_index``; ``weight`` None means all ones.
    """
    op = "cross_entropy_forward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, logits=logits, target=target, weight=weight)
    with cp.cuda.Device(dev):
        dtype, N, C, tgt, w = _cross_entropy_inputs(op, cp, logits, target, weight,
                                                    ignore_index, label_smoothing)
        loss = cp.empty(N, dtype=dtype)
        lse = cp.empty(N, dtype=dtype)
        if N == 0:
            return loss, lse
        if C == 0:
            raise RuntimeError(f"{op}: logits of shape {tuple(logits.shape)} have no classes")
        xc = cp.ascontiguousarray(logits)
        _rows_kernel("cross_entropy_forward", dtype, N,
                     (xc, tgt, w, loss, lse, _i64(N), _i64(C), _i64(ignore_index),
                      dtype.type(label_smoothing)))
        return loss, lse


@_half_as_float()
def cross_entropy_backward(logits: Any, target: Any, weight: Any, ignore_index: int,
                           label_smoothing: float, grad_loss: Any) -> Any:
    """Gradient of :func:`cross_entropy_forward` w.r.t. logits, given grad_loss (N,) or a scalar;
    rows whose target is ``ignore_index`` get zeros. Each row's max and log-sum-exp are
    recomputed (one block per row), so large logits keep full precision."""
    op = "cross_entropy_backward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, logits=logits, target=target, weight=weight, grad_loss=grad_loss)
    with cp.cuda.Device(dev):
        dtype, N, C, tgt, w = _cross_entropy_inputs(op, cp, logits, target, weight,
                                                    ignore_index, label_smoothing)
        _float_dtype(op, logits=logits, grad_loss=grad_loss)
        if grad_loss.size == 1 and grad_loss.ndim <= 1:
            grad_loss = cp.broadcast_to(grad_loss.reshape(()), (N,))
        _check_shape(op, "grad_loss", grad_loss, (N,))
        dx = cp.empty((N, C), dtype=dtype)
        if dx.size == 0:
            return dx
        wsum = float(w.sum())
        _rows_kernel("cross_entropy_backward", dtype, N,
                     (cp.ascontiguousarray(logits), tgt, w, cp.ascontiguousarray(grad_loss), dx,
                      _i64(N), _i64(C), _i64(ignore_index), dtype.type(label_smoothing),
                      dtype.type(wsum)))
        return dx


# ---------------------------------------------------------------------------------------------
# rnn.cu


def _hidden(op: str, name: str, a: Any, gates: int) -> tuple[int, int]:
    """(N, H) of a 2-d (N, gates*H) array."""
    layout = f"(N, {gates}*H)" if gates > 1 else "(N, H)"
    _check_ndim(op, name, a, 2, layout)
    N, width = (int(v) for v in a.shape)
    if width % gates:
        raise RuntimeError(f"{op}: expected {name} of shape {layout}, got {tuple(a.shape)}")
    return N, width // gates


@_half_as_float()
def lstm_cell_forward(gates: Any, c_prev: Any) -> tuple[Any, Any, Any, Any]:
    """LSTM cell pointwise part: gates (N, 4H) as i, f, g, o and c_prev (N, H).

    Returns (h, c, act, tanh_c) with act = [sig(i), sig(f), tanh(g), sig(o)] (N, 4H),
    c = f*c_prev + i*g and h = o*tanh(c).
    """
    op = "lstm_cell_forward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, gates=gates, c_prev=c_prev)
    dtype = _float_dtype(op, gates=gates, c_prev=c_prev)
    N, H = _hidden(op, "gates", gates, 4)
    _check_shape(op, "c_prev", c_prev, (N, H))
    with cp.cuda.Device(dev):
        h, c, tanh_c = (cp.empty((N, H), dtype=dtype) for _ in range(3))
        act = cp.empty((N, 4 * H), dtype=dtype)
        if N * H:
            _launch("lstm_cell_forward", dtype, _blocks(N * H),
                    (cp.ascontiguousarray(gates), cp.ascontiguousarray(c_prev), h, c, act,
                     tanh_c, _i64(N), _i64(H)))
        return h, c, act, tanh_c


@_half_as_float()
def lstm_cell_backward(grad_h: Any, grad_c: Any, act: Any, c_prev: Any,
                       tanh_c: Any) -> tuple[Any, Any]:
    """Backward of :func:`lstm_cell_forward` -> (grad_gates (N, 4H), grad_c_prev (N, H)).

    ``grad_h`` and ``grad_c`` may be None (no gradient flows into that output).
    """
    op = "lstm_cell_backward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, grad_h=grad_h, grad_c=grad_c, act=act, c_prev=c_prev,
                     tanh_c=tanh_c)
    dtype = _float_dtype(op, act=act, c_prev=c_prev, tanh_c=tanh_c, grad_h=grad_h, grad_c=grad_c)
    N, H = _hidden(op, "act", act, 4)
    for name, a in (("c_prev", c_prev), ("tanh_c", tanh_c), ("grad_h", grad_h),
                    ("grad_c", grad_c)):
        if a is not None:
            _check_shape(op, name, a, (N, H))
    with cp.cuda.Device(dev):
        grad_gates = cp.empty((N, 4 * H), dtype=dtype)
        grad_c_prev = cp.empty((N, H), dtype=dtype)
        if N * H:
            act_c = cp.ascontiguousarray(act)
            gh = act_c if grad_h is None else cp.ascontiguousarray(grad_h)  # act: never read
            gc = act_c if grad_c is None else cp.ascontiguousarray(grad_c)
            _launch("lstm_cell_backward", dtype, _blocks(N * H),
                    (gh, _flag(grad_h is not None), gc, _flag(grad_c is not None), act_c,
                     cp.ascontiguousarray(c_prev), cp.ascontiguousarray(tanh_c), grad_gates,
                     grad_c_prev, _i64(N), _i64(H)))
        return grad_gates, grad_c_prev


@_half_as_float()
def gru_cell_forward(gi: Any, gh: Any, h_prev: Any) -> tuple[Any, Any, Any, Any]:
    """GRU cell pointwise part: gi, gh (N, 3H) as r, z, n and h_prev (N, H) -> (h, r, z, n).

    r = sig(gi_r + gh_r), z = sig(gi_z + gh_z), n = tanh(gi_n + r*gh_n), h = (1-z)*n + z*h_prev.
    """
    op = "gru_cell_forward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, gi=gi, gh=gh, h_prev=h_prev)
    dtype = _float_dtype(op, gi=gi, gh=gh, h_prev=h_prev)
    N, H = _hidden(op, "gi", gi, 3)
    _check_shape(op, "gh", gh, (N, 3 * H))
    _check_shape(op, "h_prev", h_prev, (N, H))
    with cp.cuda.Device(dev):
        h, r, z, n = (cp.empty((N, H), dtype=dtype) for _ in range(4))
        if N * H:
            _launch("gru_cell_forward", dtype, _blocks(N * H),
                    (cp.ascontiguousarray(gi), cp.ascontiguousarray(gh),
                     cp.ascontiguousarray(h_prev), h, r, z, n, _i64(N), _i64(H)))
        return h, r, z, n


@_half_as_float()
def gru_cell_backward(grad_h: Any, r: Any, z: Any, n: Any, gh_n: Any,
                      h_prev: Any) -> tuple[Any, Any, Any]:
    """Backward of :func:`gru_cell_forward` -> (grad_gi (N, 3H), grad_gh (N, 3H), grad_h_prev).

    ``gh_n`` (N, H) is the n-part of gh used by the forward.
    """
    op = "gru_cell_backward"
    cp = _cupy.require(op)
    dev = _device_of(op, cp, grad_h=grad_h, r=r, z=z, n=n, gh_n=gh_n, h_prev=h_prev)
    dtype = _float_dtype(op, grad_h=grad_h, r=r, z=z, n=n, gh_n=gh_n, h_prev=h_prev)
    N, H = _hidden(op, "grad_h", grad_h, 1)
    for name, a in (("r", r), ("z", z), ("n", n), ("gh_n", gh_n), ("h_prev", h_prev)):
        _check_shape(op, name, a, (N, H))
    with cp.cuda.Device(dev):
        grad_gi = cp.empty((N, 3 * H), dtype=dtype)
        grad_gh = cp.empty((N, 3 * H), dtype=dtype)
        grad_h_prev = cp.empty((N, H), dtype=dtype)
        if N * H:
            c = cp.ascontiguousarray
            _launch("gru_cell_backward", dtype, _blocks(N * H),
                    (c(grad_h), c(r), c(z), c(n), c(gh_n), c(h_prev), grad_gi, grad_gh,
                     grad_h_prev, _i64(N), _i64(H)))
        return grad_gi, grad_gh, grad_h_prev


# ---------------------------------------------------------------------------------------------
# optim.cu


def _check_like(op: str, param: Any, **arrays: Any) -> None:
    for name, a in arrays.items():
        if a is not None:
            _check_shape(op, name, a, tuple(param.shape))


def _count(op: str, params: Any, **lists: Any) -> int:
    """The number of tensors: ``params`` and every list in ``lists`` hold one entry each."""
    n = None
    for name, seq in (("params", params), *lists.items()):
        if not isinstance(seq, (list, tuple)):
            raise TypeError(f"{op}: expected {name} to be a list of CuPy arrays (one per "
                            f"param), got {type(seq).__name__}")
        if n is None:
            n = len(seq)
        elif len(seq) != n:
            raise RuntimeError(
                f"{op}: expected {name} to hold {n} entries (one per param), got {len(seq)}")
    return n


def adam_step(params: list, grads: list, exp_avgs: list, exp_avg_sqs: list,
              max_exp_avg_sqs: list | None, *, lr: float, beta1: float, beta2: float,
              eps: float, weight_decay: float, steps: list, amsgrad: bool, maximize: bool,
              decoupled_weight_decay: bool) -> None:
    """One fused Adam (AdamW with ``decoupled_weight_decay``) step over lists of arrays, in
    place.

    Updates each ``params[i]``, ``exp_avgs[i]``, ``exp_avg_sqs[i]`` (and ``max_exp_avg_sqs[i]``
    with ``amsgrad``; the list is not read without it) exactly as ``torch.optim.Adam`` /
    ``AdamW``'s single-tensor path; ``steps[i]`` is that parameter's step, counting from 1.
    Every array is validated before anything is launched; then one launch per tensor.
    """
    op = "adam_step"
    cp = _cupy.require(op)
    lists = {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs, "steps": steps}
    if amsgrad:
        if max_exp_avg_sqs is None:
            raise RuntimeError(f"{op}: amsgrad=True needs a max_exp_avg_sq buffer for every "
                               "param, got None")
        lists["max_exp_avg_sqs"] = max_exp_avg_sqs
    n = _count(op, params, **lists)
    devices = []
    for i in range(n):
        vmax = max_exp_avg_sqs[i] if amsgrad else None
        if amsgrad and vmax is None:
            raise RuntimeError(f"{op}: amsgrad=True needs a max_exp_avg_sq buffer for every "
                               f"param, got None (max_exp_avg_sqs[{i}])")
        arrays = {f"params[{i}]": params[i], f"grads[{i}]": grads[i],
                  f"exp_avgs[{i}]": exp_avgs[i], f"exp_avg_sqs[{i}]": exp_avg_sqs[i],
                  f"max_exp_avg_sqs[{i}]": vmax}
        devices.append(_device_of(op, cp, **arrays))
        _float_dtype(op, **arrays)
        if int(steps[i]) < 1:
            raise ValueError(f"{op}: steps count from 1, got {steps[i]} (steps[{i}])")
        _check_like(op, params[i], **arrays)
    for i in range(n):
        with cp.cuda.Device(devices[i]):
            _adam_launch(cp, params[i], grads[i], exp_avgs[i], exp_avg_sqs[i],
                         max_exp_avg_sqs[i] if amsgrad else None, lr=lr, beta1=beta1,
                         beta2=beta2, eps=eps, weight_decay=weight_decay, step=steps[i],
                         amsgrad=amsgrad, maximize=maximize,
                         decoupled_weight_decay=decoupled_weight_decay)


@_half_as_float("param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq")
def _adam_launch(cp: Any, param: Any, grad: Any, exp_avg: Any, exp_avg_sq: Any,
                 max_exp_avg_sq: Any, *, lr: float, beta1: float, beta2: float, eps: float,
                 weight_decay: float, step: float, amsgrad: bool, maximize: bool,
                 decoupled_weight_decay: bool) -> None:
    """One tensor's ``adam_step`` launch (validated by the caller)."""
    # The host-side scalars, computed in double as in torch.optim.adam._single_tensor_adam.
    step = float(step)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2 ** 0.5
    dtype = np.dtype(param.dtype)
    t = dtype.type
    n = int(param.size)
    if n == 0:
        return
    p_w, p_back = _work(cp, param)
    m_w, m_back = _work(cp, exp_avg)
    v_w, v_back = _work(cp, exp_avg_sq)
    if amsgrad:
        mx_w, mx_back = _work(cp, max_exp_avg_sq)
    else:
        mx_w, mx_back = v_w, False  # never read or written by the kernel
    _launch("adam_step", dtype, _blocks(n),
            (p_w, cp.ascontiguousarray(grad), m_w, v_w, mx_w, _i64(n), t(weight_decay),
             t(1 - lr * weight_decay), t(beta2), t(1 - beta1), t(1 - beta2), t(eps),
             t(-step_size), t(bias_correction2_sqrt), _flag(amsgrad), _flag(maximize),
             _flag(decoupled_weight_decay)))
    for back, dst, src in ((p_back, param, p_w), (m_back, exp_avg, m_w),
                           (v_back, exp_avg_sq, v_w), (mx_back, max_exp_avg_sq, mx_w)):
        if back:
            dst[...] = src


def sgd_step(params: list, grads: list, bufs: list | None, *, lr: float, momentum: float,
             dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
             first_steps: list | None) -> None:
    """One fused SGD step over lists of arrays, in place, exactly as ``torch.optim.SGD``'s
    single-tensor path.

    ``bufs`` are the momentum buffers and ``first_steps`` say, per parameter, whether this is
    its buffer's first step (the buffer is then set to the (decayed) gradient instead of being
    averaged); both are not read when ``momentum`` is 0 and may be None. Every array is
    validated before anything is launched; then one launch per tensor.
    """
    op = "sgd_step"
    cp = _cupy.require(op)
    has_momentum = momentum != 0
    lists = {"grads": grads}
    if has_momentum:
        if bufs is None or first_steps is None:
            raise RuntimeError(f"{op}: momentum={momentum} needs a momentum buffer and a "
                               "first-step flag for every param, got None")
        lists.update(bufs=bufs, first_steps=first_steps)
    n = _count(op, params, **lists)
    devices = []
    for i in range(n):
        buf = bufs[i] if has_momentum else None
        if has_momentum and buf is None:
            raise RuntimeError(f"{op}: momentum={momentum} needs a momentum buffer for every "
                               f"param, got None (bufs[{i}])")
        arrays = {f"params[{i}]": params[i], f"grads[{i}]": grads[i], f"bufs[{i}]": buf}
        devices.append(_device_of(op, cp, **arrays))
        _float_dtype(op, **arrays)
        _check_like(op, params[i], **arrays)
    for i in range(n):
        with cp.cuda.Device(devices[i]):
            _sgd_launch(cp, params[i], grads[i], bufs[i] if has_momentum else None, lr=lr,
                        momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize,
                        first_step=has_momentum and bool(first_steps[i]))


@_half_as_float("param", "buf")
def _sgd_launch(cp: Any, param: Any, grad: Any, buf: Any, *, lr: float, momentum: float,
                dampening: float, weight_decay: float, nesterov: bool, maximize: bool,
                first_step: bool) -> None:
    """One tensor's ``sgd_step`` launch (validated by the caller)."""
    dtype = np.dtype(param.dtype)
    t = dtype.type
    n = int(param.size)
    if n == 0:
        return
    p_w, p_back = _work(cp, param)
    if buf is not None:
        b_w, b_back = _work(cp, buf)
    else:
        b_w, b_back = p_w, False  # never read or written by the kernel
    _launch("sgd_step", dtype, _blocks(n),
            (p_w, cp.ascontiguousarray(grad), b_w, _i64(n), t(-lr), t(momentum),
             t(1 - dampening), t(weight_decay), _flag(nesterov), _flag(maximize),
             _flag(first_step)))
    if p_back:
        param[...] = p_w
    if b_back:
        buf[...] = b_w


from ._elementwise import (  # noqa: E402
    angle,
    arange_values,
    copysign,
    fill,
    floor_divide,
    fmod,
    frac,
    hypot,
    linspace_values,
    logaddexp,
    logaddexp2,
    make_complex,
    nan_to_num,
    orthogonal_poly,
    outer,
    remainder,
    round_decimals,
    sign,
    triangle_zero,
)

# ---------------------------------------------------------------------------------------------
# the kernel list is ember.tensor.kernels.KERNEL_NAMES (the CPU table); hold this module to it


def _check_names() -> None:
    missing = [name for name in KERNEL_NAMES if not callable(globals().get(name))]
    if missing:
        raise ImportError(f"{__name__} defines no CUDA twin of the kernels {missing}")


_check_names()
