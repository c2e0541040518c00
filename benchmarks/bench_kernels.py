"""Time ember's Numba CPU kernels against plain NumPy and PyTorch CPU.

Run ``python benchmarks/bench_kernels.py``. Prints a Markdown table with the median time of
each workload and the ratios ember / numpy and ember / torch (below 1: ember is faster).
``main()`` returns rows ``(workload, ember_s, torch_s)`` for a runner; torch_s is None where
PyTorch is not installed or has no matching op. First calls (JIT compilation) are warmup and
never timed. No assertions on time.

``python benchmarks/bench_kernels.py --gemm`` prints instead the measurement behind the
orientation ember picks for ``x @ w.T`` on the CPU (see ``gemm_orientation``).
"""

from __future__ import annotations

import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path

import numpy as np

try:
    from ember.tensor.kernels import cpu
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "packages" / "tensor" / "src"))
    from ember.tensor.kernels import cpu

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
    F = None

WARMUP = 2
REPEAT = 7


def _time(fn: Callable[[], object] | None) -> float | None:
    """Median wall time of ``fn()`` over REPEAT runs after WARMUP untimed calls."""
    if fn is None:
        return None
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _t(a):
    return torch.from_numpy(a) if torch is not None else None


# --------------------------------------------------------------------------- NumPy baselines


def _np_max_pool2d(x, k, s, p):
    """Vectorized NumPy max pooling with flat indices (sliding windows over a -inf pad)."""
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=-np.inf)
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::s, ::s]
    oh, ow = win.shape[2], win.shape[3]
    flat = win.reshape(N, C, oh, ow, k * k)
    arg = flat.argmax(axis=-1)
    out = np.take_along_axis(flat, arg[..., None], -1)[..., 0]
    kh, kw = np.divmod(arg, k)
    h = np.arange(oh)[:, None] * s - p + kh
    w = np.arange(ow)[None, :] * s - p + kw
    return out, h * W + w


def _np_unpool(g, ind, plane):
    B = g.shape[0]
    gin = np.zeros((B, plane), dtype=g.dtype)
    rows = np.repeat(np.arange(B), g[0].size)
    np.add.at(gin, (rows, ind.reshape(-1)), g.reshape(-1))
    return gin


def _np_im2col(x, k, p):
    N, C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    # (N, C, oh, ow, kh, kw) -> (N, C, kh, kw, oh, ow)
    return np.ascontiguousarray(win.transpose(0, 1, 4, 5, 2, 3)).reshape(N, C * k * k, -1)


def _np_col2im(cols, C, H, W, k, p):
    N = cols.shape[0]
    oh, ow = H + 2 * p - k + 1, W + 2 * p - k + 1
    c = cols.reshape(N, C, k, k, oh, ow)
    xp = np.zeros((N, C, H + 2 * p, W + 2 * p), dtype=cols.dtype)
    for i in range(k):
        for j in range(k):
            xp[:, :, i:i + oh, j:j + ow] += c[:, :, i, j]
    return xp[:, :, p:p + H, p:p + W]


def _np_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _np_log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _np_cross_entropy(x, t):
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    return lse - x[np.arange(x.shape[0]), t], lse


def _np_cross_entropy_backward(x, t, go):
    m = x.max(axis=1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))[:, 0]
    g = np.exp(x - lse[:, None])
    g[np.arange(x.shape[0]), t] -= 1.0
    return g * go[:, None]


def _sig(v):
    return 1.0 / (1.0 + np.exp(-v))


def _np_lstm(gates, c_prev):
    i, f, g, o = np.split(gates, 4, axis=1)
    i, f, g, o = _sig(i), _sig(f), np.tanh(g), _sig(o)
    c = f * c_prev + i * g
    tc = np.tanh(c)
    return o * tc, c, np.concatenate([i, f, g, o], axis=1), tc


def _np_lstm_backward(gh, gc, act, c_prev, tc):
    i, f, g, o = np.split(act, 4, axis=1)
    dc = gc + gh * o * (1 - tc * tc)
    return np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                           dc * i * (1 - g * g), gh * tc * o * (1 - o)], axis=1), dc * f


def _np_gru(gi, gh, h_prev):
    H = h_prev.shape[1]
    r = _sig(gi[:, :H] + gh[:, :H])
    z = _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1 - z) * n + z * h_prev, r, z, n


# --------------------------------------------------------------------------- torch baselines


def _torch_lstm(gates, c_prev):
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    c = f * c_prev + i * g
    return o * c.tanh(), c


def _torch_gru(gi, gh, h_prev):
    ir, iz, inn = gi.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r = (ir + hr).sigmoid()
    z = (iz + hz).sigmoid()
    n = (inn + r * hn).tanh()
    return (1 - z) * n + z * h_prev


# --------------------------------------------------------------------------- workloads


def _workloads(rng):
    f32 = np.float32
    have = torch is not None

    # scatter-add
    out = np.zeros((1, 20000, 128), f32)
    idx = rng.integers(0, 20000, 100000)
    src = rng.standard_normal((1, 100000, 128)).astype(f32)
    t_out, t_idx, t_src = (_t(out[0].copy()), _t(idx), _t(src[0])) if have else (None,) * 3
    yield (
        "index_add (20000x128) += 100000 rows, f32",
        lambda: cpu.index_add(out, idx, src),
        lambda: np.add.at(out, (slice(None), idx, slice(None)), src),
        (lambda: t_out.index_add_(0, t_idx, t_src)) if have else None,
    )

    g = rng.standard_normal((32 * 128, 256)).astype(f32)
    tok = rng.integers(0, 30000, 32 * 128)
    t_g, t_tok = (_t(g), _t(tok)) if have else (None, None)

    def np_emb():
        gw = np.zeros((30000, 256), f32)
        np.add.at(gw, tok, g)
        return gw

    yield (
        "embedding_backward 4096 tokens -> (30000, 256), f32",
        lambda: cpu.embedding_backward(g, tok, 30000, -1, False),
        np_emb,
        (lambda: torch.ops.aten.embedding_dense_backward(t_g, t_tok, 30000, -1, False))
        if have else None,
    )

    # pooling
    x = rng.standard_normal((16, 64, 56, 56)).astype(f32)
    xb = x.reshape(16 * 64, 1, 56, 56)
    pool_args = ((1, 3, 3), (1, 2, 2), (0, 1, 1), (1, 1, 1), (1, 28, 28))
    t_x = _t(x) if have else None
    yield (
        "max_pool2d fwd 16x64x56x56 k3 s2 p1, f32",
        lambda: cpu.max_pool_forward(xb, *pool_args),
        lambda: _np_max_pool2d(x, 3, 2, 1),
        (lambda: F.max_pool2d(t_x, 3, 2, 1, return_indices=True)) if have else None,
    )
    _, ind = cpu.max_pool_forward(xb, *pool_args)
    gp = rng.standard_normal(ind.shape).astype(f32)
    t_gp = _t(gp.reshape(16, 64, 28, 28)) if have else None
    t_ind = _t(ind.reshape(16, 64, 28, 28)) if have else None
    yield (
        "max_pool2d bwd 16x64x56x56 k3 s2 p1, f32",
        lambda: cpu.max_pool_backward(gp, ind, (1, 56, 56)),
        lambda: _np_unpool(gp, ind, 56 * 56),
        (lambda: torch.ops.aten.max_pool2d_with_indices_backward(
            t_gp, t_x, [3, 3], [2, 2], [1, 1], [1, 1], False, t_ind)) if have else None,
    )

    # im2col / col2im
    xi = rng.standard_normal((16, 64, 32, 32)).astype(f32)
    fold_args = ((1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1), (1, 32, 32))
    t_xi = _t(xi) if have else None
    yield (
        "im2col 16x64x32x32 k3 p1, f32",
        lambda: cpu.im2col(xi[:, :, None], *fold_args),
        lambda: _np_im2col(xi, 3, 1),
        (lambda: F.unfold(t_xi, 3, padding=1)) if have else None,
    )
    cols = rng.standard_normal((16, 64 * 9, 32 * 32)).astype(f32)
    t_cols = _t(cols) if have else None
    yield (
        "col2im 16x64x32x32 k3 p1, f32",
        lambda: cpu.col2im(cols, 64, (1, 32, 32), *fold_args),
        lambda: _np_col2im(cols, 64, 32, 32, 3, 1),
        (lambda: F.fold(t_cols, (32, 32), 3, padding=1)) if have else None,
    )

    # softmax family and cross-entropy
    logits = (rng.standard_normal((4096, 1000)) * 3).astype(f32)
    t_logits = _t(logits) if have else None
    yield (
        "softmax 4096x1000, f32",
        lambda: cpu.softmax_forward(logits),
        lambda: _np_softmax(logits),
        (lambda: torch.softmax(t_logits, 1)) if have else None,
    )
    yield (
        "log_softmax 4096x1000, f32",
        lambda: cpu.log_softmax_forward(logits),
        lambda: _np_log_softmax(logits),
        (lambda: torch.log_softmax(t_logits, 1)) if have else None,
    )
    y = cpu.softmax_forward(logits)
    gy = rng.standard_normal(y.shape).astype(f32)
    t_y, t_gy = (_t(y), _t(gy)) if have else (None, None)
    yield (
        "softmax_backward 4096x1000, f32",
        lambda: cpu.softmax_backward(y, gy),
        lambda: y * (gy - (gy * y).sum(axis=1, keepdims=True)),
        (lambda: torch.ops.aten._softmax_backward_data(t_gy, t_y, 1, torch.float32))
        if have else None,
    )
    tgt = rng.integers(0, 1000, 4096)
    t_tgt = _t(tgt) if have else None
    yield (
        "cross_entropy fwd 4096x1000, f32",
        lambda: cpu.cross_entropy_forward(logits, tgt, None, -100, 0.0),
        lambda: _np_cross_entropy(logits, tgt),
        (lambda: F.cross_entropy(t_logits, t_tgt, reduction="none")) if have else None,
    )
    go = np.ones(4096, f32)
    yield (
        "cross_entropy bwd 4096x1000, f32",
        lambda: cpu.cross_entropy_backward(logits, tgt, None, -100, 0.0, go),
        lambda: _np_cross_entropy_backward(logits, tgt, go),
        None,
    )
    # the shapes the ops meet in small models (where the choice kernel vs NumPy is made)
    for rows, cols in ((4, 64), (32, 128), (256, 1024)):
        xs = (rng.standard_normal((rows, cols)) * 3).astype(f32)
        ts = rng.integers(0, cols, rows)
        gs_ = rng.standard_normal((rows, cols)).astype(f32)
        ys = cpu.softmax_forward(xs)
        gos = np.ones(rows, f32)
        t_xs, t_ts = (_t(xs), _t(ts)) if have else (None, None)
        yield (f"softmax {rows}x{cols}, f32", lambda xs=xs: cpu.softmax_forward(xs),
               lambda xs=xs: _np_softmax(xs),
               (lambda t_xs=t_xs: torch.softmax(t_xs, 1)) if have else None)
        yield (f"log_softmax {rows}x{cols}, f32", lambda xs=xs: cpu.log_softmax_forward(xs),
               lambda xs=xs: _np_log_softmax(xs),
               (lambda t_xs=t_xs: torch.log_softmax(t_xs, 1)) if have else None)
        yield (f"softmax_backward {rows}x{cols}, f32",
               lambda ys=ys, gs_=gs_: cpu.softmax_backward(ys, gs_),
               lambda ys=ys, gs_=gs_: ys * (gs_ - (gs_ * ys).sum(axis=1, keepdims=True)), None)
        yield (f"cross_entropy fwd {rows}x{cols}, f32",
               lambda xs=xs, ts=ts: cpu.cross_entropy_forward(xs, ts, None, -100, 0.0),
               lambda xs=xs, ts=ts: _np_cross_entropy(xs, ts),
               (lambda t_xs=t_xs, t_ts=t_ts: F.cross_entropy(t_xs, t_ts, reduction="none"))
               if have else None)
        yield (f"cross_entropy bwd {rows}x{cols}, f32",
               lambda xs=xs, ts=ts, gos=gos: cpu.cross_entropy_backward(xs, ts, None, -100,
                                                                        0.0, gos),
               lambda xs=xs, ts=ts, gos=gos: _np_cross_entropy_backward(xs, ts, gos), None)

    # RNN cells (the small shapes are the LSTM language model's and the tree-LSTM's)
    for n_, h_ in ((4, 64), (20, 200)):
        gs_, cs_ = (rng.standard_normal((n_, 4 * h_)).astype(f32),
                    rng.standard_normal((n_, h_)).astype(f32))
        gi_, gh2_ = (rng.standard_normal((n_, 3 * h_)).astype(f32) for _ in range(2))
        yield (f"lstm_cell fwd pointwise N={n_} H={h_}, f32",
               lambda gs_=gs_, cs_=cs_: cpu.lstm_cell_forward(gs_, cs_),
               lambda gs_=gs_, cs_=cs_: _np_lstm(gs_, cs_), None)
        yield (f"gru_cell fwd pointwise N={n_} H={h_}, f32",
               lambda gi_=gi_, gh2_=gh2_, cs_=cs_: cpu.gru_cell_forward(gi_, gh2_, cs_),
               lambda gi_=gi_, gh2_=gh2_, cs_=cs_: _np_gru(gi_, gh2_, cs_), None)
    N, H = 256, 512
    gates = rng.standard_normal((N, 4 * H)).astype(f32)
    c_prev = rng.standard_normal((N, H)).astype(f32)
    t_gates, t_c = (_t(gates), _t(c_prev)) if have else (None, None)
    yield (
        "lstm_cell fwd pointwise N=256 H=512, f32",
        lambda: cpu.lstm_cell_forward(gates, c_prev),
        lambda: _np_lstm(gates, c_prev),
        (lambda: _torch_lstm(t_gates, t_c)) if have else None,
    )
    _, _, act, tc = cpu.lstm_cell_forward(gates, c_prev)
    gh_ = rng.standard_normal((N, H)).astype(f32)
    yield (
        "lstm_cell bwd pointwise N=256 H=512, f32",
        lambda: cpu.lstm_cell_backward(gh_, gh_, act, c_prev, tc),
        lambda: _np_lstm_backward(gh_, gh_, act, c_prev, tc),
        None,
    )
    gi = rng.standard_normal((N, 3 * H)).astype(f32)
    gh = rng.standard_normal((N, 3 * H)).astype(f32)
    t_gi, t_gh = (_t(gi), _t(gh)) if have else (None, None)
    yield (
        "gru_cell fwd pointwise N=256 H=512, f32",
        lambda: cpu.gru_cell_forward(gi, gh, c_prev),
        lambda: _np_gru(gi, gh, c_prev),
        (lambda: _torch_gru(t_gi, t_gh, t_c)) if have else None,
    )

    # gathers, scatters and scans along one dim, layer norm rows (256x1024)
    x = rng.standard_normal((256, 1024)).astype(f32)
    ix = rng.integers(0, 1024, (256, 512))
    sx = rng.standard_normal((256, 512)).astype(f32)
    x3, ix3, sx3 = x.reshape(256, 1024, 1), ix.reshape(256, 512, 1), sx.reshape(256, 512, 1)
    t_x, t_ix, t_sx = (_t(x), _t(ix), _t(sx)) if have else (None,) * 3
    rows = np.arange(256)[:, None]

    def np_scatter_add():
        o = x.copy()
        np.add.at(o, (rows, ix), sx)
        return o

    yield (
        "gather_dim 256x1024 -> 256x512 along the last dim, f32",
        lambda: cpu.gather_dim(x3, ix3),
        lambda: np.take_along_axis(x, ix, 1),
        (lambda: torch.gather(t_x, 1, t_ix)) if have else None,
    )
    yield (
        "scatter_dim add 256x512 into 256x1024 along the last dim, f32",
        lambda: cpu.scatter_dim(x3.copy(), ix3, sx3, "add"),
        np_scatter_add,
        (lambda: torch.scatter_add(t_x, 1, t_ix, t_sx)) if have else None,
    )
    yield (
        "scan_dim sum 256x1024 along the last dim (float64 running sum), f32",
        lambda: cpu.scan_dim(x3, "sum", np.float64),
        lambda: np.cumsum(x, axis=1, dtype=np.float64).astype(f32),
        (lambda: torch.cumsum(t_x, 1)) if have else None,
    )
    yield (
        "scan_dim max 256x1024 along the last dim (values and indices), f32",
        lambda: cpu.scan_dim(x3, "max"),
        lambda: np.maximum.accumulate(x, axis=1),
        (lambda: torch.cummax(t_x, 1)) if have else None,
    )
    w, b = rng.standard_normal(1024).astype(f32), rng.standard_normal(1024).astype(f32)
    t_w, t_b = (_t(w), _t(b)) if have else (None, None)

    def np_layer_norm():
        m = x.mean(axis=1, keepdims=True)
        d = x - m
        r = 1 / np.sqrt((d * d).mean(axis=1, keepdims=True) + f32(1e-5))
        return d * r * w + b, m, r

    yield (
        "layer_norm_forward 256x1024 with weight and bias, f32",
        lambda: cpu.layer_norm_forward(x, w, b, 1e-5),
        np_layer_norm,
        (lambda: torch.native_layer_norm(t_x, [1024], t_w, t_b, 1e-5)) if have else None,
    )


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.3f}"


def _ratio(a: float, b: float | None) -> str:
    return "-" if b is None or b == 0 else f"{a / b:.2f}"


def main() -> list[tuple[str, float, float | None]]:
    """Run every workload; print a Markdown table; return (workload, ember_s, torch_s) rows."""
    rng = np.random.default_rng(0)
    rows = []
    print("| workload | ember ms | numpy ms | torch ms | ember/numpy | ember/torch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, ember_fn, numpy_fn, torch_fn in _workloads(rng):
        e, n, t = _time(ember_fn), _time(numpy_fn), _time(torch_fn)
        rows.append((name, e, t))
        print(f"| {name} | {_fmt(e)} | {_fmt(n)} | {_fmt(t)} | {_ratio(e, n)} | {_ratio(e, t)} |",
              flush=True)
    return rows


def gemm_orientation(threads: int = 1) -> None:
    """Print the measurement behind ember's choice of orientation for ``x @ w.T`` (a linear
    layer's product, ``x`` (m, k), ``w`` (n, k), both row-major): per shape, the time of
    ``x @ w.T`` over that of ``(w @ x.T).T`` copied back to row-major (above 1: the second
    is faster), and what ember picks (``T``: the second)."""
    from threadpoolctl import threadpool_limits

    from ember.tensor._linalg import _transpose_wins

    rng = np.random.default_rng(0)
    ks, ns = (64, 200, 800), (64, 128, 200, 256, 512, 800, 2048)
    with threadpool_limits(threads):
        print(f"x @ w.T over (w @ x.T).T, float32, {threads} thread(s); T: ember transposes")
        print("| rows | " + " | ".join(f"k{k} n{n}" for k in ks for n in ns) + " |")
        print("| ---: |" + " ---: |" * (len(ks) * len(ns)))
        for m in (1, 2, 4, 8, 16, 20, 32, 48, 64, 96):
            cells = []
            for k in ks:
                for n in ns:
                    x = rng.standard_normal((m, k), dtype=np.float32)
                    w = rng.standard_normal((n, k), dtype=np.float32)
                    inner = max(5, min(2000, int(3e6 / (m * k * n + 2e4))))
                    direct = min(timeit.repeat(lambda x=x, w=w: x @ w.T, number=inner,
                                               repeat=5))
                    flipped = min(timeit.repeat(
                        lambda x=x, w=w: np.ascontiguousarray((w @ x.T).T), number=inner,
                        repeat=5))
                    pick = "T" if _transpose_wins(m, k, n) else ""
                    cells.append(f"{direct / flipped:.2f}{pick}")
            print(f"| {m} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    if "--gemm" in sys.argv:
        for n_threads in (1, 2):
            gemm_orientation(n_threads)
    else:
        main()
