"""Backward warns about no inf it computes, as PyTorch's: gradients that overflow while they
are summed (two uses of one tensor) are inf, silently, and the caller's NumPy error state is
back after the pass."""
import warnings

import numpy as np

import ember.autograd  # noqa: F401  (installs the recorder)
import ember.tensor as et


def test_accumulated_gradients_that_overflow_are_inf_without_a_warning():
    a = et.ones((4, 4), requires_grad=True)
    z = (a * 3e38).sum() + (a * 3e38).sum()  # each use's gradient is 3e38: their sum is inf
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(over="raise"):
            z.backward()
            assert np.geterr()["over"] == "raise"
    assert np.isposinf(a.grad.numpy()).all()
