"""The single op registry.

Every primitive op is declared once with :func:`defop`: its name (the public name), its
signature (the implementation's own parameter list, which is PyTorch's: names, defaults and
keyword-only markers), whether it is differentiable, whether it writes its first argument, and
whether it takes PyTorch's ``out=``. The implementation is written once against the array API
that NumPy and CuPy share (``xp = array_module(arr)``). Tensor methods, the ``ember.tensor``
functions and the Python operators all call the function that ``defop`` returns.

``defop`` compiles that public function from the signature: Python itself binds a call, however
its arguments were passed, to one tuple of every parameter in declared order (defaults filled).
Everything downstream of the call (the autograd recorder, derivative formulas, tracing) reads
that tuple, by position or by name through ``op.Args``, so positional and keyword calls behave
the same.

Autograd is a layer on top: ``ember.autograd`` calls :func:`set_recorder` once, and from then
on every call goes through its recorder, ``recorder(op, bound)``, which runs the op
(``op.run(*bound)``) and records a graph node when grad mode is on and an input requires grad.
The core never computes a gradient.
"""
from __future__ import annotations

import functools
import inspect
from collections import namedtuple
from collections.abc import Callable

from ._codegen import compiled, named, parameter_source
from ._composite import arg_specs, diagnose, op_names
from ._grad_mode import grad_enabled as _grad_enabled
from ._out import array_module, write_out
from ._tensor import Tensor, _deferring

__all__ = ["OpDef", "OPS", "defop", "replace_impl", "set_recorder", "set_op_recorder",
           "array_module", "write_out", "with_out"]

_P = inspect.Parameter


class OpDef:
    """One registry entry.

    ``names``: the parameters in declared order; ``Args``: a named tuple of them (what a bound
    call is read as); ``run(*bound)`` runs the implementation on a bound call; ``public``: the
    function users call; ``out``: the op takes ``out=``."""

    __slots__ = ("name", "impl", "differentiable", "inplace", "out", "public", "signature",
                 "names", "Args", "run", "_env", "_tensor_params")

    def __init__(self, name: str, impl: Callable, differentiable: bool, inplace: bool,
                 out: bool) -> None:
        self.name = name
        self.impl = impl
        self.differentiable = differentiable
        self.inplace = inplace
        self.out = out
        self.public: Callable | None = None
        self.signature = inspect.signature(impl)
        self.names = tuple(self.signature.parameters)
        self.Args = namedtuple(f"{name.strip('_') or 'op'}_args", self.names, rename=True)

    def index(self, name: str) -> int:
        """Position of parameter ``name`` in a bound call."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"op {self.name!r} has no parameter {name!r} "
                           f"(parameters: {', '.join(self.names)})") from None

    def diagnose(self, bound, exc: BaseException) -> None:
        """What the public function does when a call fails with ``exc``: raise PyTorch's
        error where the arguments ``bound`` are its cause, else make ``exc``'s message name
        the op and return (the caller re-raises it). For a caller that ran ``run`` itself
        (a recorder that deferred the call)."""
        _check_tensor_args(self, bound, exc)

    def __repr__(self) -> str:
        kind = "differentiable" if self.differentiable else "non-differentiable"
        return f"<op {self.name}{self.signature} ({kind}{', in-place' if self.inplace else ''})>"


OPS: dict[str, OpDef] = {}
# [recorder, grad_only]: the cells the compiled public functions read. A recorder whose
# ``grad_only`` attribute is true (autograd's) is not called for a call none of whose tensors
# requires grad, or one made with grad mode off: the op runs at once, as that recorder would
# run it.
_state = [None, False]


# op -> its compiled functions' globals, where an op recorder is installed (set_op_recorder)
_overridden: dict = {}


def set_recorder(fn: Callable | None) -> None:
    """Install the recorder every op call goes through: ``fn(op, bound) -> result``. A
    recorder with a true ``grad_only`` attribute sees only the calls made with grad mode on
    where a tensor argument (or a tensor in a list argument) requires grad; any other (a
    tracer, autocast, autobatch) sees every call. A recorder's ``flush(*tensors)`` attribute
    (one that defers calls) is called before a tensor's array or ``requires_grad`` changes
    outside the registry, with the tensors whose arrays are read or replaced then. Removes
    every op recorder."""
    _state[0], _state[1] = fn, bool(getattr(fn, "grad_only", False))
    _deferring[0] = getattr(fn, "flush", None)  # (see _tensor._run_deferred)
    if _overridden:
        for env in _overridden.values():
            env["_state"] = _state
        _overridden.clear()


def set_op_recorder(op: OpDef, fn: Callable) -> None:
    """Send the calls of ``op`` alone to ``fn(op, bound)`` (every call: grad mode and
    ``requires_grad`` aside) in place of the installed recorder, until the next
    :func:`set_recorder`. For a recorder that keeps code specialized per op (autobatch's):
    installed in front by that recorder itself, it saves the recorder's own dispatch on the
    op (a call and a lookup); ``fn`` passes what it does not handle to the recorder."""
    env = op._env
    env["_state"] = [fn, False]
    _overridden[op] = env


# parameters whose annotation says they never hold a tensor (sizes and dims declared as a
# tuple, a list or a sequence of ints among them: view's, permute's, expand's): the grad-only
# test skips them (walking a size tuple cost a view ~0.3 us)
_PLAIN_ANNOTATIONS = frozenset(("int", "float", "bool", "str", "int | None", "float | None",
                                "bool | None", "str | None", "tuple", "list", "Sequence[int]"))
_PLAIN_CLASSES = frozenset((int, float, bool, str, type(None), slice, type(Ellipsis)))


def _requires_grad(x) -> bool:
    """Does ``x`` (an argument that is not exactly a Tensor) hold a tensor requiring grad:
    a Tensor subclass (a Parameter), or a list or tuple with one (one level, as cat's)?"""
    c = x.__class__
    if c in _PLAIN_CLASSES:
        return False
    if isinstance(x, Tensor):
        return x._requires_grad
    if c is list or c is tuple:
        for b in x:
            if isinstance(b, Tensor) and b._requires_grad:
                return True
    return False


def any_requires_grad(bound) -> bool:
    """Does a tensor of the bound call ``bound`` (an argument, a Tensor subclass, or a tensor in
    a list argument) require grad? The test the compiled public functions make inline."""
    for a in bound:
        if a.__class__ is Tensor:
            if a._requires_grad:
                return True
        elif _requires_grad(a):
            return True
    return False


def _compile(op: OpDef, out_casting: str = "same_kind"):
    """Build ``op.run`` and ``op.public`` from the implementation's signature."""
    params = list(op.signature.parameters.values())
    env = {"_impl": op.impl, "_op": op, "_state": _state, "_write_out": write_out,
           "_casting": out_casting}
    decl, call, names, star = parameter_source(params, env)
    bound = f"({', '.join(names)},)"
    out_decl = ""
    out_check = ""
    if op.out:
        out_decl = ", out=None" if star else ", *, out=None"
        out_check = (f"    if out is not None:\n"
                     f"        return _write_out(_op, _public({', '.join(call)}), out, "
                     f"_casting)\n")
    fname = op.impl.__name__
    # parameters declared ``Tensor`` or ``int``: a call passing something else fails somewhere
    # inside the implementation; only then are they checked, so the error is PyTorch's
    # TypeError naming the op and the argument, at no cost to calls that succeed
    op._tensor_params = arg_specs(op.signature)
    # the grad-only test, one term per parameter that may hold a tensor (an exact Tensor is
    # read inline; anything else through _requires_grad)
    terms = [f"({p.name}._requires_grad if {p.name}.__class__ is _T else _rg({p.name}))"
             for p in params if p.kind is not _P.VAR_KEYWORD and
             str(p.annotation) not in _PLAIN_ANNOTATIONS]
    env["_T"], env["_rg"], env["_ge"] = Tensor, _requires_grad, _grad_enabled
    grad_test = (f"    if _state[1] and not (({' or '.join(terms)}) and _ge()):\n"
                 f"        return _impl({', '.join(call)})\n") if terms else \
        (f"    if _state[1]:\n"
         f"        return _impl({', '.join(call)})\n")
    body = (f"    rec = _state[0]\n"
            f"    if rec is None:\n"
            f"        return _impl({', '.join(call)})\n"
            f"{grad_test}"
            f"    return rec(_op, {bound})\n")
    env["_check_tensor_args"] = _check_tensor_args
    body = ("    try:\n" + "".join("    " + line + "\n" for line in body.splitlines()) +
            "    except Exception as exc:\n"
            f"        _check_tensor_args(_op, {bound}, exc)\n"
            "        raise\n")
    src = (f"def run({', '.join(names)}):\n"
           f"    return _impl({', '.join(call)})\n"
           f"def _public({', '.join(decl)}{out_decl}):\n"
           f"{out_check}"
           f"{body}")
    exec(compiled(src), env)
    op._env = env
    plain = all(p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD) for p in params)
    op.run = op.impl if plain else env["run"]
    # an op made by a factory (``_unary.<locals>.impl``) goes by its own name in Python's
    # own TypeErrors (an unexpected keyword, a missing argument)
    qual = op.impl.__qualname__
    return named(env["_public"], fname, fname if "<locals>" in qual else qual, op.impl,
                 f"<ember op {op.name}>", op=op)


def _check_tensor_args(op: OpDef, bound, exc: BaseException) -> None:
    """Raise PyTorch's error where the arguments are the cause of ``exc``: an argument
    declared ``Tensor`` or ``int`` that is not one, NumPy's broadcast error; else make its
    message name the op (see ``_composite``). Called when a call failed; returns when the
    arguments are not the cause."""
    diagnose(op.name, op._tensor_params, bound, exc,
             None if op.name.startswith("_") else op_names(op.name))


def defop(name: str, *, differentiable: bool = True, inplace: bool = False, out: bool = False,
          out_casting: str = "same_kind"):
    """Declare a primitive op. ``inplace`` ops modify their first argument and return it;
    ``out`` ops take PyTorch's keyword-only ``out=`` (written by :func:`write_out`, with
    ``out_casting``)."""

    def deco(impl: Callable) -> Callable:
        if name in OPS:
            raise RuntimeError(f"op {name!r} is declared twice")
        op = OpDef(name, impl, differentiable, inplace, out and not inplace)
        op.public = _compile(op, out_casting)
        OPS[name] = op
        return op.public

    return deco


def replace_impl(op: OpDef, impl: Callable) -> None:
    """Swap the implementation of a declared op for ``impl``, which takes the same arguments
    (a wrapper around ``op.impl``, e.g. bfloat16 computed through float32): the public
    function, ``op.run`` and the recorder all call the new one."""
    plain = op.run is op.impl
    op._env["_impl"] = impl
    op.impl = impl
    if plain:
        op.run = impl


def with_out(fn=None, *, factory: bool = False, casting: str = "same_kind"):
    """Mark a function composed of registry ops as taking PyTorch's keyword-only ``out=``
    (written by :func:`write_out`); ``factory``: a creation function, whose dtype and device
    default to ``out``'s, as PyTorch's factories do; ``casting``: which ``out`` dtypes take
    the result (:func:`write_out`; ``"no"``: only the result's own, as PyTorch's matrix
    products, sorts and selections ask).

    Returns ``fn`` itself, marked: the ``out=`` parameter is compiled into the
    explicit-signature wrapper that :func:`~ember.tensor._composite.composite` builds for it
    (:func:`~ember.tensor._composite.declare_composites` does so for the public namespaces),
    so a call without ``out=`` costs what any other composite's does, and the module's own
    calls to ``fn`` (and the Tensor methods bound to it, which take no ``out=`` in PyTorch)
    pay for no wrapper."""
    if fn is None:
        return functools.partial(with_out, factory=factory, casting=casting)
    if hasattr(fn, "op"):
        raise TypeError(f"with_out({fn.__name__}): a registry op takes out= through "
                        "defop(..., out=True)")
    fn._with_out = (factory, casting)
    return fn


