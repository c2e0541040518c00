"""Adamax (``torch.optim.Adamax``): Adam with the infinity norm."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _check_adam_args, _lerp_, _scalar, _step_value, _xp

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax, the infinity-norm variant of Adam.

    >>> import ember.tensor as et
    >>> w = et.zeros(1)
    >>> opt = Adamax([w], lr=0.1)
    >>> w.grad = et.ones(1)
    >>> _ = opt.step()
    >>> round(w.item(), 6)
    -0.1
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_inf"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, exp_avgs, exp_infs, steps = self._group_tensors(
            group, ("exp_avg", "exp_inf", "step"))
        beta1, beta2 = group["betas"]
        _adamax(params, grads, exp_avgs, exp_infs, steps, eps=group["eps"], beta1=beta1,
                beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                maximize=group["maximize"])


def _adamax(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
            exp_infs: list[Tensor], state_steps: list[Tensor], *, eps: float, beta1: float,
            beta2: float, lr: float, weight_decay: float, maximize: bool) -> None:
    """Adamax over lists of tensors, in place (``torch.optim.adamax._single_tensor_adamax``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        m, u = unwrap(exp_avgs[i]), unwrap(exp_infs[i])
        xp = _xp(p)
        step = _step_value(state_steps[i])
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        _lerp_(m, g, 1 - beta1)
        u *= beta2
        xp.maximum(u, xp.abs(g) + eps, out=u)
        clr = lr / (1 - beta1 ** step)
        p += -clr * m / u
        for t in (param, exp_avgs[i], exp_infs[i]):
            bump_version(t)
