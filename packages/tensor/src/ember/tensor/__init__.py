"""ember.tensor: the strided tensor core of ember.

PyTorch's ``torch.X`` creation, math, random, dtype and save/load names live here::

    >>> import ember.tensor as et
    >>> x = et.arange(6.).view(2, 3)
    >>> (x.t() @ x).shape
    ember.Size([3, 3])

Importing this package compiles no kernel and imports neither Numba nor CuPy.
"""
from __future__ import annotations

__version__ = "0.1.1"

from . import (  # noqa: E402
    _activation_ops,
    _complex,
    _creation,
    _extra_ops,
    _grad_mode,
    _indexing,
    _linalg,
    _linalg_ops,
    _nn_ops,
    _pointwise,
    _random,
    _reduction,
    _scatter,
    _shape,
    _special_ops,
    _spectral,
    amp,
    backends,
    cuda,
    fft,
    linalg,
    serialization,
    sparse,
    special,
)
from ._activation_ops import *
from ._autocast import autocast, get_autocast_dtype, is_autocast_enabled, set_autocast_dtype
from ._bfloat16 import install as _install_bfloat16_opmath
from ._complex import *
from ._composite import declare_composites as _declare_composites
from ._creation import *
from ._creation import legacy_class as _legacy_class
from ._device import device
from ._dtype import _on_first_bfloat16 as _bfloat16_hooks
from ._dtype import (
    bfloat16,
    bool,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,
    finfo,
    float,
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    iinfo,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    promote_types,
    result_type,
    set_default_dtype,
    short,
    uint8,
)
from ._dtype import can_cast as _can_cast
from ._extra_ops import *
from ._grad_mode import *
from ._indexing import *
from ._linalg import *
from ._linalg_ops import *
from ._malloc import tune as _tune_malloc
from ._methods import bind_methods as _bind_methods
from ._nn_ops import *
from ._pointwise import *
from ._printing import get_printoptions, printoptions, set_printoptions
from ._random import *
from ._reduction import *
from ._reduction import return_types
from ._registry import OPS
from ._scatter import *
from ._serialization import load, save
from ._shape import *
from ._special_ops import *
from ._tensor import Size, Storage, Tensor, is_distributed, is_storage, is_tensor, to_dlpack
from .amp import GradScaler

FloatTensor = _legacy_class("FloatTensor", float32)
DoubleTensor = _legacy_class("DoubleTensor", float64)
HalfTensor = _legacy_class("HalfTensor", float16)
LongTensor = _legacy_class("LongTensor", int64)
IntTensor = _legacy_class("IntTensor", int32)
ShortTensor = _legacy_class("ShortTensor", int16)
CharTensor = _legacy_class("CharTensor", int8)
ByteTensor = _legacy_class("ByteTensor", uint8)
BoolTensor = _legacy_class("BoolTensor", bool)
BFloat16Tensor = _legacy_class("BFloat16Tensor", bfloat16)


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether an in-place op may write a ``from_`` result into a ``to`` tensor."""
    return _can_cast(from_, to)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def is_complex(input: Tensor) -> bool:
    return input.is_complex()


def numel(input: Tensor) -> int:
    return input.numel()


_bind_methods()

from ._sparse import layout, sparse_coo, sparse_coo_tensor, spmm, strided  # noqa: E402
from ._spectral import istft, stft  # noqa: E402

_bfloat16_hooks.append(_install_bfloat16_opmath)  # installed when bfloat16 is first asked for
_tune_malloc()  # freed large blocks stay for reuse (see _malloc)

__all__ = sorted(
    {"Tensor", "Storage", "Size", "device", "dtype", "OPS", "save", "load", "cuda",
     "return_types", "amp", "backends", "autocast", "is_autocast_enabled",
     "get_autocast_dtype", "set_autocast_dtype", "GradScaler",
     "set_printoptions", "get_printoptions", "printoptions", "is_tensor", "is_distributed",
     "to_dlpack",
     "is_storage", "can_cast", "is_floating_point", "is_complex", "numel",
     "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
     "float64", "complex64", "complex128", "cfloat", "cdouble",
     "half", "float", "double", "short", "int", "long", "finfo", "iinfo", "get_default_dtype",
     "set_default_dtype", "promote_types", "result_type", "FloatTensor", "DoubleTensor",
     "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
     "ByteTensor",
     "BoolTensor", "__version__"}
    | set(_creation.__all__) | set(_complex.__all__) | set(_pointwise.__all__) | set(_shape.__all__)
    | set(_reduction.__all__) | set(_linalg.__all__) | set(_indexing.__all__)
    | set(_scatter.__all__)
    | set(_random.__all__) | set(_nn_ops.__all__) | set(_activation_ops.__all__)
    | set(_linalg_ops.__all__) | set(_special_ops.__all__) | set(_extra_ops.__all__)
    | set(_grad_mode.__all__)
    | {"linalg", "special", "fft", "sparse", "layout", "strided", "sparse_coo",
       "sparse_coo_tensor", "spmm"}
    | set(_spectral.__all__)
)

# the namespace's composites (public functions built of registry ops) diagnose a failed call as
# the registry's ops do: PyTorch's TypeError for a non-tensor argument, and so on
_declare_composites(globals())
