"""dtypes and PyTorch's type-promotion rules.

A dtype wraps a NumPy dtype. Promotion follows PyTorch, not NumPy: categories bool < integer <
floating; a higher category always wins (``int64 + float16 -> float16``); within a category the
wider type wins; zero-dim tensors and Python scalars only promote across categories, so a Python
float never widens a float32 tensor and ``int_tensor / int_tensor`` is float32.

Complex dtypes (``complex64``, ``complex128``) form a fourth category above floating. A complex
operand with a floating one keeps the floating one's precision (``float64 + complex64 ->
complex128``), and a Python complex widens a float tensor to its complex counterpart.

``bfloat16`` is ml_dtypes' NumPy bfloat16 (NumPy kind ``"V"``, not ``"f"``: test floatness with
:func:`is_float_np`, never ``dtype.kind == "f"``). As in PyTorch it promotes with float16 to
float32, and is promoted to float32 / float64 by those. Ops compute it in float32 and round
(``opmath``, see :func:`compute_np`).
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
    "dtype", "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
    "float32", "float64", "complex64", "complex128", "half", "float", "double", "short", "int",
    "long", "cfloat", "cdouble",
    "get_default_dtype", "set_default_dtype", "promote_types", "result_type", "can_cast",
    "finfo", "iinfo",
]

_builtin_bool, _builtin_int, _builtin_float, _builtin_complex = bool, int, float, complex


class dtype:
    """A tensor element type, e.g. ``ember.tensor.float32``."""

    __slots__ = ("name", "np", "itemsize", "is_floating_point", "is_signed", "_category",
                 "__weakref__")

    def __init__(self, name: str, np_dtype: np.dtype, category: int) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == 2
        self.is_signed = self.np.kind in "ifc" or category >= 2
        self._category = category

    @property
    def is_complex(self) -> _builtin_bool:
        return self._category == 3

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self) -> dtype:
        """The real dtype of a complex dtype's parts (``complex64 -> float32``); else self."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype whose parts are this dtype (``float64 -> complex128``); float16
        and bfloat16 go to complex64, as ember has no complex32."""
        if self._category == 3:
            return self
        return complex128 if self is float64 else complex64


bool = dtype("bool", np.bool_, 0)  # noqa: A001
uint8 = dtype("uint8", np.uint8, 1)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
float16 = dtype("float16", np.float16, 2)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
complex64 = dtype("complex64", np.complex64, 3)
complex128 = dtype("complex128", np.complex128, 3)
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128
_TO_REAL = {complex64: float32, complex128: float64}

ALL = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128)
_FROM_NP = {d.np: d for d in ALL}
BF16_NP = bfloat16.np
_F32_NP = float32.np
#: the NumPy dtypes of ember's floating dtypes (bfloat16's NumPy kind is "V", not "f")
FLOAT_NP = frozenset(d.np for d in ALL if d.is_floating_point)


def is_float_np(np_dtype) -> _builtin_bool:
    """Whether a NumPy dtype is one of ember's floating dtypes (bfloat16 included)."""
    return np_dtype.kind == "f" or np_dtype == BF16_NP


def compute_np(np_dtype):
    """The dtype an op computes a ``np_dtype`` array in: float32 for bfloat16 (PyTorch's
    ``opmath``: NumPy has no bfloat16 reductions or BLAS), else ``np_dtype`` itself."""
    return _F32_NP if np_dtype == BF16_NP else np_dtype
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update(half=float16, float=float32, double=float64, short=int16, int=int32,
                long=int64, cfloat=complex64, cdouble=complex128)


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


#: run once, the first time bfloat16 is asked for (the bfloat16 op wrappers install there, so
#: programs that never use bfloat16 never pay for them)
_on_first_bfloat16: list = []


def _first_bfloat16() -> None:
    while _on_first_bfloat16:
        _on_first_bfloat16.pop()()


def from_numpy_dtype(np_dtype, op: str = "tensor") -> dtype:
    """The ember dtype for a NumPy dtype; TypeError for dtypes ember does not support."""
    try:
        d = _FROM_NP[np.dtype(np_dtype)]
        if d is bfloat16 and _on_first_bfloat16:
            _first_bfloat16()
        return d
    except (KeyError, TypeError):
        raise TypeError(
            f"{op}(): can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported "
            "types are: complex128, complex64, float64, float32, float16, bfloat16, int64, "
            "int32, int16, int8, uint8, and bool."
        ) from None


def to_dtype(d, op: str = "to") -> dtype:
    """Accept an ember dtype, a NumPy dtype, a Python type or a name."""
    if isinstance(d, dtype):
        if d is bfloat16 and _on_first_bfloat16:
            _first_bfloat16()
        return d
    if d is _builtin_float:
        return _default[0]
    if d is _builtin_int:
        return int64
    if d is _builtin_bool:
        return bool
    if d is _builtin_complex:
        return default_complex()
    if isinstance(d, str) and d in _BY_NAME:
        return to_dtype(_BY_NAME[d])
    try:
        return to_dtype(_FROM_NP[np.dtype(d)])
    except (KeyError, TypeError):
        raise TypeError(f"{op}(): unsupported dtype {d!r}") from None


_default = [float32]


def get_default_dtype() -> dtype:
    """The dtype Python floats and ``rand``/``zeros`` create (float32 unless changed)."""
    return _default[0]


def default_complex() -> dtype:
    """The dtype Python complex numbers create: the default float dtype's complex
    counterpart (complex64 unless the default is float64)."""
    return _default[0].to_complex()


def set_default_dtype(d: dtype) -> None:
    d = to_dtype(d, "set_default_dtype")
    if not d.is_floating_point:
        raise TypeError(f"set_default_dtype(): only floating-point types are supported, got {d}")
    _default[0] = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """PyTorch's promote_types: the higher category wins, else the wider type."""
    if a is b:
        return a
    if a._category != b._category:
        hi, lo = (a, b) if a._category > b._category else (b, a)
        if hi._category == 3 and lo._category == 2:  # complex keeps float64's precision
            return complex128 if complex128 in (hi, lo.to_complex()) else complex64
        return hi
    if a is bfloat16 or b is bfloat16:
        o = b if a is bfloat16 else a  # float16 and bfloat16 meet in float32
        return float32 if o is float16 else o
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _combine(higher: dtype | None, lower: dtype | None) -> dtype | None:
    # PyTorch's combine_categories: a lower-priority operand only matters when it brings a
    # higher category (a float scalar into an int tensor) or the higher one is bool.
    if higher is None:
        return lower
    if lower is None or higher._category == 3:
        return higher
    if lower._category == 3:  # a complex scalar keeps a float tensor's precision
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher is bool or lower.is_floating_point:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(v) -> dtype:
    """The dtype a Python scalar takes when it wraps into a tensor."""
    c = v.__class__  # the common classes by identity first: no isinstance chain for them
    if c is _builtin_float:
        return _default[0]
    if c is _builtin_int:
        return int64
    if isinstance(v, _builtin_bool) or isinstance(v, np.bool_):
        return bool
    if isinstance(v, (_builtin_int, np.integer)):
        return int64
    if isinstance(v, np.floating):
        return _default[0]
    if isinstance(v, _builtin_float):
        return _default[0]
    if isinstance(v, (_builtin_complex, np.complexfloating)):
        return default_complex()
    raise TypeError(f"unsupported scalar type {type(v).__name__}")


def result_type(*operands) -> dtype:
    """The dtype of an op over ``operands`` (Tensors and Python scalars) under PyTorch's rules.

    A tensor is told from a scalar by its ``dtype`` being one of ember's (NumPy scalars carry
    NumPy's), so this module stays below the Tensor class."""
    dim_r = zero_r = wrapped_r = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if d.__class__ is dtype:
            if x._data.ndim:
                dim_r = d if dim_r is None else promote_types(dim_r, d)
            else:
                zero_r = d if zero_r is None else promote_types(zero_r, d)
        elif x is not None:
            d = scalar_dtype(x)
            wrapped_r = d if wrapped_r is None else promote_types(wrapped_r, d)
    return _combine(dim_r, _combine(zero_r, wrapped_r))


def can_cast(from_: dtype, to: dtype) -> _builtin_bool:
    """PyTorch's can_cast: no complex->float, float->int or non-bool->bool casts by in-place
    ops."""
    if from_._category > to._category:
        return False
    return True


class finfo:
    """Machine limits of a floating dtype (``eps``, ``max``, ``min``, ``tiny``); a complex
    dtype's are its parts'."""

    def __init__(self, type: dtype = None) -> None:  # noqa: A002
        d = to_dtype(type if type is not None else get_default_dtype(), "finfo").to_real()
        if not d.is_floating_point:
            raise TypeError(f"finfo(): {d} is not a floating point dtype")
        info = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.bits, self.eps = info.bits, _builtin_float(info.eps)
        self.max = _builtin_float(info.max)
        self.min, self.tiny = _builtin_float(info.min), _builtin_float(info.tiny)
        self.smallest_normal, self.resolution = self.tiny, _builtin_float(info.resolution)
        if d is bfloat16:  # 10 ** -precision, as NumPy's own dtypes and PyTorch define it
            self.resolution = 10.0 ** -_builtin_int(info.precision)
        self.dtype = d.name


class iinfo:
    """Machine limits of an integer dtype (``min``, ``max``, ``bits``)."""

    def __init__(self, type: dtype) -> None:  # noqa: A002
        d = to_dtype(type, "iinfo")
        if d._category >= 2:
            raise TypeError(f"iinfo(): {d} is not an integer dtype")
        info = np.iinfo(d.np) if d is not bool else np.iinfo(np.uint8)
        self.bits, self.dtype = info.bits, d.name
        self.min, self.max = _builtin_int(info.min), _builtin_int(info.max)
