"""Catch-and-diagnose: PyTorch's errors for bad arguments, at no cost to calls that succeed.

Nothing is checked before a call runs. When a call fails, its arguments are examined before the
error propagates, in this order:

- an argument declared ``Tensor`` (or ``Tensor | None``, a sequence of tensors,
  ``*tensors: Tensor``) that is not one, or one declared ``int`` that is not an integer: PyTorch's
  TypeError naming the op and the argument (``mm(): argument 'input' (position 1) must be
  Tensor, not list``), whatever the failure was, since PyTorch's argument parser refuses such a
  call before anything runs;
- an AttributeError raised on an argument that is not a tensor (``'list' object has no attribute
  '_data'``): the same TypeError, for parameters declared without a type;
- NumPy's broadcast ValueError: PyTorch's RuntimeError, from the shapes of the tensor arguments
  (:func:`ember.tensor._checks.broadcast_error`); NumPy's OverflowError for a Python scalar a
  dtype cannot hold: PyTorch's RuntimeError (``value cannot be converted to type uint8 without
  overflow``);
- otherwise, an error whose message does not name the op the user called is made to: an inner
  op's ``name(): `` prefix is replaced by the public op's (``addmm(): mat1 and mat2 shapes
  cannot be multiplied``), or the public op's is prepended (a message that leads with another
  op in PyTorch's own words, ``random_ expects ...``, is kept).

Registry ops get this in the public function :func:`~ember.tensor._registry.defop` compiles.
:func:`composite` compiles the same kind of function for a composite (a public function
composed of registry ops), from its own signature: a call binds exactly as before, through one
more Python frame and no checks. A composite marked by :func:`~ember.tensor._registry.with_out`
gets PyTorch's keyword-only ``out=`` in that same function (``if out is None`` is all a call
without it pays). :func:`declare_composites` applies it to the public functions of a
namespace.
"""
from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable

from ._checks import broadcast_error
from ._codegen import compiled, named, parameter_source
from ._out import write_out
from ._tensor import Tensor

__all__ = ["arg_specs", "diagnose", "op_names", "composite", "declare_composites"]

_P = inspect.Parameter

# a spec per parameter: (position, name, kind, optional, keyword-only); kind is "tensor",
# "tensors" (a sequence of tensors), "tensors*" (``*args`` of tensors), "int", "any" (declared
# without a type) or "" (declared with a type not checked here)
_SEQ = re.compile(r"(?:Sequence|Iterable|list|List|tuple|Tuple)\[Tensor(?:,\.\.\.)?\]")


def _annotation(ann) -> str:
    """An annotation as the text it was written as, without module prefixes or spaces."""
    if ann is _P.empty:
        return ""
    text = ann if isinstance(ann, str) else inspect.formatannotation(ann)
    text = re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", text).replace(" ", "")
    return re.sub(r"\b_Tensor\b", "Tensor", text)


def arg_specs(signature: inspect.Signature) -> tuple:
    """The checkable parameters of ``signature`` (see the module docstring)."""
    specs = []
    for i, p in enumerate(signature.parameters.values()):
        if p.kind is _P.VAR_KEYWORD:
            continue
        text = _annotation(p.annotation)
        optional = p.default is None
        m = re.fullmatch(r"Optional\[(.*)\]", text)
        if m:
            text, optional = m.group(1), True
        parts = set(text.split("|")) if text else set()
        if "None" in parts:
            parts.discard("None")
            optional = True
        if not text:
            kind = "any"
        elif p.kind is _P.VAR_POSITIONAL:
            kind = "tensors*" if parts == {"Tensor"} else ""
        elif parts == {"Tensor"}:
            kind = "tensor"
        elif parts == {"int"}:
            kind = "int"
        elif len(parts) == 1 and _SEQ.fullmatch(next(iter(parts))):
            kind = "tensors"
        else:
            kind = ""
        specs.append((i, p.name, kind, optional, p.kind is _P.KEYWORD_ONLY))
    return tuple(specs)


def _is_int(v) -> bool:
    # PyTorch's int parameters take Python and NumPy integers (bool included) and integer
    # tensors; a sequence is let through, since ember's ``int`` dims often take tuples too
    return hasattr(type(v), "__index__") or isinstance(v, (Tensor, list, tuple))


def _type_error(op: str, name: str, i: int, kwonly: bool, value, expected: str) -> TypeError:
    where = "" if kwonly else f" (position {i + 1})"
    return TypeError(f"{op}(): argument '{name}'{where} must be {expected}, not "
                     f"{type(value).__name__}")


def _bad_arg(op: str, specs: tuple, bound) -> TypeError | None:
    """PyTorch's TypeError for the first argument of the wrong type, or None."""
    for i, name, kind, optional, kwonly in specs:
        v = bound[i]
        if (v is None and optional) or kind in ("any", ""):
            continue
        if kind == "tensor":
            if not isinstance(v, Tensor):
                return _type_error(op, name, i, kwonly, v, "Tensor")
        elif kind == "int":
            if not _is_int(v):
                return _type_error(op, name, i, kwonly, v, "int")
        else:
            if kind == "tensors" and not isinstance(v, (list, tuple)):
                return _type_error(op, name, i, kwonly, v, "tuple of Tensors")
            for j, x in enumerate(v):
                if not isinstance(x, Tensor):
                    return TypeError(f"{op}(): expected Tensor as element {j} in argument {i}, "
                                     f"but got {type(x).__name__}")
    return None


_BROADCAST = ("operands could not be broadcast together",
              "objects cannot be broadcast to a single shape")


def diagnose(op: str, specs: tuple, bound, exc: BaseException,
             names: tuple[str, ...] | None = None) -> None:
    """Raise PyTorch's error for the call of ``op`` with ``bound`` (every parameter in
    declared order) that failed with ``exc`` where the arguments are its cause; otherwise
    return, the caller re-raising ``exc``. ``names``: the op's names (:func:`op_names`), one of
    which ``exc``'s message is made to show (None: the message is left as it is)."""
    if isinstance(exc, RecursionError):
        return
    bad = _bad_arg(op, specs, bound)
    if bad is not None:
        raise bad from None
    if isinstance(exc, AttributeError) and exc.name and hasattr(Tensor, exc.name):
        obj = getattr(exc, "obj", None)
        if obj is not None and not isinstance(obj, Tensor):
            for i, name, kind, _optional, kwonly in specs:
                if kind in ("any", "tensor") and bound[i] is obj:
                    raise _type_error(op, name, i, kwonly, obj, "Tensor") from None
    if isinstance(exc, ValueError) and any(s in str(exc) for s in _BROADCAST):
        shapes = []
        for v in bound:
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, Tensor):
                    shapes.append(tuple(x.shape))
        raise broadcast_error(op, *shapes, detail=str(exc)) from None
    if isinstance(exc, OverflowError):  # NumPy's, for a Python scalar that a dtype can't hold
        m = re.match(r"Python integer (\S+) out of bounds for (\w+)", str(exc))
        if m:
            raise RuntimeError(f"{op}(): value cannot be converted to type {m.group(2)} without "
                               f"overflow: {m.group(1)}") from None
    if names is not None:
        _name_op(exc, op, names)


# a leading op name: ``mm(): ``, ``linalg.svd: ``, ``torch.linalg.ldl_factor_ex: ``
_LEADING_OP = re.compile(r"(?:torch\.)?(?:(?:linalg|special|fft)\.)?[a-z_][a-z0-9_]*(?:\(\))?: ")


# PyTorch's own form for some errors: the op it runs, then what went wrong
# (``random_ expects 'from' to be less than 'to'``)
_LEADING_WORD = re.compile(r"[a-z_][a-z0-9_]*(?= )")
_COMPOSITES: set[str] = set()


def _name_op(exc: BaseException, op: str, names: tuple[str, ...]) -> None:
    """Make ``exc``'s message name ``op`` (one of ``names`` followed by ``(``, ``:`` or the
    end of the message counts): an inner op's ``name(): `` prefix is replaced by ``op``'s, a
    message that leads with another op in PyTorch's words is kept, any other is prefixed."""
    args = exc.args
    if len(args) != 1 or not isinstance(args[0], str) or isinstance(exc, KeyError):
        return
    msg = args[0]
    alts = "|".join(re.escape(n) for n in names)
    if re.search(rf"(?:^|[^\w.]|torch\.)(?:{alts})(?:\(|:|$)", msg):
        return
    m = _LEADING_OP.match(msg)
    if m is None:
        w = _LEADING_WORD.match(msg)
        # PyTorch's own wording leads with the op it runs; a variant of that op
        # (``unsafe_chunk`` running ``chunk``) is still named
        if w is not None and (callable(getattr(Tensor, w.group(), None))
                              or w.group() in _COMPOSITES) and \
                (w.group() == op or w.group() not in op):
            return
    exc.args = (f"{op}(): {msg[m.end():] if m else msg}",)


def op_names(*names: str) -> tuple[str, ...]:
    """The names a message may give an op by: ``names`` and, for ``linalg_X``, ``linalg.X``
    (PyTorch's form; likewise ``special_``, ``fft_``)."""
    out = set(names)
    for n in names:
        for ns in ("linalg", "special", "fft"):
            if n.startswith(ns + "_"):
                out.add(f"{ns}.{n[len(ns) + 1:]}")
    return tuple(sorted(out, key=len, reverse=True))


def composite(fn: Callable | None = None, *, name: str | None = None):
    """Give ``fn``, a public function composed of registry ops, the registry's diagnosis of a
    failed call (see the module docstring); ``name``: the op its errors name (default
    ``fn.__name__``; ``linalg_cond`` for ``linalg.cond``). A function marked by
    :func:`~ember.tensor._registry.with_out` also gets the keyword-only ``out=None``: given,
    the result is written into it (a factory's ``dtype`` and ``device``, when None, are
    ``out``'s first)."""
    if fn is None:
        return functools.partial(composite, name=name)
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    op = name or fn.__name__
    env = {"_fn": fn, "_diagnose": diagnose, "_op": op, "_specs": arg_specs(sig),
           "_names": op_names(op, fn.__name__)}
    decl, call, names, star = parameter_source(params, env)
    bound = f"({', '.join(names)},)" if names else "()"
    fname = fn.__name__
    attrs = {"__wrapped__": fn, "composite": op}
    full = f"_fn({', '.join(call)})"
    # keyword-only parameters with defaults are passed on only when one is not its default
    # (``x is _d3``: a few identity tests cost less than passing each by keyword)
    kwd = [i for i, p in enumerate(params) if p.kind is _P.KEYWORD_ONLY
           and p.default is not _P.empty]
    short = ""
    if kwd:
        plain = ", ".join(c for i, c in enumerate(call) if i not in kwd)
        short = (f"if {' and '.join(f'{params[i].name} is _d{i}' for i in kwd)}:\n"
                 f"    return _fn({plain})\n")
    mark = getattr(fn, "_with_out", None)
    if mark is None:
        body = "".join(f"        {line}\n" for line in short.splitlines())
        body += f"        return {full}\n"
    else:
        env["_write_out"], env["_T"], env["_name"] = write_out, Tensor, fname
        factory, env["_casting"] = mark
        at = len(decl) - (1 if params and params[-1].kind is _P.VAR_KEYWORD else 0)
        decl[at:at] = ["out=None"] if star else ["*", "out=None"]
        fill = ""
        if factory:
            if not {"dtype", "device"} <= set(names):
                raise TypeError(f"with_out(factory=True): {fname} takes no dtype and device")
            fill = ("        if isinstance(out, _T):\n"
                    "            if dtype is None:\n"
                    "                dtype = out.dtype\n"
                    "            if device is None:\n"
                    "                device = out.device\n")
        grad = "requires_grad" in names  # a factory's: out becomes a leaf requiring grad
        if grad:
            fill += "        _rg, requires_grad = requires_grad, False\n"
        write = f"_write_out(_name, {full}, out, _casting)"
        body = ("        if out is None:\n"
                + "".join(f"            {line}\n" for line in short.splitlines()) +
                f"            return {full}\n"
                f"{fill}" +
                (f"        return {write}.requires_grad_(True) if _rg else {write}\n"
                 if grad else f"        return {write}\n"))
        at = len(params) - (1 if params and params[-1].kind is _P.VAR_KEYWORD else 0)
        params.insert(at, _P("out", _P.KEYWORD_ONLY, default=None))
        attrs["__signature__"] = sig.replace(parameters=params)
    src = (f"def _public({', '.join(decl)}):\n"
           f"    try:\n"
           f"{body}"
           f"    except Exception as exc:\n"
           f"        _diagnose(_op, _specs, {bound}, exc, _names)\n"
           f"        raise\n")
    exec(compiled(src), env)
    qual = fn.__qualname__
    _COMPOSITES.add(fname)
    return named(env["_public"], fname, fname if "<locals>" in qual else qual, fn,
                 f"<ember composite {op}>", **attrs)


def declare_composites(namespace: dict, *, prefix: str = "", within: str = "ember.tensor") -> None:
    """Pass every public function of a namespace (its ``__all__``) that is defined in the
    package ``within``, is not a registry op or already wrapped, and takes a parameter
    declared a tensor (``Tensor``, ``Tensor | None``, ``Tensor | float``, a sequence of
    tensors) or is marked by :func:`~ember.tensor._registry.with_out` (which gets its ``out=``
    here, factories included) through :func:`composite`, in that namespace only; ``prefix``:
    of the op names (``linalg_``). Called by the public namespaces (``ember.tensor``,
    ``ember.tensor.linalg``, ``ember.tensor.special``, ``ember.tensor.fft``) once they are
    complete: the modules that define the functions keep them as they are, so their calls to
    one another and the Tensor methods bound to them pay for no wrapper."""
    done: dict[int, Callable] = {}
    for key in namespace.get("__all__", ()):
        fn = namespace.get(key)
        if id(fn) in done:
            namespace[key] = done[id(fn)]
            continue
        module = getattr(fn, "__module__", None) or ""
        if not inspect.isfunction(fn) or not (module == within or
                                              module.startswith(within + ".")) \
                or hasattr(fn, "op") or hasattr(fn, "__wrapped__"):
            continue
        if not hasattr(fn, "_with_out") and \
                not any("Tensor" in _annotation(p.annotation)
                        for p in inspect.signature(fn).parameters.values()):
            continue
        # a function with out= names the op by its own name in its errors, as it always has
        # (``vecdot(): ...``, not ``linalg_vecdot(): ...``)
        done[id(fn)] = namespace[key] = composite(
            fn, name=fn.__name__ if hasattr(fn, "_with_out") else prefix + fn.__name__)
