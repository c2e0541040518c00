"""Fixtures shared by the tensor core's tests."""
from __future__ import annotations

import os

import pytest

import ember.tensor._cupy as _cupy


@pytest.fixture
def cp():
    """CuPy, or a skip with the reason (a failure when EMBER_REQUIRE_GPU=1)."""
    if not _cupy.available:
        reason = f"CUDA is not available ({_cupy.unavailable_reason()})"
        if os.environ.get("EMBER_REQUIRE_GPU") == "1":
            pytest.fail(f"EMBER_REQUIRE_GPU=1 but {reason}")
        pytest.skip(reason)
    return _cupy.cupy
