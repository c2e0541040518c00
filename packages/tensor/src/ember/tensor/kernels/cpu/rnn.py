"""Fused pointwise math of LSTM and GRU cells (the matrix products stay on BLAS).

Gate layout follows PyTorch: LSTM (i, f, g, o), GRU (r, z, n), each block H columns wide.
One pass over the batch replaces a dozen temporary NumPy arrays per time step. sigmoid and tanh
are built on the vectorizable ``vexp`` of ``_vmath.py`` (libm's scalar exp/tanh would stop the
loops from vectorizing) and computed in the input dtype.
"""

from __future__ import annotations

import numpy as np
from numba import prange, types
from numba.extending import overload

from ._common import check_ndim, float_inputs, parallel_call, use_parallel
from ._vmath import _FM, like, vexp, vjit, vsigmoid

__all__ = ["lstm_cell_forward", "lstm_cell_backward", "gru_cell_forward", "gru_cell_backward"]

_f = np.float32
# Cephes tanhf / tanh: odd polynomial (float64: rational) below 0.625, 1 - 2/(exp(2|v|)+1) above.
_TP_F = tuple(_f(c) for c in (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2,
                                1.33314422036e-1, -3.33332819422e-1))
_TP_D = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
_TQ_D = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)
_ONE_F = _f(1.0)


def _tanh_poly(v):
    """tanh(v) for |v| < 0.625 (odd polynomial / rational in v*v)."""
    raise NotImplementedError("_tanh_poly is only callable from Numba kernels")


@overload(_tanh_poly, jit_options={"fastmath": set(_FM), "error_model": "numpy"})
def _ov_tanh_poly(v):
    if v == types.float32:
        c0, c1, c2, c3, c4 = _TP_F
        return lambda v: ((((c0 * (v * v) + c1) * (v * v) + c2) * (v * v) + c3) * (v * v)
                          + c4) * (v * v) * v + v
    if v == types.float64:
        p0, p1, p2 = _TP_D
        q0, q1, q2 = _TQ_D
        return lambda v: v * (v * v) * (((p0 * (v * v) + p1) * (v * v) + p2)
                                        / ((((v * v) + q0) * (v * v) + q1) * (v * v) + q2)) + v
    return None


@vjit
def _tanh_seg(x, i, x0, y, j, y0, n):
    # y[j, y0:y0+n] = tanh(x[i, x0:x0+n]); both branches evaluated, one selected, so the loop
    # vectorizes. Above 0.625: 1 - 2 / (exp(2|v|) + 1) with the sign of v; NaN stays NaN.
    one, two, cut = like(1.0, x), like(2.0, x), like(0.625, x)
    for k in range(n):
        v = x[i, x0 + k]
        a = abs(v)
        big = one - two / (vexp(a + a) + one)
        big = big if v >= 0 else -big
        y[j, y0 + k] = _tanh_poly(v) if a < cut else big


@vjit
def _lstm_fwd_row(gates, c_prev, h, c, act, tanh_c, b):
    H = c_prev.shape[1]
    for k in range(2 * H):
        act[b, k] = vsigmoid(gates[b, k])
    _tanh_seg(gates, b, 2 * H, act, b, 2 * H, H)
    for k in range(3 * H, 4 * H):
        act[b, k] = vsigmoid(gates[b, k])
    for k in range(H):
        c[b, k] = act[b, H + k] * c_prev[b, k] + act[b, k] * act[b, 2 * H + k]
    _tanh_seg(c, b, 0, tanh_c, b, 0, H)
    for k in range(H):
        h[b, k] = act[b, 3 * H + k] * tanh_c[b, k]


@vjit
def _lstm_fwd_serial(gates, c_prev, h, c, act, tanh_c):
    for b in range(c_prev.shape[0]):
        _lstm_fwd_row(gates, c_prev, h, c, act, tanh_c, b)


@vjit(parallel=True)
def _lstm_fwd_parallel(gates, c_prev, h, c, act, tanh_c):
    for b in prange(c_prev.shape[0]):
        _lstm_fwd_row(gates, c_prev, h, c, act, tanh_c, b)


@vjit
def _lstm_bwd_row(gh, gc, act, c_prev, tanh_c, dgates, dc_prev, b):
    H = c_prev.shape[1]
    one = like(1.0, act)
    for k in range(H):
        i = act[b, k]
        f = act[b, H + k]
        g = act[b, 2 * H + k]
        o = act[b, 3 * H + k]
        tc = tanh_c[b, k]
        dh = gh[b, k]
        dc = gc[b, k] + dh * o * (one - tc * tc)
        dgates[b, k] = dc * g * i * (one - i)
        dgates[b, H + k] = dc * c_prev[b, k] * f * (one - f)
        dgates[b, 2 * H + k] = dc * i * (one - g * g)
        dgates[b, 3 * H + k] = dh * tc * o * (one - o)
        dc_prev[b, k] = dc * f


@vjit
def _lstm_bwd_serial(gh, gc, act, c_prev, tanh_c, dgates, dc_prev):
    for b in range(c_prev.shape[0]):
        _lstm_bwd_row(gh, gc, act, c_prev, tanh_c, dgates, dc_prev, b)


@vjit(parallel=True)
def _lstm_bwd_parallel(gh, gc, act, c_prev, tanh_c, dgates, dc_prev):
    for b in prange(c_prev.shape[0]):
        _lstm_bwd_row(gh, gc, act, c_prev, tanh_c, dgates, dc_prev, b)


@vjit
def _gru_fwd_row(gi, gh, h_prev, h, r, z, n, b):
    H = h_prev.shape[1]
    one = like(1.0, h_prev)
    for k in range(H):
        r[b, k] = vsigmoid(gi[b, k] + gh[b, k])
    for k in range(H):
        z[b, k] = vsigmoid(gi[b, H + k] + gh[b, H + k])
    for k in range(H):  # h holds the pre-activation of n for a moment (no in-place tanh:
        h[b, k] = gi[b, 2 * H + k] + r[b, k] * gh[b, 2 * H + k]  # it would not vectorize)
    _tanh_seg(h, b, 0, n, b, 0, H)
    for k in range(H):
        zv = z[b, k]
        h[b, k] = (one - zv) * n[b, k] + zv * h_prev[b, k]


@vjit
def _gru_fwd_serial(gi, gh, h_prev, h, r, z, n):
    for b in range(h_prev.shape[0]):
        _gru_fwd_row(gi, gh, h_prev, h, r, z, n, b)


@vjit(parallel=True)
def _gru_fwd_parallel(gi, gh, h_prev, h, r, z, n):
    for b in prange(h_prev.shape[0]):
        _gru_fwd_row(gi, gh, h_prev, h, r, z, n, b)


@vjit
def _gru_bwd_row(dh, r, z, n, gh_n, h_prev, dgi, dgh, dh_prev, b):
    H = h_prev.shape[1]
    one = like(1.0, h_prev)
    for k in range(H):
        g = dh[b, k]
        rv, zv, nv = r[b, k], z[b, k], n[b, k]
        dn = g * (one - zv) * (one - nv * nv)
        dz = g * (h_prev[b, k] - nv) * zv * (one - zv)
        dr = dn * gh_n[b, k] * rv * (one - rv)
        dgi[b, k] = dr
        dgi[b, H + k] = dz
        dgi[b, 2 * H + k] = dn
        dgh[b, k] = dr
        dgh[b, H + k] = dz
        dgh[b, 2 * H + k] = dn * rv
        dh_prev[b, k] = g * zv


@vjit
def _gru_bwd_serial(dh, r, z, n, gh_n, h_prev, dgi, dgh, dh_prev):
    for b in range(h_prev.shape[0]):
        _gru_bwd_row(dh, r, z, n, gh_n, h_prev, dgi, dgh, dh_prev, b)


@vjit(parallel=True)
def _gru_bwd_parallel(dh, r, z, n, gh_n, h_prev, dgi, dgh, dh_prev):
    for b in prange(h_prev.shape[0]):
        _gru_bwd_row(dh, r, z, n, gh_n, h_prev, dgi, dgh, dh_prev, b)


def _run(serial, parallel, rows: int, work: int, *args) -> None:
    if rows == 0 or work == 0:
        return
    # About 1-2 ns per gate element once vectorized: parallel from ~128K elements of work.
    if use_parallel(work // 4) and rows > 1:
        parallel_call(parallel, *args)
    else:
        serial(*args)


def _check_shape(op: str, name: str, arr: np.ndarray, shape: tuple, ref: str) -> None:
    if arr.shape != shape:
        raise RuntimeError(
            f"{op}(): {name} of shape {tuple(arr.shape)} does not match {ref}; "
            f"expected shape {shape}"
        )


def lstm_cell_forward(
    gates: np.ndarray, c_prev: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """LSTM pointwise step from pre-activation ``gates`` (N, 4H) and ``c_prev`` (N, H).

    Returns ``(h, c, act, tanh_c)`` with ``act`` = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o).

    >>> h, c, act, tc = lstm_cell_forward(np.zeros((1, 4)), np.ones((1, 1)))
    >>> c.tolist()
    [[0.5]]
    """
    op = "lstm_cell_forward"
    gates, c_prev = np.asarray(gates), np.asarray(c_prev)
    check_ndim(op, "gates", gates, 2, "(N, 4H)")
    check_ndim(op, "c_prev", c_prev, 2, "(N, H)")
    N, H = c_prev.shape
    _check_shape(op, "gates", gates, (N, 4 * H), f"c_prev of shape {tuple(c_prev.shape)}")
    (g, cp), dtype = float_inputs(op, gates, c_prev)
    h, c, tanh_c = (np.empty_like(cp) for _ in range(3))
    act = np.empty_like(g)
    _run(_lstm_fwd_serial, _lstm_fwd_parallel, N, g.size, g, cp, h, c, act, tanh_c)
    return tuple(a.astype(dtype, copy=False) for a in (h, c, act, tanh_c))  # type: ignore


def lstm_cell_backward(
    grad_h: np.ndarray | None,
    grad_c: np.ndarray | None,
    act: np.ndarray,
    c_prev: np.ndarray,
    tanh_c: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Backward of :func:`lstm_cell_forward`: returns ``(grad_gates, grad_c_prev)``.

    ``grad_h`` / ``grad_c`` (N, H) may be None (zero).

    >>> h, c, act, tc = lstm_cell_forward(np.zeros((1, 4)), np.ones((1, 1)))
    >>> lstm_cell_backward(None, np.ones((1, 1)), act, np.ones((1, 1)), tc)[1].tolist()
    [[0.5]]
    """
    op = "lstm_cell_backward"
    act, c_prev, tanh_c = np.asarray(act), np.asarray(c_prev), np.asarray(tanh_c)
    check_ndim(op, "c_prev", c_prev, 2, "(N, H)")
    N, H = c_prev.shape
    ref = f"c_prev of shape {tuple(c_prev.shape)}"
    _check_shape(op, "act", act, (N, 4 * H), ref)
    _check_shape(op, "tanh_c", tanh_c, (N, H), ref)
    zeros = np.zeros((N, H), dtype=c_prev.dtype)
    grad_h = zeros if grad_h is None else np.asarray(grad_h)
    grad_c = zeros if grad_c is None else np.asarray(grad_c)
    _check_shape(op, "grad_h", grad_h, (N, H), ref)
    _check_shape(op, "grad_c", grad_c, (N, H), ref)
    (gh, gc, a, cp, tc), dtype = float_inputs(op, grad_h, grad_c, act, c_prev, tanh_c)
    dgates = np.empty_like(a)
    dc_prev = np.empty_like(cp)
    _run(_lstm_bwd_serial, _lstm_bwd_parallel, N, a.size, gh, gc, a, cp, tc, dgates, dc_prev)
    return dgates.astype(dtype, copy=False), dc_prev.astype(dtype, copy=False)


def gru_cell_forward(
    gi: np.ndarray, gh: np.ndarray, h_prev: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """GRU pointwise step from ``gi`` = x W_ih^T + b_ih and ``gh`` = h W_hh^T + b_hh (N, 3H).

    Returns ``(h, r, z, n)``, each (N, H): ``h = (1 - z) * n + z * h_prev``.

    >>> h, r, z, n = gru_cell_forward(np.zeros((1, 3)), np.zeros((1, 3)), np.ones((1, 1)))
    >>> h.tolist()
    [[0.5]]
    """
    op = "gru_cell_forward"
    gi, gh, h_prev = np.asarray(gi), np.asarray(gh), np.asarray(h_prev)
    check_ndim(op, "h_prev", h_prev, 2, "(N, H)")
    N, H = h_prev.shape
    ref = f"h_prev of shape {tuple(h_prev.shape)}"
    _check_shape(op, "gi", gi, (N, 3 * H), ref)
    _check_shape(op, "gh", gh, (N, 3 * H), ref)
    (a, b, hp), dtype = float_inputs(op, gi, gh, h_prev)
    h, r, z, n = (np.empty_like(hp) for _ in range(4))
    _run(_gru_fwd_serial, _gru_fwd_parallel, N, a.size, a, b, hp, h, r, z, n)
    return tuple(t.astype(dtype, copy=False) for t in (h, r, z, n))  # type: ignore


def gru_cell_backward(
    grad_h: np.ndarray,
    r: np.ndarray,
    z: np.ndarray,
    n: np.ndarray,
    gh_n: np.ndarray,
    h_prev: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward of :func:`gru_cell_forward`: returns ``(grad_gi, grad_gh, grad_h_prev)``.

    ``gh_n`` is the n block of ``gh`` (N, H); all other inputs are (N, H).

    >>> h, r, z, n = gru_cell_forward(np.zeros((1, 3)), np.zeros((1, 3)), np.ones((1, 1)))
    >>> gru_cell_backward(np.ones((1, 1)), r, z, n, np.zeros((1, 1)), np.ones((1, 1)))[2]
    array([[0.5]])
    """
    op = "gru_cell_backward"
    arrays = [np.asarray(a) for a in (grad_h, r, z, n, gh_n, h_prev)]
    h_prev = arrays[-1]
    check_ndim(op, "h_prev", h_prev, 2, "(N, H)")
    N, H = h_prev.shape
    ref = f"h_prev of shape {tuple(h_prev.shape)}"
    for name, arr in zip(("grad_h", "r", "z", "n", "gh_n"), arrays[:-1]):
        _check_shape(op, name, arr, (N, H), ref)
    (dh, rc, zc, nc, ghn, hp), dtype = float_inputs(op, *arrays)
    dgi = np.empty((N, 3 * H), dtype=hp.dtype)
    dgh = np.empty_like(dgi)
    dh_prev = np.empty_like(hp)
    _run(_gru_bwd_serial, _gru_bwd_parallel, N, dgi.size, dh, rc, zc, nc, ghn, hp, dgi, dgh,
         dh_prev)
    return dgi.astype(dtype, copy=False), dgh.astype(dtype, copy=False), \
        dh_prev.astype(dtype, copy=False)
