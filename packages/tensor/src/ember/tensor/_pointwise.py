"""Elementwise math: arithmetic, comparisons, logical ops, transcendental functions, clamp,
where, lerp, addcmul/addcdiv, and their in-place ``_`` forms.

Each op is one registry entry; the in-place form is its own entry (autograd treats it as the
out-of-place op followed by a write into the first argument). Result dtypes follow PyTorch's
promotion (see ``_dtype``); integer inputs to float functions give the default float dtype.
"""
from __future__ import annotations

import numbers
from functools import partial

import numpy as np

from . import _dtype as D
from ._checks import (
    broadcast_error,
    check_inplace,
    check_same_device,
    checked_scalar,
    device_error,
    int_bounds,
    not_implemented,
    scalar_type_name,
)
from ._creation import _on, _to_copy, tensor
from ._fpstate import quiet as _quiet
from ._fpstate import quiet_begin as _quiet_begin
from ._fpstate import quiet_call as _quiet_call
from ._fpstate import quiet_end as _quiet_end
from ._indexing import nonzero
from ._registry import array_module, defop, with_out
from ._tensor import Tensor
from .kernels import get as _kernel
from .kernels import special as _special_kernels

_make = Tensor._make
_ndarray = np.ndarray
_min_reduce = np.minimum.reduce


_device_error = device_error
_check_same_device = check_same_device


_INT64 = np.dtype(np.int64)
_BF16, _F32 = D.BF16_NP, np.dtype(np.float32)
# concrete scalar types checked first: isinstance against numbers' ABCs is slow
_SCALARS = (float, int, bool, np.generic)


def _scalar_dtype(t_dtype: np.dtype, s) -> np.dtype:
    """Result dtype of (tensor of ``t_dtype``) op (Python scalar ``s``)."""
    kind = t_dtype.kind
    cls = type(s)
    if cls is float or isinstance(s, np.floating) or (isinstance(s, np.generic) and
                                                       s.dtype == _BF16):
        return t_dtype if kind in "fc" or t_dtype == _BF16 else D._default[0].np
    if cls is bool or isinstance(s, np.bool_):
        return t_dtype
    if cls is int or isinstance(s, (numbers.Integral, np.integer)):
        return _INT64 if kind == "b" else t_dtype
    if isinstance(s, numbers.Real):
        return t_dtype if kind in "fc" or t_dtype == _BF16 else D._default[0].np
    if isinstance(s, numbers.Complex):  # a float tensor keeps its precision
        return t_dtype if kind == "c" else D._FROM_NP.get(t_dtype, D.float32).to_complex().np \
            if kind == "f" or t_dtype == _BF16 else D.default_complex().np
    raise TypeError(f"unsupported operand type {type(s).__name__}")


def _operands(a, b, op: str, float_result: bool = False):
    """``(xa, xb, dtype)``: raw operands (arrays, or Python scalars) cast to PyTorch's result
    dtype. Python scalars stay scalars: NumPy treats them as weak, like PyTorch."""
    if isinstance(a, Tensor):
        da = a._data
        if isinstance(b, Tensor):
            db = b._data
            if type(da) is not type(db):
                _check_same_device(op, da, db)
            dt = da.dtype
            if dt != db.dtype:
                dt = D.result_type(a, b).np
        elif isinstance(b, _SCALARS) or isinstance(b, numbers.Number):
            dt = _scalar_dtype(da.dtype, b)
            db = b
        else:
            raise TypeError(f"{op}(): unsupported operand type(s): 'Tensor' and "
                            f"'{type(b).__name__}'")
    elif isinstance(b, Tensor):
        if not (isinstance(a, _SCALARS) or isinstance(a, numbers.Number)):
            raise TypeError(f"{op}(): unsupported operand type(s): '{type(a).__name__}' and "
                            "'Tensor'")
        db = b._data
        dt = _scalar_dtype(db.dtype, a)
        da = a
    else:
        raise TypeError(f"{op}(): expected at least one Tensor argument")
    if float_result and dt.kind not in "fc" and dt != _BF16:
        dt = D.get_default_dtype().np
    cls = da.__class__  # a NumPy array first: the common operand
    if cls is _ndarray:
        if da.dtype != dt:
            da = da.astype(dt)
    elif cls is not float and cls is not int and cls is not bool and cls is not complex:
        if isinstance(da, np.generic):
            da = da.item()
        elif da.dtype != dt:
            da = da.astype(dt)
    cls = db.__class__
    if cls is _ndarray:
        if db.dtype != dt:
            db = db.astype(dt)
    elif cls is not float and cls is not int and cls is not bool and cls is not complex:
        if isinstance(db, np.generic):
            db = db.item()
        elif db.dtype != dt:
            db = db.astype(dt)
    return da, db, dt


def _broadcast_error(op: str, da, db) -> RuntimeError:
    return broadcast_error(op, getattr(da, "shape", ()), getattr(db, "shape", ()))


def _check_out_shape(op: str, db, out_shape) -> None:
    """In-place ops: the other operand must broadcast to the destination's shape."""
    if hasattr(db, "shape") and db.shape != out_shape:  # (broadcast_shapes: 1.5 us)
        try:
            shape = np.broadcast_shapes(db.shape, out_shape)
        except ValueError:
            raise _broadcast_error(op, np.empty(out_shape), db) from None
        if shape != out_shape:
            raise RuntimeError(f"{op}(): output with shape {list(out_shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")


def _xp2(da, db):
    return np if isinstance(da, _ndarray) or isinstance(db, _ndarray) else array_module(
        da if hasattr(da, "shape") else db)


_check_inplace = check_inplace


def _check_cast(op: str, result: np.dtype, out: np.dtype) -> None:
    if result != out and not D.can_cast(D._FROM_NP[result], D._FROM_NP[out]):
        raise RuntimeError(
            f"{op}(): result type {scalar_type_name(result)} can't be cast to the desired "
            f"output type {scalar_type_name(out)}")


def _write(self: Tensor, value, op: str) -> Tensor:
    """Store ``value`` (array or scalar) into ``self`` in place and bump its version."""
    _check_inplace(self, op)
    d = self._data
    if hasattr(value, "shape") and value.shape != d.shape:
        try:
            ok = np.broadcast_shapes(value.shape, d.shape) == d.shape
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"{op}(): the source of shape {list(value.shape)} can't be "
                               f"broadcast to the destination of shape {list(d.shape)}")
    d[...] = value
    self._bump()
    return self


# ---------------------------------------------------------------------------------- binary
# the ops whose Python scalar operand stays float32 with a bfloat16 tensor (others round it)
_BF16_SCALAR_OPMATH = frozenset(("mul", "div", "floor_divide", "div_floor"))


def _bf16_binary(name: str, f, da, db) -> Tensor:
    """A bfloat16 result computed in float32 and rounded once, as PyTorch's CPU kernels do
    (NumPy would hold a Python scalar operand in bfloat16 or widen the result)."""
    if name not in _BF16_SCALAR_OPMATH:  # PyTorch holds a scalar operand in bfloat16
        da = da if hasattr(da, "shape") else float(_BF16.type(da))
        db = db if hasattr(db, "shape") else float(_BF16.type(db))
    elif name == "div" and not hasattr(da, "shape"):  # scalar / t is reciprocal(t) * scalar
        db, f = np.reciprocal(db.astype(_F32)).astype(_BF16), np.multiply
    xp = _xp2(da, db)
    da = da.astype(_F32) if hasattr(da, "shape") else da
    db = db.astype(_F32) if hasattr(db, "shape") else db
    try:
        with _quiet():  # NumPy's ufuncs take CuPy arrays through __array_ufunc__
            return _make(xp.asarray(f(da, db)).astype(_BF16))
    except ValueError:
        raise _broadcast_error(name, da, db) from None


def _check_int_divisor(op: str, db, dt: np.dtype) -> None:
    """Integer division and modulus by zero raise, as PyTorch's (NumPy silently gives 0)."""
    if dt.kind == "b":
        raise NotImplementedError(f"{op}(): not implemented for 'Bool'")
    # (a zero divisor: one reduction, where a mask and its any() made two and a Python call)
    if dt.kind in "iu" and (not db.all() if hasattr(db, "shape") else db == 0):
        raise RuntimeError(f"ZeroDivisionError: {op}() of an integer tensor by zero")


def _binary(name: str, ufunc_name: str, doc: str, float_result: bool = False,
            quiet: bool = False, int_divisor: bool = False, inplace: bool = True,
            complex_ok: bool = True, kernel=None, cpu=None):
    """The op ``name`` over NumPy's ``ufunc_name`` and, where PyTorch has one (``inplace``),
    its in-place form ``name_``; returns ``(op, in-place op or None)``. ``complex_ok``: the
    op has complex kernels (else complex operands raise, as in PyTorch). ``kernel``: ``xp ->`` the
    device kernel of the op (``f(a, b, out=None)``, from ``ember.tensor.kernels``; it warns
    about nothing), run instead of the ufunc for every dtype and device. ``cpu``: the function
    run on NumPy arrays in place of the ufunc (its signature; CuPy arrays take CuPy's ufunc)."""
    npf = cpu or getattr(np, ufunc_name)
    if kernel:  # resolved on first use: importing ember compiles nothing
        def npf(a, b, out=None, casting=None, _k=[]):  # noqa: B006
            if not _k:
                _k.append(kernel(np))
            return _k[0](a, b, out=out)
    elif quiet:  # an inf or nan is the result, as in PyTorch: no NumPy warning
        npf = partial(_quiet_call, npf)
    bitwise = name.startswith("bitwise_")  # integer and bool kernels only, as in PyTorch
    is_sub = name == "sub"  # PyTorch refuses a bool operand

    def impl(input, other):
        if input.__class__ is Tensor and other.__class__ is Tensor:
            da, db = input._data, other._data  # the common case: two CPU arrays, one dtype
            if da.__class__ is _ndarray and db.__class__ is _ndarray and da.dtype == db.dtype \
                    and (not float_result or da.dtype.kind == "f") \
                    and (not int_divisor or da.dtype.kind == "f") \
                    and (complex_ok or da.dtype.kind != "c"):
                try:
                    r = npf(da, db)
                except ValueError:
                    raise _broadcast_error(name, da, db) from None
                except TypeError:  # NumPy has no such loop (bitwise on floats, bool - bool)
                    if is_sub:
                        _check_sub_bool(name, input, other)
                    raise not_implemented(name, da.dtype) from None
                t = object.__new__(Tensor)
                t._data = r if r.__class__ is _ndarray else np.asarray(r)
                return t
        elif input.__class__ is Tensor and (other.__class__ is float or other.__class__ is int):
            da = input._data  # a float CPU tensor and a Python number: NumPy keeps the dtype
            if da.__class__ is _ndarray and da.dtype.kind == "f":
                if da.base is not None and 0 in da.strides:  # expanded: once per element
                    return _make(_on_distinct(_by_number, np, da, False, npf, other))
                r = npf(da, other)
                t = object.__new__(Tensor)
                t._data = r if r.__class__ is _ndarray else np.asarray(r)
                return t
        da, db, dt = _operands(input, other, name, float_result)
        if int_divisor:
            _check_int_divisor(name, db, dt)
        if (bitwise and dt.kind not in "biu") or (not complex_ok and dt.kind == "c"):
            raise not_implemented(name, dt)
        if is_sub:
            _check_sub_bool(name, input, other)
        if dt == _BF16:
            return _bf16_binary(name, npf, da, db)
        xp = _xp2(da, db)
        if kernel is not None and xp is not np:
            try:
                return _make(kernel(xp)(da, db))
            except ValueError:
                raise _broadcast_error(name, da, db) from None
        f = npf if xp is np else getattr(xp, ufunc_name)  # CuPy's ufuncs do not warn
        try:
            return _make(f(da, db))
        except ValueError:
            raise _broadcast_error(name, da, db) from None

    def impl_(input, other):
        da, db, dt = _operands(input, other, name, float_result)
        _check_cast(name + "_", dt, input._data.dtype)
        _check_out_shape(name + "_", db, input._data.shape)
        _check_inplace(input, name + "_")
        if int_divisor:
            _check_int_divisor(name + "_", db, dt)
        if (bitwise and dt.kind not in "biu") or (not complex_ok and dt.kind == "c"):
            raise not_implemented(name + "_", dt)
        if is_sub:
            _check_sub_bool(name + "_", input, other)
        if dt == _BF16:
            input._data[...] = _bf16_binary(name, npf, da, db)._data
            input._bump()
            return input
        xp = _xp2(da, db)
        if kernel is not None:
            kernel(xp)(da, db, out=input._data)
            input._bump()
            return input
        f = npf if xp is np else getattr(xp, ufunc_name)
        with _quiet():
            f(da, db, out=input._data, casting="unsafe")
        input._bump()
        return input

    impl.__name__, impl_.__name__ = name, name + "_"
    impl.__doc__ = doc
    impl_.__doc__ = f"In-place :func:`{name}`."
    return defop(name, out=True)(impl), (defop(name + "_", inplace=True)(impl_) if inplace
                                         else None)


mul, mul_ = _binary("mul", "multiply", """Elementwise product.

    >>> tensor([1, 2]) * 3
    tensor([3, 6])
    """)
add, add_ = _binary("add", "add", """``input + alpha * other`` elementwise.

    >>> add(tensor([1., 2.]), 1)
    tensor([2., 3.])
    """)
sub, sub_ = _binary("sub", "subtract", """``input - other`` elementwise.

    >>> sub(tensor([3., 2.]), 1)
    tensor([2., 1.])
    """)
_add_plain, _sub_plain = add, sub


def _check_sub_bool(op: str, input, other) -> None:
    """PyTorch refuses subtraction with a bool tensor."""
    for t in (input, other):
        if t.__class__ is Tensor and t._data.dtype.kind == "b":
            raise RuntimeError(f"{op}(): Subtraction, the `-` operator, with a bool tensor is "
                               "not supported. If you are trying to invert a mask, use the `~` "
                               "or `logical_not()` operator instead.")


@with_out
def add(input, other, *, alpha=1):  # noqa: F811
    """``input + alpha * other`` elementwise.

    >>> add(tensor([1., 2.]), tensor([1., 1.]), alpha=2)
    tensor([3., 4.])
    """
    if alpha != 1:
        other = mul(other, alpha)
    return _add_plain(input, other)


@with_out
def sub(input, other, *, alpha=1):  # noqa: F811
    """``input - alpha * other`` elementwise."""
    if alpha != 1:
        _check_sub_bool("sub", input, other)  # before alpha turns a bool operand into ints
        other = mul(other, alpha)
    return _sub_plain(input, other)


_add_plain_, _sub_plain_ = add_, sub_


def add_(input, other, *, alpha=1):  # noqa: F811
    """In-place :func:`add`."""
    if alpha != 1:
        other = mul(other, alpha)
    return _add_plain_(input, other)


def sub_(input, other, *, alpha=1):  # noqa: F811
    """In-place :func:`sub`."""
    if alpha != 1:
        other = mul(other, alpha)
    return _sub_plain_(input, other)


subtract, subtract_, multiply, multiply_ = sub, sub_, mul, mul_

true_divide, true_divide_ = _binary("div", "true_divide", """True division; integer inputs give
    the default float dtype.

    >>> tensor([1, 2]) / tensor([2, 2])
    tensor([0.5000, 1.0000])
    """, float_result=True, quiet=True)
_floor_divide, _floor_divide_ = _binary("floor_divide", "floor_divide",
                                        """Division rounded down (``//``).""", quiet=True,
                                        int_divisor=True, complex_ok=False,
                                        kernel=lambda xp: _kernel("floor_divide", xp))
remainder, remainder_ = _binary("remainder", "remainder", """Python-style modulus (sign of
    the divisor), ``%``.""", quiet=True, int_divisor=True, complex_ok=False,
    kernel=lambda xp: _kernel("remainder", xp))
fmod, fmod_ = _binary("fmod", "fmod", """C-style modulus (sign of the dividend).""", quiet=True,
                      int_divisor=True, complex_ok=False,
                      kernel=lambda xp: _kernel("fmod", xp))
atan2, atan2_ = _binary("atan2", "arctan2", """Elementwise ``atan2(input, other)``.""",
                        float_result=True, quiet=True, complex_ok=False)
# PyTorch has no in-place forms of these four
maximum, _ = _binary("maximum", "maximum", """Elementwise maximum (NaN propagates).""",
                     inplace=False, complex_ok=False)
minimum, _ = _binary("minimum", "minimum", """Elementwise minimum (NaN propagates).""",
                     inplace=False, complex_ok=False)
fmax, _ = _binary("fmax", "fmax", """Elementwise maximum ignoring NaN.""", inplace=False,
                  complex_ok=False)
fmin, _ = _binary("fmin", "fmin", """Elementwise minimum ignoring NaN.""", inplace=False,
                  complex_ok=False)
hypot, hypot_ = _binary("hypot", "hypot", """Elementwise ``sqrt(a**2 + b**2)``.""",
                        float_result=True, complex_ok=False,
                        kernel=lambda xp: _kernel("hypot", xp))
def _power(a, b, **kwargs):
    """NumPy's ``power``, and its ``square`` for a real float array to the Python number 2,
    as PyTorch's kernel: the same correctly rounded ``x * x`` (NaN, infinities and -0 alike),
    where the float loops of ``power`` call libm's ``pow`` per element (256x1024 float64:
    170 us against 45)."""
    if (b.__class__ is int or b.__class__ is float) and b == 2 and a.__class__ is _ndarray \
            and a.dtype.kind == "f":
        return np.square(a, **kwargs)
    return np.power(a, b, **kwargs)


_pow, _pow_ = _binary("pow", "power", """Elementwise power.""", quiet=True, cpu=_power)
bitwise_and, bitwise_and_ = _binary("bitwise_and", "bitwise_and",
                                    "Elementwise AND (& on ints/bools).")
bitwise_or, bitwise_or_ = _binary("bitwise_or", "bitwise_or", "Elementwise OR (| on ints/bools).")
bitwise_xor, bitwise_xor_ = _binary("bitwise_xor", "bitwise_xor", "Elementwise XOR.")
_div_trunc, _ = _binary("div_trunc", "divide", """Division rounded toward zero: the quotient
    rounded to the dtype, then truncated (integers exactly).""", int_divisor=True, inplace=False,
                        complex_ok=False,
                        kernel=_special_kernels.trunc_divide)
# div(rounding_mode="floor") is its own op: differentiable, its gradient zero, as PyTorch's
# (div_trunc too); floor_divide (``//``) is not differentiable, as PyTorch's (which takes out=)
_div_floor, _ = _binary("div_floor", "floor_divide", """Division rounded down, as
    ``div(rounding_mode='floor')``.""", quiet=True, int_divisor=True, inplace=False,
                        complex_ok=False, kernel=lambda xp: _kernel("floor_divide", xp))
for _f in (bitwise_and, bitwise_or, bitwise_xor, bitwise_and_, bitwise_or_, bitwise_xor_,
           _floor_divide, _floor_divide_):
    _f.op.differentiable = False


@with_out
def floor_divide(input, other):
    """Division rounded toward negative infinity (``//``).

    >>> tensor([7, -7]) // 2
    tensor([ 3, -4])
    """
    return _floor_divide(input, other)


def floor_divide_(input, other):
    return _floor_divide_(input, other)


@with_out
def div(input, other, *, rounding_mode=None):
    """Division: true division by default, ``rounding_mode='floor'`` or ``'trunc'``.

    >>> div(tensor([7., -7.]), 2, rounding_mode='trunc')
    tensor([ 3., -3.])
    """
    if rounding_mode is None:
        return true_divide(input, other)
    if rounding_mode == "floor":
        return _div_floor(input, other)
    if rounding_mode == "trunc":
        return _div_trunc(input, other)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but "
                     f"found '{rounding_mode}'")


def div_(input, other, *, rounding_mode=None):
    """In-place :func:`div`."""
    if rounding_mode is None:
        return true_divide_(input, other)
    return copy_(input, div(input, other, rounding_mode=rounding_mode))


divide, divide_ = div, div_


@with_out
def pow(input, exponent):  # noqa: A001
    """Elementwise power; an integer tensor to a negative integer power raises like PyTorch.

    >>> pow(tensor([1., 2., 3.]), 2)
    tensor([1., 4., 9.])
    """
    if exponent.__class__ is not Tensor and isinstance(input, Tensor) and \
            isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool) and \
            input.dtype.is_floating_point is False and exponent < 0 and \
            input.dtype is not D.bool:  # (a tensor exponent skips the ABC checks)
        raise RuntimeError("pow(): Integers to negative integer powers are not allowed.")
    if exponent.__class__ is Tensor and exponent._data.dtype.kind == "i" and (
            input.__class__ is int or (input.__class__ is Tensor and
                                       input._data.dtype.kind in "iu")):
        return _int_pow(input, exponent)
    return _pow(input, exponent)


def _int_pow(input, exponent: Tensor) -> Tensor:
    """An integer to integer tensor powers: where an exponent is negative (NumPy refuses it),
    the value integer arithmetic gives, as PyTorch's: 1 for a base of 1, 1 or -1 for a base of
    -1 (by the exponent's parity), else 0."""
    e = exponent._data
    # (one reduction: no mask, no any(); 4x64: 2 us against 7; NumPy's ufunc reduction itself,
    # not the array method and its Python wrapper)
    if not e.size or (_min_reduce(e, None) if e.__class__ is _ndarray else e.min()) >= 0:
        return _pow(input, exponent)
    neg = e < 0
    xp = array_module(e)
    r = _pow(input, _make(xp.where(neg, 0, e)))._data
    b = input._data if input.__class__ is Tensor else xp.asarray(input)
    odd = (e & 1).astype(bool)
    small = xp.where(b == 1, 1, xp.where(b == -1, xp.where(odd, -1, 1), 0)).astype(r.dtype)
    return _make(xp.where(neg, small, r))


def pow_(input, exponent):
    if exponent.__class__ is Tensor and exponent._data.dtype.kind == "i" and \
            input.__class__ is Tensor and input._data.dtype.kind in "iu":
        r = _int_pow(input, exponent)
        _check_out_shape("pow_", r._data, input._data.shape)
        return copy_(input, r)
    return _pow_(input, exponent)


@with_out(casting="no")
def float_power(input: Tensor | float, exponent: Tensor | float):
    """Power computed in float64 (the result is float64 whatever the input dtypes).

    >>> float_power(tensor([2]), 2)
    tensor([4.], dtype=ember.float64)
    """
    wide = D.float64
    for t in (input, exponent):
        if isinstance(t, complex) or (isinstance(t, Tensor) and t._data.dtype.kind == "c"):
            wide = D.complex128
    w = wide.np  # (a tensor already of the dtype is used as it is, as ``to`` returns it; the
    # others are ``to``'s copy, without its argument parsing)
    if isinstance(input, Tensor) and input._data.dtype != w:
        input = _to_copy(input, None, wide)
    if isinstance(exponent, Tensor) and exponent._data.dtype != w:
        exponent = _to_copy(exponent, None, wide)
    return _pow(input, exponent)


# ---------------------------------------------------------------------------------- compare
def _compare(name: str, ufunc_name: str, doc: str, complex_ok: bool = True):
    npf = getattr(np, ufunc_name)
    if name.startswith("logical_"):  # NumPy's bool loop on operands cast to bool (nonzero:
        # NaN is true), vectorized; its loops for other dtypes are scalar (5x slower)
        def npf(a, b, _f=npf):
            return _f(a, b, signature=_BOOL3, casting="unsafe")

    def impl(input, other):
        da, db, dt = _operands(input, other, name)
        if not complex_ok and dt.kind == "c":  # PyTorch orders no complex numbers
            raise not_implemented(name, dt)
        xp = _xp2(da, db)
        f = npf if xp is np else getattr(xp, ufunc_name)
        try:  # comparisons are quiet (NaN included): no error state to set
            return _make(f(da, db))
        except ValueError:
            raise _broadcast_error(name, da, db) from None

    def impl_(input, other):
        da, db, dt = _operands(input, other, name)
        if not complex_ok and dt.kind == "c":
            raise not_implemented(name + "_", dt)
        xp = _xp2(da, db)
        f = npf if xp is np else getattr(xp, ufunc_name)
        _check_out_shape(name + "_", db, input._data.shape)
        _check_inplace(input, name + "_")
        input._data[...] = f(da, db)
        input._bump()
        return input

    impl.__name__, impl.__doc__ = name, doc
    impl_.__name__ = name + "_"
    return (defop(name, differentiable=False, out=True)(impl),
            defop(name + "_", differentiable=False, inplace=True)(impl_))


eq, eq_ = _compare("eq", "equal", """Elementwise ``==`` (bool result).

    >>> eq(tensor([1, 2]), 2)
    tensor([False,  True])
    """)
ne, ne_ = _compare("ne", "not_equal", "Elementwise ``!=``.")
lt, lt_ = _compare("lt", "less", "Elementwise ``<``.", complex_ok=False)
le, le_ = _compare("le", "less_equal", "Elementwise ``<=``.", complex_ok=False)
gt, gt_ = _compare("gt", "greater", "Elementwise ``>``.", complex_ok=False)
ge, ge_ = _compare("ge", "greater_equal", "Elementwise ``>=``.", complex_ok=False)
logical_and, logical_and_ = _compare("logical_and", "logical_and", "Elementwise logical AND.")
logical_or, logical_or_ = _compare("logical_or", "logical_or", "Elementwise logical OR.")
logical_xor, logical_xor_ = _compare("logical_xor", "logical_xor", "Elementwise logical XOR.")
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


_BOOL3 = (np.bool_, np.bool_, np.bool_)
_BOOL2 = _BOOL3[:2]


@defop("logical_not", differentiable=False, out=True)
def logical_not(input: Tensor) -> Tensor:
    """Elementwise logical NOT (bool result)."""
    d = input._data
    if d.__class__ is _ndarray:  # the bool loop on the operand cast to bool (as above)
        return _make(np.logical_not(d, signature=_BOOL2, casting="unsafe"))
    return _make(array_module(d).logical_not(d))


@defop("bitwise_not", differentiable=False, out=True)
def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise bitwise NOT (``~``); logical NOT for bools."""
    if input.dtype.is_floating_point:
        raise not_implemented("bitwise_not", input._data.dtype)
    return _make(array_module(input._data).invert(input._data))


@defop("isnan", differentiable=False)
def isnan(input: Tensor) -> Tensor:
    """Elementwise NaN test."""
    return _make(array_module(input._data).isnan(input._data))


@defop("isinf", differentiable=False)
def isinf(input: Tensor) -> Tensor:
    """Elementwise infinity test."""
    return _make(array_module(input._data).isinf(input._data))


@defop("isfinite", differentiable=False)
def isfinite(input: Tensor) -> Tensor:
    """Elementwise finiteness test."""
    return _make(array_module(input._data).isfinite(input._data))


@defop("isclose", differentiable=False)
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """Elementwise ``|a - b| <= atol + rtol * |b|``."""
    if isinstance(input, Tensor) and isinstance(other, Tensor) and \
            input._data.dtype != other._data.dtype:
        raise RuntimeError(f"isclose(): {scalar_type_name(input._data.dtype)} did not match "
                           f"{scalar_type_name(other._data.dtype)}")
    da, db, _ = _operands(input, other, "isclose")
    return _make(_xp2(da, db).isclose(da, db, rtol=rtol, atol=atol, equal_nan=equal_nan))


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    """True when every element is close (see :func:`isclose`)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    if input.shape != other.shape:
        return False
    return bool(eq(input, other).all())


# ---------------------------------------------------------------------------------- unary
def _sigmoid(xp, d):
    if d.dtype.kind == "c":
        return 1 / (1 + xp.exp(-d))
    return _kernel("sigmoid", xp)(d)  # from exp(-|x|): no overflow, accurate in both tails


# 1 / x of real floats: NumPy's divide loop vectorizes, its reciprocal loop does not (float32
# 256x1024: 29 us against 56); the same correctly rounded quotient. The 1 is a 0-d array of
# x's dtype on the CPU (a Python number costs NumPy's scalar handling: 0.3 us a call)
_ONES = {c: np.ones((), c) for c in "efd"}


def _reciprocal(xp, d):
    one = _ONES.get(d.dtype.char)
    if one is None:  # complex
        return xp.reciprocal(d)
    return xp.divide(one if xp is np else 1, d)


def _rsqrt(xp, d):
    if d.dtype.char in "fd":
        return _special_kernels.rsqrt(xp, d)  # (one pass on the CPU)
    r = xp.sqrt(d)
    if r.__class__ is not xp.ndarray:  # (0-d: a NumPy scalar)
        return _reciprocal(xp, r)
    one = _ONES.get(r.dtype.char)  # (into sqrt's result: one allocation)
    return xp.reciprocal(r, out=r) if one is None else xp.divide(one if xp is np else 1, r,
                                                                   out=r)


def _frac(xp, d):
    if d.dtype.kind in "biu":  # PyTorch: floats only
        raise not_implemented("frac", d.dtype)
    if d.dtype.char in "fd":
        return _kernel("frac", xp)(d)  # (one pass where NumPy's trunc and subtract make two)
    t = xp.trunc(d)
    if t.__class__ is not xp.ndarray:  # (0-d: a NumPy scalar)
        return d - t
    return xp.subtract(d, t, out=t)  # (into trunc's result: one allocation)


def _sign(xp, d):
    if d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        return _kernel("sign", xp)(d)  # (NumPy's float loop is scalar)
    return xp.sign(d) if d.dtype.kind != "b" else d.copy()


def _no_bool(op: str, d) -> None:
    if d.dtype.kind == "b":
        raise NotImplementedError(f"{op}(): not implemented for 'Bool' tensors")


def _no_complex(op: str, d) -> None:
    if op.startswith("sign"):
        raise RuntimeError(f"{op}(): Unlike NumPy, torch.sign is not intended to support "
                           "complex numbers. Please use torch.sgn instead.")
    raise not_implemented(op, d.dtype)


def _abs(xp, d):
    _no_bool("abs", d)
    return xp.abs(d)


def _neg(xp, d):
    if d.dtype.kind == "b":
        raise RuntimeError("neg(): Negation, the `-` operator, on a bool tensor is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")
    return xp.negative(d)


def _square(xp, d):
    return xp.square(d.astype(np.int64) if d.dtype.kind == "b" else d)


def _round_int(fn):
    def f(xp, d):
        _no_bool(fn, d)
        return d.copy() if d.dtype.kind in "iu" else getattr(xp, fn)(d)
    return f


_FLOAT_UNARY = {
    # name: (implementation over (xp, array) or ufunc name, description)
    "exp": ("exp", "e to the power of each element"),
    "exp2": ("exp2", "2 to the power of each element"),
    "log": ("log", "natural logarithm"),
    "log1p": ("log1p", "log(1 + x), accurate near zero"),
    "expm1": ("expm1", "exp(x) - 1, accurate near zero"),
    "log2": ("log2", "base-2 logarithm"),
    "log10": ("log10", "base-10 logarithm"),
    "sqrt": ("sqrt", "square root"),
    "rsqrt": (_rsqrt, "reciprocal of the square root"),
    "reciprocal": (_reciprocal, "1 / x"),
    "sin": ("sin", "sine"), "cos": ("cos", "cosine"), "tan": ("tan", "tangent"),
    "asin": ("arcsin", "arcsine"), "acos": ("arccos", "arccosine"),
    "atan": ("arctan", "arctangent"),
    "sinh": ("sinh", "hyperbolic sine"), "cosh": ("cosh", "hyperbolic cosine"),
    "tanh": ("tanh", "hyperbolic tangent"),
    "asinh": ("arcsinh", "inverse hyperbolic sine"),
    "acosh": ("arccosh", "inverse hyperbolic cosine"),
    "atanh": ("arctanh", "inverse hyperbolic tangent"),
    "sigmoid": (_sigmoid, "logistic sigmoid 1 / (1 + exp(-x)), computed without overflow"),
    "erf": (_special_kernels.erf, "the error function"),
    "erfc": (_special_kernels.erfc, "the complementary error function 1 - erf(x)"),
    "erfinv": (_special_kernels.erfinv, "the inverse error function"),
}
_SAME_UNARY = {
    "neg": (_neg, "negation (unary ``-``)"),
    "abs": (_abs, "absolute value"),
    "floor": (_round_int("floor"), "round down"),
    "ceil": (_round_int("ceil"), "round up"),
    "trunc": (_round_int("trunc"), "round toward zero"),
    "frac": (_frac, "fractional part x - trunc(x)"),
    "sign": (_sign, "sign (-1, 0 or 1)"),
    "square": (_square, "x * x"),
}
# no complex kernels in PyTorch (``sign`` has ``sgn`` for complex numbers)
_REAL_UNARY = {"erf", "erfc", "erfinv", "floor", "ceil", "trunc", "frac", "sign"}


# functions that cannot overflow, divide by zero or leave their domain, and erfinv (its
# compiled loops raise no floating-point flag at +-1 or outside): no errstate needed
_NEVER_WARN = {"tanh", "atan", "asinh", "sigmoid", "erf", "erfc", "erfinv", "neg", "abs",
               "floor", "ceil", "trunc", "sign"}


def _on_distinct(compute, xp, d, quiet: bool, *rest):
    """``compute(xp, d, *rest)`` of an elementwise op for ``d`` with zero strides (an expanded
    array, as the gradient ``sum`` hands back): computed on one element per run of aliases and
    broadcast into a new array. NumPy's loops over a zero stride are scalar, five times the
    time of a contiguous pass at 256x1024; the broadcast copy is one."""
    c = d[tuple([slice(0, 1) if s == 0 else _ALL for s in d.strides])]
    r = _quiet_call(compute, xp, c, *rest) if quiet else compute(xp, c, *rest)
    out = xp.empty(d.shape, r.dtype)  # (broadcast_to builds its view in Python: 5 us on a
    out[...] = r  # small array, where the assignment broadcasts in C)
    return out


_ALL = slice(None)


def _by_number(xp, d, f, other):
    return f(d, other)


def _unary(name: str, fn, desc: str, float_out: bool):
    if isinstance(fn, str):
        ufunc_name = fn
        npf = getattr(np, ufunc_name)

        def compute(xp, d):
            return (npf if xp is np else getattr(xp, ufunc_name))(d)
    else:
        compute = fn
    default = D._default
    quiet = name not in _NEVER_WARN
    real_only = name in _REAL_UNARY

    def impl(input: Tensor):
        d = input._data
        xp = np if isinstance(d, _ndarray) else array_module(d)
        kind = d.dtype.kind
        if real_only and kind == "c":
            _no_complex(name, d)
        if float_out and kind not in "fc":
            if d.dtype == _BF16:  # computed in float32, rounded once
                with _quiet():
                    return _make(xp.asarray(compute(xp, d.astype(_F32))).astype(_BF16))
            d = d.astype(default[0].np)
        if d.base is not None and 0 in d.strides:  # expanded (sum's gradient): once per
            # distinct element (a view; a fresh array is never expanded)
            return _make(_on_distinct(compute, xp, d, quiet))
        if quiet:  # (quiet_call's two steps here: no wrapper call)
            token = _quiet_begin()
            try:
                r = compute(xp, d)
            finally:
                _quiet_end(token)
        else:
            r = compute(xp, d)
        t = object.__new__(Tensor)  # (a NumPy scalar from a 0-d array: made an array)
        t._data = r if r.__class__ is _ndarray else xp.asarray(r)
        return t

    def impl_(input: Tensor):
        d = input._data
        if real_only and d.dtype.kind == "c":
            _no_complex(name + "_", d)
        if float_out and d.dtype.kind not in "fc":
            _check_cast(name + "_", default[0].np, d.dtype)
        _check_inplace(input, name + "_")
        xp = np if isinstance(d, _ndarray) else array_module(d)
        with _quiet():
            d[...] = compute(xp, d.astype(_F32) if d.dtype == _BF16 else d)
        input._bump()
        return input

    impl.__name__, impl_.__name__ = name, name + "_"
    impl.__doc__ = (f"Elementwise {desc}.\n\n    >>> {name}(tensor([0.5, 1.0])).shape\n"
                    "    ember.Size([2])\n")
    impl_.__doc__ = f"In-place :func:`{name}`."
    return defop(name, out=True)(impl), defop(name + "_", inplace=True)(impl_)


_g = globals()
for _name, (_fn, _desc) in _FLOAT_UNARY.items():
    _g[_name], _g[_name + "_"] = _unary(_name, _fn, _desc, True)
for _name, (_fn, _desc) in _SAME_UNARY.items():
    _g[_name], _g[_name + "_"] = _unary(_name, _fn, _desc, False)
negative, negative_, absolute, absolute_ = neg, neg_, abs, abs_  # noqa: F821
arcsin, arccos, arctan, arcsinh, arccosh, arctanh = asin, acos, atan, asinh, acosh, atanh  # noqa: F821
fix = trunc  # noqa: F821


@defop("round", out=True)
def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round half to even (optionally to ``decimals`` places).

    >>> round(tensor([0.5, 1.5, 2.567]), decimals=0)
    tensor([0., 2., 3.])
    """
    d = input._data
    _no_bool("round", d)
    if d.dtype.kind == "c":
        _no_complex("round", d)
    if d.dtype.kind in "iu":
        if decimals:  # PyTorch rounds integers to decimal places for no integer type
            raise not_implemented("round", d.dtype)
        return _make(d.copy())
    if decimals and d.dtype.char in "fd":  # (one pass where NumPy's round makes three)
        return _make(_kernel("round_decimals", np if d.__class__ is _ndarray else
                             array_module(d))(d, decimals))
    return _make(d.round(decimals))


@defop("round_", inplace=True)
def round_(input: Tensor, *, decimals: int = 0) -> Tensor:
    """In-place :func:`round`."""
    return _write(input, round.op.impl(input, decimals=decimals)._data, "round_")




@defop("relu")
def relu(input: Tensor) -> Tensor:
    """``max(x, 0)`` elementwise (NaN stays NaN).

    >>> relu(tensor([-1., 0., 2.]))
    tensor([0., 0., 2.])
    """
    d = input._data
    kind = d.dtype.kind
    if kind == "b":  # PyTorch's own check, before any kernel
        raise RuntimeError("relu(): Boolean inputs not supported for relu")
    if kind == "c":
        _no_complex("relu", d)
    if kind == "f":  # clip vectorizes; maximum against a scalar does not (and clip keeps
        # -0.0 as PyTorch's relu does); NumPy's ufunc itself, not the array method's wrapper
        return _make(_clip(d, 0.0, _INF) if d.__class__ is _ndarray else d.clip(0.0, _INF))
    return _make(array_module(d).maximum(d, d.dtype.type(0)))


@defop("relu_", inplace=True)
def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`."""
    d = input._data
    _check_inplace(input, "relu_")
    if d.dtype.kind == "f":
        d.clip(0.0, _INF, out=d)
    else:
        array_module(d).maximum(d, d.dtype.type(0), out=d)
    input._bump()
    return input


# ------------------------------------------------------------------- backward primitives
# The derivatives of tanh, sigmoid and relu read their output; each is one fused op (PyTorch's
# aten ``*_backward`` ops) so a backward pass runs one op per node instead of two or three.
# They are registry ops with derivatives of their own, so double backward goes through them.
def _grad_operands(g: Tensor, y: Tensor, op: str):
    """The arrays of a gradient and an output, in one dtype on one device."""
    dg, dy = g._data, y._data
    if dg.__class__ is _ndarray and dy.__class__ is _ndarray and dg.dtype == dy.dtype:
        return dg, dy
    return _operands(g, y, op)[:2]


@defop("tanh_backward")
def _tanh_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    """``grad_output * (1 - output**2)``: the gradient of tanh from its output."""
    g, y = _grad_operands(grad_output, output, "tanh_backward")
    if g.dtype.kind == "c":
        return _make(g * (1 - y * y))
    return _make(_kernel("tanh_backward", array_module(g))(g, y))


@defop("sigmoid_backward")
def _sigmoid_backward(grad_output: Tensor, output: Tensor) -> Tensor:
    """``grad_output * output * (1 - output)``: the gradient of sigmoid from its output."""
    g, y = _grad_operands(grad_output, output, "sigmoid_backward")
    if g.dtype.kind == "c":
        return _make(g * (y * (1 - y)))
    return _make(_kernel("sigmoid_backward", array_module(g))(g, y))


@defop("threshold_backward")
def _threshold_backward(grad_output: Tensor, output: Tensor, threshold) -> Tensor:
    """0 where ``output <= threshold``, else ``grad_output``: the gradient of relu and
    threshold (a NaN output passes its gradient, as in PyTorch). One kernel for floats."""
    g, y = _grad_operands(grad_output, output, "threshold_backward")
    if g.dtype.kind in "fV":
        return _make(_kernel("threshold_backward", array_module(g))(g, y, threshold))
    return _make(g * (y > threshold))  # integers and bool: no NaN, no infinity


@defop("clamp", out=True)
def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Clamp every element into ``[min, max]`` (either bound may be None or a tensor).

    >>> clamp(tensor([-2., 0., 2.]), min=-1, max=1)
    tensor([-1.,  0.,  1.])
    """
    d = input._data
    dt = d.dtype
    lo, hi = min, max
    if lo.__class__ not in _PLAIN_BOUND or hi.__class__ not in _PLAIN_BOUND or dt.kind != "f":
        if min is None and max is None:
            raise RuntimeError("clamp(): At least one of 'min' or 'max' must not be None")
        lo = min._data if isinstance(min, Tensor) else min
        hi = max._data if isinstance(max, Tensor) else max
        # bounds missing or arrays of x's dtype (a number has no dtype: None is never one)
        own = (lo is None or getattr(lo, "dtype", None) is dt) and \
            (hi is None or getattr(hi, "dtype", None) is dt)
        if not own:
            # PyTorch's promotion (a float tensor keeps its dtype with Python-number bounds)
            dt = D.result_type(input, min, max).np  # (None is skipped)
            d = d.astype(dt, copy=False)
            own = _bound_of(lo, dt) and _bound_of(hi, dt)
        if dt.char in "fd" and own:
            # float32 / float64 tensor bounds of x's dtype: one pass of the device's kernel
            # (a missing bound is an infinity)
            xp = np if d.__class__ is _ndarray else array_module(d)
            return _make(_special_kernels.clamp(
                xp, d, xp.asarray(-_INF, dt) if lo is None else lo,
                xp.asarray(_INF, dt) if hi is None else hi))
        if dt.kind == "c":
            _no_complex("clamp", np.empty(0, dt))
    if dt.kind in "fiu" and lo.__class__ in _PLAIN_BOUND and hi.__class__ in _PLAIN_BOUND:
        # number bounds: one pass of clip, whose vectorized loop needs both bounds (a missing
        # one is the dtype's extreme; NumPy's maximum/minimum against a scalar do not
        # vectorize: about 3x slower at 256x1024); min > max gives max everywhere, as in
        # PyTorch
        if lo is None:
            if hi is None:
                raise RuntimeError("clamp(): At least one of 'min' or 'max' must not be None")
            lo = -_INF if dt.kind == "f" else int_bounds(dt)[0]
        elif hi is None:
            hi = _INF if dt.kind == "f" else int_bounds(dt)[1]
        if dt.kind == "f" and d.__class__ is _ndarray:  # the ufunc itself: the array's clip
            return _make(_clip(d, lo, hi))  # method adds a Python wrapper (integer bounds)
        return _make(d.clip(lo, hi).astype(dt, copy=False))
    # other tensor bounds: maximum then minimum (clip with broadcast array bounds takes
    # NumPy's generic loop: 2.5x slower at 256x1024), the second into the first's result; NaN
    # in x or a bound propagates
    xp = np if d.__class__ is _ndarray else array_module(d)
    out = d if lo is None else xp.maximum(d, lo)
    if hi is not None:
        try:
            out = xp.minimum(out, hi) if out is d or isinstance(out, np.generic) else \
                xp.minimum(out, hi, out=out)  # (into the first pass's result)
        except ValueError:  # the upper bound broadcasts the result further
            out = xp.minimum(out, hi)
    return _make(xp.asarray(out).astype(dt, copy=False))


def _bound_of(b, dt) -> bool:
    """Is the clamp bound ``b`` missing or an array of dtype ``dt``? (A Python number is
    not: NumPy's float64 dtype compares equal to None, which getattr(b, "dtype", None) gives
    for a number.)"""
    return b is None or (hasattr(b, "dtype") and b.dtype == dt)


_INF = float("inf")
_PLAIN_BOUND = (float, int, type(None))
_clip = np._core.umath.clip
@defop("clamp_", inplace=True)
def clamp_(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """In-place :func:`clamp`."""
    return _write(input, clamp.op.impl(input, min, max)._data, "clamp_")


clip, clip_ = clamp, clamp_


def clamp_min(input: Tensor, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input: Tensor, max):  # noqa: A002
    return clamp(input, max=max)


@defop("where", out=True)
def _where(condition: Tensor, input, other) -> Tensor:
    c = condition._data
    if c.dtype.kind != "b":
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {condition.dtype}")
    it, ot = isinstance(input, Tensor), isinstance(other, Tensor)
    if not (it or ot):  # two numbers
        input, it = tensor(input, device=condition.device), True
    da, db, dt = _operands(input, other, "where")
    if it and ot:
        if not (c.__class__ is _ndarray and da.__class__ is _ndarray and
                db.__class__ is _ndarray):  # (three CPU arrays: one device)
            _check_same_device("where", c, input._data, other._data)
    elif it:  # a number must fit the result's dtype, as in PyTorch
        _check_same_device("where", c, input._data)
        db = checked_scalar("where", other, dt)
    else:
        _check_same_device("where", c, other._data)
        da = checked_scalar("where", input, dt)
    xp = np if c.__class__ is _ndarray else array_module(c)  # every operand's device
    if xp is not np:  # the numbers, as 0-d arrays of the result's dtype on the device
        da, db = xp.asarray(da), xp.asarray(db)
    if dt == _BF16:  # NumPy would widen bfloat16 with a Python scalar
        return _make(xp.where(c, da, db).astype(_BF16, copy=False))
    return _make(xp.where(c, da, db))


@with_out(casting="no")
def where(condition: Tensor, input=None, other=None):
    """Elementwise select: ``input`` where ``condition`` holds, else ``other``; with only a
    condition, the indices of its nonzero elements as a tuple (like ``nonzero(as_tuple=True)``).

    >>> where(tensor([True, False]), tensor([1, 2]), tensor([3, 4]))
    tensor([1, 4])
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    return _where(condition, input, other)


@defop("lerp", out=True)
def lerp(input: Tensor, end: Tensor, weight) -> Tensor:
    """Linear interpolation ``input + weight * (end - input)``.

    >>> lerp(tensor([0., 10.]), tensor([10., 20.]), 0.5)
    tensor([ 5., 15.])
    """
    if not isinstance(input, Tensor) or not isinstance(end, Tensor):
        raise TypeError(f"lerp(): input and end must be Tensors, got "
                        f"{type(input).__name__} and {type(end).__name__}")
    if weight.__class__ is float:
        w = weight
    elif isinstance(weight, Tensor):
        w = weight._data
        if w.dtype != input._data.dtype:
            raise RuntimeError(f"lerp(): expected dtype {input.dtype} for `weight` but got "
                               f"dtype {weight.dtype}")
    elif isinstance(weight, numbers.Number) and not isinstance(weight, bool):
        w = weight
    else:
        raise TypeError(f"lerp(): weight must be a Tensor or a number, got "
                        f"{type(weight).__name__}")
    a, b = input._data, end._data
    if a.dtype != b.dtype:
        raise RuntimeError(f"lerp(): expected dtype {input.dtype} for `end` but got dtype "
                           f"{end.dtype}")
    if a.dtype.kind not in "fc" and a.dtype != _BF16:
        raise NotImplementedError(f"lerp(): not implemented for {input.dtype}")
    try:  # (input and end share a dtype: it is the result's)
        if a.dtype.char in "fd" and (w.__class__ is float or w.__class__ is int or
                                     w.__class__ is a.__class__):  # (w keeps the dtype)
            return _make(_special_kernels.lerp(array_module(a), a, b, w))  # one pass
        return _make((a + w * (b - a)).astype(a.dtype, copy=False))
    except ValueError:  # which operands do not broadcast, for the message
        try:
            ab = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise _broadcast_error("lerp", a, b) from None
        raise _broadcast_error("lerp", np.broadcast_to(np.zeros(()), ab), w) from None


@defop("lerp_", inplace=True)
def lerp_(input: Tensor, end: Tensor, weight) -> Tensor:
    """In-place :func:`lerp`."""
    return _write(input, lerp.op.impl(input, end, weight)._data, "lerp_")


def _addc(name: str, input, tensor1, tensor2, value, div: bool) -> Tensor:
    """``input + value * tensor1 * tensor2`` (``/`` where ``div``): one pass of the device's
    kernel for float32 / float64 tensors of one dtype and a Python number ``value``; other
    operands through ``mul`` (or ``div``) and ``add``, whose promotion and errors they are."""
    if input.__class__ is Tensor and tensor1.__class__ is Tensor and \
            tensor2.__class__ is Tensor and (value.__class__ is float or value.__class__ is int):
        x, a, b = input._data, tensor1._data, tensor2._data
        dt = x.dtype
        if dt.char in "fd" and a.dtype == dt and b.dtype == dt and \
                x.__class__ is a.__class__ is b.__class__:  # (one device)
            xp = np if x.__class__ is _ndarray else array_module(x)
            try:
                return _make(getattr(_special_kernels, name)(xp, x, a, b, value))
            except ValueError:
                pass  # operands that do not broadcast: the steps below name them
    if div:
        _check_addcdiv(tensor1, tensor2)
    q = (true_divide if div else mul).op.impl(tensor1, tensor2)
    return _add_plain.op.impl(input, q if value == 1 else mul.op.impl(q, value))


@defop("addcmul", out=True)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 * tensor2``.

    >>> addcmul(tensor([1.]), tensor([2.]), tensor([3.]), value=2)
    tensor([13.])
    """
    return _addc("addcmul", input, tensor1, tensor2, value, False)


@defop("addcdiv", out=True)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """``input + value * tensor1 / tensor2``.

    >>> addcdiv(tensor([1.]), tensor([2.]), tensor([4.]), value=2)
    tensor([2.])
    """
    return _addc("addcdiv", input, tensor1, tensor2, value, True)


def _check_addcdiv(tensor1, tensor2) -> None:
    if not isinstance(tensor1, Tensor) or not isinstance(tensor2, Tensor):
        raise TypeError(f"addcdiv(): tensor1 and tensor2 must be Tensors, got "
                        f"{type(tensor1).__name__} and {type(tensor2).__name__}")
    if tensor1._data.dtype.kind in "biu" and tensor2._data.dtype.kind in "biu":
        raise RuntimeError("addcdiv(): Integer division with addcdiv is no longer supported: "
                           "use addcdiv(input, tensor1.float(), tensor2) for true division or "
                           "input + value * (tensor1 // tensor2) for floor division")


@defop("addcmul_", inplace=True)
def addcmul_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcmul`."""
    return _addc_inplace("addcmul_", input, addcmul.op.impl(input, tensor1, tensor2,
                                                             value=value))


@defop("addcdiv_", inplace=True)
def addcdiv_(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:
    """In-place :func:`addcdiv`."""
    return _addc_inplace("addcdiv_", input, addcdiv.op.impl(input, tensor1, tensor2,
                                                             value=value))


def _addc_inplace(name: str, input: Tensor, r: Tensor) -> Tensor:
    """Write the result ``r`` of an ``addc*`` into ``input`` (its dtype and shape must take
    it, as ``add_``'s)."""
    _check_cast(name, r._data.dtype, input._data.dtype)
    _check_out_shape(name, r._data, input._data.shape)
    return _write(input, r._data, name)


# ---------------------------------------------------------------------------------- copies
@defop("copy_", inplace=True)
def copy_(input: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy ``src`` (broadcast, cast, moved across devices) into ``input`` in place."""
    s = src._data if isinstance(src, Tensor) else src
    d = input._data
    if hasattr(s, "shape") and type(s) is not type(d):
        s = _on(s, input.device)
    return _write(input, s, "copy_")


@defop("fill_", inplace=True)
def fill_(input: Tensor, value) -> Tensor:
    """Fill with a scalar (or a one-element tensor) in place."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        value = value._data.reshape(())
    elif isinstance(value, (numbers.Number, np.generic)):
        value = checked_scalar("fill_", value, input._data.dtype)
    return _write(input, value, "fill_")


@defop("zero_", inplace=True)
def zero_(input: Tensor) -> Tensor:
    """Fill with zeros in place."""
    return _write(input, 0, "zero_")


def _masked_fill_args(op: str, input: Tensor, mask: Tensor, value):
    """The mask's array and the fill value (a 0-d tensor's array, or a number converted to
    the input's dtype), checked as PyTorch does."""
    m = mask._data
    _check_same_device(op, input._data, m)
    if m.dtype.kind != "b":
        raise RuntimeError(f"{op} only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.dim()} dimension(s).")
        return m, value._data
    return m, checked_scalar(op, value, input._data.dtype)


@defop("masked_fill_", inplace=True)
def masked_fill_(input: Tensor, mask: Tensor, value) -> Tensor:
    """Fill ``value`` where ``mask`` is True, in place."""
    m, value = _masked_fill_args("masked_fill_", input, mask, value)
    d = input._data
    shape = d.shape
    if m.shape != shape:  # (NumPy's broadcast_shapes costs ~1 us: only where the shapes differ)
        try:
            shape = np.broadcast_shapes(m.shape, d.shape)
        except ValueError:
            shape = None
    if shape != d.shape:
        raise RuntimeError(f"masked_fill_(): The size of mask {list(m.shape)} must be "
                           f"broadcastable to the size of input {list(d.shape)}")
    _check_inplace(input, "masked_fill_")
    xp = array_module(d)
    xp.copyto(d, xp.asarray(value, dtype=d.dtype) if hasattr(value, "shape") else value,
              where=m, casting="unsafe")
    input._bump()
    return input


@defop("masked_fill")
def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """A copy of ``input`` with ``value`` where ``mask`` is True.

    >>> masked_fill(tensor([1., 2.]), tensor([True, False]), 0.)
    tensor([0., 2.])
    """
    m, v = _masked_fill_args("masked_fill", input, mask, value)
    d = input._data
    xp = array_module(d)
    return _make(xp.where(m, xp.asarray(v, dtype=d.dtype), d))



# ------------------------------------------------------------------ more elementwise ops
# PyTorch's alias names and in-place aliases of the ops above
arctan2, arctan2_ = atan2, atan2_
arccos_, arccosh_, arcsin_, arcsinh_ = acos_, acosh_, asin_, asinh_  # noqa: F821
arctan_, arctanh_, fix_ = atan_, atanh_, trunc_  # noqa: F821
greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_


def _elementwise(op: str, input, other, compute, kinds: str, float_result: bool = False,
                 other_name: str | None = None):
    """``compute(xp, a, b)`` on the operands of a binary op cast to PyTorch's result dtype
    (bfloat16 computed in float32); ``kinds``: the dtype kinds it has a kernel for;
    ``other_name``: the second argument must be a tensor (PyTorch's TypeError otherwise).
    A ``compute`` that can raise a floating-point flag quiets NumPy itself (most never do,
    and the error state costs as much as a small op). Returns ``(array, dtype)``."""
    if other.__class__ is Tensor and input.__class__ is Tensor:
        da, db = input._data, other._data  # two CPU arrays of one dtype: the operands as they
        dt = da.dtype  # are (what _operands would give them, at a third of a 4x64 call)
        if not (da.__class__ is _ndarray and db.__class__ is _ndarray and dt == db.dtype):
            da, db, dt = _operands(input, other, op, float_result)
        elif float_result and dt.kind not in "fc":
            da, db, dt = _operands(input, other, op, True)
    elif other_name is not None and not isinstance(other, Tensor):
        raise TypeError(f"{op}(): argument '{other_name}' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    else:
        da, db, dt = _operands(input, other, op, float_result)
    if dt.kind not in kinds:  # bfloat16 (kind "V") is computed in float32
        if dt != _BF16 or "f" not in kinds:
            raise not_implemented(op, dt)
        da = da.astype(_F32) if hasattr(da, "shape") else da
        db = db.astype(_F32) if hasattr(db, "shape") else db
    xp = _xp2(da, db)
    try:
        r = compute(xp, da, db)
    except ValueError:
        raise _broadcast_error(op, da, db) from None
    # (a NumPy scalar from 0-d operands: _make wraps it)
    return (r if r.dtype == dt else r.astype(dt)), dt


def _elementwise_(op: str, input: Tensor, other, compute, kinds: str,
                  float_result: bool = False, other_name: str | None = None) -> Tensor:
    """The in-place form of :func:`_elementwise`, written into ``input``."""
    r, dt = _elementwise(op, input, other, compute, kinds, float_result, other_name)
    _check_cast(op, dt, input._data.dtype)
    _check_out_shape(op, r, input._data.shape)
    _check_inplace(input, op)
    input._data[...] = r
    input._bump()
    return input


def _shift(left: bool):
    def compute(xp, a, b):
        # PyTorch: a shift by a negative amount or by the width or more gives 0 (-1 for a
        # negative number shifted right); NumPy's shifts agree, for in-range amounts too
        return xp.left_shift(a, b) if left else xp.right_shift(a, b)
    return compute


_lshift, _rshift = _shift(True), _shift(False)


@defop("bitwise_left_shift", differentiable=False, out=True)
def bitwise_left_shift(input, other) -> Tensor:
    """``input << other`` elementwise (integer tensors).

    >>> bitwise_left_shift(tensor([1, 2, 3]), 2)
    tensor([ 4,  8, 12])
    """
    return _make(_elementwise("bitwise_left_shift", input, other, _lshift, "iu")[0])


@defop("bitwise_left_shift_", differentiable=False, inplace=True)
def bitwise_left_shift_(input: Tensor, other) -> Tensor:
    """In-place :func:`bitwise_left_shift`."""
    return _elementwise_("bitwise_left_shift_", input, other, _lshift, "iu")


@defop("bitwise_right_shift", differentiable=False, out=True)
def bitwise_right_shift(input, other) -> Tensor:
    """``input >> other`` elementwise (integer tensors; arithmetic shift).

    >>> bitwise_right_shift(tensor([-8, 8]), 1)
    tensor([-4,  4])
    """
    return _make(_elementwise("bitwise_right_shift", input, other, _rshift, "iu")[0])


@defop("bitwise_right_shift_", differentiable=False, inplace=True)
def bitwise_right_shift_(input: Tensor, other) -> Tensor:
    """In-place :func:`bitwise_right_shift`."""
    return _elementwise_("bitwise_right_shift_", input, other, _rshift, "iu")


def _copysign(xp, a, b):
    return _kernel("copysign", xp)(a, b)


@defop("copysign", out=True)
def copysign(input: Tensor, other) -> Tensor:
    """The magnitude of ``input`` with the sign of ``other`` (integers give the default
    float dtype).

    >>> copysign(tensor([1., -2.]), -1)
    tensor([-1., -2.])
    """
    return _make(_elementwise("copysign", input, other, _copysign, "biuf", True)[0])


@defop("copysign_", inplace=True)
def copysign_(input: Tensor, other) -> Tensor:
    """In-place :func:`copysign`."""
    return _elementwise_("copysign_", input, other, _copysign, "biuf", True)


def _gcd(xp, a, b):
    return xp.gcd(a, b)


def _lcm(xp, a, b):
    return xp.lcm(a, b)


@defop("gcd", differentiable=False, out=True)
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor, elementwise (integer tensors; non-negative).

    >>> gcd(tensor([4, -6, 0]), tensor([6, 4, 0]))
    tensor([2, 2, 0])
    """
    return _make(_elementwise("gcd", input, other, _gcd, "iu", other_name="other")[0])


@defop("gcd_", differentiable=False, inplace=True)
def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`gcd`."""
    return _elementwise_("gcd_", input, other, _gcd, "iu", other_name="other")


@defop("lcm", differentiable=False, out=True)
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple, elementwise (integer tensors; non-negative).

    >>> lcm(tensor([4, 3]), tensor([6, 5]))
    tensor([12, 15])
    """
    return _make(_elementwise("lcm", input, other, _lcm, "iu", other_name="other")[0])


@defop("lcm_", differentiable=False, inplace=True)
def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`lcm`."""
    return _elementwise_("lcm_", input, other, _lcm, "iu", other_name="other")


def _heaviside_operands(op: str, input, values) -> None:
    if isinstance(input, Tensor) and isinstance(values, Tensor) and \
            input._data.dtype != values._data.dtype:
        raise RuntimeError(f"{op}(): heaviside is not yet implemented for tensors with "
                           "different dtypes.")


def _heaviside(xp, a, b):
    if hasattr(a, "shape") and hasattr(b, "shape") and a.dtype.char in "fd":  # (one dtype)
        return _special_kernels.heaviside(xp, a, b)
    return xp.where(a == 0, b, a > 0)


@defop("heaviside", differentiable=False, out=True)
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step: 0 where ``input < 0``, ``values`` where it is 0, 1 where it is
    positive (NaN gives 0, as in PyTorch).

    >>> heaviside(tensor([-1., 0., 2.]), tensor(0.5))
    tensor([0.0000, 0.5000, 1.0000])
    """
    _heaviside_operands("heaviside", input, values)
    return _make(_elementwise("heaviside", input, values, _heaviside, "biuf",
                              other_name="values")[0])


@defop("heaviside_", differentiable=False, inplace=True)
def heaviside_(input: Tensor, values: Tensor) -> Tensor:
    """In-place :func:`heaviside`."""
    _heaviside_operands("heaviside_", input, values)
    return _elementwise_("heaviside_", input, values, _heaviside, "biuf", other_name="values")


def _logaddexp(xp, a, b):
    dt = a.dtype if hasattr(a, "dtype") else b.dtype
    if dt.kind != "c":  # (the kernels warn about nothing but float16's cast, which may
        k = _kernel("logaddexp", xp)  # overflow)
        return _quiet_call(k, a, b) if dt.itemsize == 2 else k(a, b)
    a, b = xp.broadcast_arrays(xp.asarray(a), xp.asarray(b))
    hi = xp.where(a.real >= b.real, a, b)  # shift by the larger real part
    lo = xp.where(a.real >= b.real, b, a)
    with _quiet():
        return hi + xp.log1p(xp.exp(lo - hi))


def _logaddexp2(xp, a, b):
    k = _kernel("logaddexp2", xp)
    return _quiet_call(k, a, b) if (a.dtype if hasattr(a, "dtype") else b.dtype).itemsize == 2 \
        else k(a, b)


@defop("logaddexp", out=True)
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow (floating tensors).

    >>> logaddexp(tensor([0.]), tensor([0.]))
    tensor([0.6931])
    """
    return _make(_elementwise("logaddexp", input, other, _logaddexp, "fc",
                              other_name="other")[0])


@defop("logaddexp2", out=True)
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow (floating tensors).

    >>> logaddexp2(tensor([1.]), tensor([1.]))
    tensor([2.])
    """
    return _make(_elementwise("logaddexp2", input, other, _logaddexp2, "f",
                              other_name="other")[0])


_nextafter = _special_kernels.nextafter


@defop("nextafter", differentiable=False, out=True)
def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next representable value after ``input`` towards ``other`` (floating tensors).

    >>> nextafter(tensor([1.], dtype=float64), tensor([2.], dtype=float64)) > 1
    tensor([True])
    """
    _no_bf16_nextafter("nextafter", input, other)
    return _make(_elementwise("nextafter", input, other, _nextafter, "f",
                              other_name="other")[0])


@defop("nextafter_", differentiable=False, inplace=True)
def nextafter_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`nextafter`."""
    _no_bf16_nextafter("nextafter_", input, other)
    return _elementwise_("nextafter_", input, other, _nextafter, "f", other_name="other")


def _no_bf16_nextafter(op: str, input, other) -> None:
    # computed in float32 the step would be float32's, not bfloat16's
    for t in (input, other):  # (bfloat16's kind is "V": compared with it only then)
        if isinstance(t, Tensor) and t._data.dtype.kind == "V" and t._data.dtype == _BF16:
            raise not_implemented(op, t._data.dtype)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2**other`` (PyTorch's composite: integers give the default float dtype).

    >>> ldexp(tensor([1., 3.]), tensor([2, 1]))
    tensor([4., 6.])
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    _ldexp_check("ldexp", input, other)
    return mul(input, _pow(2.0, other))


def _ldexp_check(op: str, input, other: Tensor) -> None:
    # PyTorch's kernel for a floating input has no bool exponent
    if other._data.dtype.kind == "b" and isinstance(input, Tensor) and input.is_floating_point():
        raise not_implemented(op, other._data.dtype)


ldexp = with_out(ldexp)


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`ldexp`."""
    if not isinstance(other, Tensor):
        raise TypeError(f"ldexp_(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    _ldexp_check("ldexp_", input, other)
    return mul_(input, _pow(2.0, other))


class _frexp_type(tuple):
    """PyTorch's ``torch.return_types.frexp``: ``(mantissa, exponent)``."""

    __slots__ = ()
    _fields = ("mantissa", "exponent")

    def __new__(cls, mantissa, exponent):
        return tuple.__new__(cls, (mantissa, exponent))

    mantissa = property(lambda self: self[0])
    exponent = property(lambda self: self[1])

    def __repr__(self) -> str:
        return f"frexp(mantissa={self[0]!r}, exponent={self[1]!r})"

    def __reduce__(self):
        return (_frexp_type, tuple(self))


@defop("frexp", out=True)
def frexp(input: Tensor):
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent`` and ``|mantissa|`` in
    ``[0.5, 1)`` (floating tensors; the exponent is int32).

    >>> frexp(tensor([8.])).exponent
    tensor([4], dtype=ember.int32)
    """
    d = input._data
    if d.dtype.kind != "f" and d.dtype != _BF16:
        raise RuntimeError("frexp(): torch.frexp() only supports floating-point dtypes")
    xp = array_module(d)
    m, e = xp.frexp(d.astype(_F32) if d.dtype == _BF16 else d)
    return _frexp_type(_make(m.astype(d.dtype, copy=False)),
                       _make(e.astype(np.int32, copy=False)))


@defop("bitwise_not_", differentiable=False, inplace=True)
def bitwise_not_(input: Tensor) -> Tensor:
    """In-place :func:`bitwise_not`."""
    d = input._data
    if d.dtype.kind not in "biu":
        raise not_implemented("bitwise_not_", d.dtype)
    return _write(input, array_module(d).invert(d), "bitwise_not_")


@defop("logical_not_", differentiable=False, inplace=True)
def logical_not_(input: Tensor) -> Tensor:
    """In-place :func:`logical_not` (the tensor keeps its dtype: 0 or 1)."""
    d = input._data
    return _write(input, array_module(d).logical_not(d), "logical_not_")


def float_power_(input: Tensor, exponent) -> Tensor:
    """In-place :func:`float_power` (the tensor must be float64)."""
    if input._data.dtype != np.float64:
        raise RuntimeError(f"float_power_(): the base given to float_power_ has dtype "
                           f"{scalar_type_name(input._data.dtype)} but the operation's result "
                           "requires dtype Double")
    if isinstance(exponent, Tensor):
        exponent = exponent.to(dtype=D.float64)
    return _pow_(input, exponent)


def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """``other - alpha * input`` (subtraction with the operands swapped).

    >>> rsub(tensor([1., 2.]), 5)
    tensor([4., 3.])
    """
    if alpha != 1:
        input = mul(input, alpha)
    return _sub_plain(other, input)


__all__ = sorted(
    n for n, v in list(globals().items())
    if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == __name__
)
