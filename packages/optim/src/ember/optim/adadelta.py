"""Adadelta (``torch.optim.Adadelta``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _scalar, _step_value, _xp

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta (Zeiler).

    >>> import ember.tensor as et
    >>> w = et.zeros(1, dtype=et.float64)
    >>> opt = Adadelta([w])
    >>> w.grad = et.ones(1, dtype=et.float64)
    >>> _ = opt.step()
    >>> w.item() < 0
    True
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["square_avg"] = zeros_like(param)
        state["acc_delta"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, square_avgs, acc_deltas, steps = self._group_tensors(
            group, ("square_avg", "acc_delta", "step"))
        _adadelta(params, grads, square_avgs, acc_deltas, steps, lr=group["lr"],
                  rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                  maximize=group["maximize"])


def _adadelta(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
              acc_deltas: list[Tensor], state_steps: list[Tensor], *, lr: float, rho: float,
              eps: float, weight_decay: float, maximize: bool) -> None:
    """Adadelta over lists of tensors, in place
    (``torch.optim.adadelta._single_tensor_adadelta``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        sq, acc = unwrap(square_avgs[i]), unwrap(acc_deltas[i])
        xp = _xp(p)
        _step_value(state_steps[i])
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        sq *= rho
        sq += (1 - rho) * g * g
        std = xp.sqrt(sq + eps)
        delta = xp.sqrt(acc + eps)
        delta /= std
        delta *= g
        acc *= rho
        acc += (1 - rho) * delta * delta
        p += -lr * delta
        for t in (param, square_avgs[i], acc_deltas[i]):
            bump_version(t)
