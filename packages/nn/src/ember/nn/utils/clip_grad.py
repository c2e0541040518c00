"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``,
``clip_grads_with_norm_``."""
from __future__ import annotations

import math

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Tensor
from ember.tensor.extension import array_module, bump_version, unwrap

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(x):
    if isinstance(x, Tensor):
        return [x]
    return list(x)


def _grad_arrays(tensors):
    """The arrays of ``tensors`` when they can be reduced in one pass over them (one device,
    floating, L2 or inf norm); else None."""
    arrays = [unwrap(t) for t in tensors]
    xp = array_module(arrays[0])
    if any(array_module(a) is not xp or a.dtype.kind != "f" for a in arrays):
        return None
    return arrays, xp


def _one_pass_norm(arrays, xp, norm_type: float) -> float:
    """The ``norm_type`` (2 or inf) norm of all ``arrays`` together, one pass over each: a
    dot product per array (BLAS), as PyTorch's foreach norm."""
    if norm_type == math.inf:
        return max((float(xp.abs(a).max()) for a in arrays if a.size), default=0.0)
    total = 0.0
    for a in arrays:
        flat = a.reshape(-1)
        if flat.dtype == xp.float16:
            flat = flat.astype(xp.float32)
        total += float(xp.dot(flat, flat))
    return math.sqrt(total)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type`` norm of all ``tensors`` together (as if concatenated)."""
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return et.tensor(0.0)
    fast = _grad_arrays(tensors) if norm_type in (2.0, math.inf) else None
    if fast is not None:
        total = et.tensor(_one_pass_norm(*fast, norm_type), dtype=tensors[0].dtype,
                          device=tensors[0].device)
    else:
        with no_grad():
            if norm_type == math.inf:
                norms = [t.detach().abs().max() for t in tensors]
                total = et.stack([n.to(dtype=tensors[0].dtype) for n in norms]).max()
            else:
                norms = [et.norm(t.detach(), norm_type) for t in tensors]
                total = et.norm(et.stack([n.to(dtype=tensors[0].dtype) for n in norms]),
                                norm_type)
    if error_if_nonfinite and not bool(et.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` when that is below 1."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    coef = float(max_norm) / (float(total_norm) + 1e-6)
    if not (coef < 1.0 or math.isnan(coef)):
        return
    if _grad_arrays(grads) is not None and not any(g.requires_grad for g in grads):
        for g in grads:  # in place on the arrays, one pass each (a bumped version counter)
            a = unwrap(g)
            a *= a.dtype.type(coef)
            bump_version(g)
        return
    with no_grad():
        for g in grads:
            g.mul_(coef)


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Clip the gradients of ``parameters`` in place so their total norm is at most
    ``max_norm``; returns the total norm before clipping. The L2 and inf norms take one pass
    over each gradient (a dot product), and the scaling one more.

    >>> p = et.ones(4, requires_grad=True); (p * 3).sum().backward()
    >>> round(clip_grad_norm_([p], 1.0).item(), 3)
    6.0
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_`."""
    import warnings

    warnings.warn("`ember.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`ember.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
