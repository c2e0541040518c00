"""``torch.backends.cuda``: ``matmul.allow_tf32`` (PyTorch's other spelling of
:func:`ember.tensor.set_float32_matmul_precision`), the reduced-precision reduction switches,
and the scaled-dot-product-attention kernel switches, which ember keeps for code that reads
them back (its attention is one kernel on every device).

    >>> import ember.tensor as et
    >>> from ember.tensor.backends import cuda
    >>> cuda.matmul.allow_tf32 = True
    >>> et.get_float32_matmul_precision()
    'high'
    >>> cuda.matmul.allow_tf32 = False
"""
from __future__ import annotations

import contextlib

__all__ = ["is_built", "matmul", "flash_sdp_enabled", "enable_flash_sdp",
           "mem_efficient_sdp_enabled", "enable_mem_efficient_sdp", "math_sdp_enabled",
           "enable_math_sdp", "cudnn_sdp_enabled", "enable_cudnn_sdp", "sdp_kernel"]


def is_built() -> bool:
    """Whether CuPy (ember's CUDA backend) is installed."""
    from .. import _cupy

    return _cupy.cupy is not None


class _Matmul:
    """``torch.backends.cuda.matmul``: its attributes, and no others (PyTorch raises
    AttributeError for an unknown one, read or set)."""

    _names = ("allow_tf32", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_flags", {"allow_fp16_reduced_precision_reduction": True,
                                            "allow_bf16_reduced_precision_reduction": True})

    def __getattr__(self, name):
        if name == "allow_tf32":
            from .._extra_ops import get_float32_matmul_precision

            return get_float32_matmul_precision() != "highest"
        if name in self._flags:
            return self._flags[name]
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            from .._extra_ops import set_float32_matmul_precision

            set_float32_matmul_precision("high" if value else "highest")
        elif name in self._flags:
            self._flags[name] = bool(value)
        else:
            raise AttributeError("Unknown attribute " + name)


matmul = _Matmul()

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _sdp["flash"]


def enable_flash_sdp(enabled: bool) -> None:
    _sdp["flash"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _sdp["mem_efficient"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _sdp["mem_efficient"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _sdp["math"]


def enable_math_sdp(enabled: bool) -> None:
    _sdp["math"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _sdp["cudnn"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _sdp["cudnn"] = bool(enabled)


@contextlib.contextmanager
def sdp_kernel(enable_flash: bool = True, enable_math: bool = True,
               enable_mem_efficient: bool = True, enable_cudnn: bool = True):
    """The attention kernel switches for the ``with`` block (PyTorch's deprecated context
    manager), restored after it."""
    old = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math),
                mem_efficient=bool(enable_mem_efficient), cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.update(old)
