"""Recurrent cells and the multi-layer loop, over the registry ops of ember.tensor.

A recurrent layer computes its input projection ``x W_ih^T + b`` for all time steps at once (one
matrix product per layer and direction), splits it into the steps' rows with one
``split_with_sizes`` node, and runs each step as ``h_prev @ W_hh^T`` (through one contiguous
copy of ``W_hh^T`` per forward) followed by the fused pointwise op of the cell:
``lstm_cell_fused`` / ``gru_cell_fused`` (their derivatives are ``lstm_cell_backward`` /
``gru_cell_backward``, the fused Numba kernels, differentiable again through the table) or
``tanh`` / ``relu`` for an Elman step.

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

import ember.tensor as et
from ember.tensor import Tensor

__all__ = ["rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell"]


def _sum_bias(b_ih: Tensor | None, b_hh: Tensor | None) -> Tensor | None:
    if b_ih is None:
        return b_hh
    return b_ih if b_hh is None else b_ih + b_hh


# --------------------------------------------------------------------------- public cells
def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step ``tanh(x w_ih^T + b_ih + h w_hh^T + b_hh)`` for ``x`` (N, I),
    ``hx`` (N, H).

    >>> rnn_tanh_cell(et.ones(1, 2), et.zeros(1, 3), et.zeros(3, 2), et.zeros(3, 3)).tolist()
    [[0.0, 0.0, 0.0]]
    """
    return et.rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
                  b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One Elman step with ReLU: ``relu(x w_ih^T + b_ih + h w_hh^T + b_hh)``.

    >>> rnn_relu_cell(et.ones(1, 1), et.zeros(1, 1), -et.ones(1, 1), et.ones(1, 1)).tolist()
    [[0.0]]
    """
    return et.rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


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
    h, c = et.lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (h if w_hr is None else et.linear(h, w_hr)), c


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor,
             b_ih: Tensor | None = None, b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gates r, z, n as in PyTorch):
    ``n = tanh(x W_in + b_in + r * (h W_hn + b_hn))``, ``h' = (1 - z) * n + z * h``.

    >>> gru_cell(et.ones(1, 1), et.ones(1, 1), et.zeros(3, 1), et.zeros(3, 1)).tolist()
    [[0.5]]
    """
    return et.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def _rows(t: Tensor, n: int) -> Tensor:
    return t if t.shape[0] == n else t.narrow(0, 0, n)


def _join(top: Tensor, full: Tensor) -> Tensor:
    """``top`` followed by the rows of ``full`` past ``top``'s."""
    n, rows = top.shape[0], full.shape[0]
    if n == rows:
        return top
    return et.cat([top, full.narrow(0, n, rows - n)], 0)


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
    layer_in = x2d
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            idx = layer * D + d
            w_ih, w_hh, b_ih, b_hh, w_hr = weights[idx]
            if mode == "GRU":
                proj = et.linear(layer_in, w_ih, b_ih)
            else:
                proj = et.linear(layer_in, w_ih, _sum_bias(b_ih, b_hh))
            steps = et.split_with_sizes(proj, sizes) if T > 1 else (proj,)
            h = hx.select(0, idx)
            c = cx.select(0, idx) if cx is not None else None
            w_t = w_hh.t().contiguous()  # BLAS runs the per-step h @ W^T faster on a copy
            w_rt = w_hr.t() if w_hr is not None else None
            ys: list = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                n = sizes[t]
                hp = _rows(h, n)
                hidden = hp.matmul(w_t)
                if mode == "LSTM":
                    hn, cn = et.lstm_cell_fused(steps[t], hidden, _rows(c, n))
                    if w_rt is not None:
                        hn = hn.matmul(w_rt)
                    c = _join(cn, c)
                elif mode == "GRU":
                    if b_hh is not None:
                        hidden = hidden + b_hh
                    hn = et.gru_cell_fused(steps[t], hidden, hp)
                elif mode == "RNN_RELU":
                    hn = (steps[t] + hidden).relu()
                else:
                    hn = (steps[t] + hidden).tanh()
                h = _join(hn, h)
                ys[t] = hn
            outs.append(et.cat(ys, 0) if T > 1 else ys[0])
            h_n.append(h)
            if c is not None:
                c_n.append(c)
        layer_in = outs[0] if D == 1 else et.cat(outs, 1)
        if dropout > 0 and training and layer < num_layers - 1:
            layer_in = dropout_fn(layer_in, dropout)
    return layer_in, et.stack(h_n, 0), (et.stack(c_n, 0) if c_n else None)
