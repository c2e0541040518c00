"""Parity with PyTorch 2.13 for ember.tensor.fft's transforms: values and dtypes (float32,
float64, complex64, complex128 and integer inputs), ``n``/``s``/``dim``/``norm`` handling,
gradients of real losses through real and complex inputs, and the exception types of bad
calls."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd  # noqa: F401  (installs the recorder)
import ember.tensor as et

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(99)
NORMS = [None, "backward", "ortho", "forward"]
ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
TWO_D = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
N_D = ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
REAL_IN = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}


def _input(cplx: bool, shape, dtype=np.float64):
    a = RNG.standard_normal(shape)
    if cplx:
        a = a + 1j * RNG.standard_normal(shape)
        return a.astype(np.complex64 if dtype == np.float32 else np.complex128)
    return a.astype(dtype)


def _name(dt) -> str:
    return str(dt).split(".")[-1]


def _compare(name, x, kwargs, grad=True):
    e_fn, t_fn = getattr(et.fft, name), getattr(torch.fft, name)
    ex = et.tensor(x, requires_grad=grad)
    tx = torch.tensor(x, requires_grad=grad)
    eo, to = e_fn(ex, **kwargs), t_fn(tx, **kwargs)
    assert tuple(eo.shape) == tuple(to.shape), (name, kwargs)
    assert _name(eo.dtype) == _name(to.dtype), (name, kwargs)
    tol = 1e-4 if eo.dtype in (et.float32, et.complex64) else 1e-10
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().resolve_conj().numpy(),
                               rtol=tol, atol=tol)
    if not grad:
        return
    w = RNG.standard_normal(tuple(eo.shape) + ((2,) if eo.is_complex() else ()))

    def loss(lib, out):
        parts = lib.view_as_real(out.resolve_conj()) if out.is_complex() else out
        return (parts * lib.tensor(w, dtype=parts.dtype)).sum()

    loss(et, eo).backward()
    loss(torch, to).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.resolve_conj().numpy(), rtol=tol,
                               atol=tol)


def _kinds(name):
    return [False] if name in REAL_IN else [False, True]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,dim", [(None, -1), (3, -1), (9, 0), (None, 0), (6, 1)])
@pytest.mark.parametrize("name", ONE_D)
def test_1d_values_and_gradients(name, n, dim, norm):
    for cplx in _kinds(name):
        _compare(name, _input(cplx, (4, 5)), {"n": n, "dim": dim, "norm": norm})


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", [(None, None), ((3, 6), None), ((2, -1), (0, 2)),
                                   (None, (2, 0)), ((4,), (1,)), ((5, 2, 3), None)])
@pytest.mark.parametrize("name", N_D)
def test_nd_values_and_gradients(name, s, dim, norm):
    for cplx in _kinds(name):
        _compare(name, _input(cplx, (3, 4, 5)), {"s": s, "dim": dim, "norm": norm})


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("kwargs", [{}, {"s": (3, 7)}, {"s": (-1, 2)}, {"dim": (0, 2)},
                                    {"s": (2, 6), "dim": (2, 1)}])
@pytest.mark.parametrize("name", TWO_D)
def test_2d_values_and_gradients(name, kwargs, norm):
    for cplx in _kinds(name):
        _compare(name, _input(cplx, (3, 4, 5)), {**kwargs, "norm": norm})


@pytest.mark.parametrize("name", ONE_D + TWO_D + N_D)
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool", "float32", "float64"])
def test_dtypes_of_real_input(name, dtype):
    x = (RNG.standard_normal((3, 4)) * 3).astype(dtype)
    _compare(name, x, {}, grad=False)


@pytest.mark.parametrize("name", [n for n in ONE_D + TWO_D + N_D if n not in REAL_IN])
def test_single_precision_complex_input(name):
    _compare(name, _input(True, (3, 4), np.float32), {}, grad=True)


def _outcome(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001  (the type is what is compared)
        for kind in (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError):
            if isinstance(exc, kind):
                return kind
        return type(exc)
    return None


BAD = [  # (label, function name, input maker (lib -> tensor), kwargs)
    ("norm", "fft", "f32", {"norm": "bad"}),
    ("norm-type", "rfft", "f32", {"norm": 1}),
    ("n=0", "ifft", "f32", {"n": 0}),
    ("n<0", "irfft", "c64", {"n": -1}),
    ("dim", "rfft", "f32", {"dim": 2}),
    ("dim-neg", "hfft", "c64", {"dim": -3}),
    ("0-d", "fft", "0d", {}),
    ("half", "fft", "f16", {}),
    ("bfloat16", "rfftn", "bf16", {}),
    ("complex-rfft", "rfft", "c64", {}),
    ("complex-ihfft", "ihfft", "c64", {}),
    ("complex-rfftn", "rfft2", "c64", {}),
    ("complex-ihfftn", "ihfftn", "c64", {}),
    ("one-bin", "irfft", "1bin", {}),
    ("s-dim-len", "fftn", "f32", {"s": (3,), "dim": (0, 1)}),
    ("s-dim-len-2", "fft2", "f32", {"s": (1, 2, 3)}),
    ("s-too-long", "ifftn", "f32", {"s": (1, 2, 3)}),
    ("s=0", "rfftn", "f32", {"s": (0, 2)}),
    ("dims-dup", "irfftn", "c64", {"dim": (1, -1)}),
    ("dims-range", "hfft2", "c64", {"dim": (0, 5)}),
    ("no-dims", "irfftn", "c64", {"dim": ()}),
    ("no-dims-2", "ihfft2", "f32", {"dim": ()}),
    ("out-real", "fft", "f32", {"out": "f32"}),
    ("out-complex", "irfft", "c64", {"out": "c64"}),
    ("out-ihfft", "ihfft", "f64", {"out": "c64"}),
    ("not-tensor", "fft", "list", {}),
]

_MAKERS = {
    "f32": lambda lib: lib.ones(3, 4),
    "f64": lambda lib: lib.ones(3, 4, dtype=lib.float64),
    "f16": lambda lib: lib.ones(3, 4, dtype=lib.float16),
    "bf16": lambda lib: lib.ones(3, 4, dtype=lib.bfloat16),
    "c64": lambda lib: lib.ones(3, 4, dtype=lib.complex64),
    "0d": lambda lib: lib.tensor(1.0),
    "1bin": lambda lib: lib.ones(3, 1, dtype=lib.complex64),
    "list": lambda lib: [1.0, 2.0],
}


@pytest.mark.parametrize("label,name,make,kwargs", BAD, ids=[b[0] for b in BAD])
def test_bad_calls_raise_pytorchs_exception_types(label, name, make, kwargs):
    def call(lib, space):
        kw = dict(kwargs)
        if "out" in kw:
            kw["out"] = _MAKERS[kw["out"]](lib)[:0]
        return lambda: getattr(space, name)(_MAKERS[make](lib), **kw)

    want = _outcome(call(torch, torch.fft))
    assert want is not None, f"{label}: PyTorch accepts it"
    assert _outcome(call(et, et.fft)) is want, label
