"""Grad modes and anomaly switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``, ``set_anomaly_enabled`` (PyTorch's ``torch.no_grad`` ...).

The flags are per thread, like PyTorch's, and live in the tensor core so that
``ember.tensor.no_grad`` works as ``torch.no_grad`` does; the recorder the autograd layer
installs reads them (``extension.grad_enabled``, ``extension.grad_mode``). Each mode is a
context manager and a decorator.

Grad mode itself, which every recorded call reads (the registry's grad test, the autograd
recorder), is a context variable: a new thread starts with it on, as with PyTorch's
thread-local flag, and ``grad_enabled()`` is one C call (a ``threading.local`` attribute read
costs twice its instructions, ~0.1 us a read). The rarely read switches stay thread-local.
"""
from __future__ import annotations

import contextvars
import functools
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
           "is_inference_mode_enabled", "set_anomaly_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]


_enabled = contextvars.ContextVar("ember.grad_enabled", default=True)
grad_enabled = _enabled.get  # () -> bool: is grad mode on (in this thread)
set_grad_flag = _enabled.set  # (bool): turn it on or off (the modes below restore it)


class _State(threading.local):
    inference = False
    anomaly = False
    anomaly_check_nan = True
    forward_ad = False  # a forward-AD level is open (ember.autograd.forward_ad sets it)


state = _State()


def grad_wanted(t) -> bool:
    """Whether a derivative of an op on ``t`` can be asked for: ``t`` requires grad with grad
    mode on, or a forward-AD level is open. What a function that takes a cheaper route with no
    derivative where none can be wanted (eigenvalues without their vectors) asks."""
    return (grad_enabled() and t.requires_grad) or state.forward_ad


def is_grad_enabled() -> bool:
    """True when operations are being recorded for autograd (per thread)."""
    return grad_enabled()


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``."""
    return state.inference


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Turn anomaly detection on or off (``ember.autograd.detect_anomaly`` for a scope)."""
    state.anomaly, state.anomaly_check_nan = bool(mode), bool(check_nan)


def is_anomaly_enabled() -> bool:
    return state.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return state.anomaly_check_nan


class _Mode:
    _value = True
    _inference = None  # None: leave the inference flag as it is

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._clone():
                return fn(*args, **kwargs)
        return wrapper

    def _clone(self):
        return type(self)()

    def __enter__(self):
        self._prev = (grad_enabled(), state.inference)
        set_grad_flag(self._value)
        if self._inference is not None:
            state.inference = self._inference
        return self

    def __exit__(self, *exc):
        set_grad_flag(self._prev[0])
        state.inference = self._prev[1]
        return False


class no_grad(_Mode):
    """Disable recording: ``with no_grad(): ...`` or ``@no_grad()``.

    >>> with no_grad():
    ...     print(is_grad_enabled())
    False
    >>> is_grad_enabled()
    True
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
        self._prev = (grad_enabled(), state.inference)
        self._value = bool(mode)
        set_grad_flag(self._value)

    def __enter__(self):
        return self

    def __call__(self, fn):
        set_grad_flag(self._prev[0])
        value = self._value

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(value):
                return fn(*args, **kwargs)
        return wrapper


class inference_mode(_Mode):
    """``no_grad`` that also reports itself through ``is_inference_mode_enabled()``;
    ``inference_mode(False)`` turns both back on inside an inference block. (ember keeps no
    separate inference tensors: their version-counter savings do not apply to NumPy
    arrays.)"""

    def __new__(cls, mode=True):
        self = super().__new__(cls)
        if callable(mode):  # used as @inference_mode without parentheses
            self.__init__()
            return self(mode)
        return self

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)
        self._value = not self.mode
        self._inference = self.mode

    def _clone(self):
        return inference_mode(self.mode)
