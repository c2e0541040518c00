"""Recompute the coefficients of ``packages/tensor/src/ember/tensor/kernels/cpu/erf.py``
(needs mpmath): Chebyshev interpolation at high precision, converted to monomials.

    python tools/fit_erf.py
"""
from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def cheb_fit(g, n, m):
    """The first ``n`` Chebyshev coefficients of ``g`` on [-1, 1] from ``m`` nodes."""
    th = [mp.pi * (j + mp.mpf(1) / 2) / m for j in range(m)]
    vals = [g(mp.cos(t)) for t in th]
    return [2 * mp.fsum(v * mp.cos(k * t) for v, t in zip(vals, th)) / m for k in range(n)]


def cheb_to_mono(c):
    """sum c_k T_k(s) (c_0 halved) as monomial coefficients in s, lowest first."""
    T = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]
    for k in range(2, len(c)):
        a = [mp.mpf(0)] + [2 * v for v in T[k - 1]]
        b = T[k - 2] + [mp.mpf(0)] * (len(a) - len(T[k - 2]))
        T.append([x - y for x, y in zip(a, b)])
    m = [mp.mpf(0)] * len(c)
    for k, ck in enumerate(c):
        for j, v in enumerate(T[k]):
            m[j] += (ck / 2 if k == 0 else ck) * v
    return m


def tail(K, amax, n):
    """G(s) = (a + K) exp(a^2) erfc(a), t = (a - K) / (a + K), s = al t + be on a in
    [0, amax]."""
    tmax = (amax - K) / (amax + K)
    al = 2 / (tmax + 1)
    be = al - 1

    def g(s):
        t = (s - be) / al
        a = K * (1 + t) / (1 - t)
        return (a + K) * mp.exp(a * a) * mp.erfc(a)

    return cheb_to_mono(cheb_fit(g, n, n + 30)), (al, be)


def near(n):
    """erf(x) / x as a polynomial in u = x^2 on [0, 1]."""
    def g(s):
        x = mp.sqrt((s + 1) / 2)
        return mp.erf(x) / x if x else 2 / mp.sqrt(mp.pi)

    m = cheb_to_mono(cheb_fit(g, n, n + 30))  # in s = 2u - 1
    out = [mp.mpf(0)] * n
    for k in range(n):
        for j in range(k + 1):
            out[j] += m[k] * mp.binomial(k, j) * 2 ** j * (-1) ** (k - j)
    return out


def inv_tail(n):
    """erfinv(y) / y for w = -log(1 - y^2) in [5, 36.2], a polynomial in s = al sqrt(w) + be."""
    v0, v1 = mp.sqrt(5), mp.sqrt(mp.mpf(36.2))
    al = 2 / (v1 - v0)
    be = -1 - al * v0

    def g(s):
        v = (s - be) / al
        y = mp.sqrt(-mp.expm1(-v * v))
        return mp.erfinv(y) / y

    return cheb_to_mono(cheb_fit(g, n, n + 30)), (al, be)


def show(name, m, ab=None):
    print(f"{name} = (" + ", ".join(repr(float(x)) for x in reversed(m)) + ")")
    if ab:
        print(f"{name}_AB = ({float(ab[0])!r}, {float(ab[1])!r})")


if __name__ == "__main__":
    show("_T64", *tail(4, 27.5, 24))
    show("_T32", *tail(3, 10.5, 10))
    show("_S64", near(14))
    show("_S32", near(6))
    show("_GB64", *inv_tail(12))
