"""The graph under construction: nodes, initializers, fresh names, dtype helpers.

Converters (see ``_symbolic``) receive a :class:`GraphContext` and read the traced call's
tensors through it: ``g.v(t)`` is the ONNX value name of a tensor (or of a Python scalar,
made a constant), ``g.node(...)`` appends a node and returns its output name(s).
"""
from __future__ import annotations

import numbers

import numpy as np

import ember.tensor as et
import onnx
from ember.tensor import extension as ext
from onnx import helper, numpy_helper

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


class UnsupportedOperatorError(RuntimeError):
    """An op reached by the trace has no ONNX mapping (or cannot be mapped for these
    arguments). ``op`` names it, ``module`` the module path that called it."""

    def __init__(self, op: str, module: str, detail: str = "") -> None:
        self.op, self.module = op, module
        where = f" (called from module '{module}')" if module else " (called from the top level)"
        msg = f"ember.onnx.export: op '{op}' has no ONNX mapping{where}"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)


def np_dtype(t) -> np.dtype:
    """The NumPy dtype of a tensor."""
    return np.dtype(ext.unwrap(t).dtype)


def onnx_type(dtype) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def to_numpy(t) -> np.ndarray:
    arr = ext.unwrap(t)
    if not isinstance(arr, np.ndarray):
        arr = arr.get()
    return np.array(arr, copy=True)


def is_tensor(x) -> bool:
    return isinstance(x, et.Tensor)


class GraphContext:
    """What a converter writes to. ``opset`` is the target opset; ``module`` the current
    module path (for error messages)."""

    def __init__(self, tracer, opset: int) -> None:
        self.tracer = tracer
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, onnx.TensorProto] = {}
        self._const_cache: dict = {}
        self._used: set[str] = set()
        self._counter = 0
        self.op = ""  # the op being converted (errors)
        self.dynamic_sizes: set[int] = set()  # traced sizes of the dynamic input axes

    # ------------------------------------------------------------------ names
    def fresh(self, hint: str) -> str:
        self._counter += 1
        name = f"{hint}_{self._counter}"
        while name in self._used:
            self._counter += 1
            name = f"{hint}_{self._counter}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> str:
        """Claim an exact name (inputs, parameters); a clash gets a suffix."""
        if name in self._used:
            return self.fresh(name)
        self._used.add(name)
        return name

    @property
    def module(self) -> str:
        return self.tracer.module_path()

    def unsupported(self, detail: str = "") -> UnsupportedOperatorError:
        return UnsupportedOperatorError(self.op, self.module, detail)

    # ------------------------------------------------------------------ nodes
    def node(self, op_type: str, inputs, n_out: int = 1, **attrs):
        """Append ``op_type(inputs)`` (``None`` inputs become ONNX's empty optional) and
        return its output name (a list when ``n_out > 1``)."""
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        prefix = self.module or "model"
        node = helper.make_node(op_type, ["" if i is None else i for i in inputs], outs,
                                name=self.fresh(f"/{prefix}/{op_type}"),
                                **{k: v for k, v in attrs.items() if v is not None})
        self.nodes.append(node)
        return outs[0] if n_out == 1 else outs

    # ------------------------------------------------------------------ constants
    def initializer(self, name: str, array: np.ndarray, doc: str = "") -> str:
        proto = numpy_helper.from_array(np.array(array, order="C", copy=True), name)
        if doc:
            proto.doc_string = doc
        self.initializers[name] = proto
        return name

    def const(self, value, dtype=None) -> str:
        """A constant (``Constant`` node) holding ``value`` (array-like) as ``dtype``;
        small constants are shared."""
        arr = np.asarray(value, dtype=dtype)
        key = None
        if arr.size <= 64:
            key = (arr.dtype.str, arr.shape, arr.tobytes())
            hit = self._const_cache.get(key)
            if hit is not None:
                return hit
        name = self.fresh("const")
        value = numpy_helper.from_array(np.array(arr, order="C", copy=True), name)
        node = helper.make_node("Constant", [], [name], name=self.fresh("/Constant"), value=value)
        self.nodes.append(node)
        if key is not None:
            self._const_cache[key] = name
        return name

    def ints(self, values) -> str:
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1))

    def int_scalar(self, value: int) -> str:
        return self.const(np.asarray(int(value), dtype=np.int64))

    # ------------------------------------------------------------------ values
    def v(self, x, dtype=None) -> str:
        """The value name of tensor or Python scalar ``x``, cast to ``dtype`` if given."""
        if is_tensor(x):
            name = self.tracer.value(x)
            if dtype is not None and np_dtype(x) != np.dtype(dtype):
                return self.cast(name, dtype)
            return name
        if isinstance(x, (bool, numbers.Number, np.generic)):
            if dtype is None:
                dtype = np.bool_ if isinstance(x, bool) else (
                    np.int64 if isinstance(x, numbers.Integral) else np.float32)
            return self.const(np.asarray(x, dtype=dtype))
        if isinstance(x, (list, tuple)) and all(isinstance(e, numbers.Number) for e in x):
            return self.const(np.asarray(x, dtype=dtype))
        raise self.unsupported(f"cannot convert argument of type {type(x).__name__}")

    def cast(self, name: str, dtype) -> str:
        return self.node("Cast", [name], to=onnx_type(dtype))

    def dtype(self, x) -> np.dtype:
        if is_tensor(x):
            return np_dtype(x)
        return np.dtype(np.bool_ if isinstance(x, bool) else (
            np.int64 if isinstance(x, numbers.Integral) else np.float32))

    @staticmethod
    def shape(x) -> tuple:
        return tuple(ext.unwrap(x).shape) if is_tensor(x) else ()

    # ------------------------------------------------------------------ opset-aware helpers
    def reduce(self, op_type: str, x: str, axes, keepdims: bool) -> str:
        """``op_type`` over ``axes`` (None: all), with axes as an input where the opset
        takes them that way."""
        as_input = op_type == "ReduceSum" or self.opset >= 18
        if axes is None:
            return self.node(op_type, [x], keepdims=int(keepdims))
        axes = [int(a) for a in axes]
        if as_input:
            return self.node(op_type, [x, self.ints(axes)], keepdims=int(keepdims))
        return self.node(op_type, [x], axes=axes, keepdims=int(keepdims))

    def unsqueeze(self, x: str, axes) -> str:
        return self.node("Unsqueeze", [x, self.ints(axes)])

    def squeeze(self, x: str, axes) -> str:
        return self.node("Squeeze", [x, self.ints(axes)])

    def slice(self, x: str, starts, ends, axes, steps=None) -> str:
        ins = [x, self.ints(starts), self.ints(ends), self.ints(axes)]
        if steps is not None:
            ins.append(self.ints(steps))
        return self.node("Slice", ins)
