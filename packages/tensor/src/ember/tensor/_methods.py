"""Binds the ops of every family as Tensor methods and Python operators.

A function becomes a method when its first parameter is the tensor (named ``input``,
``self`` or ``tensor``); methods and functions are then the same registry entries.
"""
from __future__ import annotations

from . import (
    _complex,
    _creation,
    _indexing,
    _linalg,
    _random,
    _reduction,
    _scatter,
    _shape,
)
from . import (
    _pointwise as P,
)
from ._printing import tensor_repr
from ._tensor import Tensor, parse_to_args

_FAMILIES = (P, _shape, _reduction, _linalg, _indexing, _scatter, _random, _creation)


# functions whose first argument is a tensor but which PyTorch has no method for
_NOT_METHODS = {"rand_like", "randn_like", "randint_like", "poisson", "zeros_like",
                "ones_like", "empty_like", "full_like", "as_tensor", "asarray", "from_numpy",
                "broadcast_tensors", "meshgrid", "atleast_1d", "atleast_2d", "slice_view",
                "combinations", "gradient", "histogramdd", "isin", "linear", "rsub",
                "std_mean", "var_mean", "getitem", "setitem", "setitem_copy"}


def _first_param(fn) -> str | None:
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    if code is None or code.co_argcount == 0:
        return None
    return code.co_varnames[0]


def _rev(fn):
    def method(self, other):
        return fn(other, self)
    method.__name__ = f"__r{fn.__name__}__"
    return method


def _new_factory(make):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        return make(*size, dtype=self.dtype if dtype is None else dtype,
                    device=self.device if device is None else device,
                    requires_grad=requires_grad, **kw)
    return method


def _iter(self):
    if self._data.ndim == 0:
        raise TypeError("iteration over a 0-d tensor")
    return iter(_shape.unbind(self, 0))


def _to(self, *args, **kwargs) -> Tensor:
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; copies only
    when something changes (or ``copy=True``)."""
    device_, dtype_, copy = parse_to_args(args, kwargs)
    return _creation._to(self, device_, dtype_, copy)


def _T(self) -> Tensor:
    return _shape.permute(self, tuple(range(self._data.ndim - 1, -1, -1)))


def _mT(self) -> Tensor:
    return _shape.transpose(self, -2, -1)


def _set_part(part):
    """The setter of ``Tensor.real`` / ``Tensor.imag``: ``z.real = x`` copies ``x`` into the
    view of that part."""
    def setter(self, value):
        part(self).copy_(value)
    return setter


def bind_methods() -> None:
    Tensor.__init__ = _creation.tensor_init
    Tensor.__iter__ = _iter
    Tensor.__repr__ = tensor_repr
    Tensor.to = _to
    Tensor.T = property(_T)
    Tensor.mT = property(_mT)
    for mod in _FAMILIES:
        for name in getattr(mod, "__all__", ()):
            fn = getattr(mod, name)
            if name in Tensor.__dict__ or not callable(fn):
                continue
            if _first_param(fn) in ("input", "self", "tensor") and name not in _NOT_METHODS:
                setattr(Tensor, name, fn)
    ops = {
        "__add__": P._add_plain, "__sub__": P._sub_plain, "__mul__": P.mul,
        "__truediv__": P.true_divide,
        "__floordiv__": P.floor_divide, "__mod__": P.remainder, "__pow__": P.pow,
        "__matmul__": _linalg.matmul, "__and__": P.bitwise_and, "__or__": P.bitwise_or,
        "__xor__": P.bitwise_xor, "__eq__": P.eq, "__ne__": P.ne, "__lt__": P.lt,
        "__le__": P.le, "__gt__": P.gt, "__ge__": P.ge, "__neg__": P.neg, "__abs__": P.abs,
        "__invert__": P.bitwise_not, "__iadd__": P._add_plain_, "__isub__": P._sub_plain_,
        "__imul__": P.mul_, "__itruediv__": P.true_divide_, "__ifloordiv__": P.floor_divide_,
        "__imod__": P.remainder_, "__ipow__": P.pow_, "__iand__": P.bitwise_and_,
        "__ior__": P.bitwise_or_, "__ixor__": P.bitwise_xor_,
        "__lshift__": P.bitwise_left_shift, "__rshift__": P.bitwise_right_shift,
        "__ilshift__": P.bitwise_left_shift_, "__irshift__": P.bitwise_right_shift_,
        "__getitem__": _indexing.getitem, "__setitem__": _indexing.setitem,
    }
    for name, fn in ops.items():
        setattr(Tensor, name, fn)
    for name, fn in {"add": P._add_plain, "sub": P._sub_plain, "mul": P.mul,
                     "truediv": P.true_divide,
                     "floordiv": P.floor_divide, "mod": P.remainder, "pow": P.pow,
                     "matmul": _linalg.matmul, "and": P.bitwise_and, "or": P.bitwise_or,
                     "xor": P.bitwise_xor, "lshift": P.bitwise_left_shift,
                     "rshift": P.bitwise_right_shift}.items():
        setattr(Tensor, f"__r{name}__", _rev(fn))
    for name in ("conj", "conj_physical", "conj_physical_", "angle", "sgn", "sgn_"):
        setattr(Tensor, name, getattr(_complex, name))
    Tensor.real = property(_complex.real, _set_part(_complex.real))
    Tensor.imag = property(_complex.imag, _set_part(_complex.imag))
    Tensor.__pos__ = lambda self: self
    Tensor.where = lambda self, condition, other: P.where(condition, self, other)
    Tensor.new_zeros = _new_factory(_creation.zeros)
    Tensor.new_ones = _new_factory(_creation.ones)
    Tensor.new_empty = _new_factory(_creation.empty)
    Tensor.new_full = lambda self, size, fill_value, dtype=None, device=None, \
        requires_grad=False: _creation.full(size, fill_value,
                                            dtype=self.dtype if dtype is None else dtype,
                                            device=self.device if device is None else device,
                                            requires_grad=requires_grad)
    Tensor.new_tensor = lambda self, data, dtype=None, device=None, requires_grad=False: \
        _creation.tensor(data, dtype=self.dtype if dtype is None else dtype,
                         device=self.device if device is None else device,
                         requires_grad=requires_grad)
