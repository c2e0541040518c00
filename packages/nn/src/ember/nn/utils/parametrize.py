"""``ember.nn.utils.parametrize``: tensors of a module computed from other tensors
(``torch.nn.utils.parametrize``).

``register_parametrization(module, "weight", P())`` moves ``module.weight`` into
``module.parametrizations.weight.original`` and turns ``module.weight`` into a property that
returns ``P()(original)``. The module's class becomes a subclass ``Parametrized<Name>`` that holds
the property; removing the last parametrization gives the module its class back.

    >>> import ember.nn as nn
    >>> import ember.nn.utils.parametrize as P
    >>> class Symmetric(nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).mT
    >>> m = P.register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
    >>> type(m).__name__, bool((m.weight == m.weight.mT).all())
    ('ParametrizedLinear', True)
    >>> list(m.state_dict())
    ['bias', 'parametrizations.weight.original']
"""
from __future__ import annotations

import collections.abc
import copy
import copyreg
from collections.abc import Sequence
from contextlib import contextmanager

from ember.autograd import no_grad
from ember.tensor import Tensor

from ..modules import Module, ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside this context a parametrized tensor is computed once, on first access, and the
    value is reused until the outermost ``cached()`` exits (``torch.nn.utils.parametrize.cached``).

    >>> import ember.nn as nn
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> m = register_parametrization(nn.Linear(2, 2), "weight", Double())
    >>> with cached():
    ...     m.weight is m.weight
    True
    >>> m.weight is m.weight
    False
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, X: Tensor) -> None:
    if isinstance(X, Parameter):
        module.register_parameter(name, X)
    else:
        module.register_buffer(name, X)


def _maybe_set(dest: Tensor, src: Tensor) -> None:
    """``dest`` takes ``src``'s memory in place (PyTorch's ``dest.set_(src)``): the object,
    and so a reference an optimizer holds, stays the same."""
    dest.data = src


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and the tensor(s) they are computed from
    (``module.parametrizations[name]``).

    The unconstrained tensor is held as ``original``, or as ``original0``, ``original1``, ...
    when the first parametrization's ``right_inverse`` returns a sequence. Built by
    :func:`register_parametrization`; not meant to be made by hand.
    """

    original: Tensor
    unsafe: bool

    def __init__(self, modules: Sequence[Module], original: Tensor,
                 unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype

        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")

        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)

        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                    f"original.dtype: {original.dtype}\n"
                    f"right_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError(
                    "When `right_inverse` outputs one tensor, it may not change the device.\n"
                    f"original.device: {original.device}\n"
                    f"right_inverse(original).device: {new.device}")
            with no_grad():
                _maybe_set(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors "
                        f"(list, tuple...). Got element {i} of the sequence with type "
                        f"{type(originali).__name__}.")
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)

        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(Z).__name__}.")
            if Z.dtype != original_dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized dtype: {original_dtype}\n"
                    f"parametrized dtype: {Z.dtype}")
            if Z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless `unsafe` flag is enabled.\n"
                    f"unparametrized shape: {original_shape}\n"
                    f"parametrized shape: {Z.shape}")

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` through the parametrizations' ``right_inverse`` methods, last
        registered first, into ``original`` (or ``original0``, ``original1``, ...)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError("`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, collections.abc.Sequence):
                    raise ValueError("'right_inverse' must return a sequence of tensors. "
                                     f"Got {type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, tensor in enumerate(value):
                    original_i = getattr(self, f"original{i}")
                    if not isinstance(tensor, Tensor):
                        raise ValueError("'right_inverse' must return a sequence of tensors "
                                         "or reference-type opaques. Got element "
                                         f"{i} of type {type(tensor).__name__}.")
                    if original_i.dtype != tensor.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                         f"{tensor.dtype} while `original{i}` has dtype "
                                         f"{original_i.dtype}")
                    _maybe_set(original_i, tensor)

    def __repr__(self) -> str:
        return Module.__repr__(self)  # under its own name, as PyTorch prints it

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for i in range(1, len(self)):
            x = self[i](x)
        return x


def _deepcopy_parametrized(self, memo):
    """``copy.deepcopy`` for a parametrized module whose class has no ``__deepcopy__``: the
    injected ``__getstate__`` refuses pickling, so copy the instance dict directly."""
    obj = memo.get(id(self))
    if obj is not None:
        return obj
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _getstate_parametrized(self):
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). See:\n"
        "https://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training")


def _inject_new_class(module: Module) -> None:
    """Give ``module`` the class ``Parametrized<Name>``, a fresh subclass of its own that
    will hold the properties of its parametrized tensors."""
    cls = module.__class__
    namespace = {"__getstate__": _getstate_parametrized}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _deepcopy_parametrized
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


class _GetParametrized:
    """The getter of the property ``module.<tensor_name>``: runs the parametrizations, or
    returns the value cached inside :func:`cached`."""

    def __init__(self, tensor_name: str) -> None:
        self.tensor_name = tensor_name

    def __call__(self, module: Module) -> Tensor:
        parametrization = module.parametrizations[self.tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(module), self.tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = parametrization()
            _cache[key] = tensor
        return tensor


class _SetOriginal:
    """The setter of the property: stores the value through the ``right_inverse`` methods."""

    def __init__(self, tensor_name: str) -> None:
        self.tensor_name = tensor_name

    def __call__(self, module: Module, value: Tensor) -> None:
        module.parametrizations[self.tensor_name].right_inverse(value)


def _inject_property(module: Module, tensor_name: str) -> None:
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")
    setattr(module.__class__, tensor_name,
            property(_GetParametrized(tensor_name), _SetOriginal(tensor_name)))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the
    tensor it replaces (``torch.nn.utils.parametrize.register_parametrization``).

    The first registration on a tensor moves it to
    ``module.parametrizations[tensor_name].original`` (first passed through the
    parametrization's ``right_inverse`` when it has one; a sequence returned by
    ``right_inverse`` is stored as ``original0``, ``original1``, ...). Registering again on
    the same name chains the new parametrization after the others. Unless ``unsafe``, a
    parametrization may change neither the shape nor the dtype (ValueError). Assigning to
    ``module.<tensor_name>`` stores the value through the ``right_inverse`` methods.

    >>> import ember.nn as nn
    >>> class Scale(nn.Module):
    ...     def forward(self, X):
    ...         return 3 * X
    ...     def right_inverse(self, A):
    ...         return A / 3
    >>> m = register_parametrization(nn.Linear(2, 2), "weight", Scale())
    >>> m.weight = et.ones(2, 2)
    >>> m.parametrizations.weight.original.tolist()
    [[0.3333333432674408, 0.3333333432674408], [0.3333333432674408, 0.3333333432674408]]
    >>> m.weight.tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(X).__name__}.")
            if X.dtype != Y.dtype:
                raise ValueError(
                    "Registering a parametrization may not change the dtype of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.dtype: {Y.dtype}\n"
                    f"parametrization(module.{tensor_name}).dtype: {X.dtype}")
            if X.shape != Y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape of the tensor, "
                    "unless the `unsafe` flag is enabled.\n"
                    f"module.{tensor_name}.shape: {Y.shape}\n"
                    f"parametrization(module.{tensor_name}).shape: {X.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    Z = parametrization.right_inverse(X)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(Z, Tensor):
                        raise ValueError("parametrization.right_inverse must return a tensor. "
                                         f"Got: {type(Z).__name__}")
                    if Z.dtype != Y.dtype:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have "
                            f"the same dtype as module.{tensor_name}, unless the `unsafe` flag "
                            f"is enabled.\nmodule.{tensor_name}.dtype: {Y.dtype}\n"
                            f"returned dtype: {Z.dtype}")
                    if Z.shape != Y.shape:
                        raise ValueError(
                            "The tensor returned by parametrization.right_inverse must have "
                            f"the same shape as module.{tensor_name}, unless the `unsafe` flag "
                            f"is enabled.\nmodule.{tensor_name}.shape: {Y.shape}\n"
                            f"returned shape: {Z.shape}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization on ``tensor_name`` (on any tensor when
    ``tensor_name`` is None).

    >>> import ember.nn as nn
    >>> is_parametrized(nn.Linear(2, 2))
    False
    """
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Remove every parametrization on ``module.<tensor_name>``, which becomes a plain
    parameter (or buffer) again: its current parametrized value with ``leave_parametrized``,
    otherwise the unparametrized ``original`` (ValueError when that is several tensors).

    >>> import ember.nn as nn
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> m = nn.Linear(2, 2)
    >>> w = m.weight.detach().clone()
    >>> m = register_parametrization(m, "weight", Double())
    >>> m = remove_parametrizations(m, "weight")
    >>> type(m).__name__, bool((m.weight == 2 * w).all())
    ('Linear', True)
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t) if t.requires_grad else t

    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)

    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before any parametrization was registered (its class otherwise).

    >>> import ember.nn as nn
    >>> type_before_parametrizations(nn.Linear(2, 2)).__name__
    'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Register on ``to_module`` the parametrizations of ``from_module`` (those of
    ``tensor_name`` only, when given) and make it share their original tensors; a missing
    tensor is first created on ``to_module`` as a Parameter. Returns ``to_module``.

    >>> import ember.nn as nn
    >>> class Double(nn.Module):
    ...     def forward(self, X):
    ...         return 2 * X
    >>> a = register_parametrization(nn.Linear(2, 2), "weight", Double())
    >>> b = transfer_parametrizations_and_params(a, nn.Linear(2, 2))
    >>> b.parametrizations.weight.original is a.parametrizations.weight.original
    True
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for param_func in source:
            register_parametrization(to_module, name, param_func)
        target = to_module.parametrizations[name]
        if hasattr(source, "original"):
            target.original = source.original
        else:
            i = 0
            while hasattr(source, f"original{i}"):
                setattr(target, f"original{i}", getattr(source, f"original{i}"))
                i += 1
    return to_module
