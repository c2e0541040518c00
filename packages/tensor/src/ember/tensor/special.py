"""``ember.tensor.special``: PyTorch's ``torch.special``.

Elementwise special functions over SciPy's ``scipy.special`` on the CPU and CuPy's
``cupyx.scipy.special`` on a CUDA device. SciPy is imported on the first call, so importing
ember.tensor stays fast::

    >>> import ember.tensor as et
    >>> et.special.gammaln(et.tensor([1., 3.]))
    tensor([0.0000, 0.6931])

Differentiable where PyTorch is (and for the Bessel functions, whose derivatives are other
Bessel functions); the orthogonal polynomials and ``airy_ai`` are not.
"""
from __future__ import annotations

from . import _special_ops as _S
from ._composite import declare_composites as _declare_composites
from ._extra_ops import log_softmax as _log_softmax
from ._extra_ops import softmax as _softmax
from ._pointwise import erf, erfc, erfinv, exp2, expm1, log1p, sigmoid
from ._pointwise import round as _round
from ._reduction import logsumexp
from ._tensor import Tensor as _Tensor

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

erfcx = _S.SPECIAL["erfcx"]
i0e = _S.SPECIAL["i0e"]
i1 = _S.SPECIAL["i1"]
i1e = _S.SPECIAL["i1e"]
ndtr = _S.SPECIAL["ndtr"]
ndtri = _S.SPECIAL["ndtri"]
log_ndtr = _S.SPECIAL["log_ndtr"]
entr = _S.SPECIAL["entr"]
bessel_j0 = _S.SPECIAL["bessel_j0"]
bessel_j1 = _S.SPECIAL["bessel_j1"]
bessel_y0 = _S.SPECIAL["bessel_y0"]
bessel_y1 = _S.SPECIAL["bessel_y1"]
modified_bessel_i0 = _S.SPECIAL["modified_bessel_i0"]
modified_bessel_i1 = _S.SPECIAL["modified_bessel_i1"]
modified_bessel_k0 = _S.SPECIAL["modified_bessel_k0"]
modified_bessel_k1 = _S.SPECIAL["modified_bessel_k1"]
scaled_modified_bessel_k0 = _S.SPECIAL["scaled_modified_bessel_k0"]
scaled_modified_bessel_k1 = _S.SPECIAL["scaled_modified_bessel_k1"]
spherical_bessel_j0 = _S.SPECIAL["spherical_bessel_j0"]
airy_ai = _S.SPECIAL["airy_ai"]
chebyshev_polynomial_t = _S.SPECIAL["chebyshev_polynomial_t"]
chebyshev_polynomial_u = _S.SPECIAL["chebyshev_polynomial_u"]
chebyshev_polynomial_v = _S.SPECIAL["chebyshev_polynomial_v"]
chebyshev_polynomial_w = _S.SPECIAL["chebyshev_polynomial_w"]
shifted_chebyshev_polynomial_t = _S.SPECIAL["shifted_chebyshev_polynomial_t"]
shifted_chebyshev_polynomial_u = _S.SPECIAL["shifted_chebyshev_polynomial_u"]
shifted_chebyshev_polynomial_v = _S.SPECIAL["shifted_chebyshev_polynomial_v"]
shifted_chebyshev_polynomial_w = _S.SPECIAL["shifted_chebyshev_polynomial_w"]
hermite_polynomial_h = _S.SPECIAL["hermite_polynomial_h"]
hermite_polynomial_he = _S.SPECIAL["hermite_polynomial_he"]
laguerre_polynomial_l = _S.SPECIAL["laguerre_polynomial_l"]
legendre_polynomial_p = _S.SPECIAL["legendre_polynomial_p"]

gammaln = _S.lgamma
digamma = psi = _S.digamma
polygamma = _S.polygamma
multigammaln = _S.mvlgamma
i0 = _S.i0
sinc = _S.sinc
logit = _S.logit
xlogy = _S.xlogy
xlog1py = _S.special_xlog1py
zeta = _S.special_zeta
gammainc = _S.igamma
gammaincc = _S.igammac
expit = sigmoid
round = _round  # noqa: A001


def softmax(input: _Tensor, dim: int, *, dtype=None) -> _Tensor:
    """``exp(x - logsumexp(x, dim))`` along ``dim``.

    >>> softmax(tensor([0., 0.]), 0)
    tensor([0.5000, 0.5000])
    """
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input: _Tensor, dim: int, *, dtype=None) -> _Tensor:
    """``x - logsumexp(x, dim)`` along ``dim``.

    >>> log_softmax(tensor([0., 0.]), 0)
    tensor([-0.6931, -0.6931])
    """
    return _log_softmax(input, dim, dtype=dtype)


_declare_composites(globals(), prefix="special_")  # diagnosed when a call fails
