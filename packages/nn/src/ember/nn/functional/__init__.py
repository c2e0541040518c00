"""``ember.nn.functional``: the stateless forms of the layers (``F.relu``, ``F.conv2d``,
``F.cross_entropy``, ...)."""
from __future__ import annotations

from . import (
    _activation,
    _attention,
    _conv,
    _distance,
    _dropout,
    _linear,
    _loss,
    _norm,
    _padding,
    _pool,
    _resample,
    _rnn,
    _sparse,
)
from ._activation import *
from ._attention import *
from ._conv import *
from ._distance import *
from ._dropout import *
from ._linear import *
from ._loss import *
from ._norm import *
from ._padding import *
from ._pool import *
from ._resample import *
from ._rnn import *
from ._sparse import *

__all__ = [name for mod in (_activation, _attention, _conv, _distance, _dropout, _linear,
                            _loss, _norm, _padding, _pool, _resample, _rnn, _sparse)
           for name in mod.__all__]
