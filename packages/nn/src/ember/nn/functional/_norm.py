"""Normalization: batch, instance, layer, group and local response norm, ``normalize``.

All are compositions of ember ops (means, biased variances, ``rsqrt``), or for layer norm the
registry op ``native_layer_norm``, so their first and second derivatives come from the
derivative table. Running statistics are updated in place
without recording, with the unbiased variance, as PyTorch does.

    >>> import ember.tensor as et
    >>> import ember.nn.functional as F
    >>> F.layer_norm(et.tensor([[1., 3.]]), (2,)).round().tolist()
    [[-1.0, 1.0]]
"""
from __future__ import annotations

from collections.abc import Sequence

import ember.autograd as ag
import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["batch_norm", "instance_norm", "layer_norm", "rms_norm", "group_norm",
           "local_response_norm", "normalize"]


def _affine(out: Tensor, weight, bias, shape) -> Tensor:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update_running(running: Tensor | None, value: Tensor, momentum: float) -> None:
    if running is None:
        return
    with ag.no_grad():
        running.mul_(1.0 - momentum).add_(value.detach().to(dtype=running.dtype) * momentum)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) of (N, C, *) ``input`` by batch statistics (training)
    or by ``running_mean`` / ``running_var`` (evaluation); running stats are updated in
    training with ``momentum``.

    >>> batch_norm(et.tensor([[1.], [3.]]), None, None, training=True).round().tolist()
    [[-1.0], [1.0]]
    """
    op = "batch_norm"
    if input.dim() < 2:
        raise ValueError(f"{op}(): expected at least 2-d input (N, C, ...), got "
                         f"{list(input.shape)}")
    C = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{op}(): {name} should contain {C} elements not {t.numel()}")
    dims = (0,) + tuple(range(2, input.dim()))
    shape = (1, C) + (1,) * (input.dim() - 2)
    if training:
        count = input.numel() // max(C, 1)
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
        mean = input.mean(dims)
        var = input.var(dims, unbiased=False)
        if running_mean is not None or running_var is not None:
            _update_running(running_mean, mean, momentum)
            _update_running(running_var, var * (count / (count - 1)), momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"{op}(): running_mean and running_var must be defined in "
                               "evaluation mode")
        mean, var = running_mean, running_var
    out = (input - mean.reshape(shape)) * (var.reshape(shape) + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) plane of (N, C, *) ``input`` over its spatial dims.

    >>> instance_norm(et.tensor([[[1., 3.]]])).round().tolist()
    [[[-1.0, 1.0]]]
    """
    op = "instance_norm"
    if input.dim() < 3:
        raise ValueError(f"{op}(): expected at least 3-d input (N, C, *), got "
                         f"{list(input.shape)}")
    N, C = input.shape[0], input.shape[1]
    shape = (1, C) + (1,) * (input.dim() - 2)
    if use_input_stats:
        dims = tuple(range(2, input.dim()))
        count = input.numel() // max(N * C, 1)
        if count <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, unbiased=False, keepdim=True)
        if running_mean is not None:
            _update_running(running_mean, mean.reshape(N, C).mean(0), momentum)
        if running_var is not None:
            _update_running(running_var, (var * (count / (count - 1))).reshape(N, C).mean(0),
                            momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(f"{op}(): Expected running_mean and running_var to be defined "
                               "when use_input_stats is false")
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) * (var + eps).rsqrt()
    return _affine(out, weight, bias, shape)


def _normalized_dims(op: str, input: Tensor, normalized_shape, params) -> tuple:
    """The trailing dims that ``normalized_shape`` names, with PyTorch's shape errors for
    ``input`` and the per-element ``params`` (name, tensor or None)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    ns = tuple(int(v) for v in normalized_shape)
    nd = len(ns)
    if nd == 0 or input.dim() < nd or tuple(input.shape[input.dim() - nd:]) != ns:
        raise RuntimeError(f"{op}(): Given normalized_shape={list(ns)}, expected input with "
                           f"shape [*, {', '.join(map(str, ns))}], but got input of size"
                           f"{list(input.shape)}")
    for name, t in params:
        if t is not None and tuple(t.shape) != ns:
            raise RuntimeError(f"{op}(): Expected {name} to be of same shape as "
                               f"normalized_shape, but got {name} of shape {list(t.shape)} "
                               f"and normalized_shape = {list(ns)}")
    return ns, tuple(range(input.dim() - nd, input.dim()))


def layer_norm(input: Tensor, normalized_shape: Sequence[int] | int,
               weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims.

    >>> layer_norm(et.ones(2, 3), 3).tolist()
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    ns, dims = _normalized_dims("layer_norm", input, normalized_shape,
                                (("weight", weight), ("bias", bias)))
    return et.native_layer_norm(input, list(ns), weight, bias, eps)[0]


def rms_norm(input: Tensor, normalized_shape: Sequence[int] | int,
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Root-mean-square normalization over the trailing ``normalized_shape`` dims:
    ``input / sqrt(mean(input ** 2) + eps) * weight``; ``eps=None`` is the dtype's machine
    epsilon.

    >>> rms_norm(et.tensor([[3., 4.]], dtype=et.float64), [2]).round(decimals=4).tolist()
    [[0.8485, 1.1314]]
    """
    ns, dims = _normalized_dims("rms_norm", input, normalized_shape, (("weight", weight),))
    if eps is None:
        eps = et.finfo(input.dtype).eps
    out = input * (input.square().mean(dims, keepdim=True) + eps).rsqrt()
    return _affine(out, weight, None, ns)


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalize (N, C, *) ``input`` over groups of ``C // num_groups`` channels (and all
    spatial dims), then apply a per-channel affine.

    >>> group_norm(et.tensor([[1., 3., 5., 7.]]), 2).round().tolist()
    [[-1.0, 1.0, -1.0, 1.0]]
    """
    op = "group_norm"
    if input.dim() < 2:
        raise RuntimeError(f"{op}(): Expected at least 2 dimensions for input tensor but "
                           f"received {input.dim()}")
    N, C = input.shape[0], input.shape[1]
    if num_groups < 1 or C % num_groups:
        raise RuntimeError(f"{op}(): Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != C:
            raise RuntimeError(f"{op}(): Expected {name} to be a vector of size equal to the "
                               f"number of channels in input, but got {name} of shape "
                               f"{list(t.shape)} and input of shape {list(input.shape)}")
    x = input.reshape(N, num_groups, -1)
    mean = x.mean(2, keepdim=True)
    var = x.var(2, unbiased=False, keepdim=True)
    out = ((x - mean) * (var + eps).rsqrt()).reshape(input.shape)
    return _affine(out, weight, bias, (1, C) + (1,) * (input.dim() - 2))


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Normalize each element by the squares of its ``size`` neighbouring channels:
    ``x / (k + alpha * mean(x_c**2))**beta``.

    >>> local_response_norm(et.ones(1, 3, 1), 2, alpha=0., k=2., beta=1.).tolist()
    [[[0.5], [0.5], [0.5]]]
    """
    from ._padding import pad
    from ._pool import avg_pool2d, avg_pool3d

    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = div.unsqueeze(1)
        div = pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = (div * alpha + k).pow(beta)
    return input / div


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``.

    >>> normalize(et.tensor([[3., 4.]])).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    denom = et.norm(input, p, dim, keepdim=True).clamp(min=eps).expand_as(input)
    res = input / denom
    if out is not None:
        out.copy_(res)
        return out
    return res
