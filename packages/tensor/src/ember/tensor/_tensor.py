"""The strided Tensor and its Storage.

A Tensor is a view into a flat buffer (its Storage): ``_data`` is an ndarray view (NumPy on the
CPU, CuPy on CUDA) whose shape and strides are the tensor's. View ops compute PyTorch's strides
and build ``_data`` over the same memory, so every view of a storage sees every in-place write,
and ``stride()``, ``storage_offset()`` and ``data_ptr()`` are read off ``_data``.

The public autograd attributes (``requires_grad``, ``grad``, ``grad_fn``) live here as plain
data; everything else autograd keeps on a tensor (output number, leaf sink, view tracking,
hooks) is its own, behind the one attribute ``_autograd_meta``. The core never computes a
gradient. Setting ``requires_grad=True`` imports ``ember.autograd``.
"""
from __future__ import annotations

import numpy as np

from . import _dtype as D
from ._device import CPU, device, to_device

__all__ = ["Tensor", "Storage", "is_tensor", "is_storage"]

_ndarray = np.ndarray
# object.__new__ looked up once: the attribute lookup on ``object`` is a fifth of making a
# tensor (every op's result is made by ``_new(Tensor)``)
_new = object.__new__
_FROM_NP = D._FROM_NP


def _root(arr):
    """The array that owns ``arr``'s memory (the last array on its ``.base`` chain)."""
    last, obj = arr, arr.base
    while obj is not None:
        if hasattr(obj, "dtype") and hasattr(obj, "strides"):
            last = obj
        obj = getattr(obj, "base", None)
    return last


class Storage:
    """The flat buffer behind a tensor and all of its views (``Tensor.untyped_storage()``)."""

    __slots__ = ("_root", "dtype")

    def __init__(self, root, dtype: D.dtype) -> None:
        self._root = root
        self.dtype = dtype

    def data_ptr(self) -> int:
        return _ptr(self._root)

    def size(self) -> int:
        return self._root.nbytes // self.dtype.itemsize

    __len__ = size

    def nbytes(self) -> int:
        return self._root.nbytes

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def device(self) -> device:
        return _device_of(self._root)

    def _flat(self):
        root = self._root
        return root.reshape(-1, order="A") if root.ndim != 1 else root

    def tolist(self) -> list:
        flat = self._flat()
        if not isinstance(flat, _ndarray):
            flat = flat.get()
        return flat.view(self.dtype.np).tolist()

    def __getitem__(self, i):
        return self.tolist()[i]

    def __eq__(self, other) -> bool:
        return isinstance(other, Storage) and self.data_ptr() == other.data_ptr()

    def __hash__(self) -> int:
        return self.data_ptr()

    def __repr__(self) -> str:
        items = "\n".join(f" {v}" for v in self.tolist())
        kind = f"ember.storage.TypedStorage(dtype={self.dtype}, device={self.device})"
        return f"{items}\n[{kind} of size {self.size()}]"


def _ptr(arr) -> int:
    if isinstance(arr, _ndarray):
        return arr.__array_interface__["data"][0]
    return arr.data.ptr


def _device_of(arr) -> device:
    if isinstance(arr, _ndarray):
        return CPU
    d = arr.device  # a CuPy array's Device; "cpu" for an array-like on the host
    return CPU if d.__class__ is str else device("cuda", d.id)


def is_tensor(obj) -> bool:
    """True for ember Tensors (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


def is_storage(obj) -> bool:
    return isinstance(obj, Storage)


def is_distributed(input) -> bool:
    """False: an ember tensor lives in one process (``torch.is_distributed``; data-parallel
    training is ``ember.distributed``'s, over ordinary tensors)."""
    return False


def to_dlpack(tensor) -> object:
    """A DLPack capsule of ``tensor``'s memory (``torch.to_dlpack``; ``tensor.__dlpack__()``
    is the protocol's own form)."""
    return tensor.__dlpack__()


class Size(tuple):
    """A tensor's shape: a tuple of ints (``torch.Size``)."""

    __slots__ = ()

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))

    def __radd__(self, other):
        return Size(tuple(other) + tuple(self))


class Tensor:
    """A strided n-dimensional array on a device, with optional autograd attributes.

    >>> import ember.tensor as et
    >>> x = et.tensor([[1., 2.], [3., 4.]])
    >>> x.t().stride()
    (1, 2)
    """

    # class-level defaults keep construction of results cheap
    _grad = None
    grad_fn = None
    _base = None
    _vc = None
    _requires_grad = False
    _autograd_meta = None  # the autograd layer's own per-tensor state (None: it keeps none)
    __array_priority__ = 1000

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    # ----------------------------------------------------------------- construction helpers
    @staticmethod
    def _make(arr) -> Tensor:
        """Wrap an ndarray (no copy). NumPy scalars become 0-d arrays. (A static method: a
        class method's call binds a method object first, ~0.1 us of every op's result.)"""
        t = _new(Tensor)
        if arr.__class__ is not _ndarray and isinstance(arr, np.generic):
            arr = np.asarray(arr)
        t._data = arr
        return t

    def _view_of(self, arr) -> Tensor:
        """A new tensor over ``arr``, which must alias this tensor's memory (a view)."""
        t = _new(Tensor)
        t._data = arr
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        t._vc = vc
        t._base = self if self._base is None else self._base
        return t

    def _views_of(self, arrays) -> list:
        """:meth:`_view_of` of each of ``arrays`` (the pieces of a split)."""
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        base = self if self._base is None else self._base
        out = []
        new = object.__new__
        for arr in arrays:
            t = new(Tensor)
            t._data = arr
            t._vc = vc
            t._base = base
            out.append(t)
        return out

    def _bump(self) -> None:
        vc = self._vc
        if vc is None:
            self._vc = [1]
        else:
            vc[0] += 1

    # ----------------------------------------------------------------- metadata
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim, "size")]

    @property
    def dtype(self) -> D.dtype:
        return _FROM_NP[self._data.dtype]

    @property
    def device(self) -> device:
        return _device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return not isinstance(self._data, _ndarray)

    @property
    def is_cpu(self) -> bool:
        return isinstance(self._data, _ndarray)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf)."""
        m = self._autograd_meta
        return 0 if m is None else m.output_nr

    def dim_order(self) -> tuple:
        """The dims from the outermost in memory to the innermost: by decreasing stride
        (dims of equal strides, where size-1 dims make a layout fit several orders, in their
        own order; PyTorch picks one of those orders by its own rule)."""
        st = self.stride()
        return tuple(sorted(range(len(st)), key=lambda d: -st[d]))

    def const_data_ptr(self) -> int:
        """:meth:`data_ptr` (ember has no read-only pointer of its own)."""
        return self.data_ptr()

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f" or self._data.dtype == D.BF16_NP

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def stride(self, dim: int | None = None):
        """Strides in elements, exactly as PyTorch reports them."""
        d = self._data
        item = d.itemsize
        strides = tuple([s // item for s in d.strides])
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, self._data.ndim, "stride")]

    def data_ptr(self) -> int:
        return _ptr(self._data)

    def untyped_storage(self) -> Storage:
        return Storage(_root(self._data), self.dtype)

    storage = untyped_storage

    def storage_offset(self) -> int:
        root = _root(self._data)
        return (_ptr(self._data) - _ptr(root)) // self._data.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        """True when the strides are row-major for the shape (size-1 dims are ignored, and an
        empty tensor is contiguous): NumPy's and CuPy's C-contiguity, which is PyTorch's."""
        return self._data.flags.c_contiguous

    def is_set_to(self, other: Tensor) -> bool:
        return (self.data_ptr() == other.data_ptr() and self.shape == other.shape
                and self.stride() == other.stride())

    def _is_view(self) -> bool:
        return self._base is not None

    @property
    def _version(self) -> int:
        vc = self._vc
        return 0 if vc is None else vc[0]

    # ----------------------------------------------------------------- autograd attributes
    @property
    def grad(self):
        """The gradient accumulated by backward (None until one arrives)."""
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        # as PyTorch: a gradient of another shape, dtype or device is refused on assignment,
        # not broadcast later by an optimizer step
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad "
                                f"of type {type(value).__name__}")
            # a sparse COO gradient (embedding(sparse=True)) is checked through its values
            vd, sd = (value._data if not value.is_sparse else value._meta()), self._data
            if vd.shape != sd.shape:
                raise RuntimeError(f"attempting to assign a gradient of size "
                                   f"'{list(vd.shape)}' to a tensor of size '{list(sd.shape)}'."
                                   f" Please ensure that the gradient and the tensor are the "
                                   f"same size")
            if vd.dtype != sd.dtype:
                raise RuntimeError(f"attempting to assign a gradient with dtype "
                                   f"'{value.dtype}' to a tensor with dtype '{self.dtype}'. "
                                   f"Please ensure that the gradient and the tensor have the "
                                   f"same dtype")
            if vd.__class__ is not sd.__class__ and value.device != self.device:
                raise RuntimeError(f"attempting to assign a gradient located on device "
                                   f"'{value.device}' to a tensor located on device "
                                   f"'{self.device}'. Please ensure that the gradient and the "
                                   f"tensor are on the same device")
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        _run_deferred()
        if value and not self._requires_grad:
            _autograd().check_requires_grad(self)
        elif not value and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a "
                "computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's memory, outside any graph (the legacy ``.data``)."""
        return self._detached()

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        _run_deferred(self, value)
        self._data = value._data
        self._vc = value._vc

    def _detached(self) -> Tensor:
        t = _new(Tensor)
        t._data = self._data
        vc = self._vc
        if vc is None:
            vc = self._vc = [0]
        t._vc = vc
        return t

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self._requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate the gradient of this tensor into the leaves' ``.grad``."""
        _autograd().backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        return _autograd().register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """``hook(tensor)`` runs after a backward pass has accumulated into ``.grad``."""
        return _autograd().register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self) -> None:
        _autograd().retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        m = self._autograd_meta
        return m is not None and m.retains_grad

    # ----------------------------------------------------------------- conversion
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The NumPy array sharing this tensor's memory (CPU tensors only)."""
        if not isinstance(self._data, _ndarray):
            if not force:
                raise TypeError(
                    f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() "
                    "to copy the tensor to host memory first.")
            return self._data.get()
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead.")
        return self._data

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy(force=True) if not self._requires_grad else self._data
        if not isinstance(arr, _ndarray):
            arr = arr.get()
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, stream=None, **kwargs):
        return self._data.__dlpack__(**({"stream": stream} if stream is not None else {}))

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item() if isinstance(self._data, _ndarray) else \
            self._data.reshape(()).get().item()

    def tolist(self):
        data = self._data if isinstance(self._data, _ndarray) else self._data.get()
        return data.tolist()

    def __bool__(self) -> bool:
        if self._data.size != 1:
            what = "no values" if self._data.size == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        return complex(self.item())

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __hash__(self) -> int:
        return id(self)

    def __deepcopy__(self, memo):
        """A copy with storage of its own, requires_grad and a copy of ``.grad`` kept; a tensor
        an op recorded (not a graph leaf) refuses, as PyTorch's does."""
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.")
        new = memo.get(id(self))
        if new is None:
            fn, (data, dev, requires_grad) = self.__reduce_ex__(4)
            new = memo[id(self)] = fn(data.copy(), dev, requires_grad)
            if self.grad is not None:
                new.grad = self.grad.__deepcopy__(memo)
        return new

    def __reduce_ex__(self, protocol):
        data = self._data if isinstance(self._data, _ndarray) else self._data.get()
        data = data if data.flags.c_contiguous else data.copy(order="C")
        return (_rebuild, (data, str(self.device), self._requires_grad))

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and spec:
            return format(self.item(), spec)
        return repr(self) if not spec else object.__format__(self, spec)

    # ----------------------------------------------------------------- dtype / device moves
    def type(self, dtype=None, non_blocking: bool = False, **kwargs):
        """The legacy type name (``'ember.FloatTensor'``) or a cast to a legacy type."""
        if dtype is None:
            return _legacy_name(self.dtype, self.is_cuda)
        if isinstance(dtype, str):
            dtype = _legacy_dtype_from_name(dtype)
        elif isinstance(dtype, type) and issubclass(dtype, Tensor):
            dtype = getattr(dtype, "_legacy_dtype", D.get_default_dtype())
        return self.to(dtype=dtype)

    def type_as(self, other: Tensor) -> Tensor:
        return self.to(dtype=other.dtype)

    def cpu(self) -> Tensor:
        return self.to("cpu")

    def cuda(self, device=None, non_blocking: bool = False) -> Tensor:
        return self.to(device if device is not None else "cuda")

    def float(self) -> Tensor:
        return self.to(dtype=D.float32)

    def double(self) -> Tensor:
        return self.to(dtype=D.float64)

    def half(self) -> Tensor:
        return self.to(dtype=D.float16)

    def cfloat(self) -> Tensor:
        return self.to(dtype=D.complex64)

    def cdouble(self) -> Tensor:
        return self.to(dtype=D.complex128)

    def bfloat16(self) -> Tensor:
        return self.to(dtype=D.bfloat16)

    def long(self) -> Tensor:
        return self.to(dtype=D.int64)

    def int(self) -> Tensor:
        return self.to(dtype=D.int32)

    def short(self) -> Tensor:
        return self.to(dtype=D.int16)

    def char(self) -> Tensor:
        return self.to(dtype=D.int8)

    def byte(self) -> Tensor:
        return self.to(dtype=D.uint8)

    def bool(self) -> Tensor:
        return self.to(dtype=D.bool)


def _share_instance_keys(cls) -> None:
    """Put the attributes that tensors set into ``cls``'s shared instance-dict keys before
    any instance exists. CPython 3.11 lets these keys grow only while the class has made few
    instances; a tensor that later sets an attribute the keys lack (``grad_fn`` after
    ``_data``) gets a dict object of its own: an allocation, slower attribute access and one
    more object for the garbage collector per recorded output."""
    t = object.__new__(cls)
    for name in ("_data", "grad_fn", "_requires_grad", "_vc", "_base", "_autograd_meta",
                 "_grad"):
        setattr(t, name, None)


_share_instance_keys(Tensor)


def parse_to_args(args, kwargs) -> tuple[device | None, D.dtype | None, bool]:
    """``(device, dtype, copy)`` from the arguments of ``Tensor.to`` / ``Module.to``:
    a device (str, int or device), a dtype, a tensor to match, ``non_blocking`` (ignored)."""
    kwargs = dict(kwargs)
    dtype_ = kwargs.pop("dtype", None)
    device_ = kwargs.pop("device", None)
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype_, device_ = a.dtype, a.device
        elif isinstance(a, (D.dtype, type)) or (isinstance(a, str) and a in D._BY_NAME):
            dtype_ = a
        elif isinstance(a, bool):
            continue  # non_blocking given positionally
        elif isinstance(a, (str, device, int)):
            device_ = a
        elif a is not None:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return (None if device_ is None else to_device(device_),
            None if dtype_ is None else D.to_dtype(dtype_, "to"), bool(copy))


def _rebuild(arr, dev, requires_grad):
    t = Tensor._make(arr)
    if dev != "cpu":
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _wrap_dim(dim: int, ndim: int, op: str) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
            f"but got {dim})")
    return dim + n if dim < 0 else dim


_LEGACY = {D.float32: "FloatTensor", D.float64: "DoubleTensor", D.float16: "HalfTensor",
           D.bfloat16: "BFloat16Tensor",
           D.int64: "LongTensor", D.int32: "IntTensor", D.int16: "ShortTensor",
           D.int8: "CharTensor", D.uint8: "ByteTensor", D.bool: "BoolTensor",
           D.complex64: "ComplexFloatTensor", D.complex128: "ComplexDoubleTensor"}
_LEGACY_BY_NAME = {v: k for k, v in _LEGACY.items()}


def _legacy_name(dt: D.dtype, cuda: bool) -> str:
    return f"ember.{'cuda.' if cuda else ''}{_LEGACY[dt]}"


def _legacy_dtype_from_name(name: str) -> D.dtype:
    short = name.rsplit(".", 1)[-1]
    if short in _LEGACY_BY_NAME:
        return _LEGACY_BY_NAME[short]
    return D.to_dtype(short, "type")


_autograd_api = [None]  # set by ember.autograd through extension.set_autograd


# the installed recorder's ``flush`` where it defers calls (autobatch's), set by the registry's
# set_recorder
_deferring: list = [None]


def _run_deferred(*tensors: Tensor) -> None:
    """Run the calls the installed recorder deferred: a tensor's array or flags change outside
    the registry, and those calls read them as they were. ``tensors``: the ones whose arrays
    are about to be read or replaced so; a deferred one among them becomes an ordinary tensor
    holding its value."""
    flush = _deferring[0]
    if flush is not None:
        flush(*tensors)


def become(self: Tensor, view: Tensor, op: str) -> Tensor:
    """Make ``self`` the view ``view`` of itself (PyTorch's in-place view ops: ``t_``,
    ``transpose_``, ``squeeze_``, ``unsqueeze_``, ``as_strided_``): the same storage with the
    view's shape, strides and offset, and the view's history (its node's output 0)."""
    _run_deferred(self, view)
    if self._requires_grad and self.grad_fn is None:
        raise RuntimeError(f"{op}(): a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    self._data = view._data
    if view.grad_fn is not None:
        _autograd().set_history(self, view.grad_fn)
    self._bump()
    return self


def _autograd():
    api = _autograd_api[0]
    if api is None:
        try:
            import ember.autograd  # noqa: F401  (importing it installs its API)
        except ImportError as exc:  # pragma: no cover - exercised in the tensor-only tox env
            raise RuntimeError(
                "autograd needs the ember-autograd distribution: pip install ember-autograd "
                "(from a checkout: pip install ./packages/autograd)") from exc
        api = _autograd_api[0]
    return api
