"""``Module``: the base class of every layer.

Assigning a :class:`~ember.nn.Parameter`, a Module or a :class:`~ember.nn.Buffer` to an
attribute registers it; ``state_dict`` recurses with dotted prefixes; ``load_state_dict``
reports missing and unexpected keys and refuses shape mismatches by name.

    >>> import ember.nn as nn
    >>> class Net(nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = nn.Linear(2, 3)
    ...     def forward(self, x):
    ...         return self.fc(x)
    >>> list(Net().state_dict())
    ['fc.weight', 'fc.bias']
"""
from __future__ import annotations

import itertools
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import ember.tensor as et
from ember.autograd import Function, no_grad
from ember.tensor import Tensor
from ember.tensor.extension import parse_to_args

from ..parameter import Buffer, Parameter, is_lazy

__all__ = ["Module", "RemovableHandle"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks_dict: dict, *, extra_dict=None) -> None:
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1
        self.extra_dicts = [weakref.ref(d) for d in (extra_dict or ())]

    def remove(self) -> None:
        hooks = self.hooks_dict_ref()
        if hooks is not None and self.id in hooks:
            del hooks[self.id]
        for ref in self.extra_dicts:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state) -> None:
        self.hooks_dict_ref = weakref.ref(state[0] if state[0] is not None else OrderedDict())
        self.id = state[1]
        self.extra_dicts = []


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(" " * num_spaces + line for line in lines)


_STORES = ("_parameters", "_buffers", "_modules")  # where attribute lookups fall back to


def _forward_unimplemented(self, *input: Any) -> None:
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules (``torch.nn.Module``)."""

    training: bool
    dump_patches = False
    _version = 1
    call_super_init = False
    forward: Callable[..., Any] = _forward_unimplemented

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        s = object.__setattr__
        s(self, "training", True)
        s(self, "_parameters", {})
        s(self, "_buffers", {})
        s(self, "_non_persistent_buffers_set", set())
        s(self, "_modules", {})
        s(self, "_forward_hooks", OrderedDict())
        s(self, "_forward_hooks_with_kwargs", OrderedDict())
        s(self, "_forward_hooks_always_called", OrderedDict())
        s(self, "_forward_pre_hooks", OrderedDict())
        s(self, "_forward_pre_hooks_with_kwargs", OrderedDict())
        s(self, "_backward_hooks", OrderedDict())
        s(self, "_backward_pre_hooks", OrderedDict())
        s(self, "_state_dict_hooks", OrderedDict())
        s(self, "_load_state_dict_pre_hooks", OrderedDict())
        s(self, "_load_state_dict_post_hooks", OrderedDict())

    # ------------------------------------------------------------------ registration
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or ``None``, a declared slot) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (ember.nn.Parameter or None required)")
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must "
                f"be created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method.")
        else:
            self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not a parameter (e.g. running statistics)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        _check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer "
                            f"'{name}' (ember Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.persistent
            tensor = tensor.detach()
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module under ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        _check_name(name, "module")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path (``"net.0"``); ``""`` is the module itself."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{type(mod).__name__} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{type(mod).__name__} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ------------------------------------------------------------------ attribute routing
    def __getattr__(self, name: str):
        d = self.__dict__
        for store in _STORES:
            s = d.get(store)
            if s is not None and name in s:
                return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__

        def remove_from(*dicts_or_sets):
            for ds in dicts_or_sets:
                if name in ds:
                    if isinstance(ds, dict):
                        del ds[name]
                    else:
                        ds.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(ember.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                    f"'{name}' (ember.nn.Module or None expected)")
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if isinstance(value, Buffer) or (buffers is not None and name in buffers):
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(f"cannot assign '{type(value).__name__}' as buffer "
                                        f"'{name}' (ember Tensor or None expected)")
                    if isinstance(value, Buffer):
                        persistent = value.persistent
                    else:
                        persistent = name not in self._non_persistent_buffers_set
                    remove_from(d, self._parameters, self._modules)
                    self.register_buffer(name, value, persistent)
                else:
                    object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = itertools.chain(dir(type(self)), self.__dict__, self._parameters,
                               self._modules, self._buffers)
        return sorted(k for k in set(keys) if not k[:1].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for key in ("_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                    "_forward_pre_hooks_with_kwargs", "_load_state_dict_post_hooks",
                    "_backward_pre_hooks"):
            if key not in self.__dict__:
                self.__dict__[key] = OrderedDict()
        self.__dict__.setdefault("_non_persistent_buffers_set", set())

    # ------------------------------------------------------------------ iteration
    def _named_members(self, get_members_fn, prefix: str = "", recurse: bool = True,
                       remove_duplicate: bool = True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for k, v in get_members_fn(module):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and, with ``recurse``, of its descendants)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs; shared parameters appear once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse,
                                       remove_duplicate)

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` for this module and every descendant, self first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    # ------------------------------------------------------------------ modes and grads
    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects Dropout, BatchNorm, ...) on this module and descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter (to ``None`` by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g = g.detach()
                        p.grad = g
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every descendant (children first) and then on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ dtype / device
    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        if recurse:
            for m in self.children():
                m._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param and not is_lazy(param):
                param.data = new.detach()
            if param.grad is not None:
                with no_grad():
                    g = fn(param.grad)
                if g is not param.grad:
                    param.grad = g.detach()
        for key, buf in self._buffers.items():
            if buf is not None:
                with no_grad():
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> Module:
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: moves every
        parameter and buffer; a dtype applies to the floating-point ones only."""
        device, dtype, _ = parse_to_args(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError("nn.Module.to only accepts floating point dtypes, but got "
                            f"desired dtype={dtype}")
        return self._apply(_Convert(device, dtype))

    def cuda(self, device=None) -> Module:
        return self._apply(_Convert("cuda" if device is None else _cuda_name(device), None))

    def cpu(self) -> Module:
        return self._apply(_Convert("cpu", None))

    def type(self, dst_type) -> Module:
        return self._apply(_Cast(dst_type))

    def float(self) -> Module:
        return self._apply(_Convert(None, et.float32))

    def double(self) -> Module:
        return self._apply(_Convert(None, et.float64))

    def half(self) -> Module:
        return self._apply(_Convert(None, et.float16))

    def bfloat16(self) -> Module:
        return self._apply(_Convert(None, et.bfloat16))

    def share_memory(self) -> Module:
        return self

    # ------------------------------------------------------------------ calling and hooks
    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``)
        runs before forward; a non-None result replaces the arguments."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=[self._forward_pre_hooks_with_kwargs])
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False,
                              with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` runs after forward; a non-None result replaces
        the output."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable,
                                    prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)``; here grad_input holds the gradients
        with respect to the forward's tensor arguments."""
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    register_backward_hook = register_full_backward_hook

    def register_full_backward_pre_hook(self, hook: Callable,
                                        prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)``, called when the gradients with respect to the
        module's outputs are computed, before those with respect to its inputs; a returned
        tuple replaces grad_output (for the hooks after it and for the module's backward)."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args, **kwargs):
        backward = self._backward_hooks or self._backward_pre_hooks
        if not (self._forward_pre_hooks or self._forward_hooks or backward):
            return self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                res = hook(self, args, kwargs)
                if res is not None:
                    if not (isinstance(res, tuple) and len(res) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {res}.")
                    args, kwargs = res
            else:
                res = hook(self, args)
                if res is not None:
                    args = res if isinstance(res, tuple) else (res,)
        called = False
        try:
            if backward:
                args = self._wrap_backward_inputs(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_with_kwargs:
                    res = hook(self, args, kwargs, result)
                else:
                    res = hook(self, args, result)
                if res is not None:
                    result = res
            called = True
            if backward:
                result = self._wrap_backward_outputs(result)
            return result
        finally:
            if not called and self._forward_hooks_always_called:
                for hook_id, hook in list(self._forward_hooks.items()):
                    if hook_id in self._forward_hooks_always_called:
                        try:
                            if hook_id in self._forward_hooks_with_kwargs:
                                hook(self, args, kwargs, None)
                            else:
                                hook(self, args, None)
                        except Exception:  # noqa: BLE001 - the forward's error wins
                            pass

    __call__ = _call_impl

    def _wrap_backward_inputs(self, args):
        # PyTorch's full backward hook: the forward's tensor arguments that require grad pass
        # through one identity node, whose backward receives their gradients together, calls
        # the hooks with (grad_input, grad_output) and passes on what a hook returns instead
        tensors = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        pos = [i for i in tensors if args[i].requires_grad]
        # grad_input: one entry per tensor argument (None for one that does not require grad)
        state = {"gout": None, "n": len(tensors), "at": [tensors.index(i) for i in pos]}
        object.__setattr__(self, "_bw_state", state)
        return tuple(_BackwardHookInputs.around(self, state, args, pos)) if pos else args

    def _wrap_backward_outputs(self, result):
        state = self.__dict__.get("_bw_state")
        outs = result if isinstance(result, tuple) else (result,)
        pos = [i for i, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
        if state is None or not pos:
            return result
        outs = _BackwardHookOutputs.around(self, state, outs, pos)
        return tuple(outs) if isinstance(result, tuple) else outs[0]

    # ------------------------------------------------------------------ state dict
    def register_state_dict_pre_hook(self, hook):  # pragma: no cover - rarely used
        raise NotImplementedError("state_dict pre-hooks are not supported")

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    register_state_dict_post_hook = _register_state_dict_hook

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (hook, with_module)
        return handle

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict of every parameter and persistent buffer under dotted names.

        Values are detached tensors sharing the module's memory (``keep_vars=True`` gives
        the Parameters themselves)."""
        if args:  # legacy positional form state_dict(destination, prefix, keep_vars)
            destination = args[0]
            if len(args) > 1:
                prefix = args[1]
            if len(args) > 2:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".",
                                  keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            res = hook(self, destination, prefix, {})
            if res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs) -> None:
        for hook, with_module in self._load_state_dict_pre_hooks.values():
            args = (state_dict, prefix, local_metadata, strict, missing_keys,
                    unexpected_keys, error_msgs)
            if with_module:
                hook(self, *args)
            else:
                hook(*args)
        persistent = {k: v for k, v in self._buffers.items()
                      if k not in self._non_persistent_buffers_set}
        local = itertools.chain(self._parameters.items(), persistent.items())
        assign = (local_metadata or {}).get("assign_to_params_buffers", False)
        for name, param in local:
            key = prefix + name
            if param is None:
                continue
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  f"Tensor-like object from checkpoint but received "
                                  f"{type(value).__name__}")
                continue
            if is_lazy(param):
                with no_grad():
                    param.materialize(value.shape)
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            new = Parameter(value.detach(), param.requires_grad)
                            self._parameters[name] = new
                        else:
                            self._buffers[name] = value.detach()
                    else:
                        param.copy_(value)
            except Exception as exc:  # noqa: BLE001 - reported by name below
                error_msgs.append(
                    f'While copying the parameter named "{key}", whose dimensions in the model '
                    f"are {param.shape} and whose dimensions in the checkpoint are "
                    f"{value.shape}, an exception occurred : {exc.args}.")
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    input_name = key[len(prefix):].split(".", 1)
                    if len(input_name) > 1:
                        if input_name[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif input_name[0] not in self._parameters and \
                            input_name[0] not in persistent:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy parameters and buffers from ``state_dict``.

        Returns ``(missing_keys, unexpected_keys)``. With ``strict`` (the default), any missing
        or unexpected key raises RuntimeError; a shape mismatch always raises, naming the key.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        state_dict = OrderedDict(state_dict)
        metadata = {"assign_to_params_buffers": assign}

        def load(module: Module, prefix: str = "") -> None:
            module._load_from_state_dict(state_dict, prefix, metadata, True, missing,
                                         unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")
            incompatible = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                hook(module, incompatible)

        load(self)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The module-specific part of ``repr`` (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra_lines = []
        extra = self.extra_repr()
        if extra:
            extra_lines = extra.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append(f"({key}): {mod_str}")
        lines = extra_lines + child_lines
        main = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main += extra_lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _call_backward_hooks(module: Module, gin: tuple, gout: tuple) -> tuple:
    """Call ``module``'s full backward hooks in order; a hook's returned tuple replaces
    grad_input for the hooks after it and for the gradients passed on."""
    return _chained(module._backward_hooks, gin, lambda hook, g: hook(module, g, gout),
                    "backward hook", "grad_input")


def _call_backward_pre_hooks(module: Module, gout: tuple) -> tuple:
    """Call ``module``'s full backward pre-hooks in order; a hook's returned tuple replaces
    grad_output for the hooks after it and for the gradients passed on."""
    return _chained(module._backward_pre_hooks, gout, lambda hook, g: hook(module, g),
                    "backward pre hook", "grad_output")


def _chained(hooks: dict, grads: tuple, call, what: str, name: str) -> tuple:
    """``grads`` through ``call(hook, grads)`` of each hook in order, a returned tuple (or
    tensor) of as many gradients replacing them."""
    for hook in list(hooks.values()):
        res = call(hook, grads)
        if res is not None:
            res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
            if len(res) != len(grads):
                raise RuntimeError(f"{what} returned an invalid number of {name}, got "
                                   f"{len(res)}, but expected {len(grads)}")
            grads = res
    return grads


class _BackwardHookNode(Function):
    """Identity on a module's tensors (``forward(ctx, module, state, *tensors)``), a node in
    the graph where the module's full backward hooks see their gradients."""

    @staticmethod
    def forward(ctx, module, state, *xs):
        ctx.module, ctx.state = module, state
        outs = tuple(x.view_as(x) for x in xs)
        return outs if len(outs) > 1 else outs[0]

    @classmethod
    def around(cls, module, state, items, pos) -> list:
        """``items`` with the tensors at positions ``pos`` passed through one such node."""
        new = cls.apply(module, state, *(items[i] for i in pos))
        out = list(items)
        for i, o in zip(pos, new if isinstance(new, tuple) else (new,)):
            out[i] = o
        return out


class _BackwardHookInputs(_BackwardHookNode):
    """Around the tensor arguments that require grad: their gradients, together, are the
    hooks' grad_input."""

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        gin = [None] * st["n"]
        for k, g in zip(st["at"], grads):
            gin[k] = g
        gin = _call_backward_hooks(ctx.module, tuple(gin), st["gout"])
        return (None, None) + tuple(gin[k] for k in st["at"])


class _BackwardHookOutputs(_BackwardHookNode):
    """Around the outputs that require grad: their gradients are the hooks' grad_output (the
    hooks run here when no argument requires grad)."""

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        grads = _call_backward_pre_hooks(ctx.module, grads)
        st["gout"] = grads
        if not st["at"]:
            _call_backward_hooks(ctx.module, (None,) * st["n"], grads)
        return (None, None) + grads


def _check_name(name: str, kind: str) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain ".", got: {name}')
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


def _cuda_name(device) -> str:
    if isinstance(device, int):
        return f"cuda:{device}"
    return str(device)


class _Convert:
    """The tensor conversion of ``Module.to``: dtype applies to floating tensors only."""

    def __init__(self, device, dtype) -> None:
        self.device, self.dtype = device, dtype

    def __call__(self, t: Tensor) -> Tensor:
        dtype = self.dtype if t.is_floating_point() else None
        return t.to(device=self.device, dtype=dtype)


class _Cast:
    def __init__(self, dst_type) -> None:
        self.dst_type = dst_type

    def __call__(self, t: Tensor) -> Tensor:
        return t.type(self.dst_type)
