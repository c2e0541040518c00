"""The device parametrization shared by ember's device tests.

``DEVICES`` is the list to hand to ``pytest.mark.parametrize("device", DEVICES)``: ``"cpu"``
and ``"cuda"`` (the latter carries the ``cuda`` marker of the root ``pytest.ini``, so
``-m "not cuda"`` deselects it). A test taking ``device`` calls :func:`require_device` first:

- ``"cpu"`` always runs;
- ``"cuda"`` / ``"cuda:N"`` runs when a probe allocation through ember on that device works
  (``ember.tensor.zeros(1, device=...)`` then a copy back to the host); otherwise the test is
  skipped with ``"CUDA not available: <reason>"``, the reason being ember's own error (no
  CuPy, no driver, no device...). With ``EMBER_REQUIRE_GPU=1`` in the environment the same
  situation *fails* the test instead, so a CI job meant to run on a GPU cannot pass silently.

The test files load this module by path (the root ``pytest.ini`` uses
``--import-mode=importlib``, which puts no test folder on ``sys.path``)::

    _p = Path(__file__).resolve().parents[2] / "tensor" / "tests" / "devices.py"
    _s = importlib.util.spec_from_file_location("ember_test_devices", _p)
    DV = sys.modules.setdefault("ember_test_devices", importlib.util.module_from_spec(_s))
    _s.loader.exec_module(DV)

This module imports only pytest, NumPy and ember.tensor, so every package's tests can use it.
"""
from __future__ import annotations

import functools
import os

import numpy as np
import pytest

import ember.tensor as et

__all__ = ["DEVICES", "CUDA_ONLY", "REQUIRE_GPU_ENV", "gpu_required", "probe", "require_device",
           "host"]

REQUIRE_GPU_ENV = "EMBER_REQUIRE_GPU"

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda, id="cuda")]
"""``device`` parameters: the CPU, and the default CUDA device (skips without one)."""

CUDA_ONLY = [pytest.param("cuda", marks=pytest.mark.cuda, id="cuda")]
"""For tests that only make sense with a GPU (mixing devices, DLPack with CuPy, ...)."""


def gpu_required() -> bool:
    """True when ``EMBER_REQUIRE_GPU=1``: CUDA cases must run, a missing GPU is a failure."""
    return os.environ.get(REQUIRE_GPU_ENV, "").strip() == "1"


@functools.cache
def probe(device: str) -> str | None:
    """None when ``device`` can hold an ember tensor, else the reason it cannot.

    The probe goes through ember's public API (not CuPy directly), so a broken ember CUDA path
    (not only a missing GPU) is what gets reported.
    """
    try:
        t = et.zeros(1, device=device)
        got = t.cpu().numpy()
        if got.shape != (1,) or got[0] != 0:
            return f"probe allocation on {device} read back {got!r}, expected [0.]"
        if str(t.device).split(":")[0] != device.split(":")[0]:
            return f"probe allocation on {device} landed on {t.device}"
    except Exception as exc:  # RuntimeError from ember, or a driver error through CuPy
        return f"{type(exc).__name__}: {exc}"
    return None


def require_device(device) -> None:
    """Skip (or, with ``EMBER_REQUIRE_GPU=1``, fail) the calling test when ``device`` is
    unusable here. ``"cpu"`` always passes."""
    name = str(device)
    if name == "cpu":
        return
    reason = probe(name)
    if reason is None:
        return
    if gpu_required():
        pytest.fail(f"{REQUIRE_GPU_ENV}=1 but CUDA not available ({name}): {reason}",
                    pytrace=False)
    pytest.skip(f"CUDA not available: {reason}")


def host(t) -> np.ndarray:
    """The values of an ember tensor (any device, with or without grad) as a NumPy array."""
    return np.asarray(t.detach().cpu().numpy())
