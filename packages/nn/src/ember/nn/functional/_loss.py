"""Loss functions with PyTorch's ``reduction`` (``"none" | "mean" | "sum"``) and ``weight``.

Log-domain losses use stable forms: ``cross_entropy`` goes through ``log_softmax``
(log-sum-exp), ``binary_cross_entropy_with_logits`` through ``log1p(exp(-|x|))``, so
1000-valued logits give finite losses and gradients.

    >>> import ember.tensor as et
    >>> round(cross_entropy(et.tensor([[1000., 0.]]), et.tensor([1])).item(), 3)
    1000.0
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import OPS

from ._activation import log_softmax, logsigmoid
from ._distance import pairwise_distance

_ctc_loss = OPS["_ctc_loss"].public  # the registry op (PyTorch's aten name)

__all__ = [
    "l1_loss", "mse_loss", "cross_entropy", "nll_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "margin_ranking_loss", "hinge_embedding_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "smooth_l1_loss", "huber_loss",
    "soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "triplet_margin_with_distance_loss", "ctc_loss",
]


# --------------------------------------------------------------------------- helpers
def _legacy_reduction(size_average, reduce) -> str:
    """The reduction string for the deprecated ``size_average`` / ``reduce`` arguments."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=3)
    return ret


def _resolve(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_reduction(reduction: str, extra=()) -> None:
    if reduction not in ("none", "mean", "sum", *extra):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_same_size(input: Tensor, target: Tensor, op: str) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)


def _clamped_log(x: Tensor) -> Tensor:
    """``max(log(x), -100)`` whose gradient is 0 (never ``0 * inf = NaN``) where the clamp
    holds, at ``x == 0`` included: a saturated sigmoid feeding ``binary_cross_entropy`` must
    not poison the weights."""
    pos = x > 0
    return et.where(pos, et.log(et.where(pos, x, 1.0)), -100.0).clamp(min=-100)


def _relu(x: Tensor) -> Tensor:
    return et.where(x > 0, x, 0.0)


# --------------------------------------------------------------------------- regression
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean absolute error."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target, "l1_loss")
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean squared error."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target, "mse_loss")
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """``0.5 d^2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    _check_same_size(input, target, "smooth_l1_loss")
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = input - target
    ad = d.abs()
    if beta == 0:
        return _reduce(ad, reduction)
    loss = et.where(ad < beta, (0.5 / beta) * d * d, ad - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """``0.5 d^2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``."""
    _check_reduction(reduction)
    _check_same_size(input, target, "huber_loss")
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = input - target
    ad = d.abs()
    loss = et.where(ad < delta, 0.5 * d * d, delta * (ad - 0.5 * delta))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-y x))``, computed stably."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _reduce(-logsigmoid(target * input), reduction)


# --------------------------------------------------------------------------- classification
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of log-probabilities ``input`` (N, C, d...) or (C,) at class
    indices ``target`` (N, d...) or 0-d; ``weight`` per class; ``ignore_index`` entries count
    for nothing (every one ignored: a NaN mean, a zero gradient).

    The registry op ``nll_loss_forward`` (through ``nll_loss_nd``, as PyTorch), whose
    backward is ``nll_loss_backward``.

    >>> nll_loss(et.tensor([[-1., -2.]]), et.tensor([1])).item()
    2.0
    """
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if isinstance(target, Tensor) and target.is_floating_point():
        raise RuntimeError(f"nll_loss: expected target of an integer dtype (class indices), got "
                           f"{target.dtype}")
    return et.nll_loss_nd(input, target, weight, _REDUCTION_ENUM[reduction], ignore_index)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Cross entropy of logits ``input`` (N, C, d...) or (C,) against class indices or class
    probabilities ``target``, with ``weight``, ``ignore_index`` and ``label_smoothing``.

    Class-index targets run the fused registry op ``cross_entropy_loss`` (one node; its
    backward ``_cross_entropy_loss_backward``), probabilities go through ``log_softmax``."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if not target.is_floating_point():
        return et.cross_entropy_loss(input, target, weight, _REDUCTION_ENUM[reduction],
                                     ignore_index, label_smoothing)
    class_dim = 0 if input.dim() == 1 else 1
    c = input.shape[class_dim]
    logp = log_softmax(input, class_dim)
    wshape = [1] * input.dim()
    wshape[class_dim] = c
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"cross_entropy: probability target of shape "
                           f"{list(target.shape)} must match input {list(input.shape)}")
    t = target
    if label_smoothing > 0:
        t = t * (1 - label_smoothing) + label_smoothing / c
    prod = logp * t
    if weight is not None:
        prod = prod * weight.reshape(wshape)
    loss = -prod.sum(class_dim)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (input.numel() // c if input.numel() else float("nan"))


_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log likelihood (``exp(x) - y x`` for log-rate inputs)."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if log_input:
        loss = et.exp(input) - target * input
    else:
        loss = input - target * et.log(input + eps)
    if full:
        safe = et.where(target > 1, target, 1.0)
        stirling = safe * et.log(safe) - safe + 0.5 * et.log(2 * math.pi * safe)
        loss = loss + et.where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 (log(max(var, eps)) + (x - y)^2 / max(var, eps))`` (+ const with ``full``)."""
    _check_reduction(reduction)
    if not isinstance(var, Tensor):
        var = et.full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    # clamp without blocking the gradient, as PyTorch's in-place no_grad clamp does
    var = var + (var.clamp(min=eps) - var).detach()
    d = input - target
    loss = 0.5 * (et.log(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """``target * (log(target) - input)`` pointwise; ``reduction="batchmean"`` divides the sum
    by the batch size (the mathematically correct KL divergence)."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction, ("batchmean",))
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    if log_target:
        loss = et.exp(target) * (target - input)
    else:
        pos = target > 0
        xlogx = et.where(pos, target * et.log(et.where(pos, target, 1.0)), 0.0)
        loss = xlogx - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(loss, reduction)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``-(y log x + (1 - y) log(1 - x))`` with the logs clamped at -100, as PyTorch does."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    if input.numel() and not bool(((input >= 0) & (input <= 1)).all()):  # NaN fails too
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = _clamped_log(input)
    log_1mx = _clamped_log(1 - input)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in one stable formula:
    ``(1 - y) x + (1 + (pw - 1) y) (log1p(exp(-|x|)) + max(-x, 0))``."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    log_sig_neg = -logsigmoid(input)  # log(1 + exp(-x)), stable
    if pos_weight is not None:
        coef = 1 + (pos_weight - 1) * target
        loss = (1 - target) * input + coef * log_sig_neg
    else:
        loss = (1 - target) * input + log_sig_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# --------------------------------------------------------------------------- margins
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -y (x1 - x2) + margin)``."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    return _reduce(_relu(-target * (input1 - input2) + margin), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``x`` where ``y == 1``, ``max(0, margin - x)`` where ``y == -1``."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    margin_clamp = _relu(margin - input)
    out_margin = et.where(target != 1, margin_clamp, 0.0)
    out_self = et.where(target != -1, input, 0.0)
    return _reduce(out_margin + out_self, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """``sum_{j in targets, i not in targets} max(0, 1 - (x_j - x_i)) / C``; ``target`` lists
    class indices, ended by the first -1."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    t = target.reshape(1, -1) if squeeze else target
    if tuple(t.shape) != tuple(x.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: {target.shape} "
                           f"for input of size: {input.shape}")
    n, c = x.shape
    tn = np.asarray(t.detach().cpu().numpy(), dtype=np.int64)
    pair = np.zeros((n, c, c), dtype=np.float64)
    for r in range(n):
        targets = []
        for v in tn[r]:
            if v < 0:
                break
            if v >= c:
                raise IndexError(f"multilabel_margin_loss: target {v} is out of bounds")
            targets.append(int(v))
        is_t = np.zeros(c, dtype=bool)
        is_t[targets] = True
        for j in targets:
            pair[r, j, ~is_t] += 1.0
    mask = et.tensor(pair, dtype=x.dtype, device=x.device)
    hinge = _relu(1 - (x.unsqueeze(2) - x.unsqueeze(1)))
    loss = (hinge * mask).sum((1, 2)) / c
    if squeeze:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Mean over classes of the binary logistic losses."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    c = input.shape[-1] if input.dim() else 1
    loss = loss.sum(dim=input.dim() - 1) / c if input.dim() else loss
    return _reduce(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """``sum_{i != y} max(0, margin - x_y + x_i)^p / C`` (times ``weight[y]``)."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    t = target.reshape(-1).to(dtype=et.int64)
    n, c = x.shape
    if t.shape[0] != n:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: {target.shape} for "
                           f"input of size: {input.shape}")
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= c):
        raise IndexError("multi_margin_loss: target out of range")
    xy = et.gather(x, 1, t.unsqueeze(1))
    z = _relu(margin - xy + x)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * et.index_select(weight.detach(), 0, t).unsqueeze(1)
    not_y = (et.arange(c, device=x.device).unsqueeze(0) != t.unsqueeze(1)).to(x.dtype)
    loss = (z * not_y).sum(1) / c
    if squeeze:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` where ``y == 1``, ``max(0, cos(x1, x2) - margin)`` where ``y == -1``."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    eps = 1e-12
    dim = input1.dim() - 1
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / et.sqrt(mag1 * mag2)
    pos = et.where(target == 1, 1 - cos, 0.0)
    neg = et.where(target == -1, _relu(cos - margin), 0.0)
    return _reduce(pos + neg, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the pairwise p-norm distance."""
    reduction = _resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                         f"{margin} instead")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = et.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_relu(margin + d_pos - d_neg), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """Triplet loss with any distance function (default: pairwise Euclidean)."""
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0,"
                         f" got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = et.minimum(d_neg, dist(positive, negative))
    return _reduce(_relu(margin + d_pos - d_neg), reduction)


# --------------------------------------------------------------------------- CTC
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist Temporal Classification loss of ``log_probs`` (T, N, C) (log-softmaxed)
    against ``targets`` (N, S) padded or 1-D concatenated.

    The loss is the ``_ctc_loss`` op of ember.tensor; its gradient (``_ctc_loss_backward``) is
    the exact partial derivative with respect to ``log_probs`` (PyTorch's kernel adds
    ``exp(log_probs)``, a term that cancels through ``log_softmax``).
    """
    _check_reduction(reduction)
    if not isinstance(input_lengths, Tensor):
        input_lengths = et.tensor(list(input_lengths), dtype=et.int64)
    if not isinstance(target_lengths, Tensor):
        target_lengths = et.tensor(list(target_lengths), dtype=et.int64)
    input_lengths = input_lengths.reshape(-1)
    target_lengths = target_lengths.reshape(-1)
    T = log_probs.shape[0]
    if input_lengths.numel() and int(input_lengths.max()) > T:
        raise RuntimeError(f"ctc_loss: input_lengths must be at most the input length {T}")
    il = input_lengths.tolist()
    tl = target_lengths.tolist()
    n = log_probs.shape[1] if log_probs.dim() == 3 else 1
    if len(il) != n or len(tl) != n:
        raise RuntimeError(f"ctc_loss: expected {n} input_lengths and target_lengths (the batch "
                           f"size of log_probs {list(log_probs.shape)}), got {len(il)} and "
                           f"{len(tl)}")
    _check_ctc_targets(log_probs, targets, il, tl, blank)
    losses = _ctc_loss(log_probs, targets, il, tl, blank, zero_infinity)
    if reduction == "none":
        return losses
    if reduction == "sum":
        return losses.sum()
    denom = target_lengths.to(dtype=log_probs.dtype, device=log_probs.device).clamp(min=1)
    if losses.dim() == 0:
        return losses / denom.reshape(())
    return (losses / denom).mean()


def _check_ctc_targets(log_probs: Tensor, targets: Tensor, il: list, tl: list,
                       blank: int) -> None:
    """Lengths and targets that disagree raise (as PyTorch's), never read past the targets."""
    c = log_probs.shape[-1]
    if not 0 <= blank < c:
        raise RuntimeError(f"ctc_loss: blank must be in label range [0, {c}), got {blank}")
    for name, lengths in (("input_lengths", il), ("target_lengths", tl)):
        for v in lengths:
            if v < 0:
                raise RuntimeError(f"ctc_loss: Expected {name} to have value at least 0, but "
                                   f"got value {v}")
    if targets.dim() == 2:
        width = targets.shape[1]
        for v in tl:
            if v > width:
                raise RuntimeError(f"ctc_loss: Expected targets {list(targets.shape)} to have "
                                   f"size at least {v} at dimension 1 (target_lengths "
                                   f"{tl})")
    elif targets.dim() == 1:
        total = sum(tl)
        if targets.shape[0] != total:
            raise RuntimeError(f"ctc_loss: Expected concatenated targets to have size {total} "
                               f"(the sum of target_lengths {tl}) at dimension 0, but got "
                               f"size {targets.shape[0]}")
