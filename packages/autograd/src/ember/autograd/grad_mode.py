"""Grad modes: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

The flag is thread-local, like PyTorch's. Each is a context manager and a decorator.
"""
from __future__ import annotations

import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]


class _State(threading.local):
    enabled = True
    anomaly = False
    anomaly_check_nan = True


state = _State()


def is_grad_enabled() -> bool:
    """True when operations are being recorded for autograd (thread-local)."""
    return state.enabled


class _Mode:
    _value = True

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)() if not isinstance(self, set_grad_enabled) else \
                    set_grad_enabled(self._value):
                return fn(*args, **kwargs)
        return wrapper

    def __enter__(self):
        self._prev = state.enabled
        state.enabled = self._value
        return self

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False


class no_grad(_Mode):
    """Disable recording: ``with no_grad(): ...`` or ``@no_grad()``.

    >>> import ember.tensor as et
    >>> x = et.ones(2, requires_grad=True)
    >>> with no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    _value = False

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if callable(orig_func):  # used as @no_grad without parentheses
            return self(orig_func)
        return self

    def __init__(self, orig_func=None) -> None:
        pass


class enable_grad(_Mode):
    """Re-enable recording inside a ``no_grad`` block."""

    _value = True

    def __new__(cls, orig_func=None):
        self = super().__new__(cls)
        if callable(orig_func):
            return self(orig_func)
        return self

    def __init__(self, orig_func=None) -> None:
        pass


class set_grad_enabled(_Mode):
    """Set recording on or off: as a function call, a context manager or a decorator."""

    def __init__(self, mode: bool) -> None:
        self._prev = state.enabled
        self._value = bool(mode)
        state.enabled = self._value

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        state.enabled = self._prev
        return False

    def __call__(self, fn):
        state.enabled = self._prev
        value = self._value

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(value):
                return fn(*args, **kwargs)
        return wrapper


class inference_mode(no_grad):
    """Like ``no_grad`` (ember has no separate inference tensors)."""

    def __init__(self, mode: bool = True) -> None:
        self._value = not mode


def is_inference_mode_enabled() -> bool:
    return False
