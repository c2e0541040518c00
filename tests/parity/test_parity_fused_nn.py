"""The fused nn ops against PyTorch: softmax / log_softmax / cross_entropy as registry ops
(exact in float32 at large logits, issue 21 item 6; PyTorch's full cross_entropy semantics),
the fused recurrent cells, and clip_grad_norm_'s one-pass norms."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.autograd  # noqa: F401
import ember.nn as enn
import ember.nn.functional as F
import ember.tensor as et

torch = pytest.importorskip("torch")
TF = torch.nn.functional
EPS32 = float(np.finfo(np.float32).eps)


def _logits(rng, shape, shift):
    # on float32's grid at 1e6 (multiples of 1/16), so the shift itself is exact
    base = np.round(rng.standard_normal(shape) * 64) / 16
    return (base + shift).astype(np.float32), base.astype(np.float32)


@pytest.mark.parametrize("shift", [0.0, 1e4, 1e6, -1e6])
@pytest.mark.parametrize("dim", [1, 0])
def test_softmax_shift_invariant_float32(shift, dim):
    rng = np.random.default_rng(1)
    x, x0 = _logits(rng, (6, 11), shift)
    p = F.softmax(et.tensor(x), dim).numpy()
    np.testing.assert_allclose(p.sum(dim), 1.0, atol=2 * EPS32)
    np.testing.assert_allclose(p, torch.softmax(torch.tensor(x), dim).numpy(), rtol=2e-6,
                               atol=1e-7)
    np.testing.assert_allclose(p, F.softmax(et.tensor(x0), dim).numpy(), rtol=2e-6, atol=1e-7)
    lp = F.log_softmax(et.tensor(x), dim).numpy()
    np.testing.assert_allclose(lp, torch.log_softmax(torch.tensor(x), dim).numpy(), rtol=1e-6,
                               atol=2e-6)
    np.testing.assert_allclose(lp, F.log_softmax(et.tensor(x0), dim).numpy(), rtol=1e-6,
                               atol=2e-6)


@pytest.mark.parametrize("shift", [1e4, 1e6])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_shift_invariant_float32(shift, smoothing):
    rng = np.random.default_rng(2)
    x, x0 = _logits(rng, (8, 7), shift)
    t = rng.integers(0, 7, 8)
    a = et.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    la = F.cross_entropy(a, et.tensor(t), label_smoothing=smoothing)
    lb = TF.cross_entropy(b, torch.tensor(t), label_smoothing=smoothing)
    la.backward()
    lb.backward()
    assert math.isclose(la.item(), lb.item(), rel_tol=2e-6)
    ref = TF.cross_entropy(torch.tensor(x0, dtype=torch.float64), torch.tensor(t),
                           label_smoothing=smoothing).item()
    assert math.isclose(la.item(), ref, rel_tol=2e-6)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)


def _pair(x, grad=True):
    return (et.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", ["plain", "weight_ignore_smooth", "kdim", "1d", "probs"])
def test_cross_entropy_matches_torch(reduction, case):
    rng = np.random.default_rng(3)
    C = 5
    w = rng.uniform(0.5, 2.0, C)
    kw = {}
    if case == "kdim":
        x = rng.standard_normal((2, C, 3, 2))
        t = rng.integers(0, C, (2, 3, 2))
        t[0, 0, 0] = 1
        kw = dict(ignore_index=1, label_smoothing=0.1)
    elif case == "1d":
        x = rng.standard_normal(C)
        t = np.asarray(3)
    elif case == "probs":
        x = rng.standard_normal((4, C))
        p = rng.uniform(size=(4, C))
        t = p / p.sum(1, keepdims=True)
        kw = dict(label_smoothing=0.1)
    else:
        x = rng.standard_normal((6, C))
        t = rng.integers(0, C, 6)
        if case == "weight_ignore_smooth":
            t[2] = 4
            kw = dict(ignore_index=4, label_smoothing=0.3)
    ew = et.tensor(w) if case != "plain" else None
    tw = torch.tensor(w) if case != "plain" else None
    ea, ta = _pair(x)
    le = F.cross_entropy(ea, et.tensor(t), weight=ew, reduction=reduction, **kw)
    lt = TF.cross_entropy(ta, torch.tensor(t), weight=tw, reduction=reduction, **kw)
    np.testing.assert_allclose(le.detach().numpy(), lt.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    g = np.random.default_rng(4).standard_normal(tuple(lt.shape))
    le.backward(et.tensor(g))
    lt.backward(torch.tensor(g))
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_second_derivative_matches_torch():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 6))
    t = np.asarray([0, 5, 2, 2])
    w = rng.uniform(0.5, 2.0, 6)
    ea, ta = _pair(x)
    (ge,) = ember.autograd.grad(F.cross_entropy(ea, et.tensor(t), et.tensor(w),
                                                label_smoothing=0.2, ignore_index=5),
                                ea, create_graph=True)
    (gt,) = torch.autograd.grad(TF.cross_entropy(ta, torch.tensor(t), torch.tensor(w),
                                                 label_smoothing=0.2, ignore_index=5),
                                ta, create_graph=True)
    v = rng.standard_normal(x.shape)
    (he,) = ember.autograd.grad((ge * et.tensor(v)).sum(), ea)
    (ht,) = torch.autograd.grad((gt * torch.tensor(v)).sum(), ta)
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-10, atol=1e-12)


def test_cross_entropy_all_ignored_gives_zero_gradients():
    ea, ta = _pair(np.random.default_rng(6).standard_normal((3, 4)))
    le = F.cross_entropy(ea, et.tensor([-100, -100, -100]))
    lt = TF.cross_entropy(ta, torch.tensor([-100, -100, -100]))
    le.backward()
    lt.backward()
    assert math.isnan(le.item()) and math.isnan(lt.item())
    assert not np.isnan(ea.grad.numpy()).any()
    np.testing.assert_array_equal(ea.grad.numpy(), ta.grad.numpy())


def test_cross_entropy_errors_match_torch():
    x = et.zeros(2, 3)
    with pytest.raises(IndexError, match="Target 3 is out of bounds"):
        F.cross_entropy(x, et.tensor([0, 3]))
    with pytest.raises(IndexError):
        TF.cross_entropy(torch.zeros(2, 3), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(x, et.tensor([0, 1, 2]))


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_gradients_match_torch(dim):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5))
    g = rng.standard_normal((3, 4, 5))
    for fe, ft in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
        ea, ta = _pair(x)
        fe(ea, dim).backward(et.tensor(g))
        ft(ta, dim).backward(torch.tensor(g))
        np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_fused_cells_match_torch():
    rng = np.random.default_rng(8)
    x, h, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (3, 5), (3, 5)))
    w_ih, w_hh = (rng.standard_normal(s).astype(np.float32) for s in ((20, 4), (20, 5)))
    he, ce = et.lstm_cell(et.tensor(x), (et.tensor(h), et.tensor(c)), et.tensor(w_ih),
                          et.tensor(w_hh))
    ht, ct = torch.lstm_cell(torch.tensor(x), (torch.tensor(h), torch.tensor(c)),
                             torch.tensor(w_ih), torch.tensor(w_hh))
    np.testing.assert_allclose(he.numpy(), ht.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ce.numpy(), ct.numpy(), rtol=1e-5, atol=1e-6)
    ge = et.gru_cell(et.tensor(x), et.tensor(h), et.tensor(w_ih[:15]), et.tensor(w_hh[:15]))
    gt = torch.gru_cell(torch.tensor(x), torch.tensor(h), torch.tensor(w_ih[:15]),
                        torch.tensor(w_hh[:15]))
    np.testing.assert_allclose(ge.numpy(), gt.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("norm_type", [2.0, math.inf, 1.0, 3.0])
def test_clip_grad_norm_matches_torch(norm_type):
    rng = np.random.default_rng(9)
    gs = [rng.standard_normal(s).astype(np.float32) for s in ((4, 3), (7,), (2, 2, 2))]
    pe = [et.zeros(g.shape, requires_grad=True) for g in gs]
    pt = [torch.zeros(g.shape, requires_grad=True) for g in gs]
    for a, b, g in zip(pe, pt, gs):
        a.grad, b.grad = et.tensor(g.copy()), torch.tensor(g.copy())
    ne = enn.utils.clip_grad_norm_(pe, 0.5, norm_type)
    nt = torch.nn.utils.clip_grad_norm_(pt, 0.5, norm_type)
    assert math.isclose(ne.item(), nt.item(), rel_tol=1e-6) and ne.dtype == et.float32
    for a, b in zip(pe, pt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("act", ["relu", "threshold", "relu6", "hardtanh"])
def test_relu_family_gradients_at_nan_and_infinite_gradients_match_torch(act):
    """threshold_backward: a NaN input passes its gradient, an infinite gradient at a cut
    element gives 0 (a mask product gave NaN), as in PyTorch."""
    x = np.asarray([np.nan, -1.0, 0.0, 0.5, 2.0, 7.0, -np.inf], dtype=np.float32)
    g = np.asarray([5.0, np.inf, 7.0, -3.0, 2.0, np.inf, 1.0], dtype=np.float32)
    grads = []
    for T, FF in ((et, F), (torch, TF)):
        t = T.tensor(x, requires_grad=True)
        y = getattr(FF, act)(t, *((0.5, -1.0) if act == "threshold" else ()))
        y.backward(T.tensor(g))
        grads.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*grads):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("act", ["elu", "selu", "celu", "hardsigmoid", "hardswish", "softshrink",
                                 "hardshrink", "rrelu", "leaky_relu", "relu6", "hardtanh",
                                 "softplus", "logsigmoid", "softsign", "silu", "mish"])
def test_activations_at_nan_infinities_and_boundaries_match_torch(act):
    """Values and gradients at NaN, +-inf, 0 and the pieces' boundaries (PyTorch's conditions:
    a NaN input keeps its value NaN and, in the piecewise ones, passes its gradient)."""
    x = np.asarray([np.nan, -np.inf, -3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 6.0, 7.0,
                    np.inf], dtype=np.float32)
    g = np.linspace(0.5, 2.0, x.size).astype(np.float32)
    res = []
    for T, FF in ((et, F), (torch, TF)):
        t = T.tensor(x, requires_grad=True)
        y = getattr(FF, act)(t)
        y.backward(T.tensor(g))
        res.append((y.detach().numpy(), t.grad.numpy()))
    for name, a, b in zip(("value", "gradient"), *res):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7, err_msg=f"{act} {name}")
