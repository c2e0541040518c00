"""The one module that imports CuPy.

Everything else in ember reaches CuPy through here, so that ember imports and runs on machines
without CuPy or without a GPU (the pattern of Chainer's ``backends/cuda.py``).

- ``cupy``: the CuPy module, or None when it cannot be imported.
- ``available``: True when CuPy imports *and* at least one device answers a probe allocation.
  It is computed on first access, so importing ember never creates a CUDA context.
- ``device_count()``: the number of usable CUDA devices (0 without CuPy or a driver).
- ``require(op_name)``: returns the CuPy module, or raises a RuntimeError that names the op and
  the underlying import or driver error.
- ``memoize``: caches a kernel factory's result per device id.

Example::

    >>> from ember.tensor import _cupy
    >>> isinstance(_cupy.available, bool)
    True
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["cupy", "available", "device_count", "require", "memoize", "clear_memo",
           "special_functions"]

available: bool  # module attribute computed on first access by __getattr__ below (PEP 562)

_F = TypeVar("_F", bound=Callable[..., Any])

_INSTALL_HINT = (
    "CUDA is not available: install ember-tensor[cuda12] or [cuda13] "
    "and run on a machine with an NVIDIA GPU"
)

try:
    import cupy  # noqa: F401  (re-exported: this is the one place cupy is imported)
except Exception as _exc:  # ImportError, or a CUDA library that fails to load
    cupy = None
    _import_error: str | None = f"{type(_exc).__name__}: {_exc}"
else:
    _import_error = None

_lock = threading.Lock()
_probe: tuple[bool, str | None, int] | None = None  # (available, reason, device count)


def _run_probe() -> tuple[bool, str | None, int]:
    """Ask the driver for devices and allocate one element on each; cached after the first call."""
    global _probe
    if _probe is not None:
        return _probe
    with _lock:
        if _probe is not None:
            return _probe
        if cupy is None:
            _probe = (False, _import_error, 0)
            return _probe
        try:
            count = int(cupy.cuda.runtime.getDeviceCount())
        except Exception as exc:  # no driver, driver too old, no device
            _probe = (False, f"{type(exc).__name__}: {exc}", 0)
            return _probe
        usable = 0
        reason: str | None = None
        for dev in range(count):
            try:
                with cupy.cuda.Device(dev):
                    cupy.zeros(1, dtype=cupy.float32).sum().item()
                usable += 1
            except Exception as exc:  # a device that cannot allocate is not usable
                reason = reason or f"device {dev}: {type(exc).__name__}: {exc}"
        if usable == 0 and reason is None:
            reason = "no CUDA device found (cudaGetDeviceCount returned 0)"
        _probe = (usable > 0, None if usable > 0 else reason, usable)
        return _probe


def __getattr__(name: str) -> Any:
    # PEP 562: ``available`` is computed lazily so that importing ember touches no GPU.
    if name == "available":
        return _run_probe()[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def device_count() -> int:
    """Number of CUDA devices that answered the probe allocation (0 without CuPy or a GPU)."""
    return _run_probe()[2]


def unavailable_reason() -> str | None:
    """The import or driver error that makes CUDA unavailable, or None when it is available."""
    return _run_probe()[1]


def require(op_name: str) -> Any:
    """Return the CuPy module, or raise RuntimeError naming ``op_name`` and the reason.

    Example::

        >>> from ember.tensor import _cupy
        >>> try:
        ...     _cupy.require("index_add")
        ... except RuntimeError as e:
        ...     print(str(e).startswith("index_add: CUDA is not available"))
        ... else:
        ...     print(True)
        True
    """
    ok, reason, _ = _run_probe()
    if not ok:
        raise RuntimeError(f"{op_name}: {_INSTALL_HINT} ({reason})")
    return cupy


_memo_caches: list[dict] = []


def memoize(func: _F) -> _F:
    """Cache ``func(*args)`` per current CUDA device id (for kernel and module factories).

    Arguments must be hashable. Compiled CuPy modules belong to one device's context, so the
    device id is part of the key.
    """
    cache: dict = {}
    _memo_caches.append(cache)
    memo_lock = threading.Lock()

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        dev = cupy.cuda.runtime.getDevice() if cupy is not None else -1
        key = (dev, args, tuple(sorted(kwargs.items())))
        try:
            return cache[key]
        except KeyError:
            pass
        value = func(*args, **kwargs)
        with memo_lock:
            return cache.setdefault(key, value)

    return wrapper  # type: ignore[return-value]


def clear_memo() -> None:
    """Drop every memoized kernel factory result (e.g. after a device reset)."""
    for cache in _memo_caches:
        cache.clear()


def special_functions(op: str):
    """``cupyx.scipy.special`` (erf, erfc, erfinv on the GPU), imported here like CuPy."""
    require(op)
    import cupyx.scipy.special as special

    return special
