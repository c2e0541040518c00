"""Special functions (erf, erfc, erfinv): NumPy has none, so the CPU versions are the
branch-free Numba loops of ``cpu/erf.py`` (compiled on first use, cached) and the CUDA
versions come from ``cupyx.scipy.special``."""
from __future__ import annotations

import numpy as np

_cpu = None  # cpu/erf.py (Numba), imported by the first call on the CPU


def _apply(name: str, xp, d):
    global _cpu
    # other dtypes (float16, bfloat16) are computed in float32 and rounded once, on both devices
    work = d if d.dtype in (np.float32, np.float64) else d.astype(np.float32)
    if xp is np:
        if _cpu is None:
            from .cpu import erf as _cpu
        out = getattr(_cpu, name)(work)
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
