"""``torch.fft``'s real-valued functions: ``fftfreq``, ``rfftfreq``, ``fftshift`` and
``ifftshift`` (composites of registry ops: ``roll`` carries the shifts' gradients).

The transforms themselves (``fft``, ``rfft``, ``irfft``, ``hfft``, ...) take or return complex
tensors, and wait for ember's complex dtypes.
"""
from __future__ import annotations

from . import _dtype as D
from ._tensor import Tensor

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _freqs(vals, n: int, d: float, dtype, device, requires_grad, out):
    from ._creation import tensor

    dt = dtype or (out.dtype if out is not None else D.get_default_dtype())
    r = tensor([v / (n * d) for v in vals], dtype=dt, device=device,
               requires_grad=requires_grad)
    if out is not None:
        from ._registry import write_out

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
    return input.roll([input.shape[d] // 2 for d in dims], dims)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of :func:`fftshift`.

    >>> ifftshift(tensor([-2, -1, 0, 1, 2]))
    tensor([ 0,  1,  2, -2, -1])
    """
    dims = _dims(input, dim)
    if not dims:
        return input.clone()
    return input.roll([-(input.shape[d] // 2) for d in dims], dims)
