"""Adagrad (``torch.optim.Adagrad``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, full_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _scalar, _step_value, _xp

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.), with learning-rate decay and an initial accumulator value.

    >>> import ember.tensor as et
    >>> w = et.zeros(1, dtype=et.float64)
    >>> opt = Adagrad([w], lr=0.5, eps=0.0)
    >>> w.grad = et.full((1,), 2.0, dtype=et.float64)
    >>> _ = opt.step()
    >>> w.item()
    -0.5
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise
    _sparse_grads = True  # sparse COO gradients update only their rows (_adagrad_sparse)

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(
                f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = _scalar(0.0)
                state["sum"] = full_like(p, group["initial_accumulator_value"])

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _update_group(self, group: dict[str, Any]) -> None:
        # the state was filled in __init__ (PyTorch's Adagrad has no lazy state either)
        params, grads, sums, steps = self._group_tensors(group, ("sum", "step"))
        _adagrad(params, grads, sums, steps, lr=group["lr"],
                 weight_decay=group["weight_decay"], lr_decay=group["lr_decay"],
                 eps=group["eps"], maximize=group["maximize"])


def _adagrad(params: list[Tensor], grads: list[Tensor], state_sums: list[Tensor],
             state_steps: list[Tensor], *, lr: float, weight_decay: float, lr_decay: float,
             eps: float, maximize: bool) -> None:
    """Adagrad over lists of tensors, in place
    (``torch.optim.adagrad._single_tensor_adagrad``, dense gradients)."""
    lr = float(lr)
    for i, param in enumerate(params):
        if grads[i].is_sparse:
            _adagrad_sparse(param, grads[i], state_sums[i], state_steps[i], lr=lr,
                            weight_decay=weight_decay, lr_decay=lr_decay, eps=eps,
                            maximize=maximize)
            continue
        p, g = unwrap(param), unwrap(grads[i])
        s = unwrap(state_sums[i])
        xp = _xp(p)
        step = _step_value(state_steps[i])
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        clr = lr / (1 + (step - 1) * lr_decay)
        s += 1 * g * g
        bump_version(state_sums[i])
        std = xp.sqrt(s)
        std += eps
        p += -clr * g / std
        bump_version(param)


def _adagrad_sparse(param: Tensor, grad: Tensor, state_sum: Tensor, state_step: Tensor, *,
                    lr: float, weight_decay: float, lr_decay: float, eps: float,
                    maximize: bool) -> None:
    """PyTorch's sparse Adagrad step: the gradient is coalesced and only its rows of the
    accumulator and the parameter change; weight decay is refused."""
    step = _step_value(state_step)
    if weight_decay != 0:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    g = (-grad if maximize else grad).coalesce()
    sd = g.sparse_dim()
    p, s = unwrap(param), unwrap(state_sum)
    xp = _xp(p)
    lead = p.shape[:sd]
    p2 = p.reshape((-1,) + p.shape[sd:])
    s2 = s.reshape((-1,) + s.shape[sd:])
    idx = unwrap(g._indices())
    rows = xp.ravel_multi_index(tuple(idx), lead) if sd > 1 else idx[0]
    vals = unwrap(g._values()).astype(p.dtype, copy=False)
    clr = lr / (1 + (step - 1) * lr_decay)
    s2[rows] += vals * vals  # coalesced: every row once
    std = xp.sqrt(s2[rows]) + eps
    p2[rows] += -clr * (vals / std)
    if not p.flags.c_contiguous:  # reshape copied: write the rows back
        p[...] = p2.reshape(p.shape)
    if not s.flags.c_contiguous:
        s[...] = s2.reshape(s.shape)
    bump_version(state_sum)
    bump_version(param)
