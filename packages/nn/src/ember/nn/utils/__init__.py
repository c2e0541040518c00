"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, and ``rnn`` packing."""
from __future__ import annotations

from . import clip_grad, convert_parameters, rnn
from .clip_grad import *
from .convert_parameters import *

__all__ = ["rnn", *clip_grad.__all__, *convert_parameters.__all__]
