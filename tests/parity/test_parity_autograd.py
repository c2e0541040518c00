"""Parity with PyTorch 2.13.0 CPU: gradients of composite expressions, a Hessian, view-chain
strides, and the type promotion table (every dtype pair, tensors of both ranks and scalars)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.autograd as ag  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.tensor.testing import op_table as T  # noqa: E402

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]


def _lib_expr(name):
    """Composite expressions written once against a module ``m`` (torch or ember.tensor)."""
    return {
        "tanh_chain": lambda m, a, b, c: ((a * b + c).tanh() * b).sum(),
        "softmax_ce": lambda m, a, b, c: -(
            (a - a.exp().sum(1, keepdim=True).log())
            * ((b * c).exp() / (b * c).exp().sum(1, keepdim=True))).sum(),
        "matmul_broadcast": lambda m, a, b, c: (
            (a @ b.t()).sigmoid() * c[:, :3].sum(1, keepdim=True)).mean(),
        "norms_and_views": lambda m, a, b, c: (
            a.t()[::2].sqrt().sum() + (b[:, 1:] * c[:, :-1]).norm() + a.var(1).sum()),
        "where_max_pow": lambda m, a, b, c: (
            m.where(a > b, a, b) ** 2 + m.maximum(a, c).abs() + (b * c).amax(1, keepdim=True)
        ).logsumexp(1).sum(),
        "inplace_mix": lambda m, a, b, c: _inplace_mix(m, a, b, c),
    }[name]


def _inplace_mix(m, a, b, c):
    h = a * b
    h.add_(c).mul_(2).sigmoid_()
    return (h * a).sum()


EXPRS = ["tanh_chain", "softmax_ce", "matmul_broadcast", "norms_and_views", "where_max_pow",
         "inplace_mix"]


@pytest.mark.parametrize("name", EXPRS)
def test_gradients_match_torch(name):
    rng = np.random.default_rng(7)
    vals = [rng.uniform(0.2, 2.0, (3, 4)) for _ in range(3)]
    f = _lib_expr(name)
    ea = [et.tensor(v, requires_grad=True) for v in vals]
    ta = [torch.tensor(v, requires_grad=True) for v in vals]
    eo = f(et, *ea)
    to = f(torch, *ta)
    np.testing.assert_allclose(eo.item(), to.item(), rtol=1e-10)
    eo.backward()
    to.backward()
    for k, (e, t) in enumerate(zip(ea, ta)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{name}: grad of input {k}")


def test_float32_gradient_dtypes_match_torch():
    a = et.tensor([1.0, 2.0], requires_grad=True)
    b = et.tensor([1, 2], dtype=et.int64)
    (a * b / 3).sum().backward()
    ta = torch.tensor([1.0, 2.0], requires_grad=True)
    (ta * torch.tensor([1, 2]) / 3).sum().backward()
    assert a.grad.dtype.name == str(ta.grad.dtype).split(".")[1]
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6)


def test_hessian_matches_torch():
    v = np.array([0.3, -0.8, 1.1])

    def f(m, x):
        return (x[0] * x[1] ** 2 + (x[2] * x[0]).sin() + (x * x).sum().sqrt() * x[1].exp())

    te = torch.autograd.functional.hessian(lambda x: f(torch, x), torch.tensor(v))
    ee = ag.functional.hessian(lambda x: f(et, x), et.tensor(v))
    np.testing.assert_allclose(ee.numpy(), te.numpy(), rtol=1e-10, atol=1e-12)
    # and by backward-of-backward with create_graph
    x = et.tensor(v, requires_grad=True)
    (g,) = ag.grad(f(et, x), x, create_graph=True)
    rows = np.stack([ag.grad(g[i], x, retain_graph=True)[0].numpy() for i in range(3)])
    np.testing.assert_allclose(rows, te.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(T.VIEW_CHAINS))
def test_view_chain_strides_match_torch(name):
    chain, recorded = T.VIEW_CHAINS[name]
    tv = chain(torch, torch.arange(24.).reshape(2, 3, 4))
    ev = chain(et, et.arange(24.).reshape(2, 3, 4))
    want = (tuple(tv.shape), tuple(tv.stride()), tv.storage_offset(), tv.is_contiguous())
    assert want == recorded, f"recorded expectation for {name} is stale"
    got = (tuple(ev.shape), tuple(ev.stride()), ev.storage_offset(), ev.is_contiguous())
    assert got == want
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())


def _tt(dt, zero_dim=False):
    shape = () if zero_dim else (2,)
    return torch.ones(shape, dtype=getattr(torch, dt))


def _et(dt, zero_dim=False):
    shape = () if zero_dim else (2,)
    return et.ones(*shape, dtype=getattr(et, dt))


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)))
def test_promotion_table_matches_torch(a, b):
    for za, zb in [(False, False), (False, True), (True, False)]:
        want = str((_tt(a, za) + _tt(b, zb)).dtype if not (a == b == "bool") else
                   torch.result_type(_tt(a, za), _tt(b, zb))).split(".")[1]
        got = et.result_type(_et(a, za), _et(b, zb)).name
        assert got == want, f"result_type({a}{'0d' if za else ''}, {b}{'0d' if zb else ''})"
        assert T.torch_result_type(np.ones((2,) if not za else (), T.np_dtype(a)),
                                   np.ones((2,) if not zb else (), T.np_dtype(b))) == want
        if not (a == "bool" and b == "bool"):
            assert (_et(a, za) * _et(b, zb)).dtype.name == want


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("scalar", [True, 2, 2.5])
def test_scalar_promotion_matches_torch(dt, scalar):
    want = str(torch.result_type(_tt(dt), scalar)).split(".")[1]
    assert et.result_type(_et(dt), scalar).name == want
    if not (dt == "bool" and scalar is True):
        assert (_et(dt) * scalar).dtype.name == str((_tt(dt) * scalar).dtype).split(".")[1]
    div_want = str((_tt(dt) / 2).dtype).split(".")[1]
    assert (_et(dt) / 2).dtype.name == div_want


@pytest.mark.parametrize("name", ["sqrt", "exp", "sin", "sigmoid", "neg", "abs", "floor",
                                  "sum", "mean", "cumsum", "prod"])
@pytest.mark.parametrize("dt", ["bool", "uint8", "int32", "int64", "float16", "float64"])
def test_unary_result_dtype_matches_torch(name, dt):
    tx = _tt(dt)
    ex = _et(dt)
    args = (0,) if name == "cumsum" else ()
    try:
        want = str(getattr(torch, name)(tx, *args).dtype).split(".")[1]
    except (RuntimeError, TypeError, NotImplementedError) as err:
        with pytest.raises(type(err)):
            getattr(et, name)(ex, *args)
        return
    assert getattr(et, name)(ex, *args).dtype.name == want


def test_inplace_through_view_matches_torch():
    rng = np.random.default_rng(3)
    xa, ha = rng.standard_normal((3, 4)), rng.standard_normal(3)

    def f(lib, x, h):
        y = x * 2
        y[:, 0] += x[:, 1] * h
        y.narrow(1, 2, 1).mul_(3)
        return (y ** 2).sum()

    ex, eh = et.tensor(xa, requires_grad=True), et.tensor(ha, requires_grad=True)
    tx, th = torch.tensor(xa, requires_grad=True), torch.tensor(ha, requires_grad=True)
    f(et, ex, eh).backward()
    f(torch, tx, th).backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(eh.grad.numpy(), th.grad.numpy(), rtol=1e-12)


def test_grad_mode_flags_parity():
    """``ember.tensor.no_grad`` and friends report what ``torch.no_grad`` and friends do."""
    import ember.tensor as E

    def trace(lib):
        seen = [(lib.is_grad_enabled(), lib.is_inference_mode_enabled())]
        with lib.no_grad():
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
            with lib.enable_grad():
                seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.inference_mode():
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
            with lib.inference_mode(False):
                seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        with lib.set_grad_enabled(False):
            seen.append((lib.is_grad_enabled(), lib.is_inference_mode_enabled()))
        seen.append((lib.is_anomaly_enabled(), lib.is_anomaly_check_nan_enabled()))
        return seen

    assert trace(E) == trace(torch)
