"""Lookups: ``embedding``, ``embedding_bag``, ``one_hot``.

``embedding`` is the registry op of ember.tensor; its derivative is
``embedding_dense_backward`` (the Numba ``embedding_backward`` scatter kernel on the CPU), whose
own derivative is again a lookup, so double backward works.
"""
from __future__ import annotations

import ember.tensor as et
from ember.autograd import no_grad
from ember.tensor import Tensor
from ember.tensor import extension as _ext

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _check_index(input: Tensor, n: int, op: str) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'indices' must be a Tensor, got "
                        f"{type(input).__name__}")
    _ext.check_lookup_indices(op, input, n)
    return input if input.dtype == et.int64 else input.to(dtype=et.int64)


def _renorm_(weight: Tensor, index: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescale in place the rows of ``weight`` used by ``index`` whose norm exceeds
    ``max_norm`` (``torch.embedding_renorm_``)."""
    with no_grad():
        uniq = et.unique(index.reshape(-1))
        rows = weight.index_select(0, uniq)
        norms = rows.norm(p=norm_type, dim=1, keepdim=True)
        scale = et.where(norms > max_norm, max_norm / (norms + 1e-7), et.ones_like(norms))
        weight.index_copy_(0, uniq, rows * scale)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` at the integer ``input`` (any shape): output ``(*input.shape, D)``.

    >>> w = et.arange(6.).view(3, 2)
    >>> embedding(et.tensor([2, 0]), w).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    """
    if weight.dim() != 2:
        raise RuntimeError(f"embedding(): weight must be 2-D, got {list(weight.shape)}")
    n = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    if not isinstance(input, Tensor):
        raise TypeError(f"embedding(): argument 'indices' must be a Tensor, got "
                        f"{type(input).__name__}")
    if max_norm is not None:
        _renorm_(weight, _check_index(input, n, "embedding"), max_norm, norm_type)
    return et.embedding(weight, input, padding_idx, bool(scale_grad_by_freq), sparse)


def _check_offsets(offsets: list, length: int) -> None:
    """Bag starts must lie in ``[0, len(input)]`` and never decrease: an offset past the end
    would silently give an empty bag."""
    for i, o in enumerate(offsets):
        if o < 0:
            raise IndexError(f"embedding_bag(): offsets[{i}] = {o} is out of range (negative)")
        if i and o < offsets[i - 1]:
            raise RuntimeError(f"embedding_bag(): offsets must be non-decreasing, but "
                               f"offsets[{i}] = {o} < offsets[{i - 1}] = {offsets[i - 1]}")
    if offsets and offsets[-1] > length:
        raise RuntimeError(f"embedding_bag(): offsets[-1] can not be greater than input's "
                           f"length {length} but got offsets[-1] of {offsets[-1]}")


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxes of bags of embeddings, without materializing the lookups per bag.

    ``input`` 2-D (B, L): fixed-length bags; or 1-D with ``offsets`` (bag starts).

    >>> w = et.arange(6.).view(3, 2)
    >>> embedding_bag(et.tensor([0, 1, 2]), w, et.tensor([0, 1]), mode="sum").tolist()
    [[0.0, 1.0], [6.0, 8.0]]
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    n, d = weight.shape
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences.")
        b, length = input.shape
        offsets_list = list(range(0, b * length, length))
        flat = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if offsets.dtype not in (et.int64, et.int32):
            raise RuntimeError(f"embedding_bag(): Expected tensor for argument 'offsets' to "
                               f"have one of the following scalar types: Long, Int; but got "
                               f"{offsets.dtype} instead")
        flat = input
        offsets_list = [int(o) for o in offsets.tolist()]
        _check_offsets(offsets_list, input.shape[0])
        if include_last_offset:
            end = offsets_list[-1] if offsets_list else 0
            offsets_list = offsets_list[:-1]
            flat = flat[:end]
            if per_sample_weights is not None:
                per_sample_weights = per_sample_weights[:end]
        if offsets_list and offsets_list[0] != 0:
            raise RuntimeError("embedding_bag(): offsets[0] has to be 0, i.e., the first "
                               "sequence in the mini-batch has to start from position 0. "
                               f"However, got {offsets_list[0]}")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if padding_idx is not None and padding_idx < 0:
        padding_idx = n + padding_idx
    index = _check_index(flat, n, "embedding_bag")
    if max_norm is not None:
        _renorm_(weight, index, max_norm, norm_type)
    total = index.shape[0]
    nbags = len(offsets_list)
    bounds = offsets_list + [total]
    # bag id of every lookup, and which lookups count (padding_idx entries do not)
    bag_of = [0] * total
    for k in range(nbags):
        for j in range(bounds[k], min(bounds[k + 1], total)):
            bag_of[j] = k
    bag = et.tensor(bag_of, dtype=et.int64, device=weight.device)
    keep = et.ones(total, dtype=weight.dtype, device=weight.device) if padding_idx is None \
        else (index != padding_idx).to(weight.dtype)
    rows = embedding(index, weight, padding_idx, None, norm_type, scale_grad_by_freq)
    if mode == "max":
        out_rows = []
        zero = et.zeros(d, dtype=weight.dtype, device=weight.device)
        for k in range(nbags):
            lo, hi = bounds[k], min(bounds[k + 1], total)
            sel = [j for j in range(lo, hi) if padding_idx is None or
                   int(index[j]) != padding_idx]
            if not sel:
                out_rows.append(zero)
            else:
                part = rows[sel[0]:sel[-1] + 1] if sel == list(range(sel[0], sel[-1] + 1)) \
                    else et.index_select(rows, 0, et.tensor(sel, device=weight.device))
                out_rows.append(part.amax(0))
        return et.stack(out_rows) if out_rows else et.zeros(0, d, dtype=weight.dtype)
    w = keep if per_sample_weights is None else keep * per_sample_weights
    rows = rows * w.unsqueeze(1)
    base = et.zeros(nbags, d, dtype=rows.dtype, device=weight.device)
    idx2 = bag.unsqueeze(1).expand(total, d)
    out = et.scatter_add(base, 0, idx2, rows)
    if mode == "mean":
        counts = et.zeros(nbags, dtype=weight.dtype, device=weight.device).scatter_add(
            0, bag, keep)
        out = out / counts.clamp(min=1).unsqueeze(1)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim.

    >>> one_hot(et.tensor([0, 2])).tolist()
    [[1, 0, 0], [0, 0, 1]]
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"one_hot(): argument 'input' must be a Tensor, got "
                        f"{type(tensor).__name__}")
    if tensor.dtype != et.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    # the range checks read the array itself: on a concrete tensor inside autobatch() they
    # need no flush of the pending graph (a pending tensor's values are needed, as always)
    d = _ext.unwrap(tensor)
    lo, hi = (int(d.min()), int(d.max())) if d.size else (0, -1)
    if num_classes == -1:
        if not d.size:
            raise RuntimeError("one_hot(): Can not infer total number of classes from empty "
                               "tensor.")
        num_classes = hi + 1
    elif num_classes < -1:
        raise RuntimeError(f"one_hot(): num_classes should be positive, got {num_classes}")
    if lo < 0:
        raise RuntimeError("one_hot(): Class values must be non-negative.")
    if hi >= num_classes:
        raise RuntimeError("one_hot(): Class values must be smaller than num_classes.")
    # a comparison with the class numbers, not a scatter into zeros: no in-place op, so it
    # waits (and batches) inside autobatch()
    try:
        classes = et.arange(num_classes, device=tensor.device)
        return (tensor.unsqueeze(-1) == classes).to(et.int64)
    except MemoryError as e:  # ember's OutOfMemoryError is a RuntimeError as well
        raise et.OutOfMemoryError(f"one_hot(): {e}") from None
