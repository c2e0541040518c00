"""CPU kernels (NumPy + Numba) on raw NumPy arrays.

Importing this package imports neither numba nor any kernel module: each public wrapper is
resolved on first attribute access (module ``__getattr__``), and its Numba functions compile on
their first call (``cache=True`` keeps the machine code on disk for later processes).

>>> import numpy as np
>>> from ember.tensor.kernels import cpu
>>> out = np.zeros((1, 3, 2)); cpu.index_add(out, np.array([2, 2]), np.ones((1, 2, 2)))
>>> out[0, 2].tolist()
[2.0, 2.0]
"""

from __future__ import annotations

import importlib
from typing import Any

#: Every kernel name -> the submodule that defines it. This table is the list of kernels:
#: ``ember.tensor.kernels.KERNEL_NAMES`` is its keys, and the CUDA module checks its names
#: against it.
_WHERE: dict[str, str] = {
    "index_add": "scatter",
    "embedding_backward": "scatter",
    "gather_dim": "scatter",
    "scatter_dim": "scatter",
    "max_pool_forward": "pool",
    "max_pool_backward": "pool",
    "im2col": "fold",
    "col2im": "fold",
    "softmax_forward": "softmax",
    "softmax_backward": "softmax",
    "log_softmax_forward": "softmax",
    "log_softmax_backward": "softmax",
    "cross_entropy_forward": "softmax",
    "cross_entropy_backward": "softmax",
    "layer_norm_forward": "norm",
    "layer_norm_backward": "norm",
    "scan_dim": "scan",
    "select_dim": "select",
    "topk_dim": "select",
    "lstm_cell_forward": "rnn",
    "lstm_cell_backward": "rnn",
    "gru_cell_forward": "rnn",
    "gru_cell_backward": "rnn",
    "adam_step": "optim",
    "sgd_step": "optim",
    "fmod": "elementwise",
    "remainder": "elementwise",
    "floor_divide": "elementwise",
    "nan_to_num": "elementwise",
    "sigmoid": "activation",
    "sigmoid_backward": "activation",
    "tanh_backward": "activation",
    "threshold_backward": "activation",
    "silu": "activation",
    "silu_backward": "activation",
    "softplus": "activation",
    "softplus_backward": "activation",
    "elu": "activation",
    "elu_backward": "activation",
    "hardsigmoid": "activation",
    "hardsigmoid_backward": "activation",
    "hardswish": "activation",
    "hardswish_backward": "activation",
    "mish": "activation",
    "mish_backward": "activation",
    "log_sigmoid": "activation",
    "log_sigmoid_backward": "activation",
    "logaddexp": "elementwise",
    "logaddexp2": "elementwise",
    "outer": "elementwise",
    "hypot": "elementwise",
    "sign": "elementwise",
    "frac": "elementwise",
    "round_decimals": "elementwise",
    "make_complex": "elementwise",
    "copysign": "elementwise",
    "angle": "elementwise",
    "gelu": "erf",
    "gelu_backward": "erf",
    "fill": "filled",
    "arange_values": "filled",
    "linspace_values": "filled",
    "triangle_zero": "triangle",
    "orthogonal_poly": "poly",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    submodule = _WHERE.get(name)
    if submodule is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{submodule}")
    for public, where in _WHERE.items():  # later lookups skip __getattr__
        if where == submodule:
            globals()[public] = getattr(module, public)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
