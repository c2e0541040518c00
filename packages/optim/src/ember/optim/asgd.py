"""Averaged SGD (``torch.optim.ASGD``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _scalar, _step_value

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged stochastic gradient descent (Polyak and Juditsky): SGD with a decaying step
    size ``eta = lr / (1 + lambd * lr * t) ** alpha`` and a decay ``1 - lambd * eta`` of the
    parameter, keeping in ``state["ax"]`` the running average of the iterates from step
    ``t0`` on.

    >>> import ember.tensor as et
    >>> w = et.zeros(1, dtype=et.float64)
    >>> opt = ASGD([w], lr=0.1)
    >>> w.grad = et.ones(1, dtype=et.float64)
    >>> _ = opt.step()
    >>> round(w.item(), 6)
    -0.1
    """

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach/fused=True raise

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        state["eta"] = _scalar(float(group["lr"]))
        state["mu"] = _scalar(1.0)
        state["ax"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, axs, mus, etas, steps = self._group_tensors(
            group, ("ax", "mu", "eta", "step"))
        _asgd(params, grads, axs, mus, etas, steps, lambd=group["lambd"], lr=group["lr"],
              t0=group["t0"], alpha=group["alpha"], weight_decay=group["weight_decay"],
              maximize=group["maximize"])


def _asgd(params: list[Tensor], grads: list[Tensor], axs: list[Tensor], mus: list[Tensor],
          etas: list[Tensor], state_steps: list[Tensor], *, lambd: float, lr: float,
          t0: float, alpha: float, weight_decay: float, maximize: bool) -> None:
    """ASGD over lists of tensors, in place (``torch.optim.asgd._single_tensor_asgd``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g, ax = unwrap(param), unwrap(grads[i]), unwrap(axs[i])
        eta, mu = unwrap(etas[i]), unwrap(mus[i])
        step = _step_value(state_steps[i])
        if maximize:
            g = -g
        if weight_decay != 0:
            g = g + weight_decay * p
        eta_value = float(eta)
        p *= 1 - lambd * eta_value
        p += -eta_value * g
        if float(mu) != 1:
            ax += (p - ax) * mu
        else:
            ax[...] = p
        # eta and mu are stored in the scalar dtype, as PyTorch's 0-d tensors are
        eta[...] = lr / ((1 + lambd * lr * step) ** alpha)
        mu[...] = 1 / max(1, step - t0)
        for t in (param, axs[i], etas[i], mus[i]):
            bump_version(t)
