"""Autograd for in-place ops.

An in-place op on a tensor in a graph is recorded as its out-of-place twin followed by a write
into the tensor, whose ``grad_fn`` is then rebased onto the twin's node. When the derivative
needs the old value, it reads a snapshot taken before the write, so ``y.mul_(w)`` stays
differentiable; tensors saved by *earlier* nodes keep their version check, so modifying a value
that backward still needs raises at backward time, as in PyTorch.
"""
from __future__ import annotations

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import (
    OPS,
    bump_version,
    check_inplace,
    has_internal_overlap,
    unwrap,
    wrap,
)

from .derivatives import TABLE
from .graph import (
    _logical_index,
    _requires,
    autograd_meta,
    fresh_view_grad_fn,
    output_nr,
    record,
    set_output_nr,
)

__all__ = ["record_inplace", "FUNCTIONAL"]


def _copy(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        return et.full_like(self, src)
    return et.expand(src.to(dtype=self.dtype, device=self.device), tuple(self.shape))


def _fill(self, value):
    if isinstance(value, Tensor):
        return et.expand(value.to(dtype=self.dtype).reshape(()), tuple(self.shape))
    return et.full_like(self, value)


def _zero(self):
    return et.zeros_like(self)


# in-place ops whose out-of-place twin is not simply the name without the trailing "_"
FUNCTIONAL = {"copy_": _copy, "fill_": _fill, "zero_": _zero}


def _snapshot(t: Tensor) -> Tensor:
    """A copy of ``t``'s values that stands for ``t`` in the graph."""
    s = wrap(unwrap(t).copy())
    s.grad_fn = t.grad_fn
    s._requires_grad = t._requires_grad
    set_output_nr(s, output_nr(t))
    return s


def _record_on_view(op, fn, self, args):
    """In-place op on a view of a base in the graph (PyTorch's CopySlices): the base's new
    value is ``index_put`` of the view's new value into the old base, and the view is then
    read back out of it, so both keep a correct history."""
    base = self._base
    if base.grad_fn is None and base._requires_grad:
        raise RuntimeError(
            f"{op.name}(): a view of a leaf Variable that requires grad is being used in an "
            "in-place operation. Wrap the update in `with ember.autograd.no_grad():`.")
    idx = _logical_index(base, self)
    src = _snapshot(self) if self._requires_grad else self.detach()
    rest = tuple(src if a is self else a for a in args[1:])
    res = fn(src, *rest)
    if tuple(res.shape) != tuple(self.shape):
        raise RuntimeError(
            f"{op.name}(): output with shape {list(self.shape)} doesn't match the broadcast "
            f"shape {list(res.shape)}")
    flat_idx = idx.reshape(-1)
    old = _snapshot(base) if base._requires_grad else base.detach()
    new_flat = et.index_put(old.reshape(-1), (flat_idx,), res.to(dtype=base.dtype).reshape(-1))
    new_base = new_flat.view(tuple(base.shape))
    unwrap(self)[...] = unwrap(res)
    bump_version(self)
    base.grad_fn = new_base.grad_fn
    base._requires_grad = new_base._requires_grad
    set_output_nr(base, 0)
    new_view = new_flat[flat_idx].view(tuple(self.shape))
    self.grad_fn = new_view.grad_fn
    self._requires_grad = new_view._requires_grad
    set_output_nr(self, 0)
    if self._requires_grad:  # this view's history is current again; other views' are not
        m = autograd_meta(self)
        m.view_base, m.view_version = base, self._version
    return self


def _keeps_old_self(entry, args) -> bool:
    """Does the twin's derivative keep the written tensor's old value for a gradient that is
    wanted (``a.mul_(b)`` keeps ``a`` for ``b``'s gradient, whether ``a`` requires grad or
    not)? Then it reads a snapshot, as PyTorch's in-place ops save the original self."""
    if entry is None or 0 not in entry.save:
        return False
    if entry.save_for is None:
        return _requires(args)
    return _requires(tuple(args[j] for j in entry.save_for[0] if j < len(args)))


def record_inplace(op, args):
    """``args``: the bound call of the in-place op ``op``."""
    self = args[0]
    # the write goes into ``self`` from an out-of-place result (below), past the op's own
    # refusal of a tensor whose elements overlap: the same refusal here. Of the writes PyTorch
    # lets through, only a fill gives every element sharing memory the same new value; for a
    # masked or indexed write the result written back would not be the one PyTorch's kernel
    # leaves, so it is refused rather than written wrong
    check_inplace(self, op.name)
    if op.name not in ("fill_", "zero_") and has_internal_overlap(self):
        raise RuntimeError(
            f"{op.name}(): writing into a tensor whose elements share memory (an expanded "
            "view) is not supported while the write is recorded for autograd. Please clone() "
            "the tensor before performing the operation.")
    m = self._autograd_meta
    if m is not None and m.view_base is not None:
        fresh_view_grad_fn(self)  # its values may have changed through another view
    if self.grad_fn is None and self._requires_grad:
        raise RuntimeError(
            f"{op.name}(): a leaf Variable that requires grad is being used in an in-place "
            "operation. Wrap the update in `with ember.autograd.no_grad():` or operate on "
            "`.data`/`.detach()`.")
    if not op.differentiable:
        out = op.run(*args)
        self.grad_fn = None
        self._requires_grad = False
        return out
    fn = FUNCTIONAL.get(op.name)
    if fn is None:
        twin = OPS.get(op.name[:-1])
        if twin is None:
            raise RuntimeError(f"ember.autograd: in-place op '{op.name}' has no out-of-place twin")
        def fn(*bound, _twin=twin):
            return record(_twin, bound)
        needs_old = _keeps_old_self(TABLE.get(twin.name), args)
    else:
        needs_old = False
    if self._base is not None and (self._base._requires_grad or self._requires_grad
                                   or _requires(args[1:])):
        return _record_on_view(op, fn, self, args)
    aliased = any(a is self for a in args[1:])
    src = _snapshot(self) if needs_old or (aliased and self._requires_grad) else self
    rest = tuple(src if a is self else a for a in args[1:])
    res = fn(src, *rest)
    if tuple(res.shape) != tuple(self.shape):
        raise RuntimeError(
            f"{op.name}(): output with shape {list(self.shape)} doesn't match the broadcast "
            f"shape {list(res.shape)}")
    if not et.can_cast(res.dtype, self.dtype):
        raise RuntimeError(
            f"{op.name}(): result type {res.dtype.name.capitalize()} can't be cast to the "
            f"desired output type {self.dtype.name.capitalize()}")
    unwrap(self)[...] = unwrap(res)
    bump_version(self)
    self.grad_fn = res.grad_fn
    self._requires_grad = res._requires_grad
    set_output_nr(self, output_nr(res))
    m = self._autograd_meta
    if m is not None and m.view_base is not None:
        m.view_version = self._version
    return self
