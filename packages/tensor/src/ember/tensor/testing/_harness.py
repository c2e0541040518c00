"""The op table's vocabulary: samples, entries, dtype groups and PyTorch's promotion rules.

:class:`Sample` is one call's arguments as NumPy arrays; :class:`OpEntry` one op's test entry;
:func:`to_ember` and :func:`noncontig` turn samples into contiguous or strided ember tensors;
:func:`torch_result_type` writes PyTorch's result-dtype rules out. The tables
(:mod:`.op_table`, :mod:`.nn_op_table`, :mod:`.op_table_extra`) build on this module.
"""
from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import ember.tensor as et

FLOAT = ("float32", "float64")
FLOAT_H = ("float16", "float32", "float64")
INT = ("int32", "int64")
NUMERIC = ("uint8", "int32", "int64", "float32", "float64")
ALL = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")

COMPLEX = ("complex64", "complex128")

_CAT = {"bool": 0, "uint8": 1, "int8": 1, "int16": 1, "int32": 1, "int64": 1, "bfloat16": 2,
        "float16": 2, "float32": 2, "float64": 2, "complex64": 3, "complex128": 3}


def np_dtype(name: str) -> np.dtype:
    return np.dtype("bool" if name == "bool" else name)


def _name(dt) -> str:
    """dtype name of an ember dtype, NumPy dtype or string."""
    if isinstance(dt, str):
        return dt
    n = getattr(dt, "name", None)
    if isinstance(n, str):
        return n
    return np.dtype(dt).name


def _promote2(a: str | None, b: str | None) -> str | None:
    """torch.promote_types for the dtypes used here."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    ca, cb = _CAT[a], _CAT[b]
    if 3 in (ca, cb):  # complex: the wider of the two parts' precisions
        wide = "float64" in (a, b) or "complex128" in (a, b)
        return "complex128" if wide else "complex64"
    if ca != cb:
        return a if ca > cb else b
    if ca == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        order = ["float16", "float32", "float64"]
        a, b = ("float16" if x == "bfloat16" else x for x in (a, b))
        return order[max(order.index(a), order.index(b))]
    if ca == 1:
        if {a, b} == {"uint8", "int8"}:
            return "int16"
        if "uint8" in (a, b):
            other = b if a == "uint8" else a
            return other
        order = ["int8", "int16", "int32", "int64"]
        return order[max(order.index(a), order.index(b))]
    return a


def _combine(higher: str | None, lower: str | None) -> str | None:
    # c10's combine_categories
    if higher is not None and _CAT[higher] == 3:
        return higher
    if lower is not None and _CAT[lower] == 3:  # a complex scalar keeps a float's precision
        return ("complex128" if higher == "float64" else "complex64") \
            if higher is not None and _CAT[higher] == 2 else lower
    if higher is not None and _CAT[higher] == 2:
        return higher
    if higher == "bool" or (lower is not None and _CAT[lower] == 2):
        return _promote2(higher, lower)
    if higher is not None:
        return higher
    return lower


def torch_result_type(*operands, default_float: str = "float32") -> str:
    """PyTorch's result dtype for ``operands``: NumPy arrays / ember tensors (0-d ones rank
    below dimensioned ones) and Python scalars (which never widen a tensor's category)."""
    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, (bool, np.bool_)):
            wrapped = _promote2(wrapped, "bool")
        elif isinstance(o, (int, np.integer)) and not isinstance(o, np.ndarray):
            wrapped = _promote2(wrapped, "int64")
        elif (isinstance(o, (float, np.floating)) or (isinstance(o, np.generic) and _name(
                o.dtype) == "bfloat16")) and not isinstance(o, np.ndarray):
            wrapped = _promote2(wrapped, default_float)
        else:
            nd = o.ndim if isinstance(o, np.ndarray) else o.dim()
            dt = _name(o.dtype)
            if nd == 0:
                zero = _promote2(zero, dt)
            else:
                dim = _promote2(dim, dt)
    return _combine(dim, _combine(zero, wrapped))


def _to_float(name: str) -> str:
    return name if _CAT[name] >= 2 else "float32"


def tolerance(dtype: str) -> tuple[float, float]:
    return {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2), "float32": (1e-5, 1e-5),
            "complex64": (1e-5, 1e-5)}.get(dtype, (1e-10, 1e-10))


def fix_gauge(a: np.ndarray, kind: str | None) -> np.ndarray:
    """``a`` with each column (``kind`` "col") or row ("row") of its last two dims divided by
    the phase of its largest-magnitude entry, so that vectors defined only up to a sign or a
    phase compare equal; ``a`` itself for ``kind`` None."""
    if kind is None:
        return a
    m = np.asarray(a) if kind == "col" else np.asarray(a).swapaxes(-1, -2)
    at = np.abs(m).argmax(axis=-2)[..., None, :]
    pivot = np.take_along_axis(m, at, axis=-2)
    size = np.abs(pivot)
    phase = np.where(size > 0, pivot / np.where(size > 0, size, 1), 1)
    m = m / phase
    return m if kind == "col" else m.swapaxes(-1, -2)


def ref_args(sample: Sample, dtype: str) -> tuple[tuple, dict]:
    """The arguments a NumPy reference runs on: bfloat16 arrays as float32 (NumPy would
    accumulate sums and products in bfloat16; PyTorch, like ember, computes in float32)."""
    if dtype != "bfloat16":
        return sample.args, sample.kwargs

    def up(a):
        if isinstance(a, np.ndarray) and a.dtype == np_dtype("bfloat16"):
            return a.astype(np.float32)
        if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
            return type(a)(up(x) for x in a)
        return a

    return tuple(up(a) for a in sample.args), {k: up(v) for k, v in sample.kwargs.items()}


# --------------------------------------------------------------------------- samples
@dataclass
class Sample:
    """``args`` hold NumPy arrays where the op takes tensors; ``grad`` lists the positional
    arguments gradients are checked for (None: every floating array listed in the entry's
    ``operands``)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    grad: tuple | None = None
    note: str = ""

    def __repr__(self) -> str:
        def r(a):
            if isinstance(a, np.ndarray):
                return f"array{a.shape}:{a.dtype}"
            if isinstance(a, (list, tuple)) and a and isinstance(a[0], np.ndarray):
                return "[" + ", ".join(r(x) for x in a) + "]"
            return repr(a)
        return f"Sample({', '.join(r(a) for a in self.args)}, {self.kwargs}{self.note})"


def _rand(shape, dtype: str, rng, low=-2.0, high=2.0, distinct: bool = False) -> np.ndarray:
    shape = tuple(shape)
    n = int(np.prod(shape)) if shape else 1
    if dtype == "bool":
        return np.asarray(rng.random(shape) > 0.5)
    nd = np_dtype(dtype)
    if nd.kind == "c":  # independent real and imaginary parts
        part = "float64" if nd == np.complex128 else "float32"
        return (_rand(shape, part, rng, low, high, distinct) +
                1j * _rand(shape, part, rng, low, high)).astype(nd)
    if nd.kind in "iu":
        lo = max(int(math.ceil(low)), 0 if nd.kind == "u" else -100)
        hi = max(int(math.ceil(high)), lo + 1)
        if distinct:
            vals = (rng.permutation(max(n, hi - lo + 1))[:n] + lo).astype(nd)
            return vals.reshape(shape)
        return rng.integers(lo, hi + 1, size=shape).astype(nd)
    if distinct:
        # well separated values: ties and nearby kinks stay out of finite differences
        vals = np.linspace(low, high, n + 2)[1:-1]
        vals = rng.permutation(vals) + rng.uniform(-0.1, 0.1, n) * (high - low) / (n + 2)
        return vals.astype(nd).reshape(shape)
    return rng.uniform(low, high, size=shape).astype(nd)


def _nz(shape, dtype, rng, low=0.5, high=2.0):
    """Values bounded away from zero, random sign."""
    x = _rand(shape, dtype, rng, low, high)
    sign = np.where(rng.random(np.shape(x)) > 0.5, 1, -1)
    if np_dtype(dtype).kind == "u":
        return x
    return (x * sign).astype(x.dtype)


UNARY_SHAPES = [(), (5,), (2, 3), (2, 1, 3)]
BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (2, 3)),
                 ((2, 3), ()), ((1, 3, 1), (2, 1, 4))]


def unary_samples(low=-2.0, high=2.0, distinct=False, kwargs=None):
    def gen(dtype, rng):
        return [Sample((_rand(s, dtype, rng, low, high, distinct),), dict(kwargs or {}))
                for s in UNARY_SHAPES]
    return gen


def binary_samples(low=-2.0, high=2.0, low2=None, high2=None, nonzero2=False, scalars=(),
                   distinct=False):
    low2 = low if low2 is None else low2
    high2 = high if high2 is None else high2

    def gen(dtype, rng):
        out = []
        for sa, sb in BINARY_SHAPES:
            a = _rand(sa, dtype, rng, low, high, distinct)
            if nonzero2:
                b = _nz(sb, dtype, rng, max(low2, 0.5), high2)
            else:
                b = _rand(sb, dtype, rng, low2, high2, distinct)
            out.append(Sample((a, b)))
        for sc in scalars:
            out.append(Sample((_rand((2, 3), dtype, rng, low, high, distinct), sc),
                              note=" scalar"))
        return out
    return gen


def _opt(x, dtype):
    return x


# --------------------------------------------------------------------------- the entry type
@dataclass
class OpEntry:
    """One op test entry.

    ``out_dtype``: "same" (first tensor's dtype), "promote" (PyTorch promotion of the
    ``operands``), "promote_float" (that, with integral results turned into float32), "float"
    (first operand's dtype, integral -> float32), "bool", "int64", or a callable
    ``(sample, dtype_name) -> dtype_name``. ``view``: the result shares storage with args[0].
    ``ops``: registry ops exercised (for the coverage walk). ``gauge``: {output index: "col"
    or "row"} for outputs whose columns (rows) are unique only up to a sign or phase
    (eigenvectors, singular vectors), compared after :func:`fix_gauge`. ``host_outputs``: the
    outputs PyTorch keeps on the CPU whatever the input's device (a PackedSequence's
    batch_sizes).
    """

    name: str
    fn: Callable
    ref: Callable
    samples: Callable
    dtypes: tuple = FLOAT
    method: str | None = "auto"
    ops: tuple = ()
    differentiable: bool = True
    inplace: str | None = None
    out_dtype: object = "same"
    operands: tuple = (0,)
    view: bool = False
    gradgrad: bool = True
    atol: float | None = None
    rtol: float | None = None
    grad_dtypes_ok: bool = True
    ref_dtype_exact: bool = True
    layouts: tuple = ("contig", "noncontig")
    gauge: dict = field(default_factory=dict)
    host_outputs: tuple = ()

    def __post_init__(self):
        if self.method == "auto":
            self.method = self.name if hasattr(et.Tensor, self.name) else None
        if not self.ops:
            self.ops = (self.name,)

    def __repr__(self) -> str:
        return f"OpEntry({self.name})"

    def expected_dtype(self, sample: Sample, dtype: str) -> str:
        spec = self.out_dtype
        if callable(spec):
            return spec(sample, dtype)
        ops = [sample.args[i] for i in self.operands if i < len(sample.args)]
        if spec == "same":
            return _name(ops[0].dtype) if isinstance(ops[0], np.ndarray) else dtype
        if spec == "promote":
            return torch_result_type(*ops)
        if spec == "promote_float":
            return _to_float(torch_result_type(*ops))
        if spec == "float":
            return _to_float(_name(ops[0].dtype))
        return spec


# --------------------------------------------------------------------------- conversion
def noncontig(a: np.ndarray):
    """An ember tensor equal to ``a`` whose memory is not contiguous: for ``ndim >= 2`` a
    transposed view, for ``ndim >= 1`` a step-slice of a bigger buffer (0-d stays as is)."""
    a = np.asarray(a)
    if a.ndim == 0:
        return et.tensor(a)
    if a.ndim >= 2:
        swapped = a.swapaxes(-1, -2)
        buf = np.zeros(swapped.shape[:-1] + (swapped.shape[-1] * 2,), dtype=a.dtype)
        buf[..., ::2] = swapped
        base = et.from_numpy(buf)
        return base[..., ::2].transpose(-1, -2)
    buf = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), dtype=a.dtype)
    buf[..., ::2] = a
    return et.from_numpy(buf)[..., ::2]


def _conv(a, contiguous: bool, dtype=None):
    if isinstance(a, np.ndarray) or isinstance(a, np.generic):
        arr = np.asarray(a) if dtype is None else np.asarray(a).astype(dtype)
        return et.tensor(arr.copy()) if contiguous else noncontig(arr)
    if isinstance(a, list) and a and all(isinstance(x, np.ndarray) for x in a):
        return [_conv(x, contiguous, dtype) for x in a]
    if isinstance(a, tuple) and a and all(isinstance(x, np.ndarray) for x in a):
        return tuple(_conv(x, contiguous, dtype) for x in a)
    return a


def as_keywords(fn, args, kwargs):
    """The same call with every positional argument that ``fn``'s signature lets be named
    passed as a keyword instead (``index_select(x, 0, i)`` -> ``index_select(input=x, dim=0,
    index=i)``); None when ``fn`` is not an ember function or nothing can be named."""
    if not getattr(fn, "__module__", "").startswith("ember."):
        return None
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    named = dict(kwargs)
    k = 0
    for p in params[:len(args)]:
        if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            break
        named[p.name] = args[k]
        k += 1
    if k == 0 or k < len(args):  # a *args parameter: its values can't follow keywords
        return None
    return (), named


def to_ember(sample: Sample, contiguous: bool = True):
    """(args, kwargs) with NumPy arrays turned into ember tensors."""
    args = tuple(_conv(a, contiguous) for a in sample.args)
    kwargs = {k: _conv(v, contiguous) for k, v in sample.kwargs.items()}
    return args, kwargs


# --------------------------------------------------------------------------- references
