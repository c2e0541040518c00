"""Special functions (erf, erfc, erfinv): NumPy has none, so the CPU versions are Numba
ufuncs over ``math.erf``/``math.erfc`` (compiled on first use, cached) and the CUDA versions
come from ``cupyx.scipy.special``."""
from __future__ import annotations

import numpy as np

_cpu = {}


def _build():
    import math

    from numba import vectorize

    sigs = ["float32(float32)", "float64(float64)"]

    @vectorize(sigs, cache=True)
    def erf(x):
        return math.erf(x)

    @vectorize(sigs, cache=True)
    def erfc(x):
        return math.erfc(x)

    @vectorize(sigs, cache=True)
    def erfinv(y):
        # Giles' single-precision approximation refined by two Newton steps on erf.
        if y <= -1.0:
            return -math.inf if y == -1.0 else math.nan
        if y >= 1.0:
            return math.inf if y == 1.0 else math.nan
        w = -math.log((1.0 - y) * (1.0 + y))
        if w < 5.0:
            w -= 2.5
            p = 2.81022636e-08
            for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                      -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):
                p = c + p * w
        else:
            w = math.sqrt(w) - 3.0
            p = -0.000200214257
            for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                      -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):
                p = c + p * w
        x = p * y
        for _ in range(2):
            x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
        return x

    _cpu.update(erf=erf, erfc=erfc, erfinv=erfinv)


def _apply(name: str, xp, d):
    # other dtypes (float16, bfloat16) are computed in float32 and rounded once, on both devices
    work = d if d.dtype in (np.float32, np.float64) else d.astype(np.float32)
    if xp is np:
        if not _cpu:
            _build()
        out = _cpu[name](work)
    else:
        from .._cupy import special_functions

        out = getattr(special_functions(name), name)(work)
    return out.astype(d.dtype, copy=False)


def erf(xp, d):
    return _apply("erf", xp, d)


def erfc(xp, d):
    return _apply("erfc", xp, d)


def erfinv(xp, d):
    return _apply("erfinv", xp, d)
