"""ember.nn convolution, pooling, padding, normalization and attention layers against PyTorch
2.13 CPU with copied weights: outputs, input gradients, parameter gradients and buffers, in
train and eval mode, float32 and float64; plus the functionals with options the layers do not
reach, and default initializations compared statistically."""
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as enn  # noqa: E402
import ember.nn.functional as EF  # noqa: E402
import ember.tensor as et  # noqa: E402

E = SimpleNamespace(nn=enn, F=EF, tensor=et.tensor)
T = SimpleNamespace(nn=torch.nn, F=torch.nn.functional, tensor=torch.tensor)
DT = {"float32": (et.float32, torch.float32, 2e-5), "float64": (et.float64, torch.float64, 1e-10)}
RNG = np.random.default_rng(2024)


def _distinct(shape):
    """Values without ties (max pooling picks the same element in both libraries)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) / n * 4.0 - 2.0)


def _call(m, x, lib):
    return m(x)


def _unpool(nd):
    def call(m, x, lib):
        pool = getattr(lib.F, f"max_pool{nd}d")
        out, idx = pool(x, 2, return_indices=True)
        return m(out, idx)
    return call


def _mha(m, x, lib):
    out, w = m(x, x * 0.5, x)
    return out, w


def _mha_masked(m, x, lib):
    L = x.shape[1]
    mask = lib.tensor(np.triu(np.ones((L, L), bool), 1))
    kpm = lib.tensor(np.array([[False] * L, [False] * (L - 1) + [True]]))
    return m(x, x, x, attn_mask=mask, key_padding_mask=kpm, average_attn_weights=False)


def _enc(m, x, lib):
    L = x.shape[0]
    mask = lib.tensor(np.triu(np.full((L, L), float("-inf")), 1))
    return m(x, mask=mask)


def _conv_t_size(m, x, lib):
    return m(x, output_size=(9, 10))


def _frac(m, x, lib):
    nd = x.dim() - 2
    samples = lib.tensor(np.linspace(0.1, 0.9, x.shape[0] * x.shape[1] * nd).reshape(
        x.shape[0], x.shape[1], nd))
    fn = lib.F.fractional_max_pool2d if nd == 2 else lib.F.fractional_max_pool3d
    return fn(x, m.kernel_size, output_size=m.output_size, return_indices=True,
              _random_samples=samples.to(x.dtype))


LAYERS = [
    # name, constructor(nn), input shape, input kind, call
    ("Conv1d", lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9), "n", _call),
    ("Conv1dSameDil", lambda nn: nn.Conv1d(2, 4, 4, padding="same", dilation=2, groups=2),
     (2, 2, 9), "n", _call),
    ("Conv1dCircular", lambda nn: nn.Conv1d(2, 3, 3, padding=2, padding_mode="circular"),
     (2, 2, 7), "n", _call),
    ("Conv2d", lambda nn: nn.Conv2d(3, 6, 3), (2, 3, 7, 6), "n", _call),
    ("Conv2dFull", lambda nn: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2),
                                        dilation=(1, 2), groups=2, bias=False),
     (2, 4, 7, 8), "n", _call),
    ("Conv2dReflect", lambda nn: nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"),
     (2, 2, 5, 5), "n", _call),
    ("Conv2dReplicateSame", lambda nn: nn.Conv2d(2, 3, 4, padding="same",
                                                 padding_mode="replicate"),
     (2, 2, 6, 5), "n", _call),
    ("Conv2dValidUnbatched", lambda nn: nn.Conv2d(2, 3, 2, padding="valid"), (2, 5, 5), "n",
     _call),
    ("Conv3d", lambda nn: nn.Conv3d(2, 4, 2, stride=(1, 2, 1), padding=1), (2, 2, 4, 5, 4),
     "n", _call),
    ("ConvTranspose1d", lambda nn: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1,
                                                      output_padding=1),
     (2, 3, 5), "n", _call),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1,
                                                      groups=2, dilation=2),
     (2, 4, 4, 5), "n", _call),
    ("ConvTranspose2dSize", lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1),
     (2, 2, 5, 5), "n", _conv_t_size),
    ("ConvTranspose3d", lambda nn: nn.ConvTranspose3d(2, 3, 2, stride=2, bias=False),
     (2, 2, 3, 2, 3), "n", _call),
    ("Unfold", lambda nn: nn.Unfold((2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
     (2, 3, 6, 7), "n", _call),
    ("Fold", lambda nn: nn.Fold((5, 6), 2, padding=1, stride=2), (2, 8, 12), "n", _call),
    ("ZeroPad2d", lambda nn: nn.ZeroPad2d((1, 2, 0, 3)), (2, 3, 4, 4), "n", _call),
    ("ConstantPad1d", lambda nn: nn.ConstantPad1d((2, -1), 3.5), (2, 3, 4), "n", _call),
    ("ConstantPad3d", lambda nn: nn.ConstantPad3d(1, -1.0), (1, 2, 2, 3, 2), "n", _call),
    ("ReflectionPad1d", lambda nn: nn.ReflectionPad1d((3, 1)), (2, 3, 5), "n", _call),
    ("ReflectionPad2d", lambda nn: nn.ReflectionPad2d(2), (2, 3, 4, 5), "n", _call),
    ("ReplicationPad1d", lambda nn: nn.ReplicationPad1d(2), (2, 3, 4), "n", _call),
    ("ReplicationPad2d", lambda nn: nn.ReplicationPad2d((1, 0, 2, 3)), (2, 3, 4, 4), "n",
     _call),
    ("CircularPad2d", lambda nn: nn.CircularPad2d((1, 2, 2, 0)), (2, 3, 4, 4), "n", _call),
    ("MaxPool1d", lambda nn: nn.MaxPool1d(3, 2, 1, return_indices=True, ceil_mode=True),
     (2, 3, 8), "d", _call),
    ("MaxPool2d", lambda nn: nn.MaxPool2d(2), (2, 3, 6, 6), "d", _call),
    ("MaxPool2dFull", lambda nn: nn.MaxPool2d((3, 2), (2, 1), (1, 0), dilation=(1, 2),
                                              return_indices=True, ceil_mode=True),
     (2, 3, 7, 8), "d", _call),
    ("MaxPool3d", lambda nn: nn.MaxPool3d(2, 1, 1, return_indices=True), (2, 2, 3, 4, 3), "d",
     _call),
    ("MaxUnpool1d", lambda nn: nn.MaxUnpool1d(2), (2, 3, 8), "d", _unpool(1)),
    ("MaxUnpool2d", lambda nn: nn.MaxUnpool2d(2), (2, 3, 6, 4), "d", _unpool(2)),
    ("MaxUnpool3d", lambda nn: nn.MaxUnpool3d(2), (1, 2, 4, 4, 2), "d", _unpool(3)),
    ("AvgPool1d", lambda nn: nn.AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False),
     (2, 3, 8), "n", _call),
    ("AvgPool2d", lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 6), "n", _call),
    ("AvgPool2dDivisor", lambda nn: nn.AvgPool2d(2, 1, 1, divisor_override=3), (2, 3, 4, 5),
     "n", _call),
    ("AvgPool3d", lambda nn: nn.AvgPool3d(2, (1, 2, 2), count_include_pad=False, padding=1),
     (2, 2, 3, 4, 5), "n", _call),
    ("LPPool1d", lambda nn: nn.LPPool1d(2, 3, 2), (2, 3, 8), "p", _call),
    ("LPPool2d", lambda nn: nn.LPPool2d(1.5, (2, 3), ceil_mode=True), (2, 3, 5, 7), "p",
     _call),
    ("FractionalMaxPool2d", lambda nn: nn.FractionalMaxPool2d(2, output_size=(4, 3)),
     (2, 3, 7, 6), "d", _frac),
    ("FractionalMaxPool3d", lambda nn: nn.FractionalMaxPool3d((2, 3, 2), output_size=(3, 2, 4)),
     (2, 3, 5, 6, 7), "d", _frac),
    ("AdaptiveMaxPool1d", lambda nn: nn.AdaptiveMaxPool1d(3, return_indices=True), (2, 3, 8),
     "d", _call),
    ("AdaptiveMaxPool2d", lambda nn: nn.AdaptiveMaxPool2d((3, None)), (2, 3, 7, 5), "d",
     _call),
    ("AdaptiveMaxPool3d", lambda nn: nn.AdaptiveMaxPool3d((2, 3, 1), return_indices=True),
     (2, 2, 5, 4, 3), "d", _call),
    ("AdaptiveAvgPool1d", lambda nn: nn.AdaptiveAvgPool1d(5), (2, 3, 7), "n", _call),
    ("AdaptiveAvgPool2d", lambda nn: nn.AdaptiveAvgPool2d((4, 3)), (2, 3, 7, 5), "n", _call),
    ("AdaptiveAvgPool2dGlobal", lambda nn: nn.AdaptiveAvgPool2d(1), (2, 3, 4, 5), "n", _call),
    ("AdaptiveAvgPool3d", lambda nn: nn.AdaptiveAvgPool3d(2), (2, 2, 3, 5, 4), "n", _call),
    ("BatchNorm1d", lambda nn: nn.BatchNorm1d(3), (4, 3), "n", _call),
    ("BatchNorm1dSeq", lambda nn: nn.BatchNorm1d(3, momentum=0.3), (4, 3, 5), "n", _call),
    ("BatchNorm2d", lambda nn: nn.BatchNorm2d(3), (4, 3, 3, 2), "n", _call),
    ("BatchNorm2dCumulative", lambda nn: nn.BatchNorm2d(3, momentum=None), (4, 3, 2, 2), "n",
     _call),
    ("BatchNorm2dNoStats", lambda nn: nn.BatchNorm2d(3, affine=False,
                                                     track_running_stats=False),
     (4, 3, 2, 2), "n", _call),
    ("BatchNorm3d", lambda nn: nn.BatchNorm3d(2, eps=1e-3), (3, 2, 2, 3, 2), "n", _call),
    ("InstanceNorm1d", lambda nn: nn.InstanceNorm1d(3), (2, 3, 6), "n", _call),
    ("InstanceNorm2dStats", lambda nn: nn.InstanceNorm2d(3, affine=True,
                                                         track_running_stats=True),
     (2, 3, 4, 3), "n", _call),
    ("InstanceNorm3d", lambda nn: nn.InstanceNorm3d(2, affine=True), (2, 2, 3, 2, 3), "n",
     _call),
    ("LayerNorm", lambda nn: nn.LayerNorm((3, 4)), (2, 5, 3, 4), "n", _call),
    ("LayerNormNoBias", lambda nn: nn.LayerNorm(4, eps=1e-3, bias=False), (2, 5, 4), "n",
     _call),
    ("GroupNorm", lambda nn: nn.GroupNorm(2, 4), (3, 4, 5), "n", _call),
    ("GroupNormNoAffine", lambda nn: nn.GroupNorm(3, 6, affine=False), (2, 6, 2, 2), "n",
     _call),
    ("LocalResponseNorm", lambda nn: nn.LocalResponseNorm(3, 0.1, 0.6, 1.5), (2, 5, 4), "n",
     _call),
    ("LocalResponseNorm2d", lambda nn: nn.LocalResponseNorm(2), (2, 4, 3, 3), "n", _call),
    ("MultiheadAttention", lambda nn: nn.MultiheadAttention(8, 2), (5, 2, 8), "n", _mha),
    ("MultiheadAttentionMasked", lambda nn: nn.MultiheadAttention(8, 4, batch_first=True,
                                                                  add_bias_kv=True,
                                                                  add_zero_attn=True),
     (2, 5, 8), "n", _mha_masked),
    ("MultiheadAttentionKV", lambda nn: nn.MultiheadAttention(6, 2, kdim=6, vdim=6,
                                                              bias=False),
     (4, 2, 6), "n", _mha),
    ("TransformerEncoderLayer", lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
     (5, 2, 8), "n", _call),
    ("TransformerEncoderLayerPreGelu", lambda nn: nn.TransformerEncoderLayer(
        8, 2, 12, dropout=0.0, activation="gelu", batch_first=True, norm_first=True),
     (2, 5, 8), "n", _call),
    ("TransformerEncoder", lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2, norm=nn.LayerNorm(8),
        enable_nested_tensor=False),
     (4, 3, 8), "n", _enc),
]


def _input(shape, kind):
    if kind == "d":
        return _distinct(shape)
    if kind == "p":
        return RNG.random(shape) + 0.2
    return RNG.standard_normal(shape)


def _copy_state(em, tm, t_dt):
    tsd = tm.state_dict()
    esd = em.state_dict()
    assert set(tsd) == set(esd), (sorted(set(tsd) ^ set(esd)))
    with torch.no_grad():
        for name, tv in tsd.items():
            ev = esd[name].detach().numpy().copy()
            assert tuple(ev.shape) == tuple(tv.shape), name
            tv.copy_(torch.from_numpy(ev).to(tv.dtype))


def _outputs(res):
    return list(res) if isinstance(res, tuple) else [res]


def _check(e_out, t_out, tol):
    eo, to = _outputs(e_out), _outputs(t_out)
    assert len(eo) == len(to)
    for a, b in zip(eo, to):
        if b is None:
            assert a is None
            continue
        assert tuple(a.shape) == tuple(b.shape)
        if not b.is_floating_point():
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        else:
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol * 10,
                                       atol=tol * 10)


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name,ctor,shape,kind,call", LAYERS, ids=[x[0] for x in LAYERS])
def test_layer_parity(name, ctor, shape, kind, call, dt):
    e_dt, t_dt, tol = DT[dt]
    et.manual_seed(0)
    em = ctor(enn).to(dtype=e_dt)
    tm = ctor(torch.nn).to(dtype=t_dt)
    _copy_state(em, tm, t_dt)
    for mode in ("train", "eval"):
        em.train(mode == "train")
        tm.train(mode == "train")
        x = _input(shape, kind)
        ex = et.tensor(x, dtype=e_dt, requires_grad=True)
        tx = torch.tensor(x, dtype=t_dt, requires_grad=True)
        e_out, t_out = call(em, ex, E), call(tm, tx, T)
        _check(e_out, t_out, tol)
        e_first, t_first = _outputs(e_out)[0], _outputs(t_out)[0]
        g = RNG.standard_normal(tuple(t_first.shape))
        e_first.backward(et.tensor(g, dtype=e_dt))
        t_first.backward(torch.tensor(g, dtype=t_dt))
        _check(ex.grad, tx.grad, tol)
        t_params = dict(tm.named_parameters())
        for pname, ep in em.named_parameters():
            tp = t_params[pname]
            if tp.grad is None:
                assert ep.grad is None or not ep.grad.numpy().any(), pname
            else:
                _check(ep.grad, tp.grad, tol)
            ep.grad = None
            tp.grad = None
        t_bufs = dict(tm.named_buffers())
        for bname, eb in em.named_buffers():
            _check(eb, t_bufs[bname], tol)


# --------------------------------------------------------------------------- functionals
FUNCTIONALS = [
    ("conv2d_same", lambda F, x: F.conv2d(x, x[:2, :, :3, :3], padding="same", dilation=2),
     (3, 3, 6, 7)),
    ("conv1d_groups_dil", lambda F, x: F.conv1d(x, x[:6, :2, :3], x[0, 0, :6], 2, 3, 2, 2),
     (6, 4, 11)),
    ("conv3d_unbatched", lambda F, x: F.conv3d(x[0], x[:2, :, :2, :2, :2], stride=2),
     (3, 3, 4, 5, 4)),
    ("conv_transpose3d", lambda F, x: F.conv_transpose3d(x, x[:3, :2, :2, :2, :2], None,
                                                         (2, 1, 2), 1, (1, 0, 1)),
     (3, 3, 3, 4, 3)),
    ("unfold_fold", lambda F, x: F.fold(F.unfold(x, 2, 1, 1, 1), (5, 6), 2, 1, 1, 1),
     (2, 3, 5, 6)),
    ("pad_modes", lambda F, x: F.pad(F.pad(F.pad(x, (1, 2, 0, 1), "reflect"), (2, 0, 1, 1),
                                           "replicate"), (1, 1, -1, 2), "circular"),
     (2, 3, 4, 5)),
    ("pad_constant_5d", lambda F, x: F.pad(x, (1, 0, 0, 2, 1, 1, 0, 1), value=2.5),
     (1, 2, 2, 3, 2)),
    ("avg_pool3d_ceil", lambda F, x: F.avg_pool3d(x, 2, 2, 1, True, False, 3),
     (1, 2, 5, 5, 4)),
    ("lp_pool3d", lambda F, x: F.lp_pool3d(x.abs() + 0.1, 2, 2), (1, 2, 4, 4, 4)),
    ("max_pool2d_unbatched", lambda F, x: F.max_pool2d(x[0], 3, 1, 1), (1, 2, 5, 5)),
    ("adaptive_max_pool2d_idx", lambda F, x: F.adaptive_max_pool2d(x, (3, 4), True)[0],
     (2, 2, 7, 9)),
    ("batch_norm_fn", lambda F, x: F.batch_norm(x, None, None, x[0, :, 0, 0], x[1, :, 0, 0],
                                                True, 0.1, 1e-3), (3, 4, 2, 2)),
    ("instance_norm_fn", lambda F, x: F.instance_norm(x, eps=1e-3), (2, 3, 5)),
    ("group_norm_fn", lambda F, x: F.group_norm(x, 2, x[0, :, 0], x[1, :, 0]), (3, 4, 5)),
    ("layer_norm_fn", lambda F, x: F.layer_norm(x, (5,), x[0, 0], x[1, 1], 1e-3), (3, 4, 5)),
    ("normalize_fn", lambda F, x: F.normalize(x, 1.5, 2), (3, 4, 5)),
    ("sdpa", lambda F, x: F.scaled_dot_product_attention(x, x * 0.5, x), (2, 3, 4, 5)),
    ("sdpa_causal_scale", lambda F, x: F.scaled_dot_product_attention(
        x, x[:, :, :3] * 0.3, x[:, :, :3], is_causal=True, scale=0.7), (2, 3, 4, 5)),
    ("sdpa_float_mask", lambda F, x: F.scaled_dot_product_attention(
        x, x.flip(2) if hasattr(x, "flip") else x, x, attn_mask=x[0, 0, :, :4].sin()),
     (2, 3, 4, 4)),
]


@pytest.mark.parametrize("dt", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,shape", FUNCTIONALS, ids=[f[0] for f in FUNCTIONALS])
def test_functional_parity(name, fn, shape, dt):
    e_dt, t_dt, tol = DT[dt]
    x = _input(shape, "d" if "max" in name else "n")
    ex = et.tensor(x, dtype=e_dt, requires_grad=True)
    tx = torch.tensor(x, dtype=t_dt, requires_grad=True)
    e_out, t_out = fn(EF, ex), fn(torch.nn.functional, tx)
    _check(e_out, t_out, tol)
    g = RNG.standard_normal(tuple(t_out.shape))
    e_out.backward(et.tensor(g, dtype=e_dt))
    t_out.backward(torch.tensor(g, dtype=t_dt))
    _check(ex.grad, tx.grad, tol)


def test_conv_same_even_kernel_parity():
    x = RNG.standard_normal((2, 3, 6, 7))
    w = RNG.standard_normal((4, 3, 2, 3))
    e = EF.conv2d(et.tensor(x), et.tensor(w), padding="same")
    with warnings.catch_warnings():  # PyTorch warns that it pads a copy of the input
        warnings.simplefilter("ignore", UserWarning)
        t = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), padding="same")
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


def test_sdpa_bool_mask_parity():
    q, k, v = (RNG.standard_normal(s) for s in ((2, 4, 3), (2, 5, 3), (2, 5, 2)))
    mask = RNG.random((4, 5)) > 0.5
    mask[:, 0] = True
    e = EF.scaled_dot_product_attention(et.tensor(q), et.tensor(k), et.tensor(v),
                                        et.tensor(mask))
    t = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), torch.tensor(mask))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- default inits
@pytest.mark.parametrize("name,ctor", [
    ("Conv2d", lambda nn: nn.Conv2d(16, 32, 3)),
    ("Conv1dGroups", lambda nn: nn.Conv1d(16, 32, 5, groups=4)),
    ("ConvTranspose2d", lambda nn: nn.ConvTranspose2d(16, 32, 3)),
    ("MultiheadAttention", lambda nn: nn.MultiheadAttention(32, 4)),
])
def test_default_init_distribution(name, ctor):
    et.manual_seed(0)
    torch.manual_seed(0)
    em, tm = ctor(enn), ctor(torch.nn)
    tparams = dict(tm.named_parameters())
    for pname, ep in em.named_parameters():
        e = ep.detach().numpy().ravel()
        t = tparams[pname].detach().numpy().ravel()
        assert e.shape == t.shape
        # same bounds and spread (sampling error shrinks with the number of elements)
        rtol = 0.1 if e.size >= 500 else 0.3
        np.testing.assert_allclose(np.abs(e).max(), np.abs(t).max(), rtol=rtol, atol=1e-7)
        np.testing.assert_allclose(e.std(), t.std(), rtol=rtol, atol=1e-7)


# --------------------------------------------------------------------------- training
def _lenet(nn):
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 4 * 4, 120),
                         nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_lenet_trains_step_for_step(dt):
    """The MNIST-style CNN: same weights, same batches, plain SGD; losses and weights agree
    after every step."""
    e_dt, t_dt, tol = DT[dt]
    et.manual_seed(0)
    em, tm = _lenet(enn).to(dtype=e_dt), _lenet(torch.nn).to(dtype=t_dt)
    _copy_state(em, tm, t_dt)
    e_loss_fn, t_loss_fn = enn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    lr = 0.05
    for _ in range(4):
        x = RNG.standard_normal((8, 1, 28, 28))
        y = RNG.integers(0, 10, 8)
        el = e_loss_fn(em(et.tensor(x, dtype=e_dt)), et.tensor(y))
        tl = t_loss_fn(tm(torch.tensor(x, dtype=t_dt)), torch.tensor(y))
        np.testing.assert_allclose(el.item(), tl.item(), rtol=tol * 100, atol=tol * 100)
        el.backward()
        tl.backward()
        t_params = dict(tm.named_parameters())
        for name, ep in em.named_parameters():
            tp = t_params[name]
            ep.data.sub_(ep.grad * lr)
            ep.grad = None
            with torch.no_grad():
                tp.sub_(tp.grad * lr)
            tp.grad = None
            np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy(),
                                       rtol=tol * 100, atol=tol * 100, err_msg=name)


def test_native_layer_norm_outputs_and_double_backward_parity():
    """mean and rstd are not differentiable outputs (PyTorch's output_differentiability);
    first and second derivatives through the fused backward match PyTorch's."""
    rng = np.random.default_rng(7)
    x, w, b = (rng.standard_normal(s) for s in ((3, 4, 6), (4, 6), (4, 6)))
    import ember.autograd as eag

    got, want = [], []
    for T, ag, out in ((et, eag, got), (torch, torch.autograd, want)):
        tx, tw, tb = (T.tensor(a, requires_grad=True) for a in (x, w, b))
        y, mean, rstd = T.native_layer_norm(tx, [4, 6], tw, tb, 1e-5)
        out.append((y.requires_grad, mean.requires_grad, rstd.requires_grad))
        gy = T.tensor(np.cos(np.arange(72.0)).reshape(3, 4, 6), requires_grad=True)
        gx, gw, gb = ag.grad(y, (tx, tw, tb), gy, create_graph=True)
        s = (gx * gx).sum() + (gw * tw).sum() + (gb * gb * gb).sum()
        out.extend(a.detach().numpy() for a in (gx, gw, gb))
        out.extend(a.numpy() for a in ag.grad(s, (tx, tw, gy)))
    assert got[0] == want[0] == (True, False, False)
    for g, e in zip(got[1:], want[1:]):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-10)
