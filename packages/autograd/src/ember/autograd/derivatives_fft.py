"""The derivative table's entries for ``ember.tensor.fft``'s three primitives.

Every public transform is a composite of these (and of ``cat``/``narrow``/``conj``, which have
their own entries), as in PyTorch. Gradients follow PyTorch's convention for complex tensors
(the gradient of a real loss at ``z = x + iy`` is ``dL/dx + i dL/dy``): the adjoint of a DFT is
the DFT in the other direction with the same scaling. The formulas are written with the
primitives themselves, so second derivatives come from the same table.
"""
from __future__ import annotations

import numpy as np

import ember.tensor as et
from ember.tensor import extension as _ext

from .derivatives import vjp

__all__: list[str] = []

_c2c = _ext.OPS["_fft_c2c"].public
_r2c = _ext.OPS["_fft_r2c"].public
_c2r = _ext.OPS["_fft_c2r"].public


@vjp("_fft_c2c", complex="own")
def _fft_c2c(c, g):
    a = c.args
    return (_c2c(g, a.dim, a.normalization, not a.forward),)


@vjp("_fft_r2c", complex="own")
def _fft_r2c(c, g):
    """The one-sided transform is the full one with the upper half dropped: its adjoint pads
    the gradient back with zeros, then takes the real part of the inverse-direction DFT."""
    a = c.args
    if a.onesided:
        last = a.dim[-1]
        missing = c.meta[0][0][last] - g.shape[last]
        if missing > 0:
            shape = list(g.shape)
            shape[last] = missing
            g = et.cat([g, et.zeros(shape, dtype=g.dtype, device=g.device)], last)
    return (et.real(_c2c(g, a.dim, a.normalization, False)),)


@vjp("_fft_c2r", complex="own")
def _fft_c2r(c, g):
    """``c2r`` fills the upper half by conjugate symmetry, then runs the inverse-direction DFT
    and keeps the real part. Its adjoint is the forward one-sided DFT of the gradient with the
    bins whose mirror image lies outside the one-sided half (``1 .. n - (n // 2 + 1)``)
    counted twice."""
    a = c.args
    gi = _r2c(g, a.dim, a.normalization, True)
    last = a.dim[-1] % gi.dim()
    half = gi.shape[last]
    doubled = g.shape[last] - half
    if doubled <= 0:
        return (gi,)
    w = np.ones(half)
    w[1:1 + doubled] = 2.0
    weight = et.tensor(w.reshape((half,) + (1,) * (gi.dim() - 1 - last)),
                       dtype=gi.dtype.to_real(), device=gi.device)
    return (gi * weight,)
