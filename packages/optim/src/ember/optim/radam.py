"""RAdam (``torch.optim.RAdam``): Adam with a rectified adaptive learning rate."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _check_adam_args, _lerp_, _scalar, _step_value, _xp

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam (Liu et al.), with optional decoupled weight decay (RAdamW).

    >>> import ember.tensor as et
    >>> w = et.zeros(1)
    >>> opt = RAdam([w], lr=0.1)
    >>> w.grad = et.ones(1)
    >>> _ = opt.step()
    >>> round(w.item(), 6)
    -0.1
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps,
                    "weight_decay": weight_decay, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, exp_avgs, exp_avg_sqs, steps = self._group_tensors(
            group, ("exp_avg", "exp_avg_sq", "step"))
        beta1, beta2 = group["betas"]
        _radam(params, grads, exp_avgs, exp_avg_sqs, steps, beta1=beta1, beta2=beta2,
               lr=group["lr"], weight_decay=group["weight_decay"], eps=group["eps"],
               maximize=group["maximize"],
               decoupled_weight_decay=group["decoupled_weight_decay"])


def _radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, beta1: float,
           beta2: float, lr: float, weight_decay: float, eps: float,
           decoupled_weight_decay: bool, maximize: bool) -> None:
    """RAdam over lists of tensors, in place (``torch.optim.radam._single_tensor_radam``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        m, v = unwrap(exp_avgs[i]), unwrap(exp_avg_sqs[i])
        xp = _xp(p)
        if maximize:
            g = -g
        step = _step_value(state_steps[i])
        if weight_decay != 0:
            if decoupled_weight_decay:
                p *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * p
        _lerp_(m, g, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * g * g
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = m / bias_correction1
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                    / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            v_sqrt = xp.sqrt(v)
            v_sqrt += eps
            adaptive_lr = (bias_correction2 ** 0.5) / v_sqrt
            p += -1.0 * (bias_corrected_exp_avg * lr * adaptive_lr * rect)
        else:
            p += -1.0 * (bias_corrected_exp_avg * lr)
        for t in (param, exp_avgs[i], exp_avg_sqs[i]):
            bump_version(t)
