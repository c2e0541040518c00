"""Muon (``torch.optim.Muon``, PyTorch 2.9+)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ember.tensor import Tensor, zeros_like
from ember.tensor.extension import bump_version, unwrap

from .optimizer import Optimizer, _lerp_, _xp

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def _bf16(a: Any) -> Any:
    """``a`` rounded to bfloat16 (nearest, ties to even), held in float32."""
    xp = _xp(a)
    bits = xp.ascontiguousarray(a, dtype=xp.float32).view(xp.uint32)
    rounded = (bits + xp.uint32(0x7FFF) + ((bits >> xp.uint32(16)) & xp.uint32(1))) \
        & xp.uint32(0xFFFF0000)
    return rounded.view(xp.float32)


def _zeropower_via_newtonschulz(grad: Any, ns_coefficients: tuple[float, float, float],
                                ns_steps: int, eps: float) -> Any:
    """An approximate orthogonalization ``U V^T`` of ``grad = U S V^T`` by ``ns_steps``
    quintic Newton-Schulz iterations ``X <- a X + (b A + c A A) X``, ``A = X X^T``, in
    bfloat16 arithmetic (each product accumulated in float32, rounded once), as PyTorch
    computes it."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    xp = _xp(grad)
    a, b, c = ns_coefficients
    x = _bf16(grad)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = _bf16_scalar(float(xp.sqrt((x * x).sum(dtype=xp.float32))))
    x = _bf16(x / max(norm, _bf16_scalar(eps)))
    for _ in range(ns_steps):
        gram = _bf16(x @ x.T)
        gram_update = _bf16(b * gram + c * (gram @ gram))
        x = _bf16(a * x + gram_update @ x)
    return x.T if tall else x


def _bf16_scalar(v: float) -> float:
    return float(_bf16(np.asarray([v], dtype=np.float32))[0])


def _adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape: tuple[int, ...]) -> float:
    """The learning rate scaled for the shape ``A x B`` of the parameter: by
    ``sqrt(max(1, A / B))`` ("original", Keller Jordan's), or ``0.2 sqrt(max(A, B))``
    ("match_rms_adamw", Moonshot's: the update's RMS matches AdamW's)."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon (MomentUm Orthogonalized by Newton-Schulz, Keller Jordan et al.) for 2-D
    parameters: SGD momentum (Nesterov by default) whose update is replaced by its
    approximate orthogonalization, with decoupled weight decay and a shape-dependent
    learning-rate adjustment (``adjust_lr_fn``). Biases, embeddings and other parameters
    that are not hidden-layer matrices belong in another optimizer (AdamW).

    >>> import ember.tensor as et
    >>> w = et.zeros(2, 2)
    >>> opt = Muon([w], lr=0.1, weight_decay=0.0)
    >>> w.grad = et.eye(2)
    >>> _ = opt.step()
    >>> [round(v, 2) for v in w.diagonal().tolist()]
    [-0.11, -0.11]
    """

    _complex_ok = False

    _checks_impl_flags = True
    _fused_kernel = None

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B,
                                                                DEFAULT_C),
                 eps: float = EPS, ns_steps: int = DEFAULT_NS_STEPS,
                 adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Perform one optimization step."""
        return self._step_groups(closure, self._update_group)

    def _init_state(self, param: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["momentum_buffer"] = zeros_like(param)

    def _update_group(self, group: dict[str, Any]) -> None:
        params, grads, bufs = self._group_tensors(group, ("momentum_buffer",))
        lr, momentum = float(group["lr"]), group["momentum"]
        for param, grad, buf in zip(params, grads, bufs):
            p, g, b = unwrap(param), unwrap(grad), unwrap(buf)
            if g.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            _lerp_(b, g, 1 - momentum)
            if group["nesterov"]:
                update = g.copy()
                _lerp_(update, b, momentum)
            else:
                update = b
            update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                 group["ns_steps"], group["eps"])
            adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], tuple(param.shape))
            p *= 1 - lr * group["weight_decay"]
            p += (-adjusted_lr * update).astype(p.dtype)
            bump_version(param)
            bump_version(buf)
