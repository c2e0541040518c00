"""ember.onnx: export of traced ember models to ONNX, and import of ONNX graphs as Modules.

    >>> import ember.nn as nn, ember.tensor as et, ember.onnx
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    >>> proto = ember.onnx.export(model, et.randn(3, 4), None, input_names=["x"],
    ...                           dynamic_axes={"x": [0]})
    >>> [n.op_type for n in proto.graph.node][:3]
    ['Gemm', 'Relu', 'Gemm']
    >>> back = ember.onnx.load_model(proto)
"""
from __future__ import annotations

__version__ = "0.1.0"

from ._export import DEFAULT_OPSET, MIN_OPSET, TracerWarning, TrainingMode, export, max_opset
from ._graph import UnsupportedOperatorError
from ._import import ONNXModule, load_model
from ._symbolic import SYMBOLICS, register, register_module


def supported_ops() -> list[str]:
    """The registry op names that export maps (in-place variants ``op_`` follow ``op``)."""
    return sorted(SYMBOLICS)


__all__ = ["export", "load_model", "ONNXModule", "TracerWarning", "TrainingMode",
           "UnsupportedOperatorError", "register", "register_module", "supported_ops", "max_opset",
           "DEFAULT_OPSET", "MIN_OPSET", "__version__"]
