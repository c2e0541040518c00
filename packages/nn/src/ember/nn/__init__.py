"""ember.nn: Module, Parameter, containers and the layer zoo, with PyTorch's names.

    >>> import ember.nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import functional, init, parallel, utils
from .modules import *
from .modules import __all__ as _modules_all
from .parameter import *
from .parameter import __all__ as _parameter_all

__all__ = ["functional", "init", "utils", "__version__", *_modules_all, *_parameter_all]
