"""Grad modes (PyTorch's ``torch.autograd.grad_mode`` path): ``no_grad``, ``enable_grad``,
``set_grad_enabled``, ``inference_mode``. They live in the tensor core
(``ember.tensor.no_grad`` is ``torch.no_grad``); ``grad_enabled()`` / ``set_grad_flag(v)`` read
and set grad mode as the recorder does, ``state`` holds the thread-local switches of inference
mode and anomaly detection."""
from __future__ import annotations

from ember.tensor import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.tensor.extension import grad_enabled, set_grad_flag
from ember.tensor.extension import grad_mode as state

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "grad_enabled", "set_grad_flag", "state"]
