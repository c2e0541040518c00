"""Per-device kernel tables: raw arrays in, raw arrays out (no Tensor, no autograd).

``get(name, device_type)`` returns the kernel callable for ``"cpu"`` (NumPy arrays, Numba
kernels in :mod:`ember.tensor.kernels.cpu`) or ``"cuda"`` (CuPy arrays, kernels in
:mod:`ember.tensor.kernels.cuda`). Importing this package imports neither numba nor cupy: the
device module is imported the first time one of its kernels is asked for.

>>> from ember.tensor.kernels import get
>>> index_add = get("index_add", "cpu")
"""

from __future__ import annotations

import importlib
from typing import Any

from .cpu import _WHERE as _CPU_WHERE

__all__ = ["KERNEL_NAMES", "get"]

#: The kernels every device provides, in the CPU table's order (the one list of names).
KERNEL_NAMES: tuple[str, ...] = tuple(_CPU_WHERE)

_MODULES = {"cpu": "ember.tensor.kernels.cpu", "cuda": "ember.tensor.kernels.cuda"}
_CACHE: dict[tuple[str, str], Any] = {}


def _device_type(device_type: Any) -> str:
    """Normalize ``"cpu"``, ``"cuda"``, ``"cuda:1"`` or an array module (numpy / cupy)."""
    if not isinstance(device_type, str):
        module_name = getattr(device_type, "__name__", None)
        if module_name == "numpy":
            return "cpu"
        if module_name == "cupy":
            return "cuda"
        device_type = getattr(device_type, "type", device_type)  # a Device-like object
        if not isinstance(device_type, str):
            raise TypeError(
                f"kernels.get(): device_type must be 'cpu' or 'cuda', got {device_type!r}"
            )
    return device_type.split(":", 1)[0]


def get(name: str, device_type: str) -> Any:
    """Return the kernel ``name`` for ``device_type`` ("cpu" or "cuda").

    The device's kernel module is imported lazily; CPU kernels compile on their first call.
    """
    try:  # a repeated lookup, in the caller's own spelling (a module, "cuda:1"): one probe
        return _CACHE[(name, device_type)]
    except (KeyError, TypeError):  # TypeError: an unhashable device-like object
        pass
    if name not in KERNEL_NAMES:
        known = ", ".join(KERNEL_NAMES)
        raise ValueError(f"kernels.get(): unknown kernel {name!r}; known: {known}")
    dev = _device_type(device_type)
    fn = _CACHE.get((name, dev))
    if fn is None:
        if dev not in _MODULES:
            raise ValueError(
                f"kernels.get(): unknown device type {dev!r}; expected 'cpu' or 'cuda'"
            )
        module = importlib.import_module(_MODULES[dev])
        try:
            fn = getattr(module, name)
        except AttributeError:
            raise NotImplementedError(
                f"kernels.get(): kernel {name!r} is not implemented for device type {dev!r}"
            ) from None
        _CACHE[(name, dev)] = fn
    try:
        _CACHE[(name, device_type)] = fn
    except TypeError:
        pass
    return fn
