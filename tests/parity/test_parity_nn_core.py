"""ember.nn core layers and losses against PyTorch 2.13 CPU with copied weights: outputs,
input gradients, parameter gradients, train/eval, float32 and float64; default inits compared
statistically."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
import ember.tensor as et  # noqa: E402

DT = {"float32": (et.float32, torch.float32, 1e-5), "float64": (et.float64, torch.float64, 1e-10)}


def _pair(a, dt, grad=True):
    e_dt, t_dt, _ = DT[dt]
    return (et.tensor(a, dtype=e_dt, requires_grad=grad),
            torch.tensor(a, dtype=t_dt, requires_grad=grad))


def _copy_params(em, tm):
    esd = dict(em.named_parameters())
    for name, tp in tm.named_parameters():
        with torch.no_grad():
            tp.copy_(torch.from_numpy(esd[name].detach().numpy().copy()).to(tp.dtype))


def _close(e, t, tol):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol * 10,
                               atol=tol * 10)


LAYERS = [
    ("Linear", lambda m: m.Linear(5, 4), (3, 5)),
    ("LinearNoBias", lambda m: m.Linear(5, 4, bias=False), (2, 3, 5)),
    ("PReLU", lambda m: m.PReLU(3), (2, 3, 4)),
    ("ReLU", lambda m: m.ReLU(), (3, 5)),
    ("ReLU6", lambda m: m.ReLU6(), (3, 5)),
    ("ELU", lambda m: m.ELU(0.5), (3, 5)),
    ("SELU", lambda m: m.SELU(), (3, 5)),
    ("CELU", lambda m: m.CELU(1.5), (3, 5)),
    ("GELU", lambda m: m.GELU(), (3, 5)),
    ("GELUtanh", lambda m: m.GELU("tanh"), (3, 5)),
    ("SiLU", lambda m: m.SiLU(), (3, 5)),
    ("Mish", lambda m: m.Mish(), (3, 5)),
    ("LeakyReLU", lambda m: m.LeakyReLU(0.1), (3, 5)),
    ("Threshold", lambda m: m.Threshold(0.2, -1.0), (3, 5)),
    ("Hardtanh", lambda m: m.Hardtanh(-0.5, 0.5), (3, 5)),
    ("Hardsigmoid", lambda m: m.Hardsigmoid(), (3, 5)),
    ("Hardswish", lambda m: m.Hardswish(), (3, 5)),
    ("Sigmoid", lambda m: m.Sigmoid(), (3, 5)),
    ("LogSigmoid", lambda m: m.LogSigmoid(), (3, 5)),
    ("Tanh", lambda m: m.Tanh(), (3, 5)),
    ("Tanhshrink", lambda m: m.Tanhshrink(), (3, 5)),
    ("Softplus", lambda m: m.Softplus(2.0, 3.0), (3, 5)),
    ("Softmax", lambda m: m.Softmax(dim=1), (3, 5)),
    ("LogSoftmax", lambda m: m.LogSoftmax(dim=0), (3, 5)),
    ("Softmax2d", lambda m: m.Softmax2d(), (2, 3, 2, 2)),
    ("Softmin", lambda m: m.Softmin(dim=-1), (3, 5)),
    ("Softshrink", lambda m: m.Softshrink(0.3), (3, 5)),
    ("Hardshrink", lambda m: m.Hardshrink(0.3), (3, 5)),
    ("Softsign", lambda m: m.Softsign(), (3, 5)),
    ("GLU", lambda m: m.GLU(1), (3, 6)),
    ("Flatten", lambda m: m.Flatten(), (2, 3, 4)),
    ("Unflatten", lambda m: m.Unflatten(1, (2, 3)), (2, 6)),
    ("Identity", lambda m: m.Identity(), (2, 6)),
    ("Dropout-eval", lambda m: m.Dropout(0.5).eval(), (4, 5)),
    ("Sequential", lambda m: m.Sequential(m.Linear(5, 8), m.Tanh(), m.Linear(8, 3),
                                          m.LogSoftmax(1)), (4, 5)),
]


@pytest.mark.parametrize("dt", sorted(DT))
@pytest.mark.parametrize("name,make,shape", LAYERS, ids=[x[0] for x in LAYERS])
def test_layer_parity(name, make, shape, dt):
    e_dt, t_dt, tol = DT[dt]
    if name in ("Hardsigmoid", "Hardswish"):
        tol = max(tol, 1e-7)  # PyTorch's backward uses a float32 1/6 even in float64
    em = make(nn).to(e_dt)
    tm = make(torch.nn).to(t_dt)
    _copy_params(em, tm)
    a = np.random.default_rng(0).normal(size=shape) * 2
    xe, xt = _pair(a, dt)
    ye, yt = em(xe), tm(xt)
    _close(ye, yt, tol)
    g = np.random.default_rng(1).normal(size=tuple(yt.shape))
    ye.backward(et.tensor(g, dtype=e_dt))
    yt.backward(torch.tensor(g, dtype=t_dt))
    _close(xe.grad, xt.grad, tol)
    tparams = dict(tm.named_parameters())
    for n, p in em.named_parameters():
        _close(p.grad, tparams[n].grad, tol)


@pytest.mark.parametrize("dt", sorted(DT))
def test_bilinear_embedding_parity(dt):
    e_dt, t_dt, tol = DT[dt]
    eb, tb = nn.Bilinear(3, 4, 2).to(e_dt), torch.nn.Bilinear(3, 4, 2).to(t_dt)
    _copy_params(eb, tb)
    r = np.random.default_rng(2)
    x1e, x1t = _pair(r.normal(size=(5, 3)), dt)
    x2e, x2t = _pair(r.normal(size=(5, 4)), dt)
    ye, yt = eb(x1e, x2e), tb(x1t, x2t)
    _close(ye, yt, tol)
    ye.sum().backward()
    yt.sum().backward()
    _close(x1e.grad, x1t.grad, tol)
    _close(eb.weight.grad, tb.weight.grad, tol)
    for kw in ({}, {"padding_idx": 1}, {"scale_grad_by_freq": True},
               {"max_norm": 1.0, "padding_idx": 0}):
        ee = nn.Embedding(7, 3, **kw).to(e_dt)
        te = torch.nn.Embedding(7, 3, **kw).to(t_dt)
        _copy_params(ee, te)
        idx = [[1, 2, 1], [6, 0, 1]]
        ye, yt = ee(et.tensor(idx)), te(torch.tensor(idx))
        _close(ye, yt, tol)
        (ye ** 2).sum().backward()
        (yt ** 2).sum().backward()
        _close(ee.weight.grad, te.weight.grad, tol)
        _close(ee.weight, te.weight, tol)
    for mode in ("sum", "mean", "max"):
        ee = nn.EmbeddingBag(7, 3, mode=mode).to(e_dt)
        te = torch.nn.EmbeddingBag(7, 3, mode=mode).to(t_dt)
        _copy_params(ee, te)
        idx, off = [1, 2, 4, 5, 6, 1], [0, 2, 5]
        ye, yt = ee(et.tensor(idx), et.tensor(off)), te(torch.tensor(idx), torch.tensor(off))
        _close(ye, yt, tol)
        (ye ** 2).sum().backward()
        (yt ** 2).sum().backward()
        _close(ee.weight.grad, te.weight.grad, tol)


def _loss_cases(r):
    x = r.normal(size=(4, 5)) * 3
    y = r.normal(size=(4, 5))
    p = r.uniform(0.05, 0.95, size=(4, 5))
    cls = np.array([0, 4, 2, 1])
    sign = np.sign(r.normal(size=(4, 5)))
    w5 = r.uniform(0.5, 2, size=5)
    probs = r.uniform(size=(4, 5))
    probs /= probs.sum(1, keepdims=True)
    ml = np.array([[3, 0, -1, 1, 1], [1, 2, 3, -1, 0], [4, -1, 0, 0, 0], [0, 1, 2, 3, 4]])
    return [
        ("L1Loss", {}, [x, y]),
        ("MSELoss", {}, [x, y]),
        ("SmoothL1Loss", {"beta": 0.5}, [x, y]),
        ("HuberLoss", {"delta": 0.7}, [x, y]),
        ("SoftMarginLoss", {}, [x, sign]),
        ("CrossEntropyLoss", {}, [x, cls]),
        ("CrossEntropyLoss", {"weight": w5, "ignore_index": 2, "label_smoothing": 0.1},
         [x, cls]),
        ("CrossEntropyLoss", {"label_smoothing": 0.2}, [x, probs]),
        ("CrossEntropyLoss", {}, [r.normal(size=(2, 5, 3, 2)), r.integers(0, 5, (2, 3, 2))]),
        ("NLLLoss", {"weight": w5}, [x, cls]),
        ("NLLLoss", {"ignore_index": 1}, [r.normal(size=(2, 5, 3)), r.integers(0, 5, (2, 3))]),
        ("PoissonNLLLoss", {}, [x / 3, np.abs(y)]),
        ("PoissonNLLLoss", {"log_input": False, "full": True}, [p, np.abs(y) * 3]),
        ("GaussianNLLLoss", {}, [x, y, p]),
        ("KLDivLoss", {"reduction": "batchmean"}, [np.log(probs), probs[::-1].copy()]),
        ("KLDivLoss", {"reduction": "sum", "log_target": True}, [x, np.log(probs)]),
        ("BCELoss", {"weight": w5}, [p, probs]),
        ("BCEWithLogitsLoss", {"pos_weight": w5}, [x, probs]),
        ("MarginRankingLoss", {"margin": 0.2}, [x[:, 0], y[:, 0], sign[:, 0]]),
        ("HingeEmbeddingLoss", {"margin": 0.5}, [x, sign]),
        ("MultiLabelMarginLoss", {}, [x, ml]),
        ("MultiLabelSoftMarginLoss", {"weight": w5}, [x, (sign > 0) * 1.0]),
        ("MultiMarginLoss", {"p": 2, "margin": 0.7, "weight": w5}, [x, cls]),
        ("CosineEmbeddingLoss", {"margin": 0.1}, [x, y, sign[:, 0]]),
        ("TripletMarginLoss", {"margin": 0.5, "p": 1.5, "swap": True}, [x, y, p]),
    ]


_SIGN_TARGET = {"SoftMarginLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss",
                "MarginRankingLoss", "MultiLabelSoftMarginLoss"}
_CASES = _loss_cases(np.random.default_rng(5))


_LOSS_PARAMS = [(i, r) for i, c in enumerate(_CASES)
                for r in (["mean"] if "reduction" in c[1] else ["none", "mean", "sum"])]


@pytest.mark.parametrize("dt", sorted(DT))
@pytest.mark.parametrize("case,reduction", _LOSS_PARAMS,
                         ids=[f"{_CASES[i][0]}-{r}" for i, r in _LOSS_PARAMS])
def test_loss_parity(case, reduction, dt):
    e_dt, t_dt, tol = DT[dt]
    name, kw, args = _CASES[case]
    kw = dict(kw)
    kw.setdefault("reduction", reduction)
    ekw = {k: (et.tensor(v, dtype=e_dt) if isinstance(v, np.ndarray) else v)
           for k, v in kw.items()}
    tkw = {k: (torch.tensor(v, dtype=t_dt) if isinstance(v, np.ndarray) else v)
           for k, v in kw.items()}
    eargs, targs = [], []
    for k, a in enumerate(args):
        if a.dtype.kind == "i" or (k == len(args) - 1 and name in _SIGN_TARGET):
            eargs.append(et.tensor(a, dtype=e_dt if a.dtype.kind == "f" else None))
            targs.append(torch.tensor(a, dtype=t_dt if a.dtype.kind == "f" else None))
        elif a.dtype.kind == "i":
            eargs.append(et.tensor(a))
            targs.append(torch.tensor(a))
        else:
            e, t = _pair(a, dt)
            eargs.append(e)
            targs.append(t)
    le = getattr(nn, name)(**ekw)(*eargs)
    lt = getattr(torch.nn, name)(**tkw)(*targs)
    _close(le, lt, tol)
    le.sum().backward()
    lt.sum().backward()
    for e, t in zip(eargs, targs):
        if t.requires_grad:
            _close(e.grad, t.grad, tol * 10)


def test_huge_logits_parity():
    x = np.array([[1000.0, -1000.0, 3.0], [-1000.0, 1000.0, 0.0]])
    xe, xt = _pair(x, "float32")
    le = F.cross_entropy(xe, et.tensor([1, 1]))
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor([1, 1]))
    le.backward()
    lt.backward()
    _close(le, lt, 1e-5)
    _close(xe.grad, xt.grad, 1e-5)
    ye, yt = _pair(x, "float32")
    be = F.binary_cross_entropy_with_logits(ye, et.ones(2, 3))
    bt = torch.nn.functional.binary_cross_entropy_with_logits(yt, torch.ones(2, 3))
    be.backward()
    bt.backward()
    _close(be, bt, 1e-5)
    _close(ye.grad, yt.grad, 1e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_ctc_parity(reduction):
    r = np.random.default_rng(3)
    T, N, C = 8, 3, 5
    logits = r.normal(size=(T, N, C))
    targets = [[1, 2, 2], [3, 1, 0], [4, 0, 0]]
    il, tl = [8, 7, 5], [3, 2, 1]
    xe, xt = _pair(logits, "float64")
    le = F.ctc_loss(F.log_softmax(xe, 2), et.tensor(targets), il, tl, reduction=reduction)
    lt = torch.nn.functional.ctc_loss(xt.log_softmax(2), torch.tensor(targets),
                                      torch.tensor(il), torch.tensor(tl), reduction=reduction)
    _close(le, lt, 1e-10)
    le.sum().backward()
    lt.sum().backward()
    _close(xe.grad, xt.grad, 1e-9)


def test_train_eval_dropout_parity():
    em, tm = nn.Dropout(0.4), torch.nn.Dropout(0.4)
    x = np.ones((200, 200))
    ye = em(et.tensor(x, dtype=et.float32)).numpy()
    yt = tm(torch.tensor(x, dtype=torch.float32)).numpy()
    assert set(np.unique(ye).round(5)) == set(np.unique(yt).round(5))
    assert abs((ye == 0).mean() - (yt == 0).mean()) < 0.02
    em.eval()
    tm.eval()
    np.testing.assert_array_equal(em(et.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())


INITS = [
    ("Linear", lambda m: m.Linear(300, 200)),
    ("Bilinear", lambda m: m.Bilinear(50, 40, 30)),
    ("Embedding", lambda m: m.Embedding(300, 100)),
    ("PReLU", lambda m: m.PReLU(4)),
]


@pytest.mark.parametrize("name,make", INITS, ids=[i[0] for i in INITS])
def test_default_init_statistics(name, make):
    et.manual_seed(0)
    torch.manual_seed(0)
    em, tm = make(nn), make(torch.nn)
    tp = dict(tm.named_parameters())
    for n, p in em.named_parameters():
        a, b = p.detach().numpy().ravel(), tp[n].detach().numpy().ravel()
        assert a.shape == b.shape
        assert abs(a.min() - b.min()) < 0.2 * (abs(b.min()) + 1e-3) + 0.02
        assert abs(a.max() - b.max()) < 0.2 * (abs(b.max()) + 1e-3) + 0.02
        assert abs(a.std() - b.std()) < (4 / math.sqrt(2 * a.size) + 0.02) * b.std() + 1e-6
        assert abs(a.mean() - b.mean()) < 6 * b.std() / math.sqrt(a.size) + 1e-6


@pytest.mark.parametrize("fn", ["xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
                                "kaiming_normal_", "trunc_normal_", "orthogonal_"])
def test_init_functions_statistics(fn):
    et.manual_seed(0)
    torch.manual_seed(0)
    a = getattr(nn.init, fn)(et.empty(256, 128)).numpy().ravel()
    b = getattr(torch.nn.init, fn)(torch.empty(256, 128)).numpy().ravel()
    assert abs(a.std() - b.std()) < 0.05 * b.std()
    assert abs(a.min() - b.min()) < 0.15 * abs(b.min())
    assert abs(a.max() - b.max()) < 0.15 * abs(b.max())


LAZY = [("LazyLinear", (3,), (4, 5)), ("LazyConv1d", (4, 3), (2, 3, 8)),
        ("LazyConv2d", (4, 3), (2, 3, 6, 6)), ("LazyConv3d", (2, 2), (1, 2, 3, 3, 3)),
        ("LazyConvTranspose1d", (4, 3), (2, 3, 5)),
        ("LazyConvTranspose2d", (2, 3), (1, 2, 4, 4)),
        ("LazyConvTranspose3d", (2, 2), (1, 2, 2, 2, 2)),
        ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 4, 4)),
        ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)), ("LazyInstanceNorm1d", (), (2, 3, 5)),
        ("LazyInstanceNorm2d", (), (2, 3, 4, 4)), ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))]


@pytest.mark.parametrize("name, args, shape", LAZY)
def test_lazy_module_parity(name, args, shape):
    em, tm = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    ey, ty = em(et.tensor(x)), tm(torch.tensor(x))
    assert type(em).__name__ == type(tm).__name__ and repr(em) == repr(tm)
    assert {k: tuple(v.shape) for k, v in em.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    _copy_params(em, tm)
    np.testing.assert_allclose(em(et.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert ey.shape == tuple(ty.shape)


def test_lazy_load_state_dict_parity():
    src = torch.nn.Linear(6, 2)
    tm, em = torch.nn.LazyLinear(2), nn.LazyLinear(2)
    tm.load_state_dict(src.state_dict())
    em.load_state_dict({k: et.tensor(v.numpy()) for k, v in src.state_dict().items()})
    x = np.ones((1, 6), np.float32)
    np.testing.assert_allclose(em(et.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-6)
    assert type(em).__name__ == type(tm).__name__ == "Linear"


def _both(a):
    return et.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _grads_match(ein, tin, eout, tout, g):
    eout.backward(et.tensor(g))
    tout.backward(torch.tensor(g))
    for e, t in zip(ein, tin):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", ["rms_norm", "rms_norm_eps_none", "channel_shuffle",
                                  "conv_tbc", "linear_cross_entropy"])
def test_new_functional_parity(case):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 6, 3))
    if case.startswith("rms_norm"):
        w = rng.standard_normal((6, 3))
        (ex, tx), (ew, tw) = _both(x), _both(w)
        eps = None if case.endswith("none") else 1e-4
        eo, to = F.rms_norm(ex, [6, 3], ew, eps), torch.nn.functional.rms_norm(tx, [6, 3], tw,
                                                                                 eps)
        ins = ((ex, ew), (tx, tw))
    elif case == "channel_shuffle":
        (ex, tx) = _both(x)
        eo, to = F.channel_shuffle(ex, 3), torch.nn.functional.channel_shuffle(tx, 3)
        ins = ((ex,), (tx,))
    elif case == "conv_tbc":
        w, b = rng.standard_normal((2, 3, 5)), rng.standard_normal(5)
        (ex, tx), (ew, tw), (eb, tb) = _both(x), _both(w), _both(b)
        eo, to = F.conv_tbc(ex, ew, eb, 1), torch.conv_tbc(tx, tw, tb, 1)
        ins = ((ex, ew, eb), (tx, tw, tb))
    else:
        w, b = rng.standard_normal((5, 3)), rng.standard_normal(5)
        t = rng.integers(0, 5, (4, 6))
        x2 = x.reshape(24, 3)
        (ex, tx), (ew, tw), (eb, tb) = _both(x2), _both(w), _both(b)
        eo = F.linear_cross_entropy(ex, ew, et.tensor(t.reshape(-1)), linear_bias=eb,
                                    label_smoothing=0.1, ignore_index=2)
        to = torch.nn.functional.linear_cross_entropy(tx, tw, torch.tensor(t.reshape(-1)),
                                                      linear_bias=tb, label_smoothing=0.1,
                                                      ignore_index=2)
        ins = ((ex, ew, eb), (tx, tw, tb))
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    _grads_match(ins[0], ins[1], eo, to, rng.standard_normal(tuple(to.shape)))


def test_new_module_parity():
    x = np.random.default_rng(2).standard_normal((2, 7, 3, 2)).astype(np.float32)
    for size in (1, 2, 3, 4, 6):
        em, tm = nn.CrossMapLRN2d(size, 0.3, 0.6, 1.2), torch.nn.CrossMapLRN2d(size, 0.3, 0.6,
                                                                                1.2)
        assert repr(em) == repr(tm)
        np.testing.assert_allclose(em(et.tensor(x)).numpy(), tm(torch.tensor(x)).numpy(),
                                   rtol=1e-6, atol=1e-7)
    for make in (lambda m: m.RMSNorm([3, 2], eps=1e-6), lambda m: m.RMSNorm(2),
                 lambda m: m.ChannelShuffle(7), lambda m: m.LayerNorm(2, bias=False),
                 lambda m: m.GroupNorm(7, 7, bias=False), lambda m: m.BatchNorm2d(7, bias=False),
                 lambda m: m.InstanceNorm2d(7, affine=True, bias=False)):
        em, tm = make(nn), make(torch.nn)
        assert repr(em) == repr(tm)
        assert list(em.state_dict()) == list(tm.state_dict())
        np.testing.assert_allclose(em(et.tensor(x)).detach().numpy(),
                                   tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.warns(FutureWarning) as ew:
        nn.NLLLoss2d()
    with pytest.warns(FutureWarning) as tw:
        torch.nn.NLLLoss2d()
    assert str(ew[0].message) == str(tw[0].message)


# --------------------------------------------------------------------------- aten-level ops
# nll loss and sequence packing are registry ops with PyTorch's aten signatures: compare the
# ops themselves (outputs, total_weight, the backward ops) and their errors.
_aten = torch.ops.aten


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(4, 5), (5,), (2, 5, 3)])
def test_nll_loss_forward_and_backward_ops_parity(shape, weighted, reduction):
    rng = np.random.default_rng(31)
    x = rng.standard_normal(shape)
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng.integers(0, C, tshape)
    if t.ndim:
        t.reshape(-1)[::3] = 1  # the ignored class
    w = rng.uniform(0.5, 2.0, C) if weighted else None
    xe, xt = _pair(x, "float64", False)
    te, tt = et.tensor(t), torch.tensor(t)
    we = None if w is None else et.tensor(w)
    wt = None if w is None else torch.tensor(w)
    out_e, tw_e = et.nll_loss_forward(xe, te, we, reduction, 1)
    if len(shape) <= 2:
        out_t, tw_t = _aten.nll_loss_forward(xt, tt, wt, reduction, 1)
    else:  # PyTorch's (N, C, d) goes through nll_loss_nd; its total weight is the mean's divisor
        out_t = torch._C._nn.nll_loss_nd(xt, tt, wt, reduction, 1)
        counted = tt != 1
        tw_t = (wt[tt.clamp(0)] * counted).sum() if wt is not None else counted.sum().double()
        tw_t = tw_t * (reduction != 0)
    _close(out_e, out_t, 1e-10)
    _close(tw_e, tw_t, 1e-10)
    g = rng.standard_normal(tuple(out_e.shape))
    if len(shape) <= 2:
        gi_t = _aten.nll_loss_backward(torch.tensor(g), xt, tt, wt, reduction, 1, tw_t)
    else:
        xg = xt.clone().requires_grad_()
        torch._C._nn.nll_loss_nd(xg, tt, wt, reduction, 1).backward(torch.tensor(g))
        gi_t = xg.grad
    gi_e = et.nll_loss_backward(et.tensor(g), xe, te, we, reduction, 1, tw_e)
    _close(gi_e, gi_t, 1e-10)


@pytest.mark.parametrize("batch_first", [False, True])
def test_packing_ops_parity(batch_first):
    rng = np.random.default_rng(32)
    lengths = [5, 4, 4, 2, 1]
    x = rng.standard_normal((5, 6, 3) if batch_first else (6, 5, 3))
    xe, xt = _pair(x, "float64", False)
    de, be = et._pack_padded_sequence(xe, et.tensor(lengths), batch_first)
    dt, bt = torch._VF._pack_padded_sequence(xt, torch.tensor(lengths), batch_first)
    _close(de, dt, 0)
    assert be.tolist() == bt.tolist() and be.dtype == et.int64 and be.device.type == "cpu"
    g = rng.standard_normal(tuple(de.shape))
    _close(et._pack_padded_sequence_backward(et.tensor(g), list(x.shape), be, batch_first),
           _aten._pack_padded_sequence_backward(torch.tensor(g), list(x.shape), bt,
                                                batch_first), 0)
    for total in (0, 8):
        pe, le = et._pad_packed_sequence(de, be, batch_first, -2.0, total)
        pt, lt = torch._VF._pad_packed_sequence(dt, bt, batch_first, -2.0, total)
        _close(pe, pt, 0)
        assert le.tolist() == lt.tolist()


def _same_error(fe, ft):
    with pytest.raises(Exception) as te:
        ft()
    with pytest.raises(Exception) as ee:
        fe()
    assert type(ee.value) is type(te.value), (ee.value, te.value)


def test_nll_loss_and_packing_op_errors_match():
    x = np.zeros((3, 4))
    xe, xt = _pair(x, "float64", False)
    nd = torch._C._nn.nll_loss_nd  # ember's nll_loss_forward takes every layout, as this
    for target in ([0, 4, 1], [0, 1], [[0, 1, 2]]):  # out of range, batch, rank
        _same_error(lambda t=target: et.nll_loss_nd(xe, et.tensor(t)),
                    lambda t=target: nd(xt, torch.tensor(t)))
    _same_error(lambda: et.nll_loss_nd(xe, et.tensor([0, 1, 2]), et.ones(3)),
                lambda: nd(xt, torch.tensor([0, 1, 2]), torch.ones(3, dtype=torch.float64)))
    _same_error(lambda: et.nll_loss_nd(xe, et.tensor([0.0, 1.0, 2.0])),
                lambda: nd(xt, torch.tensor([0.0, 1.0, 2.0])))
    _same_error(lambda: et.nll_loss_nd(et.zeros(()), et.tensor(0)),
                lambda: nd(torch.zeros(()), torch.tensor(0)))
    p = np.zeros((4, 3, 2))
    pe, pt = _pair(p, "float64", False)
    for lengths in ([2, 3, 1], [3, 0], [3, 2, 0], [3, 2]):  # unsorted, batch, zero, batch
        _same_error(lambda n=lengths: et._pack_padded_sequence(pe, et.tensor(n), False),
                    lambda n=lengths: torch._VF._pack_padded_sequence(pt, torch.tensor(n), False))
    de, be = et._pack_padded_sequence(pe, et.tensor([4, 2, 1]), False)
    dt, bt = torch._VF._pack_padded_sequence(pt, torch.tensor([4, 2, 1]), False)
    _same_error(lambda: et._pad_packed_sequence(de, be, False, 0.0, 2),
                lambda: torch._VF._pad_packed_sequence(dt, bt, False, 0.0, 2))
