"""Adafactor (``torch.optim.Adafactor``, PyTorch 2.5+)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember.tensor import Tensor, zeros, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _lerp_, _scalar, _step_value, _xp

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (Shazeer and Stern, 2018), as PyTorch implements it: the second moment of
    a matrix gradient is kept factored (``row_var`` and ``col_var`` of its last two dims),
    that of a vector whole (``variance``); the averaging weight is ``t ** beta2_decay``, the
    relative step ``min(lr, 1 / sqrt(t))`` scaled by the parameter's RMS (at least
    ``eps[1]``), and the update clipped to RMS ``d``. ``eps[0]`` (None: the dtype's
    machine epsilon) floors the variance estimate. Weight decay is decoupled.

    >>> import ember.tensor as et
    >>> w = et.ones(2, dtype=et.float64)
    >>> opt = Adafactor([w], lr=0.1)
    >>> w.grad = et.ones(2, dtype=et.float64)
    >>> _ = opt.step()
    >>> [round(v, 6) for v in w.tolist()]
    [0.9, 0.9]
    """

    _complex_ok = False

    _checks_impl_flags = True
    _fused_kernel = None  # only the per-parameter loop: foreach=True raises

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = _scalar(0.0)
        shape = tuple(param.grad.shape)
        if len(shape) > 1:
            state["row_var"] = zeros(shape[:-1] + (1,), dtype=param.dtype, device=param.device)
            state["col_var"] = zeros(shape[:-2] + (1, shape[-1]), dtype=param.dtype,
                                     device=param.device)
        else:
            state["variance"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, row_vars, col_vars, variances, steps = self._group_tensors(
            group, ("row_var", "col_var", "variance", "step"),
            optional=("row_var", "col_var", "variance"))
        eps1, eps2 = group["eps"]
        _adafactor(params, grads, row_vars, col_vars, variances, steps, d=group["d"],
                   lr=group["lr"], beta2_decay=group["beta2_decay"],
                   weight_decay=group["weight_decay"], eps1=eps1, eps2=eps2,
                   maximize=group["maximize"])


def _rms(a: Any) -> float:
    return float(_xp(a).sqrt((a * a).sum())) / math.sqrt(max(a.size, 1))


def _adafactor(params: list[Tensor], grads: list[Tensor], row_vars: list[Tensor | None],
               col_vars: list[Tensor | None], variances: list[Tensor | None],
               state_steps: list[Tensor], *, d: float, lr: float, beta2_decay: float,
               weight_decay: float, eps1: float | None, eps2: float, maximize: bool) -> None:
    """Adafactor over lists of tensors, in place
    (``torch.optim._adafactor._single_tensor_adafactor``)."""
    lr = float(lr)
    for i, param in enumerate(params):
        p, g = unwrap(param), unwrap(grads[i])
        xp = _xp(p)
        if maximize:
            g = -g
        if eps1 is None:
            # (like PyTorch, the first parameter's dtype sets it for the whole group)
            eps1 = float(np.finfo(p.dtype).eps)
        step = _step_value(state_steps[i])
        one_minus_beta2_t = step ** beta2_decay
        rho_t = min(lr, 1 / step ** 0.5)
        alpha = max(eps2, _rms(p)) * rho_t
        if weight_decay != 0:
            p *= 1 - lr * weight_decay
        if g.ndim > 1:
            row_var, col_var = unwrap(row_vars[i]), unwrap(col_vars[i])
            _lerp_(row_var, (g * g).sum(-1, keepdims=True) / g.shape[-1], one_minus_beta2_t)
            _lerp_(col_var, (g * g).sum(-2, keepdims=True) / g.shape[-2], one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate /= xp.maximum(row_var.mean(-2, keepdims=True), eps1)
            bump_version(row_vars[i])
            bump_version(col_vars[i])
        else:
            variance = unwrap(variances[i])
            _lerp_(variance, g * g, one_minus_beta2_t)
            var_estimate = variance.copy()
            bump_version(variances[i])
        update = 1 / xp.sqrt(xp.maximum(var_estimate, eps1 * eps1))
        update *= g
        denom = max(1.0, _rms(update) / d)
        p += (-alpha / denom) * update
        bump_version(param)
