"""``Parameter``, ``Buffer`` and ``UninitializedParameter``: tensors that a Module registers.

    >>> import ember.tensor as et
    >>> from ember.nn import Parameter
    >>> p = Parameter(et.zeros(2))
    >>> p.requires_grad
    True
"""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer",
           "is_lazy"]


def _alias(cls, data: Tensor | None):
    """A new ``cls`` instance sharing ``data``'s memory and version counter, outside any graph."""
    if data is None:
        data = et.empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"{cls.__name__}(): data must be a Tensor, got {type(data).__name__}")
    t = object.__new__(cls)
    t.data = data  # the legacy ``.data`` setter: share memory and version counter, no graph
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning one to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s memory.

    >>> import ember.tensor as et
    >>> Parameter(et.ones(2)).requires_grad
    True
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        t = _alias(cls, data)
        if requires_grad:
            t.requires_grad = True
        return t

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        if self.grad is not None:
            result.grad = self.grad.detach().clone()
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (type(self), Tensor.__reduce_ex__(self.detach(), protocol),
                                     self.requires_grad))


def _rebuild_parameter(cls, reduced, requires_grad):
    fn, args = reduced
    return cls(fn(*args), requires_grad)


class Buffer(Tensor):
    """A Tensor that a Module registers as a buffer when assigned as an attribute.

    ``Buffer(data, persistent=True)``; non-persistent buffers stay out of ``state_dict``.
    """

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        t = _alias(cls, data)
        t.persistent = persistent
        return t

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        pass

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), persistent=self.persistent)
        return memo[id(self)]


class _Uninitialized:
    """What the lazy tensors share: no shape until ``materialize(shape)`` gives them zeroed
    storage and turns them into their ``cls_to_become``."""

    cls_to_become: type = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.data = et.zeros(*shape, device=device or self.device, dtype=dtype or self.dtype)
        self.__class__ = self.cls_to_become


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter whose shape is not known yet (used by the Lazy modules).

    ``materialize(shape)`` gives it storage, filled with zeros until a layer initializes it.
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad: bool = True, device=None, dtype=None):
        return super().__new__(cls, et.empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        pass

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet (registered as a buffer when assigned to a
    module's buffer name; ``persistent`` as for :class:`Buffer`)."""

    def __new__(cls, requires_grad: bool = False, device=None, dtype=None,
                persistent: bool = True):
        t = _alias(cls, et.empty(0, device=device, dtype=dtype))
        t.persistent = persistent
        return t

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(False, self.device, self.dtype, self.persistent)
        return memo[id(self)]


def is_lazy(param) -> bool:
    """True for parameters and buffers not yet materialized."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))
