"""Resampling (issue 16, item 5): ``F.interpolate`` and the ``Upsample`` modules,
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
    with pytest.raises(NotImplementedError, match="antialias"):
        F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)


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
