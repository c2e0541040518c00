"""``pad``: constant, reflect, replicate and circular padding (negative pads crop).

    >>> import ember.tensor as et
    >>> import ember.nn.functional as F
    >>> F.pad(et.tensor([[1., 2., 3.]]), (2, 1), mode="reflect").tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _source_index(mode: str, n: int, left: int, right: int) -> np.ndarray:
    """For each output position along one dim, the input position it copies: negative
    amounts crop first, positive ones then pad the cropped range (PyTorch's order)."""
    start = max(-left, 0)
    m = n - start - max(-right, 0)
    pos = np.arange(-max(left, 0), m + max(right, 0))
    if mode == "reflect":
        pos = np.abs(pos)
        pos = np.where(pos >= m, 2 * (m - 1) - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, m - 1)
    else:  # circular
        pos = np.mod(pos, m)
    return start + pos


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",
        value: float | None = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims; ``pad`` lists (left, right) pairs starting from
    the last dim, as in PyTorch. Negative amounts crop.

    >>> pad(et.ones(1, 2), (1, 1)).tolist()
    [[0.0, 1.0, 1.0, 0.0]]
    """
    op = "pad"
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    pad = [int(v) for v in pad]
    if len(pad) % 2:
        raise RuntimeError(f"{op}(): Padding length must be divisible by 2, got {len(pad)}")
    npairs = len(pad) // 2
    if npairs > input.dim():
        raise RuntimeError(f"{op}(): Padding length should be less than or equal to two times "
                           f"the input dimension but got padding length {len(pad)} and input "
                           f"of dimension {input.dim()}")
    if mode not in _MODES:
        raise NotImplementedError(f"{op}(): Unrecognised padding mode {mode!r}; expected one "
                                  f"of {', '.join(_MODES)}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f"{op}(): Padding mode \"{mode}\" doesn't take in value "
                               "argument")
        if npairs > 3 or input.dim() not in (npairs + 1, npairs + 2):
            raise NotImplementedError(
                f"{op}(): Padding size {len(pad)} is not supported for {input.dim()}D input "
                "tensor. Supported combinations for non-constant padding: 2D or 3D input: "
                "padding size = 2; 3D or 4D input: padding size = 4; 4D or 5D input: padding "
                "size = 6")
    out = input
    for j in range(npairs):
        dim = input.dim() - 1 - j
        left, right = pad[2 * j], pad[2 * j + 1]
        if left == 0 and right == 0:
            continue
        n = out.shape[dim]
        if n + left + right < 0 or (mode == "constant" and n + min(left, 0) + min(right, 0) < 0):
            raise RuntimeError(f"{op}(): The input size {n}, plus negative padding {left} and "
                               f"{right} resulted in a negative output size, which is invalid. "
                               f"Check dimension {dim} of your input.")
        if mode == "constant":
            out = _constant(out, dim, left, right, 0.0 if value is None else value)
            continue
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"{op}(): Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({left}, "
                               f"{right}) at dimension {dim} of input {list(input.shape)}")
        if mode == "replicate" and n == 0:
            raise RuntimeError(f"{op}(): input dimension {dim} of size 0 cannot be replicated")
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError(f"{op}(): Padding value causes wrapping around more than once. "
                               f"(padding ({left}, {right}) at dimension {dim} of size {n})")
        out = _index_select(out, dim, _source_index(mode, n, left, right))
    return out


def _index_select(x: Tensor, dim: int, index: np.ndarray) -> Tensor:
    """Differentiable ``x.index_select(dim, index)`` with an integer NumPy ``index``."""
    return et.index_select(x, dim % max(x.dim(), 1),
                           et.tensor(np.asarray(index, dtype=np.int64), device=x.device))


def _constant(x: Tensor, dim: int, left: int, right: int, value: float) -> Tensor:
    n = x.shape[dim]
    if left < 0 or right < 0:
        start = max(-left, 0)
        stop = n - max(-right, 0)
        x = x.narrow(dim, start, stop - start)
        left, right = max(left, 0), max(right, 0)
    parts = []
    shape = list(x.shape)
    if left:
        shape[dim] = left
        parts.append(et.full(shape, value, dtype=x.dtype, device=x.device))
    parts.append(x)
    if right:
        shape[dim] = right
        parts.append(et.full(shape, value, dtype=x.dtype, device=x.device))
    return et.cat(parts, dim) if len(parts) > 1 else x
