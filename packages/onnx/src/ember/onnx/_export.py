"""``export``: trace a model through the op registry's recorder hook and write ONNX.

The trace installs a recorder around the one ember-tensor routes every op call through
(``extension.get_recorder`` / ``set_recorder``), runs the model once on the example inputs under
``no_grad``, and converts each top-level op call (ops that an op calls internally are not
recorded twice) with its bound arguments into ONNX nodes, right away, so an op without a
mapping fails at the call that reached it, naming the op and the module path.

Every op the trace converts is a registry op, losses and packing included (``F.nll_loss`` runs
``nll_loss_forward``; ``pack_padded_sequence`` / ``pad_packed_sequence`` run
``_pack_padded_sequence`` / ``_pad_packed_sequence`` around ``sort`` / ``index_select``): their
converters in ``_symbolic.SYMBOLICS`` compute the input-dependent parts (target masks, batch
sizes) in the graph. Modules with a module converter (``_symbolic.MODULE_SYMBOLICS``;
``nn.RNN`` / ``nn.LSTM`` / ``nn.GRU`` built in) are recorded whole: ``Module.__call__`` is
wrapped during the trace, runs such a module without recording the ops inside it, and the
converter writes its ONNX nodes (one ``LSTM`` / ``GRU`` / ``RNN`` node per layer, a packed
input run padded with its lengths), so sequence length and batch stay free. Besides the
recorder, the trace patches only ``Module.__call__``, ``Function.apply`` / ``__call__``, a few
``Tensor`` methods (the Python conversions) and ``ember.tensor``'s ``zeros_like`` /
``ones_like`` / ``full_like``, restored afterwards; no name is rebound in other modules.

Values: example inputs become graph inputs; tensors found by identity among the model's
``state_dict(keep_vars=True)`` entries (and its parameters / buffers) become initializers named
by their state_dict keys; any other tensor the model creates on its own (``et.tensor(...)``,
``zeros(...)``) becomes a constant holding its traced value. A call whose tensor arguments are
all such constants is folded into a constant (``do_constant_folding``).

Control flow is unrolled for the traced inputs. Converting a tensor that depends on the inputs
to a Python value (``bool(t)``, ``t.item()``, ``int(t)``, ``float(t)``, ``t.tolist()``) during
the trace warns with :class:`TracerWarning`: the branch it decides is frozen in the graph.
"""
from __future__ import annotations

import contextlib
import enum
import importlib.metadata
import io
import os
import warnings

import numpy as np

import ember.autograd as ag
import ember.nn as nn
import ember.tensor as et
import onnx
from ember.tensor import extension as ext
from onnx import helper

from ._graph import GraphContext, UnsupportedOperatorError, np_dtype, onnx_type, to_numpy
from ._symbolic import SYMBOLICS, module_symbolic

DEFAULT_OPSET = 18
MIN_OPSET = 17

BUFFER_DOC = "ember:buffer"


class TracerWarning(Warning):
    """The trace may not generalize: a traced value decided Python control flow, or an
    in-place write went through a view the graph cannot follow."""


class TrainingMode(enum.IntEnum):
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def max_opset() -> int:
    """The newest default-domain opset the installed onnx package knows."""
    return onnx.defs.onnx_opset_version()


def _flatten(obj, out: list) -> list:
    if isinstance(obj, et.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _flatten(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _flatten(o, out)
    return out


class _Tracer:
    def __init__(self, model, opset: int, fold: bool) -> None:
        self.model = model
        self.fold = fold
        self.g = GraphContext(self, opset)
        self.names: dict[int, str] = {}
        self.keep: list = []  # every named tensor stays alive, so ids stay unique
        self.dynamic: set[int] = set()
        self.paramish: set[int] = set()  # computed from parameters only: never folded
        self.params: dict[int, tuple[str, bool]] = {}  # id -> (state_dict key, is buffer)
        self.module_names: dict[int, str] = {}
        self.stack: list[str] = []
        self.depth = 0
        self.converting = 0
        self.opaque = 0  # inside a call recorded whole by a module converter
        self.rnn_weights: dict = {}  # (id(module), layer) -> names of ONNX's W, R, B values
        self.packed: dict = {}  # id(a packed batch's data) -> _symbolic.Packed (padded, lengths)
        self.prev = None
        if isinstance(model, nn.Module):
            buffers = {id(b) for _, b in model.named_buffers()}
            for key, t in model.state_dict(keep_vars=True).items():
                if isinstance(t, et.Tensor):
                    self.params.setdefault(id(t), (key, id(t) in buffers))
            for key, p in model.named_parameters():
                self.params.setdefault(id(p), (key, False))
            for key, b in model.named_buffers():
                self.params.setdefault(id(b), (key, True))
            for path, m in model.named_modules():
                self.module_names[id(m)] = path

    # ------------------------------------------------------------------ values
    def module_path(self) -> str:
        return self.stack[-1] if self.stack else ""

    def bind(self, t, name: str, dynamic: bool) -> None:
        self.names[id(t)] = name
        self.keep.append(t)
        if dynamic:
            self.dynamic.add(id(t))
        else:
            self.dynamic.discard(id(t))

    def value(self, t) -> str:
        name = self.names.get(id(t))
        if name is not None:
            return name
        hit = self.params.get(id(t))
        if hit is not None:
            key, buffer = hit
            name = self.g.reserve(key)
            self.g.initializer(name, to_numpy(t), BUFFER_DOC if buffer else "")
        else:
            alias = self._alias_of(t)
            if alias is not None:  # the same memory as a traced value (detach, .data)
                self.bind(t, self.names[id(alias)], id(alias) in self.dynamic)
                return self.names[id(t)]
            name = self.g.const(to_numpy(t))
        self.bind(t, name, False)
        return name

    def _alias_of(self, t):
        arr = ext.unwrap(t)
        shares = None
        for other in self.keep:
            if id(other) not in self.dynamic:
                continue
            o = ext.unwrap(other)
            if type(o) is not type(arr) or not np.may_share_memory(o, arr):
                continue
            if o.shape == arr.shape and o.strides == arr.strides and o.dtype == arr.dtype and \
                    o.__array_interface__["data"][0] == arr.__array_interface__["data"][0]:
                return other
            shares = other
        if shares is not None:
            warnings.warn("ember.onnx.export: a tensor made outside the op registry shares "
                          "memory with a traced value but is exported as a constant (module "
                          f"'{self.module_path()}')", TracerWarning, stacklevel=5)
        return None

    # ------------------------------------------------------------------ recording
    def recorder(self, op, bound):
        prev = self.prev
        if self.depth:
            return prev(op, bound) if prev is not None else op.run(*bound)
        self.depth += 1
        try:
            out = prev(op, bound) if prev is not None else op.run(*bound)
        finally:
            self.depth -= 1
        self.record(op, bound, out)
        return out

    def record(self, op, bound, out) -> None:
        ins = _flatten(list(bound), [])
        outs = _flatten(out, [])
        dyn = any(id(t) in self.dynamic for t in ins)
        is_param = any(id(t) in self.params or id(t) in self.paramish for t in ins)
        if op.inplace and ins and outs and outs[0] is ins[0]:
            self._check_alias(op, ins[0])
        if self.fold and not dyn and not is_param:
            for t in outs:  # fold: the traced value is the constant
                self.names.pop(id(t), None)
                self.dynamic.discard(id(t))
                self.paramish.discard(id(t))
            return
        name = op.name
        conv = SYMBOLICS.get(name)
        if conv is None and op.inplace and name.endswith("_"):
            conv = SYMBOLICS.get(name[:-1])
        if conv is None:
            raise UnsupportedOperatorError(name, self.module_path())
        self.g.op = name
        result = conv(self.g, op.Args(*bound), out)
        names = [result] if isinstance(result, str) else list(result)
        if len(names) != len(outs):
            raise UnsupportedOperatorError(name, self.module_path(),
                                           "converter produced a wrong number of outputs")
        for t, n in zip(outs, names):
            self.bind(t, n, dyn)
            if is_param and not dyn:
                self.paramish.add(id(t))
            else:
                self.paramish.discard(id(t))

    def record_whole(self, what: str, ins, run, convert):
        """Run ``run()`` without recording the ops inside it, then record the whole call with
        ``convert(out)``, which returns one value name per tensor of ``out`` (flattened)."""
        dyn = any(id(t) in self.dynamic for t in _flatten(ins, []))
        self.depth += 1
        self.opaque += 1
        self.converting += 1
        try:
            out = run()
        finally:
            self.depth -= 1
            self.opaque -= 1
            self.converting -= 1
        outs = _flatten(out, [])
        self.g.op = what
        names = convert(out)
        names = [names] if isinstance(names, str) else list(names)
        if len(names) != len(outs):
            raise UnsupportedOperatorError(what, self.module_path(),
                                           "the converter produced a wrong number of outputs")
        for t, n in zip(outs, names):
            self.bind(t, n, dyn)
            if dyn:
                self.paramish.discard(id(t))
            else:
                self.paramish.add(id(t))
        return out

    def _check_alias(self, op, t) -> None:
        arr = ext.unwrap(t)
        for other in self.keep:
            if other is t or id(other) not in self.names:
                continue
            o = ext.unwrap(other)
            if type(o) is type(arr) and np.may_share_memory(o, arr):
                warnings.warn(
                    f"ember.onnx.export: in-place op '{op.name}' writes a tensor that shares "
                    f"memory with another traced tensor (a view); the exported graph updates "
                    f"only the written tensor (module '{self.module_path()}')",
                    TracerWarning, stacklevel=4)
                return

    # ------------------------------------------------------------------ patches
    @contextlib.contextmanager
    def installed(self):
        tracer = self
        self.prev = ext.get_recorder()
        ext.set_recorder(self.recorder)
        patched = []

        def patch(owner, attr, make):
            orig = owner.__dict__[attr]
            patched.append((owner, attr, orig))
            setattr(owner, attr, make(orig))

        def make_conv(kind):
            def make(orig):
                def wrapper(t, *args, **kwargs):
                    if not tracer.converting and id(t) in tracer.dynamic:
                        warnings.warn(
                            f"Converting a tensor to a Python {kind} might cause the trace to "
                            "be incorrect. We can't record the data flow of Python values, so "
                            "this value will be treated as a constant in the future. This "
                            "means that the trace might not generalize to other inputs! "
                            f"(module '{tracer.module_path()}')", TracerWarning, stacklevel=2)
                    tracer.converting += 1
                    try:
                        return orig(t, *args, **kwargs)
                    finally:
                        tracer.converting -= 1
                return wrapper
            return make

        for attr, kind in (("__bool__", "boolean"), ("item", "number"), ("__float__", "float"),
                           ("__int__", "integer"), ("__index__", "index"), ("tolist", "list")):
            patch(et.Tensor, attr, make_conv(kind))

        def make_call(orig):
            def __call__(module, *args, **kwargs):
                path = tracer.module_names.get(id(module))
                if path is None:
                    path = (tracer.module_path() + "." if tracer.stack else "") + \
                        type(module).__name__
                tracer.stack.append(path or type(module).__name__)
                try:
                    hit = None if tracer.depth else module_symbolic(module)
                    if hit is not None and hit[0](tracer.g, module, args, kwargs):
                        return tracer.record_whole(
                            type(module).__name__, [list(args), kwargs],
                            lambda: orig(module, *args, **kwargs),
                            lambda out: hit[1](tracer.g, module, args, kwargs, out))
                    return orig(module, *args, **kwargs)
                finally:
                    tracer.stack.pop()
            return __call__

        patch(nn.Module, "__call__", make_call)

        def make_like(fill):
            def make(orig):
                def like(input, *args, **kwargs):
                    out = orig(input, *args, **kwargs)
                    if tracer.depth == 0 and isinstance(input, et.Tensor) and \
                            id(input) in tracer.dynamic and isinstance(out, et.Tensor):
                        value = fill(args, kwargs)
                        if value is not None:  # a fill that follows the input's shape
                            g = tracer.g
                            g.op = orig.__name__
                            v = g.const(np.asarray(value, dtype=np_dtype(out)))
                            name = g.node("Expand", [v, g.node("Shape", [tracer.value(input)])])
                            tracer.bind(out, name, True)
                    return out
                return like
            return make

        for attr, fill in (("zeros_like", lambda a, k: 0), ("ones_like", lambda a, k: 1),
                           ("full_like", lambda a, k: a[0] if a else k.get("fill_value"))):
            if attr in et.__dict__:
                patch(et, attr, make_like(fill))

        def check_function_outputs(fn_name, out):
            if tracer.opaque:
                return out
            for o in _flatten(out, []):
                if id(o) not in tracer.names:
                    raise UnsupportedOperatorError(
                        fn_name, tracer.module_path(),
                        "an autograd Function computed this outside the op registry, so "
                        "the trace cannot see it")
            return out

        apply_orig = ag.Function.__dict__["apply"]

        def make_apply(orig):
            def apply(cls, *args, **kwargs):
                return check_function_outputs(cls.__name__,
                                              orig.__func__(cls, *args, **kwargs))
            return classmethod(apply)

        def make_fcall(orig):
            def __call__(self, *args):
                return check_function_outputs(type(self).__name__, orig(self, *args))
            return __call__

        assert apply_orig is not None
        patch(ag.Function, "apply", make_apply)
        patch(ag.Function, "__call__", make_fcall)

        try:
            yield self
        finally:
            for owner, attr, orig in reversed(patched):
                setattr(owner, attr, orig)
            ext.set_recorder(self.prev)


def _split_args(args, kwargs):
    if isinstance(args, et.Tensor):
        args = (args,)
    elif isinstance(args, list):
        args = tuple(args)
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = dict(kwargs or {})
    if args and isinstance(args[-1], dict):
        kwargs.update(args[-1])
        args = args[:-1]
    return args, kwargs


def _dims(spec, rank: int, name: str) -> dict[int, str]:
    if spec is None:
        return {}
    if isinstance(spec, dict):
        return {int(k) % max(rank, 1): str(v) for k, v in spec.items()}
    return {int(k) % max(rank, 1): f"{name}_dynamic_axes_{int(k) % max(rank, 1) + 1}"
            for k in spec}


def _value_info(name: str, dtype, shape, dyn: dict[int, str], known: bool = True):
    dims = [dyn.get(i, d if known else None) for i, d in enumerate(shape)]
    return helper.make_tensor_value_info(name, onnx_type(dtype), dims)


def export(model, args, f=None, input_names=None, output_names=None, dynamic_axes=None,
           opset_version=None, do_constant_folding=True, kwargs=None, export_params=True,
           verbose=False, training=TrainingMode.EVAL, keep_initializers_as_inputs=False):
    """Export ``model`` (a Module or a callable) traced on ``args`` to ONNX.

    ``f``: a path or a binary file object (or None: only return the model). Returns the
    ``onnx.ModelProto`` written. ``opset_version``: 17 up to :func:`max_opset` (default 18).
    ``dynamic_axes``: ``{value name: [axis, ...] or {axis: symbol}}`` marks symbolic dims of
    inputs and outputs. Nothing is written when the export fails.
    """
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= max_opset():
        raise ValueError(f"ember.onnx.export: opset_version {opset} is not supported; use "
                         f"{MIN_OPSET} to {max_opset()}")
    if not export_params:
        raise NotImplementedError("ember.onnx.export: export_params=False is not supported")
    args, kwargs = _split_args(args, kwargs)
    tracer = _Tracer(model, opset, bool(do_constant_folding))
    g = tracer.g
    inputs = _flatten([args, kwargs], [])
    if len({id(t) for t in inputs}) != len(inputs):
        raise ValueError("ember.onnx.export: the same tensor is passed as two inputs")
    input_names = list(input_names or [])
    dynamic_axes = dict(dynamic_axes or {})
    graph_inputs = []
    for i, t in enumerate(inputs):
        name = g.reserve(input_names[i] if i < len(input_names) else f"input_{i}")
        tracer.bind(t, name, True)
        shape = g.shape(t)
        dyn = _dims(dynamic_axes.get(name), len(shape), name)
        g.dynamic_sizes.update(shape[i] for i in dyn)
        graph_inputs.append(_value_info(name, np_dtype(t), shape, dyn))

    modes = []
    if isinstance(model, nn.Module):
        modes = [(m, m.training) for m in model.modules()]
        if training == TrainingMode.EVAL:
            model.eval()
        elif training == TrainingMode.TRAINING:
            model.train()
    try:
        with tracer.installed(), ag.no_grad():
            out = model(*args, **kwargs)
        outs = _flatten(out, [])
        if not outs:
            raise RuntimeError("ember.onnx.export: the model returned no tensors")
        output_names = list(output_names or [])
        graph_outputs = []
        g.op = "output"
        for i, t in enumerate(outs):
            name = g.reserve(output_names[i] if i < len(output_names) else f"output_{i}")
            src = tracer.value(t)
            g.nodes.append(helper.make_node("Identity", [src], [name],
                                            name=g.fresh("/output/Identity")))
            shape = g.shape(t)
            dyn = _dims(dynamic_axes.get(name), len(shape), name)
            graph_outputs.append(_value_info(name, np_dtype(t), shape, dyn,
                                             known=not dynamic_axes))
    finally:
        for m, mode in modes:
            m.training = mode
    _prune(g, [o.name for o in graph_outputs])
    inits = list(g.initializers.values())
    if keep_initializers_as_inputs:
        graph_inputs += [helper.make_tensor_value_info(p.name, p.data_type, list(p.dims))
                         for p in inits]
    graph = helper.make_graph(g.nodes, type(model).__name__, graph_inputs, graph_outputs,
                              initializer=inits)
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="ember",
                              producer_version=_version())
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    if dynamic_axes:
        proto = _infer_output_shapes(proto, dynamic_axes)
    onnx.checker.check_model(proto)
    if verbose:
        print(helper.printable_graph(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(data)
        else:
            f.write(data)
    return proto


_OPTIONAL_TRAILING = {"MaxPool": 1, "Dropout": 1}


def _prune(g, outputs) -> None:
    """Drop nodes whose results nothing uses, unused trailing optional outputs, and
    initializers no node reads."""
    live = set(outputs)
    kept = []
    for node in reversed(g.nodes):
        if not any(o in live for o in node.output if o):
            continue
        keep = _OPTIONAL_TRAILING.get(node.op_type)
        if keep is not None:
            while len(node.output) > keep and node.output[-1] not in live:
                node.output.pop()
        live.update(i for i in node.input if i)
        kept.append(node)
    g.nodes[:] = kept[::-1]
    for name in list(g.initializers):
        if name not in live:
            del g.initializers[name]


def _infer_output_shapes(proto, dynamic_axes):
    """Outputs' dims that are not named in ``dynamic_axes`` take what shape inference
    says (symbolic where they follow a dynamic input dim)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:  # noqa: BLE001 - inference is a nicety; leave dims unknown
        return proto
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in proto.graph.output:
        src = known.get(out.name)
        dims = out.type.tensor_type.shape.dim
        if src is None or not src.type.tensor_type.HasField("shape"):
            continue
        sdims = src.type.tensor_type.shape.dim
        if len(sdims) != len(dims):
            continue
        for d, s in zip(dims, sdims):
            if d.HasField("dim_param") or d.HasField("dim_value"):
                continue
            if s.HasField("dim_value"):
                d.dim_value = s.dim_value
            elif s.HasField("dim_param"):
                d.dim_param = s.dim_param
    return proto


def _version() -> str:
    return importlib.metadata.version("ember-onnx")


def export_to_bytes(model, args, **kwargs) -> bytes:
    """``export`` into memory; returns the serialized model."""
    buf = io.BytesIO()
    export(model, args, buf, **kwargs)
    return buf.getvalue()
