"""Op-table entries for ``ember.tensor.fft``'s transforms (``FFT_ENTRIES``, appended to
``op_table.OP_TABLE``).

References are NumPy's ``numpy.fft`` with the same ``n``/``s``, axes and ``norm``; PyTorch's
``hfftn``/``ihfftn``, which NumPy lacks, are NumPy's ``irfftn``/``rfftn`` of the conjugate with
the scaling moved to the other direction. A transform that takes both real and complex input
has two entries (``fft_fft``, ``fft_fft_complex``), so that gradcheck and gradgradcheck run on
float64 and on complex128 inputs.
"""
from __future__ import annotations

import numpy as np

import ember.tensor as et

from ._harness import COMPLEX, FLOAT, INT, OpEntry, Sample, _rand

__all__ = ["FFT_ENTRIES"]

_FLIP = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _S(*args, **kwargs) -> Sample:
    return Sample(tuple(args), kwargs)


def _complex_of(s, d):
    return {"float64": "complex128", "complex128": "complex128"}.get(d, "complex64")


def _real_of(s, d):
    return {"float64": "float64", "complex128": "float64"}.get(d, "float32")


# --------------------------------------------------------------------------- references
def _axes(x, s, dim, default):
    """The axes of an n-d transform as PyTorch picks them (``default``: fft2's (-2, -1),
    or None for the n-d forms: the last ``len(s)`` dims, else every dim)."""
    dim = default if dim is None else dim
    if dim is None:
        return tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _sizes(x, s, axes, onesided_in=False):
    """``s`` with ``-1`` replaced by the default size (for a one-sided input's last axis:
    ``2 * (m - 1)``)."""
    if s is None:
        return None
    out = [x.shape[a] if n == -1 else n for n, a in zip(s, axes)]
    if onesided_in and s[-1] == -1:
        out[-1] = 2 * (x.shape[axes[-1]] - 1)
    return out


def _np_nd(fn, default=None, onesided_in=False, flip=False, conj_in=False, conj_out=False):
    def ref(x, s=None, dim=None, norm=None):
        axes = _axes(x, s, dim, default)
        sizes = _sizes(x, s, axes, onesided_in)
        if onesided_in and sizes is None:
            sizes = [x.shape[a] for a in axes[:-1]] + [2 * (x.shape[axes[-1]] - 1)]
        y = fn(np.conj(x) if conj_in else x, sizes, axes, _FLIP[norm] if flip else norm)
        return np.conj(y) if conj_out else y
    return ref


_REFS = {
    "fft": lambda x, n=None, dim=-1, norm=None: np.fft.fft(x, n, dim, norm),
    "ifft": lambda x, n=None, dim=-1, norm=None: np.fft.ifft(x, n, dim, norm),
    "rfft": lambda x, n=None, dim=-1, norm=None: np.fft.rfft(x, n, dim, norm),
    "irfft": lambda x, n=None, dim=-1, norm=None: np.fft.irfft(x, n, dim, norm),
    "hfft": lambda x, n=None, dim=-1, norm=None: np.fft.hfft(x, n, dim, norm),
    "ihfft": lambda x, n=None, dim=-1, norm=None: np.fft.ihfft(x, n, dim, norm),
    "fft2": _np_nd(np.fft.fftn, (-2, -1)),
    "ifft2": _np_nd(np.fft.ifftn, (-2, -1)),
    "rfft2": _np_nd(np.fft.rfftn, (-2, -1)),
    "irfft2": _np_nd(np.fft.irfftn, (-2, -1), onesided_in=True),
    "hfft2": _np_nd(np.fft.irfftn, (-2, -1), onesided_in=True, flip=True, conj_in=True),
    "ihfft2": _np_nd(np.fft.rfftn, (-2, -1), flip=True, conj_out=True),
    "fftn": _np_nd(np.fft.fftn),
    "ifftn": _np_nd(np.fft.ifftn),
    "rfftn": _np_nd(np.fft.rfftn),
    "irfftn": _np_nd(np.fft.irfftn, onesided_in=True),
    "hfftn": _np_nd(np.fft.irfftn, onesided_in=True, flip=True, conj_in=True),
    "ihfftn": _np_nd(np.fft.rfftn, flip=True, conj_out=True),
}


# --------------------------------------------------------------------------- samples
def _samples_1d(onesided_in: bool):
    """``n`` trimming and padding, ``dim`` and each ``norm``; for a one-sided input (irfft,
    hfft) ``n`` is the output's length, ``n // 2 + 1`` the input's."""
    def gen(d, rng):
        r = lambda *shape: _rand(shape, d, rng)  # noqa: E731
        if onesided_in:
            return [_S(r(4)), _S(r(3, 5), 7), _S(r(2, 3), 10, 0, "ortho"),
                    _S(r(3, 4), None, 0, "forward"), _S(r(2, 3), norm="backward")]
        return [_S(r(5)), _S(r(3, 6), 4), _S(r(2, 5), 8, 0, "ortho"),
                _S(r(3, 4), None, 0, "forward"), _S(r(2, 3), norm="backward")]
    return gen


def _samples_2d(d, rng):
    r = lambda *shape: _rand(shape, d, rng)  # noqa: E731
    return [_S(r(3, 4)), _S(r(2, 3, 4), (4, 3)), _S(r(3, 2, 4), (2, 5), (2, 0), "ortho"),
            _S(r(2, 4, 3), None, (0, -1), "forward"), _S(r(3, 4), (-1, 6), norm="backward")]


def _samples_nd(d, rng):
    r = lambda *shape: _rand(shape, d, rng)  # noqa: E731
    return [_S(r(2, 3, 4)), _S(r(2, 3, 4), (4, 3)), _S(r(3, 2, 4), (2, 5), (2, 0), "ortho"),
            _S(r(2, 4, 3), None, (1,), "forward"), _S(r(3, 4), (-1, 6), norm="backward")]


# --------------------------------------------------------------------------- entries
_RR = FLOAT + INT


def _entry(name: str, dtypes, ops, complex_out: bool, suffix: str = "") -> OpEntry:
    onesided_in = name in ("irfft", "hfft")
    samples = (_samples_2d if name.endswith("2") else _samples_nd if name.endswith("n")
               else _samples_1d(onesided_in))
    return OpEntry(f"fft_{name}{suffix}", getattr(et.fft, name), _REFS[name], samples,
                   dtypes=dtypes, method=None, ops=ops,
                   out_dtype=_complex_of if complex_out else _real_of)


FFT_ENTRIES: list[OpEntry] = []
for _n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn"):
    _conj = ("conj",) if _n == "ifft" else ()
    _real_ops = ("_fft_r2c",) + _conj if _n in ("fft", "ifft") else ("_fft_c2c", "_to_copy")
    FFT_ENTRIES += [_entry(_n, _RR, _real_ops, True),
                    _entry(_n, COMPLEX, ("_fft_c2c",), True, "_complex")]
for _n in ("rfft", "rfft2", "rfftn"):
    FFT_ENTRIES.append(_entry(_n, _RR, ("_fft_r2c",), True))
for _n in ("ihfft", "ihfft2", "ihfftn"):
    FFT_ENTRIES.append(_entry(_n, _RR, ("_fft_r2c", "conj"), True))
for _n in ("irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn"):
    _ops = ("_fft_c2r", "conj") if _n.startswith("h") else ("_fft_c2r",)
    FFT_ENTRIES += [_entry(_n, FLOAT, _ops, False),
                    _entry(_n, COMPLEX, _ops, False, "_complex")]
