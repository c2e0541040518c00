"""Stochastic gradient descent (``torch.optim.SGD``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like

from .optimizer import Optimizer, _fusable, _kernel, _use_fused

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum.

    On the CPU each parameter is updated by one fused kernel (``fused=False`` selects the
    plain array path, which gives the same result).

    >>> import ember.tensor as et
    >>> w = et.ones(2, dtype=et.float64)
    >>> opt = SGD([w], lr=0.5, momentum=0.9)
    >>> w.grad = et.ones(2, dtype=et.float64)
    >>> _ = opt.step()
    >>> w.tolist()
    [0.5, 0.5]
    """

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
             nesterov=group["nesterov"], maximize=group["maximize"], fused=group["fused"])
        if has_momentum:
            for p, buf in zip(params, bufs):
                self.state[p]["momentum_buffer"] = buf


def _sgd(params: list[Tensor], grads: list[Tensor], momentum_buffer_list: list[Tensor | None],
         *, weight_decay: float, momentum: float, lr: float, dampening: float, nesterov: bool,
         maximize: bool, fused: bool | None = None) -> None:
    """SGD over lists of tensors, in place; new momentum buffers are stored into
    ``momentum_buffer_list``. Arithmetic of ``torch.optim.sgd._single_tensor_sgd``."""
    lr = float(lr)
    kernel = _kernel("sgd_step", params[0]) if _use_fused(fused, params) else None
    for i, param in enumerate(params):
        p, g = param._data, grads[i]._data
        buf = momentum_buffer_list[i]
        if kernel is not None and g.dtype == p.dtype \
                and _fusable(p, None if buf is None else buf._data):
            first = buf is None
            if momentum != 0 and first:
                buf = momentum_buffer_list[i] = zeros_like(param)
            kernel(p, g, None if momentum == 0 else buf._data, lr=lr, momentum=momentum,
                   dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                   maximize=maximize, first_step=first)
            if momentum != 0:
                buf._bump()
            param._bump()
            continue
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        if momentum != 0:
            if buf is None:
                b = g.copy()
                buf = momentum_buffer_list[i] = Tensor._make(b)
            else:
                b = buf._data
                b *= momentum
                b += (1 - dampening) * g
                buf._bump()
            g = g + momentum * b if nesterov else b
        p += -lr * g
        param._bump()
