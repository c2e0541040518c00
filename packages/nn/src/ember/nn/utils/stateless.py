"""``ember.nn.utils.stateless`` (PyTorch's ``torch.nn.utils.stateless``): ``functional_call``,
which :func:`ember.autograd.func.functional_call` (``torch.func.functional_call``) calls.

    >>> import ember.tensor as et, ember.nn as nn
    >>> lin = nn.Linear(2, 1)
    >>> params = {"weight": et.ones(1, 2), "bias": et.zeros(1)}
    >>> functional_call(lin, params, (et.tensor([[1., 2.]]),))
    tensor([[3.]])
"""
from __future__ import annotations

__all__ = ["functional_call"]


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """Call ``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts`` (a
    dict, or a tuple of dicts, keyed as ``named_parameters()`` / ``named_buffers()``) in place
    of the module's own parameters and buffers, which are back after the call (also when it
    raises). Gradients flow to the given tensors, not to the module's parameters.

    ``tie_weights``: a tensor given for one name of a parameter or buffer registered under
    several names is used for all of them (two different tensors for tied names raise
    ValueError); ``strict``: every parameter and buffer must be given, and nothing else
    (RuntimeError naming the missing and unexpected keys). Without ``strict`` a key that names
    no parameter or buffer is set as a plain attribute for the call."""
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, dict):
        given = dict(dicts)
    else:
        given = {}
        for d in dicts:
            for k, v in d.items():
                if k in given:
                    raise ValueError(f"{k} appeared in multiple dictionaries; behavior of "
                                     f"functional call is ambiguous")
                given[k] = v
    owned = dict(module.named_parameters(remove_duplicate=False))
    owned.update(module.named_buffers(remove_duplicate=False))
    if tie_weights:
        names_of: dict = {}
        for k, v in owned.items():
            names_of.setdefault(id(v), []).append(k)
        for k in list(given):
            if k not in owned:
                continue
            tied = names_of[id(owned[k])]
            for other in tied:
                if other in given and given[other] is not given[k]:
                    raise ValueError(f"functional_call got multiple values for keys "
                                     f"{sorted(tied)}, which are tied. Consider using "
                                     f"tie_weights=False")
                given.setdefault(other, given[k])
    if strict:
        missing = sorted(set(owned) - set(given))
        unexpected = sorted(set(given) - set(owned))
        if missing or unexpected:
            msg = f"Error(s) in reparametrizing for {type(module).__name__}:"
            if unexpected:
                msg += f"\n\tUnexpected key(s): {', '.join(repr(k) for k in unexpected)}."
            if missing:
                msg += f"\n\tMissing key(s): {', '.join(repr(k) for k in missing)}."
            raise RuntimeError(msg)
    swapped = []  # (store or None for a plain attribute, module, name, what was there)
    try:
        for k, v in given.items():
            path, _, leaf = k.rpartition(".")
            sub = module.get_submodule(path)
            store = sub._parameters if leaf in sub._parameters else \
                sub._buffers if leaf in sub._buffers else None
            if store is None:
                swapped.append((None, sub, leaf, None))
                object.__setattr__(sub, leaf, v)
            else:
                swapped.append((store, sub, leaf, store[leaf]))
                store[leaf] = v  # any tensor, as PyTorch's: the stores, not __setattr__
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for store, sub, leaf, old in reversed(swapped):
            if store is None:
                object.__delattr__(sub, leaf)
            else:
                store[leaf] = old
