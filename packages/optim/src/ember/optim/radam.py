"""RAdam (``torch.optim.RAdam``): Adam with a rectified adaptive learning rate."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like

from .optimizer import Optimizer, _enable_grad, _lerp_, _no_grad, _scalar, _step_value, _xp

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

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
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
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps,
                    "weight_decay": weight_decay, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        loss = None
        if closure is not None:
            with _enable_grad():
                loss = closure()
        with _no_grad():
            for group in self.param_groups:
                params, grads, exp_avgs, exp_avg_sqs, steps = [], [], [], [], []
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar(0.0)
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    params.append(p)
                    grads.append(p.grad)
                    exp_avgs.append(state["exp_avg"])
                    exp_avg_sqs.append(state["exp_avg_sq"])
                    steps.append(state["step"])
                beta1, beta2 = group["betas"]
                _radam(params, grads, exp_avgs, exp_avg_sqs, steps, beta1=beta1,
                       beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
                       eps=group["eps"], maximize=group["maximize"],
                       decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def _radam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_avg_sqs: list[Tensor], state_steps: list[Tensor], *, beta1: float,
           beta2: float, lr: float, weight_decay: float, eps: float,
           decoupled_weight_decay: bool, maximize: bool) -> None:
    """RAdam over lists of tensors, in place (``torch.optim.radam._single_tensor_radam``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = param._data, grads[i]._data
        m, v = exp_avgs[i]._data, exp_avg_sqs[i]._data
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
            t._bump()
