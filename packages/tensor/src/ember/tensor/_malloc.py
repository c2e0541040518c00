"""Keep the large blocks a training step frees for the next step (glibc's ``malloc``).

NumPy takes every array's memory from ``malloc``. glibc serves a request above its mmap
threshold (128 KiB at start) with fresh pages from the kernel, and returns free memory at the
top of its heap to the kernel past its trim threshold; it raises both thresholds only after a
large block has been freed, and only up to the size of that block. A training step allocates
and frees the same large temporaries every iteration (im2col columns, GEMM outputs,
gradients), so with the defaults many of them arrive as fresh pages that fault in on first
touch: LeNet's step at batch 64 took about 2000 page faults, 40% of its time, in a process
whose heap had not yet grown (one that loads its Numba kernels from the on-disk cache).

:func:`tune` sets the mmap threshold to glibc's ceiling (32 MiB on 64-bit) and the trim
threshold to 512 MiB once, at import, which is what a caching allocator does: freed blocks
stay in the process and are reused. Blocks larger than the threshold are still mapped and
unmapped directly. Nothing is changed where the user has chosen these settings
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``, ``GLIBC_TUNABLES``), where
``EMBER_MALLOC_TUNING=0``, or on a C library other than glibc.
"""
from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit
TRIM_THRESHOLD = 512 << 20


def _user_chose() -> bool:
    env = os.environ
    return (env.get("EMBER_MALLOC_TUNING", "1") == "0"
            or "MALLOC_MMAP_THRESHOLD_" in env or "MALLOC_TRIM_THRESHOLD_" in env
            or "glibc.malloc" in env.get("GLIBC_TUNABLES", ""))


def tune() -> bool:
    """Raise glibc's mmap and trim thresholds (see the module's docstring); returns whether
    they were set."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc" or _user_chose():
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
