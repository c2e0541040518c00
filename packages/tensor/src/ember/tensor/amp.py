"""``ember.tensor.amp``: PyTorch's ``torch.amp``: :class:`autocast` and :class:`GradScaler`.

A training step in mixed precision::

    scaler = GradScaler("cpu")
    for x, y in data:
        opt.zero_grad()
        with autocast("cpu"):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)      # unscales the gradients; skips the step if one is inf or NaN
        scaler.update()       # backs the scale off after an overflow, grows it after a run

The scaler works with any optimizer that has ``param_groups`` (a list of dicts holding
``"params"``) and ``step()``, such as ember.optim's; this package does not import them.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import _dtype as D
from ._autocast import (
    autocast,
    clear_autocast_cache,
    get_autocast_dtype,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_dtype,
)
from ._tensor import Tensor

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
           "clear_autocast_cache", "custom_fwd", "custom_bwd"]

_READY, _UNSCALED, _STEPPED = 0, 1, 2


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast`` supports ``device_type`` ("cpu" and "cuda")."""
    return device_type.split(":", 1)[0] in ("cpu", "cuda")


def custom_fwd(fwd=None, *, device_type: str = "cpu", cast_inputs=None):
    """PyTorch's ``torch.amp.custom_fwd`` for a ``Function.forward``: with ``cast_inputs``
    the forward runs with autocast off on inputs cast to that dtype (inside a region)."""
    import functools

    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        if cast_inputs is None or not is_autocast_enabled(device_type):
            return fwd(*args, **kwargs)
        dt = D.to_dtype(cast_inputs)

        def cast(a):
            if isinstance(a, Tensor) and a.is_floating_point() and a.dtype is not D.float64:
                return a.to(dt)
            return a

        with autocast(device_type, enabled=False):
            return fwd(*(cast(a) for a in args), **{k: cast(v) for k, v in kwargs.items()})

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str = "cpu"):
    """PyTorch's ``torch.amp.custom_bwd``: backward runs with autocast off."""
    import functools

    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type, enabled=False):
            return bwd(*args, **kwargs)

    return decorate_bwd


class GradScaler:
    """Loss scaling for mixed-precision training (PyTorch's ``torch.amp.GradScaler``).

    ``scale(loss)`` multiplies by the current scale; ``unscale_(optimizer)`` divides that
    optimizer's gradients by it and notes whether any is inf or NaN; ``step(optimizer)`` calls
    ``optimizer.step()`` unless one was; ``update()`` multiplies the scale by
    ``backoff_factor`` after a skipped step, and by ``growth_factor`` after
    ``growth_interval`` consecutive good ones.

    >>> s = GradScaler("cpu", init_scale=8.0)
    >>> s.get_scale()
    8.0
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = str(device)
        self._enabled = bool(enabled)
        if self._enabled and self._device.split(":", 1)[0] == "cuda":
            from . import cuda

            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available."
                              "  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if not growth_factor > 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if not backoff_factor < 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._init_growth_tracker = 0
        self._scale: Tensor | None = None  # float32 scalar on the device, made lazily
        self._growth_tracker = 0
        self._per_optimizer: dict = {}

    # ---------------------------------------------------------------------------- helpers
    def _lazy_init(self, device) -> None:
        from ._creation import full

        self._scale = full((), self._init_scale, dtype=D.float32, device=device)
        self._growth_tracker = self._init_growth_tracker

    def _state(self, optimizer) -> dict:
        st = self._per_optimizer.get(id(optimizer))
        if st is None or st["opt"] is not optimizer:
            st = self._per_optimizer[id(optimizer)] = {"opt": optimizer, "stage": _READY,
                                                       "found_inf": None}
        return st

    def _scale_value(self) -> float:
        return float(self._scale._data) if self._scale is not None else self._init_scale

    # ------------------------------------------------------------------------------ API
    def is_enabled(self) -> bool:
        return self._enabled

    def scale(self, outputs):
        """``outputs`` (a tensor, or an iterable of them, nested) times the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init(outputs.device)
            return outputs * self._scale.to(device=outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _unscale_grads(self, optimizer, inv_scale: float, allow_fp16: bool) -> bool | None:
        """Divide the gradients by the scale in place; whether any is inf or NaN (None when
        the optimizer has no gradient: nothing was checked)."""
        found = None
        for g in _grads_of(optimizer):
            found = bool(found)
            if not allow_fp16 and g.dtype is D.float16:
                raise ValueError("Attempting to unscale FP16 gradients.")
            arr = g._data
            xp = np if arr.__class__ is np.ndarray else _array_module(arr)
            if not bool(xp.isfinite(arr.astype(np.float32) if arr.dtype == D.BF16_NP
                                    else arr).all()):
                found = True
            if arr.dtype == D.BF16_NP:
                arr[...] = (arr.astype(np.float32) * np.float32(inv_scale)).astype(arr.dtype)
            else:
                arr *= arr.dtype.type(inv_scale)
            g._bump()
        return found

    def unscale_(self, optimizer) -> None:
        """Divide ``optimizer``'s gradients by the scale (once per ``update()``), so that they
        can be clipped or inspected before ``step``."""
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if st["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise AssertionError("Attempted unscale_ but _scale is None.  This may indicate "
                                 "your script did not use scaler.scale(loss or outputs) "
                                 "earlier in the iteration.")
        # the reciprocal in float64, rounded to float32, as PyTorch's
        inv = float(np.float32(1.0 / np.float64(self._scale_value())))
        st["found_inf"] = self._unscale_grads(optimizer, inv, allow_fp16=False)
        st["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)`` unless the unscaled gradients hold inf or NaN
        (then the step is skipped and None returned)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        st = self._state(optimizer)
        if st["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] == _READY:
            self.unscale_(optimizer)
        if st["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not st["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        st["stage"] = _STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: ``new_scale`` if given (a float or a
        one-element tensor), else backed off after an inf/NaN, grown after
        ``growth_interval`` clean steps."""
        if not self._enabled:
            return
        if self._scale is None:
            return
        if new_scale is not None:
            if isinstance(new_scale, Tensor):
                if new_scale.numel() != 1:
                    raise ValueError("new_scale should be a float or a 1-element "
                                     "torch.cuda.FloatTensor or torch.FloatTensor with "
                                     "requires_grad=False.")
                v = float(new_scale.reshape(()).item())
            else:
                v = float(new_scale)
            self._scale._data[...] = np.float32(v)
        else:
            found = [st["found_inf"] for st in self._per_optimizer.values()
                     if st["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            s = np.float32(self._scale_value())
            if any(found):
                s = np.float32(s * np.float32(self._backoff_factor))
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = np.float32(s * np.float32(self._growth_factor))
                    if np.isfinite(grown):
                        s = grown
                    self._growth_tracker = 0
            self._scale._data[...] = s
        self._scale._bump()
        self._per_optimizer.clear()

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._scale_value()

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = int(new_interval)

    def _get_growth_tracker(self) -> int:
        return self._growth_tracker if self._scale is not None else self._init_growth_tracker

    def state_dict(self) -> dict:
        """``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
        ``_growth_tracker`` (empty when disabled), as PyTorch's."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            raise RuntimeError("Loading a state dict into a disabled GradScaler is not "
                               "supported.")
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale._data[...] = np.float32(self._init_scale)
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._scale is not None:
            self._growth_tracker = self._init_growth_tracker

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_per_optimizer"] = {}
        return state


def _grads_of(optimizer):
    """The dense gradients of the parameters ``optimizer`` updates (duck-typed: any object
    with ``param_groups``, a list of dicts holding ``"params"``)."""
    try:
        groups = optimizer.param_groups
    except AttributeError:
        raise TypeError(f"GradScaler: expected an optimizer with param_groups, got "
                        f"{type(optimizer).__name__}") from None
    seen = set()
    for group in groups:
        for p in group["params"]:
            g = getattr(p, "grad", None)
            if g is None or id(g) in seen or not isinstance(g, Tensor):
                continue
            seen.add(id(g))
            yield g


def _array_module(arr):
    from ._registry import array_module

    return array_module(arr)
