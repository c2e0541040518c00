"""The single op registry.

Every primitive op is declared once with :func:`defop`: its name, whether it is
differentiable, and one implementation written against the array API that NumPy and CuPy share
(``xp = array_module(arr)``). Tensor methods, the ``ember.tensor`` functions and the Python
operators all call the function that ``defop`` returns.

Autograd is a layer on top: ``ember.autograd`` calls :func:`set_recorder` once, and from then
on every call goes through its recorder, which runs the implementation and records a graph
node when grad mode is on and an input requires grad. The core never computes a gradient.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

__all__ = ["OpDef", "OPS", "defop", "set_recorder", "array_module"]


class OpDef:
    """One registry entry."""

    __slots__ = ("name", "impl", "differentiable", "inplace", "public")

    def __init__(self, name: str, impl: Callable, differentiable: bool, inplace: bool) -> None:
        self.name = name
        self.impl = impl
        self.differentiable = differentiable
        self.inplace = inplace
        self.public: Callable | None = None

    def __repr__(self) -> str:
        kind = "differentiable" if self.differentiable else "non-differentiable"
        return f"<op {self.name} ({kind}{', in-place' if self.inplace else ''})>"


OPS: dict[str, OpDef] = {}
_recorder: Callable | None = None


def set_recorder(fn: Callable | None) -> None:
    """Install the autograd layer's recorder: ``fn(op, args, kwargs) -> result``."""
    global _recorder
    _recorder = fn


def defop(name: str, *, differentiable: bool = True, inplace: bool = False):
    """Declare a primitive op. ``inplace`` ops modify their first argument and return it."""

    def deco(impl: Callable) -> Callable:
        if name in OPS:
            raise RuntimeError(f"op {name!r} is declared twice")
        op = OpDef(name, impl, differentiable, inplace)
        OPS[name] = op

        @functools.wraps(impl)
        def public(*args, **kwargs):
            rec = _recorder
            if rec is None:
                return impl(*args, **kwargs)
            return rec(op, args, kwargs)

        public.op = op
        op.public = public
        return public

    return deco


def array_module(arr):
    """``numpy`` for NumPy arrays, ``cupy`` for CuPy arrays."""
    if isinstance(arr, np.ndarray):
        return np
    from ._cupy import cupy

    if cupy is not None and isinstance(arr, cupy.ndarray):
        return cupy
    raise TypeError(f"expected a NumPy or CuPy array, got {type(arr).__name__}")
