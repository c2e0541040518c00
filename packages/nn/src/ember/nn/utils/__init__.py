"""``ember.nn.utils``: gradient clipping, parameter/vector conversion, ``rnn`` packing,
``parametrize`` and ``parametrizations``, ``prune``, ``stateless.functional_call``, and the
legacy hook-based ``weight_norm`` and ``spectral_norm``."""
from __future__ import annotations

from . import clip_grad, convert_parameters, parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import *
from .convert_parameters import *
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["parametrizations", "parametrize", "prune", "rnn", "stateless", *clip_grad.__all__,
           *convert_parameters.__all__, "remove_spectral_norm", "spectral_norm",
           "remove_weight_norm", "weight_norm"]
