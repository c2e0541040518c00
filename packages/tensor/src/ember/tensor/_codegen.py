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

import types

__all__ = ["compiled", "named"]

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
