"""Standard Gamma sampling with implicit reparameterization gradients.

``standard_gamma(alpha)`` draws ``X ~ Gamma(alpha, 1)`` (Marsaglia and Tsang's squeeze, with
the ``alpha < 1`` boost ``X = Y * U ** (1 / alpha)``, ``Y ~ Gamma(alpha + 1)``) and is
differentiable in ``alpha`` by implicit reparameterization: holding the CDF value ``F(X;
alpha)`` fixed, ``dX/dalpha = -(dF/dalpha) / f(X; alpha)`` (Figurnov et al., 2018).
``standard_gamma_grad(alpha, x)`` computes that derivative; ``dF/dalpha`` is a central
difference of the regularized incomplete gamma function (of P or of Q = 1 - P, whichever is
smaller, so the difference keeps its relative precision).
"""
from __future__ import annotations

import ember.tensor as et
from ember.autograd import Function, no_grad
from ember.tensor import Tensor
from ember.tensor import extension as ext

__all__ = ["standard_gamma", "standard_gamma_grad"]


def _sample(alpha: Tensor) -> Tensor:
    xp = ext.array_module(alpha)
    a = xp.asarray(ext.unwrap(alpha.detach().contiguous()), dtype=xp.float64)
    flat = a.reshape(-1)
    n = flat.shape[0]
    boost = flat < 1
    a1 = xp.where(boost, flat + 1.0, flat)
    d = a1 - 1.0 / 3.0
    c = 1.0 / xp.sqrt(9.0 * d)
    out = xp.empty(n, dtype=xp.float64)
    todo = xp.arange(n)
    while todo.shape[0]:
        m = todo.shape[0]
        x = ext.unwrap(et.randn(m, dtype=et.float64, device=alpha.device))
        u = ext.unwrap(et.rand(m, dtype=et.float64, device=alpha.device))
        dt, ct = d[todo], c[todo]
        v = (1.0 + ct * x) ** 3
        with_v = v > 0
        vs = xp.where(with_v, v, 1.0)
        accept = with_v & (xp.log(xp.maximum(u, 1e-300)) <
                           0.5 * x * x + dt - dt * vs + dt * xp.log(vs))
        out[todo[accept]] = (dt * vs)[accept]
        todo = todo[~accept]
    if bool(boost.any()):
        u = ext.unwrap(et.rand(n, dtype=et.float64, device=alpha.device))
        out = xp.where(boost, out * u ** (1.0 / xp.where(boost, flat, 1.0)), out)
    out = out.reshape(a.shape).astype(ext.unwrap(alpha).dtype)
    tiny = float(et.finfo(alpha.dtype).tiny)
    return ext.wrap(xp.maximum(out, tiny))


def standard_gamma_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``dx/dalpha`` for ``x ~ Gamma(alpha, 1)`` at fixed CDF value (no graph)."""
    with no_grad():
        a = alpha.detach().to(et.float64)
        xv = x.detach().to(et.float64)
        h = a * 2.0 ** -17
        p = et.special.gammainc(a, xv)
        use_q = p > 0.5
        hi = et.where(use_q, -et.special.gammaincc(a + h, xv), et.special.gammainc(a + h, xv))
        lo = et.where(use_q, -et.special.gammaincc(a - h, xv), et.special.gammainc(a - h, xv))
        dcdf = (hi - lo) / (2.0 * h)
        log_pdf = (a - 1.0) * et.log(xv) - xv - et.lgamma(a)
        grad = -dcdf / et.exp(log_pdf)
        return grad.to(alpha.dtype)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha):
        x = _sample(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, g):
        alpha, x = ctx.saved_tensors
        return g * standard_gamma_grad(alpha, x)


def standard_gamma(alpha: Tensor) -> Tensor:
    """Draw ``Gamma(alpha, 1)`` samples of ``alpha``'s shape, differentiable in ``alpha``."""
    if alpha.requires_grad:
        return _StandardGamma.apply(alpha)
    return _sample(alpha)
