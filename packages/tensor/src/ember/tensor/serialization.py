"""``ember.tensor.serialization``: PyTorch's ``torch.serialization`` names.

``save`` / ``load`` (also at ``ember.tensor.save`` / ``ember.tensor.load``) and the allowlist
that ``load(weights_only=True)`` consults for a checkpoint's pickled section:
``add_safe_globals``, ``get_safe_globals``, ``clear_safe_globals``, the ``safe_globals``
context manager and ``get_unsafe_globals_in_checkpoint``. The file format and the safety model
are described in ``ember.tensor._serialization``.

    >>> import argparse, io
    >>> import ember.tensor as et
    >>> from ember.tensor import serialization
    >>> buf = io.BytesIO()
    >>> et.save({"args": argparse.Namespace(lr=0.1)}, buf); _ = buf.seek(0)
    >>> with serialization.safe_globals([argparse.Namespace]):
    ...     et.load(buf)["args"].lr
    0.1
"""
from __future__ import annotations

from ._serialization import (
    DEFAULT_PROTOCOL,
    add_safe_globals,
    clear_safe_globals,
    get_safe_globals,
    get_unsafe_globals_in_checkpoint,
    load,
    safe_globals,
    save,
)

__all__ = ["DEFAULT_PROTOCOL", "save", "load", "add_safe_globals", "get_safe_globals",
           "clear_safe_globals", "safe_globals", "get_unsafe_globals_in_checkpoint"]
