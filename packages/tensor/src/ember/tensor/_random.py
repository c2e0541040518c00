"""Random sampling: generators, seeding, and PyTorch's sampling functions.

A :class:`Generator` on the CPU wraps a NumPy ``Generator(PCG64)``; the same seed always gives
the same numbers, but never PyTorch's numbers (PyTorch uses a Mersenne Twister and its own
transforms). Floating-point samples are drawn directly in float32 or float64 (NumPy's
``dtype=`` argument), so ``rand(n)`` allocates no float64 temporary; float16 is drawn in
float32 and cast.

A CUDA generator is counter based: its state is ``(seed, offset)`` like PyTorch's Philox state.
Every draw derives a fresh key from the pair and bumps the offset, so ``get_state`` /
``set_state`` replay exactly. Uniform and normal draws run on the GPU (cuRAND Philox through
CuPy); the other distributions are drawn on the host from the same key and copied over.

>>> g = Generator().manual_seed(0)
>>> a = rand(3, generator=g)
>>> b = rand(3, generator=Generator().manual_seed(0))
>>> bool((a._data == b._data).all())
True
"""
from __future__ import annotations

import contextlib
import numbers
import os

import numpy as np

from . import _dtype as D
from ._checks import check_inplace, int_bounds, scalar_type_name
from ._creation import _finish, _size, _size_kw, _xp
from ._device import device, to_device
from ._registry import array_module, defop, with_out
from ._tensor import Tensor, _device_of

__all__ = [
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "fork_rng", "rand", "rand_like", "randn", "randn_like", "randint",
    "randint_like", "randperm", "normal", "multinomial", "bernoulli", "poisson", "uniform_",
    "normal_", "bernoulli_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_",
    "binomial",
]

_DEFAULT_SEED = 67280421310721  # PyTorch's default CPU seed
_U64 = (1 << 64) - 1
_CPU_STATE_BYTES = 48  # seed (8) + PCG64 state (16) + inc (16) + has_uint32 (4) + uinteger (4)
_CUDA_STATE_BYTES = 16  # seed (8) + offset (8)


def _check_seed(seed) -> int:
    if isinstance(seed, Tensor):
        seed = seed.item()
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"manual_seed(): expected an int seed, got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise RuntimeError(
            f"Overflow when unpacking long: seed must be within the range "
            f"[-0x8000_0000_0000_0000, 0xffff_ffff_ffff_ffff], got {seed}")
    return seed & _U64  # PyTorch maps negative seeds to their unsigned 64-bit value


class Generator:
    """A random number generator for one device (``torch.Generator``).

    >>> g = Generator()
    >>> g.manual_seed(42).initial_seed()
    42
    """

    def __init__(self, device="cpu") -> None:
        self._device = to_device(device)
        if self._device.type == "cuda" and self._device.index is None:
            self._device = device_of_current_cuda()
        self._seed = _DEFAULT_SEED
        self._reset()

    def _reset(self) -> None:
        self._offset = 0
        if self._device.type == "cpu":
            self._np = np.random.Generator(np.random.PCG64(self._seed))

    @property
    def device(self) -> device:
        return self._device

    def manual_seed(self, seed) -> Generator:
        """Seed this generator and return it."""
        self._seed = _check_seed(seed)
        self._reset()
        return self

    def seed(self) -> int:
        """Seed from the OS entropy pool and return the seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Tensor:
        """The full state as a uint8 tensor (save it, or pass it to :meth:`set_state`)."""
        if self._device.type == "cpu":
            st = self._np.bit_generator.state
            raw = (self._seed.to_bytes(8, "little")
                   + st["state"]["state"].to_bytes(16, "little")
                   + st["state"]["inc"].to_bytes(16, "little")
                   + int(st["has_uint32"]).to_bytes(4, "little")
                   + int(st["uinteger"]).to_bytes(4, "little"))
        else:
            raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return Tensor._make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, new_state: Tensor) -> Generator:
        """Restore a state returned by :meth:`get_state`."""
        if not isinstance(new_state, Tensor):
            raise TypeError(
                f"set_state(): expected a uint8 Tensor, got {type(new_state).__name__}")
        if new_state.dtype is not D.uint8:
            raise RuntimeError(
                f"set_state(): expected a uint8 (ByteTensor) state, got {new_state.dtype}")
        raw = bytes(np.ascontiguousarray(_host(new_state._data)).reshape(-1))
        want = _CPU_STATE_BYTES if self._device.type == "cpu" else _CUDA_STATE_BYTES
        if len(raw) != want:
            raise RuntimeError(
                f"set_state(): RNG state is wrong size: expected {want} bytes for a "
                f"{self._device.type} generator, got {len(raw)}")
        self._seed = int.from_bytes(raw[:8], "little")
        if self._device.type == "cpu":
            bg = np.random.PCG64()
            bg.state = {
                "bit_generator": "PCG64",
                "state": {"state": int.from_bytes(raw[8:24], "little"),
                          "inc": int.from_bytes(raw[24:40], "little")},
                "has_uint32": int.from_bytes(raw[40:44], "little"),
                "uinteger": int.from_bytes(raw[44:48], "little"),
            }
            self._np = np.random.Generator(bg)
        else:
            self._offset = int.from_bytes(raw[8:16], "little")
        return self

    def __repr__(self) -> str:
        return f"<ember.Generator device={self._device}>"

    # ----------------------------------------------------------------- internal draws
    def _next_key(self) -> np.random.SeedSequence:
        key = np.random.SeedSequence([self._seed, self._offset])
        self._offset += 1
        return key

    def _host(self) -> np.random.Generator:
        """The NumPy generator that serves the next draw."""
        if self._device.type == "cpu":
            return self._np
        return np.random.Generator(np.random.PCG64(self._next_key()))

    def _cuda(self):
        """A cuRAND (Philox) CuPy RandomState keyed by the next (seed, offset)."""
        from . import _cupy

        cp = _cupy.require("random")
        key = int(self._next_key().generate_state(1, np.uint64)[0]) & ((1 << 63) - 1)
        rs = getattr(self, "_rs", None)
        if rs is None:
            with cp.cuda.Device(self._device.index or 0):
                rs = self._rs = cp.random.RandomState(
                    key, method=cp.cuda.curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
        else:
            rs.seed(key)
        return rs


def device_of_current_cuda() -> device:
    from . import _cupy

    cp = _cupy.require("Generator")
    return device("cuda", int(cp.cuda.runtime.getDevice()))


default_generator = Generator("cpu")
_cuda_generators: dict[int, Generator] = {}
_cuda_seed: list[int | None] = [None]  # the last manual_seed, applied to CUDA generators made later


def _default_for(dev: device) -> Generator:
    if dev.type == "cpu":
        return default_generator
    index = dev.index if dev.index is not None else device_of_current_cuda().index
    g = _cuda_generators.get(index)
    if g is None:
        g = _cuda_generators[index] = Generator(device("cuda", index))
        if _cuda_seed[0] is not None:
            g.manual_seed(_cuda_seed[0])
    return g


def _resolve(generator: Generator | None, dev: device, op: str) -> Generator:
    if generator is None:
        return _default_for(dev)
    if not isinstance(generator, Generator):
        raise TypeError(f"{op}(): generator must be an ember Generator, got "
                        f"{type(generator).__name__}")
    if generator.device.type != dev.type:
        raise RuntimeError(f"{op}(): Expected a '{dev.type}' device type for generator but "
                           f"found '{generator.device.type}'")
    return generator


def manual_seed(seed) -> Generator:
    """Seed the default CPU generator and every CUDA generator; returns the CPU one.

    >>> _ = manual_seed(0); a = rand(2); _ = manual_seed(0)
    >>> bool((rand(2)._data == a._data).all())
    True
    """
    s = _check_seed(seed)
    cuda_manual_seed(s, all_devices=True)
    return default_generator.manual_seed(s)


def cuda_manual_seed(seed, all_devices: bool) -> None:
    """``torch.cuda.manual_seed`` (the current device's generator) and ``manual_seed_all``
    (every device's, those made later too)."""
    s = _check_seed(seed)
    if not all_devices:
        _default_for(device_of_current_cuda()).manual_seed(s)
        return
    _cuda_seed[0] = s
    for g in _cuda_generators.values():
        g.manual_seed(s)


def seed() -> int:
    """Seed every generator from the OS entropy pool and return the seed."""
    s = default_generator.seed()
    manual_seed(s)
    return s


def initial_seed() -> int:
    """The seed of the default CPU generator."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default CPU generator's state as a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Restore the default CPU generator's state."""
    default_generator.set_state(new_state)


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True):
    """Restore the CPU (and the listed CUDA devices') generator states on exit."""
    if not enabled:
        yield
        return
    cuda = list(_cuda_generators) if devices is None else [
        to_device(d).index or 0 if not isinstance(d, int) else d for d in devices]
    saved = [(default_generator, default_generator.get_state())]
    saved += [(_default_for(device("cuda", i)), None) for i in cuda]
    saved = [(g, s if s is not None else g.get_state()) for g, s in saved]
    try:
        yield
    finally:
        for g, s in saved:
            g.set_state(s)


# --------------------------------------------------------------------------- helpers
def _host(arr):
    return arr if isinstance(arr, np.ndarray) else arr.get()


def _float_dtype(dtype, op: str, complex_ok: bool = False) -> D.dtype:
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype, op)
    if not (dt.is_floating_point or (complex_ok and dt.is_complex)):
        raise RuntimeError(f"{op}(): expected a floating-point dtype, got {dt}")
    return dt


def _complex_draw(draw, shape, dt: D.dtype, scale: float):
    """Samples of a complex dtype: real and imaginary parts drawn independently by
    ``draw(shape, real np dtype)``, each times ``scale``."""
    parts = draw(tuple(shape) + (2,), dt.to_real().np)
    if scale != 1.0:
        parts *= scale
    return parts.view(dt.np)[..., 0]


def _draw_dtype(np_dtype: np.dtype) -> np.dtype:
    """The dtype NumPy can draw in directly: float32 for float16 and bfloat16, else as is."""
    return np.dtype(np.float32) if np_dtype == np.float16 or np_dtype == D.BF16_NP \
        else np_dtype


def _to_dev(arr, dev: device):
    if dev.type == "cpu":
        return arr
    return _xp(dev).asarray(arr)


def _uniform(g: Generator, dev: device, shape, np_dtype, low=0.0, high=1.0):
    """Uniform samples in ``[low, high)`` as an array of ``np_dtype`` on ``dev``."""
    np_dtype = np.dtype(np_dtype)
    draw = _draw_dtype(np_dtype)
    if dev.type == "cpu":
        arr = g._host().random(shape, dtype=draw)
    else:
        rs = g._cuda()
        with _xp(dev).cuda.Device(dev.index or 0):
            arr = rs.random_sample(shape, dtype=draw)
    if np_dtype == np.float16:
        # keep 11 random bits so that the cast cannot round up to 1.0 (float16's mantissa)
        arr *= 2048.0
        array_module(arr).floor(arr, out=arr)
        arr *= 1.0 / 2048.0
    elif np_dtype == D.BF16_NP:
        arr *= 256.0  # 8 random bits: bfloat16's mantissa, never rounding up to 1.0
        array_module(arr).floor(arr, out=arr)
        arr *= 1.0 / 256.0
    if low != 0.0 or high != 1.0:
        arr *= high - low
        arr += low
    return arr if draw == np_dtype else arr.astype(np_dtype)


def _std_normal(g: Generator, dev: device, shape, np_dtype):
    np_dtype = np.dtype(np_dtype)
    draw = _draw_dtype(np_dtype)
    if dev.type == "cpu":
        arr = g._host().standard_normal(shape, dtype=draw)
    else:
        rs = g._cuda()
        with _xp(dev).cuda.Device(dev.index or 0):
            arr = rs.standard_normal(shape, dtype=draw)
    return arr if draw == np_dtype else arr.astype(np_dtype)


def _host_draw(g: Generator, dev: device, fn):
    """Run ``fn(numpy_generator)`` on the host and move the result to ``dev``."""
    return _to_dev(fn(g._host()), dev)


def _integers(g: Generator, dev: device, low: int, high_incl: int, shape, np_dtype):
    np_dtype = np.dtype(np_dtype)
    draw = np_dtype if np_dtype.kind in "iub" else np.dtype(np.int64)
    if draw.kind == "b":
        draw = np.dtype(np.uint8)
    arr = _host_draw(g, dev, lambda r: r.integers(low, high_incl, shape, dtype=draw,
                                                  endpoint=True))
    return arr if arr.dtype == np_dtype else arr.astype(np_dtype)


def _check_float_tensor(t: Tensor, op: str, complex_ok: bool = False) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(t).__name__}")
    if not (t.dtype.is_floating_point or (complex_ok and t.dtype.is_complex)):
        raise RuntimeError(f"{op}(): expected a floating-point tensor, got {t.dtype}")


def _write(t: Tensor, arr) -> Tensor:
    t._data[...] = arr
    t._bump()
    return t


def _scalar(v, op: str, name: str) -> float:
    if isinstance(v, Tensor):
        v = v.item()
    if not isinstance(v, numbers.Real):
        raise TypeError(f"{op}(): argument '{name}' must be a number, not {type(v).__name__}")
    return v


# --------------------------------------------------------------------------- factories
@with_out(factory=True)
def rand(*sizes, size=None, generator: Generator | None = None, dtype=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples from ``[0, 1)``; ``rand(2, 3)``, ``rand((2, 3))`` or
    ``rand(size=(2, 3))``.

    >>> rand(2, 3).shape
    ember.Size([2, 3])
    """
    shape = _size(_size_kw(sizes, size, "rand"), "rand")
    dt = _float_dtype(dtype, "rand", complex_ok=True)
    dev = to_device(device)
    g = _resolve(generator, dev, "rand")
    if dt.is_complex:  # each part uniform on [0, 1), as in PyTorch
        return _finish(_complex_draw(lambda sh, d: _uniform(g, dev, sh, d), shape, dt, 1.0),
                       requires_grad)
    return _finish(_uniform(g, dev, shape, dt.np), requires_grad)


@with_out(factory=True)
def randn(*sizes, size=None, generator: Generator | None = None, dtype=None, device=None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples (``size=`` as for :func:`rand`).

    >>> randn(4, dtype=D.float64).dtype
    ember.float64
    """
    shape = _size(_size_kw(sizes, size, "randn"), "randn")
    dt = _float_dtype(dtype, "randn", complex_ok=True)
    dev = to_device(device)
    g = _resolve(generator, dev, "randn")
    if dt.is_complex:  # E|z|^2 = 1: each part has variance 1/2, as in PyTorch
        return _finish(_complex_draw(lambda sh, d: _std_normal(g, dev, sh, d), shape, dt,
                                     0.5 ** 0.5), requires_grad)
    return _finish(_std_normal(g, dev, shape, dt.np), requires_grad)


def _like(input: Tensor, dtype, device, op: str):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return (tuple(input._data.shape), input.dtype if dtype is None else dtype,
            input.device if device is None else device)


def rand_like(input: Tensor, *, generator: Generator | None = None, dtype=None, device=None,
              requires_grad: bool = False, memory_format=None) -> Tensor:
    """:func:`rand` with the shape, dtype and device of ``input``."""
    shape, dt, dev = _like(input, dtype, device, "rand_like")
    return rand(shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def randn_like(input: Tensor, *, generator: Generator | None = None, dtype=None, device=None,
               requires_grad: bool = False, memory_format=None) -> Tensor:
    """:func:`randn` with the shape, dtype and device of ``input``."""
    shape, dt, dev = _like(input, dtype, device, "randn_like")
    return randn(shape, generator=generator, dtype=dt, device=dev, requires_grad=requires_grad)


def _int_bounds(dt: D.dtype) -> tuple[int, int]:
    """The inclusive range ``random_`` may produce for a dtype."""
    if dt is D.bool:
        return 0, 1
    if dt.is_floating_point:
        return -(1 << (np.finfo(dt.np).nmant + 1)), 1 << (np.finfo(dt.np).nmant + 1)
    return int_bounds(dt.np)


def _check_range(low: int, high: int, dt: D.dtype) -> None:
    """PyTorch's random_ checks for ``[low, high)``."""
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    lo, hi = _int_bounds(dt)
    if low < lo or low > hi:
        raise RuntimeError(
            f"random_ expects 'from' to be within the range of {dt} [{lo}, {hi}], "
            f"but got from={low}")
    if high - 1 > hi:
        raise RuntimeError(
            f"random_ expects 'to' to be at most {hi + 1} for {dt}, but got to={high}")


def _as_int(v, op: str, name: str) -> int:
    if isinstance(v, Tensor):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(v).__name__}")
    return int(v)


@with_out(factory=True)
def randint(low=0, high=None, size=None, *, generator: Generator | None = None, dtype=None,
            device=None, requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from ``[low, high)``: ``randint(high, size)`` or
    ``randint(low, high, size)``; int64 unless ``dtype`` says otherwise.

    >>> randint(3, 5, (4,)).dtype
    ember.int64
    """
    if size is None and isinstance(high, (tuple, list)):
        low, high, size = 0, low, high
    elif high is None and size is not None:
        low, high = 0, low  # randint(high, size=...)
    if high is None or size is None:
        raise TypeError("randint(): expected randint(high, size) or randint(low, high, size)")
    low, high = _as_int(low, "randint", "low"), _as_int(high, "randint", "high")
    shape = _size((size,) if isinstance(size, numbers.Integral) else tuple(size), "randint")
    dt = D.int64 if dtype is None else D.to_dtype(dtype, "randint")
    _check_range(low, high, dt)
    dev = to_device(device)
    g = _resolve(generator, dev, "randint")
    return _finish(_integers(g, dev, low, high - 1, shape, dt.np), requires_grad)


def randint_like(input: Tensor, low=0, high=None, *, generator: Generator | None = None,
                 dtype=None, device=None, requires_grad: bool = False,
                 memory_format=None) -> Tensor:
    """:func:`randint` with the shape, dtype and device of ``input``:
    ``randint_like(x, high)`` or ``randint_like(x, low, high)``."""
    if high is None:
        low, high = 0, low
    shape, dt, dev = _like(input, dtype, device, "randint_like")
    return randint(low, high, shape, generator=generator, dtype=dt, device=dev,
                   requires_grad=requires_grad)


@with_out(factory=True)
def randperm(n: int, *, generator: Generator | None = None, dtype=D.int64, device=None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1``.

    >>> sorted(randperm(4).tolist())
    [0, 1, 2, 3]
    """
    n = _as_int(n, "randperm", "n")
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    dt = D.to_dtype(dtype, "randperm")
    if n > 0 and n - 1 > _int_bounds(dt)[1]:
        raise RuntimeError(f"randperm(): n={n} is too large for result tensor type {dt}")
    dev = to_device(device)
    g = _resolve(generator, dev, "randperm")
    arr = _host_draw(g, dev, lambda r: r.permutation(n))
    return _finish(arr.astype(dt.np, copy=False), requires_grad)


@with_out(factory=True)
def normal(mean=0.0, std=1.0, size=None, *, generator: Generator | None = None, dtype=None,
           device=None, requires_grad: bool = False) -> Tensor:
    """Normal samples: ``normal(mean_tensor, std_tensor)`` (broadcast), ``normal(mean_tensor,
    std=1.0)``, ``normal(mean, std_tensor)``, or ``normal(mean, std, size)`` for floats.

    >>> normal(2.0, 0.5, (3,)).shape
    ember.Size([3])
    """
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal(): with float mean and std, 'size' is required: "
                            "normal(mean, std, size)")
        mean, std = _scalar(mean, "normal", "mean"), _scalar(std, "normal", "std")
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        shape = _size((size,) if isinstance(size, numbers.Integral) else tuple(size), "normal")
        dt = _float_dtype(dtype, "normal")
        dev = to_device(device)
        g = _resolve(generator, dev, "normal")
        arr = _std_normal(g, dev, shape, dt.np)
        if std != 1.0:
            arr *= std
        if mean != 0.0:
            arr += mean
        return _finish(arr, requires_grad)
    if size is not None:
        raise TypeError("normal(): 'size' is only accepted with float mean and std")
    tensors = [t for t in (mean, std) if isinstance(t, Tensor)]
    for t in tensors:
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"normal(): expected floating-point mean and std, got {t.dtype}")
    dt = tensors[0].dtype if len(tensors) == 1 else D.promote_types(mean.dtype, std.dtype)
    dev = tensors[0].device
    if len(tensors) == 2 and std.device != dev:
        raise RuntimeError(f"normal(): Expected all tensors to be on the same device, but found "
                           f"at least two devices, {dev} and {std.device}!")
    xp = array_module(tensors[0]._data)
    m = mean._data if mt else _scalar(mean, "normal", "mean")
    s = std._data if st else _scalar(std, "normal", "std")
    if st:
        if s.size and bool((s < 0).any()):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif s < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {s}")
    shape = xp.broadcast_shapes(*(t._data.shape for t in tensors)) if len(tensors) == 2 \
        else tensors[0]._data.shape
    g = _resolve(generator, dev, "normal")
    z = _std_normal(g, dev, shape, dt.np)
    z *= s
    z += m
    return _finish(z, requires_grad)


# --------------------------------------------------------------------------- ops on tensors
@defop("bernoulli", differentiable=False, out=True, out_casting="unsafe")
def bernoulli(input: Tensor, p=None, *, generator: Generator | None = None) -> Tensor:
    """0/1 draws with probabilities ``input`` (or a float ``p``), in ``input``'s dtype.

    >>> from ember.tensor import tensor
    >>> bernoulli(tensor([0.0, 1.0])).tolist()
    [0.0, 1.0]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    out = Tensor._make(array_module(input._data).empty(input._data.shape, input._data.dtype))
    return _bernoulli_into(out, input if p is None else p, generator, "bernoulli")


def _bernoulli_into(out: Tensor, p, generator, op: str) -> Tensor:
    dev = _device_of(out._data)
    g = _resolve(generator, dev, op)
    draw = np.float64 if out._data.dtype == np.float64 or out._data.dtype.kind != "f" \
        else np.float32
    if isinstance(p, Tensor):
        pd = p._data
        if _device_of(pd) != dev:
            raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but "
                               f"found at least two devices, {dev} and {_device_of(pd)}!")
        if pd.size and bool(((pd < 0) | (pd > 1) | (pd != pd)).any()):
            raise RuntimeError(f"{op}(): Expected p_in >= 0 && p_in <= 1 to be true, but got "
                               "false (probabilities must lie in [0, 1])")
    else:
        pd = _scalar(p, op, "p")
        if not 0 <= pd <= 1:
            raise RuntimeError(f"{op}_ expects p to be in [0, 1], but got p={pd}")
    u = _uniform(g, dev, out._data.shape, draw)
    out._data[...] = u < pd
    return out


@defop("multinomial", differentiable=False, out=True, out_casting="no")
def multinomial(input: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Category indices (int64) drawn from the rows of ``input`` (unnormalized weights).

    >>> from ember.tensor import tensor
    >>> multinomial(tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dim() not in (1, 2):
        raise RuntimeError(f"multinomial(): prob_dist must be 1 or 2 dim, got {input.dim()}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype}")
    num_samples = _as_int(num_samples, "multinomial", "num_samples")
    if num_samples <= 0:
        raise RuntimeError("multinomial(): cannot sample n_sample <= 0 samples")
    n_cat = input._data.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError(f"multinomial(): cannot sample n_sample > prob_dist.size(-1) samples "
                           f"without replacement (n_sample={num_samples}, "
                           f"prob_dist.size(-1)={n_cat})")
    dev = input.device
    g = _resolve(generator, dev, "multinomial")
    xp = array_module(input._data)
    p = input._data.reshape(-1, n_cat).astype(np.float64)
    rows = p.shape[0]
    if p.size and bool((~xp.isfinite(p) | (p < 0)).any()):
        raise RuntimeError("multinomial(): probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    if rows and bool((p.sum(axis=1) <= 0).any()):
        raise RuntimeError("multinomial(): invalid multinomial distribution (sum of "
                           "probabilities <= 0)")
    if not replacement and rows and int((p > 0).sum(axis=1).min()) < num_samples:
        raise RuntimeError("multinomial(): invalid multinomial distribution (with "
                           "replacement=False, not enough non-negative category to sample)")
    if replacement:
        cdf = xp.cumsum(p, axis=1)
        u = _uniform(g, dev, (rows, num_samples), np.float64) * cdf[:, -1:]
        # the first category whose cumulative weight exceeds u: zero-weight categories are
        # never chosen; clip float round-off onto the last category with weight.
        last = n_cat - 1 - xp.argmax(p[:, ::-1] > 0, axis=1)
        if rows * n_cat * num_samples <= 1 << 22:
            idx = (cdf[:, None, :] <= u[:, :, None]).sum(axis=2)
        else:
            idx = xp.stack([xp.searchsorted(cdf[r], u[r], side="right") for r in range(rows)])
        out = xp.minimum(idx, last[:, None])
    else:
        # exponential race (Gumbel top-k): keys p / E with E ~ Exp(1); the num_samples largest
        e = _host_draw(g, dev, lambda r: r.standard_exponential((rows, n_cat)))
        keys = xp.where(p > 0, p / e, -1.0)
        out = xp.argsort(-keys, axis=1)[:, :num_samples]
    out = out.astype(np.int64)
    return Tensor._make(out.reshape(num_samples) if input.dim() == 1 else out)


@defop("poisson", differentiable=False)
def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Poisson draws with rates ``input``, in ``input``'s dtype."""
    _check_float_tensor(input, "poisson")
    lam = input._data
    if lam.size and bool(((lam < 0) | (lam != lam)).any()):
        raise RuntimeError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    dev = input.device
    g = _resolve(generator, dev, "poisson")
    host = _host(lam).astype(np.float64)
    return Tensor._make(_host_draw(g, dev, lambda r: r.poisson(host)).astype(lam.dtype))


@defop("binomial", differentiable=False)
def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Binomial draws: the number of successes in ``count`` trials of probability ``prob``
    (broadcast; floating tensors, the result in ``count``'s dtype)."""
    if not isinstance(count, Tensor) or not isinstance(prob, Tensor):
        bad, name = (count, "count") if not isinstance(count, Tensor) else (prob, "prob")
        raise TypeError(f"binomial(): argument '{name}' must be Tensor, not "
                        f"{type(bad).__name__}")
    n, p = count._data, prob._data
    if n.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{scalar_type_name(n.dtype)}")
    if p.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for prob, got: "
                         f"{scalar_type_name(p.dtype)}")
    shape = np.broadcast_shapes(n.shape, p.shape)
    hn, hp = _host(n).astype(np.float64), _host(p).astype(np.float64)
    if hp.size and bool(((hp < 0) | (hp > 1) | (hp != hp)).any()):
        raise RuntimeError("binomial(): expected 0 <= prob <= 1")
    if hn.size and bool(((hn < 0) | (hn != hn)).any()):
        raise RuntimeError("binomial(): expected count >= 0")
    dev = count.device
    g = _resolve(generator, dev, "binomial")
    hn, hp = np.broadcast_to(hn, shape), np.broadcast_to(hp, shape)
    return Tensor._make(_host_draw(g, dev, lambda r: r.binomial(hn.astype(np.int64), hp))
                        .astype(n.dtype))


# --------------------------------------------------------------------------- in-place samplers
def _from_kw(from_, kwargs, op: str):
    if "from" in kwargs:
        from_ = kwargs.pop("from")
    if kwargs:
        raise TypeError(f"{op}() got unexpected keyword arguments {sorted(kwargs)}")
    return from_


@defop("uniform_", differentiable=False, inplace=True)
def uniform_(input: Tensor, from_: float = 0.0, to: float = 1.0, *,
             generator: Generator | None = None, **kwargs) -> Tensor:
    """Fill ``input`` with uniform samples from ``[from, to)``.

    >>> t = rand(3); bool(((uniform_(t, 2, 3)._data >= 2)).all())
    True
    """
    check_inplace(input, "uniform_")
    from_ = _scalar(_from_kw(from_, kwargs, "uniform_"), "uniform_", "from")
    to = _scalar(to, "uniform_", "to")
    _check_float_tensor(input, "uniform_", complex_ok=True)
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={from_} > to={to}")
    g = _resolve(generator, input.device, "uniform_")
    if input.is_complex():  # each part uniform on [from, to), as in PyTorch
        draw = lambda shape, dt: _uniform(g, input.device, shape, dt, from_, to)  # noqa: E731
        return _write(input, _complex_draw(draw, input._data.shape, input.dtype, 1.0))
    return _write(input, _uniform(g, input.device, input._data.shape, input._data.dtype,
                                  from_, to))


@defop("normal_", differentiable=False, inplace=True)
def normal_(input: Tensor, mean: float = 0.0, std: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill ``input`` with normal samples."""
    check_inplace(input, "normal_")
    mean, std = _scalar(mean, "normal_", "mean"), _scalar(std, "normal_", "std")
    _check_float_tensor(input, "normal_", complex_ok=True)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    g = _resolve(generator, input.device, "normal_")
    if input.is_complex():  # each part has variance std**2 / 2, as in PyTorch
        draw = lambda shape, dt: _std_normal(g, input.device, shape, dt)  # noqa: E731
        return _write(input, _complex_draw(draw, input._data.shape, input.dtype,
                                           std * 0.5 ** 0.5) + complex(mean, mean))
    arr = _std_normal(g, input.device, input._data.shape, input._data.dtype)
    if std != 1.0:
        arr *= std
    if mean != 0.0:
        arr += mean
    return _write(input, arr)


@defop("bernoulli_", differentiable=False, inplace=True)
def bernoulli_(input: Tensor, p=0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill ``input`` with 0/1 draws of probability ``p`` (a float or a tensor)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli_(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    check_inplace(input, "bernoulli_")
    out = Tensor._make(array_module(input._data).empty(input._data.shape, input._data.dtype))
    if isinstance(p, Tensor):
        p = Tensor._make(array_module(p._data).broadcast_to(p._data, input._data.shape))
    _bernoulli_into(out, p, generator, "bernoulli")
    return _write(input, out._data)


@defop("random_", differentiable=False, inplace=True)
def random_(input: Tensor, from_=None, to=None, *, generator: Generator | None = None,
            **kwargs) -> Tensor:
    """Fill ``input`` with integers from ``[from, to)``: ``random_()`` covers the dtype's range
    (``[0, 2**mantissa]`` for floats), ``random_(to)`` means ``[0, to)``."""
    from_is_keyword = "from" in kwargs
    from_ = _from_kw(from_, kwargs, "random_")
    if not isinstance(input, Tensor):
        raise TypeError(f"random_(): argument 'input' must be Tensor, not {type(input).__name__}")
    check_inplace(input, "random_")
    dt = input.dtype
    hi_dt = _int_bounds(dt)[1]
    if from_ is not None and to is None and not from_is_keyword:
        low, high = 0, _as_int(from_, "random_", "to")
    elif from_ is None:
        low, high = 0, hi_dt + 1
    else:
        low = _as_int(from_, "random_", "from")
        high = hi_dt + 1 if to is None else _as_int(to, "random_", "to")
    _check_range(low, high, dt)
    g = _resolve(generator, input.device, "random_")
    return _write(input, _integers(g, input.device, low, high - 1, input._data.shape,
                                   input._data.dtype))


@defop("exponential_", differentiable=False, inplace=True)
def exponential_(input: Tensor, lambd: float = 1.0, *,
                 generator: Generator | None = None) -> Tensor:
    """Fill ``input`` with exponential samples of rate ``lambd``."""
    check_inplace(input, "exponential_")
    lambd = _scalar(lambd, "exponential_", "lambd")
    _check_float_tensor(input, "exponential_")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    g = _resolve(generator, input.device, "exponential_")
    draw = _draw_dtype(input._data.dtype)
    arr = _host_draw(g, input.device,
                     lambda r: r.standard_exponential(input._data.shape, dtype=draw))
    if lambd != 1.0:
        arr /= lambd
    return _write(input, arr)


@defop("geometric_", differentiable=False, inplace=True)
def geometric_(input: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill ``input`` with geometric samples (trials until the first success, >= 1)."""
    check_inplace(input, "geometric_")
    p = _scalar(p, "geometric_", "p")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if not isinstance(input, Tensor):
        raise TypeError(f"geometric_(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    g = _resolve(generator, input.device, "geometric_")
    return _write(input, _host_draw(g, input.device,
                                    lambda r: r.geometric(p, input._data.shape)))


@defop("cauchy_", differentiable=False, inplace=True)
def cauchy_(input: Tensor, median: float = 0.0, sigma: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fill ``input`` with Cauchy samples."""
    check_inplace(input, "cauchy_")
    median, sigma = _scalar(median, "cauchy_", "median"), _scalar(sigma, "cauchy_", "sigma")
    _check_float_tensor(input, "cauchy_")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    g = _resolve(generator, input.device, "cauchy_")
    arr = _host_draw(g, input.device, lambda r: r.standard_cauchy(input._data.shape))
    return _write(input, arr * sigma + median)


@defop("log_normal_", differentiable=False, inplace=True)
def log_normal_(input: Tensor, mean: float = 1.0, std: float = 2.0, *,
                generator: Generator | None = None) -> Tensor:
    """Fill ``input`` with ``exp(N(mean, std))`` samples."""
    check_inplace(input, "log_normal_")
    mean, std = _scalar(mean, "log_normal_", "mean"), _scalar(std, "log_normal_", "std")
    _check_float_tensor(input, "log_normal_")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    g = _resolve(generator, input.device, "log_normal_")
    arr = _std_normal(g, input.device, input._data.shape, input._data.dtype)
    arr *= std
    arr += mean
    xp = array_module(arr)
    xp.exp(arr, out=arr)
    return _write(input, arr)
