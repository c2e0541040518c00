"""PyTorch's keyword-only ``out=`` on the functions of ``ember.tensor`` that took none before
(matrix products, stacks, sorts and selections, pow / float_power / floor_divide / where, the
random factories, bernoulli / multinomial): the result is written into ``out`` (resized when its
shape differs and it is no view; cast where PyTorch casts, refused where it asks for the
result's own dtype), ``out`` is returned (a named tuple of the out tensors for sort, topk,
kthvalue, mode), and a call without ``out=`` is the same call as before. NumPy is the oracle
for the values; PyTorch parity is in ``tests/parity/test_parity_out_argument.py``."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import ember.tensor as et

_R = np.random.default_rng(11)


def _a(*shape, lo=-2.0, hi=2.0):
    return _R.uniform(lo, hi, shape).astype(np.float32)


X34, Y34, Z34 = _a(3, 4), _a(3, 4), _a(3, 4, lo=0.5, hi=2.0)
M23, A24, B43, A23 = _a(2, 3), _a(2, 4), _a(4, 3), _a(2, 3)
V2, V3 = _a(2), _a(3)
BM, B1, B2 = _a(4, 2, 3), _a(4, 2, 5), _a(4, 5, 3)
NAN = X34.copy()
NAN[0, 1] = NAN[2, 3] = np.nan
MODE = np.array([[1, 2, 2, 3, 2], [4, 4, 0, 0, 4], [7, 5, 5, 7, 7]], dtype=np.int64)
IDX = np.array([[3, 0], [1, 1], [2, 0]], dtype=np.int64)
T = et.tensor


def _sorted(x, axis, descending=False):
    i = np.argsort(-x if descending else x, axis=axis, kind="stable")
    return np.take_along_axis(x, i, axis), i


# name -> (call(**out), NumPy oracle of the result (a tuple for several outputs), exact dtype)
CASES = {
    "addbmm": (lambda **k: et.addbmm(T(M23), T(B1), T(B2), **k),
               lambda: M23 + np.einsum("bij,bjk->ik", B1, B2), True),
    "addcdiv": (lambda **k: et.addcdiv(T(X34), T(Y34), T(Z34), value=0.5, **k),
                lambda: X34 + 0.5 * Y34 / Z34, False),
    "addcmul": (lambda **k: et.addcmul(T(X34), T(Y34), T(Z34), value=2, **k),
                lambda: X34 + 2 * Y34 * Z34, False),
    "addmm": (lambda **k: et.addmm(T(M23), T(A24), T(B43), beta=0.5, alpha=2, **k),
              lambda: 0.5 * M23 + 2 * (A24 @ B43), True),
    "addmv": (lambda **k: et.addmv(T(V2), T(A23), T(V3), **k), lambda: V2 + A23 @ V3, True),
    "baddbmm": (lambda **k: et.baddbmm(T(BM), T(B1), T(B2), **k), lambda: BM + B1 @ B2, True),
    "bmm": (lambda **k: et.bmm(T(B1), T(B2), **k), lambda: B1 @ B2, True),
    "column_stack": (lambda **k: et.column_stack([T(V3), T(V3 * 2)], **k),
                     lambda: np.column_stack([V3, V3 * 2]), False),
    "dot": (lambda **k: et.dot(T(V3), T(V3 + 1), **k), lambda: np.dot(V3, V3 + 1), True),
    "dstack": (lambda **k: et.dstack([T(X34), T(Y34)], **k), lambda: np.dstack([X34, Y34]),
               False),
    "float_power": (lambda **k: et.float_power(T(Z34), 2.5, **k),
                    lambda: np.power(Z34.astype(np.float64), 2.5), True),
    "floor_divide": (lambda **k: et.floor_divide(T(X34), 0.3, **k),
                     lambda: np.floor_divide(X34, np.float32(0.3)), False),
    "hstack": (lambda **k: et.hstack([T(X34), T(Y34)], **k), lambda: np.hstack([X34, Y34]),
               False),
    "kthvalue": (lambda **k: et.kthvalue(T(X34), 2, 1, **k),
                 lambda: tuple(a[:, 1] for a in _sorted(X34, 1)), True),
    "masked_select": (lambda **k: et.masked_select(T(X34), T(X34 > 0), **k),
                      lambda: X34[X34 > 0], True),
    "mm": (lambda **k: et.mm(T(A24), T(B43), **k), lambda: A24 @ B43, True),
    "mode": (lambda **k: et.mode(T(MODE), 1, **k),
             lambda: (np.array([2, 4, 7]), np.array([4, 4, 4])), True),
    "mv": (lambda **k: et.mv(T(A23), T(V3), **k), lambda: A23 @ V3, True),
    "nanmean": (lambda **k: et.nanmean(T(NAN), 1, **k), lambda: np.nanmean(NAN, 1), False),
    "narrow_copy": (lambda **k: et.narrow_copy(T(X34), 1, 1, 2, **k), lambda: X34[:, 1:3],
                    True),
    "pow": (lambda **k: et.pow(T(X34), 2, **k), lambda: X34 ** 2, False),
    "pow_scalar_base": (lambda **k: et.pow(2, T(X34), **k), lambda: np.float32(2) ** X34,
                        False),
    "sort": (lambda **k: et.sort(T(X34), 1, True, **k), lambda: _sorted(X34, 1, True), True),
    "take_along_dim": (lambda **k: et.take_along_dim(T(X34), T(IDX), 1, **k),
                       lambda: np.take_along_axis(X34, IDX, 1), True),
    "topk": (lambda **k: et.topk(T(X34), 2, 1, **k),
             lambda: tuple(a[:, :2] for a in _sorted(X34, 1, True)), True),
    "vstack": (lambda **k: et.vstack([T(X34), T(Y34)], **k), lambda: np.vstack([X34, Y34]),
               False),
    "where": (lambda **k: et.where(T(X34 > 0), T(X34), T(Y34), **k),
              lambda: np.where(X34 > 0, X34, Y34), True),
}
MULTI = {"kthvalue", "mode", "sort", "topk"}


def _np(t):
    return t.numpy()


def _results(r):
    return r if isinstance(r, tuple) else (r,)


def _empty_like_result(want, shape=(0,), dtype=None):
    outs = tuple(et.empty(*shape, dtype=dtype or w.dtype) for w in _results(want))
    return outs if isinstance(want, tuple) else outs[0]


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_holds_the_result_of_the_plain_call(name):
    call, oracle, _ = CASES[name]
    want = call()
    expect = oracle()
    for w, e in zip(_results(want), _results(expect)):
        np.testing.assert_allclose(_np(w), e, rtol=1e-5, atol=1e-5)
    out = _empty_like_result(want)
    got = call(out=out)
    if name in MULTI:
        assert isinstance(got, tuple) and type(got) is type(want) and got._fields == want._fields
        assert all(g is o for g, o in zip(got, out))
    else:
        assert got is out
    for w, o in zip(_results(want), _results(out)):
        assert o.dtype == w.dtype and o.shape == w.shape and o._version > 0
        np.testing.assert_array_equal(_np(o), _np(w))


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_of_another_shape_is_resized(name):
    call, _, _ = CASES[name]
    want = call()
    out = _empty_like_result(want, shape=(7, 1))
    call(out=out)
    for w, o in zip(_results(want), _results(out)):
        assert o.shape == w.shape
        np.testing.assert_array_equal(_np(o), _np(w))


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_view_is_written_in_place_or_refused_when_its_shape_differs(name):
    call, _, _ = CASES[name]
    want = _results(call())
    bases = tuple(et.zeros(w.numel() * 2 + 2, dtype=w.dtype) for w in want)
    right = tuple(b[1:1 + 2 * w.numel():2].view(*w.shape) if w.dim() else b[1]
                  for b, w in zip(bases, want))
    if any(r.shape != w.shape for r, w in zip(right, want)):  # a strided view: no view() of it
        right = tuple(b[1:1 + w.numel()].view(*w.shape) for b, w in zip(bases, want))
    call(out=right if len(want) > 1 else right[0])
    for w, r, b in zip(want, right, bases):
        np.testing.assert_array_equal(_np(r), _np(w))
        assert r._base is not None and float(_np(b)[0]) == 0  # written through the view
    wrong = tuple(b[:w.numel() + 1] for b, w in zip(bases, want))
    with pytest.raises(RuntimeError, match="cannot be resized"):
        call(out=wrong if len(want) > 1 else wrong[0])


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_dtype_cast_or_refused(name):
    call, _, exact = CASES[name]
    want = call()
    first = _results(want)[0]
    if first.dtype.is_floating_point:
        # a dtype the result can't be cast to (float -> integer) is refused
        bad = et.int64
        err = TypeError if name.endswith("stack") else RuntimeError  # PyTorch's cat: TypeError
        with pytest.raises(err, match=name.split("_scalar")[0]):
            call(out=_empty_like_result(want, dtype=bad) if name not in MULTI else
                 (et.empty(0, dtype=bad), et.empty(0, dtype=et.int64)))
    other = et.float64 if first.dtype != et.float64 else et.float32
    outs = (et.empty(0, dtype=other),) + tuple(et.empty(0, dtype=w.dtype)
                                               for w in _results(want)[1:])
    out = outs if name in MULTI else outs[0]
    if exact:  # PyTorch asks for the result's own dtype here
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
            call(out=out)
    else:  # and casts it elsewhere, as it casts into any out tensor of a wider kind
        call(out=out)
        assert outs[0].dtype == other
        np.testing.assert_array_equal(_np(outs[0]), _np(first).astype(_np(outs[0]).dtype))


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_that_requires_grad_is_refused(name):
    call, _, _ = CASES[name]
    want = call()
    out = _empty_like_result(want)
    for o in _results(out):
        o._requires_grad = True  # set directly: the tensor-only env has no autograd package
    with pytest.raises(RuntimeError, match="requires grad"):
        call(out=out)


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrongly_typed_out_is_a_type_error(name):
    call, _, _ = CASES[name]
    with pytest.raises(TypeError, match="argument 'out' must be"):
        call(out=[1.0])
    if name in MULTI:
        with pytest.raises(TypeError, match="tuple of 2 Tensors"):
            call(out=et.empty(0))


# ------------------------------------------------------------------ random draws and factories
RANDOM = {
    "rand": lambda **k: et.rand(2, 3, **k),
    "randn": lambda **k: et.randn(size=(2, 3), **k),
    "randint": lambda **k: et.randint(3, 9, (5,), **k),
    "randperm": lambda **k: et.randperm(6, **k),
    "normal": lambda **k: et.normal(1.0, 2.0, (4,), **k),
    "normal_tensors": lambda **k: et.normal(T(V3), T(np.abs(V3)), **k),
    "bernoulli": lambda **k: et.bernoulli(T(np.abs(X34) / 2), **k),
    "multinomial": lambda **k: et.multinomial(T(np.abs(X34)), 2, **k),
}


@pytest.mark.parametrize("name", sorted(RANDOM))
def test_random_out_draws_what_the_plain_call_draws(name):
    call = RANDOM[name]
    et.manual_seed(5)
    want = call()
    out = et.empty(0, dtype=want.dtype)
    et.manual_seed(5)
    assert call(out=out) is out
    assert out.dtype == want.dtype and out.shape == want.shape
    np.testing.assert_array_equal(_np(out), _np(want))


@pytest.mark.parametrize("name", ["rand", "randn", "normal"])
def test_factory_takes_the_dtype_of_out(name):
    call = RANDOM[name]
    et.manual_seed(3)
    want = call(dtype=et.float64)
    out = et.empty(0, dtype=et.float64)
    et.manual_seed(3)
    call(out=out)
    assert out.dtype == et.float64 and out.device == want.device
    np.testing.assert_array_equal(_np(out), _np(want))  # drawn in float64, not cast


def test_randint_and_randperm_into_float_out():
    et.manual_seed(4)
    want = et.randint(0, 10, (6,), dtype=et.float64)
    out = et.empty(0, dtype=et.float64)
    et.manual_seed(4)
    et.randint(0, 10, (6,), out=out)
    np.testing.assert_array_equal(_np(out), _np(want))
    out = et.empty(0, dtype=et.float32)
    et.randperm(5, out=out)
    assert out.dtype == et.float32 and sorted(_np(out).tolist()) == [0, 1, 2, 3, 4]


def test_multinomial_into_float_out_is_refused():
    with pytest.raises(RuntimeError, match="multinomial"):
        et.multinomial(T(np.abs(X34)), 2, out=et.empty(0))


def test_bernoulli_into_an_integer_out():
    p = T(np.array([0.0, 1.0, 1.0, 0.0], dtype=np.float32))
    out = et.empty(0, dtype=et.int64)
    assert et.bernoulli(p, out=out) is out
    assert out.dtype == et.int64 and _np(out).tolist() == [0, 1, 1, 0]


@pytest.mark.parametrize("name", ["std_mean", "var_mean"])
def test_std_mean_and_var_mean_take_no_out(name):
    # PyTorch's documentation lists out=, its argument parser refuses it: so does ember
    with pytest.raises(TypeError, match="out"):
        getattr(et, name)(T(X34), 1, out=(et.empty(0), et.empty(0)))


# ------------------------------------------------------------------ the one mechanism
def test_out_is_part_of_the_explicit_signature():
    for name in ["mm", "sort", "where", "zeros", "arange", "rand", "add", "det", "max"]:
        sig = inspect.signature(getattr(et, name))
        p = sig.parameters["out"]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is None
        assert not any(q.kind is inspect.Parameter.VAR_KEYWORD for q in sig.parameters.values())


def test_factories_that_had_out_keep_it():
    out = et.empty(0, dtype=et.float64)
    assert et.zeros(2, 3, out=out) is out and out.dtype == et.float64 and out.shape == (2, 3)
    np.testing.assert_array_equal(_np(out), np.zeros((2, 3)))
    out = et.empty(0, dtype=et.int32)
    et.arange(4, out=out)
    np.testing.assert_array_equal(_np(out), np.arange(4, dtype=np.int32))
    out = et.empty(0)
    et.full((2,), 1.5, out=out)
    np.testing.assert_array_equal(_np(out), np.full((2,), 1.5, np.float32))
    with pytest.raises(TypeError, match="arange"):
        et.arange(4, out=[1])


def test_composites_that_had_out_keep_it():
    x, y = T(X34), T(Y34)
    out = et.empty(0)
    assert et.add(x, y, alpha=2, out=out) is out
    np.testing.assert_allclose(_np(out), X34 + 2 * Y34, rtol=1e-6)
    vals, idx = et.empty(0), et.empty(0, dtype=et.int64)
    r = et.max(x, 1, out=(vals, idx))
    assert r.values is vals and r.indices is idx
    np.testing.assert_array_equal(_np(vals), X34.max(1))
    out = et.empty(0)
    et.linalg.norm(x, out=out)
    np.testing.assert_allclose(float(_np(out)), np.linalg.norm(X34), rtol=1e-5)
    with pytest.raises(TypeError, match="mm\\(\\): argument 'input'"):  # still diagnosed
        et.mm([[1.0]], x, out=et.empty(0))
