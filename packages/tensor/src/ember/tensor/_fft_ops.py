"""``torch.fft``: the discrete Fourier transforms and their helpers.

As in PyTorch's ATen, three registry primitives do the transforms, over SciPy's pocketfft
binding on the CPU (the C++ transforms under ``scipy.fft``, called directly; 1.5-5x faster than
``numpy.fft``'s on complex and n-d transforms of a 256 x 1024 array) and CuPy's ``cupy.fft`` on
a CUDA device (both keep float32 / complex64 in
single precision): ``_fft_c2c`` (complex to complex, either direction), ``_fft_r2c`` (real to
complex, full or one-sided) and ``_fft_c2r`` (one-sided complex to real). Their ``normalization``
is a scaling mode, whatever the direction: 0 none, 1 by ``1/sqrt(n)``, 2 by ``1/n``. The public
functions are composites: they promote the input's dtype, pad it with zeros or narrow it to the
requested sizes (``cat`` / ``narrow``, so gradients flow through the resizing), pick the
normalization from ``norm`` and call one primitive; ``hfft``/``ihfft`` conjugate around
``c2r``/``r2c``. Derivatives are in the autograd package's table (``derivatives_fft``).

``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are composites of registry ops
(``roll`` carries the shifts' gradients).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import _dtype as D
from ._checks import scalar_type_name
from ._complex import conj
from ._creation import _to_copy, tensor, zeros
from ._registry import array_module, defop, write_out
from ._shape import cat
from ._tensor import Tensor

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_make = Tensor._make
_float32, _float64, _complex64 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.complex64)

# ------------------------------------------------------------------------ the primitives
# ``normalization``: PyTorch's fft_norm_mode, a scaling whatever the direction
_NONE, _BY_ROOT_N, _BY_N = 0, 1, 2


_POCKETFFT = []  # SciPy's pocketfft binding, or None where this SciPy has none; on first use


def _pocketfft(d):
    """SciPy's pocketfft binding for the NumPy array ``d`` (``scipy.fft._pocketfft.pypocketfft``:
    its ``c2c``, ``r2c`` and ``c2r`` take the axes, the direction and PyTorch's scaling mode as
    they are, where the public ``scipy.fft`` functions around them (the backend dispatch,
    ``norm`` and ``n`` handling, a dtype check) cost ~5 us a call, 4x the transform of a 4 x 64
    tensor); None for a CuPy array, and where this SciPy has no such module (it is private:
    some SciPy builds lack it): then the array library's public ``fft`` module does it."""
    if d.__class__ is not np.ndarray:
        return None
    if not _POCKETFFT:
        try:
            from scipy.fft._pocketfft import pypocketfft
        except ImportError:
            pypocketfft = None
        _POCKETFFT.append(pypocketfft)
    return _POCKETFFT[0]


def _dft(name: str, d, dim: Sequence[int], normalization: int, forward: bool,
         last: int | None = None):
    """The public transform ``name`` (``fft``, ``ifft``, ``rfft``, ``irfft``) of ``d`` over
    ``dim``, from its array library's ``fft`` module (``cupy.fft``, ``numpy.fft``): the 1-d
    function for one dim, else its n-d twin; ``last``: the output's size along the last of
    ``dim``."""
    fft = array_module(d).fft
    norm = _np_norm(normalization, forward)
    if len(dim) == 1:
        return getattr(fft, name)(d, n=last, axis=dim[0], norm=norm)
    s = None if last is None else [d.shape[a] for a in dim[:-1]] + [last]
    return getattr(fft, name + "n")(d, s=s, axes=tuple(dim), norm=norm)


def _np_norm(normalization: int, forward: bool) -> str:
    """NumPy's ``norm`` for a transform in direction ``forward`` scaled by ``normalization``
    (NumPy names the scaling by the direction that carries it)."""
    if normalization == _BY_ROOT_N:
        return "ortho"
    return "backward" if (normalization == _NONE) == forward else "forward"


@defop("_fft_c2c")
def _fft_c2c(input: Tensor, dim: Sequence[int], normalization: int, forward: bool) -> Tensor:
    """The complex-to-complex DFT over ``dim`` (``forward``: ``exp(-2 pi i ...)``)."""
    d = input._data
    if not dim:
        return _make(d.copy())
    if d.dtype.char not in "FD":  # a real tensor given to the primitive: in complex128
        d = d.astype(np.complex128)
    pf = _pocketfft(d)
    if pf is not None:
        return _make(pf.c2c(d, dim, forward, normalization, None, 1))
    r = _dft("fft" if forward else "ifft", d, dim, normalization, forward)
    return _make(r.astype(d.dtype, copy=False))


@defop("_fft_r2c")
def _fft_r2c(input: Tensor, dim: Sequence[int], normalization: int, onesided: bool) -> Tensor:
    """The forward DFT of a real tensor over ``dim``; ``onesided``: only the first
    ``n // 2 + 1`` frequencies of the last of ``dim`` (the rest are their conjugates)."""
    d = input._data
    single = d.dtype == _float32
    if not onesided:  # as a complex signal: the real-input transform gives -0.0 imaginary
        # parts (at the zero frequency) where PyTorch's one-sided transform and conjugate
        # fill give +0.0
        d = d.astype(np.complex64 if single else np.complex128)
    elif not (single or d.dtype == _float64):  # float16, integers: in float64
        d = d.astype(np.float64)
    pf = _pocketfft(d)
    if pf is not None:
        return _make((pf.r2c if onesided else pf.c2c)(d, dim, True, normalization, None, 1))
    r = _dft("rfft" if onesided else "fft", d, dim, normalization, True)
    return _make(r.astype(np.complex64 if single else np.complex128, copy=False))


@defop("_fft_c2r")
def _fft_c2r(input: Tensor, dim: Sequence[int], normalization: int,
             last_dim_size: int) -> Tensor:
    """The inverse-direction DFT over ``dim`` of a one-sided Hermitian signal, real, with
    ``last_dim_size`` points along the last of ``dim`` (the input's last dim cut or padded
    with zeros to ``last_dim_size // 2 + 1``)."""
    d = input._data
    if d.dtype.char not in "FD":  # a real tensor given to the primitive: in complex128
        d = d.astype(np.complex128)
    pf = _pocketfft(d)
    if pf is None:
        r = _dft("irfft", d, dim, normalization, False, last_dim_size)
        return _make(r.astype(np.float32 if d.dtype == _complex64 else np.float64,
                              copy=False))
    ax = dim[-1]
    half = last_dim_size // 2 + 1
    have = d.shape[ax]
    if have > half:
        d = d[(slice(None),) * (ax % d.ndim) + (slice(0, half),)]
    elif have < half:
        pad = [(0, 0)] * d.ndim
        pad[ax] = (0, half - have)
        d = np.pad(d, pad)
    return _make(pf.c2r(d, dim, last_dim_size, False, normalization, None, 1))


# ------------------------------------------------------------------------ argument handling
def _norm_mode(norm, forward: bool) -> int:
    """PyTorch's ``norm`` for a transform in direction ``forward`` as a scaling mode."""
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"argument 'norm' must be str, not {type(norm).__name__}")
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _promote(x: Tensor, require_complex: bool) -> Tensor:
    """PyTorch's ``promote_tensor_fft``: integers and bool go to the default float dtype;
    float32 and float64 (and, with ``require_complex``, their complex dtypes) are what the
    transforms take; float16 and bfloat16 are refused, as on PyTorch's CPU."""
    nd = x._data.dtype
    if nd.kind == "c":
        return x
    pair = _FFT_DTYPES.get(nd)
    if pair is None:
        dt = D.get_default_dtype() if nd.kind in "biu" else x.dtype
        pair = _FFT_DTYPES.get(dt.np)
        if pair is None:
            raise RuntimeError(f"Unsupported dtype {scalar_type_name(dt)}")
    dt = pair[require_complex]
    return x if dt.np == nd else _to_copy(x, None, dt)


# the dtypes the transforms take: NumPy dtype -> (the real one, the complex one)
_FFT_DTYPES = {D.float32.np: (D.float32, D.complex64), D.float64.np: (D.float64, D.complex128)}


def _wrap(dim: int, ndim: int) -> int:
    """``dim`` in ``[0, ndim)``; a 0-d tensor has no dim to transform."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    return dim % ndim


def _check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _resize(x: Tensor, dims, sizes) -> Tensor:
    """``x`` narrowed or padded with zeros at the end to ``sizes`` along ``dims``."""
    for dim, n in zip(dims, sizes):
        have = x._data.shape[dim]
        if have > n:
            x = x.narrow(dim, 0, n)
        elif have < n:
            shape = list(x.shape)
            shape[dim] = n - have
            x = cat([x, zeros(shape, dtype=x.dtype, device=x.device)], dim)
    return x


def _shape_and_dims(x: Tensor, s, dim) -> tuple[list, list]:
    """PyTorch's ``canonicalize_fft_shape_and_dim_args``: the signal sizes and the dims of an
    n-d transform (``s`` alone: its last ``len(s)`` dims; neither: every dim; ``-1`` in ``s``:
    that dim's own size)."""
    xshape = x._data.shape
    ndim = len(xshape)
    dims = None
    if dim is not None:
        dims = [_wrap(d, ndim) for d in ([dim] if isinstance(dim, int) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        s = [s] if isinstance(s, int) else list(s)
        if dims is not None and len(dims) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dims is None:
            dims = list(range(ndim - len(s), ndim))
        shape = [xshape[d] if n == -1 else n for d, n in zip(dims, s)]
    else:
        dims = list(range(ndim)) if dims is None else dims
        shape = [xshape[d] for d in dims]
    for n in shape:
        if n < 1:
            _check_points(n)
    return shape, dims


def _c2r_shape_and_dims(fname: str, x: Tensor, s, dim) -> tuple[list, list, int]:
    """:func:`_shape_and_dims` for a one-sided input: the sizes to resize the input to, the
    dims, and the output's size along the last dim (default ``2 * (m - 1)``)."""
    shape, dims = _shape_and_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    if s is None or (not isinstance(s, int) and list(s)[-1] == -1):
        last = 2 * (x._data.shape[dims[-1]] - 1)
    else:
        last = shape[-1]
    _check_points(last)
    shape[-1] = last // 2 + 1
    return shape, dims, last


def _out(result: Tensor, out, fname: str, complex_out: bool, exact: bool = False):
    """``result``, or written into ``out`` (complex for a complex result, real for a real one;
    ``exact``: of ``result``'s dtype, as ``conj_physical``'s ``out=`` wants)."""
    if out is None:
        return result
    if isinstance(out, Tensor):
        if out.is_complex() != complex_out:
            kind = "a complex" if complex_out else "a floating point"
            raise RuntimeError(f"{fname} expects {kind} output tensor, but got "
                               f"{scalar_type_name(out.dtype)}")
        if exact and out.dtype != result.dtype:
            raise RuntimeError(f"Found dtype {scalar_type_name(out.dtype)} but expected "
                               f"{scalar_type_name(result.dtype)}")
    return write_out(fname, result, out)


# ------------------------------------------------------------------------ 1-d transforms
def _c2c(input: Tensor, n, dim: int, norm, forward: bool) -> Tensor:
    shape = input._data.shape
    d = _wrap(dim, len(shape))
    if n is not None:
        _check_points(n)
        input = _resize(input, [d], [n])
    elif shape[d] < 1:
        _check_points(shape[d])
    return _fft_c2c(input, [d], _norm_mode(norm, forward), forward)


def _r2c(fname: str, input: Tensor, n, dim: int, norm, forward: bool,
         onesided: bool) -> Tensor:
    if input._data.dtype.kind == "c":
        raise RuntimeError(f"{fname} expects a real input tensor, but got "
                           f"{scalar_type_name(input.dtype)}")
    x = _promote(input, False)
    shape = x._data.shape
    d = _wrap(dim, len(shape))
    if n is not None:
        _check_points(n)
        x = _resize(x, [d], [n])
    elif shape[d] < 1:
        _check_points(shape[d])
    r = _fft_r2c(x, [d], _norm_mode(norm, forward), onesided)
    return r if forward else conj(r)


def _c2r(input: Tensor, n, dim: int, norm, forward: bool) -> Tensor:
    x = _promote(input, True)
    shape = x._data.shape
    d = _wrap(dim, len(shape))
    last = 2 * (shape[d] - 1) if n is None else n
    _check_points(last)
    if n is not None:
        x = _resize(x, [d], [n // 2 + 1])
    return _fft_c2r(conj(x) if forward else x, [d], _norm_mode(norm, forward), last)


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
        out=None) -> Tensor:
    """The one-dimensional discrete Fourier transform along ``dim``, of ``n`` points (the
    input narrowed or padded with zeros); ``norm``: ``"backward"`` (no scaling, the default),
    ``"ortho"`` (``1/sqrt(n)``) or ``"forward"`` (``1/n``).

    >>> fft(tensor([1., 2., 3., 4.]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    if input._data.dtype.kind == "c":
        r = _c2c(input, n, dim, norm, True)
    else:
        r = _r2c("fft", input, n, dim, norm, True, False)
    return _out(r, out, "fft", True)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out=None) -> Tensor:
    """The inverse of :func:`fft` (scaled by ``1/n`` by default).

    >>> ifft(fft(tensor([1., 2., 3., 4.]))).real
    tensor([1., 2., 3., 4.])
    """
    if input._data.dtype.kind == "c":
        r = _c2c(input, n, dim, norm, False)
    else:
        r = _r2c("ifft", input, n, dim, norm, False, False)
    return _out(r, out, "ifft", True)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out=None) -> Tensor:
    """The :func:`fft` of a real signal, its ``n // 2 + 1`` non-negative frequencies only.

    >>> rfft(tensor([1., 2., 3., 4.]))
    tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    return _out(_r2c("rfft", input, n, dim, norm, True, True), out, "rfft", True)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out=None) -> Tensor:
    """The inverse of :func:`rfft`: a real signal of ``n`` points (default ``2 * (m - 1)``
    for ``m`` input frequencies) from its non-negative frequencies.

    >>> irfft(tensor([10.+0.j, -2.+2.j, -2.+0.j]))
    tensor([1., 2., 3., 4.])
    """
    return _out(_c2r(input, n, dim, norm, False), out, "irfft", False)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
         out=None) -> Tensor:
    """The :func:`fft` of a signal with Hermitian symmetry given by its first half: a real
    tensor of ``n`` points (default ``2 * (m - 1)``).

    >>> hfft(tensor([4.+0.j, -1.+1.j, 0.+0.j]))
    tensor([2., 6., 6., 2.])
    """
    return _out(_c2r(input, n, dim, norm, True), out, "hfft", False)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *,
          out=None) -> Tensor:
    """The inverse of :func:`hfft`: the first ``n // 2 + 1`` frequencies of the :func:`ifft`
    of a real signal.

    >>> ihfft(tensor([2., 6., 6., 2.]))
    tensor([ 4.-0.j, -1.+1.j,  0.-0.j])
    """
    return _out(_r2c("ihfft", input, n, dim, norm, False, True), out, "ihfft", True,
                exact=True)


# ------------------------------------------------------------------------ n-d transforms
def _c2c_n(input: Tensor, s, dim, norm, forward: bool) -> Tensor:
    shape, dims = _shape_and_dims(input, s, dim)
    x = _resize(_promote(input, True), dims, shape)
    return _fft_c2c(x, dims, _norm_mode(norm, forward), forward)


def _rfftn(input: Tensor, s, dim, norm) -> Tensor:
    if input._data.dtype.kind == "c":
        raise RuntimeError("rfftn expects a real-valued input tensor, but got "
                           f"{scalar_type_name(input.dtype)}")
    shape, dims = _shape_and_dims(input, s, dim)
    if not dims:
        raise RuntimeError("rfftn must transform at least one axis")
    x = _resize(_promote(input, False), dims, shape)
    return _fft_r2c(x, dims, _norm_mode(norm, True), True)


def _c2r_n(fname: str, input: Tensor, s, dim, norm, forward: bool) -> Tensor:
    shape, dims, last = _c2r_shape_and_dims(fname, input, s, dim)
    x = _resize(_promote(input, True), dims, shape)
    return _fft_c2r(conj(x) if forward else x, dims, _norm_mode(norm, forward), last)


def _ihfftn(input: Tensor, s, dim, norm) -> Tensor:
    shape, dims = _shape_and_dims(input, s, dim)
    if not dims:
        raise RuntimeError("ihfftn must transform at least one axis")
    if input._data.dtype.kind == "c":
        raise RuntimeError("Only supports floating-point dtypes, but found: "
                           f"{scalar_type_name(input.dtype)}")
    x = _resize(_promote(input, False), dims, shape)
    return conj(_fft_r2c(x, dims, _norm_mode(norm, False), True))


def fftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
         norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional :func:`fft` over ``dim`` (default: the last ``len(s)`` dims, or
    every dim), of ``s`` points per dim (``-1``: that dim's size).

    >>> fftn(tensor([[1., 2.], [3., 4.]]))
    tensor([[10.+0.j, -2.+0.j],
            [-4.+0.j,  0.+0.j]])
    """
    return _out(_c2c_n(input, s, dim, norm, True), out, "fftn", True)


def ifftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of :func:`fftn`.

    >>> ifftn(tensor([[10., -2.], [-4., 0.]]))
    tensor([[1.+0.j, 2.+0.j],
            [3.+0.j, 4.+0.j]])
    """
    return _out(_c2c_n(input, s, dim, norm, False), out, "ifftn", True)


def rfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional :func:`rfft`: one-sided along the last of ``dim``.

    >>> rfftn(tensor([[1., 2.], [3., 4.]]))
    tensor([[10.+0.j, -2.+0.j],
            [-4.+0.j,  0.+0.j]])
    """
    return _out(_rfftn(input, s, dim, norm), out, "rfftn", True)


def irfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of :func:`rfftn`: real, of ``s[-1]`` points along the last of ``dim``
    (default ``2 * (m - 1)``).

    >>> irfftn(tensor([[10.+0.j, -2.+0.j], [-4.+0.j, 0.+0.j]]))
    tensor([[1., 2.],
            [3., 4.]])
    """
    return _out(_c2r_n("irfftn", input, s, dim, norm, False), out, "irfftn", False)


def hfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
          norm: str | None = None, *, out=None) -> Tensor:
    """The n-dimensional :func:`hfft`: real, Hermitian along the last of ``dim``.

    >>> hfftn(tensor([[1.+0.j, 0.+0.j], [0.+0.j, 0.+0.j]]))
    tensor([[1., 1.],
            [1., 1.]])
    """
    return _out(_c2r_n("hfftn", input, s, dim, norm, True), out, "hfftn", False)


def ihfftn(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] | None = None,
           norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of :func:`hfftn`: the one-sided :func:`ifftn` of a real signal.

    >>> ihfftn(tensor([[1., 1.], [1., 1.]]))
    tensor([[1.-0.j, 0.-0.j],
            [0.-0.j, 0.-0.j]])
    """
    return _out(_ihfftn(input, s, dim, norm), out, "ihfftn", True)


def fft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
         norm: str | None = None, *, out=None) -> Tensor:
    """:func:`fftn` over two dims (the last two by default).

    >>> fft2(tensor([[1., 2.], [3., 4.]]))
    tensor([[10.+0.j, -2.+0.j],
            [-4.+0.j,  0.+0.j]])
    """
    return _out(_c2c_n(input, s, dim, norm, True), out, "fftn", True)


def ifft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None, *, out=None) -> Tensor:
    """:func:`ifftn` over two dims (the last two by default).

    >>> ifft2(tensor([[10., -2.], [-4., 0.]]))
    tensor([[1.+0.j, 2.+0.j],
            [3.+0.j, 4.+0.j]])
    """
    return _out(_c2c_n(input, s, dim, norm, False), out, "ifftn", True)


def rfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None, *, out=None) -> Tensor:
    """:func:`rfftn` over two dims (the last two by default).

    >>> rfft2(tensor([[1., 2.], [3., 4.]]))
    tensor([[10.+0.j, -2.+0.j],
            [-4.+0.j,  0.+0.j]])
    """
    return _out(_rfftn(input, s, dim, norm), out, "rfftn", True)


def irfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None, *, out=None) -> Tensor:
    """:func:`irfftn` over two dims (the last two by default).

    >>> irfft2(tensor([[10.+0.j, -2.+0.j], [-4.+0.j, 0.+0.j]]))
    tensor([[1., 2.],
            [3., 4.]])
    """
    return _out(_c2r_n("irfftn", input, s, dim, norm, False), out, "irfftn", False)


def hfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
          norm: str | None = None, *, out=None) -> Tensor:
    """:func:`hfftn` over two dims (the last two by default).

    >>> hfft2(tensor([[1.+0.j, 0.+0.j], [0.+0.j, 0.+0.j]]))
    tensor([[1., 1.],
            [1., 1.]])
    """
    return _out(_c2r_n("hfftn", input, s, dim, norm, True), out, "hfftn", False)


def ihfft2(input: Tensor, s: Sequence[int] | None = None, dim: Sequence[int] = (-2, -1),
           norm: str | None = None, *, out=None) -> Tensor:
    """:func:`ihfftn` over two dims (the last two by default).

    >>> ihfft2(tensor([[1., 1.], [1., 1.]]))
    tensor([[1.-0.j, 0.-0.j],
            [0.-0.j, 0.-0.j]])
    """
    return _out(_ihfftn(input, s, dim, norm), out, "ihfftn", True)


# ------------------------------------------------------------------------ helpers


def _freqs(vals, n: int, d: float, dtype, device, requires_grad, out):
    dt = dtype or (out.dtype if out is not None else D.get_default_dtype())
    r = tensor([v / (n * d) for v in vals], dtype=dt, device=device,
               requires_grad=requires_grad)
    if out is not None:
        return write_out("fftfreq", r, out)
    return r


def fftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """Sample frequencies of a length-``n`` FFT with sample spacing ``d``:
    ``[0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d n)``.

    >>> fftfreq(4)
    tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    pos = list(range((n - 1) // 2 + 1))
    neg = list(range(-(n // 2), 0))
    return _freqs(pos + neg, n, d, dtype, device, requires_grad, out)


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """Sample frequencies of a length-``n`` real FFT: ``[0, 1, ..., n//2] / (d n)``.

    >>> rfftfreq(4)
    tensor([0.0000, 0.2500, 0.5000])
    """
    return _freqs(list(range(n // 2 + 1)), n, d, dtype, device, requires_grad, out)


def _dims(input: Tensor, dim):
    if dim is None:
        return list(range(input.dim()))
    if isinstance(dim, int):
        return [dim]
    return list(dim)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """Move the zero-frequency term to the centre of ``dim`` (all dims by default).

    >>> fftshift(tensor([0, 1, 2, -2, -1]))
    tensor([-2, -1,  0,  1,  2])
    """
    dims = _dims(input, dim)
    if not dims:
        return input.clone()
    shape = input._data.shape
    return input.roll([shape[d] // 2 for d in dims], dims)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of :func:`fftshift`.

    >>> ifftshift(tensor([-2, -1, 0, 1, 2]))
    tensor([ 0,  1,  2, -2, -1])
    """
    dims = _dims(input, dim)
    if not dims:
        return input.clone()
    shape = input._data.shape
    return input.roll([-(shape[d] // 2) for d in dims], dims)
