"""``ember.tensor.fft``: PyTorch's ``torch.fft``, its real-valued part.

``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` are here; the transforms
(``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their 2-d / n-d forms) take or
return complex tensors and arrive with ember's complex dtypes::

    >>> import ember.tensor as et
    >>> et.fft.fftshift(et.fft.fftfreq(4))
    tensor([-0.5000, -0.2500,  0.0000,  0.2500])
"""
from __future__ import annotations

from ._fft_ops import fftfreq, fftshift, ifftshift, rfftfreq

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]
