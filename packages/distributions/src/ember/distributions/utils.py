"""Helpers shared by the distributions (``torch.distributions.utils``)."""
from __future__ import annotations

import math
from numbers import Number

import ember.tensor as et
from ember.autograd import enable_grad
from ember.tensor import Size, Tensor

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs",
           "lazy_property", "euler_constant", "sum_rightmost", "standard_normal",
           "standard_uniform", "softplus", "one_hot", "fmt_value", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]

#: The Euler-Mascheroni constant.
euler_constant = 0.57721566490153286060


def broadcast_all(*values):
    """Broadcast numbers and tensors together; numbers become tensors of the dtype and device
    of the first tensor argument (the default dtype when there is none)."""
    first = None
    for v in values:
        if isinstance(v, Tensor):
            first = v
            break
        if not isinstance(v, Number):
            raise ValueError("Input arguments must all be instances of numbers.Number, "
                             "ember.tensor.Tensor or objects implementing __torch_function__.")
    if first is None:
        dtype, device = et.get_default_dtype(), None
    else:
        dtype, device = first.dtype, first.device
    out = [v if isinstance(v, Tensor) else et.tensor(float(v), dtype=dtype, device=device)
           for v in values]
    return tuple(et.broadcast_tensors(*out))


def broadcast_params(*values):
    """``broadcast_all`` of a family's parameters, and its batch shape: empty when every
    parameter is a number, else the broadcast shape."""
    tensors = broadcast_all(*values)
    if all(isinstance(v, Number) for v in values):
        return tensors, Size()
    return tensors, tensors[0].shape


def fmt_value(v) -> str:
    """A tensor in an error message: its number when it has one element, else the tensor."""
    if isinstance(v, Tensor) and v.dim() == 0:
        return repr(v.item())
    return str(v)


def clamp_probs(probs: Tensor) -> Tensor:
    eps = et.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def softplus(x: Tensor) -> Tensor:
    """log(1 + exp(x)), stable for large |x|, with derivative sigmoid(x) everywhere
    (including 0, where ``max(x, 0) + log1p(exp(-|x|))`` has a kink in autograd)."""
    pos = x + et.log1p(et.exp(-x.clamp(min=0)))
    neg = et.log1p(et.exp(x.clamp(max=0)))
    return et.where(x > 0, pos, neg)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return et.sigmoid(logits)
    return et.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    ps = clamp_probs(probs)
    if is_binary:
        return et.log(ps) - et.log1p(-ps)
    return et.log(ps)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def standard_normal(shape, dtype, device) -> Tensor:
    return et.randn(*tuple(shape), dtype=dtype, device=device)


def standard_uniform(shape, dtype, device) -> Tensor:
    return et.rand(*tuple(shape), dtype=dtype, device=device)


def one_hot(index: Tensor, num_classes: int, dtype) -> Tensor:
    ar = et.arange(num_classes, device=index.device)
    return (index.unsqueeze(-1) == ar).to(dtype)


def _tril_flat_index(n: int, diag: int, device):
    """Positions (in a flattened ``n x n`` matrix, row by row) of the entries on or below
    diagonal ``diag``."""
    rows = et.arange(n, device=device).unsqueeze(-1)
    cols = et.arange(n, device=device)
    return et.nonzero((cols < rows + (diag + 1)).reshape(-1)).reshape(-1)


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The entries of (a batch of) ``D x D`` matrices on or below diagonal ``diag``, row by
    row, as vectors."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat.index_select(-1, _tril_flat_index(n, diag, mat.device))


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The inverse of :func:`tril_matrix_to_vec`: (a batch of) vectors laid out row by row
    as the entries on or below diagonal ``diag`` of ``D x D`` matrices, zeros elsewhere."""
    m = vec.shape[-1]
    b = 1 + 2 * diag
    n = (-b + math.sqrt(b * b + 8 * m + 4 * abs(diag) * (diag + 1))) / 2
    if abs(round(n) - n) > et.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {m} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    # every entry above the band reads the zero appended after the vector's entries
    padded = et.cat([vec, et.zeros(tuple(vec.shape[:-1]) + (1,), dtype=vec.dtype,
                                   device=vec.device)], -1)
    source = et.full((n * n,), m, dtype=et.int64, device=vec.device)
    source[_tril_flat_index(n, diag, vec.device)] = et.arange(m, device=vec.device)
    return padded.index_select(-1, source).reshape(tuple(vec.shape[:-1]) + (n, n))


class lazy_property:
    """A property computed once per instance, then stored in its ``__dict__`` (so that the
    value is shared by later reads and can be set by ``expand``)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value
