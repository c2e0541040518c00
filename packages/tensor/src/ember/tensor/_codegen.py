"""Code generation for the compiled public functions of ops and composites.

The registry (and the composites' diagnosis) build each public function from generated Python
source, so that a call binds its arguments as Python itself does, at the speed of a plain
function. Compiling that source is most of what importing the op modules costs, and most ops
share their parameter lists with others, so :func:`compiled` compiles each distinct text
once: everything an op differs by (its implementation, its ``OpDef``, its defaults) is a global
of its own ``exec`` environment, not part of the text. :func:`named` then gives the function
the op's name for tracebacks and Python's own TypeErrors.
"""
from __future__ import annotations

import inspect
import types

__all__ = ["compiled", "named", "parameter_source"]

_CODE: dict[str, types.CodeType] = {}


def compiled(src: str) -> types.CodeType:
    """``src`` compiled, once per distinct text: the sources generated for ops with the same
    parameter list are the same text (every name an op differs by is a global of its own
    ``exec`` environment), and compiling is most of what importing the op modules costs."""
    code = _CODE.get(src)
    if code is None:
        code = _CODE[src] = compile(src, "<ember op>", "exec")
    return code


def named(fn, name: str, qualname: str, like, filename: str, **attrs):
    """``fn`` (built by :func:`compiled` source) renamed for tracebacks and Python's own
    TypeErrors, with ``like``'s docstring and module and the attributes ``attrs``."""
    fn.__code__ = fn.__code__.replace(co_name=name, co_qualname=qualname,
                                      co_filename=filename)
    fn.__name__, fn.__qualname__ = name, qualname
    fn.__doc__, fn.__module__ = like.__doc__, like.__module__
    for k, v in attrs.items():
        setattr(fn, k, v)
    return fn


_P = inspect.Parameter


def parameter_source(params: list, env: dict) -> tuple[list, list, list, bool]:
    """The source pieces of a function with parameters ``params`` (``inspect.Parameter``s):
    ``decl`` (the parameter list, defaults as the globals ``_d<i>``, which go into ``env``),
    ``call`` (the arguments that pass each on as it was declared), the names, and whether the
    list has a ``*`` (so a keyword-only ``out=`` can follow without one)."""
    decl, call, names = [], [], []
    star = False
    for i, p in enumerate(params):
        default = "" if p.default is _P.empty else f"=_d{i}"
        if default:
            env[f"_d{i}"] = p.default
        if p.kind is _P.VAR_POSITIONAL:
            decl.append(f"*{p.name}")
            call.append(f"*{p.name}")
            star = True
        elif p.kind is _P.VAR_KEYWORD:
            decl.append(f"**{p.name}")
            call.append(f"**{p.name}")
        elif p.kind is _P.KEYWORD_ONLY:
            if not star:
                decl.append("*")
                star = True
            decl.append(p.name + default)
            call.append(f"{p.name}={p.name}")
        else:
            decl.append(p.name + default)
            call.append(p.name)
        if p.kind is _P.POSITIONAL_ONLY and (i + 1 == len(params) or
                                             params[i + 1].kind is not _P.POSITIONAL_ONLY):
            decl.append("/")
        names.append(p.name)
    return decl, call, names, star
