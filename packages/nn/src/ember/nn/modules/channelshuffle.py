"""``ChannelShuffle`` (PyTorch's ``torch.nn.modules.channelshuffle`` path)."""
from __future__ import annotations

from ember.tensor import Tensor

from .. import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """Interleave the channels of (N, C, *) input from ``groups`` groups (ShuffleNet).

    >>> import ember.tensor as et
    >>> ChannelShuffle(2)(et.arange(4.).view(1, 4, 1)).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
