"""Packed sequences: one batch of variable-length sequences with no padding in it.

A :class:`PackedSequence` stores the time steps of every sequence of a batch, sorted by
decreasing length, interleaved time-major: ``data`` holds step 0 of every sequence, then step 1
of every sequence that has one, and so on; ``batch_sizes[t]`` says how many sequences are still
running at step ``t``. The recurrent layers of :mod:`ember.nn` accept one and compute, at each
step, on only the first ``batch_sizes[t]`` rows.

    >>> import ember.tensor as et
    >>> from ember.nn.utils.rnn import pack_sequence, pad_packed_sequence
    >>> p = pack_sequence([et.tensor([1., 2., 3.]), et.tensor([4., 5.])])
    >>> p.data.tolist(), p.batch_sizes.tolist()
    ([1.0, 4.0, 2.0, 5.0, 3.0], [2, 2, 1])
    >>> pad_packed_sequence(p, batch_first=True)[0].tolist()
    [[1.0, 2.0, 3.0], [4.0, 5.0, 0.0]]

Every function here is differentiable with respect to the sequence values. Packing and
unpacking are the registry ops ``_pack_padded_sequence`` (returning ``(data, batch_sizes)``) and
``_pad_packed_sequence`` (PyTorch's aten names), one row gather or placement each, with their
derivatives in ember-autograd's table; an ONNX export traces them like any other op.
"""
from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Sequence

import numpy as np

import ember.autograd as ag
import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.extension import OPS

_pack_padded = OPS["_pack_padded_sequence"].public  # the registry ops (PyTorch's aten names)
_pad_packed = OPS["_pad_packed_sequence"].public

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
    "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence",
]


# --------------------------------------------------------------------------- row gathers
class _PlaceRows(ag.Function):
    """A ``(rows, *rest)`` tensor filled with ``value`` whose rows ``index`` are ``source``."""

    @staticmethod
    def forward(ctx, source: Tensor, index: Tensor, rows: int, value: float) -> Tensor:
        ctx.index = index
        out = et.full((rows, *source.shape[1:]), value, dtype=source.dtype,
                      device=source.device)
        return out.index_copy_(0, index, source)

    @staticmethod
    def backward(ctx, g: Tensor):
        return g.index_select(0, ctx.index), None, None, None


def _index_tensor(arr: np.ndarray, device) -> Tensor:
    return et.from_numpy(np.ascontiguousarray(arr, dtype=np.int64)).to(device)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation ``inv`` with ``inv[permutation[i]] = i`` (None stays None): the
    registry's ``argsort`` of it, so a trace follows it.

    >>> invert_permutation(et.tensor([2, 0, 1])).tolist()
    [1, 2, 0]
    """
    if permutation is None:
        return None
    return et.argsort(permutation)


# --------------------------------------------------------------------------- PackedSequence
_PackedSequenceBase = namedtuple(
    "_PackedSequenceBase", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])


class PackedSequence(_PackedSequenceBase):
    """The time steps of a batch of sequences of different lengths, without padding.

    ``data`` is ``(sum(lengths), *)``; ``batch_sizes`` (int64, always on the CPU) is the number
    of sequences still running at each step; ``sorted_indices`` maps the packed (sorted) batch
    positions to the original ones, ``unsorted_indices`` is its inverse (both None when the
    batch was already sorted). Build one with :func:`pack_padded_sequence` or
    :func:`pack_sequence` rather than by hand.

    >>> p = pack_sequence([et.tensor([1., 2.]), et.tensor([3.])])
    >>> p.batch_sizes.tolist(), p.sorted_indices
    ([2, 1], None)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None,
                sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise ValueError("PackedSequence: pass batch_sizes, or a (data, batch_sizes) "
                                 "pair as the first argument")
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = et.tensor(list(batch_sizes), dtype=et.int64)
        if batch_sizes.device.type != "cpu":
            raise ValueError("PackedSequence: batch_sizes should always be on the CPU; "
                             f"got a tensor on {batch_sizes.device}")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    # -- conversions ------------------------------------------------------------------
    def to(self, *args, **kwargs) -> PackedSequence:
        """Move or cast ``data`` like ``Tensor.to``; the indices follow data's device and
        ``batch_sizes`` stays on the CPU. Returns ``self`` when nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        idx = [None if i is None else i.to(dev) for i in (self.sorted_indices,
                                                           self.unsorted_indices)]
        return type(self)(data, self.batch_sizes, idx[0], idx[1])

    def cuda(self, *args, **kwargs) -> PackedSequence:
        return self.to(*(args or ("cuda",)), **kwargs)

    def cpu(self, *args, **kwargs) -> PackedSequence:
        return self.to("cpu", *args, **kwargs)

    def double(self) -> PackedSequence:
        return self.to(dtype=et.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=et.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=et.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=et.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=et.int32)

    def short(self) -> PackedSequence:
        return self.to(dtype=et.int16)

    def char(self) -> PackedSequence:
        return self.to(dtype=et.int8)

    def byte(self) -> PackedSequence:
        return self.to(dtype=et.uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"

    def is_pinned(self) -> bool:
        return False


# --------------------------------------------------------------------------- helpers
def _lengths_array(lengths, op: str) -> np.ndarray:
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"{op}: 'lengths' argument should be a 1D CPU int64 tensor, but "
                               f"got {lengths.dim()}D {lengths.device.type} tensor")
        arr = lengths.cpu().numpy()
    else:
        arr = np.asarray(lengths)
        if arr.ndim != 1:
            raise RuntimeError(f"{op}: 'lengths' should be a 1-D sequence of ints, got shape "
                               f"{list(arr.shape)}")
    if arr.dtype.kind not in "iufb":
        raise TypeError(f"{op}: 'lengths' should hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


# --------------------------------------------------------------------------- packing
def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` when ``batch_first``) of sequences
    whose true lengths are ``lengths``.

    With ``enforce_sorted`` (the default) the lengths must be sorted in decreasing order;
    otherwise the batch is sorted here (``sort``, ``index_select``) and the permutation kept in
    the result. The packing itself is the registry op ``_pack_padded_sequence`` (PyTorch's),
    which returns ``(data, batch_sizes)``.

    >>> x = et.tensor([[1., 4.], [2., 5.], [3., 0.]])
    >>> pack_padded_sequence(x, [3, 2]).data.tolist()
    [1.0, 4.0, 2.0, 5.0, 3.0]
    """
    op = "pack_padded_sequence"
    if isinstance(lengths, Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"{op}: 'lengths' argument should be a 1D CPU int64 tensor, but "
                               f"got {lengths.dim()}D {lengths.device.type} tensor")
        if lengths.dtype != et.int64:
            lengths = lengths.to(dtype=et.int64)
    else:
        lengths = et.from_numpy(_lengths_array(lengths, op))
    if input.dim() < 2:
        raise RuntimeError(f"{op}: input must have at least 2 dimensions (time and batch), got "
                           f"shape {list(input.shape)}")
    batch_dim = 0 if batch_first else 1
    if lengths.shape[0] != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lengths.shape[0]} (batch_size={input.shape[batch_dim]})")
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = et.sort(lengths, descending=True, stable=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(batch_dim, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, the batch back in
    its original order, padded with ``padding_value`` to ``total_length`` steps (default: the
    longest sequence). ``lengths`` is an int64 CPU tensor. The unpacking is the registry op
    ``_pad_packed_sequence`` (PyTorch's); an ``index_select`` restores the original order.

    >>> p = pack_sequence([et.tensor([1., 2.]), et.tensor([3.])])
    >>> padded, lengths = pad_packed_sequence(p, padding_value=-1.)
    >>> padded.tolist(), lengths.tolist()
    ([[1.0, 3.0], [2.0, -1.0]], [2, 1])
    """
    data, batch_sizes, sorted_indices, unsorted_indices = sequence
    max_seq_length = batch_sizes.shape[0]
    if total_length is not None and total_length < max_seq_length:
        raise ValueError(
            "Expected total_length to be at least the length of the longest sequence in "
            f"input, but got total_length={total_length} and max sequence length being "
            f"{max_seq_length}")
    # total_length <= 0: up to the longest sequence (PyTorch's kernel reads it so)
    padded, lengths = _pad_packed(data, batch_sizes, batch_first, padding_value,
                                  -1 if total_length is None else int(total_length))
    if unsorted_indices is None and sorted_indices is not None:
        unsorted_indices = invert_permutation(sorted_indices)
    if unsorted_indices is not None:
        padded = padded.index_select(0 if batch_first else 1, unsorted_indices)
        lengths = lengths.index_select(0, unsorted_indices.cpu())
    return padded, lengths


def pad_sequence(sequences: Iterable[Tensor], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Tensor:
    """Stack tensors ``(L_i, *)`` of different lengths into ``(T, B, *)`` (``(B, T, *)`` when
    ``batch_first``), padding with ``padding_value`` on ``padding_side`` ("right" or "left").

    >>> pad_sequence([et.tensor([1., 2.]), et.tensor([3.])], batch_first=True).tolist()
    [[1.0, 2.0], [3.0, 0.0]]
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    seqs = list(sequences.unbind(0) if isinstance(sequences, Tensor) else sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        if not isinstance(s, Tensor):
            raise TypeError(f"pad_sequence: expected a sequence of Tensors, got "
                            f"{type(s).__name__} at position {i}")
        if s.dim() == 0 or tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: every sequence must have shape (L, "
                               f"{', '.join(map(str, trailing)) or '...'}); sequence 0 has shape "
                               f"{list(seqs[0].shape)} and sequence {i} has shape "
                               f"{list(s.shape)}")
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    B, T = len(seqs), int(lens.max())
    b_idx = np.repeat(np.arange(B), lens)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    t_idx = np.arange(int(lens.sum())) - np.repeat(starts, lens)
    if padding_side == "left":
        t_idx = t_idx + np.repeat(T - lens, lens)
    pos = b_idx * T + t_idx if batch_first else t_idx * B + b_idx
    source = et.cat(seqs, 0)
    out = _PlaceRows.apply(source, _index_tensor(pos, source.device), T * B, padding_value)
    shape = (B, T) if batch_first else (T, B)
    return out.view(*shape, *trailing)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """Split a padded batch back into its sequences (views), the inverse of
    :func:`pad_sequence` with right padding.

    >>> [s.tolist() for s in unpad_sequence(et.tensor([[1., 3.], [2., 0.]]), [2, 1])]
    [[1.0, 2.0], [3.0]]
    """
    lens = _lengths_array(lengths, "unpad_sequence")
    x = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [x[i].narrow(0, 0, int(n)) for i, n in enumerate(lens)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors ``(L_i, *)``; with ``enforce_sorted`` they must come longest
    first.

    >>> pack_sequence([et.tensor([1.]), et.tensor([2., 3.])], enforce_sorted=False).data.tolist()
    [2.0, 1.0, 3.0]
    """
    seqs = list(sequences)
    lengths = [s.shape[0] if s.dim() else 0 for s in seqs]
    return pack_padded_sequence(pad_sequence(seqs), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences in a PackedSequence, in their original order.

    >>> p = pack_sequence([et.tensor([1.]), et.tensor([2., 3.])], enforce_sorted=False)
    >>> [s.tolist() for s in unpack_sequence(p)]
    [[1.0], [2.0, 3.0]]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
