"""``AdaptiveLogSoftmaxWithLoss`` (Grave et al., "Efficient softmax approximation for GPUs",
2016; PyTorch's ``torch.nn.AdaptiveLogSoftmaxWithLoss``): the frequent classes and one entry
per cluster of rarer classes share a head softmax; a cluster's classes get their own, smaller
softmax over a projection of the input that shrinks by ``div_value`` per cluster.

    >>> import ember.tensor as et
    >>> asm = AdaptiveLogSoftmaxWithLoss(16, 20, cutoffs=[5, 10])
    >>> out = asm(et.randn(4, 16), et.tensor([0, 7, 12, 19]))
    >>> out.output.shape, out.loss.shape
    (ember.Size([4]), ember.Size([]))
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

import ember.tensor as et
from ember.tensor import Tensor

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``forward(input, target)`` -> ``(output, loss)``: the log-probability of each row's
    target class and the mean negative log-likelihood; ``log_prob(input)``: every class's;
    ``predict(input)``: the most likely class. ``cutoffs``: increasing class indices where the
    clusters begin (the head holds the classes below ``cutoffs[0]``)."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(
                Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                Linear(hidden, size, bias=False, device=device, dtype=dtype)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for proj, out in self.tail:
            proj.reset_parameters()
            out.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        tdim = target_.dim()
        if tdim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif tdim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = tdim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        # the head entry of each row's class: the class itself in the shortlist, else the
        # entry of its cluster
        entry = target.clone()
        covered = (target >= 0) & (target < self.shortlist_size)
        tails = []
        for i, (lo, hi) in enumerate(zip(self.cutoffs[:-1], self.cutoffs[1:])):
            mask = (target >= lo) & (target < hi)
            covered = covered | mask
            rows = mask.nonzero().view(-1)
            if rows.numel():
                entry = entry.masked_fill(mask, self.shortlist_size + i)
                tails.append((i, lo, rows))
        if not bool(covered.all()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head_lp = F.log_softmax(self.head(input), dim=1)
        output = head_lp.gather(1, entry.unsqueeze(1)).squeeze(1)
        for i, lo, rows in tails:
            lp = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            rel = target.index_select(0, rows) - lo
            output = output.index_add(0, rows, lp.gather(1, rel.unsqueeze(1)).squeeze(1))
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_lp = F.log_softmax(head_output, dim=1)
        parts = [head_lp[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            lp = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(lp + head_lp[:, self.shortlist_size + i].unsqueeze(1))
        return et.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probability of every class: (N, in_features) -> (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row of (N, in_features): the head's own argmax where
        it is a shortlist class (no class of a cluster can be likelier than its cluster's head
        entry), else the argmax of the full distribution of the rows that need it."""
        head_output = self.head(input)
        best = et.argmax(head_output, dim=1)
        far = best >= self.shortlist_size
        if bool(far.any()):
            rows = far.nonzero().view(-1)
            sub = self._full_log_prob(input.index_select(0, rows),
                                      head_output.index_select(0, rows))
            best = best.index_copy(0, rows, et.argmax(sub, dim=1))
        return best
