"""The layer classes (``ember.nn.Linear``, ``ember.nn.Conv2d``, ...)."""
from __future__ import annotations

from . import (
    activation,
    adaptive,
    batchnorm,
    channelshuffle,
    container,
    conv,
    distance,
    dropout,
    flatten,
    fold,
    instancenorm,
    lazy,
    linear,
    loss,
    module,
    normalization,
    padding,
    pixelshuffle,
    pooling,
    rnn,
    sparse,
    transformer,
    upsampling,
    utils,
)
from .activation import *
from .adaptive import *
from .channelshuffle import *
from .container import *
from .conv import *
from .distance import *
from .dropout import *
from .flatten import *
from .fold import *
from .linear import *
from .loss import *
from .module import *
from .normalization import *
from .padding import *
from .pixelshuffle import *
from .pooling import *
from .rnn import *
from .sparse import *
from .transformer import *
from .upsampling import *

__all__ = [name for mod in (module, container, linear, flatten, activation, adaptive, conv, fold,
                            padding, pooling, normalization, dropout, distance, sparse,
                            transformer, loss, rnn, pixelshuffle, channelshuffle, upsampling)
           for name in mod.__all__]

# PyTorch keeps MultiheadAttention in torch.nn.modules.activation; programs import it there
activation.MultiheadAttention = transformer.MultiheadAttention
