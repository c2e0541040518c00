"""The Optimizer base class (``torch.optim.Optimizer``).

An optimizer holds ``param_groups`` (dicts with a ``"params"`` list and per-group options
filled in from ``defaults``) and ``state`` (a dict keyed by parameter). ``state_dict()``
replaces parameters by integer ids in group order, so a saved state loads into a fresh
optimizer over fresh parameters of the same shapes.

Subclasses implement ``step(closure=None)`` as a thin loop that gathers each group's tensors
and calls a pure update function over lists of tensors (``_sgd``, ``_adam``, ...).

Implementation flags (``foreach``, ``fused``, ``capturable``, ``differentiable``, where
PyTorch's optimizer has them) are never accepted and ignored. ember has two implementations of
an update: the per-parameter array loop (PyTorch's single-tensor "for-loop" arithmetic) and,
for ``SGD``, ``Adam`` and ``AdamW`` only, a fused multi-tensor kernel (one call updates every
fused parameter of a group: one Numba launch per dtype on the CPU; CuPy on CUDA). The flags
choose between them, per param group:

* ``fused=True`` or ``foreach=True``: the fused kernels, for every parameter (ember's kernels
  are its multi-tensor implementation: PyTorch's ``foreach`` and ``fused`` are both "the fast
  implementation", with the same numbers up to rounding). Both True raises RuntimeError, as in
  PyTorch; params that are not float32/float64 on a device with the kernel raise RuntimeError
  at construction (PyTorch's ``fused=True`` check); an optimizer without kernels raises
  NotImplementedError.
* ``foreach=False`` or ``fused=False``: the per-parameter array loop.
* both None (the default): the fused kernel where it applies (a float32/float64 C-contiguous
  parameter, gradient of its dtype), else the loop. PyTorch's CPU default is the loop; the
  numbers are the same up to rounding.
* ``capturable=True`` (CUDA graph capture) and ``differentiable=True`` (autograd through the
  step) are things ember cannot do: NotImplementedError at construction, naming the optimizer
  and the flag. A param group or a loaded state dict carrying them is refused the same way.

>>> import ember.tensor as et
>>> from ember.optim import SGD
>>> w = et.ones(2)
>>> opt = SGD([w], lr=0.5)
>>> w.grad = et.full((2,), 2.0)
>>> _ = opt.step()
>>> w.tolist()
[0.0, 0.0]
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import array_module, bump_version, get_kernel, unwrap

__all__ = ["Optimizer", "required"]


def _as_real(t: Tensor) -> Tensor:
    """A complex tensor viewed as real pairs (updates through it write the tensor)."""
    with et.no_grad():
        return et.view_as_real(t)


class _RequiredParameter:
    """Marks a hyperparameter without a default (``torch.optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"

    def __reduce__(self) -> str:
        return "required"


required = _RequiredParameter()


# ----------------------------------------------------------------------------- grad modes
def _grad_mode(name: str) -> Any:
    """``ember.autograd.no_grad()`` / ``enable_grad()`` where autograd provides them."""
    try:
        autograd = importlib.import_module("ember.autograd")
    except ImportError:  # pragma: no cover - ember-optim declares ember-autograd
        return contextlib.nullcontext()
    ctx = getattr(autograd, name, None)
    return contextlib.nullcontext() if ctx is None else ctx()


def _no_grad() -> Any:
    return _grad_mode("no_grad")


def _run_pending() -> None:
    """Run the pending graph of an ``ember.autograd.autobatch()`` context first (no-op
    outside one): a step writes the parameters in place, outside the op registry, and the
    calls deferred before it read them as they were, as they would without the context."""
    try:
        autobatch = importlib.import_module("ember.autograd.autobatch")
    except ImportError:  # pragma: no cover - ember-optim declares ember-autograd
        return
    autobatch.flush()


def _enable_grad() -> Any:
    return _grad_mode("enable_grad")


def _scalar_dtype() -> Any:
    """dtype of the ``step`` counters: float64 when that is the default dtype, else float32."""
    return et.float64 if et.get_default_dtype() == et.float64 else et.float32


def _scalar(value: float, dtype: Any = None) -> Tensor:
    """A 0-d CPU tensor holding ``value`` (``step``, ``mu_product``)."""
    return et.full((), value, dtype=_scalar_dtype() if dtype is None else dtype)


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


class _RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict) -> None:
        self._hooks = hooks
        self.id = _RemovableHandle._next_id
        _RemovableHandle._next_id += 1

    def remove(self) -> None:
        self._hooks.pop(self.id, None)


def _with_hooks(step: Callable) -> Callable:
    """Wrap a subclass's ``step`` with the step pre/post hooks and the scheduler's flag."""

    @functools.wraps(step)
    def wrapper(self, *args: Any, **kwargs: Any) -> Any:
        if self.__dict__.get("_in_step", False):  # a subclass's step calling super().step()
            return step(self, *args, **kwargs)
        for hook in list(self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), but "
                        f"got {result}.")
                args, kwargs = result
        self._opt_called = True
        self._in_step = True
        try:
            out = step(self, *args, **kwargs)
        finally:
            self._in_step = False
        for hook in list(self._optimizer_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    wrapper._ember_hooked = True
    return wrapper


class Optimizer:
    """Base class of every optimizer.

    Args:
        params: an iterable of Tensors, or of dicts each holding ``"params"`` and per-group
            options that override ``defaults``.
        defaults: the default value of every option of this optimizer.
    """

    #: Whether ``add_param_group`` validates ``foreach`` / ``fused`` / ``capturable`` /
    #: ``differentiable`` (ember's optimizers; a user's subclass keeps its own meaning).
    _checks_impl_flags = False
    #: Whether ``step`` accepts sparse COO gradients (SGD, Adagrad, SparseAdam), and the
    #: error raised otherwise (PyTorch's).
    _sparse_grads = False
    #: Whether complex parameters are updated (as their real and imaginary parts); PyTorch's
    #: Adafactor and Muon refuse them.
    _complex_ok = True

    @property
    def _sparse_grad_error(self) -> str:
        name = type(self).__name__
        if name in ("Adam", "AdamW"):
            return "Adam does not support sparse gradients, please consider SparseAdam instead"
        return f"{name} does not support sparse gradients"

    #: The name of this optimizer's fused kernel (``get_kernel``), None where it has none.
    _fused_kernel: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_ember_hooked", False):
            cls.step = _with_hooks(step)

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict[int, Callable] = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + _typename(params))
        self.state: defaultdict[Tensor, dict[str, Any]] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(dict(param_group))

    # ------------------------------------------------------------------------- pickling
    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_optimizer_step_post_hooks", OrderedDict())

    def __repr__(self) -> str:
        out = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += "\n"
            out += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    out += f"    {key}: {group[key]}\n"
        out += ")"
        return out

    # ------------------------------------------------------------------------- groups
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (the rest from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead.")
        else:
            param_group["params"] = list(params)

        names, tensors = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing")
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is "
                    + _typename(param))
            if not self.defaults.get("differentiable", None) and not (
                    param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization "
                    f"parameter {name}")
            param_group.setdefault(name, default)
        if self._checks_impl_flags:
            self._check_impl_flags(param_group)

        ids = [id(p) for p in param_group["params"]]
        if len(ids) != len(set(ids)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, "
                "this will cause an error", stacklevel=3)

        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def _check_impl_flags(self, group: dict[str, Any]) -> None:
        """Refuse the implementation flags ember cannot honor (see the module docstring)."""
        name = type(self).__name__
        for flag, what in (("differentiable", "autograd through the optimizer step (ember's "
                                              "updates run in place under no_grad)"),
                           ("capturable", "CUDA graph capture")):
            if group.get(flag):
                raise NotImplementedError(
                    f"{name}({flag}=True): ember does not support {what}; "
                    f"use {flag}=False")
        fused, foreach = group.get("fused"), group.get("foreach")
        if fused and foreach:
            raise RuntimeError(f"{name}: `fused` and `foreach` cannot be `True` together.")
        if not (fused or foreach):
            return
        flag = "fused" if fused else "foreach"
        kernel = self._fused_kernel
        if kernel is None:
            raise NotImplementedError(
                f"{name}({flag}=True): ember has no fused or multi-tensor implementation of "
                f"{name}, only the per-parameter loop; use {flag}=None or {flag}=False")
        for p in group["params"]:
            if p.dtype not in _FUSED_DTYPES or _kernel(kernel, p) is None:
                raise RuntimeError(
                    f"{name}: `{flag}=True` requires all the params to be float32 or float64 "
                    f"Tensors on a device with ember's {kernel} kernel, but got {p.dtype} and "
                    f"{p.device.type}")

    # ------------------------------------------------------------------------- gradients
    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to None (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    g = p.grad
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    unwrap(g)[...] = 0
                    bump_version(g)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step (``closure`` re-evaluates the loss)."""
        raise NotImplementedError

    # ------------------------------------------------------------------------- step helpers
    def _step_groups(self, closure: Callable[[], Any] | None,
                     update: Callable[[dict[str, Any]], None]) -> Any:
        """The body of a subclass's ``step()``: evaluate ``closure`` with grad enabled, then
        call ``update(group)`` for every param group under no_grad; return the loss."""
        loss = None
        if closure is not None:
            with _enable_grad():
                loss = closure()
        _run_pending()
        with _no_grad():
            for group in self.param_groups:
                update(group)
        return loss

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        """Fill the empty ``state`` of ``param`` before its first step (the default leaves it
        empty)."""

    def _group_tensors(self, group: dict[str, Any], keys: tuple[str, ...] = (),
                       optional: tuple[str, ...] = ()) -> tuple[list[Any], ...]:
        """``(params, grads, *states)`` over the parameters of ``group`` that have a gradient:
        ``states`` holds one list per name in ``keys``, taken from each parameter's ``state``
        (None where a name in ``optional`` is missing). An empty state is first filled by
        ``_init_state``; with no ``keys`` the state is not touched at all.

        A complex parameter, its gradient and its complex state tensors come as their
        ``view_as_real`` views, so every update treats the real and imaginary parts as two
        real parameters, as PyTorch's optimizers do (Adam's second moment is per part, not
        ``g * g``); optimizers that have no complex form say so (``_complex_ok``)."""
        params: list[Tensor] = []
        grads: list[Tensor] = []
        columns: list[list[Any]] = [[] for _ in keys]
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse and not self._sparse_grads:
                raise RuntimeError(self._sparse_grad_error)
            cplx = p.is_complex()
            if cplx and not self._complex_ok:
                raise RuntimeError(f"{type(self).__name__} does not support complex parameters")
            params.append(_as_real(p) if cplx else p)
            grads.append(_as_real(p.grad) if cplx else p.grad)
            if not keys:
                continue
            state = self.state[p]
            if len(state) == 0:
                self._init_state(p, group, state)
            for column, key in zip(columns, keys):
                value = state.get(key) if key in optional else state[key]
                column.append(_as_real(value) if cplx and isinstance(value, Tensor) and
                              value.is_complex() else value)
        return (params, grads, *columns)

    # ------------------------------------------------------------------------- hooks
    def register_step_pre_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs before ``step``; it may return new
        ``(args, kwargs)``."""
        handle = _RemovableHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook: Callable) -> _RemovableHandle:
        """``hook(optimizer, args, kwargs)`` runs after ``step``."""
        handle = _RemovableHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    # ------------------------------------------------------------------------- state
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {id: {...}}, "param_groups": [{..., "params": [ids]}]}``.

        Parameters are numbered in group order; tensors in ``state`` are returned by
        reference (save them, or ``clone()`` them, to keep a snapshot).
        """
        mapping: dict[int, int] = {}
        start = 0

        def pack(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack(g) for g in self.param_groups]
        packed_state = {
            (mapping[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        return {"state": packed_state, "param_groups": param_groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a ``state_dict()``; state tensors are copied and cast to each parameter's
        dtype (floating parameters) and device. ``step`` counters keep their dtype."""
        groups = self.param_groups
        saved_groups = copy.deepcopy(list(state_dict["param_groups"]))
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group")
        id_map = dict(zip(
            chain.from_iterable([int(i) for i in g["params"]] for g in saved_groups),
            chain.from_iterable(g["params"] for g in groups),
        ))

        state: defaultdict[Any, dict[str, Any]] = defaultdict(dict)
        for key, value in state_dict["state"].items():
            k = _as_id(key)
            if k in id_map:
                param = id_map[k]
                state[param] = _cast(param, value)
            else:
                state[key] = value

        new_groups = []
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            for name, value in saved.items():  # JSON round trips turn tuples into lists
                if isinstance(value, list) and isinstance(group.get(name), tuple):
                    saved[name] = tuple(value)
            new_groups.append(saved)
        if self._checks_impl_flags:
            for group in new_groups:
                self._check_impl_flags(group)
        self.state = state
        self.param_groups = new_groups


def _as_id(key: Any) -> Any:
    """State keys are ints; a JSON round trip may have made them strings."""
    if isinstance(key, str) and key.lstrip("-").isdigit():
        return int(key)
    return key


_SCALAR_STATE = ("step", "mu_product", "eta", "mu")


def _cast(param: Tensor, value: Any, key: Any = None) -> Any:
    """Deep-copy ``value``, moving tensors to ``param``'s device (and dtype, for floating
    parameters). The 0-d CPU counters ``step``, ``mu_product`` (NAdam) and ``eta``, ``mu``
    (ASGD) keep their dtype (PyTorch casts all but ``step``, which makes a resumed NAdam or
    ASGD drift from one that never stopped)."""
    if isinstance(value, Tensor):
        if key in _SCALAR_STATE:
            return value.clone()
        if param.is_floating_point():
            out = value.to(dtype=param.dtype, device=param.device)
        else:
            out = value.to(device=param.device)
        return out.clone() if out is value else out
    if isinstance(value, dict):
        return {k: _cast(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value


# ----------------------------------------------------------------------------- helpers
def _xp(arr: Any) -> Any:
    """numpy for NumPy arrays, cupy for CuPy arrays."""
    if isinstance(arr, np.ndarray):
        return np
    return array_module(arr)


def _lerp_(a: Any, b: Any, weight: float) -> None:
    """``a = torch.lerp(a, b, weight)`` in place (ATen's two-sided formula)."""
    if abs(weight) < 0.5:
        a += weight * (b - a)
    else:
        a[...] = b - (b - a) * (1 - weight)


def _kernel(name: str, t: Tensor) -> Callable | None:
    """The fused kernel ``name`` for ``t``'s device, or None where there is none."""
    try:
        return get_kernel(name, t)
    except (ImportError, NotImplementedError, RuntimeError):
        return None


_FUSABLE = (np.dtype(np.float32), np.dtype(np.float64))


def _fusable(param: Any, grad: Any, *state: Any) -> bool:
    """True when a fused kernel can update these arrays in place: the parameter and its state
    (None entries skipped) float32/float64 of one dtype and shape, C-contiguous; the gradient
    of the parameter's dtype (the kernel reads it in any layout)."""
    if grad.dtype != param.dtype:
        return False
    for a in (param, *state):
        if a is None:
            continue
        if a.dtype not in _FUSABLE or a.dtype != param.dtype or a.shape != param.shape:
            return False
        if not a.flags.c_contiguous:
            return False
    return True


_FUSED_DTYPES = (et.float32, et.float64)


def _fused_mode(group: dict[str, Any]) -> bool | None:
    """The implementation a group asks for: True (the fused kernels, ``fused=True`` or
    ``foreach=True``), False (the per-parameter loop, ``fused=False`` or ``foreach=False``) or
    None (the kernel where it applies, else the loop)."""
    fused, foreach = group.get("fused"), group.get("foreach")
    if fused or foreach:
        return True
    if fused is False or foreach is False:
        return False
    return None


def _use_fused(fused: bool | None, params: list[Tensor]) -> bool:
    return fused is not False and len(params) > 0


def _fused_copies(arrays: tuple, write_back: list) -> tuple:
    """C-contiguous copies of one parameter's ``arrays`` (parameter, gradient, state; None
    stays None) in the parameter's dtype, for the forced fused path (a parameter the kernel
    cannot update in place: non-contiguous, or a gradient of another dtype). The pairs
    ``(array, copy)`` to copy back after the kernel has run are added to ``write_back`` (the
    gradient, which the kernel only reads, is not)."""
    first = arrays[0]
    xp = _xp(first)
    work = tuple(None if a is None else xp.ascontiguousarray(a, dtype=first.dtype)
                 for a in arrays)
    write_back.extend((a, w) for i, (a, w) in enumerate(zip(arrays, work))
                      if i != 1 and a is not None and w is not a)
    return work


def _check_adam_args(lr: float, betas: tuple[float, float], eps: float,
                     weight_decay: float) -> None:
    """The argument checks of the Adam family (Adam, AdamW, Adamax, NAdam, RAdam)."""
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


def _step_value(step_t: Tensor) -> float:
    """Increment a ``step`` counter in place and return its new value."""
    arr = unwrap(step_t)
    arr += 1
    bump_version(step_t)
    return float(arr)
