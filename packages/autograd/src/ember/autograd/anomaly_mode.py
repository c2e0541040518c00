"""``detect_anomaly``: record each op's creation traceback and add it to errors raised in
backward; fail on NaN produced by a backward function."""
from __future__ import annotations

import functools

from ember.tensor import is_anomaly_enabled
from ember.tensor.extension import grad_mode as state

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection (slow: for debugging)."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = True, self.check_nan
        return self

    def __exit__(self, *exc):
        state.anomaly, state.anomaly_check_nan = self._prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly(detect_anomaly):
    """Turn anomaly detection on or off (also usable as a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (state.anomaly, state.anomaly_check_nan)
        state.anomaly, state.anomaly_check_nan = bool(mode), check_nan

    def __enter__(self):
        return self

