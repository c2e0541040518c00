"""NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like

from .optimizer import Optimizer, _enable_grad, _lerp_, _no_grad, _scalar, _step_value, _xp

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam (Dozat), with the momentum-decay schedule and optional decoupled weight decay
    (NAdamW).

    >>> import ember.tensor as et
    >>> w = et.zeros(1, dtype=et.float64)
    >>> opt = NAdam([w], lr=0.1)
    >>> w.grad = et.ones(1, dtype=et.float64)
    >>> _ = opt.step()
    >>> w.item() < 0
    True
    """

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
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
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps,
                    "weight_decay": weight_decay, "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
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
                params, grads, exp_avgs, exp_avg_sqs, mu_products, steps = \
                    [], [], [], [], [], []
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if len(state) == 0:
                        state["step"] = _scalar(0.0)
                        state["mu_product"] = _scalar(1.0)
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    params.append(p)
                    grads.append(p.grad)
                    exp_avgs.append(state["exp_avg"])
                    exp_avg_sqs.append(state["exp_avg_sq"])
                    mu_products.append(state["mu_product"])
                    steps.append(state["step"])
                beta1, beta2 = group["betas"]
                _nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, steps,
                       beta1=beta1, beta2=beta2, lr=group["lr"],
                       weight_decay=group["weight_decay"],
                       momentum_decay=group["momentum_decay"], eps=group["eps"],
                       decoupled_weight_decay=group["decoupled_weight_decay"],
                       maximize=group["maximize"])
        return loss


def _nadam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
           exp_avg_sqs: list[Tensor], mu_products: list[Tensor], state_steps: list[Tensor],
           *, beta1: float, beta2: float, lr: float, weight_decay: float,
           momentum_decay: float, eps: float, decoupled_weight_decay: bool,
           maximize: bool) -> None:
    """NAdam over lists of tensors, in place (``torch.optim.nadam._single_tensor_nadam``).

    ``mu_products`` are 0-d tensors updated in their own dtype, as PyTorch does.
    """
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = param._data, grads[i]._data
        m, v = exp_avgs[i]._data, exp_avg_sqs[i]._data
        xp = _xp(p)
        if maximize:
            g = -g
        step = _step_value(state_steps[i])
        bias_correction2 = 1 - beta2 ** step
        if weight_decay != 0:
            if decoupled_weight_decay:
                p *= 1 - lr * weight_decay
            else:
                g = g + weight_decay * p
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
        mp = mu_products[i]
        mp._data *= mu
        mp._bump()
        mu_product = float(mp._data)
        _lerp_(m, g, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * g * g
        denom = xp.sqrt(v / bias_correction2)
        mu_product_next = mu_product * mu_next
        denom += eps
        p += (-lr * (1.0 - mu) / (1.0 - mu_product)) * g / denom
        p += ((-lr * mu_next) / (1.0 - mu_product_next)) * m / denom
        for t in (param, exp_avgs[i], exp_avg_sqs[i]):
            t._bump()
