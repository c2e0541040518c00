"""NumPy's floating-point warnings, off for the span of an op, at a sixth of ``np.errstate``'s cost.

PyTorch never warns about an overflow, a division by zero or an invalid operation: the inf or
nan is the op's result. NumPy warns unless its error state says to ignore them, and
``with np.errstate(all="ignore")`` costs about 1 us a use (it builds the state anew every
time), as much as a whole op on a small tensor. NumPy 2 keeps the error state in one context
variable (which is why ``errstate`` is thread- and async-safe); setting that variable to a
state built once, here, and resetting it with its token costs about 0.15 us and restores
exactly the state the caller had, nested or not.

The quiet state is built at import: during an op it carries the buffer size (:data:`BUFSIZE`)
and error callback of that moment (``np.setbufsize`` / ``np.seterrcall`` made later do not
apply inside ember's quiet ops; with every error ignored the callback is never called).

>>> import numpy as np
>>> with quiet():
...     float(np.float32(1) / np.float32(0))
inf
>>> quiet_call(np.log, np.float64(-1.0))
np.float64(nan)
"""

from __future__ import annotations

import functools

import numpy as np
from numpy._core._ufunc_config import _extobj_contextvar as _state  # NumPy >= 2.0

__all__ = ["quiet", "quiet_call", "quiet_begin", "quiet_end", "built_state", "call_in_state",
           "BUFSIZE"]

#: NumPy's ufunc buffer, in elements, for the thread that imports ember and for every quiet op:
#: a loop over a broadcast, strided or cast operand goes through this buffer, and NumPy's
#: default of 8192 elements makes it twice as slow as 1024 (256x1024 float32: a row broadcast
#: 67 -> 34 us, a column broadcast 80 -> 33, a strided operand 138 -> 88, float32 + float64
#: 164 -> 96; contiguous operands and small arrays alike). Values are the same, but for the
#: last bits of a float reduction that casts as it sums (its pairwise blocks follow the buffer).
BUFSIZE = 1024
np.setbufsize(BUFSIZE)

with np.errstate(all="ignore"):
    _QUIET = _state.get()

#: ``token = quiet_begin()`` ... ``quiet_end(token)`` (in a ``finally``): :func:`quiet_call`'s
#: two steps, for an op's hot path that runs more than one call quietly (no wrapper call)
quiet_begin = functools.partial(_state.set, _QUIET)
quiet_end = _state.reset


def quiet_call(f, *args, **kwargs):
    """``f(*args, **kwargs)`` with NumPy's floating-point warnings off."""
    token = quiet_begin()
    try:
        return f(*args, **kwargs)
    finally:
        quiet_end(token)


def built_state(**errstate):
    """NumPy's error state that ``np.errstate(**errstate)`` sets (``call=`` included), built
    once, for :func:`call_in_state` (``numpy.linalg`` raises LinAlgError through such a state:
    ``invalid="call"`` with a callback that raises)."""
    with np.errstate(**errstate):
        return _state.get()


def call_in_state(state, f, *args):
    """``f(*args)`` in the error state ``state`` (from :func:`built_state`), the caller's
    restored after."""
    token = _state.set(state)
    try:
        return f(*args)
    finally:
        _state.reset(token)


class quiet:
    """``with quiet():`` -- NumPy's floating-point warnings off for the block (a fresh object
    each use: the token that restores the caller's state lives on it)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _state.set(_QUIET)

    def __exit__(self, *exc) -> None:
        _state.reset(self._token)
