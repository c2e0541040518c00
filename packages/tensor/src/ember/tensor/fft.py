"""``ember.tensor.fft``: PyTorch's ``torch.fft``.

The discrete Fourier transforms (``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft``
and their 2-d and n-d forms) over SciPy's ``scipy.fft`` on the CPU and ``cupy.fft`` on a CUDA
device, differentiable, with PyTorch's ``n``/``s``, ``dim`` and ``norm`` arguments and dtypes
(float32 and integers give complex64, float64 complex128); and the helpers ``fftfreq``,
``rfftfreq``, ``fftshift`` and ``ifftshift``::

    >>> import ember.tensor as et
    >>> et.fft.fftshift(et.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    >>> et.fft.irfft(et.fft.rfft(et.tensor([1., 2., 3., 4.])))
    tensor([1., 2., 3., 4.])
"""
from __future__ import annotations

from ._composite import declare_composites as _declare_composites
from ._fft_ops import (
    fft,
    fft2,
    fftfreq,
    fftn,
    fftshift,
    hfft,
    hfft2,
    hfftn,
    ifft,
    ifft2,
    ifftn,
    ifftshift,
    ihfft,
    ihfft2,
    ihfftn,
    irfft,
    irfft2,
    irfftn,
    rfft,
    rfft2,
    rfftfreq,
    rfftn,
)

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn",
           "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_declare_composites(globals(), prefix="fft_")  # diagnosed when a call fails
