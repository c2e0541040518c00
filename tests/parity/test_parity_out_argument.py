"""``out=`` against PyTorch 2.13 CPU: the functions that took it only lately (matrix products,
stacks, sorts and selections, pow / float_power / floor_divide / where, the random factories,
bernoulli / multinomial) and a sample of those that had it (add, div, max, std, quantile,
inverse, kron, diff, the creation factories, linalg.norm / vecdot): the same values, dtypes
and shapes in ``out`` (resized from empty or from another shape), the same tuple of outs, and
the same exception type for an ``out`` of a dtype the result can't be written into, a result
autograd would need, and a wrongly typed ``out``."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402

_R = np.random.default_rng(13)


def _a(*shape, lo=-2.0, hi=2.0):
    return _R.uniform(lo, hi, shape)


# float64 inputs (names -> arrays); each call takes the library and its tensors
IN = {
    "x": _a(3, 4), "y": _a(3, 4), "z": _a(3, 4, lo=0.5, hi=2.0), "m23": _a(2, 3),
    "a24": _a(2, 4), "b43": _a(4, 3), "a23": _a(2, 3), "v2": _a(2), "v3": _a(3), "w3": _a(3),
    "bm": _a(4, 2, 3), "b1": _a(4, 2, 5), "b2": _a(4, 5, 3), "sq": _a(3, 3) + 3 * np.eye(3),
    "rep": np.array([[1.0, 2, 2, 3, 2], [4, 4, 0, 0, 4], [7, 5, 5, 7, 7]]),
}
IN["nan"] = IN["x"].copy()
IN["nan"][0, 1] = np.nan
IDX = np.array([[3, 0], [1, 1], [2, 0]])

NEW = {
    "addbmm": lambda m, t: m.addbmm(t["m23"], t["b1"], t["b2"], beta=0.5),
    "addcdiv": lambda m, t: m.addcdiv(t["x"], t["y"], t["z"], value=0.5),
    "addcmul": lambda m, t: m.addcmul(t["x"], t["y"], t["z"], value=2),
    "addmm": lambda m, t: m.addmm(t["m23"], t["a24"], t["b43"], alpha=2),
    "addmv": lambda m, t: m.addmv(t["v2"], t["a23"], t["v3"]),
    "baddbmm": lambda m, t: m.baddbmm(t["bm"], t["b1"], t["b2"]),
    "bmm": lambda m, t: m.bmm(t["b1"], t["b2"]),
    "column_stack": lambda m, t: m.column_stack([t["v3"], t["w3"]]),
    "dot": lambda m, t: m.dot(t["v3"], t["w3"]),
    "dstack": lambda m, t: m.dstack([t["x"], t["y"]]),
    "float_power": lambda m, t: m.float_power(t["z"], 2.5),
    "floor_divide": lambda m, t: m.floor_divide(t["x"], 0.3),
    "hstack": lambda m, t: m.hstack([t["x"], t["y"]]),
    "kthvalue": lambda m, t: m.kthvalue(t["x"], 2, 1),
    "masked_select": lambda m, t: m.masked_select(t["x"], t["x"] > 0),
    "mm": lambda m, t: m.mm(t["a24"], t["b43"]),
    "mode": lambda m, t: m.mode(t["rep"], 1),
    "mv": lambda m, t: m.mv(t["a23"], t["v3"]),
    "nanmean": lambda m, t: m.nanmean(t["nan"], 1),
    "narrow_copy": lambda m, t: m.narrow_copy(t["x"], 1, 1, 2),
    "pow": lambda m, t: m.pow(t["x"], 2),
    "pow_scalar_base": lambda m, t: m.pow(2, t["x"]),
    "sort": lambda m, t: m.sort(t["x"], 1, True),
    "take_along_dim": lambda m, t: m.take_along_dim(t["x"], m.tensor(IDX), 1),
    "topk": lambda m, t: m.topk(t["x"], 2, 1),
    "vstack": lambda m, t: m.vstack([t["x"], t["y"]]),
    "where": lambda m, t: m.where(t["x"] > 0, t["x"], t["y"]),
}
OLD = {
    "add": lambda m, t: m.add(t["x"], t["y"], alpha=2),
    "div": lambda m, t: m.div(t["x"], t["z"]),
    "max_dim": lambda m, t: m.max(t["x"], 1),
    "std": lambda m, t: m.std(t["x"], 1),
    "quantile": lambda m, t: m.quantile(t["x"], 0.3, 1),
    "inverse": lambda m, t: m.inverse(t["sq"]),
    "kron": lambda m, t: m.kron(t["a23"], t["m23"]),
    "diff": lambda m, t: m.diff(t["x"], dim=0),
    "linalg_norm": lambda m, t: m.linalg.norm(t["x"]),
    "linalg_vecdot": lambda m, t: m.linalg.vecdot(t["x"], t["y"]),
}
CALLS = {**NEW, **OLD}
# PyTorch wants the result's own dtype in out here; elsewhere it casts to a wider one
SAME_DTYPE = {"addbmm", "addmm", "addmv", "baddbmm", "bmm", "dot", "float_power",
              "kthvalue", "masked_select", "mm", "mode", "mv", "narrow_copy", "sort",
              "take_along_dim", "topk", "where"}


def _tensors(m, grad=False):
    return {k: m.tensor(v, requires_grad=grad) for k, v in IN.items()}


def _np(t):
    return t.detach().numpy()


def _outs(m, result, shape=(0,), dtype=None):
    def one(r):
        d = dtype if dtype is not None else r.dtype
        return m.empty(*shape, dtype=d)
    if isinstance(result, tuple):
        return tuple(one(r) if i == 0 else m.empty(*shape, dtype=r.dtype)
                     for i, r in enumerate(result))
    return one(result)


def _same(e, t):
    if isinstance(t, tuple):
        assert isinstance(e, tuple) and len(e) == len(t)
        for a, b in zip(e, t):
            _same(a, b)
        return
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(e.shape) == tuple(t.shape)
    tol = 1e-6 if e.dtype in (et.float32,) else 1e-12  # float32: PyTorch sums in out's dtype
    np.testing.assert_allclose(_np(e), _np(t), rtol=tol, atol=tol)


def _edtype(tdtype):
    return getattr(et, str(tdtype).split(".")[-1])


@pytest.mark.parametrize("shape", [(0,), (7, 1)], ids=["from_empty", "resized"])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_out_holds_torchs_result(name, shape):
    tt, ee = _tensors(torch), _tensors(et)
    tr = CALLS[name](torch, tt)
    tout = _outs(torch, tr, shape)
    eout = _outs(et, CALLS[name](et, ee), shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # PyTorch: "an output ... was resized"
        tgot = CALLS[name](lambda_out(torch, tout), tt)
    egot = CALLS[name](lambda_out(et, eout), ee)
    _same(eout, tout)
    _same(egot, tgot)
    if isinstance(tr, tuple):
        assert type(egot).__name__.split("_")[0] == type(tgot).__name__.split("_")[0]
        assert [n for n in dir(egot) if n in ("values", "indices")] == \
            [n for n in dir(tgot) if n in ("values", "indices")]
        assert all(g is o for g, o in zip(egot, eout))
    else:
        assert egot is eout


class lambda_out:  # noqa: N801
    """The library ``m`` whose functions (and ``m.linalg``'s) are called with ``out=``."""

    def __init__(self, m, out):
        self._m, self._out = m, out

    def __getattr__(self, name):
        f = getattr(self._m, name)
        if name == "linalg":
            return lambda_out(f, self._out)
        if name == "tensor" or not callable(f):
            return f
        return lambda *a, **k: f(*a, **k, out=self._out)


def _error(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return exc
    return None


def _same_error(te, ee):
    assert te is not None and ee is not None, (te, ee)
    # NotImplementedError is PyTorch's RuntimeError for a dtype it has no kernel for
    want = RuntimeError if isinstance(te, RuntimeError) else type(te)
    assert isinstance(ee, want), (te, ee)


# (ember's inverse, max, quantile, linalg.norm and vecdot, as they were before, cast a float64
# result into a float32 out, where PyTorch's want out's dtype to be the result's: not compared)
_CASTS_AS_BEFORE = {"inverse", "max_dim", "quantile", "linalg_norm", "linalg_vecdot"}


@pytest.mark.parametrize("name,dt", [(n, d) for n in sorted(CALLS) for d in ("float32", "int64")
                                     if not (d == "float32" and n in _CASTS_AS_BEFORE)])
def test_out_of_another_dtype(name, dt):
    tt, ee = _tensors(torch), _tensors(et)
    tr = CALLS[name](torch, tt)
    tout = _outs(torch, tr, dtype=getattr(torch, dt))
    eout = tuple(et.empty(0, dtype=_edtype(o.dtype)) for o in tout) \
        if isinstance(tout, tuple) else et.empty(0, dtype=getattr(et, dt))
    terr = _error(lambda: CALLS[name](lambda_out(torch, tout), tt))
    eerr = _error(lambda: CALLS[name](lambda_out(et, eout), ee))
    if terr is None:
        assert eerr is None, (name, dt, eerr)
        _same(eout, tout)
    else:
        _same_error(terr, eerr)
    if dt == "float32":  # narrower, same kind: refused exactly where PyTorch refuses
        assert (terr is not None) == (name in SAME_DTYPE), (name, terr)


# (PyTorch's linalg.norm and quantile, composites of its own, take out= beside an input that
# requires grad; ember's, as they were before, refuse it: not compared here)
@pytest.mark.parametrize("name", sorted(set(CALLS) - {"linalg_norm", "quantile"}))
def test_out_refused_where_autograd_needs_the_result(name):
    tt, ee = _tensors(torch, grad=True), _tensors(et, grad=True)
    tr = CALLS[name](torch, {k: v.detach() for k, v in tt.items()})
    tout, eout = _outs(torch, tr), _outs(et, CALLS[name](et, {k: v.detach()
                                                             for k, v in ee.items()}))
    terr = _error(lambda: CALLS[name](lambda_out(torch, tout), tt))
    eerr = _error(lambda: CALLS[name](lambda_out(et, eout), ee))
    if terr is None:  # a result no gradient flows through (floor_divide): written
        assert eerr is None, eerr
        _same(eout, tout)
    else:
        _same_error(terr, eerr)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_wrongly_typed_out(name):
    te = _error(lambda: CALLS[name](lambda_out(torch, [1.0]), _tensors(torch)))
    ee = _error(lambda: CALLS[name](lambda_out(et, [1.0]), _tensors(et)))
    _same_error(te, ee)


# ------------------------------------------------------------------ random draws and factories
FACTORIES = {
    "rand_float64": (lambda m, **k: m.rand(2, 3, **k), "float64"),
    "randn_float64": (lambda m, **k: m.randn(4, **k), "float64"),
    "randint_float32": (lambda m, **k: m.randint(3, 9, (5,), **k), "float32"),
    "randint_int32": (lambda m, **k: m.randint(9, (2, 2), **k), "int32"),
    "randperm_int32": (lambda m, **k: m.randperm(6, **k), "int32"),
    "randperm_float32": (lambda m, **k: m.randperm(6, **k), "float32"),
    "normal_float64": (lambda m, **k: m.normal(1.0, 2.0, (4,), **k), "float64"),
    "normal_tensors_float64": (lambda m, **k: m.normal(m.zeros(3, dtype=m.float64),
                                                       m.ones(3, dtype=m.float64), **k),
                               "float64"),
    "bernoulli_int64": (lambda m, **k: m.bernoulli(m.full((4,), 0.5), **k), "int64"),
    "bernoulli_float64": (lambda m, **k: m.bernoulli(m.full((4,), 0.5), **k), "float64"),
    "multinomial_int64": (lambda m, **k: m.multinomial(m.ones(2, 5), 3, **k), "int64"),
    "zeros_float64": (lambda m, **k: m.zeros(2, 3, **k), "float64"),
    "arange_int32": (lambda m, **k: m.arange(5, **k), "int32"),
    "linspace_float64": (lambda m, **k: m.linspace(0, 1, 5, **k), "float64"),
    "eye_int64": (lambda m, **k: m.eye(3, **k), "int64"),
    "full_float64": (lambda m, **k: m.full((2,), 1.5, **k), "float64"),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_factory_out_takes_outs_dtype(name):
    call, dt = FACTORIES[name]
    tout, eout = torch.empty(0, dtype=getattr(torch, dt)), et.empty(0, dtype=getattr(et, dt))
    tgot, egot = call(torch, out=tout), call(et, out=eout)
    assert tgot is tout and egot is eout
    assert str(eout.dtype).split(".")[-1] == dt == str(tout.dtype).split(".")[-1]
    assert tuple(eout.shape) == tuple(tout.shape)
    if name.startswith("randperm"):
        assert sorted(_np(eout).tolist()) == sorted(_np(tout).tolist())
    elif name.startswith(("randint", "bernoulli", "multinomial")):
        assert set(_np(eout).ravel().tolist()) <= set(range(10))
    elif not name.startswith(("rand", "normal")):
        np.testing.assert_array_equal(_np(eout), _np(tout))


@pytest.mark.parametrize("name", ["zeros", "ones", "rand", "randn", "empty", "full", "arange",
                                  "linspace", "eye"])
def test_factory_out_with_requires_grad(name):
    """``requires_grad=True`` with ``out=``: ``out`` becomes a leaf that requires grad."""
    calls = {"zeros": lambda m, **k: m.zeros(2, 3, **k), "ones": lambda m, **k: m.ones(3, **k),
             "rand": lambda m, **k: m.rand(4, **k), "randn": lambda m, **k: m.randn(2, **k),
             "empty": lambda m, **k: m.empty(2, **k),
             "full": lambda m, **k: m.full((2,), 1.5, **k),
             "arange": lambda m, **k: m.arange(0.0, 3.0, **k),
             "linspace": lambda m, **k: m.linspace(0, 1, 5, **k),
             "eye": lambda m, **k: m.eye(3, **k)}
    results = []
    for m in (torch, et):
        out = m.empty(0)
        got = calls[name](m, out=out, requires_grad=True)
        results.append((got is out, got.requires_grad, got.is_leaf, tuple(got.shape)))
    assert results[0] == results[1]


EXACT = {
    "inverse": lambda m, o: m.inverse(_spd(m), out=o),
    "matrix_power": lambda m, o: m.matrix_power(_spd(m), 2, out=o),
    "vdot": lambda m, o: m.vdot(m.ones(3, dtype=m.float64), m.ones(3, dtype=m.float64), out=o),
    "inner": lambda m, o: m.inner(m.ones(3, dtype=m.float64), m.ones(3, dtype=m.float64), out=o),
    "matmul": lambda m, o: m.matmul(_spd(m), _spd(m), out=o),
    "linalg.det": lambda m, o: m.linalg.det(_spd(m), out=o),
    "linalg.inv": lambda m, o: m.linalg.inv(_spd(m), out=o),
    "linalg.solve": lambda m, o: m.linalg.solve(_spd(m), m.ones(3, dtype=m.float64), out=o),
    "linalg.vector_norm": lambda m, o: m.linalg.vector_norm(m.ones(3, dtype=m.float64), out=o),
    "linalg.norm": lambda m, o: m.linalg.norm(m.ones(3, dtype=m.float64), out=o),
    "linalg.matrix_norm": lambda m, o: m.linalg.matrix_norm(_spd(m), out=o),
    "linalg.vecdot": lambda m, o: m.linalg.vecdot(m.ones(3, dtype=m.float64),
                                                  m.ones(3, dtype=m.float64), out=o),
    "linalg.cross": lambda m, o: m.linalg.cross(m.ones(3, dtype=m.float64),
                                                m.ones(3, dtype=m.float64), out=o),
    "linalg.cholesky": lambda m, o: m.linalg.cholesky(_spd(m), out=o),
    "linalg.multi_dot": lambda m, o: m.linalg.multi_dot([_spd(m), _spd(m)], out=o),
    "linalg.solve_triangular": lambda m, o: m.linalg.solve_triangular(_spd(m), _spd(m),
                                                                      upper=True, out=o),
    "linalg.svdvals": lambda m, o: m.linalg.svdvals(_spd(m), out=o),
    "linalg.eigvalsh": lambda m, o: m.linalg.eigvalsh(_spd(m), out=o),
    "quantile": lambda m, o: m.quantile(m.ones(3, dtype=m.float64), 0.5, out=o),
    "nanquantile": lambda m, o: m.nanquantile(m.ones(3, dtype=m.float64), 0.5, out=o),
    "amax": lambda m, o: m.amax(_spd(m), 0, out=o),
    "amin": lambda m, o: m.amin(_spd(m), 0, out=o),
    "nanmedian": lambda m, o: m.nanmedian(_spd(m), 0, out=(o, m.empty(0, dtype=m.int64))),
}


def _spd(m):
    return m.eye(3, dtype=m.float64) * 2 + m.ones(3, 3, dtype=m.float64) * 0.1


@pytest.mark.parametrize("name", sorted(EXACT))
def test_out_of_the_exact_dtype(name):
    """These ops take only an ``out`` of their result's dtype (a float32 ``out`` for a
    float64 result raises), as PyTorch's."""
    for dt in ("float32", "float64"):
        got = []
        for m in (torch, et):
            try:
                EXACT[name](m, m.empty(0, dtype=getattr(m, dt)))
                got.append(None)
            except Exception as exc:  # noqa: BLE001 -- the type is compared
                got.append(type(exc))
        assert got[0] == got[1], (name, dt, got)
        assert (got[0] is None) == (dt == "float64")


FACTORY_ERRORS = {
    "rand_int64": lambda m: m.rand(2, out=m.empty(0, dtype=m.int64)),
    "randint_bool": lambda m: m.randint(3, (2,), out=m.empty(0, dtype=m.bool)),
    "multinomial_float": lambda m: m.multinomial(m.ones(2, 5), 3, out=m.empty(0)),
    "rand_list_out": lambda m: m.rand(2, out=[1.0]),
    "arange_list_out": lambda m: m.arange(2, out=[1.0]),
    "std_mean": lambda m: m.std_mean(m.ones(3), 0, out=(m.empty(0), m.empty(0))),
    "var_mean": lambda m: m.var_mean(m.ones(3), 0, out=(m.empty(0), m.empty(0))),
}


@pytest.mark.parametrize("name", sorted(FACTORY_ERRORS))
def test_random_out_errors(name):
    _same_error(_error(lambda: FACTORY_ERRORS[name](torch)),
                _error(lambda: FACTORY_ERRORS[name](et)))
