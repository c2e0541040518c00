"""``_fpstate``: NumPy's floating-point warnings off for an op's span, the caller's state back
after it (nested, on errors, per thread), and the ops that lean on it silent at inf and nan."""
import threading
import warnings

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor._fpstate import quiet, quiet_call


def test_quiet_silences_and_restores_the_callers_state():
    one, zero = np.float32(1), np.float32(0)
    with np.errstate(divide="raise", over="warn", invalid="call"):
        before = np.geterr()
        with quiet():
            assert np.geterr() == {"divide": "ignore", "over": "ignore", "under": "ignore",
                                   "invalid": "ignore"}
            assert np.isposinf(one / zero)
            with quiet():  # nested: the inner exit restores the outer quiet state
                pass
            assert np.geterr()["divide"] == "ignore"
        assert np.geterr() == before
        with pytest.raises(FloatingPointError):
            one / zero


def test_quiet_call_restores_the_state_when_the_call_raises():
    def boom():
        raise KeyError("x")

    with np.errstate(divide="raise"):
        with pytest.raises(KeyError):
            quiet_call(boom)
        assert np.geterr()["divide"] == "raise"
        assert quiet_call(np.divide, np.float64(1), np.float64(0), out=None) == np.inf
        assert np.geterr()["divide"] == "raise"


def test_quiet_is_per_thread():
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def worker():
        with quiet():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=worker)
    with np.errstate(over="raise"):
        t.start()
        inside.wait(5)
        seen["main"] = np.geterr()["over"]  # the worker's quiet block does not leak here
        release.set()
        t.join()
    assert seen["main"] == "raise"


@pytest.mark.parametrize("fn, expect", [
    (lambda x: et.exp(x * 100), np.inf),
    (lambda x: x / et.zeros_like(x), np.inf),
    (lambda x: et.reciprocal(x - x), np.inf),
    (lambda x: x ** 1000, np.inf),
    (lambda x: et.log(-x), np.nan),
    (lambda x: (x * 1e37).sum(), np.inf),
    (lambda x: et.erfinv(x / 10), np.inf),   # its compiled loops raise no flag at 1 ...
    (lambda x: et.erfinv(-x), np.nan),       # ... or outside [-1, 1]
    (lambda x: et.erfinv((x / 10).bfloat16()).float(), np.inf),
])
def test_ops_at_inf_and_nan_warn_nothing(fn, expect):
    x = et.full((4, 64), 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="warn"):  # the user's own setting does not leak into ember's ops
            r = fn(x).numpy()
    np.testing.assert_array_equal(r, np.full(r.shape, expect, np.float32))



@pytest.mark.parametrize("fn", [
    lambda x: x @ x.t(),                                 # two matrices: one BLAS call
    lambda x: et.matmul(x.reshape(2, 2, 64), x.t()),     # a batch of rows times one matrix
    lambda x: et.matmul(x.reshape(2, 2, 64), x.reshape(2, 64, 2)),  # batched
    lambda x: et.linear(x, x),                           # input @ weight.T
])
def test_products_that_overflow_warn_nothing(fn):
    x = et.full((4, 64), 1e30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = fn(x).numpy()
    assert np.isposinf(r).all()
