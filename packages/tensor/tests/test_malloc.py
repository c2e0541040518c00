"""ember.tensor keeps freed large blocks for reuse (glibc's malloc thresholds, set at import).

The oracle is the kernel's page-fault count: a loop that allocates, touches and frees the same
large temporaries faults on fresh pages every iteration under glibc's defaults, and not at all
once the blocks are reused."""
import platform
import subprocess
import sys

import pytest

from ember.tensor import _malloc

glibc = pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                           reason="the thresholds are glibc's")

_LOOP = """
import resource, sys
import numpy as np
import ember.tensor
def step():  # three 4 MiB temporaries alive at once, then all freed: more than glibc's trim
    # threshold (twice the largest block freed so far) comes free at the top of the heap
    a = [np.ones(4 << 20, dtype=np.uint8) for _ in range(3)]
    return sum(int(x[-1]) for x in a)
for _ in range(3):
    step()
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    step()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - r0) / 20)
"""


def _faults_per_step(env_extra):
    import os

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MALLOC_") and k != "EMBER_MALLOC_TUNING"}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", _LOOP], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


@glibc
def test_freed_blocks_are_reused_without_page_faults():
    tuned = _faults_per_step({})
    untuned = _faults_per_step({"EMBER_MALLOC_TUNING": "0"})
    # the trimmed part of the heap (4 MiB or more) faults in again every step: 1000 faults
    # or more; reused blocks fault almost never
    assert untuned > 500
    assert tuned < 50


@glibc
@pytest.mark.parametrize("var, value", [("EMBER_MALLOC_TUNING", "0"),
                                        ("MALLOC_MMAP_THRESHOLD_", "1048576"),
                                        ("MALLOC_TRIM_THRESHOLD_", "1048576"),
                                        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1")])
def test_the_users_own_settings_are_left_alone(monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    assert _malloc.tune() is False


@glibc
def test_tune_sets_both_thresholds(monkeypatch):
    for var in ("EMBER_MALLOC_TUNING", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                "GLIBC_TUNABLES"):
        monkeypatch.delenv(var, raising=False)
    assert _malloc.tune() is True
