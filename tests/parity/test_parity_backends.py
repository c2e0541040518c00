"""``ember.tensor.backends`` against ``torch.backends`` (PyTorch 2.13 CPU build): the same
defaults for the switches both keep, the same answers where neither has the backend, and the
same link between ``cuda.matmul.allow_tf32`` and the float32 matmul precision."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402


def test_cudnn_defaults_and_absence():
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(et.backends.cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert et.backends.cudnn.is_available() == torch.backends.cudnn.is_available()
    assert et.backends.cudnn.version() == torch.backends.cudnn.version()
    with et.backends.cudnn.flags(), torch.backends.cudnn.flags():
        assert et.backends.cudnn.enabled == torch.backends.cudnn.enabled


def test_matmul_flags_follow_the_precision():
    em, tm = et.backends.cuda.matmul, torch.backends.cuda.matmul
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(em, name) == getattr(tm, name), name
    try:
        for value in (True, False):
            em.allow_tf32 = tm.allow_tf32 = value
            assert et.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
        for precision in ("medium", "highest"):
            et.set_float32_matmul_precision(precision)
            torch.set_float32_matmul_precision(precision)
            assert em.allow_tf32 == tm.allow_tf32
    finally:
        et.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")
    for obj in (em, tm):
        with pytest.raises(AttributeError, match="Unknown attribute"):
            obj.nonexistent = 1


def test_sdp_switches_and_mps():
    b, tb = et.backends, torch.backends
    for name in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled"):
        assert getattr(b.cuda, name)() == getattr(tb.cuda, name)(), name
    assert b.mps.is_available() == tb.mps.is_available()
    assert b.mps.is_built() == tb.mps.is_built()
