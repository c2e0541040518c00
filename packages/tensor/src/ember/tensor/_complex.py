"""Complex numbers: the parts of a complex tensor and the ops that build one.

``real`` and ``imag`` are views, as in PyTorch: writing through them writes the complex
tensor. ``view_as_real`` views a complex tensor as its (real, imaginary) pairs in a last
dimension of size 2, and ``view_as_complex`` is its inverse. ember has no lazy conjugation bit:
``conj`` of a complex tensor is a new tensor (PyTorch's ``conj_physical``), ``is_conj`` is
always False and ``resolve_conj`` returns its argument.

Gradients follow PyTorch's convention: the gradient of a real loss ``L`` with respect to
``z = x + iy`` is ``dL/dx + i dL/dy`` (the conjugate Wirtinger derivative, times two).

    >>> z = complex(tensor([1., 0.]), tensor([0., 2.]))
    >>> z.abs()
    tensor([1., 2.])
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._checks import broadcast_error, check_inplace, scalar_type_name
from ._fpstate import quiet as _quiet
from ._pointwise import _sign
from ._registry import array_module, defop, with_out
from ._tensor import Tensor
from .kernels import get as _kernel

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "conj", "conj_physical",
           "conj_physical_", "angle", "polar", "complex", "sgn", "sgn_"]

_make = Tensor._make
# the float dtypes with a complex counterpart (a dict of dtypes: comparing a dtype with a
# scalar type, as ``d.dtype in (np.float32, np.float64)`` does, converts the type each time)
_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {c: f for f, c in _COMPLEX_OF.items()}


def real(input: Tensor) -> Tensor:
    """The real part of a complex tensor, as a view; a real tensor itself (as PyTorch's).

    >>> real(view_as_complex(tensor([[1., 2.]])))
    tensor([1.])
    """
    if isinstance(input, Tensor) and input._data.dtype.kind != "c":
        return input
    return _real(input)


@defop("real")
def _real(input: Tensor) -> Tensor:
    d = input._data
    return input._view_of(d.real if d.dtype.kind == "c" else d[...])


@defop("imag")
def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a view.

    >>> imag(view_as_complex(tensor([[1., 2.]])))
    tensor([2.])
    """
    d = input._data
    if d.dtype.kind != "c":
        raise RuntimeError("imag(): imag is not implemented for tensors with non-complex "
                           "dtypes.")
    return input._view_of(d.imag)


@defop("view_as_real")
def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor viewed as real pairs in a new last dimension of size 2.

    >>> view_as_real(complex(tensor([1.]), tensor([2.])))
    tensor([[1., 2.]])
    """
    d = input._data
    if d.dtype.kind != "c":
        raise RuntimeError("view_as_real(): view_as_real is only supported for complex tensors, "
                           f"but got a tensor of scalar type: {scalar_type_name(d.dtype)}")
    # a new last dim of size 1 (contiguous whatever the strides), reinterpreted as two reals:
    # PyTorch's strides (each doubled, then 1), a view, with no stride arithmetic in Python
    return input._view_of(d[..., None].view(_REAL_OF.get(d.dtype) or d.real.dtype))


@defop("view_as_complex")
def view_as_complex(input: Tensor) -> Tensor:
    """A float32 or float64 tensor whose last dimension (of size 2, stride 1) holds real and
    imaginary parts, viewed as a complex tensor.

    >>> view_as_complex(tensor([[1., 2.], [3., -1.]]))
    tensor([1.+2.j, 3.-1.j])
    """
    d = input._data
    cdt = _COMPLEX_OF.get(d.dtype)
    if cdt is None:
        raise RuntimeError("view_as_complex(): view_as_complex is only supported for float and "
                           "double tensors, but got a tensor of scalar type: "
                           f"{scalar_type_name(d.dtype)}")
    if d.ndim == 0 or d.shape[-1] != 2:
        raise RuntimeError("view_as_complex(): Tensor must have a last dimension of size 2 "
                           f"(got shape {list(d.shape)})")
    item, strides = d.itemsize, d.strides
    if strides[-1] != item:
        raise RuntimeError("view_as_complex(): Tensor must have a last dimension with stride 1 "
                           f"(got strides {[s // item for s in strides]})")
    two = 2 * item
    for s in strides[:-1]:
        if s % two:
            raise RuntimeError("view_as_complex(): Tensor must have a stride divisible by 2 for "
                               f"all but last dimension (got strides "
                               f"{[s // item for s in strides]})")
    if d.base is not None and input.storage_offset() % 2:  # (an owner's offset is 0)
        raise RuntimeError("view_as_complex(): Tensor must have a storage_offset divisible by 2 "
                           f"(got {input.storage_offset()})")
    return input._view_of(d.view(cdt)[..., 0])


@defop("conj_physical", out=True)
def _conj_physical(input: Tensor) -> Tensor:
    d = input._data
    return _make(array_module(d).conj(d) if d.dtype.kind == "c" else d.copy())


@with_out
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, computed into a new tensor; a real tensor is returned as it is
    (the same tensor, as PyTorch does).

    >>> conj_physical(view_as_complex(tensor([[1., 2.]])))
    tensor([1.-2.j])
    """
    if isinstance(input, Tensor) and input._data.dtype.kind != "c":
        return input
    return _conj_physical(input)


@defop("conj_physical_", inplace=True)
def conj_physical_(input: Tensor) -> Tensor:
    """In-place :func:`conj_physical`."""
    d = input._data
    check_inplace(input, "conj_physical_")
    if d.dtype.kind == "c":
        array_module(d).conj(d, out=d)
    input._bump()
    return input


def conj(input: Tensor) -> Tensor:
    """The complex conjugate; a real tensor itself (as PyTorch's). ember has no lazy
    conjugation, so a complex tensor's conjugate is a new tensor.

    >>> conj(view_as_complex(tensor([[1., 2.]])))
    tensor([1.-2.j])
    """
    if isinstance(input, Tensor) and input._data.dtype.kind != "c":
        return input
    return _conj(input)


@defop("conj")
def _conj(input: Tensor) -> Tensor:
    d = input._data
    return _make(array_module(d).conj(d)) if d.dtype.kind == "c" else input._view_of(d[...])


@defop("angle", out=True)
def angle(input: Tensor) -> Tensor:
    """The argument of each element in radians: atan2(imag, real) for complex tensors;
    0 or pi for real ones (NaN stays NaN).

    >>> angle(tensor([-2., 3.]))
    tensor([3.1416, 0.0000])
    """
    d = input._data
    xp = array_module(d)
    if d.dtype.kind == "c":
        return _make(xp.angle(d))
    out_dt = D.get_default_dtype().np if d.dtype.kind in "biu" else d.dtype
    d = d.astype(D.compute_np(out_dt), copy=False)
    return _make(_kernel("angle", xp)(d).astype(out_dt, copy=False))


def _check_parts(op: str, a: Tensor, b: Tensor, names: tuple) -> tuple:
    """The broadcast shape of two float tensors of one dtype on one device (PyTorch's
    errors otherwise)."""
    for t, n, pos in ((a, names[0], 1), (b, names[1], 2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{n}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")
    da, db = a._data, b._data
    if da.dtype not in _COMPLEX_OF or db.dtype not in _COMPLEX_OF:
        raise RuntimeError(f"{op}(): Expected both inputs to be Half, Float or Double tensors "
                           f"but got {scalar_type_name(da.dtype)} and "
                           f"{scalar_type_name(db.dtype)}")
    if da.dtype != db.dtype:
        raise RuntimeError(f"{op}(): Expected object of scalar type "
                           f"{scalar_type_name(da.dtype)} but got scalar type "
                           f"{scalar_type_name(db.dtype)} for second argument")
    if type(da) is not type(db):
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found "
                           f"at least two devices, {a.device} and {b.device}!")
    if da.shape == db.shape:  # (np.broadcast_shapes costs as much as the op)
        return da.shape
    try:
        return np.broadcast_shapes(da.shape, db.shape)
    except ValueError:
        raise broadcast_error(op, da.shape, db.shape) from None


@defop("complex", out=True)
def complex(real: Tensor, imag: Tensor) -> Tensor:  # noqa: A001
    """The complex tensor ``real + i imag`` (two float tensors of one dtype, broadcast).

    >>> complex(tensor([1.]), tensor([2.]))
    tensor([1.+2.j])
    """
    _check_parts("complex", real, imag, ("real", "imag"))
    dr = real._data
    return _make(_kernel("make_complex", array_module(dr))(dr, imag._data))


@defop("polar", out=True)
def polar(abs: Tensor, angle: Tensor) -> Tensor:  # noqa: A002
    """The complex tensor with magnitude ``abs`` and argument ``angle``:
    ``abs * (cos(angle) + i sin(angle))``.

    >>> polar(tensor([2.]), tensor([0.]))
    tensor([2.+0.j])
    """
    shape = _check_parts("polar", abs, angle, ("abs", "angle"))
    a, t = abs._data, angle._data
    xp = np if a.__class__ is np.ndarray else array_module(a)
    with _quiet():  # (an infinite angle, an infinite magnitude times 0: NaN, no warning)
        c, s = xp.cos(t), xp.sin(t)
        if t.shape == shape:  # each product into its factor's array
            re, im = xp.multiply(a, c, out=c), xp.multiply(a, s, out=s)
        else:
            re, im = a * c, a * s
    return _make(_kernel("make_complex", xp)(re, im))


def _sgn(d):
    xp = np if d.__class__ is np.ndarray else array_module(d)
    if d.dtype.kind != "c":
        return _sign(xp, d)  # sign's, for a real tensor
    mag = xp.abs(d)
    with _quiet():  # 0 / 0 is replaced
        return xp.where(mag == 0, 0, d / mag)


@defop("sgn", out=True)
def sgn(input: Tensor) -> Tensor:
    """``z / |z|`` for complex tensors (0 at 0); the sign for real ones.

    >>> sgn(tensor([-2., 0., 3.]))
    tensor([-1.,  0.,  1.])
    """
    return _make(_sgn(input._data))


@defop("sgn_", inplace=True)
def sgn_(input: Tensor) -> Tensor:
    """In-place :func:`sgn`."""
    check_inplace(input, "sgn_")
    d = input._data
    d[...] = _sgn(d)
    input._bump()
    return input
