"""Resampling (issue 16, item 5): ``F.interpolate`` (anti-aliased too) and the ``Upsample`` modules,
``F.grid_sample``, ``F.affine_grid``, ``F.pixel_shuffle``; forward values against direct NumPy
loops, gradients with ``gradcheck`` and ``gradgradcheck`` in float64. PyTorch parity is in
``tests/parity/test_parity_resample.py``."""
from __future__ import annotations

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(0)


def _t(*shape, requires_grad=True):
    return et.from_numpy(RNG.standard_normal(shape)).requires_grad_(requires_grad)


# ----------------------------------------------------------------------------- forward values
def test_nearest_and_linear_values_against_loops():
    x = RNG.standard_normal((1, 2, 5))
    out = F.interpolate(et.from_numpy(x), size=8, mode="nearest").numpy()
    ref = x[..., [min(int(np.floor(i * np.float32(5 / 8))), 4) for i in range(8)]]
    assert np.array_equal(out, ref)
    out = F.interpolate(et.from_numpy(x), size=8, mode="linear", align_corners=True).numpy()
    ref = np.stack([np.interp(np.linspace(0, 4, 8), np.arange(5), row) for row in x[0]])[None]
    assert np.allclose(out, ref, atol=1e-12)
    out = F.interpolate(et.from_numpy(x), size=8, mode="linear").numpy()
    src = np.maximum((np.arange(8) + 0.5) * 5 / 8 - 0.5, 0)
    ref = np.stack([np.interp(src, np.arange(5), row) for row in x[0]])[None]
    assert np.allclose(out, ref, atol=1e-12)


def test_bilinear_is_separable_linear_and_area_is_mean():
    x = RNG.standard_normal((2, 3, 4, 6))
    a = F.interpolate(et.from_numpy(x), size=(7, 9), mode="bilinear", align_corners=True)
    b = F.interpolate(F.interpolate(et.from_numpy(x).transpose(2, 3).reshape(2, 18, 4), size=7,
                                    mode="linear", align_corners=True)
                      .reshape(2, 3, 6, 7).transpose(2, 3).reshape(2, 21, 6), size=9,
                      mode="linear", align_corners=True).reshape(2, 3, 7, 9)
    assert np.allclose(a.numpy(), b.numpy(), atol=1e-12)
    area = F.interpolate(et.from_numpy(x), size=(2, 3), mode="area").numpy()
    assert np.allclose(area, x.reshape(2, 3, 2, 2, 3, 2).mean((3, 5)), atol=1e-12)


def test_bicubic_reproduces_constant_and_linear_ramps():
    ramp = np.tile(np.arange(6.0), (5, 1))[None, None]
    out = F.interpolate(et.from_numpy(ramp), size=(5, 11), mode="bicubic",
                        align_corners=True).numpy()
    # away from the borders (where the taps are clamped) cubic convolution is exact on ramps
    assert np.allclose(out[0, 0, :, 2:-2], np.tile(np.linspace(0, 5, 11)[2:-2], (5, 1)),
                       atol=1e-12)
    const = F.interpolate(et.full((1, 1, 3, 3), 2.5, dtype=et.float64), scale_factor=2.5,
                          mode="bicubic").numpy()
    assert np.allclose(const, 2.5, atol=1e-12)


def test_interpolate_errors():
    x = et.ones(1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="needs 3D input"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(NotImplementedError):
        F.interpolate(x, scale_factor=2, mode="cubic")
    with pytest.raises(ValueError):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(x, scale_factor=0.5, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="Anti-alias option is restricted"):
        F.interpolate(et.ones(1, 1, 4), scale_factor=0.5, mode="bilinear", antialias=True)
    with pytest.raises(ValueError, match="Lanczos mode requires antialias=True"):
        F.interpolate(x, scale_factor=0.5, mode="lanczos")
    with pytest.raises(ValueError, match="does not support align_corners=True"):
        F.interpolate(x, scale_factor=0.5, mode="lanczos", antialias=True, align_corners=True)


def _aa_reference(x, n_out, kind):
    """Anti-aliased resampling of the last dim of ``x`` to ``n_out``, one output pixel at a
    time: the filter centred on the pixel's source centre, stretched by the scale when
    downsampling, evaluated at every input pixel centre inside its support, normalized."""
    n_in = x.shape[-1]
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    half = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[kind]

    def filt(t):
        t = abs(t)
        if kind == "bilinear":
            return max(0.0, 1 - t)
        if kind == "lanczos":
            return float(np.sinc(t) * np.sinc(t / 3)) if t < 3 else 0.0
        a = -0.5
        if t < 1:
            return (a + 2) * t ** 3 - (a + 3) * t ** 2 + 1
        return a * t ** 3 - 5 * a * t ** 2 + 8 * a * t - 4 * a if t < 2 else 0.0

    out = np.empty(x.shape[:-1] + (n_out,))
    for i in range(n_out):
        center = (i + 0.5) * scale
        lo = max(int(center - half * stretch + 0.5), 0)
        hi = min(int(center + half * stretch + 0.5), n_in)
        w = np.array([filt((j + 0.5 - center) / stretch) for j in range(lo, hi)])
        out[..., i] = x[..., lo:hi] @ (w / w.sum())
    return out


@pytest.mark.parametrize("kind", ["bilinear", "bicubic", "lanczos"])
@pytest.mark.parametrize("size", [(3, 4), (9, 2), (13, 17)])
def test_antialias_values_against_loops(kind, size):
    x = RNG.standard_normal((2, 3, 7, 8))
    out = F.interpolate(et.from_numpy(x), size=size, mode=kind, antialias=True).numpy()
    ref = _aa_reference(_aa_reference(x, size[1], kind).swapaxes(2, 3), size[0],
                        kind).swapaxes(2, 3)
    assert np.allclose(out, ref, atol=1e-12)
    # the weights of every window sum to one: a constant image stays constant
    const = F.interpolate(et.full((1, 1, 7, 8), 2.5, dtype=et.float64), size=size, mode=kind,
                          antialias=True).numpy()
    assert np.allclose(const, 2.5, atol=1e-12)


def test_modules():
    x = et.ones(1, 2, 3, 3)
    assert nn.Upsample(scale_factor=2)(x).shape == (1, 2, 6, 6)
    assert nn.Upsample(size=(4, 5), mode="bilinear")(x).shape == (1, 2, 4, 5)
    assert nn.UpsamplingNearest2d(scale_factor=3)(x).shape == (1, 2, 9, 9)
    u = nn.UpsamplingBilinear2d(size=5)
    assert u.align_corners is True and u(x).shape == (1, 2, 5, 5)
    assert repr(nn.Upsample(scale_factor=2, mode="bilinear")) == \
        "Upsample(scale_factor=2.0, mode='bilinear')"
    from ember.nn.modules.upsampling import Upsample
    assert Upsample is nn.Upsample


def test_pixel_shuffle_functional():
    x = et.arange(16.0).view(1, 4, 2, 2)
    assert F.pixel_shuffle(x, 2).tolist() == nn.PixelShuffle(2)(x).tolist()
    assert F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).tolist() == x.tolist()


# ----------------------------------------------------------------------------- gradients
CASES = [
    ((1, 2, 4), dict(size=7, mode="nearest")),
    ((1, 2, 5, 4), dict(scale_factor=1.5, mode="nearest")),
    ((1, 1, 3, 2, 4), dict(scale_factor=(1.5, 2, 0.75), mode="nearest")),
    ((1, 2, 5, 3), dict(size=(3, 7), mode="nearest-exact")),
    ((2, 2, 5), dict(size=8, mode="linear")),
    ((1, 2, 4, 3), dict(scale_factor=1.7, mode="bilinear", align_corners=False)),
    ((1, 2, 4, 3), dict(size=(6, 2), mode="bilinear", align_corners=True)),
    ((1, 1, 4, 5), dict(size=(6, 3), mode="bicubic", align_corners=False)),
    ((1, 1, 3, 4), dict(scale_factor=1.6, mode="bicubic", align_corners=True)),
    ((1, 1, 3, 2, 3), dict(size=(4, 3, 5), mode="trilinear")),
    ((1, 2, 5, 7), dict(size=(3, 4), mode="area")),
    ((1, 2, 7, 5), dict(size=(3, 8), mode="bilinear", antialias=True)),
    ((1, 1, 8, 5), dict(scale_factor=(0.4, 1.1), mode="bicubic", antialias=True)),
    ((1, 1, 9, 6), dict(size=(4, 2), mode="lanczos", antialias=True)),
]


@pytest.mark.parametrize("shape,kw", CASES, ids=[f"{k['mode']}-{i}" for i, (_, k) in
                                                  enumerate(CASES)])
def test_interpolate_gradcheck(shape, kw):
    x = _t(*shape)
    f = lambda a: F.interpolate(a, **kw)  # noqa: E731
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_gradcheck(mode, padding_mode, align_corners):
    x = _t(2, 2, 3, 4)
    grid = et.from_numpy(RNG.uniform(-1.3, 1.3, (2, 3, 2, 2))).requires_grad_(mode == "bilinear")
    f = lambda a, g: F.grid_sample(a, g, mode=mode, padding_mode=padding_mode,  # noqa: E731
                                   align_corners=align_corners)
    assert gradcheck(f, (x, grid))
    assert gradgradcheck(f, (x, grid))


def test_grid_sample_3d_gradcheck():
    x = _t(1, 2, 3, 2, 3)
    grid = et.from_numpy(RNG.uniform(-1.2, 1.2, (1, 2, 2, 1, 3))).requires_grad_()
    f = lambda a, g: F.grid_sample(a, g, padding_mode="border",
                                          align_corners=False)  # noqa: E731
    assert gradcheck(f, (x, grid))
    assert gradgradcheck(f, (x, grid))


def test_grid_sample_identity_and_values():
    x = _t(2, 3, 4, 5, requires_grad=False)
    theta = et.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, dtype=et.float64)
    for ac in (False, True):
        grid = F.affine_grid(theta, (2, 3, 4, 5), align_corners=ac)
        out = F.grid_sample(x, grid, align_corners=ac)
        assert np.allclose(out.numpy(), x.numpy(), atol=1e-12)
    # a grid point half-way between two pixels reads their mean
    g = et.tensor([[[[-1.0 + 1.0 / 4, -1.0]]]], dtype=et.float64)  # x between cols 0, 1
    v = F.grid_sample(x[:1], g, align_corners=True).numpy()[0, :, 0, 0]
    assert np.allclose(v, x.numpy()[0, :, 0, :2].mean(1) * 0 + (x.numpy()[0, :, 0, 0] * 0.5 +
                                                                 x.numpy()[0, :, 0, 1] * 0.5))
    with pytest.raises(RuntimeError):
        F.grid_sample(x, et.zeros(2, 3, 3, 3, dtype=et.float64), align_corners=False)
    with pytest.raises(ValueError):
        F.grid_sample(x, grid, mode="cubic", align_corners=False)


def test_affine_grid_gradcheck():
    theta = _t(2, 2, 3)
    assert gradcheck(lambda t: F.affine_grid(t, (2, 1, 3, 4), align_corners=False), (theta,))
    theta3 = _t(1, 3, 4)
    assert gradcheck(lambda t: F.affine_grid(t, (1, 1, 2, 3, 2), align_corners=True), (theta3,))
    with pytest.raises(ValueError):
        F.affine_grid(theta, (2, 1, 2, 3, 4), align_corners=False)
