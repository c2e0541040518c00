"""``ember.nn.utils.prune`` (PyTorch's ``torch.nn.utils.prune``): pruning a module's parameter
by a mask.

Pruning parameter ``name`` of a module replaces it by the parameter ``name + "_orig"`` (the
unpruned values, still trained) and the buffer ``name + "_mask"``; ``module.<name>`` becomes
the plain tensor ``orig * mask``, recomputed by a forward pre-hook before every call, so the
pruned entries get no gradient. Pruning a parameter again combines the masks (a
:class:`PruningContainer`): the new method works on what the earlier ones left (unstructured:
the entries still unmasked; structured: the channels not yet all zero; global: everything).
:func:`remove` makes the pruning permanent: ``name`` is a parameter again, holding the pruned
values.

    >>> import ember.nn as nn
    >>> lin = nn.Linear(4, 2)
    >>> _ = l1_unstructured(lin, "weight", amount=0.5)
    >>> int(lin.weight_mask.sum()), sorted(n for n, _ in lin.named_parameters())
    (4, ['bias', 'weight_orig'])
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured",
           "L1Unstructured", "RandomStructured", "LnStructured", "CustomFromMask", "identity",
           "random_unstructured", "l1_unstructured", "random_structured", "ln_structured",
           "global_unstructured", "custom_from_mask", "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way to compute a mask. ``PRUNING_TYPE`` ("unstructured", "structured" with a ``dim``,
    or "global") says what :class:`PruningContainer` hands it when a parameter is pruned
    again; :meth:`compute_mask` (the subclass's) returns the new mask given the old one."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """The forward pre-hook: ``module.<name>`` set to the masked original."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The mask for ``t``, given the mask of earlier pruning ``default_mask``."""

    def apply_mask(self, module) -> Tensor:
        """``<name>_orig * <name>_mask`` of ``module``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return orig * mask.to(dtype=orig.dtype)

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with ``cls(*args, **kwargs)`` (combined with earlier pruning
        of it); ``importance_scores``: a tensor of the parameter's shape to rank by instead of
        its values. Returns the method (or the container) installed as the hook."""
        old = None
        hooks = module._forward_pre_hooks
        found = 0
        for key, hook in list(hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old, old_key = hook, key
                found += 1
        if found > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor "
                                 f"{name} of module {module}. Use a PruningContainer.")
        default_mask = None
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            del hooks[old_key]
            if isinstance(old, PruningContainer):
                old.add_pruning_method(method)
                method = old
            else:
                container = PruningContainer(old)
                container.add_pruning_method(method)
                method = container
            default_mask = getattr(module, name + "_mask").detach().clone()
        orig = getattr(module, name)
        if importance_scores is not None and tuple(importance_scores.shape) != \
                tuple(orig.shape):
            raise AssertionError(f"importance_scores should have the same shape as "
                                 f"parameter {name} of {module}")
        if old is None:  # the parameter becomes <name>_orig
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = et.ones_like(orig)
        scores = importance_scores if importance_scores is not None else orig
        try:
            mask = method.compute_mask(scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if old is None:  # put the parameter back
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """``t`` with the mask of this method applied (ranked by ``importance_scores``)."""
        scores = importance_scores if importance_scores is not None else t
        mask = default_mask if default_mask is not None else et.ones_like(t)
        return t * self.compute_mask(scores, default_mask=mask)

    def remove(self, module) -> None:
        """Make the pruning permanent: ``module.<name>`` a parameter of the pruned values."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be "
                                 f"removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        with et.no_grad():
            orig.copy_(weight.detach())
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied one after another to one parameter."""

    def __init__(self, *args):
        self._pruning_methods: tuple = ()
        if len(args) == 1 and not isinstance(args[0], (tuple, list)):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        elif len(args) == 1:
            self._tensor_name = args[0][0]._tensor_name
            for m in args[0]:
                self.add_pruning_method(m)
        else:
            self._tensor_name = args[0]._tensor_name
            for m in args:
                self.add_pruning_method(m)

    def add_pruning_method(self, method) -> None:
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask computed on what ``default_mask`` left, combined with it."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            keep = mask == 1
            part = method.compute_mask(t[keep], default_mask=mask[keep])
            return mask.masked_scatter(keep, part.to(dtype=mask.dtype))
        if kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to '
                                     'have the attribute `dim` defined.')
            nd = t.dim()
            dim = method.dim + nd if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {nd}")
            others = [d for d in range(nd) if d != dim]
            channels = (mask.sum(dim=others) != 0).nonzero().view(-1)
            part = method.compute_mask(t.index_select(dim, channels),
                                       default_mask=mask.index_select(dim, channels))
            return mask.index_copy(dim, channels, part.to(dtype=mask.dtype))
        if kind == "global":
            return method.compute_mask(t, default_mask=mask)
        raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")


class Identity(BasePruningMethod):
    """Prunes nothing: the mask stays what it was."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _check_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         f"non-negative integer")


def _count(amount, size: int) -> int:
    """How many of ``size`` units ``amount`` prunes (a fraction rounded, or a count)."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters "
                             f"to prune={size}")
        return int(amount)
    return round(amount * size)


def _mask_lowest(scores, amount, default_mask) -> Tensor:
    """``default_mask`` with the ``amount`` entries of lowest ``scores`` zeroed."""
    k = _count(amount, scores.numel())
    mask = default_mask.clone()
    if k:
        mask.view(-1)[et.topk(scores.view(-1), k=k, largest=False).indices] = 0
    return mask


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (a fraction, or a count) of the entries, drawn at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _mask_lowest(et.rand_like(t), self.amount, default_mask)

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes ``amount`` of the entries, those of least magnitude."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _check_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _mask_lowest(et.abs(t), self.amount, default_mask)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _check_structured(t) -> None:
    if t.dim() <= 1:
        raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {tuple(t.shape)} with {t.dim()} dims")


def _channel_mask(t, dim: int, keep) -> Tensor:
    """Ones on the channels ``keep`` (indices along ``dim``) of a tensor shaped as ``t``."""
    mask = et.zeros_like(t)
    shape = [1] * t.dim()
    shape[dim] = t.shape[dim]
    on = et.zeros(t.shape[dim], dtype=t.dtype, device=t.device)
    on[keep] = 1
    return mask + on.view(shape)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``, drawn at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1):
        _check_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        n = t.shape[self.dim]
        k = _count(self.amount, n)
        if k == 0:
            return default_mask
        draws = et.rand(n, device=t.device)
        keep = draws > et.kthvalue(draws, k).values
        return _channel_mask(t, self.dim % t.dim(), keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes ``amount`` of the channels along ``dim``: those of least ``n``-norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1):
        _check_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        _check_structured(t)
        dim = self.dim % t.dim()
        size = t.shape[dim]
        k = _count(self.amount, size)
        if k == 0:
            return default_mask
        norms = et.linalg.vector_norm(t, ord=2 if self.n == "fro" else self.n,
                                      dim=[d for d in range(t.dim()) if d != dim])
        keep = et.topk(norms, k=size - k, largest=True).indices
        return _channel_mask(t, dim, keep) * default_mask.to(dtype=t.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise AssertionError("the mask has another shape than the parameter")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


# ------------------------------------------------------------------------------ functions
def identity(module, name: str):
    """Prune ``module.<name>`` by a mask of ones (the reparametrization alone)."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Prune ``amount`` of ``module.<name>``'s entries at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    """Prune ``amount`` of ``module.<name>``'s entries: those of least magnitude."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Prune ``amount`` of ``module.<name>``'s channels along ``dim`` at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    """Prune ``amount`` of ``module.<name>``'s channels along ``dim``: least ``n``-norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method``
    (an unstructured method's class) ranks all their entries as one vector."""
    parameters = list(parameters)
    if not parameters:
        raise TypeError("global_unstructured(): parameters should be an iterable of "
                        "(module, name) pairs")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = et.cat([importance_scores.get((m, n), getattr(m, n)).detach().reshape(-1)
                     for m, n in parameters])
    default_mask = et.cat([getattr(m, n + "_mask", et.ones_like(getattr(m, n))).reshape(-1)
                           for m, n in parameters])
    container = PruningContainer(_named(pruning_method(**kwargs)))
    if container[-1].PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the '
                        f"`pruning_method`. Found method {pruning_method} of type "
                        f"{container[-1].PRUNING_TYPE}")
    mask = container.compute_mask(scores, default_mask.to(dtype=scores.dtype))
    offset = 0
    for m, n in parameters:
        p = getattr(m, n)
        k = p.numel()
        custom_from_mask(m, n, mask=mask[offset:offset + k].view(p.shape))
        offset += k


def _named(method):
    method._tensor_name = "temp"
    return method


def custom_from_mask(module, name: str, mask):
    """Prune ``module.<name>`` where ``mask`` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name: str):
    """Make the pruning of ``module.<name>`` permanent (see :meth:`BasePruningMethod.remove`)."""
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     f"can be removed")


def is_pruned(module) -> bool:
    """Whether ``module`` or any module in it has a pruning hook."""
    for sub in module.modules():
        for hook in sub._forward_pre_hooks.values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
