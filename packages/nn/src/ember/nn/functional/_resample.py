"""Resampling: ``interpolate`` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
lanczos, area), ``grid_sample`` and ``affine_grid``, ``pixel_shuffle`` / ``pixel_unshuffle``.

Every function here is a composite of registry ops, so gradients and second derivatives come
from the derivative table with no code of their own:

* ``interpolate`` is separable: along each spatial dim the output is a sum over taps of
  ``index_select(input, dim, index_k) * weight_k``, with the source indices and weights computed
  once (NumPy, in the input's precision, by PyTorch's coordinate rules: ``align_corners``, a
  given ``scale_factor`` used for the coordinates unless ``recompute_scale_factor``, source
  indices clamped at the borders). Nearest modes have one tap of weight 1, linear modes two,
  bicubic four (cubic convolution with A = -0.75). ``area`` is adaptive average pooling.
  With ``antialias=True`` (bilinear, bicubic, and ``lanczos``, which needs it) the taps are
  PyTorch's anti-aliasing filter: a window of ``support = taps / 2`` input pixels (2, 4 and 6
  taps), widened by the scale when downsampling, centred on each output pixel's source centre,
  clipped to the input and weighted by the triangle (bilinear), the cubic with A = -0.5
  (bicubic) or ``sinc(x) sinc(x / 3)`` (Lanczos-3), stretched by the scale, with the
  weights normalized to sum to one; a tap past an output's window contributes nothing.
* ``grid_sample`` unnormalizes the grid (differentiable in the grid), applies the padding mode
  (``border`` clamps, ``reflection`` reflects with ``abs`` / ``fmod`` and clamps), and gathers
  the 2^d corner values from the flattened input, weighted by products of ``1 - |x - corner|``;
  corners outside the input read zero. ``affine_grid`` is a batched product of the base grid
  and ``theta``.

    >>> import ember.tensor as et
    >>> interpolate(et.arange(4.).view(1, 1, 4), scale_factor=2, mode="nearest").tolist()
    [[[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]]]
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample",
           "affine_grid", "pixel_shuffle", "pixel_unshuffle"]

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "lanczos",
          "area")
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75
_ALIGN_DEFAULT = ("Default grid_sample and affine_grid behavior has changed to align_corners=False "
                  "since 1.3.0. Please specify align_corners=True if the old behavior is "
                  "desired. See the documentation of grid_sample for details.")


# ----------------------------------------------------------------------------- sizes
def _spatial(op: str, input: Tensor) -> int:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    nd = input.dim() - 2
    if nd not in (1, 2, 3):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {op})")
    return nd


def _output_size(input: Tensor, nd: int, size, scale_factor, recompute_scale_factor):
    """(output sizes, the scale factors the coordinate rules use or None per dim)."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_sp = tuple(input.shape[2:])
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(f"Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(in_sp)} and output size of {list(size)}. Please "
                                 f"provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 f"output size in (o1, o2, ...,oK) format.")
            out = tuple(int(s) for s in size)
        else:
            out = (int(size),) * nd
        return out, (None,) * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != nd:
            raise ValueError(f"Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(in_sp)} and scale_factor of shape {list(scale_factor)}. "
                             f"Please provide input tensor in (N, C, d1, d2, ...,dK) format "
                             f"and scale_factor in (s1, s2, ...,sK) format.")
        scales = tuple(float(s) for s in scale_factor)
    else:
        scales = (float(scale_factor),) * nd
    out = tuple(int(math.floor(float(n) * s)) for n, s in zip(in_sp, scales))
    if recompute_scale_factor:
        return out, (None,) * nd
    return out, scales


# ----------------------------------------------------------------------------- taps per dim
def _scale(n_in: int, n_out: int, align_corners: bool, scale, dt):
    """The source step per output step (PyTorch's area_pixel_compute_scale)."""
    if align_corners:
        return dt.type((n_in - 1) / (n_out - 1)) if n_out > 1 else dt.type(0)
    if scale is not None and scale > 0:
        return dt.type(1.0 / scale)
    return dt.type(n_in) / dt.type(n_out)


def _source(n_in, n_out, align_corners, scale, dt, cubic=False):
    s = _scale(n_in, n_out, align_corners, scale, dt)
    dst = np.arange(n_out, dtype=dt)
    if align_corners:
        return s * dst
    src = s * (dst + dt.type(0.5)) - dt.type(0.5)
    return src if cubic else np.maximum(src, dt.type(0))


def _nearest_taps(n_in, n_out, scale, exact: bool, shortcut: bool):
    if shortcut and n_out == n_in:  # PyTorch's 2-D nearest kernel copies or halves exactly
        return [(np.arange(n_out), None)]
    if shortcut and n_out == 2 * n_in:
        return [(np.arange(n_out) >> 1, None)]
    f32 = np.dtype(np.float32)
    s = f32.type(1.0 / scale) if scale is not None and scale > 0 else \
        f32.type(n_in) / f32.type(n_out)
    dst = np.arange(n_out, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    idx = np.minimum(np.floor(dst * s).astype(np.int64), n_in - 1)
    return [(idx, None)]


def _linear_taps(n_in, n_out, align_corners, scale, dt):
    src = _source(n_in, n_out, align_corners, scale, dt)
    i0 = src.astype(np.int64)  # src >= 0: truncation is floor
    i0 = np.minimum(i0, n_in - 1)
    lam1 = np.clip(src - i0.astype(dt), 0, 1).astype(dt)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    return [(i0, (dt.type(1) - lam1).astype(dt)), (i1, lam1)]


def _cubic_coeffs(t, dt):
    a = dt.type(_CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = dt.type(1)
    return [far(t + one), near(t), near(one - t), far(dt.type(2) - t)]


def _cubic_taps(n_in, n_out, align_corners, scale, dt):
    src = _source(n_in, n_out, align_corners, scale, dt, cubic=True)
    fl = np.floor(src)
    t = (src - fl).astype(dt)
    base = fl.astype(np.int64)
    ws = _cubic_coeffs(t, dt)
    return [(np.clip(base + k - 1, 0, n_in - 1), ws[k].astype(dt)) for k in range(4)]


def _aa_taps(n_in, n_out, align_corners, scale, dt, kind: str):
    """The anti-aliasing taps (PyTorch's ``_upsample_bilinear2d_aa`` /
    ``_upsample_bicubic2d_aa``, ``_upsample_lanczos2d_aa``): tap ``j`` of output ``i`` reads
    input ``xmin_i + j`` while
    ``j < xsize_i``; its third element marks where it does (None: everywhere)."""
    s = _scale(n_in, n_out, align_corners, scale, dt)
    width = 6 if kind == "lanczos" else 4 if kind == "bicubic" else 2
    half = dt.type(width * 0.5)
    support = half * s if s >= 1 else half
    invscale = dt.type(1) / s if s >= 1 else dt.type(1)
    n_taps = int(math.ceil(support)) * 2 + 1
    center = s * (np.arange(n_out, dtype=dt) + dt.type(0.5))
    # C's truncation toward zero of values > -1: int64 casts of the non-negative ones, 0 else
    xmin = np.maximum((center - support + dt.type(0.5)).astype(np.int64), 0)
    xsize = np.clip(np.minimum((center + support + dt.type(0.5)).astype(np.int64), n_in) - xmin,
                    0, n_taps)
    j = np.arange(n_taps)
    x = ((j[None, :] + xmin[:, None]).astype(dt) - center[:, None] + dt.type(0.5)) * invscale
    x = np.abs(x)
    if kind == "lanczos":  # sinc(x) sinc(x / 3) on |x| < 3
        w = np.where(x < 3, np.sinc(x) * np.sinc(x / dt.type(3)), dt.type(0)).astype(dt)
    elif kind == "bicubic":
        a = dt.type(-0.5)
        w = np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                     np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, dt.type(0)))
    else:
        w = np.where(x < 1, dt.type(1) - x, dt.type(0))
    valid = j[None, :] < xsize[:, None]
    w = np.where(valid, w, dt.type(0)).astype(dt)
    total = w.sum(axis=1, keepdims=True, dtype=dt)
    w = np.where(total != 0, w / np.where(total != 0, total, dt.type(1)), w).astype(dt)
    idx = np.minimum(xmin[:, None] + j[None, :], n_in - 1)
    return [(idx[:, k], w[:, k], None if valid[:, k].all() else valid[:, k])
            for k in range(n_taps) if valid[:, k].any()]


def _apply_taps(x: Tensor, dim: int, taps, nd_total: int) -> Tensor:
    out = None
    shape = [1] * nd_total
    for idx, w, *mask in taps:
        sel = et.index_select(x, dim, et.from_numpy(np.ascontiguousarray(idx)).to(x.device))
        if w is not None:
            shape[dim] = len(w)
            if mask and mask[0] is not None:  # outputs whose window ends before this tap
                keep = et.from_numpy(np.ascontiguousarray(mask[0])).to(x.device).view(*shape)
                sel = et.where(keep, sel, 0.0)  # (before the product: no 0 * inf)
            sel = sel * et.from_numpy(np.ascontiguousarray(w)).to(x.device).view(*shape)
        out = sel if out is None else out + sel
    return out


# ----------------------------------------------------------------------------- interpolate
def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, *spatial) input to ``size`` or by ``scale_factor``
    (PyTorch's ``F.interpolate``)."""
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
            f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    nd = _spatial(mode, input)
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating "
                             "modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    out_sp, scales = _output_size(input, nd, size, scale_factor, recompute_scale_factor)
    if antialias and (mode not in ("bilinear", "bicubic", "lanczos") or nd != 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode == "lanczos":
        if nd != 2:
            raise NotImplementedError(
                f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                f"for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | "
                f"area | nearest-exact (got {mode})")
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    need = _LINEAR_DIMS.get(mode)
    if need is not None and need != nd:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{need + 2}D input")
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(str(s) for s in input.shape[2:])}) and output "
                           f"({', '.join(str(s) for s in out_sp)})")
    if any(n <= 0 for n in input.shape[2:]):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(str(s) for s in input.shape[2:])}) and output "
                           f"({', '.join(str(s) for s in out_sp)})")
    if mode == "area":
        from ._pool import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[nd - 1]
        return pool(input, out_sp)
    if mode not in ("nearest", "nearest-exact") and not input.is_floating_point():
        raise RuntimeError(f"\"upsample_{mode}{nd}d_out_frame\" not implemented for "
                           f"'{str(input.dtype).split('.')[-1].capitalize()}'")
    dt = np.dtype(np.float64) if input.dtype == et.float64 else np.dtype(np.float32)
    x = input
    total = input.dim()
    for d in range(nd):
        n_in, n_out = int(input.shape[2 + d]), out_sp[d]
        if mode in ("nearest", "nearest-exact"):
            taps = _nearest_taps(n_in, n_out, scales[d], mode == "nearest-exact",
                                     mode == "nearest" and nd == 2)
        elif mode == "bicubic" and not antialias:
            taps = _cubic_taps(n_in, n_out, align_corners, scales[d], dt)
        elif n_in == n_out:
            continue  # linear and anti-aliased modes copy a dim whose size does not change,
            # as PyTorch does
        elif antialias:
            taps = _aa_taps(n_in, n_out, align_corners, scales[d], dt, mode)
        else:
            taps = _linear_taps(n_in, n_out, align_corners, scales[d], dt)
        x = _apply_taps(x, 2 + d, taps, total)
    if x is input:
        x = input.clone()
    return x


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Tensor:
    """Deprecated alias of :func:`interpolate` (PyTorch's ``F.upsample``)."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="nearest")``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: ``interpolate(..., mode="bilinear", align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------------- grid_sample
def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    c = et.abs(coord - low)
    extra = et.fmod(c, span)
    flips = et.floor(c.detach() / span)
    even = et.remainder(flips, 2) == 0
    return et.where(even, extra + low, span - extra + low)


def _source_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    c = _unnormalize(coord, size, align_corners)
    if padding_mode == "border":
        c = et.clamp(c, 0, size - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (size - 1)) if align_corners else _reflect(c, -1, 2 * size - 1)
        c = et.clamp(c, 0, size - 1)
    return c


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample (N, C, H, W) input (or (N, C, D, H, W)) at the normalized coordinates of
    ``grid`` (N, H_out, W_out, 2) (or (N, D_out, H_out, W_out, 3)), the last dim being
    (x, y[, z]) in [-1, 1] (PyTorch's ``F.grid_sample``; modes bilinear and nearest)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample(): mode='bicubic' is not supported by ember")
    if align_corners is None:
        warnings.warn(_ALIGN_DEFAULT, stacklevel=2)
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, Tensor):
            raise TypeError(f"grid_sample(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    align_corners = bool(align_corners)
    nd = input.dim() - 2
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != nd:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {nd} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but "
                           f"input has {input.dtype} and grid has {grid.dtype}")
    if not input.is_floating_point():
        raise RuntimeError("grid_sampler(): expected input to have a floating point dtype")
    N, C = input.shape[:2]
    in_sp = tuple(int(s) for s in input.shape[2:])
    out_sp = tuple(int(s) for s in grid.shape[1:-1])
    L = math.prod(out_sp)
    # coordinate k of the grid's last dim addresses spatial dim nd-1-k (x -> W, y -> H, z -> D)
    coords = [_source_coord(grid[..., nd - 1 - d].reshape(N, L), in_sp[d], padding_mode,
                            align_corners) for d in range(nd)]
    flat = input.reshape(N, C, math.prod(in_sp))
    strides = [math.prod(in_sp[d + 1:]) for d in range(nd)]

    def gather_at(idx_list):
        """Values at integer positions (N, L) per dim (zero where out of bounds)."""
        ok = None
        lin = None
        for d, ix in enumerate(idx_list):
            inb = (ix >= 0) & (ix <= in_sp[d] - 1)
            ok = inb if ok is None else ok & inb
            term = et.clamp(ix, 0, in_sp[d] - 1) * strides[d]
            lin = term if lin is None else lin + term
        vals = et.gather(flat, 2, lin.unsqueeze(1).expand(N, C, L))
        return vals * ok.unsqueeze(1).to(vals.dtype)

    if mode == "nearest":
        idx = [et.round(c.detach()).to(et.int64) for c in coords]
        out = gather_at(idx)
    else:
        lo = [et.floor(c.detach()) for c in coords]
        frac = [c - f for c, f in zip(coords, lo)]
        lo_i = [f.to(et.int64) for f in lo]
        out = None
        for corner in itertools.product((0, 1), repeat=nd):
            w = None
            for d, b in enumerate(corner):
                wd = frac[d] if b else 1 - frac[d]
                w = wd if w is None else w * wd
            v = gather_at([lo_i[d] + b for d, b in enumerate(corner)]) * w.unsqueeze(1)
            out = v if out is None else out + v
    return out.reshape(N, C, *out_sp)


# ----------------------------------------------------------------------------- affine_grid
def _base_coords(n: int, align_corners: bool, dtype, device) -> Tensor:
    if n <= 1:
        return et.zeros(max(n, 1), dtype=dtype, device=device)[:n]
    r = et.linspace(-1.0, 1.0, n, dtype=dtype, device=device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta``
    (N, 2, 3) (or (N, 3, 4)) for an output of ``size`` (N, C, H, W) (or (N, C, D, H, W))
    (PyTorch's ``F.affine_grid``)."""
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid(): argument 'theta' must be Tensor, not "
                        f"{type(theta).__name__}")
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    if align_corners is None:
        warnings.warn(_ALIGN_DEFAULT, stacklevel=2)
    size = [int(s) for s in size]
    align_corners = bool(align_corners)
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {list(theta.shape)}.")
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {list(theta.shape)}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if align_corners and min(size[2:]) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid(): expected theta's batch size {theta.shape[0]} to "
                           f"match size[0] = {size[0]}")
    N, sp = size[0], size[2:]
    nd = len(sp)
    dt, dev = theta.dtype, theta.device
    # base[..., k] for k < nd is the coordinate along spatial dim nd-1-k; the last is 1
    axes = [_base_coords(n, align_corners, dt, dev) for n in sp]
    cols = []
    for k in range(nd):
        d = nd - 1 - k
        shape = [1] * nd
        shape[d] = sp[d]
        cols.append(axes[d].view(*shape).expand(*sp))
    cols.append(et.ones(*sp, dtype=dt, device=dev))
    base = et.stack(cols, -1).reshape(1, math.prod(sp), nd + 1)
    grid = et.matmul(base, theta.transpose(1, 2))  # (N, prod(sp), nd)
    return grid.reshape(N, *sp, nd)


# ----------------------------------------------------------------------------- pixel shuffle
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r) (PyTorch's ``F.pixel_shuffle``)."""
    from ..modules.pixelshuffle import _pixel_shuffle

    return _pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W) (PyTorch's ``F.pixel_unshuffle``)."""
    from ..modules.pixelshuffle import _pixel_unshuffle

    return _pixel_unshuffle(input, downscale_factor)


