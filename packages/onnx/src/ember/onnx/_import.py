"""``load_model``: an ONNX graph as an ember ``Module`` that runs it with ember ops.

Floating-point initializers become :class:`~ember.nn.Parameter` s (those exported as buffers,
marked ``ember:buffer``, become buffers), registered under their own names: a dotted name such
as ``layers.0.weight`` becomes parameter ``weight`` of submodule ``layers.0``, so the imported
module's ``state_dict()`` keys are the exporting model's and ``load_state_dict`` works between
them. Every node runs as ember ops, so gradients flow to the parameters and the imported model
can be fine-tuned.
"""
from __future__ import annotations

import math
import os
import re

import numpy as np

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
import onnx
from ember.tensor import extension as ext
from onnx import helper, numpy_helper

from ._export import BUFFER_DOC

__all__ = ["ONNXModule", "load_model"]

_HANDLERS: dict = {}


def _handler(*names):
    def deco(fn):
        for n in names:
            _HANDLERS[n] = fn
        return fn
    return deco


def _et_dtype(onnx_elem_type: int):
    return ext.dtype_of(helper.tensor_dtype_to_np_dtype(onnx_elem_type))


def _tensor(arr: np.ndarray):
    arr = np.asarray(arr)
    return ext.wrap(np.array(arr, copy=True))


def _ints(t) -> list[int]:
    if t is None:
        return []
    if isinstance(t, et.Tensor):
        return [int(v) for v in np.asarray(t.detach().cpu().numpy()).reshape(-1)]
    return [int(v) for v in np.asarray(t).reshape(-1)]


def _scalar(t):
    return t.detach().reshape(-1)[0].item() if isinstance(t, et.Tensor) else t


def _attrs(node) -> dict:
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        out[a.name] = v.decode() if isinstance(v, bytes) else v
    return out


def _sanitize(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    if not s or s[0].isdigit():
        s = "p_" + s
    return s


def _wrap(d: int, n: int) -> int:
    return d % n if n else 0


class ONNXModule(nn.Module):
    """Runs an ONNX graph with ember ops. ``forward(*inputs)`` takes the graph's inputs in
    order and returns its output (a tuple when the graph has several)."""

    def __init__(self, model: onnx.ModelProto) -> None:
        super().__init__()
        graph = model.graph
        opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                     13)
        object.__setattr__(self, "_onnx_opset", opset)
        inits = {t.name: t for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in inits]
        self.output_names = [o.name for o in graph.output]
        self._nodes = [(n.op_type, list(n.input), list(n.output), _attrs(n), n.name)
                       for n in graph.node]
        for op_type, *_ in self._nodes:
            if op_type not in _HANDLERS:
                raise NotImplementedError(f"ember.onnx.load_model: ONNX operator "
                                          f"'{op_type}' is not supported")
        self._where: dict[str, tuple] = {}
        self._consts: dict[str, et.Tensor] = {}
        for name, proto in inits.items():
            arr = numpy_helper.to_array(proto)
            floating = np.issubdtype(arr.dtype, np.floating)
            buffer = proto.doc_string == BUFFER_DOC
            if not floating and not buffer:
                self._consts[name] = _tensor(arr)
                continue
            owner, attr = self._owner(name)
            t = _tensor(arr)
            if floating and not buffer:
                owner.register_parameter(attr, nn.Parameter(t))
            else:
                owner.register_buffer(attr, t)
            self._where[name] = (owner, attr)

    def _owner(self, name: str):
        """The submodule and attribute a (dotted) initializer name maps to."""
        parts = name.split(".")
        if len(parts) > 1 and all(re.fullmatch(r"\w+", p) for p in parts):
            owner = self
            ok = True
            for p in parts[:-1]:
                child = dict(owner.named_children()).get(p)
                if child is None:
                    if hasattr(owner, p):
                        ok = False
                        break
                    child = nn.Module()
                    owner.add_module(p, child)
                owner = child
            if ok and not hasattr(owner, parts[-1]):
                return owner, parts[-1]
        attr = _sanitize(name)
        while hasattr(self, attr):
            attr += "_"
        return self, attr

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"ONNXModule.forward() takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        env: dict = dict(self._consts)
        for name, (owner, attr) in self._where.items():
            env[name] = getattr(owner, attr)
        for name, x in zip(self.input_names, inputs):
            env[name] = x if isinstance(x, et.Tensor) else et.tensor(x)
        for op_type, ins, outs, attrs, node_name in self._nodes:
            args = [env[i] if i else None for i in ins]
            try:
                res = _HANDLERS[op_type](self, attrs, args, len(outs))
            except Exception as e:
                raise type(e)(f"ember.onnx: node '{node_name}' ({op_type}): {e}") from e
            if isinstance(res, et.Tensor):
                res = [res]
            for n, r in zip(outs, res):
                if n:
                    env[n] = r
        result = tuple(env[n] for n in self.output_names)
        return result[0] if len(result) == 1 else result


def load_model(path_or_proto) -> ONNXModule:
    """Build an :class:`ONNXModule` from an ONNX file path, bytes, file object or
    ``onnx.ModelProto``."""
    if isinstance(path_or_proto, onnx.ModelProto):
        proto = path_or_proto
    elif isinstance(path_or_proto, (bytes, bytearray)):
        proto = onnx.load_model_from_string(bytes(path_or_proto))
    elif isinstance(path_or_proto, (str, os.PathLike)) or hasattr(path_or_proto, "read"):
        proto = onnx.load_model(path_or_proto)
    else:
        raise TypeError(f"load_model: expected a path, bytes, file or ModelProto, got "
                        f"{type(path_or_proto).__name__}")
    return ONNXModule(proto)


# ====================================================================== handlers
# fn(module, attrs, inputs, n_outputs) -> tensor or list of tensors

def _simple(fn):
    return lambda m, at, x, n: fn(x[0])


for _name, _fn in {
    "Identity": lambda x: x, "Abs": et.abs, "Acos": et.acos, "Acosh": et.acosh,
    "Asin": et.asin, "Asinh": et.asinh, "Atan": et.atan, "Atanh": et.atanh, "Ceil": et.ceil,
    "Cos": et.cos, "Cosh": et.cosh, "Erf": et.erf, "Exp": et.exp, "Floor": et.floor,
    "Log": et.log, "Neg": et.neg, "Reciprocal": et.reciprocal, "Relu": et.relu,
    "Sigmoid": et.sigmoid, "Sign": et.sign, "Sin": et.sin, "Sinh": et.sinh, "Sqrt": et.sqrt,
    "Tan": et.tan, "Tanh": et.tanh, "Round": et.round, "Not": et.logical_not,
    "IsNaN": et.isnan, "BitwiseNot": et.bitwise_not, "Softsign": F.softsign,
}.items():
    _HANDLERS[_name] = _simple(_fn)


@_handler("IsInf")
def _isinf(m, at, x, n):
    r = et.isinf(x[0])
    if not at.get("detect_negative", 1):
        r = r & (x[0] > 0)
    if not at.get("detect_positive", 1):
        r = r & (x[0] < 0)
    return r


def _binary(fn):
    return lambda m, at, x, n: fn(x[0], x[1])


for _name, _fn in {
    "Add": et.add, "Sub": et.sub, "Mul": et.mul, "Pow": et.pow, "Equal": et.eq,
    "Less": et.lt, "LessOrEqual": et.le, "Greater": et.gt, "GreaterOrEqual": et.ge,
    "And": et.logical_and, "Or": et.logical_or, "Xor": et.logical_xor,
    "BitwiseAnd": et.bitwise_and, "BitwiseOr": et.bitwise_or, "BitwiseXor": et.bitwise_xor,
    "MatMul": et.matmul,
}.items():
    _HANDLERS[_name] = _binary(_fn)


@_handler("Div")
def _div(m, at, x, n):
    a, b = x
    if a.dtype.is_floating_point or b.dtype.is_floating_point:
        return et.div(a, b)
    return et.div(a, b, rounding_mode="trunc")


@_handler("Mod")
def _mod(m, at, x, n):
    return et.fmod(x[0], x[1]) if at.get("fmod", 0) else et.remainder(x[0], x[1])


def _make_variadic(kind):
    fn = {"Max": et.maximum, "Min": et.minimum, "Sum": et.add, "Mean": et.add}[kind]

    def h(m, at, x, n):
        r = x[0]
        for y in x[1:]:
            r = fn(r, y)
        return r / len(x) if kind == "Mean" else r
    return h


for _k in ("Max", "Min", "Sum", "Mean"):
    _HANDLERS[_k] = _make_variadic(_k)


@_handler("Where")
def _where(m, at, x, n):
    return et.where(x[0], x[1], x[2])


@_handler("Clip")
def _clip(m, at, x, n):
    lo = x[1] if len(x) > 1 else at.get("min")
    hi = x[2] if len(x) > 2 else at.get("max")
    r = x[0]
    if lo is not None:
        r = et.maximum(r, lo.to(dtype=r.dtype) if isinstance(lo, et.Tensor)
                       else et.tensor(lo, dtype=r.dtype))
    if hi is not None:
        r = et.minimum(r, hi.to(dtype=r.dtype) if isinstance(hi, et.Tensor)
                       else et.tensor(hi, dtype=r.dtype))
    return r


@_handler("Cast")
def _cast(m, at, x, n):
    return x[0].to(dtype=_et_dtype(at["to"]))


@_handler("CastLike")
def _cast_like(m, at, x, n):
    return x[0].to(dtype=x[1].dtype)


@_handler("Gemm")
def _gemm(m, at, x, n):
    a, b = x[0], x[1]
    if at.get("transA", 0):
        a = a.t()
    if at.get("transB", 0):
        b = b.t()
    y = et.matmul(a, b)
    alpha, beta = at.get("alpha", 1.0), at.get("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if len(x) > 2 and x[2] is not None:
        c = x[2] if beta == 1.0 else x[2] * beta
        y = y + c
    return y


# ------------------------------------------------------------------ shapes
@_handler("Transpose")
def _transpose(m, at, x, n):
    perm = at.get("perm") or list(range(x[0].dim()))[::-1]
    return x[0].permute(*perm)


@_handler("Reshape")
def _reshape(m, at, x, n):
    spec = _ints(x[1])
    shape = list(x[0].shape)
    if not at.get("allowzero", 0):
        spec = [shape[i] if s == 0 else s for i, s in enumerate(spec)]
    return x[0].reshape(*spec)


@_handler("Flatten")
def _flatten(m, at, x, n):
    axis = _wrap(at.get("axis", 1), x[0].dim() + 1) if x[0].dim() else 0
    lead = int(np.prod(list(x[0].shape[:axis]))) if axis else 1
    return x[0].reshape(lead, -1)


@_handler("Expand")
def _expand(m, at, x, n):
    shape = np.broadcast_shapes(tuple(x[0].shape), tuple(_ints(x[1])))
    return x[0].expand(*shape)


def _axes_arg(m, at, x, idx=1):
    if len(x) > idx and x[idx] is not None:
        return _ints(x[idx])
    return at.get("axes")


@_handler("Squeeze")
def _squeeze(m, at, x, n):
    axes = _axes_arg(m, at, x)
    if axes is None:
        return x[0].squeeze()
    nd = x[0].dim()
    return x[0].squeeze(tuple(_wrap(a, nd) for a in axes))


@_handler("Unsqueeze")
def _unsqueeze(m, at, x, n):
    axes = _axes_arg(m, at, x)
    nd = x[0].dim() + len(axes)
    r = x[0]
    for a in sorted(_wrap(a, nd) for a in axes):
        r = r.unsqueeze(a)
    return r


@_handler("Slice")
def _slice(m, at, x, n):
    data = x[0]
    if len(x) > 1:
        starts, ends = _ints(x[1]), _ints(x[2])
        axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else list(range(len(starts)))
        steps = _ints(x[4]) if len(x) > 4 and x[4] is not None else [1] * len(starts)
    else:
        starts, ends = at["starts"], at["ends"]
        axes = at.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    nd = data.dim()
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _wrap(a, nd)
        size = data.shape[a]
        s, e, st = slice(s, e, st).indices(size)
        if st == 1:
            data = data.narrow(a, s, max(0, e - s))
        else:
            data = data.index_select(a, et.tensor(list(range(s, e, st)), dtype=et.int64))
    return data


@_handler("Gather")
def _gather(m, at, x, n):
    data, idx = x
    axis = _wrap(at.get("axis", 0), data.dim())
    size = data.shape[axis]
    idx = idx.to(dtype=et.int64)
    idx = et.where(idx < 0, idx + size, idx)
    if idx.dim() == 0:
        return data.select(axis, int(idx.item()))
    flat = data.index_select(axis, idx.reshape(-1))
    shape = list(data.shape[:axis]) + list(idx.shape) + list(data.shape[axis + 1:])
    return flat.reshape(*shape)


@_handler("GatherElements")
def _gather_elements(m, at, x, n):
    data, idx = x
    axis = _wrap(at.get("axis", 0), data.dim())
    idx = idx.to(dtype=et.int64)
    idx = et.where(idx < 0, idx + data.shape[axis], idx)
    return et.gather(data, axis, idx)


@_handler("ScatterElements")
def _scatter_elements(m, at, x, n):
    data, idx, upd = x
    axis = _wrap(at.get("axis", 0), data.dim())
    red = at.get("reduction", "none")
    idx = idx.to(dtype=et.int64)
    if red == "add":
        return et.scatter_add(data, axis, idx, upd)
    if red == "none":
        return et.scatter(data, axis, idx, upd)
    raise NotImplementedError(f"ScatterElements reduction={red!r}")


@_handler("ScatterND")
def _scatter_nd(m, at, x, n):
    data, idx, upd = x
    red = at.get("reduction", "none")
    k = idx.shape[-1]
    shape = list(data.shape)
    strides = [int(np.prod(shape[i + 1:k])) for i in range(k)]
    lin = (idx.to(dtype=et.int64) * et.tensor(strides, dtype=et.int64)).sum(-1).reshape(-1)
    inner = shape[k:]
    flat = data.reshape(int(np.prod(shape[:k])), *inner) if k else data.reshape(1, *inner)
    u = upd.reshape(-1, *inner)
    if red == "add":
        out = flat.index_add(0, lin, u)
    elif red == "none":
        out = flat.index_copy(0, lin, u)
    else:
        raise NotImplementedError(f"ScatterND reduction={red!r}")
    return out.reshape(*shape)


@_handler("Concat")
def _concat(m, at, x, n):
    ts = [t for t in x if t is not None]
    return et.cat(ts, _wrap(at["axis"], ts[0].dim()))


@_handler("Split")
def _split(m, at, x, n):
    data = x[0]
    axis = _wrap(at.get("axis", 0), data.dim())
    if len(x) > 1 and x[1] is not None:
        sizes = _ints(x[1])
    elif "split" in at:
        sizes = list(at["split"])
    else:
        size = data.shape[axis]
        step = -(-size // n)
        sizes = [min(step, size - i) for i in range(0, size, step)]
    return list(et.split(data, sizes, axis))


@_handler("Tile")
def _tile(m, at, x, n):
    return x[0].repeat(*_ints(x[1]))


@_handler("Trilu")
def _trilu(m, at, x, n):
    k = _ints(x[1])[0] if len(x) > 1 and x[1] is not None else 0
    return et.triu(x[0], k) if at.get("upper", 1) else et.tril(x[0], k)


@_handler("Einsum")
def _einsum(m, at, x, n):
    eq = at["equation"]
    return et.einsum(eq.decode() if isinstance(eq, bytes) else eq, *x)


@_handler("Shape")
def _shape(m, at, x, n):
    shape = list(x[0].shape)
    start, end = at.get("start", 0), at.get("end")
    return et.tensor(shape[start:end], dtype=et.int64)


@_handler("Size")
def _size(m, at, x, n):
    return et.tensor(x[0].numel(), dtype=et.int64)


@_handler("Constant")
def _constant(m, at, x, n):
    if "value" in at:
        return _tensor(numpy_helper.to_array(at["value"]))
    for key, dt in (("value_float", np.float32), ("value_floats", np.float32),
                    ("value_int", np.int64), ("value_ints", np.int64)):
        if key in at:
            return _tensor(np.asarray(at[key], dtype=dt))
    raise NotImplementedError(f"Constant with attributes {sorted(at)}")


@_handler("ConstantOfShape")
def _constant_of_shape(m, at, x, n):
    value = numpy_helper.to_array(at["value"]) if "value" in at else np.zeros(1, np.float32)
    return _tensor(np.full(_ints(x[0]), value.reshape(-1)[0], dtype=value.dtype))


@_handler("Range")
def _range(m, at, x, n):
    start, limit, delta = (_scalar(t) for t in x)
    return et.arange(start, limit, delta, dtype=x[0].dtype)


@_handler("NonZero")
def _nonzero(m, at, x, n):
    return et.nonzero(x[0]).t()


@_handler("Compress")
def _compress(m, at, x, n):
    data, cond = x
    idx = et.nonzero(cond.reshape(-1)).reshape(-1)
    if "axis" not in at:
        return data.reshape(-1).index_select(0, idx)
    axis = _wrap(at["axis"], data.dim())
    return data.index_select(axis, idx)


@_handler("TopK")
def _topk(m, at, x, n):
    k = _ints(x[1])[0]
    axis = at.get("axis", -1)
    v, i = et.topk(x[0], k, axis, bool(at.get("largest", 1)), bool(at.get("sorted", 1)))
    return [v, i]


@_handler("CumSum")
def _cumsum(m, at, x, n):
    axis = _wrap(_ints(x[1])[0], x[0].dim())
    data = x[0]
    if at.get("reverse", 0):
        data = data.flip(axis)
    r = et.cumsum(data, axis)
    if at.get("exclusive", 0):
        r = r - data
    if at.get("reverse", 0):
        r = r.flip(axis)
    return r


# ------------------------------------------------------------------ reductions
def _reduce_axes(m, at, x, op_type):
    data = x[0]
    from_input = op_type == "ReduceSum" and m._onnx_opset >= 13 or m._onnx_opset >= 18
    axes = (_ints(x[1]) if len(x) > 1 and x[1] is not None else None) if from_input \
        else at.get("axes")
    if not axes:
        if at.get("noop_with_empty_axes", 0):
            return None
        return tuple(range(data.dim()))
    return tuple(sorted({_wrap(a, data.dim()) for a in axes}))


def _make_reduce(op_type):
    def h(m, at, x, n):
        data = x[0]
        axes = _reduce_axes(m, at, x, op_type)
        keep = bool(at.get("keepdims", 1))
        if axes is None:
            return data
        if not axes:  # 0-d input
            return data
        if op_type == "ReduceSum":
            return data.sum(axes, keepdim=keep)
        if op_type == "ReduceMean":
            return data.mean(axes, keepdim=keep)
        if op_type == "ReduceMax":
            return et.amax(data, axes, keep)
        if op_type == "ReduceMin":
            return et.amin(data, axes, keep)
        if op_type == "ReduceLogSumExp":
            return et.logsumexp(data, axes, keep)
        if op_type == "ReduceL1":
            return data.abs().sum(axes, keepdim=keep)
        if op_type == "ReduceL2":
            return (data * data).sum(axes, keepdim=keep).sqrt()
        if op_type == "ReduceSumSquare":
            return (data * data).sum(axes, keepdim=keep)
        if op_type == "ReduceLogSum":
            return data.sum(axes, keepdim=keep).log()
        if op_type == "ReduceProd":
            r = data
            for a in sorted(axes, reverse=True):
                r = r.prod(a, keepdim=keep)
            return r
        raise AssertionError(op_type)
    return h


for _k in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceLogSumExp",
           "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceProd"):
    _HANDLERS[_k] = _make_reduce(_k)


def _make_arg(kind):
    def h(m, at, x, n):
        data = x[0]
        axis = _wrap(at.get("axis", 0), data.dim())
        keep = bool(at.get("keepdims", 1))
        if at.get("select_last_index", 0):
            flipped = data.flip(axis)
            i = (et.argmax if kind == "max" else et.argmin)(flipped, axis, keep)
            return data.shape[axis] - 1 - i
        return (et.argmax if kind == "max" else et.argmin)(data, axis, keep)
    return h


_HANDLERS["ArgMax"] = _make_arg("max")
_HANDLERS["ArgMin"] = _make_arg("min")


# ------------------------------------------------------------------ nn
def _make_softmax(log):
    def h(m, at, x, n):
        axis = at.get("axis", -1 if m._onnx_opset >= 13 else 1)
        data = x[0]
        if m._onnx_opset < 13:
            axis = _wrap(axis, data.dim())
            shape = list(data.shape)
            flat = data.reshape(int(np.prod(shape[:axis])) if axis else 1, -1)
            r = F.log_softmax(flat, dim=1) if log else F.softmax(flat, dim=1)
            return r.reshape(*shape)
        return F.log_softmax(data, dim=axis) if log else F.softmax(data, dim=axis)
    return h


_HANDLERS["Softmax"] = _make_softmax(False)
_HANDLERS["LogSoftmax"] = _make_softmax(True)


@_handler("LeakyRelu")
def _leaky_relu(m, at, x, n):
    return F.leaky_relu(x[0], at.get("alpha", 0.01))


@_handler("Elu")
def _elu(m, at, x, n):
    return F.elu(x[0], at.get("alpha", 1.0))


@_handler("Selu")
def _selu(m, at, x, n):
    alpha, gamma = at.get("alpha", 1.67326319217681884765625), at.get("gamma",
                                                                       1.05070102214813232421875)
    return et.elu(x[0], alpha, gamma)


@_handler("Gelu")
def _gelu(m, at, x, n):
    approx = at.get("approximate", "none")
    return F.gelu(x[0], approximate=approx.decode() if isinstance(approx, bytes) else approx)


@_handler("Softplus")
def _softplus(m, at, x, n):
    return F.softplus(x[0])


@_handler("HardSigmoid")
def _hard_sigmoid(m, at, x, n):
    alpha, beta = at.get("alpha", 0.2), at.get("beta", 0.5)
    return (x[0] * alpha + beta).clamp(0.0, 1.0)


@_handler("Mish")
def _mish(m, at, x, n):
    return F.mish(x[0])


@_handler("HardSwish")
def _hard_swish(m, at, x, n):
    return F.hardswish(x[0])


@_handler("PRelu")
def _prelu(m, at, x, n):
    return et.where(x[0] >= 0, x[0], x[0] * x[1])


@_handler("Dropout")
def _dropout(m, at, x, n):
    out = [x[0]]
    if n > 1:
        out.append(et.ones(*x[0].shape, dtype=et.bool))
    return out


@_handler("LayerNormalization")
def _layer_norm(m, at, x, n):
    data = x[0]
    axis = _wrap(at.get("axis", -1), data.dim())
    shape = list(data.shape[axis:])
    bias = x[2] if len(x) > 2 else None
    return F.layer_norm(data, shape, x[1], bias, at.get("epsilon", 1e-5))


@_handler("BatchNormalization")
def _batch_norm(m, at, x, n):
    data, scale, bias, mean, var = x[:5]
    return F.batch_norm(data, mean, var, scale, bias, False, 0.0, at.get("epsilon", 1e-5))


@_handler("InstanceNormalization")
def _instance_norm(m, at, x, n):
    return F.instance_norm(x[0], None, None, x[1], x[2], eps=at.get("epsilon", 1e-5))


def _pads(at, nd, kernel, strides, dilations, in_shape):
    pads = at.get("pads", [0] * (2 * nd))
    auto = at.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
        for i in range(nd):
            out = -(-in_shape[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 -
                        in_shape[i])
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pads[i], pads[i + nd] = lo, total - lo
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    return list(pads)


def _apply_pads(data, pads, nd, value=0.0):
    """Symmetric pads as a list for the layer; asymmetric ones applied with F.pad first."""
    begin, end = pads[:nd], pads[nd:]
    if begin == end:
        return data, list(begin)
    flat = []
    for i in reversed(range(nd)):
        flat += [begin[i], end[i]]
    return F.pad(data, flat, value=value), [0] * nd


@_handler("Conv")
def _conv(m, at, x, n):
    data, w = x[0], x[1]
    b = x[2] if len(x) > 2 else None
    nd = data.dim() - 2
    kernel = at.get("kernel_shape", list(w.shape[2:]))
    strides = at.get("strides", [1] * nd)
    dil = at.get("dilations", [1] * nd)
    pads = _pads(at, nd, kernel, strides, dil, list(data.shape[2:]))
    data, pad = _apply_pads(data, pads, nd)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    return fn(data, w, b, list(strides), pad, list(dil), at.get("group", 1))


@_handler("ConvTranspose")
def _conv_transpose(m, at, x, n):
    data, w = x[0], x[1]
    b = x[2] if len(x) > 2 else None
    nd = data.dim() - 2
    strides = at.get("strides", [1] * nd)
    dil = at.get("dilations", [1] * nd)
    pads = at.get("pads", [0] * (2 * nd))
    if pads[:nd] != pads[nd:]:
        raise NotImplementedError("ConvTranspose with asymmetric pads")
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    return fn(data, w, b, list(strides), list(pads[:nd]), list(at.get("output_padding",
                                                                      [0] * nd)),
              at.get("group", 1), list(dil))


@_handler("MaxPool")
def _max_pool(m, at, x, n):
    data = x[0]
    nd = data.dim() - 2
    kernel = at["kernel_shape"]
    strides = at.get("strides", [1] * nd)
    dil = at.get("dilations", [1] * nd)
    pads = _pads(at, nd, kernel, strides, dil, list(data.shape[2:]))
    data, pad = _apply_pads(data, pads, nd, value=-math.inf)
    fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]
    if n < 2:
        return fn(data, list(kernel), list(strides), pad, list(dil),
                  bool(at.get("ceil_mode", 0)))
    y, idx = fn(data, list(kernel), list(strides), pad, list(dil),
                bool(at.get("ceil_mode", 0)), True)
    if any(pads) or at.get("storage_order", 0):
        raise NotImplementedError("MaxPool indices with padding or column-major order")
    N, C = data.shape[0], data.shape[1]
    plane = int(np.prod(list(data.shape[2:])))
    base = et.arange(N * C, dtype=et.int64).reshape(N, C, *([1] * nd)) * plane
    return [y, idx + base]


@_handler("AveragePool")
def _avg_pool(m, at, x, n):
    data = x[0]
    nd = data.dim() - 2
    kernel = at["kernel_shape"]
    strides = at.get("strides", [1] * nd)
    pads = _pads(at, nd, kernel, strides, [1] * nd, list(data.shape[2:]))
    include = bool(at.get("count_include_pad", 0))
    if pads[:nd] != pads[nd:]:
        if not include:
            raise NotImplementedError("AveragePool with asymmetric pads excluding padding")
        data, pad = _apply_pads(data, pads, nd)
    else:
        pad = pads[:nd]
    fn = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[nd]
    return fn(data, list(kernel), list(strides), list(pad), bool(at.get("ceil_mode", 0)),
              include)


@_handler("GlobalAveragePool")
def _gap(m, at, x, n):
    return x[0].mean(tuple(range(2, x[0].dim())), keepdim=True)


@_handler("GlobalMaxPool")
def _gmp(m, at, x, n):
    return et.amax(x[0], tuple(range(2, x[0].dim())), True)


@_handler("Pad")
def _pad(m, at, x, n):
    data = x[0]
    pads = _ints(x[1]) if len(x) > 1 else list(at["pads"])
    value = _scalar(x[2]) if len(x) > 2 and x[2] is not None else 0.0
    mode = at.get("mode", b"constant")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    nd = data.dim()
    axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else list(range(nd))
    full_b, full_e = [0] * nd, [0] * nd
    k = len(axes)
    for j, a in enumerate(axes):
        full_b[_wrap(a, nd)], full_e[_wrap(a, nd)] = pads[j], pads[j + k]
    flat = []
    for i in reversed(range(nd)):
        flat += [full_b[i], full_e[i]]
    while len(flat) > 2 and flat[-1] == 0 and flat[-2] == 0:
        flat = flat[:-2]
    mode = {"edge": "replicate"}.get(mode, mode)
    return F.pad(data, flat, mode=mode, value=value if mode == "constant" else None)


# ------------------------------------------------------------------ losses
_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _loss_attrs(at):
    reduction = at.get("reduction", "mean")
    reduction = reduction.decode() if isinstance(reduction, bytes) else reduction
    # without ignore_index ONNX ignores no class; -100 is no class either (labels are >= 0)
    return reduction, int(at.get("ignore_index", -100))


@_handler("SoftmaxCrossEntropyLoss")
def _softmax_cross_entropy_loss(m, at, x, n):
    scores, labels = x[0], x[1]
    weight = x[2] if len(x) > 2 else None
    reduction, ignore = _loss_attrs(at)
    loss = et.cross_entropy_loss(scores, labels, weight, _REDUCTION_ENUM[reduction], ignore)
    return [loss, F.log_softmax(scores, 1)] if n > 1 else loss


@_handler("NegativeLogLikelihoodLoss")
def _negative_log_likelihood_loss(m, at, x, n):
    weight = x[2] if len(x) > 2 else None
    reduction, ignore = _loss_attrs(at)
    return F.nll_loss(x[0], x[1], weight, ignore_index=ignore, reduction=reduction)


# ------------------------------------------------------------------ recurrent
def _act(name: str):
    name = name.decode() if isinstance(name, bytes) else name
    return {"Sigmoid": et.sigmoid, "Tanh": et.tanh, "Relu": et.relu}[name]


def _rnn_common(at, x, gates):
    X, W, R = x[0], x[1], x[2]
    B = x[3] if len(x) > 3 else None
    seq_lens = x[4] if len(x) > 4 else None
    h0 = x[5] if len(x) > 5 else None
    if at.get("layout", 0):
        X = X.transpose(0, 1)
        if h0 is not None:
            h0 = h0.transpose(0, 1)
    direction = at.get("direction", b"forward")
    direction = direction.decode() if isinstance(direction, bytes) else direction
    H = at.get("hidden_size", R.shape[-1])
    T, N = X.shape[0], X.shape[1]
    # sequence_lens: steps at or past a sequence's length leave its state alone and output
    # zeros, so the reverse direction starts at each sequence's last step
    within = None
    if seq_lens is not None:
        within = (et.arange(T).reshape(T, 1) < seq_lens.to(dtype=et.int64).reshape(1, N))
        within = within.unsqueeze(-1)  # (T, N, 1)
    dirs = 2 if direction == "bidirectional" else 1
    if B is None:
        B = et.zeros(dirs, 2 * gates * H, dtype=X.dtype)
    if h0 is None:
        h0 = et.zeros(dirs, N, H, dtype=X.dtype)
    return X, W, R, B, h0, direction, H, T, dirs, within


def _step(within, t, new, old):
    """The state after step ``t``: ``new`` where the step is within its sequence."""
    return new if within is None else et.where(within[t], new, old)


def _emit(within, t, h):
    """Step ``t``'s output: ``h``, zero past each sequence's length."""
    return h if within is None else et.where(within[t], h, et.zeros_like(h))


def _rnn_outputs(at, ys, hs, cs=None):
    # ys: per direction, list over time of (N, H)
    Y = et.stack([et.stack(y, 0) for y in ys], 1)  # (T, dirs, N, H)
    Yh = et.stack(hs, 0)
    Yc = et.stack(cs, 0) if cs is not None else None
    if at.get("layout", 0):
        Y = Y.permute(2, 0, 1, 3)
        Yh = Yh.transpose(0, 1)
        Yc = Yc.transpose(0, 1) if Yc is not None else None
    return [Y, Yh] + ([Yc] if Yc is not None else [])


def _time_order(T, d, direction):
    backward = direction == "reverse" or (direction == "bidirectional" and d == 1)
    return list(range(T - 1, -1, -1)) if backward else list(range(T))


@_handler("LSTM")
def _lstm(m, at, x, n):
    X, W, R, B, h0, direction, H, T, dirs, within = _rnn_common(at, x, 4)
    c0 = x[6] if len(x) > 6 and x[6] is not None else et.zeros(dirs, X.shape[1], H,
                                                                dtype=X.dtype)
    if at.get("layout", 0) and len(x) > 6 and x[6] is not None:
        c0 = c0.transpose(0, 1)
    if len(x) > 7 and x[7] is not None:
        raise NotImplementedError("LSTM peepholes")
    acts = at.get("activations")
    f_act, g_act, h_act = ([_act(a) for a in acts[:3]] if acts else
                           [et.sigmoid, et.tanh, et.tanh])
    ys, hs, cs = [], [], []
    for d in range(dirs):
        w, r = W[d], R[d]
        b = B[d][:4 * H] + B[d][4 * H:]
        xw = et.matmul(X, w.t()) + b  # (T, N, 4H)
        h, c = h0[d], c0[d]
        out = [None] * T
        for t in _time_order(T, d, direction):
            z = xw[t] + et.matmul(h, r.t())
            i_, o_, f_, c_ = z.chunk(4, -1)
            c_new = f_act(f_) * c + f_act(i_) * g_act(c_)
            h = _step(within, t, f_act(o_) * h_act(c_new), h)
            c = _step(within, t, c_new, c)
            out[t] = _emit(within, t, h)
        ys.append(out)
        hs.append(h)
        cs.append(c)
    return _rnn_outputs(at, ys, hs, cs)


@_handler("GRU")
def _gru(m, at, x, n):
    X, W, R, B, h0, direction, H, T, dirs, within = _rnn_common(at, x, 3)
    acts = at.get("activations")
    f_act, g_act = [_act(a) for a in acts[:2]] if acts else [et.sigmoid, et.tanh]
    lbr = at.get("linear_before_reset", 0)
    ys, hs = [], []
    for d in range(dirs):
        w, r = W[d], R[d]
        wb, rb = B[d][:3 * H], B[d][3 * H:]
        xw = et.matmul(X, w.t()) + wb
        rz, rr, rh = r[:H], r[H:2 * H], r[2 * H:]
        bz, br, bh = rb[:H], rb[H:2 * H], rb[2 * H:]
        h = h0[d]
        out = [None] * T
        for t in _time_order(T, d, direction):
            xz, xr, xh = xw[t].chunk(3, -1)
            z = f_act(xz + et.matmul(h, rz.t()) + bz)
            rg = f_act(xr + et.matmul(h, rr.t()) + br)
            if lbr:
                hh = g_act(xh + rg * (et.matmul(h, rh.t()) + bh))
            else:
                hh = g_act(xh + et.matmul(rg * h, rh.t()) + bh)
            h = _step(within, t, (1 - z) * hh + z * h, h)
            out[t] = _emit(within, t, h)
        ys.append(out)
        hs.append(h)
    return _rnn_outputs(at, ys, hs)


@_handler("RNN")
def _rnn(m, at, x, n):
    X, W, R, B, h0, direction, H, T, dirs, within = _rnn_common(at, x, 1)
    acts = at.get("activations")
    act = _act(acts[0]) if acts else et.tanh
    ys, hs = [], []
    for d in range(dirs):
        w, r = W[d], R[d]
        b = B[d][:H] + B[d][H:]
        xw = et.matmul(X, w.t()) + b
        h = h0[d]
        out = [None] * T
        for t in _time_order(T, d, direction):
            h = _step(within, t, act(xw[t] + et.matmul(h, r.t())), h)
            out[t] = _emit(within, t, h)
        ys.append(out)
        hs.append(h)
    return _rnn_outputs(at, ys, hs)
