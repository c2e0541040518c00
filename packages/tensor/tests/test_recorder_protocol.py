"""The registry's recorder protocol: a recorder marked ``grad_only`` (autograd's) is called only
for calls where a tensor argument, a Tensor subclass or a tensor in a list argument requires
grad; any other recorder (a tracer, autocast) sees every call; the results are the same."""
import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import extension as ext


class _Param(et.Tensor):
    """A Tensor subclass, as nn.Parameter is."""


def _leaf(shape, grad):
    t = et.ones(*shape)
    t._requires_grad = grad  # no autograd layer here: the flag is all the registry reads
    return t


@pytest.fixture
def counting():
    prev = ext.get_recorder()
    calls = []

    def install(grad_only):
        def rec(op, bound):
            calls.append(op.name)
            return op.run(*bound)
        if grad_only:
            rec.grad_only = True
        ext.set_recorder(rec)
        return calls

    yield install
    ext.set_recorder(prev)


def _calls():
    a, b = _leaf((2, 3), False), _leaf((2, 3), False)
    g = _leaf((2, 3), True)
    p = object.__new__(_Param)
    p._data = np.ones((2, 3), np.float32)
    p._requires_grad = True
    return [
        ("add", lambda: et.add(a, b), False),
        ("add", lambda: et.add(a, g), True),
        ("add", lambda: et.add(a, 2.0), False),
        ("add", lambda: et.add(a, p), True),               # a subclass that requires grad
        ("cat", lambda: et.cat([a, b]), False),
        ("cat", lambda: et.cat([a, g]), True),             # a tensor inside a list argument
        ("view", lambda: g.view(6), True),
        ("view", lambda: a.view(6), False),
        ("getitem", lambda: g[0:1, ...], True),
        ("getitem", lambda: a[0:1, ...], False),
    ]


def test_a_grad_only_recorder_sees_only_calls_that_require_grad(counting):
    calls = counting(grad_only=True)
    for name, call, wants in _calls():
        calls.clear()
        out = call()
        assert (name in calls) == wants, name
        assert isinstance(out, et.Tensor)


def test_any_other_recorder_sees_every_call(counting):
    calls = counting(grad_only=False)
    for name, call, _ in _calls():
        calls.clear()
        call()
        assert name in calls


def test_results_do_not_depend_on_the_recorder(counting):
    # (whatever recorder this process has installed first: autograd's, where it is imported)
    plain = [ext.unwrap(call()).copy() for _, call, _ in _calls()]
    counting(grad_only=True)
    for want, (_, call, _) in zip(plain, _calls()):
        np.testing.assert_array_equal(ext.unwrap(call()), want)


def test_a_grad_only_recorder_sees_nothing_with_grad_mode_off(counting):
    calls = counting(grad_only=True)
    g = _leaf((2, 3), True)
    with et.no_grad():
        et.add(g, g)
    assert calls == []
    et.add(g, g)
    assert calls == ["add"]


def test_an_op_recorder_takes_its_ops_calls_until_the_next_set_recorder(counting):
    calls = counting(grad_only=True)  # autograd's kind: it sees none of these calls
    seen = []

    def mul_rec(op, bound):
        seen.append(op.name)
        return op.run(*bound)

    a, b = _leaf((2, 3), False), _leaf((2, 3), False)
    ext.set_op_recorder(ext.OPS["mul"], mul_rec)
    np.testing.assert_array_equal(ext.unwrap(a * b), np.ones((2, 3), np.float32))
    et.mul(a, b)
    np.testing.assert_array_equal(ext.unwrap(a + b), np.full((2, 3), 2, np.float32))
    assert seen == ["mul", "mul"]  # every call of mul (grad mode aside), no other op's
    assert calls == []
    ext.set_recorder(ext.get_recorder())  # installing a recorder removes every op recorder
    et.mul(a, b)
    assert seen == ["mul", "mul"]


def test_a_deferring_recorders_flush_runs_before_state_changes_outside_the_registry():
    # a recorder that defers calls (autobatch's) has ``flush(*tensors)``: a ``.data``
    # assignment, a ``requires_grad`` change, an in-place view op and ``resize_`` call it
    # first, with the tensors whose arrays they read or replace, so deferred calls read the
    # state they were made with; a recorder without one is not asked
    prev = ext.get_recorder()
    flushed = []

    def rec(op, bound):
        return op.run(*bound)

    rec.flush = lambda *ts: flushed.append(ts)
    ext.set_recorder(rec)
    try:
        t = et.ones(2)
        z = et.zeros(2)
        t.data = z
        assert len(flushed) == 1 and flushed[0][0] is t and flushed[0][1] is z
        np.testing.assert_array_equal(ext.unwrap(t), np.zeros(2, np.float32))
        t.requires_grad = False
        assert len(flushed) == 2
        m = et.arange(6.0).reshape(2, 3)
        m.t_()
        assert flushed[2][0] is m and tuple(flushed[2][1].shape) == (3, 2)
        assert tuple(m.shape) == (3, 2)
        m.as_strided_((2,), (2,))
        assert flushed[3][0] is m
        np.testing.assert_array_equal(ext.unwrap(m), [0.0, 2.0])
        m.resize_(3)
        assert flushed[4] == (m,)
        del rec.flush
        ext.set_recorder(rec)  # (the registry notes a recorder's flush as it is installed)
        t.data = et.ones(2)
        assert len(flushed) == 5
    finally:
        ext.set_recorder(prev)
