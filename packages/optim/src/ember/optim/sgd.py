"""Stochastic gradient descent (``torch.optim.SGD``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, view_as_complex, zeros_like
from ember.tensor.extension import bump_version, unwrap, wrap

from .optimizer import (
    Optimizer,
    _fusable,
    _fused_copies,
    _fused_mode,
    _kernel,
    _use_fused,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum.

    The float32/float64 contiguous parameters of a group are updated by one fused multi-tensor
    kernel call (Numba on the CPU); ``foreach=False`` or ``fused=False`` select the
    per-parameter array loop, which gives the same result, ``fused=True`` or ``foreach=True``
    the kernel for every parameter (see :mod:`ember.optim.optimizer`).

    >>> import ember.tensor as et
    >>> w = et.ones(2, dtype=et.float64)
    >>> opt = SGD([w], lr=0.5, momentum=0.9)
    >>> w.grad = et.ones(2, dtype=et.float64)
    >>> _ = opt.step()
    >>> w.tolist()
    [0.5, 0.5]
    """

    _checks_impl_flags = True
    _fused_kernel = "sgd_step"
    _sparse_grads = True  # sparse COO gradients (embedding(sparse=True)): see _sgd_sparse

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _update_group(self, group: dict[str, Any]) -> None:
        has_momentum = group["momentum"] != 0
        if has_momentum:  # buffers are made by _sgd on the first step, then kept in the state
            params, grads, bufs = self._group_tensors(
                group, ("momentum_buffer",), optional=("momentum_buffer",))
        else:  # no momentum, no state
            params, grads = self._group_tensors(group)
            bufs = [None] * len(params)
        _sgd(params, grads, bufs, weight_decay=group["weight_decay"],
             momentum=group["momentum"], lr=group["lr"], dampening=group["dampening"],
             nesterov=group["nesterov"], maximize=group["maximize"], fused=_fused_mode(group))
        if has_momentum:  # (a complex parameter's buffer was made over its real view)
            owners = [p for p in group["params"] if p.grad is not None]
            for p, buf in zip(owners, bufs):
                self.state[p]["momentum_buffer"] = view_as_complex(buf) \
                    if p.is_complex() and not buf.is_complex() else buf


def _sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Tensor | None],
         *, weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
         maximize: bool, fused: bool | None = None) -> None:
    """SGD over lists of tensors, in place; new momentum buffers are stored into
    ``momentum_buffer_list``. Arithmetic of ``torch.optim.sgd._single_tensor_sgd``."""
    lr = float(lr)
    kernel = _kernel("sgd_step", params[0]) if _use_fused(fused, params) else None
    columns: tuple[list[Any], ...] = ([], [], [])  # param, grad, momentum buffer
    first_steps: list[bool] = []
    write_back: list[tuple[Any, Any]] = []
    for i, param in enumerate(params):
        if grads[i].is_sparse:
            _sgd_sparse(i, param, grads[i], momentum_buffer_list, weight_decay=weight_decay,
                        momentum=momentum, lr=lr, dampening=dampening, nesterov=nesterov,
                        maximize=maximize)
            continue
        p, g = unwrap(param), unwrap(grads[i])
        buf = momentum_buffer_list[i]
        in_place = kernel is not None and _fusable(p, g, None if buf is None else unwrap(buf))
        if in_place or (fused and kernel is not None):
            first = buf is None
            if momentum != 0:
                if first:  # (a contiguous parameter gets a contiguous buffer)
                    buf = momentum_buffer_list[i] = zeros_like(param)
                bump_version(buf)
            arrays = (p, g, None if momentum == 0 else unwrap(buf))
            for column, a in zip(columns, arrays if in_place else
                                 _fused_copies(arrays, write_back)):
                column.append(a)
            first_steps.append(first)
            bump_version(param)
            continue
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        if momentum != 0:
            if buf is None:
                b = g.copy()
                buf = momentum_buffer_list[i] = wrap(b)
            else:
                b = unwrap(buf)
                b *= momentum
                b += (1 - dampening) * g
                bump_version(buf)
            g = g + momentum * b if nesterov else b
        p += -lr * g
        bump_version(param)
    if first_steps:
        kernel(*columns[:2], columns[2] if momentum != 0 else None, lr=lr, momentum=momentum,
               dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
               maximize=maximize, first_steps=first_steps)
        for a, w in write_back:
            a[...] = w


def _sgd_sparse(i: int, param: Tensor, grad: Tensor, momentum_buffer_list: list, *,
                weight_decay: float, momentum: float, lr: float, dampening: float,
                nesterov: bool, maximize: bool) -> None:
    """One parameter with a sparse COO gradient, PyTorch's arithmetic: weight decay is refused
    (a sparse gradient plus a dense parameter); the momentum buffer is sparse (the gradient,
    then ``buf * momentum + (1 - dampening) * grad``, merged, never coalesced)."""
    g = -grad if maximize else grad
    if weight_decay != 0:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")
    if momentum != 0:
        buf = momentum_buffer_list[i]
        if buf is None or not buf.is_sparse:
            buf = momentum_buffer_list[i] = g.clone().detach() if buf is None else \
                buf.mul(momentum).add(g.to_dense(), alpha=1 - dampening)
        else:
            buf = momentum_buffer_list[i] = buf.mul(momentum).add(g, alpha=1 - dampening)
        g = g.add(buf, alpha=momentum) if nesterov else buf
    _add_sparse_(param, g, -lr)


def _add_sparse_(param: Tensor, g, alpha: float) -> None:
    """``param += alpha * g`` in place for a sparse (or dense) ``g``."""
    if not g.is_sparse:
        param.add_(g, alpha=alpha)
        return
    vals = g._values()
    if vals.dtype != param.dtype:
        vals = vals.to(dtype=param.dtype)
    if g.sparse_dim() == 1:
        param.index_add_(0, g._indices()[0], vals, alpha=alpha)
    else:
        param.add_(g.to_dense().to(dtype=param.dtype), alpha=alpha)
