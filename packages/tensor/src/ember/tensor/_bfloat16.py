"""bfloat16 through float32 ("opmath") for the ops NumPy has no good bfloat16 kernel for.

ml_dtypes gives NumPy a bfloat16 dtype whose ufuncs compute each element in float32 and round,
which is what PyTorch's CPU kernels do for elementwise math (``_pointwise`` handles those).
Reductions, matrix products, scans, softmax, convolution and the Numba kernels are another
matter: NumPy would accumulate in bfloat16 (a sum of 1000 values drifts by percents), BLAS and
Numba do not know the dtype at all. PyTorch accumulates those in float32 and rounds the result
once; so does ember, by running the op's implementation on float32 copies of its bfloat16
arguments and rounding its floating results back.

:func:`install` wraps the implementation of each named registry op. The wrapper looks at the
first argument only: when it is not a bfloat16 tensor, the op runs as before (one class test
and one dtype test per call; the recorder, binding and autograd are untouched). When it is,
every bfloat16 tensor argument (also inside a list or tuple argument, as ``cat`` takes) runs as
float32, and float32 results become bfloat16 when PyTorch's promotion of the floating tensor
arguments is bfloat16 and no explicit ``dtype=`` was asked for.
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._registry import OPS, replace_impl, write_out
from ._tensor import Tensor

__all__ = ["install", "OPMATH_OPS"]

_BF16 = D.BF16_NP
_F32 = np.dtype(np.float32)
_make = Tensor._make

#: registry ops that run bfloat16 through float32 (when the op exists in this build)
OPMATH_OPS = (
    # reductions and scans: float32 accumulation
    "sum", "nansum", "mean", "prod", "var", "norm", "cumsum", "cumprod", "logsumexp",
    "linalg_vector_norm",
    # products: BLAS has no bfloat16 (PyTorch accumulates in float32)
    "matmul", "linear", "einsum", "tensordot", "outer", "trace",
    # fused pointwise formulas: one rounding, as PyTorch's kernels
    "lerp", "tanh_backward", "sigmoid_backward",
    # nn primitives (Numba kernels, im2col + BLAS)
    "_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data",
    "cross_entropy_loss", "_cross_entropy_loss_backward", "convolution", "convolution_backward",
    "embedding_dense_backward", "im2col", "col2im", "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward", "max_pool3d_with_indices",
    "max_pool3d_with_indices_backward", "lstm_cell_fused", "lstm_cell_backward",
    "gru_cell_fused", "gru_cell_backward", "layer_norm", "native_layer_norm",
    "layer_norm_backward", "native_layer_norm_backward", "gelu", "gelu_backward", "silu",
    "silu_backward", "softplus", "softplus_backward", "elu", "elu_backward", "hardsigmoid",
    "hardsigmoid_backward", "hardswish", "hardswish_backward", "mish", "mish_backward",
    "log_sigmoid", "log_sigmoid_backward",
    # special functions (SciPy has no bfloat16 kernels)
    "digamma", "lgamma", "i0", "logit", "sinc", "xlogy", "polygamma", "special_entr",
    "special_erfcx", "special_i0e", "special_i1", "special_i1e", "special_ndtr",
    "special_ndtri", "special_log_ndtr", "special_xlog1py",
)


def _up(a):
    """A float32 copy of a bfloat16 tensor (lists and tuples of tensors element-wise)."""
    if a.__class__ is Tensor:
        d = a._data
        return _make(d.astype(_F32)) if d.dtype is _BF16 else a
    if isinstance(a, (list, tuple)) and a and any(x.__class__ is Tensor for x in a):
        return type(a)(_up(x) for x in a) if type(a) in (list, tuple) else a
    return a


def _promoted(args, kwargs):
    """PyTorch's promotion of the floating tensor arguments' dtypes."""
    r = None
    for a in (*args, *kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for x in items:
            if x.__class__ is Tensor and x.dtype.is_floating_point:
                r = x.dtype if r is None else D.promote_types(r, x.dtype)
    return r


def _down(r):
    if r.__class__ is Tensor:
        d = r._data
        return _make(d.astype(_BF16)) if d.dtype is _F32 else r
    if isinstance(r, tuple):
        vals = [_down(x) for x in r]
        return type(r)(*vals) if hasattr(r, "_fields") else tuple(vals)
    if isinstance(r, list):
        return [_down(x) for x in r]
    return r


def _wrap(op, impl, dtype_at: int | None, out_at: int | None):
    def bf16_via_float32(*args, **kwargs):
        a0 = args[0] if args else next(iter(kwargs.values()), None)
        if a0.__class__ is not Tensor or a0._data.dtype is not _BF16:
            if not (isinstance(a0, (list, tuple)) and a0 and a0[0].__class__ is Tensor
                    and a0[0]._data.dtype is _BF16):
                return impl(*args, **kwargs)
        asked = None if dtype_at is None else kwargs.get(
            "dtype", args[dtype_at] if dtype_at < len(args) else None)
        round_back = asked is None and _promoted(args, kwargs) is D.bfloat16
        out = None
        if out_at is not None:  # an op taking out= itself: write the rounded result into it
            if "out" in kwargs:
                out, kwargs = kwargs["out"], {**kwargs, "out": None}
            elif out_at < len(args):
                out, args = args[out_at], (*args[:out_at], None, *args[out_at + 1:])
        r = impl(*(_up(a) for a in args), **{k: _up(v) for k, v in kwargs.items()})
        r = _down(r) if round_back else r
        return r if out is None else write_out(op, r, out)

    bf16_via_float32.__name__ = impl.__name__
    bf16_via_float32.__doc__ = impl.__doc__
    bf16_via_float32.__wrapped__ = impl
    return bf16_via_float32


def install(names=OPMATH_OPS) -> list[str]:
    """Route bfloat16 calls of the named registry ops through float32; returns the names
    wrapped (ops missing from the registry are skipped; wrapping twice is a no-op)."""
    done = []
    for name in names:
        op = OPS.get(name)
        if op is None or getattr(op.impl, "__wrapped__", None) is not None:
            continue
        w = _wrap(op, op.impl, op.names.index("dtype") if "dtype" in op.names else None,
                  op.names.index("out") if "out" in op.names else None)
        replace_impl(op, w)
        done.append(name)
    return done
