"""Dropout functions: ``dropout``, ``dropout1d/2d/3d``, ``alpha_dropout``,
``feature_alpha_dropout``. In training they zero elements (or whole channels) with probability
``p`` and scale the rest by ``1 / (1 - p)``; outside training they return the input."""
from __future__ import annotations

import math
import warnings

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Tensor

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
           "feature_alpha_dropout"]


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p: float, like: Tensor) -> Tensor:
    with no_grad():
        return et.empty(*shape, dtype=like.dtype, device=like.device).bernoulli_(1 - p)


def _write(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    if not inplace:
        return out
    if input.requires_grad and input.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    return input.copy_(out)


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    >>> import ember.tensor as et
    >>> dropout(et.ones(3), 0.5, training=False).tolist()
    [1.0, 1.0, 1.0]
    """
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _write(input, input * 0.0, inplace)
    mask = _keep_mask(input.shape, p, input)
    return _write(input, input * (mask * (1.0 / (1.0 - p))), inplace)


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, batched_ndim: int,
                     name: str) -> Tensor:
    _check_p(p)
    if input.dim() not in (batched_ndim - 1, batched_ndim):
        raise RuntimeError(f"{name}: Expected {batched_ndim - 1}D or {batched_ndim}D input, but "
                           f"received a {input.dim()}D input")
    if not training or p == 0.0:
        return input
    if input.dim() == batched_ndim - 1:
        shape = (input.shape[0],) + (1,) * (input.dim() - 1)
    else:
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    if p == 1.0:
        return _write(input, input * 0.0, inplace)
    mask = _keep_mask(shape, p, input)
    return _write(input, input * (mask * (1.0 / (1.0 - p))), inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) input."""
    return _feature_dropout(input, p, training, inplace, 3, "dropout1d")


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, H, W) input, as PyTorch does: the mask has shape
    ``input.shape[:2] + (1,) * (dim - 2)`` whatever the dimension, so (N, C, L) input is dropped
    per channel (with PyTorch's warning about 3-D input) and other dimensions warn that they are
    deprecated (2-D input is then dropped element-wise, the mask being (N, C))."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if nd == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _write(input, input * 0.0, inplace)
    if nd < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask = _keep_mask(tuple(input.shape[:2]) + (1,) * (nd - 2), p, input)
    return _write(input, input * (mask * (1.0 / (1.0 - p))), inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input."""
    return _feature_dropout(input, p, training, inplace, 5, "dropout3d")


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _alpha(input: Tensor, p: float, training: bool, inplace: bool, shape) -> Tensor:
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _write(input, input * 0.0, inplace)
    alpha_p = -_SELU_ALPHA * _SELU_SCALE
    a = 1.0 / math.sqrt((alpha_p * alpha_p * p + 1) * (1 - p))
    b = -a * alpha_p * p
    keep = _keep_mask(shape, p, input)
    # kept: a * x + b; dropped: a * alpha' + b
    out = input * (keep * a) + ((1 - keep) * (a * alpha_p) + b)
    return _write(input, out, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps the self-normalizing mean and variance (for SELU networks)."""
    return _alpha(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Channel-wise alpha dropout."""
    shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _alpha(input, p, training, inplace, shape)
