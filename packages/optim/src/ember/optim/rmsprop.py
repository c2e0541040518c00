"""RMSprop (``torch.optim.RMSprop``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _lerp_, _scalar, _step_value, _xp

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum.

    >>> import ember.tensor as et
    >>> w = et.zeros(1, dtype=et.float64)
    >>> opt = RMSprop([w], lr=0.01, alpha=0.0, eps=0.0)
    >>> w.grad = et.full((1,), 3.0, dtype=et.float64)
    >>> _ = opt.step()
    >>> w.item()
    -0.01
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["square_avg"] = zeros_like(param)
        if group["momentum"] > 0:
            state["momentum_buffer"] = zeros_like(param)
        if group["centered"]:
            state["grad_avg"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, square_avgs, grad_avgs, bufs, steps = self._group_tensors(
            group, ("square_avg", "grad_avg", "momentum_buffer", "step"),
            optional=("grad_avg", "momentum_buffer"))
        _rmsprop(params, grads, square_avgs, grad_avgs, bufs, steps, lr=group["lr"],
                 alpha=group["alpha"], eps=group["eps"], weight_decay=group["weight_decay"],
                 momentum=group["momentum"], centered=group["centered"],
                 maximize=group["maximize"])


def _rmsprop(params: list[Tensor], grads: list[Tensor], square_avgs: list[Tensor],
             grad_avgs: list[Tensor | None], momentum_buffer_list: list[Tensor | None],
             state_steps: list[Tensor], *, lr: float, alpha: float, eps: float,
             weight_decay: float, momentum: float, centered: bool, maximize: bool) -> None:
    """RMSprop over lists of tensors, in place
    (``torch.optim.rmsprop._single_tensor_rmsprop``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        sq = unwrap(square_avgs[i])
        xp = _xp(p)
        _step_value(state_steps[i])
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        sq *= alpha
        sq += (1 - alpha) * g * g
        bump_version(square_avgs[i])
        if centered:
            ga = unwrap(grad_avgs[i])
            _lerp_(ga, g, 1 - alpha)
            bump_version(grad_avgs[i])
            avg = xp.sqrt(sq + -1 * ga * ga)
        else:
            avg = xp.sqrt(sq)
        avg += eps
        if momentum > 0:
            buf = unwrap(momentum_buffer_list[i])
            buf *= momentum
            buf += 1 * g / avg
            bump_version(momentum_buffer_list[i])
            p += -lr * buf
        else:
            p += -lr * g / avg
        bump_version(param)
