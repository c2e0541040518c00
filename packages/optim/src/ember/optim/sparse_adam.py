"""SparseAdam (``torch.optim.SparseAdam``): Adam for sparse COO gradients."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _xp

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Lazy Adam for sparse gradients (``nn.Embedding(sparse=True)``): only the rows present
    in the gradient update their moments and their parameter, with PyTorch's arithmetic.
    Dense gradients are refused (use Adam).

    >>> import ember.tensor as et
    >>> weight = et.randn(4, 2, requires_grad=True)   # an embedding table
    >>> opt = SparseAdam([weight], lr=0.1)
    >>> et.embedding(weight, et.tensor([1]), sparse=True).sum().backward()
    >>> weight.grad.is_sparse
    True
    >>> before = weight.detach().clone()
    >>> _ = opt.step()
    >>> (weight.detach() != before).any(1).tolist()
    [False, True, False, False]
    """

    _sparse_grads = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize}
        super().__init__(params, defaults)
        sparse = [i for group in self.param_groups
                  for i, p in enumerate(group["params"]) if p.is_sparse]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             "parameter tensors")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = 0
        state["exp_avg"] = zeros_like(param)
        state["exp_avg_sq"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        beta1, beta2 = group["betas"]
        for p in group["params"]:
            if p.grad is None:
                continue
            if not p.grad.is_sparse:
                raise RuntimeError("SparseAdam does not support dense gradients, please "
                                   "consider Adam instead")
            state = self.state[p]
            if len(state) == 0:
                self._init_state(p, group, state)
            state["step"] += 1
            _sparse_adam_step(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"],
                              lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                              maximize=group["maximize"])


def _sparse_adam_step(param: Tensor, grad: Tensor, exp_avg: Tensor, exp_avg_sq: Tensor,
                      step: int, *, lr: float, beta1: float, beta2: float, eps: float,
                      maximize: bool) -> None:
    """One SparseAdam update of the rows in the (coalesced) gradient
    (``torch.optim._functional.sparse_adam``)."""
    g = (-grad if maximize else grad).coalesce()
    sd = g.sparse_dim()
    p, m, v = unwrap(param), unwrap(exp_avg), unwrap(exp_avg_sq)
    xp = _xp(p)
    lead = p.shape[:sd]
    flat = [a.reshape((-1,) + a.shape[sd:]) for a in (p, m, v)]
    p2, m2, v2 = flat
    idx = unwrap(g._indices())
    rows = xp.ravel_multi_index(tuple(idx), lead) if sd > 1 else idx[0]
    vals = unwrap(g._values()).astype(p.dtype, copy=False)
    old_m, old_v = m2[rows], v2[rows]
    m_upd = (vals - old_m) * (1 - beta1)
    m2[rows] += m_upd
    v_upd = (vals * vals - old_v) * (1 - beta2)
    v2[rows] += v_upd
    numer = m_upd + old_m
    denom = xp.sqrt(v_upd + old_v) + eps
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    step_size = lr * math.sqrt(bias_correction2) / bias_correction1
    p2[rows] += -step_size * (numer / denom)
    for full, part in zip((p, m, v), flat):
        if not full.flags.c_contiguous:  # reshape copied: write the rows back
            full[...] = part.reshape(full.shape)
    for t in (param, exp_avg, exp_avg_sq):
        bump_version(t)
