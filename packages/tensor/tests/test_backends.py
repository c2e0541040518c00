"""``ember.tensor.backends`` (PyTorch's ``torch.backends``): the switches training scripts set
are kept and read back, the context managers restore them, the backends ember lacks say so,
and ``cuda.matmul.allow_tf32`` is the float32 matmul precision. PyTorch's defaults are checked
in ``tests/parity/test_parity_backends.py``."""
from __future__ import annotations

import importlib

import pytest

import ember.tensor as et
from ember.tensor import backends


def test_modules_import_as_pytorch_scripts_import_them():
    cudnn = importlib.import_module("ember.tensor.backends.cudnn")
    assert cudnn is et.backends.cudnn is backends.cudnn
    assert importlib.import_module("ember.tensor.backends.cuda") is backends.cuda
    assert importlib.import_module("ember.tensor.backends.mps") is backends.mps


def test_cudnn_switches_are_kept_and_flags_restores_them():
    cudnn = backends.cudnn
    assert cudnn.is_available() is False and cudnn.version() is None
    saved = (cudnn.benchmark, cudnn.deterministic)
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert cudnn.benchmark is True and cudnn.deterministic is True
        with cudnn.flags(enabled=False, benchmark=False, deterministic=False):
            assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (False, False, False)
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic) == (True, True, True)
        with pytest.raises(ZeroDivisionError), cudnn.flags(enabled=True, benchmark=True):
            raise ZeroDivisionError
        assert cudnn.benchmark is True
    finally:
        cudnn.benchmark, cudnn.deterministic = saved


def test_allow_tf32_is_the_matmul_precision():
    m = backends.cuda.matmul
    assert et.get_float32_matmul_precision() == "highest" and m.allow_tf32 is False
    try:
        m.allow_tf32 = True
        assert et.get_float32_matmul_precision() == "high"
        et.set_float32_matmul_precision("medium")
        assert m.allow_tf32 is True
    finally:
        et.set_float32_matmul_precision("highest")
    assert m.allow_tf32 is False
    m.allow_fp16_reduced_precision_reduction = False
    assert m.allow_fp16_reduced_precision_reduction is False
    m.allow_fp16_reduced_precision_reduction = True
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
        m.allow_tf33 = True
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
        m.allow_tf33  # noqa: B018


def test_sdp_switches_and_context():
    cuda = backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
        assert not cuda.flash_sdp_enabled() and not cuda.mem_efficient_sdp_enabled()
        assert cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    cuda.enable_math_sdp(False)
    assert not cuda.math_sdp_enabled()
    cuda.enable_math_sdp(True)
    assert cuda.is_built() is (importlib.util.find_spec("cupy") is not None)


def test_mps_is_absent():
    assert backends.mps.is_available() is False and backends.mps.is_built() is False
