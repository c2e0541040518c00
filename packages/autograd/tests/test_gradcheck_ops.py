"""gradcheck and gradgradcheck, in float64, for every differentiable entry of the op table,
on contiguous and non-contiguous inputs; and the walk proving every registry op has a
derivative (or is in-place with a differentiable twin, or is marked non-differentiable)."""
from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et
from ember.autograd.derivatives import TABLE
from ember.autograd.inplace import FUNCTIONAL
from ember.tensor import Tensor
from ember.tensor.testing import op_table as T

DIFF = [e for e in T.OP_TABLE
        if e.differentiable and any(d.startswith(("float", "complex")) for d in e.dtypes)]
CASES = [pytest.param(e, lay, id=f"{e.name}-{lay}") for e in DIFF for lay in e.layouts]


def _conv(a, contiguous: bool):
    """An ember tensor of an array (a non-contiguous one unless ``contiguous``), tensors of a
    list or tuple of arrays, anything else as is (``to_ember``'s conversion, one argument)."""
    if isinstance(a, (np.ndarray, np.generic)):
        return et.tensor(np.asarray(a).copy()) if contiguous else T.noncontig(np.asarray(a))
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_conv(x, contiguous) for x in a)
    return a


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _grad_positions(entry, sample):
    if sample.grad is not None:
        return sample.grad
    def floating(a):
        if isinstance(a, list):
            return bool(a) and all(floating(x) for x in a)
        return isinstance(a, np.ndarray) and a.dtype.kind in "fc"
    return tuple(i for i in entry.operands if i < len(sample.args) and floating(sample.args[i]))


def _wide(a: np.ndarray) -> np.ndarray:
    """A floating array in float64, a complex one in complex128."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _prepare(entry, sample, contiguous):
    """float64 ember args with requires_grad on the differentiable positions, plus the list
    of positions (and list members) that take part in the check."""
    pos = _grad_positions(entry, sample)
    args = list(sample.args)
    diff = []
    for i in pos:
        a = args[i]
        if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
            args[i] = _conv(_wide(a), contiguous).requires_grad_(True)
            diff.append(i)
        elif isinstance(a, list):
            args[i] = [_conv(_wide(x), contiguous).requires_grad_(True) for x in a]
            diff.append(i)
    for i, a in enumerate(args):
        if i not in diff:
            args[i] = _conv(_wide(a) if isinstance(a, np.ndarray) and a.dtype.kind in "fc"
                            else a, contiguous)
    kwargs = {k: _conv(v, contiguous) for k, v in sample.kwargs.items()}
    return args, kwargs, diff


def _flat_inputs(args, diff):
    flat, where = [], []
    for i in diff:
        if isinstance(args[i], list):
            for j, t in enumerate(args[i]):
                flat.append(t)
                where.append((i, j))
        else:
            flat.append(args[i])
            where.append((i, None))
    return flat, where


def _func(entry, args, kwargs, where):
    def f(*xs):
        a = [list(x) if isinstance(x, list) else x for x in args]
        for x, (i, j) in zip(xs, where):
            if j is None:
                a[i] = x
            else:
                a[i][j] = x
        out = entry.fn(*a, **kwargs)
        if isinstance(out, (tuple, list)):
            return tuple(o for o in out if isinstance(o, Tensor) and
                         (o.dtype.is_floating_point or o.dtype.is_complex))
        return out
    return f


def _samples(entry):
    dtype = next((d for d in ("float64", "complex128", "float32", "complex64")
                  if d in entry.dtypes), "float32")
    return entry.samples(dtype, _rng(entry.name, "grad"))


@pytest.mark.parametrize("entry,layout", CASES)
def test_gradcheck(entry, layout):
    checked = 0
    for sample in _samples(entry):
        args, kwargs, diff = _prepare(entry, sample, layout == "contig")
        if not diff:
            continue
        flat, where = _flat_inputs(args, diff)
        assert ag.gradcheck(_func(entry, args, kwargs, where), tuple(flat), eps=1e-6,
                            atol=1e-5, rtol=1e-3), f"{entry.name} {sample!r}"
        checked += 1
    assert checked, f"{entry.name}: no sample had a differentiable input"


@pytest.mark.parametrize("entry,layout", [c for c in CASES if c.values[0].gradgrad])
def test_gradgradcheck(entry, layout):
    samples = _samples(entry)[:2]          # second order is costly: two samples per op
    checked = 0
    for sample in samples:
        args, kwargs, diff = _prepare(entry, sample, layout == "contig")
        if not diff:
            continue
        flat, where = _flat_inputs(args, diff)
        assert ag.gradgradcheck(_func(entry, args, kwargs, where), tuple(flat), eps=1e-6,
                                atol=1e-4, rtol=1e-3), f"{entry.name} {sample!r}"
        checked += 1
    assert checked


def _grads_of(entry, args, kwargs, flat):
    out = entry.fn(*args, **kwargs)
    outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
            if isinstance(o, Tensor) and o.requires_grad]
    # a complex output is reduced to a real loss through both of its parts
    gs = ag.grad([et.view_as_real(o).sum() if o.is_complex() else o.sum() for o in outs],
                 flat, allow_unused=True)
    return [None if g is None else g.detach().numpy() for g in gs]


def _nameable(fn) -> bool:
    """An ember function without ``*args`` (whose arguments can all be passed by name)."""
    if not fn.__module__.startswith("ember."):
        return False
    return all(p.kind is not inspect.Parameter.VAR_POSITIONAL
               for p in inspect.signature(fn).parameters.values())


@pytest.mark.parametrize("entry", [e for e in DIFF if _nameable(e.fn)], ids=lambda e: e.name)
def test_keyword_call_records_the_same_graph(entry):
    """Tensors passed by name (or in a list passed by name) get graph edges exactly as
    positional ones: the same gradients either way, none dropped."""
    checked = 0
    for sample in _samples(entry):
        args, kwargs, diff = _prepare(entry, sample, True)
        call = T.as_keywords(entry.fn, args, kwargs)
        if not diff or call is None:
            continue
        flat, _ = _flat_inputs(args, diff)
        want = _grads_of(entry, args, kwargs, flat)
        got = _grads_of(entry, call[0], call[1], flat)
        for w, g in zip(want, got):
            assert (w is None) == (g is None), f"{entry.name}: a keyword argument lost its edge"
            if w is not None:
                np.testing.assert_array_equal(w, g, err_msg=f"{entry.name} {sample!r}")
        checked += 1
    assert checked, f"{entry.name}: no sample with a differentiable argument"


def test_every_registry_op_has_a_derivative_or_is_non_differentiable():
    missing = []
    for name, op in et.OPS.items():
        if not op.differentiable:
            continue
        if name in TABLE:
            continue
        if op.inplace and (name in FUNCTIONAL or name[:-1] in TABLE):
            continue
        missing.append(name)
    assert not missing, f"differentiable ops without a derivative: {sorted(missing)}"


def test_derivative_table_names_only_registry_ops():
    stray = sorted(n for n in TABLE if n not in et.OPS)
    assert not stray, f"derivatives for unknown ops: {stray}"


def test_non_differentiable_ops_do_not_record_graphs():
    x = et.tensor([1.5, -2.0, 3.0], dtype=et.float64, requires_grad=True)
    for fn in (et.isnan, et.signbit, et.argmax, lambda t: t > 0, et.isfinite):
        out = fn(x)
        assert out.grad_fn is None and not out.requires_grad, fn


@pytest.mark.parametrize("fn", [et.floor, et.ceil, et.trunc, et.sign, et.round,
                                lambda t: et.round(t, decimals=1),
                                lambda t: et.div(t, 2.0, rounding_mode="floor"),
                                lambda t: et.div(t, 2.0, rounding_mode="trunc"),
                                lambda t: et.floor(t.clone().floor_())])
def test_piecewise_constant_ops_have_a_zero_gradient(fn):
    # PyTorch records them (requires_grad=True) with a zero gradient, which backward and
    # autograd.grad deliver
    x = et.tensor([1.5, -2.25, 3.75], dtype=et.float64, requires_grad=True)
    out = fn(x)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))
    (g,) = ag.grad(fn(x).sum(), x)
    np.testing.assert_array_equal(g.numpy(), np.zeros(3))


def test_rounding_division_gives_each_tensor_argument_a_zero_gradient():
    a = et.tensor([[7.0, -7.5]], dtype=et.float64, requires_grad=True)
    b = et.tensor([[2.0], [3.0]], dtype=et.float64, requires_grad=True)
    for mode in ("floor", "trunc"):
        a.grad = b.grad = None
        et.div(a, b, rounding_mode=mode).sum().backward()
        assert a.grad.shape == a.shape and b.grad.shape == b.shape
        assert not a.grad.numpy().any() and not b.grad.numpy().any()


def test_op_table_covers_the_registry():
    uncovered = sorted(set(et.OPS) - T.COVERED_OPS - T.NON_TABLE_OPS)
    assert not uncovered, f"registry ops without a table entry: {uncovered}"
