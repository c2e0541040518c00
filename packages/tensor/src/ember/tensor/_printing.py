"""Tensor printing in PyTorch's format (a port of ``torch/_tensor_str.py``).

>>> from ember.tensor import tensor
>>> tensor([1.0, 2.5])
tensor([1.0000, 2.5000])

Formatting works on a host copy of the elements it shows: past ``threshold`` elements only the
``edgeitems`` first and last entries of each dimension are copied off the device.
"""
from __future__ import annotations

import math

import numpy as np

from . import _dtype as D
from ._fpstate import quiet
from ._registry import array_module
from ._tensor import Tensor

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr"]


class _PrintOptions:
    __slots__ = ("precision", "threshold", "edgeitems", "linewidth", "sci_mode")

    def __init__(self) -> None:
        self.precision = 4
        self.threshold: float = 1000
        self.edgeitems = 3
        self.linewidth = 80
        self.sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """Set the printing options (``torch.set_printoptions``).

    ``profile`` is ``"default"``, ``"short"`` or ``"full"``; ``sci_mode`` None lets the
    formatter decide. As in PyTorch, every call resets ``sci_mode`` to its argument.

    >>> from ember.tensor import tensor
    >>> set_printoptions(precision=2)
    >>> tensor([1.12345])
    tensor([1.12])
    >>> set_printoptions(profile="default")
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        elif profile == "short":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 2, 1000
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 2, 80
        elif profile == "full":
            PRINT_OPTS.precision, PRINT_OPTS.threshold = 4, math.inf
            PRINT_OPTS.edgeitems, PRINT_OPTS.linewidth = 3, 80
        else:
            raise ValueError(f"set_printoptions(): unknown profile {profile!r} "
                             "(expected 'default', 'short' or 'full')")
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as keyword arguments for :func:`set_printoptions`."""
    return {name: getattr(PRINT_OPTS, name) for name in _PrintOptions.__slots__}


class printoptions:
    """Context manager that sets print options temporarily."""

    def __init__(self, **kwargs) -> None:
        self._kwargs = kwargs

    def __enter__(self):
        self._old = get_printoptions()
        set_printoptions(**self._kwargs)

    def __exit__(self, *exc) -> None:
        set_printoptions(**self._old)


# --------------------------------------------------------------------------- formatting
class _Formatter:
    """Chooses int / fixed / scientific mode and the column width from the shown values."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        prec = PRINT_OPTS.precision
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        with quiet():
            nz = flat[np.isfinite(flat) & (flat != 0)]
        if nz.size == 0:
            return
        absd = np.abs(nz.astype(np.float64))
        amin, amax = float(absd.min()), float(absd.max())
        self.int_mode = bool((nz == np.ceil(nz)).all())
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = amax / amin > 1000.0 or amax > 1.0e8 or amin < 1.0e-4
        else:
            self.sci_mode = bool(PRINT_OPTS.sci_mode)
        vals = nz.tolist()
        if self.sci_mode:
            width = max(len(f"{v:.{prec}e}") for v in vals)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") for v in vals) + 1
        else:
            width = max(len(f"{v:.{prec}f}") for v in vals)
        self.max_width = max(self.max_width, width)

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


class _ComplexFormatter:
    """Complex values as ``re+imj``: one formatter for the real parts, one for the imaginary
    parts (PyTorch's layout)."""

    def __init__(self, values: np.ndarray) -> None:
        self.re, self.im = _Formatter(values.real), _Formatter(values.imag)
        self.max_width = self.re.max_width + self.im.max_width + 1

    def format(self, value) -> str:
        imag = (self.im.format(value.imag) + "j").lstrip()
        return self.re.format(value.real) + (imag if imag[0] in "+-" else "+" + imag)


def _vector_str(vals: np.ndarray, full_len: int, indent: int, summarize: bool,
                fmt: _Formatter) -> str:
    element_length = fmt.max_width + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    items = vals.tolist()
    if summarize and not e:
        data = ["..."]
    elif summarize and full_len > 2 * e:
        data = [fmt.format(v) for v in items[:e]] + [" ..."] + [fmt.format(v) for v in items[-e:]]
    else:
        data = [fmt.format(v) for v in items]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_fmt(vals: np.ndarray, shape: tuple, indent: int, summarize: bool,
                    fmt: _Formatter) -> str:
    """``vals`` holds the shown entries of a tensor of ``shape`` (edges only if summarized)."""
    dim = len(shape)
    if dim == 0:
        return fmt.format(vals.item())
    if dim == 1:
        return _vector_str(vals, shape[0], indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    sub = shape[1:]
    if summarize and shape[0] > 2 * e:
        slices = ([_tensor_str_fmt(vals[i], sub, indent + 1, summarize, fmt) for i in range(e)]
                  + ["..."]
                  + [_tensor_str_fmt(vals[vals.shape[0] - e + i], sub, indent + 1, summarize, fmt)
                     for i in range(e)])
    else:
        slices = [_tensor_str_fmt(vals[i], sub, indent + 1, summarize, fmt)
                  for i in range(shape[0])]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _summarized(arr, summarize: bool):
    """The entries that get shown: the first and last ``edgeitems`` of every long dimension."""
    if not summarize:
        return arr
    e = PRINT_OPTS.edgeitems
    for axis, n in enumerate(arr.shape):
        if n > 2 * e:
            idx = [slice(None)] * arr.ndim
            if e == 0:
                idx[axis] = slice(0, 0)
                arr = arr[tuple(idx)]
                continue
            head, tail = list(idx), list(idx)
            head[axis], tail[axis] = slice(0, e), slice(n - e, n)
            xp = np if isinstance(arr, np.ndarray) else array_module(arr)
            arr = xp.concatenate([arr[tuple(head)], arr[tuple(tail)]], axis=axis)
    return arr


def _host(arr) -> np.ndarray:
    return arr if isinstance(arr, np.ndarray) else arr.get()


def _tensor_str(data, indent: int) -> str:
    if data.size == 0:
        return "[]"
    summarize = data.size > PRINT_OPTS.threshold
    vals = _host(_summarized(data, summarize))
    if vals.dtype == np.float16 or vals.dtype == D.BF16_NP:
        vals = vals.astype(np.float32)  # format the exact values without half-precision math
    fmt = _ComplexFormatter(vals) if vals.dtype.kind == "c" else _Formatter(vals)
    return _tensor_str_fmt(vals, tuple(data.shape), indent, summarize, fmt)


def _add_suffixes(tensor_str: str, suffixes: list[str], indent: int) -> str:
    out = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line_len += len(suffix) + 2
    out.append(")")
    return "".join(out)


def _grad_fn_name(grad_fn) -> str:
    name = getattr(grad_fn, "name", None)
    if callable(name):
        try:
            n = name()
        except TypeError:
            n = None
        if isinstance(n, str) and n:
            return n.rsplit("::", 1)[-1]
    return type(grad_fn).__name__


def tensor_repr(t) -> str:
    """``repr(t)`` in PyTorch's format.

    >>> from ember.tensor import tensor
    >>> tensor([[1, 2], [30, 4]])
    tensor([[ 1,  2],
            [30,  4]])
    """
    cls = type(t)
    prefix = "tensor(" if cls is Tensor or cls.__name__ == "Parameter" else f"{cls.__name__}("
    indent = len(prefix)
    data = t._data
    suffixes: list[str] = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    dt = D._FROM_NP[data.dtype]
    default = D.get_default_dtype()
    shown = (default, D.default_complex(), D.int64, D.bool)  # dtypes the repr leaves unsaid
    if data.size == 0:
        if data.ndim != 1:
            suffixes.append(f"size={tuple(data.shape)}")
        if dt is not default:
            suffixes.append(f"dtype={dt}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(data.shape)}")
        if dt not in shown:
            suffixes.append(f"dtype={dt}")
        body = _tensor_str(data, indent)
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{_grad_fn_name(grad_fn)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
