"""``ember.tensor.cuda``: PyTorch's ``torch.cuda`` helpers over CuPy.

Without CuPy or without a GPU, :func:`is_available` is False and every call that needs a
device raises a RuntimeError saying how to get one.
"""
from __future__ import annotations

__all__ = ["is_available", "device_count", "current_device", "set_device", "synchronize",
           "manual_seed", "manual_seed_all", "get_rng_state", "set_rng_state",
           "memory_allocated", "max_memory_allocated", "empty_cache", "device"]


def _cp(op: str):
    from . import _cupy

    return _cupy.require(op)


def is_available() -> bool:
    """True when CuPy imports and at least one CUDA device answers."""
    from . import _cupy

    return bool(_cupy.available)


def device_count() -> int:
    from . import _cupy

    return _cupy.device_count() if _cupy.available else 0


def current_device() -> int:
    return _cp("current_device").cuda.Device().id


def set_device(dev) -> None:
    from ._device import device as _dev

    idx = dev if isinstance(dev, int) else _dev(dev).index or 0
    _cp("set_device").cuda.Device(idx).use()


class device:
    """Context manager that makes a device current: ``with cuda.device(1): ...``."""

    def __init__(self, dev) -> None:
        from ._device import device as _dev

        self.idx = dev if isinstance(dev, int) else (_dev(dev).index or 0)
        self._ctx = None

    def __enter__(self):
        self._ctx = _cp("cuda.device").cuda.Device(self.idx)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def synchronize(dev=None) -> None:
    _cp("synchronize").cuda.Device().synchronize()


def _generator(op: str, dev):
    from ._device import device as _dev
    from ._random import _default_for

    _cp(op)
    d = _dev("cuda", dev) if isinstance(dev, int) else _dev(dev)
    if d.type != "cuda":
        raise RuntimeError(f"{op}(): expected a CUDA device, got {d}")
    return _default_for(d)


def get_rng_state(device="cuda"):
    """The state of ``device``'s CUDA generator, a uint8 tensor on the CPU."""
    return _generator("get_rng_state", device).get_state()


def set_rng_state(new_state, device="cuda") -> None:
    """Restore ``device``'s CUDA generator to ``new_state`` (from :func:`get_rng_state`)."""
    _generator("set_rng_state", device).set_state(new_state)


def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator (a no-op without a GPU, like PyTorch)."""
    if is_available():
        from ._random import cuda_manual_seed

        cuda_manual_seed(seed, all_devices=False)


def manual_seed_all(seed: int) -> None:
    """Seed the generator of every CUDA device (a no-op without a GPU, like PyTorch)."""
    if is_available():
        from ._random import cuda_manual_seed

        cuda_manual_seed(seed, all_devices=True)


def memory_allocated(dev=None) -> int:
    return _cp("memory_allocated").get_default_memory_pool().used_bytes()


def max_memory_allocated(dev=None) -> int:
    return _cp("max_memory_allocated").get_default_memory_pool().total_bytes()


def empty_cache() -> None:
    if is_available():
        _cp("empty_cache").get_default_memory_pool().free_all_blocks()
