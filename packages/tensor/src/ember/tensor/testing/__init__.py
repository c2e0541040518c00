"""Test utilities for ember and for the layers built on it.

:mod:`ember.tensor.testing.op_table` is the op table (PyTorch's OpInfo idea): one entry per
op with sample inputs, a NumPy reference, dtypes and differentiability. ember-tensor's harness
checks every entry forward (positional and keyword calls, ``out=``, error inputs);
ember-autograd's runs gradcheck and gradgradcheck over the same entries. Importing this package
imports only NumPy and ember.tensor.
"""
from __future__ import annotations

from . import op_table

__all__ = ["op_table"]
