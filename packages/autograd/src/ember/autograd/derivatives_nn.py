"""The derivative table's entries for nn's primitives (``ember.tensor._nn_ops``).

Same rules as ``derivatives.py``: each formula reads the bound call by name, returns one
gradient per parameter, and is written with ember ops. The first-order formulas call the
backward ops (``convolution_backward``, ``max_pool2d_with_indices_backward``,
``embedding_dense_backward``, ``lstm_cell_backward``, ``gru_cell_backward``,
``_ctc_loss_backward``, ``nll_loss_backward``, ``_pack_padded_sequence_backward``), whose CPU
and CUDA implementations are the fused kernels (or one NumPy/CuPy gather / scatter); those
backward ops have entries here too, written with ember ops (and with the forward ops), so
second derivatives come from the same table.
"""
from __future__ import annotations

import math

import ember.tensor as et
from ember.tensor.extension import OPS, dtype_of

from .derivatives import vjp

_ctc_loss_bw = OPS["_ctc_loss_backward"].public  # the registry op (PyTorch's aten name)

__all__: list[str] = []


def _args(name: str, *params: str) -> tuple[int, ...]:
    """Positions of ``params`` in op ``name``'s signature (what ``save`` takes)."""
    op = et.OPS[name]
    return tuple(op.index(p) for p in params)


def _zeros(c, i: int, like):
    return et.zeros(c.meta[i][0], dtype=like.dtype, device=like.device)


def _or_zeros(t, c, i: int, like):
    return t if t is not None else _zeros(c, i, like)


# --------------------------------------------------------------------------- im2col / col2im
@vjp("im2col")
def _im2col(c, g):
    a = c.args
    size = tuple(c.meta[0][0][2:])
    return (et.col2im(g, size, a.kernel_size, a.dilation, a.padding, a.stride),)


@vjp("col2im")
def _col2im(c, g):
    a = c.args
    return (et.im2col(g, a.kernel_size, a.dilation, a.padding, a.stride),)


# --------------------------------------------------------------------------- convolution
@vjp("convolution", save=_args("convolution", "input", "weight"))
def _convolution(c, g):
    a = c.args
    bias_sizes = list(c.meta[2][0]) if c.meta[2] is not None else None
    return et.convolution_backward(g, a.input, a.weight, bias_sizes, a.stride, a.padding,
                                   a.dilation, a.transposed, a.output_padding, a.groups,
                                   [c.needs[0], c.needs[1], c.needs[2]])


@vjp("convolution_backward",
     save=_args("convolution_backward", "grad_output", "input", "weight"))
def _convolution_backward(c, g):
    # the outputs are bilinear: grad_input = B_x^T(grad_output; weight) and grad_weight =
    # B_w^T(grad_output; input) for the bilinear map B(input, weight) of the convolution, so
    # <ggi, grad_input> = <grad_output, B(ggi, weight)> and <ggw, grad_weight> =
    # <grad_output, B(input, ggw)>
    a = c.args
    ggi, ggw, ggb = g
    geo = (a.stride, a.padding, a.dilation, a.transposed, a.output_padding, a.groups)
    d_go = d_in = d_w = None
    if c.needs[0]:
        parts = []
        if ggi is not None:
            parts.append(et.convolution(ggi, a.weight, ggb, *geo))
        elif ggb is not None:
            nd = len(c.meta[0][0]) - 2
            parts.append(_zeros(c, 0, ggb) + ggb.reshape((1, -1) + (1,) * nd))
        if ggw is not None:
            parts.append(et.convolution(a.input, ggw, None, *geo))
        if parts:
            d_go = parts[0]
            for p in parts[1:]:
                d_go = d_go + p
    if c.needs[1] and ggw is not None:
        d_in = et.convolution_backward(a.grad_output, a.input, ggw, None, *geo,
                                       [True, False, False])[0]
    if c.needs[2] and ggi is not None:
        d_w = et.convolution_backward(a.grad_output, ggi, a.weight, None, *geo,
                                      [False, True, False])[1]
    return d_go, d_in, d_w


# --------------------------------------------------------------------------- max pooling
@vjp("max_pool2d_with_indices", "max_pool3d_with_indices", save=(0,), out=True)
def _max_pool_with_indices(c, g):
    a = c.args
    gv = g[0] if isinstance(g, (tuple, list)) else g
    backward = et.max_pool2d_with_indices_backward if c.op.startswith("max_pool2d") else \
        et.max_pool3d_with_indices_backward
    return (backward(gv, a.input, a.kernel_size, a.stride, a.padding, a.dilation, a.ceil_mode,
                     c.out[1]),)


@vjp("max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward",
     save=_args("max_pool2d_with_indices_backward", "indices"))
def _max_pool_backward(c, g):
    # the scatter's adjoint: gather the gradient at the argmax positions
    idx = c.args.indices
    shape = c.meta[0][0]
    nd = 2 if c.op.startswith("max_pool2d") else 3
    lead = shape[:-nd]
    B = 1
    for n in lead:
        B *= n
    gg = g.reshape(B, -1).gather(1, idx.reshape(B, -1)).reshape(shape)
    return (gg,)


# --------------------------------------------------------------------------- embedding
@vjp("embedding", save=_args("embedding", "indices"))
def _embedding(c, g):
    a = c.args
    return (et.embedding_dense_backward(g, a.indices, c.meta[0][0][0], a.padding_idx,
                                        a.scale_grad_by_freq),)


@vjp("embedding_dense_backward", save=_args("embedding_dense_backward", "indices"))
def _embedding_dense_backward(c, g):
    a = c.args
    idx = a.indices
    out = et.embedding(g, idx)
    if a.padding_idx >= 0:
        out = out * (idx != a.padding_idx).unsqueeze(-1).to(out.dtype)
    if a.scale_grad_by_freq:
        flat = idx.reshape(-1)
        counts = et.zeros(a.num_weights, dtype=g.dtype, device=g.device).index_add(
            0, flat, et.ones(flat.shape[0], dtype=g.dtype, device=g.device))
        out = out / counts.index_select(0, flat).reshape(tuple(idx.shape) + (1,))
    return (out.reshape(c.meta[0][0]),)


# --------------------------------------------------------------------------- recurrent cells
@vjp("lstm_cell_fused", save=(0, 1, 2))
def _lstm_cell_fused(c, g):
    a = c.args
    gh, gc = g
    dgates, dcx = et.lstm_cell_backward(gh, gc, a.input_gates, a.hidden_gates, a.cx)
    return dgates, dgates, dcx


@vjp("lstm_cell_backward", save=(0, 1, 2, 3, 4))
def _lstm_cell_backward(c, g):
    """Second derivatives of the LSTM cell, by hand: the chain rule through
    ``dct = Gc + Gh o (1 - tc^2)``, ``Dai = dct g si``, ``Daf = dct cx sf``,
    ``Dag = dct i (1 - g^2)``, ``Dao = Gh tc so``, ``Dcx = dct f``."""
    a = c.args
    ug, ucx = g
    cx = a.cx
    A = a.input_gates + a.hidden_gates
    ai, af, ag_, ao = A.chunk(4, 1)
    i, f, gt, o = ai.sigmoid(), af.sigmoid(), ag_.tanh(), ao.sigmoid()
    cc = f * cx + i * gt
    tc = cc.tanh()
    Gh = a.grad_hy if a.grad_hy is not None else et.zeros_like(cx)
    Gc = a.grad_cy if a.grad_cy is not None else et.zeros_like(cx)
    si, sf, so = i * (1 - i), f * (1 - f), o * (1 - o)
    dgt = 1 - gt * gt
    dtc = 1 - tc * tc
    dct = Gc + Gh * o * dtc
    if ug is None:
        ug = et.zeros_like(A)
    if ucx is None:
        ucx = et.zeros_like(cx)
    Ui, Uf, Ug, Uo = ug.chunk(4, 1)
    U_dct = Ui * gt * si + Uf * cx * sf + Ug * i * dgt + ucx * f
    d_gc = U_dct
    d_gh = U_dct * o * dtc + Uo * tc * so
    U_c = (Uo * Gh * so - 2 * U_dct * Gh * o * tc) * dtc
    U_o = U_dct * Gh * dtc + Uo * Gh * tc * (1 - 2 * o)
    U_i = Ui * dct * gt * (1 - 2 * i) + Ug * dct * dgt + U_c * gt
    U_f = Uf * dct * cx * (1 - 2 * f) + ucx * dct + U_c * cx
    U_g = Ui * dct * si - 2 * Ug * dct * i * gt + U_c * i
    d_cx = Uf * dct * sf + U_c * f
    dA = et.cat([U_i * si, U_f * sf, U_g * dgt, U_o * so], 1)
    return d_gh, d_gc, dA, dA, d_cx


@vjp("gru_cell_fused", save=(0, 1, 2))
def _gru_cell_fused(c, g):
    a = c.args
    return et.gru_cell_backward(g, a.input_gates, a.hidden_gates, a.hx)


@vjp("gru_cell_backward", save=(0, 1, 2, 3))
def _gru_cell_backward(c, g):
    """Second derivatives of the GRU cell, by hand, through ``dn = G (1 - z)(1 - n^2)``,
    ``dz = G (hx - n) sz``, ``dr = dn hn sr``, ``grad_input_gates = [dr, dz, dn]``,
    ``grad_hidden_gates = [dr, dz, dn r]``, ``grad_hx = G z``."""
    a = c.args
    ugi, ugh, uhx = g
    G, hx = a.grad_hy, a.hx
    xr, xz, xn = a.input_gates.chunk(3, 1)
    hr, hz, hn = a.hidden_gates.chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    sr, sz, dnt = r * (1 - r), z * (1 - z), 1 - n * n
    dn = G * (1 - z) * dnt
    if ugi is None:
        ugi = et.zeros_like(a.input_gates)
    if ugh is None:
        ugh = et.zeros_like(a.hidden_gates)
    if uhx is None:
        uhx = et.zeros_like(hx)
    ui_r, ui_z, ui_n = ugi.chunk(3, 1)
    uh_r, uh_z, uh_n = ugh.chunk(3, 1)
    U_r = ui_r + uh_r
    U_z = ui_z + uh_z
    U_dn = ui_n + uh_n * r + U_r * hn * sr
    d_G = U_dn * (1 - z) * dnt + U_z * (hx - n) * sz + uhx * z
    d_hx = U_z * G * sz
    B_z = -U_dn * G * dnt + U_z * G * (hx - n) * (1 - 2 * z) + uhx * G
    B_n = -2 * U_dn * G * (1 - z) * n - U_z * G * sz
    a_n = B_n * dnt
    B_r = U_r * dn * hn * (1 - 2 * r) + uh_n * dn + a_n * hn
    B_hn = U_r * dn * sr + a_n * r
    pre_r, pre_z = B_r * sr, B_z * sz
    return d_G, et.cat([pre_r, pre_z, a_n], 1), et.cat([pre_r, pre_z, B_hn], 1), d_hx


@vjp("split_with_sizes", complex="linear")
def _split_with_sizes(c, g):
    a = c.args
    if len(a.split_sizes) == 1:  # one piece: the engine hands its gradient, not a 1-tuple
        return (g,)
    shape = c.meta[0][0]
    dim = a.dim % len(shape)
    like = next(x for x in g if x is not None)
    # a run of pieces without a gradient is one block of zeros (a split of which one piece is
    # used made as many zero tensors as pieces)
    parts, gap = [], 0
    for gi, n in zip(g, a.split_sizes):
        if gi is None:
            gap += n
            continue
        if gap:
            parts.append(_zeros_along(shape, dim, gap, like))
            gap = 0
        parts.append(gi)
    if gap:
        parts.append(_zeros_along(shape, dim, gap, like))
    return (et.cat(parts, dim),)


def _zeros_along(shape, dim: int, n: int, like):
    """Zeros of ``shape`` with ``n`` along ``dim``, of ``like``'s dtype and device."""
    s = list(shape)
    s[dim] = n
    return et.zeros(s, dtype=like.dtype, device=like.device)


# --------------------------------------------------------------------------- CTC
@vjp("_ctc_loss", save=(0, 1))
def _ctc_loss(c, g):
    a = c.args
    return (_ctc_loss_bw(g, a.log_probs, a.targets, a.input_lengths,
                                  a.target_lengths, a.blank, a.zero_infinity),)


@vjp("_ctc_loss_backward", save=(0, 1, 2))
def _ctc_loss_backward(c, g):
    a = c.args
    if c.needs[1]:
        raise RuntimeError("the derivative for '_ctc_loss_backward' with respect to "
                           "log_probs is not implemented (ctc_loss is differentiable once "
                           "in its log_probs)")
    jac = _ctc_loss_bw(et.ones_like(a.grad), a.log_probs, a.targets, a.input_lengths,
                                a.target_lengths, a.blank, a.zero_infinity)
    prod = g * jac
    return (prod.sum((0, 2)) if prod.dim() == 3 else prod.sum(),)


# --------------------------------------------------------------------------- softmax family
_softmax_bw = OPS["_softmax_backward_data"].public
_log_softmax_bw = OPS["_log_softmax_backward_data"].public
_ce_bw = OPS["_cross_entropy_loss_backward"].public


def _np_to_dtype(npdt):
    return dtype_of(npdt)


@vjp("_softmax", out=True)
def _softmax(c, g):
    return (_softmax_bw(g, c.out, c.args.dim, _np_to_dtype(c.meta[0][1])),)


@vjp("_log_softmax", out=True)
def _log_softmax(c, g):
    return (_log_softmax_bw(g, c.out, c.args.dim, _np_to_dtype(c.meta[0][1])),)


def _sdim(a):
    return a.dim if a.output.dim() else 0


@vjp("_softmax_backward_data", save=(0, 1))
def _softmax_backward_data(c, g):
    """``dx = y (go - sum(go y))`` is bilinear in ``(go, y)``: for the upstream ``u``,
    ``d go = y (u - sum(u y))`` (the same map) and ``d y = u (go - sum(go y)) - go sum(u y)``."""
    a = c.args
    y, go = a.output, a.grad_output
    dim = _sdim(a)
    d_go = d_y = None
    if c.needs[0]:
        d_go = _softmax_bw(g, y, a.dim, y.dtype)
    if c.needs[1]:
        d_y = g * (go - (go * y).sum(dim, keepdim=True)) - go * (g * y).sum(dim, keepdim=True)
    return d_go, d_y


@vjp("_log_softmax_backward_data", save=(0, 1))
def _log_softmax_backward_data(c, g):
    """``dx = go - exp(y) sum(go)``: ``d go = u - sum(u exp(y))``, ``d y = -u exp(y) sum(go)``."""
    a = c.args
    y, go = a.output, a.grad_output
    dim = _sdim(a)
    ey = y.exp()
    d_go = g - (g * ey).sum(dim, keepdim=True) if c.needs[0] else None
    d_y = -g * ey * go.sum(dim, keepdim=True) if c.needs[1] else None
    return d_go, d_y


# --------------------------------------------------------------------------- cross entropy
_ln_bw = OPS["native_layer_norm_backward"].public


def _ln_dims(x, ns):
    """(the normalized dims, the leading dims, the row length) of a layer norm over ``ns``."""
    nd = 1 if isinstance(ns, int) else len(ns)
    n = 1
    for s in x.shape[x.dim() - nd:]:
        n *= s
    return tuple(range(x.dim() - nd, x.dim())), tuple(range(x.dim() - nd)), n


@vjp("native_layer_norm", save=_args("native_layer_norm", "input", "weight"), out=True,
     outputs=(0,))
def _native_layer_norm(c, g):
    """``native_layer_norm_backward`` (one kernel). As in PyTorch, the ``mean`` and ``rstd``
    outputs are not differentiable."""
    a = c.args
    _, mean, rstd = c.out
    gx, gw, gb = _ln_bw(g[0], a.input, a.normalized_shape, mean, rstd, a.weight, None,
                        [c.needs[0], c.needs[2], c.needs[3]])
    return gx, None, gw, gb, None


@vjp("native_layer_norm_backward", save=_args("native_layer_norm_backward", "grad_out", "input",
                                                "mean", "rstd", "weight"))
def _native_layer_norm_backward(c, g):
    """Double backward, ``mean`` and ``rstd`` taken as the functions of the input they are (as
    in PyTorch's ``layer_norm_double_backward``). Per row (sums S over the normalized dims, n
    elements), with ``xhat = (x - mean) rstd``, ``gh = go * weight``, ``gx = rstd (gh - S(gh)/n
    - xhat S(gh xhat)/n)``, ``gweight = sum over rows of go xhat``, ``gbias = sum of go``, and
    ``u``, ``v``, ``t`` their incoming gradients: ``d gh = rstd (u - S(u)/n - xhat
    S(u xhat)/n)``, ``d xhat = -rstd (u S(gh xhat) + gh S(u xhat))/n + v go``, ``d rstd =
    S(u gh) - S(u) S(gh)/n - S(u xhat) S(gh xhat)/n + S(d xhat (x - mean))``, ``d mean = -rstd
    S(d xhat)``; then ``d x = rstd d xhat + d mean / n - d rstd rstd^2 xhat / n``, ``d go =
    d gh weight + v xhat + t``, ``d weight = sum over rows of d gh go``."""
    a = c.args
    go, x, mean, rstd, w = a.grad_out, a.input, a.mean, a.rstd, a.weight
    u, v, t = g
    dims, lead, n = _ln_dims(x, a.normalized_shape)
    xh = (x - mean) * rstd
    gh = go if w is None else go * w
    d_gh = d_xh = d_r = None
    if u is not None:
        su = u.sum(dims, keepdim=True)
        sux = (u * xh).sum(dims, keepdim=True)
        p = (gh * xh).sum(dims, keepdim=True)
        d_gh = rstd * (u - su / n - xh * sux / n)
        d_xh = -(rstd / n) * (u * p + gh * sux)
        d_r = (u * gh).sum(dims, keepdim=True) - su * gh.sum(dims, keepdim=True) / n - sux * p / n
    if v is not None:
        d_xh = v * go if d_xh is None else d_xh + v * go
    d_go = d_w = d_x = None
    if c.needs[0]:
        parts = [d_gh if w is None or d_gh is None else d_gh * w,
                 None if v is None else v * xh, None if t is None else t.expand(go.shape)]
        parts = [q for q in parts if q is not None]
        d_go = sum(parts[1:], parts[0]) if parts else None
    if c.needs[5] and d_gh is not None:
        d_w = (d_gh * go).sum(lead) if lead else d_gh * go
    if c.needs[1] and d_xh is not None:
        # xhat's own dependence on x, then through mean (d mean / d x = 1/n) and rstd
        # (d rstd / d x = -rstd^2 xhat / n)
        d_r = d_r + (d_xh * xh).sum(dims, keepdim=True) / rstd if d_r is not None else \
            (d_xh * xh).sum(dims, keepdim=True) / rstd
        d_mean = -rstd * d_xh.sum(dims, keepdim=True)
        d_x = d_xh * rstd + d_mean / n - d_r * rstd * rstd * xh / n
    return d_go, d_x, None, None, None, d_w, None, None


@vjp("cross_entropy_loss", save=(0, 1, 2))
def _cross_entropy_loss(c, g):
    a = c.args
    if c.needs[2]:
        raise RuntimeError("the derivative for 'weight' is not implemented (cross_entropy_loss)")
    return (_ce_bw(g, a.input, a.target, a.weight, a.reduction, a.ignore_index,
                   a.label_smoothing),)


@vjp("_cross_entropy_loss_backward", save=(0, 1, 2, 3))
def _cross_entropy_loss_backward(c, g):
    """The gradient ``dx = k (s p - h)`` per row, with ``p = softmax(x)``, the loss gradient
    ``k`` per row, ``s = (1 - eps) w[t] + eps/C sum(w)`` and ``h`` the (smoothed, weighted)
    one-hot target: linear in ``k``, so ``d grad_output`` is ``<u, dx>`` at unit ``k`` (the op
    itself at reduction none, reduced as the loss was), and ``d input`` is softmax's backward
    of ``u`` scaled by ``k s``."""
    a = c.args
    if c.needs[3]:
        raise RuntimeError("the derivative for 'weight' is not implemented "
                           "(_cross_entropy_loss_backward)")
    x, go = a.input, a.grad_output
    cdim = 0 if x.dim() == 1 else 1
    unit_rows = et.ones(tuple(a.target.shape), dtype=x.dtype, device=x.device)
    unit = _ce_bw(unit_rows, x, a.target, a.weight, 0, a.ignore_index, a.label_smoothing)
    d_go = d_x = None
    r = {"none": 0, "mean": 1, "sum": 2}.get(a.reduction, a.reduction)
    if c.needs[0]:
        per_row = (g * unit).sum(cdim)
        if r == 0:
            d_go = per_row
        else:
            total = per_row.sum()
            if r == 1:
                total = total / _ce_mean_denominator(a, x)
            d_go = total.reshape(go.shape)
    if c.needs[1]:
        ks = _ce_row_scale(a, x, go, r)
        p = OPS["_softmax"].public(x, cdim, False)
        d_x = _softmax_bw(g * ks, p, cdim, x.dtype)
    return d_go, d_x


def _ce_valid_weights(a, x):
    """``w[t]`` on counted targets, 0 on ignored ones (the target's shape), and ``sum(w)``."""
    t = a.target
    valid = t != a.ignore_index
    safe = et.where(valid, t, et.zeros_like(t))
    if a.weight is None:
        wt = valid.to(x.dtype)
        C = x.shape[0 if x.dim() == 1 else 1]
        return wt, float(C), valid
    w = a.weight.detach().to(x.dtype)
    wt = w.index_select(0, safe.reshape(-1)).reshape(tuple(t.shape)) * valid.to(x.dtype)
    return wt, w.sum(), valid


def _ce_mean_denominator(a, x):
    """The mean's divisor: the summed weights of the counted targets (without a weight, their
    count: one comparison and one count)."""
    if a.weight is None:
        return et.count_nonzero(a.target != a.ignore_index)
    wt, _, _ = _ce_valid_weights(a, x)
    return wt.sum()


def _ce_row_scale(a, x, go, r):
    """``k s`` per row, broadcastable against the input (class dim kept as size 1)."""
    eps = float(a.label_smoothing)
    wt, wsum, valid = _ce_valid_weights(a, x)
    C = x.shape[0 if x.dim() == 1 else 1]
    s = (1 - eps) * wt + (eps / C) * wsum * valid.to(x.dtype)
    if r == 0:
        k = go
    elif r == 2:
        k = go.reshape(())
    else:
        k = go.reshape(()) / wt.sum()
    ks = k * s
    return ks.unsqueeze(0 if x.dim() == 1 else 1)


# --------------------------------------------------------------------------- nll loss
_nll_fw = OPS["nll_loss_forward"].public
_nll_bw = OPS["nll_loss_backward"].public
_REDUCTION = {"none": 0, "mean": 1, "sum": 2}


@vjp("nll_loss_forward", save=(0, 1, 2))
def _nll_loss_forward(c, g):
    """The loss's gradient is ``nll_loss_backward``; ``total_weight`` (the mean's divisor,
    which that op reads) is recomputed from the target and weight for the mean, and the
    ``total_weight`` output, a function of them alone, passes no gradient on."""
    a = c.args
    if c.needs[2]:
        raise RuntimeError("the derivative for 'weight' is not implemented (nll_loss_forward)")
    go = g[0]
    if go is None:
        return (None,)
    x = a.input
    if _REDUCTION.get(a.reduction, a.reduction) == 1:
        total = _ce_mean_denominator(a, x)
    else:  # not read
        total = et.zeros((), dtype=x.dtype, device=x.device)
    return (_nll_bw(go, x, a.target, a.weight, a.reduction, a.ignore_index, total),)


@vjp("nll_loss_backward", save=(2, 3, 6))
def _nll_loss_backward(c, g):
    """``nll_loss_backward`` is linear in ``grad_output`` and reads only the input's shape:
    ``d grad_output`` is the loss of the upstream ``u`` itself (summed, then divided by the
    same ``total_weight`` for the mean), ``d input`` is zero."""
    a = c.args
    if c.needs[3]:
        raise RuntimeError("the derivative for 'weight' is not implemented (nll_loss_backward)")
    if not c.needs[0]:
        return (None,)
    r = _REDUCTION.get(a.reduction, a.reduction)
    if r == 1:
        d_go = _nll_fw(g, a.target, a.weight, 2, a.ignore_index)[0] / a.total_weight
    else:
        d_go = _nll_fw(g, a.target, a.weight, r, a.ignore_index)[0]
    return (d_go.reshape(c.meta[0][0]),)


# --------------------------------------------------------------------------- packed sequences
_pack = OPS["_pack_padded_sequence"].public
_pack_bw = OPS["_pack_padded_sequence_backward"].public


def _sorted_lengths(batch_sizes, B: int):
    """The (decreasing) lengths of a packed batch of ``B`` sequences from its batch sizes."""
    steps = et.arange(B, device=batch_sizes.device)
    return (batch_sizes > steps.unsqueeze(1)).sum(1)


@vjp("_pack_padded_sequence", save=_args("_pack_padded_sequence", "lengths"))
def _pack_padded_sequence(c, g):
    a = c.args
    if g[0] is None:
        return (None,)
    lengths = a.lengths
    steps = et.arange(int(lengths.max()), device=lengths.device)
    batch_sizes = (lengths > steps.unsqueeze(1)).sum(1)  # running sequences per step
    return (_pack_bw(g[0], list(c.meta[0][0]), batch_sizes, a.batch_first),)


@vjp("_pack_padded_sequence_backward",
     save=_args("_pack_padded_sequence_backward", "batch_sizes"))
def _pack_padded_sequence_backward(c, g):
    """The scatter's derivative is the gather: the pack of the upstream gradient."""
    a = c.args
    size = list(a.input_size)
    lengths = _sorted_lengths(a.batch_sizes, size[0] if a.batch_first else size[1])
    return (_pack(g, lengths, a.batch_first)[0],)


@vjp("_pad_packed_sequence", save=_args("_pad_packed_sequence", "batch_sizes"))
def _pad_packed_sequence(c, g):
    """Padding places the packed rows: its derivative packs the padded gradient again."""
    a = c.args
    if g[0] is None:
        return (None,)
    B = g[0].shape[0 if a.batch_first else 1]
    return (_pack(g[0], _sorted_lengths(a.batch_sizes, B), a.batch_first)[0],)


# --------------------------------------------------------------------------- activations
# one *_backward op per activation; their own derivatives (double backward) below, written
# with ember ops: d/d grad is the backward op again, d/d x is grad * the second derivative
_silu_bw = OPS["silu_backward"].public
_gelu_bw = OPS["gelu_backward"].public
_softplus_bw = OPS["softplus_backward"].public
_elu_bw = OPS["elu_backward"].public
_hardsigmoid_bw = OPS["hardsigmoid_backward"].public
_hardswish_bw = OPS["hardswish_backward"].public
_mish_bw = OPS["mish_backward"].public
_log_sigmoid_bw = OPS["log_sigmoid_backward"].public
_KBETA = math.sqrt(2 / math.pi)
_KKAPPA = 0.044715


@vjp("silu", save=(0,))
def _silu(c, g):
    return (_silu_bw(g, c.args.input),)


@vjp("silu_backward", save=(0, 1))
def _silu_backward(c, g):
    go, x = c.args
    d_x = None
    if c.needs[1]:
        s = et.sigmoid(x)
        d_x = g * go * s * (1 - s) * (2 + x * (1 - 2 * s))
    return (_silu_bw(g, x) if c.needs[0] else None), d_x


@vjp("gelu", save=(0,))
def _gelu(c, g):
    return _gelu_bw(g, c.args.input, c.args.approximate), None


@vjp("gelu_backward", save=(0, 1))
def _gelu_backward(c, g):
    go, x, approximate = c.args
    d_x = None
    if c.needs[1]:
        if approximate == "tanh":
            t = et.tanh(_KBETA * (x + _KKAPPA * x * x * x))
            d1 = _KBETA * (1 + 3 * _KKAPPA * x * x)
            d2 = (1 - t * t) * (d1 - x * t * d1 * d1 + 3 * _KBETA * _KKAPPA * x * x)
        else:
            d2 = et.exp(-0.5 * x * x) * (1 / math.sqrt(2 * math.pi)) * (2 - x * x)
        d_x = g * go * d2
    return (_gelu_bw(g, x, approximate) if c.needs[0] else None), d_x, None


@vjp("softplus", save=(0,))
def _softplus(c, g):
    a = c.args
    return _softplus_bw(g, a.input, a.beta, a.threshold), None, None


@vjp("softplus_backward", save=(0, 1))
def _softplus_backward(c, g):
    go, x, beta, threshold = c.args
    d_x = None
    if c.needs[1]:
        bx = x * beta
        s = et.sigmoid(bx)
        d_x = et.where(bx > threshold, 0.0, g * go * beta * s * (1 - s))
    return (_softplus_bw(g, x, beta, threshold) if c.needs[0] else None), d_x, None, None


@vjp("elu", save=(0,))
def _elu(c, g):
    a = c.args
    return _elu_bw(g, a.alpha, a.scale, a.input_scale, False, a.input), None, None, None


@vjp("elu_backward", save=(0, 5))
def _elu_backward(c, g):
    go, alpha, scale, input_scale, is_result, v = c.args
    d_v = None
    if c.needs[5]:
        if is_result:  # d/dy of grad * input_scale * (y + alpha * scale)
            d_v = et.where(v <= 0, g * go * input_scale, 0.0)
        else:
            d_v = et.where(v <= 0, g * go * (input_scale * input_scale * alpha * scale) *
                           et.exp(v * input_scale), 0.0)
    d_go = _elu_bw(g, alpha, scale, input_scale, is_result, v) if c.needs[0] else None
    return d_go, None, None, None, None, d_v


@vjp("hardsigmoid", save=(0,))
def _hardsigmoid(c, g):
    return (_hardsigmoid_bw(g, c.args.input),)


@vjp("hardsigmoid_backward", save=(1,))
def _hardsigmoid_backward(c, g):  # piecewise linear: no second derivative
    return (_hardsigmoid_bw(g, c.args.input) if c.needs[0] else None), None


@vjp("hardswish", save=(0,))
def _hardswish(c, g):
    return (_hardswish_bw(g, c.args.input),)


@vjp("hardswish_backward", save=(0, 1))
def _hardswish_backward(c, g):
    go, x = c.args
    d_x = et.where((x > -3) & (x < 3), g * go / 3, 0.0) if c.needs[1] else None
    return (_hardswish_bw(g, x) if c.needs[0] else None), d_x


@vjp("mish", save=(0,))
def _mish(c, g):
    return (_mish_bw(g, c.args.input),)


@vjp("mish_backward", save=(0, 1))
def _mish_backward(c, g):
    """With ``s = sigmoid(x)``, ``t = tanh(softplus(x))``: the second derivative is
    ``(1 - t^2) s (2 + x (1 - s - 2 t s))``."""
    go, x = c.args
    d_x = None
    if c.needs[1]:
        s = et.sigmoid(x)
        t = et.tanh(et.softplus(x))
        d_x = g * go * (1 - t * t) * s * (2 + x * (1 - s - 2 * t * s))
    return (_mish_bw(g, x) if c.needs[0] else None), d_x


@vjp("log_sigmoid", save=(0,))
def _log_sigmoid(c, g):
    x = c.args.input
    return (_log_sigmoid_bw(g, x, x),)


@vjp("log_sigmoid_backward", save=(0, 1))
def _log_sigmoid_backward(c, g):
    go, x, _ = c.args
    d_x = None
    if c.needs[1]:
        s = et.sigmoid(x)
        d_x = -(g * go * s * (1 - s))
    return (_log_sigmoid_bw(g, x, x) if c.needs[0] else None), d_x, None


# --------------------------------------------------------------------------- cummax / cummin
# (ops of ``ember.tensor._extra_ops``: the values' gradient goes back to the positions the
# indices name, added where one element is the running extreme of several)
@vjp("cummax", "cummin", out=True)
def _cummax(c, g):
    gv = g[0] if isinstance(g, (tuple, list)) else g
    if not c.meta[0][0]:  # a 0-d input: its value is its running extreme
        return (gv,)
    return (et.zeros(c.meta[0][0], dtype=gv.dtype, device=gv.device)
            .scatter_add_(c.args.dim, c.out[1], gv),)
