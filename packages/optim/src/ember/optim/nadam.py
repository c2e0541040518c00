"""NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _check_adam_args, _lerp_, _scalar, _step_value, _xp

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

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
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
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["mu_product"] = _scalar(1.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, exp_avgs, exp_avg_sqs, mu_products, steps = self._group_tensors(
            group, ("exp_avg", "exp_avg_sq", "mu_product", "step"))
        beta1, beta2 = group["betas"]
        _nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, steps, beta1=beta1,
               beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
               momentum_decay=group["momentum_decay"], eps=group["eps"],
               decoupled_weight_decay=group["decoupled_weight_decay"],
               maximize=group["maximize"])


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
        p, g = unwrap(param), unwrap(grads[i])
        m, v = unwrap(exp_avgs[i]), unwrap(exp_avg_sqs[i])
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
        mp_arr = unwrap(mp)
        mp_arr *= mu
        bump_version(mp)
        mu_product = float(mp_arr)
        _lerp_(m, g, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * g * g
        denom = xp.sqrt(v / bias_correction2)
        mu_product_next = mu_product * mu_next
        denom += eps
        p += (-lr * (1.0 - mu) / (1.0 - mu_product)) * g / denom
        p += ((-lr * mu_next) / (1.0 - mu_product_next)) * m / denom
        for t in (param, exp_avgs[i], exp_avg_sqs[i]):
            bump_version(t)
