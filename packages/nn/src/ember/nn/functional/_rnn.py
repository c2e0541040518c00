"""Recurrent cells: one fused autograd node per cell step, and the multi-layer loop.

Each step of a recurrent layer is one :class:`ember.autograd.Function`
(``_RNNStep``, ``_LSTMStep``, ``_GRUStep``): it takes the step's slice of the input projection
``x W_ih^T + b`` (computed for all time steps at once, one matrix product per layer and
direction), the previous state and the recurrent weights, and does the recurrent matrix product
and the gate math in one go. Forward is NumPy on whole blocks (NumPy's SIMD ``tanh`` beats a
scalar Numba loop there); the CPU backward uses the fused Numba kernels of
``ember.tensor.kernels`` (``lstm_cell_backward``, ``gru_cell_backward``).

Double backward: when a step's backward runs with grad mode on (``create_graph=True``) or on a
device without the fused kernels, it recomputes the step from its saved inputs with
differentiable ember ops, so Hessian-vector products through an RNN are exact.

Packed batches: a step may get fewer input rows (``batch_sizes[t]``) than the state has
(``B``). It then computes on the first rows only and passes the other rows of the state through
unchanged, so no arithmetic touches padding and the state left in each row at the end is the
final state of that row's sequence.

    >>> import ember.tensor as et
    >>> x, h, c = et.randn(3, 4), et.zeros(3, 5), et.zeros(3, 5)
    >>> w_ih, w_hh = et.randn(20, 4), et.randn(20, 5)
    >>> h1, c1 = lstm_cell(x, (h, c), w_ih, w_hh)
    >>> tuple(h1.shape), tuple(c1.shape)
    ((3, 5), (3, 5))
"""
from __future__ import annotations

from collections.abc import Sequence

import ember.autograd as ag
import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor._registry import array_module
from ember.tensor.kernels import get as _kernel

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


# --------------------------------------------------------------------------- array helpers
def _sigmoid_(a) -> None:
    """In-place logistic sigmoid through tanh (no overflow for any input)."""
    xp = array_module(a)
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5


def _head(t: Tensor | None, n: int):
    """The first ``n`` rows of ``t``'s array (the array itself when it has ``n`` rows)."""
    if t is None:
        return None
    a = t._data
    return a if a.shape[0] == n else a[:n]


def _with_tail(top, full: Tensor | None, like):
    """``top`` followed by the rows of ``full`` past ``top``'s (zeros when ``full`` is None)."""
    n, rows = top.shape[0], like.shape[0]
    if n == rows:
        return top
    xp = array_module(top)
    tail = (xp.zeros((rows - n,) + top.shape[1:], dtype=top.dtype) if full is None
            else full._data[n:])
    return xp.concatenate([top, tail], axis=0)


class _Layer:
    """What the steps of one layer and direction share.

    - ``w_t``: the recurrent weights transposed into contiguous copies once per forward (BLAS
      runs the per-step ``h @ W^T`` faster on them).
    - the recurrent weight gradients: ``dW_hh = sum_t dgates_t^T h_{t-1}`` is one matrix product
      over all steps instead of one thin product per step. Each step's backward files its
      ``(dgates_t, h_{t-1})``; the step created first, whose backward runs last in the chain,
      computes the sums and returns them as its gradient; the other steps return None for the
      weights. (Backward with ``create_graph=True`` does not use this: each step returns its
      own weight gradient there.)
    """

    __slots__ = ("w_t", "parts", "created")

    def __init__(self, *weights: Tensor | None) -> None:
        self.w_t = tuple(None if w is None else
                         array_module(w._data).ascontiguousarray(w._data.T) for w in weights)
        self.parts: dict = {}
        self.created = 0

    def register(self) -> tuple[int, bool]:
        """A new step: returns (its index, whether it flushes the gradients)."""
        i = self.created
        self.created += 1
        return i, i == 0

    def file(self, step: int, key: str, left, right) -> None:
        self.parts[key, step] = (left, right)

    def flush(self, key: str):
        """``sum_t left_t^T right_t`` over the filed parts of ``key`` (and the column sum of
        the stacked ``left``, for a bias); None when nothing was filed."""
        items = [v for (k, _), v in sorted(self.parts.items(), key=_part_order) if k == key]
        for k in [k for k in self.parts if k[0] == key]:
            del self.parts[k]
        if not items:
            return None, None
        xp = array_module(items[0][0])
        left = xp.concatenate([a for a, _ in items], axis=0)
        right = xp.concatenate([b for _, b in items], axis=0)
        return left.T @ right, left


def _part_order(item):
    return item[0][1]


def _mm_t(a, w: Tensor, cached=None):
    """``a @ w^T`` on raw arrays (through the cached contiguous transpose when given)."""
    return a @ (w._data.T if cached is None else cached)


def _weight_grads(ctx, key: str, need: bool, left, right):
    """The weight gradient ``left^T right`` of one step, or None when a :class:`_Layer`
    collects it (see there); returns (grad array or None, stacked ``left`` or None)."""
    if not need:
        return None, None
    layer = ctx.layer
    if layer is None:
        return left.T @ right, left
    layer.file(ctx.step, key, left, right)
    if not ctx.flush:
        return None, None
    return layer.flush(key)


def _fast(*tensors: Tensor) -> bool:
    """The fused NumPy/Numba backward applies: CPU arrays and grad mode off."""
    return not ag.is_grad_enabled() and all(t is None or type(t._data).__module__ == "numpy"
                                            for t in tensors)


def _start(ctx, layer: _Layer | None) -> None:
    ctx.layer = layer
    ctx.step, ctx.flush = layer.register() if layer is not None else (0, True)


def _wrap(arr):
    return None if arr is None else Tensor._make(arr)


def _needs(*tensors) -> tuple:
    return tuple(isinstance(t, Tensor) and t.requires_grad for t in tensors)


def _rows(t: Tensor | None, start: int, n: int) -> Tensor | None:
    if t is None:
        return None
    return t if start == 0 and n == t.shape[0] else t.narrow(0, start, n)


def _join(top: Tensor, full: Tensor | None, rows: int) -> Tensor:
    """Ember-op form of :func:`_with_tail`."""
    n = top.shape[0]
    if n == rows:
        return top
    tail = (et.zeros((rows - n,) + tuple(top.shape[1:]), dtype=top.dtype, device=top.device)
            if full is None else full.narrow(0, n, rows - n))
    return et.cat([top, tail], 0)


def _zeros_like_rows(ref: Tensor) -> Tensor:
    return et.zeros(tuple(ref.shape), dtype=ref.dtype, device=ref.device)


# --------------------------------------------------------------------------- splitting rows
class _SplitRows(ag.Function):
    """Split ``x`` into consecutive row blocks of ``sizes`` (views); backward is one ``cat``.

    Slicing the input projection with ``narrow`` per time step would give every step a
    backward that writes a zero tensor of the full projection's size.
    """

    @staticmethod
    def forward(ctx, x: Tensor, sizes: Sequence[int]):
        ctx.set_materialize_grads(False)
        ctx.sizes = tuple(sizes)
        ctx.meta = (tuple(x.shape[1:]), x.dtype, x.device)
        out, start = [], 0
        for n in ctx.sizes:
            out.append(x.narrow(0, start, n))
            start += n
        return tuple(out)

    @staticmethod
    def backward(ctx, *grads):
        rest, dtype, device = ctx.meta
        parts = [g if g is not None else et.zeros((n, *rest), dtype=dtype, device=device)
                 for g, n in zip(grads, ctx.sizes)]
        return et.cat(parts, 0), None


# --------------------------------------------------------------------------- Elman RNN step
class _RNNStep(ag.Function):
    """``h = act(xg + h_prev[:n] @ w_hh^T)`` for the first ``n = len(xg)`` rows of the state."""

    @staticmethod
    def forward(ctx, xg: Tensor, h_prev: Tensor, w_hh: Tensor, relu: bool,
                layer: _Layer | None = None):
        ctx.set_materialize_grads(False)
        _start(ctx, layer)
        n = xg.shape[0]
        hp = _head(h_prev, n)
        pre = _mm_t(hp, w_hh, layer and layer.w_t[0])
        pre += xg._data
        xp = array_module(pre)
        h = xp.maximum(pre, 0, out=pre) if relu else xp.tanh(pre, out=pre)
        ctx.save_for_backward(xg, h_prev, w_hh)
        ctx.relu, ctx.h, ctx.needs = relu, h, _needs(xg, h_prev, w_hh)
        return Tensor._make(_with_tail(h, h_prev, h_prev._data))

    @staticmethod
    def backward(ctx, dh: Tensor):
        xg, h_prev, w_hh = ctx.saved_tensors
        if not _fast(xg, h_prev, w_hh, dh):
            return _rnn_step_backward(xg, h_prev, w_hh, ctx.relu, dh) + (None, None)
        n = xg.shape[0]
        g = _head(dh, n)
        h = ctx.h
        dpre = g * (h > 0) if ctx.relu else g * (1 - h * h)
        need_x, need_h, need_w = ctx.needs
        dh_prev = (Tensor._make(_with_tail(dpre @ w_hh._data, dh, h_prev._data))
                   if need_h else None)
        dw, _ = _weight_grads(ctx, "w_hh", need_w, dpre, _head(h_prev, n))
        return (Tensor._make(dpre) if need_x else None), dh_prev, _wrap(dw), None, None


def _rnn_step_backward(xg, h_prev, w_hh, relu, dh):
    n, rows = xg.shape[0], h_prev.shape[0]
    hp = _rows(h_prev, 0, n)
    pre = xg + hp.matmul(w_hh.t())
    g = _rows(dh, 0, n)
    dpre = g * (pre > 0).to(pre.dtype) if relu else g * (1 - pre.tanh().square())
    return dpre, _join(dpre.matmul(w_hh), dh, rows), dpre.t().matmul(hp)


# --------------------------------------------------------------------------- LSTM step
class _LSTMStep(ag.Function):
    """One LSTM step (gates i, f, g, o) with optional projection ``h = (o * tanh c) w_hr^T``."""

    @staticmethod
    def forward(ctx, xg: Tensor, h_prev: Tensor, c_prev: Tensor, w_hh: Tensor,
                w_hr: Tensor | None, layer: _Layer | None = None):
        ctx.set_materialize_grads(False)
        _start(ctx, layer)
        n = xg.shape[0]
        hp, cp = _head(h_prev, n), _head(c_prev, n)
        act = _mm_t(hp, w_hh, layer and layer.w_t[0])  # gate pre-activations, then activations
        act += xg._data
        H = cp.shape[1]
        xp = array_module(act)
        _sigmoid_(act[:, :2 * H])
        _sigmoid_(act[:, 3 * H:])
        xp.tanh(act[:, 2 * H:3 * H], out=act[:, 2 * H:3 * H])
        c = act[:, H:2 * H] * cp
        c += act[:, :H] * act[:, 2 * H:3 * H]
        tanh_c = xp.tanh(c)
        h = act[:, 3 * H:] * tanh_c
        ctx.h_pre = h
        if w_hr is not None:
            h = _mm_t(h, w_hr, layer and layer.w_t[1])
        ctx.save_for_backward(xg, h_prev, c_prev, w_hh, w_hr)
        ctx.act, ctx.tanh_c = act, tanh_c
        ctx.needs = _needs(xg, h_prev, c_prev, w_hh, w_hr)
        return (Tensor._make(_with_tail(h, h_prev, h_prev._data)),
                Tensor._make(_with_tail(c, c_prev, c_prev._data)))

    @staticmethod
    def backward(ctx, dh: Tensor | None, dc: Tensor | None):
        xg, h_prev, c_prev, w_hh, w_hr = ctx.saved_tensors
        if not _fast(xg, h_prev, c_prev, w_hh, w_hr, dh, dc):
            return _lstm_step_backward(xg, h_prev, c_prev, w_hh, w_hr, dh, dc) + (None,)
        n = xg.shape[0]
        need_x, need_h, need_c, need_w, need_r = ctx.needs
        g_h, g_c = _head(dh, n), _head(dc, n)
        dw_hr = None
        if w_hr is not None:
            if g_h is None:  # the projection still needs its (zero) part for the flush
                g_h = array_module(ctx.h_pre).zeros((n, w_hr.shape[0]), dtype=ctx.h_pre.dtype)
            dw_hr, _ = _weight_grads(ctx, "w_hr", need_r, g_h, ctx.h_pre)
            g_h = g_h @ w_hr._data
        dgates, dc_prev = _kernel("lstm_cell_backward", "cpu")(
            g_h, g_c, ctx.act, _head(c_prev, n), ctx.tanh_c)
        dh_prev = (Tensor._make(_with_tail(dgates @ w_hh._data, dh, h_prev._data))
                   if need_h else None)
        dc_prev = Tensor._make(_with_tail(dc_prev, dc, c_prev._data)) if need_c else None
        dw_hh, _ = _weight_grads(ctx, "w_hh", need_w, dgates, _head(h_prev, n))
        return ((Tensor._make(dgates) if need_x else None), dh_prev, dc_prev, _wrap(dw_hh),
                _wrap(dw_hr), None)


def _lstm_step_backward(xg, h_prev, c_prev, w_hh, w_hr, dh, dc):
    """The LSTM step's vector-Jacobian product in differentiable ember ops."""
    n, rows = xg.shape[0], h_prev.shape[0]
    hp, cp = _rows(h_prev, 0, n), _rows(c_prev, 0, n)
    gi, gf, gg, go = (xg + hp.matmul(w_hh.t())).chunk(4, 1)
    i, f, g, o = gi.sigmoid(), gf.sigmoid(), gg.tanh(), go.sigmoid()
    c = f * cp + i * g
    tc = c.tanh()
    if dh is not None:
        g_h = _rows(dh, 0, n)
    else:
        width = tc.shape[1] if w_hr is None else w_hr.shape[0]
        g_h = et.zeros((n, width), dtype=tc.dtype, device=tc.device)
    g_c = _rows(dc, 0, n) if dc is not None else _zeros_like_rows(c)
    dw_hr = None
    if w_hr is not None:
        dw_hr = g_h.t().matmul(o * tc)
        g_h = g_h.matmul(w_hr)
    dct = g_c + g_h * o * (1 - tc * tc)
    dgates = et.cat([dct * g * i * (1 - i), dct * cp * f * (1 - f), dct * i * (1 - g * g),
                     g_h * tc * o * (1 - o)], 1)
    return (dgates, _join(dgates.matmul(w_hh), dh, rows), _join(dct * f, dc, rows),
            dgates.t().matmul(hp), dw_hr)


# --------------------------------------------------------------------------- GRU step
class _GRUStep(ag.Function):
    """One GRU step (gates r, z, n): ``h = (1 - z) * n + z * h_prev``."""

    @staticmethod
    def forward(ctx, xg: Tensor, h_prev: Tensor, w_hh: Tensor, b_hh: Tensor | None,
                layer: _Layer | None = None):
        ctx.set_materialize_grads(False)
        _start(ctx, layer)
        n = xg.shape[0]
        hp = _head(h_prev, n)
        gh = _mm_t(hp, w_hh, layer and layer.w_t[0])
        if b_hh is not None:
            gh += b_hh._data
        H = hp.shape[1]
        xp = array_module(gh)
        x = xg._data
        rz = x[:, :2 * H] + gh[:, :2 * H]
        _sigmoid_(rz)
        r, z = rz[:, :H], rz[:, H:]
        nn = r * gh[:, 2 * H:]
        nn += x[:, 2 * H:]
        xp.tanh(nn, out=nn)
        h = hp - nn
        h *= z
        h += nn
        ctx.save_for_backward(xg, h_prev, w_hh, b_hh)
        ctx.r, ctx.z, ctx.n, ctx.gh_n = r, z, nn, gh[:, 2 * H:]
        ctx.needs = _needs(xg, h_prev, w_hh, b_hh)
        return Tensor._make(_with_tail(h, h_prev, h_prev._data))

    @staticmethod
    def backward(ctx, dh: Tensor):
        xg, h_prev, w_hh, b_hh = ctx.saved_tensors
        if not _fast(xg, h_prev, w_hh, b_hh, dh):
            return _gru_step_backward(xg, h_prev, w_hh, b_hh, dh) + (None,)
        n = xg.shape[0]
        need_x, need_h, need_w, need_b = ctx.needs
        hp = _head(h_prev, n)
        dgi, dgh, dhp = _kernel("gru_cell_backward", "cpu")(
            _head(dh, n), ctx.r, ctx.z, ctx.n, ctx.gh_n, hp)
        dh_prev = None
        if need_h:
            dhp += dgh @ w_hh._data
            dh_prev = Tensor._make(_with_tail(dhp, dh, h_prev._data))
        dw, stacked = _weight_grads(ctx, "w_hh", need_w or need_b, dgh, hp)
        db = stacked.sum(axis=0) if need_b and stacked is not None else None
        return ((Tensor._make(dgi) if need_x else None), dh_prev,
                _wrap(dw if need_w else None), _wrap(db), None)


def _gru_step_backward(xg, h_prev, w_hh, b_hh, dh):
    """The GRU step's vector-Jacobian product in differentiable ember ops."""
    rows, n = h_prev.shape[0], xg.shape[0]
    hp = _rows(h_prev, 0, n)
    gh = hp.matmul(w_hh.t())
    if b_hh is not None:
        gh = gh + b_hh
    xr, xz, xn = xg.chunk(3, 1)
    hr, hz, hn = gh.chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    nn = (xn + r * hn).tanh()
    g = _rows(dh, 0, n)
    dn = g * (1 - z) * (1 - nn * nn)
    dz = g * (hp - nn) * z * (1 - z)
    dr = dn * hn * r * (1 - r)
    dgi = et.cat([dr, dz, dn], 1)
    dgh = et.cat([dr, dz, dn * r], 1)
    dh_prev = _join(g * z + dgh.matmul(w_hh), dh, rows)
    db = dgh.sum(0) if b_hh is not None else None
    return dgi, dh_prev, dgh.t().matmul(hp), db


# --------------------------------------------------------------------------- public cells
def _project(input: Tensor, w_ih: Tensor, bias: Tensor | None) -> Tensor:
    out = input.matmul(w_ih.t())
    return out if bias is None else out + bias


def _sum_bias(b_ih: Tensor | None, b_hh: Tensor | None) -> Tensor | None:
    if b_ih is None:
        return b_hh
    return b_ih if b_hh is None else b_ih + b_hh


def _cell_input(name: str, input: Tensor, hx, w_ih: Tensor):
    if input.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
    if input.shape[-1] != w_ih.shape[1]:
        raise RuntimeError(f"{name}: input has inconsistent input_size: got "
                           f"{input.shape[-1]} expected {w_ih.shape[1]}")
    return input.dim() == 2


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step ``tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)`` for ``x`` (N, I),
    ``hx`` (N, H).

    >>> rnn_tanh_cell(et.ones(1, 2), et.zeros(1, 3), et.zeros(3, 2), et.zeros(3, 3)).tolist()
    [[0.0, 0.0, 0.0]]
    """
    return _RNNStep.apply(_project(input, w_ih, _sum_bias(b_ih, b_hh)), hx, w_hh, False)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with ReLU: ``relu(x w_ih^T + b_ih + h w_hh^T + b_hh)``.

    >>> rnn_relu_cell(et.ones(1, 1), et.zeros(1, 1), -et.ones(1, 1), et.ones(1, 1)).tolist()
    [[0.0]]
    """
    return _RNNStep.apply(_project(input, w_ih, _sum_bias(b_ih, b_hh)), hx, w_hh, True)


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor,
              b_ih: Tensor | None = None, b_hh: Tensor | None = None,
              w_hr: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step: returns ``(h, c)`` from ``hx = (h, c)``; gates in PyTorch's order
    (i, f, g, o), weights ``w_ih`` (4H, I), ``w_hh`` (4H, P), optional projection ``w_hr``
    (P, H).

    >>> h, c = lstm_cell(et.ones(1, 1), (et.zeros(1, 1), et.ones(1, 1)), et.zeros(4, 1),
    ...                  et.zeros(4, 1))
    >>> round(c.item(), 4)  # f * c + i * g = 0.5 * 1 + 0.5 * 0
    0.5
    """
    h, c = hx
    return _LSTMStep.apply(_project(input, w_ih, _sum_bias(b_ih, b_hh)), h, c, w_hh, w_hr)


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gates r, z, n as in PyTorch):
    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``, ``h' = (1 - z) * n + z * h``.

    >>> gru_cell(et.ones(1, 1), et.ones(1, 1), et.zeros(3, 1), et.zeros(3, 1)).tolist()
    [[0.5]]
    """
    return _GRUStep.apply(_project(input, w_ih, b_ih), hx, w_hh, b_hh)


# --------------------------------------------------------------------------- layers
def _recurrent(mode: str, x2d: Tensor, sizes: Sequence[int], hx: Tensor,
               cx: Tensor | None, weights: Sequence[tuple], num_layers: int,
               bidirectional: bool, dropout: float, training: bool, dropout_fn=None):
    """The multi-layer (bi)directional loop shared by every recurrent layer.

    ``x2d`` holds the time steps' rows back to back (``sizes[t]`` rows for step ``t``, the
    layout of a PackedSequence's data; a padded batch has ``sizes = [B] * T``). ``hx`` (and
    ``cx`` for LSTM) are ``(num_layers * D, B, *)``; ``weights[l * D + d]`` is
    ``(w_ih, w_hh, b_ih, b_hh, w_hr)`` with None for what the layer lacks. Returns
    ``(output_2d, h_n, c_n)`` (``c_n`` None unless LSTM).
    """
    D = 2 if bidirectional else 1
    T = len(sizes)
    B = hx.shape[1]
    layer_in = x2d
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            idx = layer * D + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[idx]
            if mode == "GRU":
                proj = _project(layer_in, w_ih, b_ih)
            else:
                proj = _project(layer_in, w_ih, _sum_bias(b_ih, b_hh))
            steps = _SplitRows.apply(proj, sizes) if T > 1 else (proj,)
            h = hx.select(0, idx)
            c = cx.select(0, idx) if cx is not None else None
            lay = _Layer(w_hh, w_hr)
            ys: list = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                if mode == "LSTM":
                    h, c = _LSTMStep.apply(steps[t], h, c, w_hh, w_hr, lay)
                elif mode == "GRU":
                    h = _GRUStep.apply(steps[t], h, w_hh, b_hh, lay)
                else:
                    h = _RNNStep.apply(steps[t], h, w_hh, mode == "RNN_RELU", lay)
                ys[t] = h if sizes[t] == B else h.narrow(0, 0, sizes[t])
            outs.append(et.cat(ys, 0) if T > 1 else ys[0])
            h_n.append(h)
            if c is not None:
                c_n.append(c)
        layer_in = outs[0] if D == 1 else et.cat(outs, 1)
        if dropout > 0 and training and layer < num_layers - 1:
            layer_in = dropout_fn(layer_in, dropout)
    return layer_in, et.stack(h_n, 0), (et.stack(c_n, 0) if c_n else None)
