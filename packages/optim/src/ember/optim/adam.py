"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import (
    Optimizer,
    _check_adam_args,
    _fusable,
    _fused_copies,
    _fused_mode,
    _kernel,
    _lerp_,
    _scalar,
    _step_value,
    _use_fused,
    _xp,
)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), with AMSGrad, maximize and L2 or decoupled weight decay.

    The float32/float64 contiguous parameters of a group are updated by one fused multi-tensor
    kernel call (Numba on the CPU); ``foreach=False`` or ``fused=False`` select the
    per-parameter array loop, which gives the same result, ``fused=True`` or ``foreach=True``
    the kernel for every parameter (see :mod:`ember.optim.optimizer`).

    >>> import ember.tensor as et
    >>> w = et.zeros(2)
    >>> opt = Adam([w], lr=0.1)
    >>> w.grad = et.tensor([1.0, -1.0])
    >>> _ = opt.step()
    >>> [round(v, 6) for v in w.tolist()]
    [-0.1, 0.1]
    """

    _checks_impl_flags = True
    _fused_kernel = "adam_step"

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps,
                    "weight_decay": weight_decay, "amsgrad": amsgrad, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps = self._group_tensors(
            group, ("exp_avg", "exp_avg_sq", "max_exp_avg_sq", "step"),
            optional=("max_exp_avg_sq",))
        beta1, beta2 = group["betas"]
        _adam(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, amsgrad=group["amsgrad"],
              beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
              eps=group["eps"], maximize=group["maximize"], fused=_fused_mode(group),
              decoupled_weight_decay=group["decoupled_weight_decay"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter); ``weight_decay`` defaults to
    0.01.

    >>> import ember.tensor as et
    >>> w = et.ones(1)
    >>> opt = AdamW([w], lr=0.1, weight_decay=0.5)
    >>> w.grad = et.zeros(1)
    >>> _ = opt.step()
    >>> round(w.item(), 6)
    0.95
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 capturable: bool = False, differentiable: bool = False,
                 fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


def _adam(params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
          exp_avg_sqs: list[Tensor], max_exp_avg_sqs: list[Tensor | None],
          state_steps: list[Tensor], *, amsgrad: bool, beta1: float, beta2: float, lr: float,
          weight_decay: float, eps: float, maximize: bool, fused: bool | None = None,
          decoupled_weight_decay: bool = False) -> None:
    """Adam / AdamW over lists of tensors, in place (``state_steps`` are incremented).

    Arithmetic of ``torch.optim.adam._single_tensor_adam``. The parameters the fused kernel
    takes (all of them with ``fused=True``, through copies where it cannot update one in place)
    are updated by one kernel call after the loop; the others by the array loop.
    """
    lr, beta1, beta2 = float(lr), float(beta1), float(beta2)
    kernel = _kernel("adam_step", params[0]) if _use_fused(fused, params) else None
    columns: tuple[list[Any], ...] = ([], [], [], [], [])  # param, grad, exp_avg, ..., max
    steps: list[float] = []
    write_back: list[tuple[Any, Any]] = []
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        m, v = unwrap(exp_avgs[i]), unwrap(exp_avg_sqs[i])
        vmax = unwrap(max_exp_avg_sqs[i]) if amsgrad else None
        step = _step_value(state_steps[i])
        in_place = kernel is not None and _fusable(p, g, m, v, vmax)
        if in_place or (fused and kernel is not None):
            arrays = (p, g, m, v, vmax)
            for column, a in zip(columns, arrays if in_place else
                                 _fused_copies(arrays, write_back)):
                column.append(a)
            steps.append(step)
        else:
            xp = _xp(p)
            if maximize:
                g = -g
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
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5
            if amsgrad:
                xp.maximum(vmax, v, out=vmax)
                denom = xp.sqrt(vmax) / bias_correction2_sqrt
            else:
                denom = xp.sqrt(v) / bias_correction2_sqrt
            denom += eps
            p += -step_size * m / denom
        bump_version(param)
        bump_version(exp_avgs[i])
        bump_version(exp_avg_sqs[i])
        if amsgrad:
            bump_version(max_exp_avg_sqs[i])
    if steps:
        kernel(*columns[:4], columns[4] if amsgrad else None, lr=lr, beta1=beta1, beta2=beta2,
               eps=eps, weight_decay=weight_decay, steps=steps, amsgrad=amsgrad,
               maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        for a, w in write_back:
            a[...] = w
