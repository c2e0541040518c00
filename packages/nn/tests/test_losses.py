"""Losses: NumPy references, reductions, weights, float64 gradcheck / gradgradcheck, and finite
results for 1000-valued logits."""
import numpy as np
import pytest

import ember.autograd as ag
import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et

rng = np.random.default_rng(1)


def _t(a, grad=True):
    return et.tensor(a, dtype=et.float64, requires_grad=grad)


def _log_softmax(a, axis):
    m = a.max(axis, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis, keepdims=True))


def test_cross_entropy_reference_weight_ignore():
    a = rng.normal(size=(5, 4))
    t = np.array([0, 3, 1, -100, 2])
    w = np.array([1.0, 2.0, 0.5, 1.5])
    lp = _log_softmax(a, 1)
    keep = t != -100
    ts = np.where(keep, t, 0)
    per = -lp[np.arange(5), ts] * w[ts] * keep
    tt = et.tensor(t)
    out = F.cross_entropy(_t(a), tt, weight=et.tensor(w, dtype=et.float64))
    np.testing.assert_allclose(out.item(), per.sum() / (w[ts] * keep).sum())
    none = F.cross_entropy(_t(a), tt, weight=et.tensor(w, dtype=et.float64), reduction="none")
    np.testing.assert_allclose(none.detach().numpy(), per)
    for kw in ({}, {"label_smoothing": 0.1}, {"reduction": "sum"},
               {"weight": et.tensor(w, dtype=et.float64), "label_smoothing": 0.2}):
        def fn(x, kw=kw):
            return F.cross_entropy(x, tt, **kw)

        assert ag.gradcheck(fn, (_t(a),))
        assert ag.gradgradcheck(fn, (_t(a),))


def test_cross_entropy_nd_and_probabilities():
    a = rng.normal(size=(2, 3, 4, 5))
    t = rng.integers(0, 3, size=(2, 4, 5))
    lp = _log_softmax(a, 1)
    ref = -np.take_along_axis(lp, t[:, None], 1)[:, 0].mean()
    np.testing.assert_allclose(F.cross_entropy(_t(a), et.tensor(t)).item(), ref)
    p = rng.uniform(size=(6, 4))
    p /= p.sum(1, keepdims=True)
    b = rng.normal(size=(6, 4))
    ref = -(p * _log_softmax(b, 1)).sum(1).mean()
    np.testing.assert_allclose(F.cross_entropy(_t(b), _t(p, False)).item(), ref)
    assert ag.gradcheck(lambda x, y: F.cross_entropy(x, y, label_smoothing=0.3),
                        (_t(b), _t(p)))
    one = F.cross_entropy(_t(b[0]), et.tensor(2))
    np.testing.assert_allclose(one.item(), -_log_softmax(b[0], 0)[2])


def test_huge_logits_finite():
    x = et.tensor([[1000.0, -1000.0, 0.0], [-1000.0, 1000.0, 5.0]], requires_grad=True)
    t = et.tensor([1, 1])
    for loss in (F.cross_entropy(x, t), F.nll_loss(F.log_softmax(x, 1), t),
                 F.binary_cross_entropy_with_logits(x, et.ones(2, 3)),
                 F.soft_margin_loss(x, -et.ones(2, 3)),
                 F.multilabel_soft_margin_loss(x, et.ones(2, 3))):
        loss.backward()
        assert bool(et.isfinite(loss)) and bool(et.isfinite(x.grad).all())
        x.grad = None
    np.testing.assert_allclose(F.cross_entropy(x, t, reduction="none").tolist(), [2000.0, 0.0],
                               atol=1e-3)


def test_nll_loss_errors():
    with pytest.raises(IndexError):
        F.nll_loss(et.randn(2, 3), et.tensor([0, 3]))
    with pytest.raises(ValueError):
        F.nll_loss(et.randn(2, 3), et.tensor([0, 1, 2]))
    with pytest.raises(ValueError):
        F.mse_loss(et.randn(2), et.randn(2), reduction="avg")


def test_bce_family():
    p = rng.uniform(0.05, 0.95, size=(3, 4))
    y = rng.uniform(size=(3, 4))
    ref = -(y * np.log(p) + (1 - y) * np.log(1 - p))
    np.testing.assert_allclose(F.binary_cross_entropy(_t(p), _t(y, False)).item(), ref.mean())
    x = rng.normal(size=(3, 4))
    pw = np.array([1.0, 2.0, 0.5, 3.0])
    s = 1 / (1 + np.exp(-x))
    ref = -(pw * y * np.log(s) + (1 - y) * np.log(1 - s))
    got = F.binary_cross_entropy_with_logits(_t(x), _t(y, False), pos_weight=_t(pw, False),
                                             reduction="none")
    np.testing.assert_allclose(got.detach().numpy(), ref)
    assert ag.gradcheck(lambda a, b: F.binary_cross_entropy_with_logits(a, b,
                                                                         pos_weight=_t(pw)),
                        (_t(x), _t(y)))
    assert ag.gradcheck(lambda a: F.binary_cross_entropy(a, _t(y, False)), (_t(p),))
    assert F.binary_cross_entropy(et.tensor([0.0]), et.tensor([1.0])).item() == 100.0


REGRESSION = {
    "l1": (F.l1_loss, lambda a, b: np.abs(a - b)),
    "mse": (F.mse_loss, lambda a, b: (a - b) ** 2),
    "smooth_l1": (lambda a, b, **k: F.smooth_l1_loss(a, b, beta=0.5, **k),
                  lambda a, b: np.where(np.abs(a - b) < 0.5, (a - b) ** 2, np.abs(a - b) - .25)),
    "huber": (lambda a, b, **k: F.huber_loss(a, b, delta=0.7, **k),
              lambda a, b: np.where(np.abs(a - b) < .7, .5 * (a - b) ** 2,
                                    .7 * (np.abs(a - b) - .35))),
    "soft_margin": (F.soft_margin_loss, lambda a, b: np.log1p(np.exp(-a * b))),
    "poisson": (F.poisson_nll_loss, lambda a, b: np.exp(a) - b * a),
    "kl_div": (lambda a, b, **k: F.kl_div(a, b.abs(), **k), lambda a, b: np.where(
        np.abs(b) > 0, np.abs(b) * (np.log(np.abs(b)) - a), 0)),
}


@pytest.mark.parametrize("name", sorted(REGRESSION))
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_regression_losses(name, reduction):
    fn, ref = REGRESSION[name]
    a, b = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    if name == "soft_margin":
        b = np.sign(b)
    r = ref(a, b)
    r = {"none": r, "sum": r.sum(), "mean": r.mean()}[reduction]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # kl_div's 'mean' warning
        got = fn(_t(a), _t(b, name == "soft_margin" and False), reduction=reduction)
        np.testing.assert_allclose(got.detach().numpy(), r, rtol=1e-10, atol=1e-12)
        assert ag.gradcheck(lambda x: fn(x, _t(b, False), reduction=reduction), (_t(a),))
        assert ag.gradgradcheck(lambda x: fn(x, _t(b, False), reduction=reduction), (_t(a),))


def test_gaussian_nll():
    a, b, v = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.uniform(.5, 2, (4, 3))
    ref = 0.5 * (np.log(v) + (a - b) ** 2 / v)
    np.testing.assert_allclose(F.gaussian_nll_loss(_t(a), _t(b), _t(v)).item(), ref.mean())
    assert ag.gradcheck(lambda x, s: F.gaussian_nll_loss(x, _t(b, False), s), (_t(a), _t(v)))
    with pytest.raises(ValueError):
        F.gaussian_nll_loss(_t(a), _t(b), -_t(v, False))


def test_margin_losses():
    x1, x2 = rng.normal(size=6), rng.normal(size=6)
    y = np.sign(rng.normal(size=6))
    ref = np.maximum(0, -y * (x1 - x2) + 0.3).mean()
    np.testing.assert_allclose(F.margin_ranking_loss(_t(x1), _t(x2), _t(y, False), 0.3).item(),
                               ref)
    ref = np.where(y == 1, x1, np.maximum(0, 1 - x1)).mean()
    np.testing.assert_allclose(F.hinge_embedding_loss(_t(x1), _t(y, False)).item(), ref)
    x = rng.normal(size=(3, 5))
    t = np.array([1, 4, 0])
    ref = []
    for n in range(3):
        ref.append(sum(max(0, 1 - x[n, t[n]] + x[n, i]) for i in range(5) if i != t[n]) / 5)
    np.testing.assert_allclose(F.multi_margin_loss(_t(x), et.tensor(t)).item(), np.mean(ref))
    assert ag.gradcheck(lambda a: F.multi_margin_loss(a, et.tensor(t), p=2), (_t(x),))
    tm = et.tensor([[3, 0, -1, 1, 1], [1, 2, 3, -1, 0], [4, -1, 0, 0, 0]])
    ref = []
    for n, tl in enumerate([[3, 0], [1, 2, 3], [4]]):
        ref.append(sum(max(0, 1 - (x[n, j] - x[n, i])) for j in tl for i in range(5)
                       if i not in tl) / 5)
    np.testing.assert_allclose(F.multilabel_margin_loss(_t(x), tm, reduction="none")
                               .detach().numpy(), ref)
    assert ag.gradcheck(lambda a: F.multilabel_margin_loss(a, tm), (_t(x),))
    yb = rng.integers(0, 2, size=(3, 5)).astype(float)
    assert ag.gradcheck(lambda a: F.multilabel_soft_margin_loss(a, _t(yb, False)), (_t(x),))


def test_embedding_losses():
    a, p, n = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    d = lambda u, v: np.linalg.norm(u - v + 1e-6, axis=1)  # noqa: E731
    ref = np.maximum(d(a, p) - d(a, n) + 1.0, 0).mean()
    np.testing.assert_allclose(F.triplet_margin_loss(_t(a), _t(p), _t(n)).item(), ref)
    assert ag.gradcheck(F.triplet_margin_loss, (_t(a), _t(p), _t(n)))
    y = np.array([1, -1, 1, -1.0])
    cos = (a * p).sum(1) / np.sqrt(((a * a).sum(1) + 1e-12) * ((p * p).sum(1) + 1e-12))
    ref = np.where(y == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean()
    np.testing.assert_allclose(
        F.cosine_embedding_loss(_t(a), _t(p), _t(y, False), margin=0.1).item(), ref)
    assert ag.gradcheck(lambda u, v: F.cosine_embedding_loss(u, v, _t(y, False)),
                        (_t(a), _t(p)))


def _ctc_brute(lp, target, blank=0):
    """Sum over every alignment of length T that collapses to target."""
    import itertools

    T, C = lp.shape
    total = 0.0
    for path in itertools.product(range(C), repeat=T):
        col, prev = [], None
        for s in path:
            if s != prev and s != blank:
                col.append(s)
            prev = s
        if col == list(target):
            total += np.exp(sum(lp[t, s] for t, s in enumerate(path)))
    return -np.log(total)


def test_ctc_loss():
    T, N, C = 5, 2, 3
    lp = _log_softmax(rng.normal(size=(T, N, C)), 2)
    targets = et.tensor([[1, 2], [1, 1]])
    got = F.ctc_loss(_t(lp), targets, [5, 4], [2, 2], reduction="none")
    ref = [_ctc_brute(lp[:5, 0], [1, 2]), _ctc_brute(lp[:4, 1], [1, 1])]
    np.testing.assert_allclose(got.detach().numpy(), ref, rtol=1e-8)
    assert ag.gradcheck(lambda x: F.ctc_loss(x, targets, [5, 4], [2, 2]), (_t(lp),))
    flat = F.ctc_loss(_t(lp), et.tensor([1, 2, 1, 1]), [5, 4], [2, 2], reduction="sum")
    np.testing.assert_allclose(flat.item(), sum(ref))
    inf = F.ctc_loss(_t(lp[:, :1]), et.tensor([[1, 1]]), [2], [2], reduction="none")
    assert inf.tolist()[0] == float("inf")
    zero = nn.CTCLoss(zero_infinity=True, reduction="sum")(_t(lp[:, :1]), et.tensor([[1, 1]]),
                                                            [2], [2])
    assert zero.item() == 0.0
    with pytest.raises(RuntimeError):
        F.ctc_loss(_t(lp), targets, [5], [2])


def test_loss_modules():
    w = et.tensor([1.0, 2.0, 3.0])
    ce = nn.CrossEntropyLoss(weight=w, ignore_index=1, label_smoothing=0.1)
    assert "weight" in dict(ce.named_buffers())
    x, t = et.randn(4, 3), et.tensor([0, 1, 2, 2])
    np.testing.assert_allclose(
        ce(x, t).item(), F.cross_entropy(x, t, w, ignore_index=1, label_smoothing=0.1).item())
    bce = nn.BCEWithLogitsLoss(pos_weight=et.ones(3))
    assert set(dict(bce.named_buffers())) == {"pos_weight"}
    with pytest.warns(UserWarning):
        nn.MSELoss(size_average=False)
    assert nn.MSELoss(reduction="sum")(et.ones(2), et.zeros(2)).item() == 2.0
    nll = nn.NLLLoss()
    assert nll(F.log_softmax(et.randn(2, 3, 4), 1), et.tensor([[0, 1, 2, 0], [1, 1, 1, 1]])) \
        .dim() == 0
