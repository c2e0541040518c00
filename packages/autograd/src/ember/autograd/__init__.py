"""ember.autograd: dynamic define-by-run reverse-mode automatic differentiation.

Importing this package registers the autograd layer with ember.tensor's op registry; from
then on, ops on tensors that require grad record a graph, and ``backward()`` / :func:`grad`
walk it backwards::

    >>> import ember.tensor as et, ember.autograd as ag
    >>> x = et.tensor([1., 2., 3.], requires_grad=True)
    >>> x.mean().backward(); x.grad
    tensor([0.3333, 0.3333, 0.3333])
"""
from __future__ import annotations

__version__ = "0.1.1"

from ember.tensor import extension as _extension

from . import (  # the derivative table, with nn's primitives, linalg, special, fft, sparse
    checkpoint,
    derivatives,
    derivatives_extra,  # noqa: F401
    derivatives_fft,  # noqa: F401
    derivatives_linalg,  # noqa: F401
    derivatives_nn,  # noqa: F401
    derivatives_sparse,  # noqa: F401
    derivatives_special,  # noqa: F401
    engine,
    forward_ad,
    func,
    functional,
    graph,
    inplace,
)
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .api import Variable, _engine_api, backward, grad
from .autobatch import autobatch
from .function import Function, FunctionCtx, InplaceFunction, NestedIOFunction, once_differentiable
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .gradcheck import gradcheck, gradgradcheck

graph.install(derivatives.TABLE, inplace.record_inplace)
_extension.set_autograd(_engine_api)

__all__ = [
    "Function", "FunctionCtx", "InplaceFunction", "NestedIOFunction", "Variable",
    "autobatch", "backward", "checkpoint", "detect_anomaly", "enable_grad", "forward_ad", "func",
    "functional", "grad", "gradcheck", "gradgradcheck", "engine", "graph", "inference_mode",
    "is_grad_enabled", "is_inference_mode_enabled",
    "no_grad", "once_differentiable", "set_detect_anomaly", "set_grad_enabled", "__version__",
]
