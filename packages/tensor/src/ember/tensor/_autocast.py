"""Automatic mixed precision: PyTorch's ``autocast``.

``with autocast("cpu"):`` (bfloat16 by default) or ``autocast("cuda")`` (float16 by default)
runs the ops of PyTorch's lower-precision list (matrix products, convolutions) in the autocast
dtype, the ops of its float32 list (losses, reductions that lose precision, and on CUDA the
transcendental functions, softmax and normalizations) in float32, and the ops of its promote
list in the widest floating dtype of their inputs; every other op runs on what it is given.
Only floating tensors on the autocast device that are not float64 are cast.

It works at the registry: every op call goes through the recorder hook (``recorder(op,
bound)``, see ``_registry``). While an autocast region is open anywhere in the process, an
autocast recorder wraps the installed one (autograd's): it looks the op's name up in the
policy table of the calling thread's innermost autocast state, casts tensor arguments with
the registry op ``_to_copy`` (so autograd records the casts and gradients come back in each
parameter's own dtype) and hands the call on. When the last region closes the previous
recorder is put back, so outside autocast ops pay nothing at all. The state is thread-local
(regions are per thread, as in PyTorch); regions nest and ``enabled=False`` opens a region
with autocast off.

``cache_enabled``: within the outermost region, the lower-precision copy of a leaf tensor that
requires grad (a weight) is made once and reused, as PyTorch's cast cache does; it is dropped
when that region closes.
"""
from __future__ import annotations

import functools
import threading
import warnings
import weakref

import numpy as np

from . import _dtype as D
from ._creation import _to_copy
from ._registry import _state, set_recorder
from ._tensor import Tensor

__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "set_autocast_dtype",
           "is_autocast_cache_enabled", "clear_autocast_cache", "POLICIES"]

_LOWER, _FP32, _PROMOTE = "lower", "fp32", "promote"

# PyTorch's autocast op lists, by ember registry op name. Composite functions (mm, bmm, addmm,
# baddbmm, conv1d/2d/3d, conv_transpose*, F.linear, softmax, ...) reach these primitives.
_CPU_LOWER = ("matmul", "linear", "convolution", "einsum", "lstm_cell_fused",
              "gru_cell_fused")
_CPU_FP32 = ("prod", "trace", "cross_entropy_loss", "_ctc_loss", "max_pool3d_with_indices",
             "linalg_cholesky", "linalg_inv", "linalg_qr", "linalg_svd", "linalg_eigh",
             "linalg_solve", "linalg_pinv", "linalg_det", "linalg_slogdet", "geqrf",
             "linalg_lu_factor_ex", "linalg_solve_triangular", "linalg_matrix_exp")
_CPU_PROMOTE = ("cat", "stack", "index_copy")
_CUDA_LOWER = ("matmul", "linear", "convolution", "einsum", "lstm_cell_fused",
               "gru_cell_fused")
_CUDA_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2",
              "log1p", "reciprocal", "rsqrt", "sinh", "tan", "pow", "_softmax", "_log_softmax",
              "layer_norm", "native_layer_norm", "group_norm", "native_group_norm",
              "logsumexp", "cumprod", "cumsum", "prod", "sum", "norm", "linalg_vector_norm",
              "cross_entropy_loss", "_ctc_loss", "trace", "renorm")
_CUDA_PROMOTE = ("atan2", "cross", "tensordot", "index_put", "scatter_add", "cat", "stack",
                 "index_copy")


def _table(lower, fp32, promote) -> dict:
    t = dict.fromkeys(promote, _PROMOTE)
    t.update(dict.fromkeys(fp32, _FP32))
    t.update(dict.fromkeys(lower, _LOWER))
    return t


#: device type -> {registry op name: "lower" | "fp32" | "promote"}
POLICIES = {"cpu": _table(_CPU_LOWER, _CPU_FP32, _CPU_PROMOTE),
            "cuda": _table(_CUDA_LOWER, _CUDA_FP32, _CUDA_PROMOTE)}
_DEFAULT_DTYPE = {"cpu": D.bfloat16, "cuda": D.float16}
_ALLOWED = {"cpu": (D.bfloat16, D.float16), "cuda": (D.float16, D.bfloat16)}
_F64 = np.dtype(np.float64)
_ELIGIBLE = frozenset(d.np for d in (D.float16, D.bfloat16, D.float32))


class _ThreadState(threading.local):
    def __init__(self) -> None:
        # device type -> [enabled, dtype, cache_enabled]; what the innermost region set
        self.cur = {"cpu": [False, _DEFAULT_DTYPE["cpu"], True],
                    "cuda": [False, _DEFAULT_DTYPE["cuda"], True]}
        self.depth = 0  # open regions of this thread (any device)
        self.cache: dict = {}


_tls = _ThreadState()
_lock = threading.Lock()
_open = [0]  # regions open in the process
_inner = [None]  # the recorder the autocast recorder wraps


def _device_type(t: Tensor) -> str:
    # (an array that is not NumPy's: CuPy's, or a stand-in for a value not computed yet, as
    # autobatch's pending tensors hold: the tensor knows its device)
    return "cpu" if t._data.__class__ is np.ndarray or not t.is_cuda else "cuda"


def _cast(t, dtype: D.dtype, dev: str):
    """``t`` cast to ``dtype`` when autocast may cast it (a floating tensor on ``dev`` that is
    not float64), through the registry op ``_to_copy`` (recorded by autograd)."""
    if t.__class__ is not Tensor and not isinstance(t, Tensor):
        if isinstance(t, (list, tuple)) and any(isinstance(x, Tensor) for x in t):
            return type(t)(_cast(x, dtype, dev) for x in t)
        return t
    d = t._data.dtype
    if d not in _ELIGIBLE or d is dtype.np or _device_type(t) != dev:
        return t
    st = _tls
    cached = st.depth and st.cur[dev][2] and t.grad_fn is None and t.requires_grad
    if cached:
        hit = st.cache.get(id(t))
        if hit is not None and hit[0]() is t and hit[1] == t._version and hit[2] is dtype:
            return hit[3]
    out = _to_copy(t, None, dtype)
    if cached:
        st.cache[id(t)] = (weakref.ref(t), t._version, dtype, out)
    return out


def _widest(bound, dev: str):
    r = None
    for a in bound:
        for x in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(x, Tensor) and x._data.dtype in _ELIGIBLE and _device_type(x) == dev:
                r = x.dtype if r is None else D.promote_types(r, x.dtype)
    return r


def _first_device(bound) -> str | None:
    for a in bound:
        if isinstance(a, Tensor):
            return _device_type(a)
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], Tensor):
            return _device_type(a[0])
    return None


def _recorder(op, bound):
    """The autocast recorder: cast the arguments of a listed op, then hand on the call."""
    st = _tls
    if st.depth:
        cur = st.cur
        if cur["cpu"][0] or cur["cuda"][0]:
            dev = _first_device(bound)
            if dev is not None and cur[dev][0]:
                policy = POLICIES[dev].get(op.name)
                if policy is not None:
                    bound = _cast_bound(op, bound, policy, cur[dev][1], dev)
    inner = _inner[0]
    if inner is None:
        return op.run(*bound)
    return inner(op, bound)


def _cast_bound(op, bound, policy: str, low: D.dtype, dev: str):
    if policy == _LOWER:
        target = low
    elif policy == _FP32:
        target = D.float32
    else:
        target = _widest(bound, dev)
        if target is None:
            return bound
    return tuple(_cast(a, target, dev) for a in bound)


def _install() -> None:
    with _lock:
        _open[0] += 1
        if _open[0] == 1 and _state[0] is not _recorder:
            _inner[0] = _state[0]
            set_recorder(_recorder)  # (sees every call: it casts the inputs)


def _uninstall() -> None:
    with _lock:
        _open[0] -= 1
        if _open[0] == 0 and _state[0] is _recorder:
            set_recorder(_inner[0])  # a recorder installed on top of ours keeps ours below it
            _inner[0] = None


def _load_autograd() -> None:
    # autograd installs its recorder on import; importing it first keeps autocast's wrapper
    # outermost when a region creates the first tensor that requires grad
    if _state[0] is None:
        try:
            import importlib

            importlib.import_module("ember.autograd")
        except ImportError:
            pass


class autocast:
    """``autocast(device_type, dtype=None, enabled=True, cache_enabled=True)``: a context
    manager (and decorator) running the ops inside it in mixed precision, as PyTorch's
    ``torch.autocast``.

    >>> import ember.tensor as et
    >>> a, b = et.ones(2, 3), et.ones(3, 2)
    >>> with et.autocast("cpu"):
    ...     (a @ b).dtype
    ember.bfloat16
    >>> (a @ b).dtype
    ember.float32
    """

    def __init__(self, device_type: str, dtype: D.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "
                             f"`{type(device_type)}`")
        dev = device_type.split(":", 1)[0]
        if dev not in POLICIES:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self.device = dev
        # (no dtype: the thread's autocast dtype of the device, set_autocast_dtype's)
        self.fast_dtype = _tls.cur[dev][1] if dtype is None else D.to_dtype(dtype, "autocast")
        self._enabled = bool(enabled)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        if self._enabled and self.fast_dtype not in _ALLOWED[dev]:
            names = ", ".join(str(d).replace("ember.", "ember.") for d in _ALLOWED[dev])
            warnings.warn(f"In {dev.upper()} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{dev.upper()} Autocast only supports dtypes of "
                          f"{names} currently.", stacklevel=2)
            self._enabled = False
        if self._enabled and dev == "cuda":
            from . import cuda

            if not cuda.is_available():
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                              "Disabling", stacklevel=2)
                self._enabled = False
        self._saved: list = []

    def __enter__(self) -> autocast:
        st = _tls
        cell = st.cur[self.device]
        self._saved.append(list(cell))
        cell[0], cell[1], cell[2] = self._enabled, self.fast_dtype, self._cache_enabled
        if self._enabled:
            _load_autograd()
        st.depth += 1
        _install()
        return self

    def __exit__(self, *exc) -> bool:
        st = _tls
        st.cur[self.device][:] = self._saved.pop()
        st.depth -= 1
        if st.depth == 0:
            st.cache.clear()
        _uninstall()
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return decorated

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on in this thread for ``device_type`` (PyTorch's no-argument form
    asks about CUDA)."""
    dev = "cuda" if device_type is None else device_type.split(":", 1)[0]
    if dev not in POLICIES:
        raise RuntimeError(f"unsupported autocast device_type '{device_type}'")
    return bool(_tls.cur[dev][0])


def get_autocast_dtype(device_type: str) -> D.dtype:
    """The dtype autocast casts to on ``device_type`` in this thread."""
    return _tls.cur[device_type.split(":", 1)[0]][1]


def set_autocast_dtype(device_type: str, dtype) -> None:
    _tls.cur[device_type.split(":", 1)[0]][1] = D.to_dtype(dtype, "set_autocast_dtype")


def is_autocast_cache_enabled() -> bool:
    return bool(_tls.cur["cpu"][2] and _tls.cur["cuda"][2])


def clear_autocast_cache() -> None:
    _tls.cache.clear()


def autocast_input_dtype(t: Tensor) -> D.dtype | None:
    """The lower-precision dtype an autocast region on ``t``'s device casts to, or None outside
    one (composite ops that add an input to a product, like ``addmm``, cast the input to match
    the product as PyTorch's do)."""
    if not _tls.depth:
        return None
    cell = _tls.cur[_device_type(t)]
    return cell[1] if cell[0] else None
