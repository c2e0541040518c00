"""Rprop (``torch.optim.Rprop``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, full_like, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _scalar, _step_value, _xp

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Resilient backpropagation (Riedmiller and Braun): each parameter has its own step
    size, multiplied by ``etas[1]`` while the gradient keeps its sign and by ``etas[0]``
    when it flips (that step is then skipped), clamped to ``step_sizes``; the parameter
    moves by its step size against the gradient's sign.

    >>> import ember.tensor as et
    >>> w = et.zeros(2, dtype=et.float64)
    >>> opt = Rprop([w], lr=0.1)
    >>> w.grad = et.tensor([3.0, -0.5], dtype=et.float64)
    >>> _ = opt.step()
    >>> w.tolist()
    [-0.1, 0.1]
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["prev"] = zeros_like(param)
        lr = float(group["lr"])  # a complex parameter's two parts each start at lr
        state["step_size"] = full_like(param, complex(lr, lr) if param.is_complex() else lr)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, prevs, step_sizes, steps = self._group_tensors(
            group, ("prev", "step_size", "step"))
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        _rprop(params, grads, prevs, step_sizes, steps, step_size_min=step_size_min,
               step_size_max=step_size_max, etaminus=etaminus, etaplus=etaplus,
               maximize=group["maximize"])


def _rprop(params: list[Tensor], grads: list[Tensor], prevs: list[Tensor],
           step_sizes: list[Tensor], state_steps: list[Tensor], *, step_size_min: float,
           step_size_max: float, etaminus: float, etaplus: float, maximize: bool) -> None:
    """Rprop over lists of tensors, in place (``torch.optim.rprop._single_tensor_rprop``)."""
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        prev, step_size = unwrap(prevs[i]), unwrap(step_sizes[i])
        xp = _xp(p)
        _step_value(state_steps[i])
        if maximize:
            g = -g
        sign = xp.sign(g * prev)
        factor = xp.where(sign > 0, etaplus, xp.where(sign < 0, etaminus, 1.0))
        step_size *= factor.astype(step_size.dtype)
        xp.clip(step_size, step_size_min, step_size_max, out=step_size)
        # after a sign flip the step is skipped, and the next one starts afresh
        g = xp.where(sign < 0, 0, g).astype(p.dtype)
        p -= xp.sign(g) * step_size
        prev[...] = g
        for t in (param, prevs[i], step_sizes[i]):
            bump_version(t)
