"""Per-example programs of the kind ported from PyTorch research code (recursive nets, RNNs over
variable lengths, parsers, attention over variable-length sets, per-example losses, small MLPs),
each run twice from the same seed and parameters: eagerly, and inside ``autobatch()``. Losses
and every parameter's gradient must agree (float32 within rounding, float64 tightly); random
ops are compared by their statistics; bad input raises PyTorch's exception naming the op.

Written with the public API only, the way a PyTorch user writes it (``ember.tensor`` as torch,
``ember.nn``, ``ember.nn.functional``, ``ember.optim``)."""
from __future__ import annotations

import random

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as T
from ember.autograd import autobatch, no_grad
from ember.autograd.autobatch import flush

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-11)}
DT = {"float32": T.float32, "float64": T.float64}


def _grads(model):
    out = {}
    for name, p in model.named_parameters():
        out[name] = None if p.grad is None else p.grad.numpy().copy()
    return out


def run_pair(make, program, dtype="float32", backward_inside=False, seed=0):
    """``make()`` builds (model, data) from a fixed seed; ``program(model, data)`` returns the
    loss. Runs it eagerly and inside autobatch on identical parameters, compares the loss and
    every parameter's gradient, and returns both results."""
    results = []
    for batched in (False, True):
        T.manual_seed(seed)
        model, data = make()
        model.to(DT[dtype])
        model.zero_grad()
        if batched:
            with autobatch() as ctx:
                loss = program(model, data)
                if backward_inside:
                    loss.backward()
            assert ctx.stats["calls"] > 0
        else:
            loss = program(model, data)
            if backward_inside:
                loss.backward()
        if not backward_inside:
            loss.backward()
        assert loss.dtype == DT[dtype]
        results.append((loss.item(), _grads(model)))
    (l0, g0), (l1, g1) = results
    np.testing.assert_allclose(l1, l0, **TOL[dtype])
    assert g0.keys() == g1.keys()
    for name in g0:
        if g0[name] is None:
            # a parameter the loss never reaches: None eagerly; autobatch may leave zeros
            assert g1[name] is None or not np.any(g1[name]), name
            continue
        assert g1[name] is not None, name
        np.testing.assert_allclose(g1[name], g0[name], err_msg=name, **TOL[dtype])
    return results


def seqs(rng, n, vocab, lo=1, hi=9):
    return [T.tensor(rng.integers(0, vocab, rng.integers(lo, hi)).tolist()) for _ in range(n)]


# ---------------------------------------------------------------------------- RNN classifiers
class SeqClassifier(nn.Module):
    """Embedding -> per-step RNN cell over one sequence -> Linear -> class logits."""

    def __init__(self, cell, vocab=20, emb=6, hidden=7, classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.cell_kind = cell
        self.cell = {"gru": nn.GRUCell, "lstm": nn.LSTMCell, "rnn": nn.RNNCell,
                     "rnn_relu": lambda i, h: nn.RNNCell(i, h, nonlinearity="relu")}[cell](
            emb, hidden)
        self.out = nn.Linear(hidden, classes)
        self.hidden = hidden

    def encode(self, ids):
        xs = self.emb(ids)                       # (L, E)
        h = T.zeros(1, self.hidden, dtype=xs.dtype)
        c = T.zeros(1, self.hidden, dtype=xs.dtype)
        for t in range(ids.shape[0]):
            x = xs[t].unsqueeze(0)
            if self.cell_kind == "lstm":
                h, c = self.cell(x, (h, c))
            else:
                h = self.cell(x, h)
        return h

    def forward(self, ids):
        return self.out(self.encode(ids))


def make_classifier(cell, n=7):
    def make():
        rng = np.random.default_rng(1)
        model = SeqClassifier(cell)
        data = [(s, int(rng.integers(0, 4))) for s in seqs(rng, n, 20)]
        return model, data
    return make


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("cell", ["gru", "lstm", "rnn", "rnn_relu"])
def test_rnn_classifier_variable_lengths(cell, dtype):
    def program(model, data):
        losses = [F.cross_entropy(model(ids), T.tensor([y])) for ids, y in data]
        return T.stack(losses).mean()
    run_pair(make_classifier(cell), program, dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_rnn_classifier_python_sum_of_losses(reduction):
    def program(model, data):
        losses = []
        for ids, y in data:
            logits = model(ids)
            loss = F.cross_entropy(logits, T.tensor([y]), reduction=reduction)
            losses.append(loss.sum() if reduction == "none" else loss)
        return sum(losses) / len(losses)
    run_pair(make_classifier("gru"), program)


def test_rnn_classifier_backward_inside_context():
    def program(model, data):
        return T.stack([F.cross_entropy(model(ids), T.tensor([y])) for ids, y in data]).sum()
    run_pair(make_classifier("lstm"), program, backward_inside=True)


def test_rnn_all_steps_loss_language_model():
    """Per-step next-token loss of every sequence (an LM over variable lengths), log_softmax +
    nll_loss, outputs collected in a list then cat."""
    def make():
        rng = np.random.default_rng(2)
        return SeqClassifier("gru", classes=20), seqs(rng, 6, 20, 2, 10)

    def program(model, data):
        total = 0
        for ids in data:
            xs = model.emb(ids)
            h = T.zeros(1, model.hidden)
            outs = []
            for t in range(len(ids) - 1):
                h = model.cell(xs[t:t + 1], h)
                outs.append(h)
            logp = F.log_softmax(model.out(T.cat(outs, 0)), dim=-1)
            total = total + F.nll_loss(logp, ids[1:], reduction="sum")
        return total / len(data)
    run_pair(make, program)


def test_bidirectional_gru_encoder_with_flip():
    def make():
        rng = np.random.default_rng(3)
        m = nn.Module()
        m.emb = nn.Embedding(15, 5)
        m.fwd = nn.GRUCell(5, 4)
        m.bwd = nn.GRUCell(5, 4)
        m.out = nn.Linear(8, 3)
        return m, [(s, int(rng.integers(0, 3))) for s in seqs(rng, 6, 15, 1, 7)]

    def program(m, data):
        losses = []
        for ids, y in data:
            xs = m.emb(ids)
            hf, hb = T.zeros(1, 4), T.zeros(1, 4)
            fs, bs = [], []
            for t in range(xs.size(0)):
                hf = m.fwd(xs[t].view(1, -1), hf)
                fs.append(hf)
            for t in reversed(range(xs.size(0))):
                hb = m.bwd(xs[t].view(1, -1), hb)
                bs.append(hb)
            hs = T.cat([T.cat(fs, 0), T.cat(bs[::-1], 0)], dim=1)      # (L, 8)
            pooled = hs.max(dim=0)[0]                                   # (8,)
            losses.append(F.cross_entropy(m.out(pooled).unsqueeze(0), T.tensor([y])))
        return T.stack(losses).mean()
    run_pair(make, program)


# ---------------------------------------------------------------------------- recursive nets
def random_tree(prng, n):
    if n == 1:
        return prng.randrange(30)
    k = prng.randint(1, n - 1)
    return (random_tree(prng, k), random_tree(prng, n - k))


class RvNN(nn.Module):
    """A Socher-style recursive net with a per-node sentiment loss."""

    def __init__(self, dim=6, classes=3, bias=True):
        super().__init__()
        self.emb = nn.Embedding(30, dim)
        self.comp = nn.Linear(2 * dim, dim, bias=bias)
        self.cls = nn.Linear(dim, classes)

    def node(self, tree, losses, label):
        if isinstance(tree, tuple):
            h = T.tanh(self.comp(T.cat([self.node(tree[0], losses, label),
                                        self.node(tree[1], losses, label)], dim=-1)))
        else:
            h = self.emb(T.tensor([tree]))
        losses.append(F.cross_entropy(self.cls(h), T.tensor([label])))
        return h


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_recursive_net_per_node_losses(bias, dtype):
    def make():
        prng = random.Random(4)
        return RvNN(bias=bias), [(random_tree(prng, prng.randint(1, 9)), prng.randrange(3))
                                 for _ in range(6)]

    def program(m, data):
        losses = []
        for tree, label in data:
            m.node(tree, losses, label)
        return sum(losses) / len(losses)
    run_pair(make, program, dtype)


class TreeLSTMCellModel(nn.Module):
    """Child-sum Tree-LSTM over n-ary trees (Tai et al.), nested tuples/lists as trees."""

    def __init__(self, dim=5, hidden=6):
        super().__init__()
        self.hidden = hidden
        self.emb = nn.Embedding(30, dim)
        self.ioux = nn.Linear(dim, 3 * hidden)
        self.iouh = nn.Linear(hidden, 3 * hidden, bias=False)
        self.fx = nn.Linear(dim, hidden)
        self.fh = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 2)

    def node(self, tree):
        word, children = tree
        x = self.emb(T.tensor([word]))                                   # (1, D)
        if children:
            states = [self.node(c) for c in children]
            hs = T.cat([s[0] for s in states], 0)                        # (k, H)
            cs = T.cat([s[1] for s in states], 0)
        else:
            hs = T.zeros(1, self.hidden)
            cs = T.zeros(1, self.hidden)
        h_sum = T.sum(hs, dim=0, keepdim=True)
        i, o, u = T.split(self.ioux(x) + self.iouh(h_sum), self.hidden, dim=1)
        i, o, u = T.sigmoid(i), T.sigmoid(o), T.tanh(u)
        f = T.sigmoid(self.fh(hs) + self.fx(x).repeat(len(hs), 1))
        c = i * u + T.sum(f * cs, dim=0, keepdim=True)
        h = o * T.tanh(c)
        return h, c


def random_nary(prng, depth=0):
    k = 0 if depth > 2 else prng.randint(0, 3)
    return (prng.randrange(30), [random_nary(prng, depth + 1) for _ in range(k)])


def test_child_sum_tree_lstm():
    def make():
        prng = random.Random(5)
        return TreeLSTMCellModel(), [(random_nary(prng), prng.randrange(2)) for _ in range(6)]

    def program(m, data):
        losses = [F.cross_entropy(m.out(m.node(t)[0]), T.tensor([y])) for t, y in data]
        return T.stack(losses).mean()
    run_pair(make, program)


# ---------------------------------------------------------------------------- attention
class SetAttention(nn.Module):
    """Attention pooling over a variable-length set of feature vectors, then a classifier."""

    def __init__(self, d=6, classes=3):
        super().__init__()
        self.q = nn.Parameter(T.randn(d))
        self.key = nn.Linear(d, d, bias=False)
        self.val = nn.Linear(d, d)
        self.out = nn.Linear(d, classes)


def make_sets(n=7, d=6, lo=1, hi=8):
    def make():
        rng = np.random.default_rng(6)
        data = [(T.tensor(rng.standard_normal((int(rng.integers(lo, hi)), d)),
                          dtype=T.float32), int(rng.integers(0, 3))) for _ in range(n)]
        return SetAttention(d), data
    return make


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_attention_over_variable_length_sets(dtype):
    def program(m, data):
        losses = []
        for x, y in data:
            x = x.to(m.q.dtype)
            k, v = m.key(x), m.val(x)                          # (L, d)
            scores = k @ m.q / m.q.shape[0] ** 0.5             # (L,)
            a = F.softmax(scores, dim=0)
            pooled = (a.unsqueeze(1) * v).sum(0)               # (d,)
            losses.append(F.cross_entropy(m.out(pooled)[None], T.tensor([y])))
        return T.stack(losses).mean()
    run_pair(make_sets(), program, dtype)


def test_attention_padded_with_masked_fill():
    """Pad every set to the longest, mask the padding with masked_fill(-inf) before softmax."""
    def program(m, data):
        L = max(x.shape[0] for x, _ in data)
        losses = []
        for x, y in data:
            n = x.shape[0]
            xp = T.cat([x, T.zeros(L - n, x.shape[1])], 0) if n < L else x
            mask = T.arange(L) >= n
            scores = T.matmul(m.key(xp), m.q)
            scores = scores.masked_fill(mask, float("-inf"))
            a = T.softmax(scores, -1)
            pooled = T.einsum("l,ld->d", a, m.val(xp))
            losses.append(F.cross_entropy(m.out(pooled).view(1, -1), T.tensor([y])))
        return T.stack(losses).sum()
    run_pair(make_sets(), program)


def test_scaled_dot_product_self_attention_bmm():
    """Per-example multi-head self attention written with view/transpose/bmm."""
    def make():
        rng = np.random.default_rng(7)
        m = nn.Module()
        m.qkv = nn.Linear(8, 24)
        m.proj = nn.Linear(8, 8)
        m.norm = nn.LayerNorm(8)
        data = [T.tensor(rng.standard_normal((int(rng.integers(1, 6)), 8)), dtype=T.float32)
                for _ in range(6)]
        return m, data

    def program(m, data):
        heads, dh = 2, 4
        outs = []
        for x in data:
            L = x.size(0)
            q, k, v = m.qkv(x).chunk(3, dim=-1)
            q = q.view(L, heads, dh).transpose(0, 1)          # (h, L, dh)
            k = k.reshape(L, heads, dh).permute(1, 2, 0)      # (h, dh, L)
            v = v.view(L, heads, dh).transpose(0, 1)
            att = T.bmm(q, k) * (dh ** -0.5)
            att = att.softmax(dim=-1)
            y = T.bmm(att, v).transpose(0, 1).contiguous().view(L, heads * dh)
            y = m.norm(x + m.proj(y))
            outs.append(y.pow(2).mean())
        return T.stack(outs).mean()
    run_pair(make, program)


def test_nn_multihead_attention_per_example():
    def make():
        rng = np.random.default_rng(8)
        m = nn.Module()
        m.att = nn.MultiheadAttention(8, 2)
        m.out = nn.Linear(8, 1)
        data = [T.tensor(rng.standard_normal((int(rng.integers(1, 6)), 1, 8)), dtype=T.float32)
                for _ in range(5)]
        return m, data

    def program(m, data):
        losses = []
        for x in data:
            y, w = m.att(x, x, x)
            losses.append(m.out(y).mean() + w.sum() * 0.1)
        return T.stack(losses).sum()
    run_pair(make, program)


# ---------------------------------------------------------------------------- per-example losses
class MLP(nn.Module):
    def __init__(self, d_in=5, hidden=8, d_out=3, act="relu", norm=False, bias=True, p=0.0):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden, bias=bias)
        self.norm = nn.LayerNorm(hidden) if norm else nn.Identity()
        self.act = {"relu": nn.ReLU(), "gelu": nn.GELU(), "tanh": nn.Tanh(),
                    "sigmoid": nn.Sigmoid(), "elu": nn.ELU(), "leaky": nn.LeakyReLU(0.1),
                    "silu": nn.SiLU(), "softplus": nn.Softplus()}[act]
        self.drop = nn.Dropout(p)
        self.fc2 = nn.Linear(hidden, d_out, bias=bias)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.norm(self.fc1(x)))))


def make_mlp(n=8, rows=None, d_out=3, **kw):
    def make():
        rng = np.random.default_rng(9)
        xs = []
        for _ in range(n):
            shape = (5,) if rows is None else (int(rng.integers(1, rows + 1)), 5)
            xs.append(T.tensor(rng.standard_normal(shape), dtype=T.float32))
        ys = [int(rng.integers(0, d_out)) for _ in range(n)]
        return MLP(d_out=d_out, **kw), list(zip(xs, ys))
    return make


@pytest.mark.parametrize("act", ["relu", "gelu", "tanh", "sigmoid", "elu", "leaky", "silu",
                                 "softplus"])
@pytest.mark.parametrize("norm", [False, True])
def test_mlp_activations_and_layernorm(act, norm):
    def program(m, data):
        return sum(F.cross_entropy(m(x).unsqueeze(0), T.tensor([y])) for x, y in data)
    run_pair(make_mlp(act=act, norm=norm), program)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("loss", ["ce_index", "ce_prob", "nll", "mse", "bce_logits", "l1",
                                  "smooth_l1", "bce", "kl_div", "huber"])
def test_per_example_losses(loss, reduction):
    """Each example: a (rows, 3) output for its own number of rows, a per-example loss."""
    def program(m, data):
        losses = []
        for x, y in data:
            out = m(x)                                             # (r, 3)
            r = out.shape[0]
            if loss == "ce_index":
                l = F.cross_entropy(out, T.full((r,), y, dtype=T.int64), reduction=reduction)
            elif loss == "ce_prob":
                target = T.softmax(T.arange(3, dtype=out.dtype) * (y - 1), 0).expand(r, 3)
                l = F.cross_entropy(out, target, reduction=reduction)
            elif loss == "nll":
                l = F.nll_loss(F.log_softmax(out, dim=1), T.tensor([y] * r),
                               reduction=reduction)
            elif loss == "mse":
                l = F.mse_loss(out, T.ones(r, 3) * y, reduction=reduction)
            elif loss == "bce_logits":
                target = (T.arange(3) == y).float().repeat(r, 1)
                l = F.binary_cross_entropy_with_logits(out, target, reduction=reduction)
            elif loss == "bce":
                target = (T.arange(3) == y).to(out.dtype).unsqueeze(0).expand_as(out)
                l = F.binary_cross_entropy(T.sigmoid(out), target, reduction=reduction)
            elif loss == "l1":
                l = F.l1_loss(out, T.zeros_like(out) + y, reduction=reduction)
            elif loss == "smooth_l1":
                l = F.smooth_l1_loss(out, T.zeros_like(out) + y, reduction=reduction)
            elif loss == "huber":
                l = F.huber_loss(out, T.zeros_like(out) + y, reduction=reduction, delta=0.5)
            else:
                target = T.softmax(T.arange(3, dtype=out.dtype) * y, 0).expand(r, 3)
                l = F.kl_div(F.log_softmax(out, -1), target,
                             reduction="batchmean" if reduction == "mean" else reduction)
            losses.append(l.mean() if reduction == "none" else l)
        return T.stack(losses).mean()
    run_pair(make_mlp(rows=4), program)


def test_per_example_loss_with_nn_loss_modules():
    def program(m, data):
        ce, mse = nn.CrossEntropyLoss(), nn.MSELoss(reduction="sum")
        bce = nn.BCEWithLogitsLoss()
        total = T.zeros(())
        for x, y in data:
            out = m(x)
            total = total + ce(out.unsqueeze(0), T.tensor([y])) + 0.1 * mse(out, T.ones(3))
            total = total + bce(out[y], T.tensor(1.0))
        return total
    run_pair(make_mlp(), program)


def test_mlp_float64_with_dropout_eval():
    def program(m, data):
        m.eval()
        return T.stack([F.cross_entropy(m(x.double())[None], T.tensor([y]))
                        for x, y in data]).mean()
    run_pair(make_mlp(p=0.5, norm=True, act="gelu"), program, "float64")


def test_dropout_train_statistics():
    """Dropout(p) in train mode: each example draws its own mask; the kept fraction and the
    scaling by 1 / (1 - p) are those of the unbatched run."""
    p = 0.3
    drop = nn.Dropout(p)
    drop.train()
    xs = [T.ones(50, 20) * (i + 1) for i in range(8)]
    T.manual_seed(0)
    with autobatch():
        ys = [drop(x) for x in xs]
    masks = []
    for i, y in enumerate(ys):
        v = y.numpy()
        kept = v != 0
        np.testing.assert_allclose(v[kept], (i + 1) / (1 - p), rtol=1e-6)
        masks.append(kept)
    frac = np.mean(masks)
    assert abs(frac - (1 - p)) < 0.03, frac
    # examples draw different masks
    assert not all(np.array_equal(masks[0], k) for k in masks[1:])


def test_dropout_train_gradients_follow_masks():
    lin = nn.Linear(10, 10)
    drop = nn.Dropout(0.5)
    xs = [T.randn(3, 10) for _ in range(6)]
    with autobatch():
        outs = [drop(lin(x)) for x in xs]
        loss = sum(o.sum() for o in outs)
    loss.backward()
    # d loss / d bias = sum over examples and rows of the mask * 2
    expect = sum(((o.detach() != 0).float() * 2.0).sum(0) for o in outs)
    np.testing.assert_allclose(lin.bias.grad.numpy(), expect.numpy(), rtol=1e-6)


# ---------------------------------------------------------------------------- tensor-op programs
class Params(nn.Module):
    def __init__(self):
        super().__init__()
        self.W = nn.Parameter(T.randn(5, 5) * 0.5)
        self.b = nn.Parameter(T.randn(5) * 0.5)
        self.v = nn.Parameter(T.randn(5) * 0.5)
        self.lin = nn.Linear(5, 5)


def _f_index_variants(m, x, i):
    h = m.lin(x)                                            # (r, 5)
    r = h.shape[0]
    a = h[0] + h[-1] + h[r // 2]                            # int index
    s = h[1:].sum() if r > 1 else h[:1].sum()               # slice
    lst = h[:, [0, 2, 4]].sum(1)                            # list on dim 1
    idx = T.tensor([r - 1, 0])
    t = h[idx]                                              # tensor index
    u = h[..., 1]                                           # ellipsis
    w = h[None, :, 2:4]                                     # None + slice
    return a.sum() + s + lst.mean() + t.pow(2).sum() + u.sum() + w.mean()


def _f_cat_stack_split(m, x, i):
    h = T.tanh(m.lin(x))
    parts = T.split(h, [2, 3], dim=1)
    c1, c2, c3 = h.chunk(3, dim=-1)                         # uneven chunks 2, 2, 1
    n = h.narrow(1, 1, 3)
    z = T.cat([parts[1], parts[0], c3, n], dim=1)           # (r, 9)
    st = T.stack([c1, c2], dim=0)                           # (2, r, 2)
    u = T.unbind(h, dim=1)
    return z.sum() * 0.5 + (st ** 2).mean() + u[0].dot(u[4]) + c3.sum()


def _f_views(m, x, i):
    h = m.lin(x)                                            # (r, 5)
    r = h.shape[0]
    a = h.t() @ h                                           # (5, 5)
    b = h.view(-1).reshape(r, 5).transpose(0, 1).unsqueeze(0)   # (1, 5, r)
    e = m.v.unsqueeze(1).expand(5, r)
    f = h.unsqueeze(-1).squeeze(-1).flatten()
    g = h.permute(1, 0).contiguous().view(5 * r)
    return a.trace() + (b.squeeze(0) * e).sum() + f.sum() * g.mean()


def _f_matmul_family(m, x, i):
    h = m.lin(x)                                            # (r, 5)
    a = T.matmul(h, m.W)                                    # (r, 5)
    b = T.mm(h, m.W.t())
    c = T.bmm(h.unsqueeze(0), m.W.unsqueeze(0))             # (1, r, 5)
    d = T.einsum("rd,de,e->r", h, m.W, m.v)
    e = T.mv(m.W, h[0])
    f = h @ m.v                                             # (r,)
    g = T.outer(m.v, h[-1])
    return a.sum() + b.mean() + c.pow(2).sum() + d.sum() + e.sum() + f.sum() + g.trace()


def _f_where_mask(m, x, i):
    h = m.lin(x)
    pos = h > 0
    a = T.where(pos, h, 0.1 * h)
    b = h.masked_fill(~pos, 0.0)
    c = T.where(h.abs() < 0.5, T.ones_like(h), h * h)
    d = T.clamp(h, min=-0.3, max=0.3)
    return a.sum() + b.sum() + c.sum() + d.sum() + pos.sum().float() * 0.0


def _f_max_argmax_topk(m, x, i):
    h = m.lin(x)                                            # (r, 5)
    vals, idx = h.max(dim=1)
    am = h.argmax(dim=1)
    tv, ti = T.topk(h, 2, dim=1)
    mn = h.min(dim=0, keepdim=True).values
    sel = h.gather(1, am.unsqueeze(1))
    srt, _ = T.sort(h, dim=1, descending=True)
    return vals.sum() + tv.sum() + mn.sum() + sel.sum() + srt[:, 0].sum() + \
        (idx == am).float().sum() + ti.float().sum() * 0 + h.amax() + h.logsumexp(dim=1).sum()


def _f_reductions(m, x, i):
    h = m.lin(x)
    return h.sum(dim=1, keepdim=True).mean() + h.mean(dim=0).sum() + h.sum((0, 1)) + \
        h.var(dim=1).sum() + h.std() + h.norm() + h.prod(dim=1).sum() + h.cumsum(0).sum() + \
        h.mean(dim=-1, keepdim=True).expand_as(h).sum()


def _f_scalars(m, x, i):
    h = m.lin(x)
    a = h * 0.5 + 1 - h / 3.0
    b = 1 - T.sigmoid(h)
    c = 2 ** (h * 0.1) + h ** 2 + (-h).exp() * 0.01
    d = (h + i) * (i + 1)                                   # Python int from the loop
    return a.sum() + b.mean() + c.sum() * 0.1 + d.sum() * 0.01 + \
        (h.rsqrt().nan_to_num(0.0)).sum() * 0


def _f_created_inside(m, x, i):
    h = m.lin(x)
    r = h.shape[0]
    z = T.zeros(r, 5) + T.ones(1, 5) * 0.5
    ar = T.arange(5, dtype=T.float32)
    t = T.tensor([1.0, -1.0, 2.0, 0.0, 0.5], dtype=h.dtype)
    e = T.eye(5, dtype=h.dtype)
    lin = T.linspace(0, 1, 5)
    full = T.full((r, 1), float(i))
    return ((h + z) * ar).sum() + (h @ t).sum() + (h @ e).mean() + (h * lin).sum() + \
        (h * full).sum()


def _f_softmaxes(m, x, i):
    h = m.lin(x)
    return (F.softmax(h, dim=1) * m.v).sum() + F.log_softmax(h, dim=0).mean() + \
        T.log_softmax(h, -1)[:, 0].sum() + h.softmax(0).max() + F.softmin(h, 1)[0, 0]


def _f_norms(m, x, i):
    h = m.lin(x)
    a = F.layer_norm(h, (5,), m.v, m.b)
    b = F.normalize(h, dim=1)
    c = F.layer_norm(h, (5,))
    return a.pow(2).sum() + (b * m.v).sum() + c[:, 1].sum()


def _f_pad_and_conv(m, x, i):
    h = m.lin(x)                                            # (r, 5)
    p = F.pad(h, (1, 1))                                    # (r, 7)
    seq = h.t().unsqueeze(0)                                # (1, 5, r): channels first
    c = F.conv1d(seq, m.W.view(5, 5, 1), m.b, padding=1)    # (1, 5, r + 2)
    pooled = F.max_pool1d(c, kernel_size=2, stride=1) if c.shape[-1] >= 2 else c
    return c.sum() + p.mean() + pooled.pow(2).mean()


OP_PROGRAMS = {
    "index_variants": _f_index_variants,
    "cat_stack_split": _f_cat_stack_split,
    "views": _f_views,
    "matmul_family": _f_matmul_family,
    "where_mask": _f_where_mask,
    "max_argmax_topk": _f_max_argmax_topk,
    "reductions": _f_reductions,
    "scalars": _f_scalars,
    "created_inside": _f_created_inside,
    "softmaxes": _f_softmaxes,
    "norms": _f_norms,
    "pad_conv": _f_pad_and_conv,
}


def make_params(n=6, rows=(1, 4), dtype=T.float32):
    def make():
        rng = np.random.default_rng(10)
        xs = [T.tensor(rng.standard_normal((int(rng.integers(rows[0], rows[1] + 1)), 5)),
                       dtype=dtype) for _ in range(n)]
        return Params(), xs
    return make


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(OP_PROGRAMS))
def test_tensor_op_programs(name, dtype):
    fn = OP_PROGRAMS[name]

    def program(m, xs):
        return sum(fn(m, x.to(DT[dtype]), i) for i, x in enumerate(xs))
    run_pair(make_params(), program, dtype)


@pytest.mark.parametrize("name", sorted(OP_PROGRAMS))
def test_tensor_op_programs_same_lengths(name):
    """Every example of one shape: every call of a program joins one group."""
    fn = OP_PROGRAMS[name]

    def program(m, xs):
        return T.stack([fn(m, x, i) for i, x in enumerate(xs)]).mean()
    run_pair(make_params(rows=(3, 3)), program)


# ---------------------------------------------------------------------------- in-place ops
def _g_add_mul(m, x, i):
    h = m.lin(x)
    h.add_(m.b)
    h.mul_(0.5)
    h.add_(1.0, alpha=2.0) if False else h.add_(m.v, alpha=2.0)
    return h.sum()


def _g_relu_(m, x, i):
    h = m.lin(x)
    h.relu_()
    h2 = F.relu(m.lin(h), inplace=True)
    h2.sigmoid_()
    return (h2 * m.v).sum()


def _g_setitem_int(m, x, i):
    h = m.lin(x)
    h[0] = m.b * 2                                          # x[i] = v
    return (h * h).sum()


def _g_setitem_slice_on_fresh(m, x, i):
    out = T.zeros(x.shape[0], 5)
    out[:, :3] = m.lin(x)[:, 2:]
    out[-1] = out[-1] + m.v
    return (out @ m.W).sum()


def _g_accumulate_total(m, x, i):
    total = T.zeros(())
    for t in range(x.shape[0]):
        total += (m.lin(x[t]) * m.v).sum()
    return total


def _g_hidden_list_inplace_after_read(m, x, i):
    h = m.lin(x)
    s = h.sum()                                             # h read, then modified in place
    h2 = h.clone()
    h2.mul_(2.0)
    return s + h2.sum()


def _g_masked_fill_(m, x, i):
    h = m.lin(x)
    h.masked_fill_(h < 0, 0.0)
    return (h * m.b).sum()


def _g_clamp_and_div_(m, x, i):
    h = m.lin(x)
    h.clamp_(-1, 1).div_(2).sub_(m.b).neg_()
    return h.pow(2).sum()


def _g_index_add_scatter(m, x, i):
    h = m.lin(x)                                            # (r, 5)
    r = h.shape[0]
    acc = T.zeros(2, 5)
    acc = acc.index_add(0, T.tensor([j % 2 for j in range(r)]), h)
    sc = T.zeros(r, 5).scatter(1, T.zeros(r, 1, dtype=T.int64), h[:, :1])
    return (acc * m.v).sum() + sc.sum()


INPLACE_PROGRAMS = {
    "add_mul": _g_add_mul,
    "relu_": _g_relu_,
    "setitem_int": _g_setitem_int,
    "setitem_slice_on_fresh": _g_setitem_slice_on_fresh,
    "accumulate_total": _g_accumulate_total,
    "inplace_after_read": _g_hidden_list_inplace_after_read,
    "masked_fill_": _g_masked_fill_,
    "clamp_div_chain_": _g_clamp_and_div_,
    "index_add_scatter": _g_index_add_scatter,
}


@pytest.mark.parametrize("name", sorted(INPLACE_PROGRAMS))
def test_inplace_programs(name):
    fn = INPLACE_PROGRAMS[name]

    def program(m, xs):
        return sum(fn(m, x, i) for i, x in enumerate(xs))
    run_pair(make_params(), program)


# ---------------------------------------------------------------------------- control flow
def test_item_and_comparisons_in_python_control_flow():
    """A per-example loop whose length and branches depend on values (.item(), bool())."""
    def program(m, xs):
        losses = []
        for x in xs:
            h = m.lin(x).sum(0)                             # (5,)
            steps = 0
            while h.norm().item() > 0.5 and steps < 4:
                h = T.tanh(h @ m.W) * 0.9
                steps += 1
            if h.sum() > 0:
                loss = (h * m.v).sum()
            else:
                loss = -(h * m.b).sum()
            if float(loss) > 10:
                loss = loss * 0.1
            k = int(h.argmax())
            losses.append(loss + h[k])
        return T.stack(losses).mean()
    run_pair(make_params(), program)


def test_greedy_decoder_with_argmax_item():
    """Greedy decoding: each step embeds the previous argmax (read with .item()) and stops at
    an end token or a per-example max length; teacher-free per-step losses."""
    def make():
        rng = np.random.default_rng(11)
        m = nn.Module()
        m.emb = nn.Embedding(6, 4)
        m.cell = nn.GRUCell(4, 5)
        m.out = nn.Linear(5, 6)
        m.init = nn.Linear(3, 5)
        data = [(T.tensor(rng.standard_normal((1, 3)), dtype=T.float32),
                 T.tensor(rng.integers(0, 6, 5).tolist())) for _ in range(6)]
        return m, data

    def program(m, data):
        losses = []
        for feat, target in data:
            h = T.tanh(m.init(feat))
            tok = 0
            for t in range(target.shape[0]):
                h = m.cell(m.emb(T.tensor([tok])), h)
                logits = m.out(h)
                losses.append(F.cross_entropy(logits, target[t:t + 1]))
                tok = logits.argmax(dim=-1).item()
                if tok == 5:
                    break
        return sum(losses) / len(losses)
    run_pair(make, program)


class ShiftReduceParser(nn.Module):
    """A transition parser: a stack and buffer of vectors; the action scorer chooses
    shift/reduce (argmax, with legality checks in Python); the loss is the cross entropy of the
    oracle action at every step (as in the parsers of the period)."""

    def __init__(self, d=6):
        super().__init__()
        self.emb = nn.Embedding(25, d)
        self.comp = nn.Linear(2 * d, d)
        self.score = nn.Linear(3 * d, 2)
        self.d = d

    def forward(self, ids, oracle):
        buf = list(self.emb(ids).split(1, dim=0))[::-1]
        stack, losses = [], []
        empty = T.zeros(1, self.d)
        for gold in oracle:
            s1 = stack[-1] if stack else empty
            s2 = stack[-2] if len(stack) > 1 else empty
            b = buf[-1] if buf else empty
            logits = self.score(T.cat([s1, s2, b], dim=1))
            losses.append(F.cross_entropy(logits, T.tensor([gold])))
            if gold == 0:
                stack.append(buf.pop())
            else:
                r, l = stack.pop(), stack.pop()
                stack.append(T.tanh(self.comp(T.cat([l, r], 1))))
        return T.cat(losses).sum() if False else T.stack(losses).sum(), stack[-1]


def _oracle(prng, n):
    acts, depth, shifted = [], 0, 0
    while shifted < n or depth > 1:
        if shifted < n and (depth < 2 or prng.random() < 0.5):
            acts.append(0)
            shifted += 1
            depth += 1
        else:
            acts.append(1)
            depth -= 1
    return acts


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shift_reduce_parser(dtype):
    def make():
        prng = random.Random(12)
        data = []
        for _ in range(6):
            n = prng.randint(1, 7)
            data.append((T.tensor([prng.randrange(25) for _ in range(n)]), _oracle(prng, n)))
        return ShiftReduceParser(), data

    def program(m, data):
        total = 0.0
        for ids, oracle in data:
            loss, root = m(ids, oracle)
            total = total + loss + root.pow(2).mean()
        return total
    run_pair(make, program, dtype)


# ---------------------------------------------------------------------------- no_grad / detach
def test_no_grad_inside_and_detach():
    def program(m, xs):
        losses = []
        for x in xs:
            with no_grad():
                target = T.tanh(m.lin(x)).detach() * 2      # a target network's values
                scale = m.v.abs().sum()
            h = m.lin(x)
            baseline = h.detach().mean()
            losses.append(F.mse_loss(h - baseline, target) * scale)
        return T.stack(losses).sum()
    res = run_pair(make_params(), program)
    assert res[0][1]["v"] is None


def test_truncated_bptt_with_detach():
    def make():
        rng = np.random.default_rng(13)
        m = nn.Module()
        m.cell = nn.LSTMCell(3, 4)
        m.out = nn.Linear(4, 3)
        data = [T.tensor(rng.standard_normal((int(rng.integers(2, 9)), 3)), dtype=T.float32)
                for _ in range(5)]
        return m, data

    def program(m, data):
        total = []
        for x in data:
            h = c = T.zeros(1, 4)
            for t in range(x.shape[0] - 1):
                if t % 3 == 0:
                    h, c = h.detach(), c.detach()
                h, c = m.cell(x[t:t + 1], (h, c))
                total.append(F.mse_loss(m.out(h), x[t + 1:t + 2]))
        return T.stack(total).mean()
    run_pair(make, program)


def test_requires_grad_per_example_inputs():
    """Per-example inputs that require grad: their gradients as well as the parameters'."""
    rng = np.random.default_rng(14)
    T.manual_seed(0)
    lin = nn.Linear(5, 3)
    arrays = [rng.standard_normal((int(rng.integers(1, 4)), 5)) for _ in range(5)]
    grads = []
    for batched in (False, True):
        lin.zero_grad()
        xs = [T.tensor(a, dtype=T.float32, requires_grad=True) for a in arrays]
        if batched:
            with autobatch():
                loss = sum(T.tanh(lin(x)).pow(2).sum() for x in xs)
        else:
            loss = sum(T.tanh(lin(x)).pow(2).sum() for x in xs)
        loss.backward()
        grads.append([x.grad.numpy() for x in xs] + [lin.weight.grad.numpy()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------- integer tensors
def test_integer_index_tensors_and_gather():
    def make():
        rng = np.random.default_rng(15)
        m = nn.Module()
        m.emb = nn.Embedding(12, 4, padding_idx=0)
        m.out = nn.Linear(4, 12)
        data = []
        for _ in range(6):
            n = int(rng.integers(2, 7))
            ids = T.tensor(rng.integers(0, 12, n).tolist(), dtype=T.int64)
            data.append(ids)
        return m, data

    def program(m, data):
        losses = []
        for ids in data:
            e = m.emb(ids)
            pos = T.arange(ids.shape[0])
            rev = ids.flip(0)
            nz = (ids != 0).long()
            ctx = (e * nz.unsqueeze(1).to(e.dtype)).sum(0, keepdim=True) / nz.sum().clamp(min=1)
            logits = m.out(ctx).expand(ids.shape[0], 12)
            logp = logits.log_softmax(-1)
            picked = logp.gather(1, rev.unsqueeze(1)).squeeze(1)
            picked2 = logp[pos, ids]
            losses.append(-(picked.mean() + picked2.mean()) + (ids * 2 + 1).sum().float() * 0)
        return T.stack(losses).mean()
    run_pair(make, program)


def test_embedding_bag_style_mean_of_words():
    def make():
        rng = np.random.default_rng(16)
        m = nn.Module()
        m.emb = nn.EmbeddingBag(20, 5, mode="mean")
        m.fc = nn.Linear(5, 2)
        return m, [(s, int(rng.integers(0, 2))) for s in seqs(rng, 7, 20)]

    def program(m, data):
        return T.stack([F.cross_entropy(m.fc(m.emb(ids.unsqueeze(0))), T.tensor([y]))
                        for ids, y in data]).mean()
    run_pair(make, program)


# ---------------------------------------------------------------------------- training loops
def _train(make, program, opt_fn, steps, batched, zero="model"):
    T.manual_seed(0)
    model, data = make()
    opt = opt_fn(model.parameters())
    losses = []
    for _ in range(steps):
        if zero == "model":
            model.zero_grad()
        else:
            opt.zero_grad()
        if batched:
            with autobatch():
                loss = program(model, data)
                loss.backward()
                opt.step()
        else:
            loss = program(model, data)
            loss.backward()
            opt.step()
        losses.append(loss.item())
    return losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}


OPTIMIZERS = {
    "sgd": lambda ps: optim.SGD(ps, lr=0.1),
    "sgd_momentum": lambda ps: optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                         weight_decay=1e-3),
    "adam": lambda ps: optim.Adam(ps, lr=0.01),
    "adamw": lambda ps: optim.AdamW(ps, lr=0.01, amsgrad=True),
    "adagrad": lambda ps: optim.Adagrad(ps, lr=0.05),
    "rmsprop": lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.5),
}


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_training_steps_give_the_same_parameters(opt):
    def program(model, data):
        return T.stack([F.cross_entropy(model(ids), T.tensor([y])) for ids, y in data]).mean()
    l0, s0 = _train(make_classifier("gru", n=5), program, OPTIMIZERS[opt], 4, False,
                    zero="opt" if opt.startswith("adam") else "model")
    l1, s1 = _train(make_classifier("gru", n=5), program, OPTIMIZERS[opt], 4, True,
                    zero="opt" if opt.startswith("adam") else "model")
    np.testing.assert_allclose(l1, l0, rtol=1e-4, atol=1e-5)
    assert l0[-1] < l0[0]
    for k in s0:
        np.testing.assert_allclose(s1[k], s0[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_training_with_the_optimizer_step_outside_the_context():
    def program(model, data):
        return sum(F.cross_entropy(model(ids), T.tensor([y])) for ids, y in data)

    def train(batched):
        T.manual_seed(0)
        model, data = make_classifier("lstm", n=5)()
        opt = optim.Adam(model.parameters(), lr=0.02)
        for _ in range(3):
            opt.zero_grad()
            if batched:
                with autobatch():
                    loss = program(model, data)
            else:
                loss = program(model, data)
            loss.backward()
            opt.step()
        return {k: v.numpy().copy() for k, v in model.state_dict().items()}
    s0, s1 = train(False), train(True)
    for k in s0:
        np.testing.assert_allclose(s1[k], s0[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_manual_sgd_update_under_no_grad_inside_the_context():
    def train(batched):
        T.manual_seed(0)
        model, xs = make_params()()
        for _ in range(3):
            model.zero_grad()
            ctx = autobatch() if batched else _null()
            with ctx:
                loss = sum((T.tanh(model.lin(x)) @ model.W).pow(2).mean() for x in xs)
                loss.backward()
                with no_grad():
                    for p in model.parameters():
                        if p.grad is not None:
                            p -= 0.1 * p.grad
        return {k: v.numpy().copy() for k, v in model.state_dict().items()}
    s0, s1 = train(False), train(True)
    for k in s0:
        np.testing.assert_allclose(s1[k], s0[k], rtol=1e-4, atol=1e-5, err_msg=k)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_gradient_accumulation_over_several_contexts():
    """Two contexts in a row each call backward; gradients accumulate as without them."""
    def run(batched):
        T.manual_seed(0)
        model, data = make_classifier("rnn", n=6)()
        model.zero_grad()
        for half in (data[:3], data[3:]):
            ctx = autobatch() if batched else _null()
            with ctx:
                loss = T.stack([F.cross_entropy(model(i), T.tensor([y])) for i, y in half]).sum()
            loss.backward()
        return _grads(model)
    g0, g1 = run(False), run(True)
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_per_example_backward_inside_the_context():
    """backward() per example inside the context (as code that accumulates per example)."""
    def run(batched):
        T.manual_seed(0)
        model, data = make_classifier("gru", n=4)()
        model.zero_grad()
        ctx = autobatch() if batched else _null()
        values = []
        with ctx:
            for ids, y in data:
                loss = F.cross_entropy(model(ids), T.tensor([y]))
                loss.backward()
                values.append(loss.item())
        return values, _grads(model)
    (v0, g0), (v1, g1) = run(False), run(True)
    np.testing.assert_allclose(v1, v0, rtol=1e-5)
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-4, atol=1e-5, err_msg=k)


# ---------------------------------------------------------------------------- results after
def test_results_used_after_the_context():
    T.manual_seed(0)
    model, xs = make_params()()
    eager = [T.tanh(model.lin(x)) for x in xs]
    with autobatch():
        outs = [T.tanh(model.lin(x)) for x in xs]
        scores = [o.sum(1) for o in outs]
    for e, o, s in zip(eager, outs, scores):
        assert o.shape == e.shape and o.dtype == e.dtype
        np.testing.assert_allclose(o.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s.tolist(), e.sum(1).tolist(), rtol=1e-5, atol=1e-6)
        assert o.requires_grad and o.grad_fn is not None
    # used after: more ops, in-place ops, backward
    total = sum((o * 2).sum() for o in outs)
    outs[0].add_(1.0)
    total.backward()
    g_batched = model.lin.weight.grad.numpy().copy()
    model.zero_grad()
    sum((T.tanh(model.lin(x)) * 2).sum() for x in xs).backward()
    np.testing.assert_allclose(g_batched, model.lin.weight.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_printing_and_tolist_inside_the_context():
    T.manual_seed(0)
    model, xs = make_params()()
    with autobatch():
        h = T.tanh(model.lin(xs[0]))
        text = repr(h)
        lst = h.tolist()
        n = len(h)
        rows = [r.sum() for r in h]                          # iterating a tensor
        arr = h.detach().numpy()
    assert "tensor(" in text and "grad_fn" in text
    assert n == xs[0].shape[0] == len(lst) == len(rows)
    np.testing.assert_allclose(np.array(lst), arr, rtol=1e-6)
    np.testing.assert_allclose([r.item() for r in rows], arr.sum(1), rtol=1e-5, atol=1e-6)


def test_memoized_dag_shared_subtrees():
    """A DAG: subtrees shared between examples through a memo dict (a value used by many)."""
    def make():
        prng = random.Random(17)
        return RvNN(), [(random_tree(prng, prng.randint(2, 7)), prng.randrange(3))
                        for _ in range(5)]

    def program(m, data):
        memo = {}

        def enc(t):
            if t in memo:
                return memo[t]
            if isinstance(t, tuple):
                h = T.tanh(m.comp(T.cat([enc(t[0]), enc(t[1])], -1)))
            else:
                h = m.emb(T.tensor([t]))
            memo[t] = h
            return h
        losses = [F.cross_entropy(m.cls(enc(t)), T.tensor([y])) for t, y in data]
        losses += [F.cross_entropy(m.cls(enc(t[0] if isinstance(t, tuple) else t)),
                                   T.tensor([y])) for t, y in data]
        return sum(losses)
    run_pair(make, program)


# ---------------------------------------------------------------------------- random ops
def test_randn_inside_the_loop_statistics():
    """Reparameterised noise per example: randn inside the context draws N(0, 1)."""
    mu = nn.Parameter(T.zeros(4))
    T.manual_seed(0)
    with autobatch():
        zs = [mu + T.randn(4) for _ in range(500)]
        us = [T.rand(2, 3) for _ in range(200)]
        ns = [T.randn_like(z) * 2 + 1 for z in zs[:300]]
        loss = T.stack(zs).pow(2).mean()
    z = np.stack([t.detach().numpy() for t in zs])
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1
    assert len({tuple(r) for r in z.round(5)}) == 500
    u = np.stack([t.numpy() for t in us])
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    n = np.stack([t.numpy() for t in ns])
    assert abs(n.mean() - 1) < 0.15 and abs(n.std() - 2) < 0.15
    loss.backward()
    np.testing.assert_allclose(mu.grad.numpy(), 2 * z.mean(0) / 4, rtol=1e-4, atol=1e-6)


def test_bernoulli_multinomial_sampling_policy():
    """REINFORCE-style: sample an action per example from its softmax (multinomial), loss is
    -log p(action) * reward; checks that the gradient matches the sampled actions."""
    T.manual_seed(0)
    lin = nn.Linear(3, 4)
    xs = [T.randn(1, 3) for _ in range(40)]
    with autobatch():
        probs = [F.softmax(lin(x), dim=-1) for x in xs]
        acts = [T.multinomial(p, 1) for p in probs]
        coins = [T.bernoulli(p) for p in probs]
        logps = [T.log(p.gather(1, a)).sum() for p, a in zip(probs, acts)]
        loss = -T.stack(logps).sum()
    loss.backward()
    g = lin.weight.grad.numpy().copy()
    lin.zero_grad()
    eager = -sum(T.log(F.softmax(lin(x), -1).gather(1, a)).sum() for x, a in zip(xs, acts))
    eager.backward()
    np.testing.assert_allclose(g, lin.weight.grad.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(loss.item(), eager.item(), rtol=1e-5)
    a = np.array([int(t.item()) for t in acts])
    assert a.min() >= 0 and a.max() < 4 and len(set(a.tolist())) > 1
    c = np.stack([t.numpy() for t in coins])
    assert set(np.unique(c).tolist()) <= {0.0, 1.0}


# ---------------------------------------------------------------------------- more per-example ops
MORE = {}


def more(fn):
    MORE[fn.__name__[3:]] = fn
    return fn


@more
def _h_slice_iadd(m, x, i):
    h = m.lin(x)
    h[0] += m.b
    h[:, 1] *= 2
    return h.pow(2).sum()


@more
def _h_slice_set_from_self(m, x, i):
    h = m.lin(x)
    h[:, 0] = 0
    h[-1, :] = h[0]
    return h.pow(2).sum()


@more
def _h_outputs_column_assign(m, x, i):
    out = T.zeros(5, x.shape[0])
    for t in range(x.shape[0]):
        out[:, t] = m.lin(x[t])
    return out.tanh().sum()


@more
def _h_prealloc_rows(m, x, i):
    out = T.empty(x.shape[0], 5)
    h = T.zeros(5)
    for t in range(x.shape[0]):
        h = T.tanh(m.lin(x[t]) + h @ m.W)
        out[t] = h
    return (out * m.v).sum()


@more
def _h_read_then_inplace(m, x, i):
    h = m.lin(x)
    s = h.sum()
    h.add_(1)
    return s + h.pow(2).sum()


@more
def _h_view_inplace_reaches_base(m, x, i):
    h = m.lin(x)
    v = h[0]
    v.mul_(3)
    return h.pow(2).sum() + v.sum()


@more
def _h_base_inplace_reaches_view(m, x, i):
    h = m.lin(x)
    v = h.t()
    h.mul_(3)
    return (v * v).sum() + h.sum()


@more
def _h_setitem_through_view(m, x, i):
    h = m.lin(x)
    h.view(-1)[0] = 5.0
    return h.pow(2).sum()


@more
def _h_zero_dim_tensors(m, x, i):
    return (T.tensor(0.5) * m.lin(x) + T.tensor(float(i))).pow(2).sum()


@more
def _h_maximum_minimum(m, x, i):
    h = m.lin(x)
    return T.maximum(h, T.zeros_like(h)).sum() + T.max(h, h * 0.5).sum() + \
        T.minimum(h, T.tensor(0.1)).sum()


@more
def _h_double_float_casts(m, x, i):
    h = m.lin(x).double()
    return (h * h).sum().float() + h.to(T.float32).mean()


@more
def _h_int_and_bool_ops(m, x, i):
    ids = T.arange(x.shape[0])
    mask = (ids % 2 == 0) & (ids // 2 < 5)
    return (m.lin(x) * mask.unsqueeze(1)).sum() + mask.sum() + (ids * 3 - 1).sum().float()


@more
def _h_shape_from_value(m, x, i):
    h = m.lin(x)
    z = T.zeros(int((h > 0).sum()))
    return h.sum() + z.sum() + h[: max(1, int(h[0, 0] > 0) + 1)].sum()


@more
def _h_empty_slices(m, x, i):
    h = m.lin(x)
    e = h[0:0]
    return e.sum() + T.cat([e, h]).mean() + T.zeros(0, 5).sum(0).sum()


@more
def _h_index_select_put(m, x, i):
    h = m.lin(x)
    idx = T.tensor([0, h.shape[0] - 1])
    h2 = h.index_select(0, idx)
    h3 = h.index_put((idx,), T.ones(2, 5))
    h.index_put_((T.tensor([0]),), T.zeros(1, 5))
    return h2.sum() + h3.pow(2).sum() + h.pow(2).sum()


@more
def _h_misc_shape_ops(m, x, i):
    h = m.lin(x)
    return h.repeat(2, 1).sum() + h.roll(1, 0)[0].sum() + h.tril().sum() + h.flip(1)[0, 0] + \
        T.diag(h[0]).sum() + T.diag(h[:1, :1]).sum()


@more
def _h_sort_median_kth(m, x, i):
    h = m.lin(x)
    a, _ = h.sort(dim=0)
    return a[0].sum() + h.cumprod(1).sum() + h.median() + h.kthvalue(1, dim=1)[0].sum()


@more
def _h_one_hot(m, x, i):
    h = m.lin(x)
    return F.one_hot(h.argmax(1), 5).float().mul(h).sum()


@more
def _h_distances(m, x, i):
    h = m.lin(x)
    return F.cosine_similarity(h, h.flip(0) + 0.1, dim=1).sum() + \
        F.pairwise_distance(h, h * 2).sum() + T.cdist(h, h * 0.5 + 1).sum()


@more
def _h_pairwise_broadcast(m, x, i):
    h = m.lin(x)
    return (h.unsqueeze(0) * h.unsqueeze(1)).sum(-1).triu(1).sum()


@more
def _h_unbind_diff(m, x, i):
    h = m.lin(x)
    return T.stack(list(h.unbind(0))[::-1]).diff(dim=0).sum() + h.sum()


@more
def _h_einsum_more(m, x, i):
    h = m.lin(x)
    sq = h[:1, :1]
    return T.einsum("ij,ik->jk", h, h).sum() + T.einsum("ii", sq) + \
        T.einsum("i,i->", h[0], h[-1]) + T.einsum("...d,d->...", h, m.b).sum()


@more
def _h_split_uneven(m, x, i):
    h = m.lin(x)
    return h.split(1, 0)[0].sum() + sum(c.pow(2).sum() for c in h.split(2, 1)) + \
        h.tensor_split(2, dim=1)[1].sum()


@more
def _h_argmax_feeds_index(m, x, i):
    h = m.lin(x)
    k = h.argmax(-1)                                        # (r,) int64, never read in Python
    return m.W[k].sum() + h.gather(1, k[:, None]).sum() + m.v[k % 5].pow(2).sum()


@more
def _h_bool_mask_indexing(m, x, i):
    h = m.lin(x)
    return h[h > 0].sum() + h[(h > 0).nonzero(as_tuple=True)].sum() + h.masked_select(h < 0).sum()


@more
def _h_new_tensors(m, x, i):
    h = m.lin(x)
    z = h.new_zeros(h.shape) + h.new_tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    return (h * z + h.new_ones(1, 5) + h.new_full((1,), 2.0)).sum()


@more
def _h_item_normalised(m, x, i):
    h = m.lin(x)
    n = (h > 0).sum()
    return h.sum() / max(n.item(), 1)


@more
def _h_custom_function(m, x, i):
    from ember.autograd import Function

    class Square(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx, g):
            a, = ctx.saved_tensors
            return 2 * a * g
    return Square.apply(m.lin(x)).sum()


@more
def _h_grad_mode_switches(m, x, i):
    from ember.autograd import enable_grad, set_grad_enabled
    with set_grad_enabled(i % 2 == 0):
        h = m.lin(x)
    with no_grad():
        with enable_grad():
            g = m.lin(x) * 2
    return h.sum() + g.pow(2).sum()


@more
def _h_gradient_penalty(m, x, i):
    from ember.autograd import grad
    x = x.clone().requires_grad_(True)
    out = T.tanh(m.lin(x)).sum()
    g, = grad(out, x, create_graph=True)
    return out + (g.norm() - 1) ** 2


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_per_example_ops(name):
    fn = MORE[name]

    def program(m, xs):
        return sum(fn(m, x, i) for i, x in enumerate(xs))
    run_pair(make_params(), program)


# ------------------------------------------------------------------------ nn modules per example
def _nn_case(kind):
    def make():
        rng = np.random.default_rng(18)
        m = nn.Module()
        if kind == "lstm_module":
            m.net = nn.LSTM(5, 4, num_layers=2, bidirectional=True)
        elif kind == "gru_batch_first":
            m.net = nn.GRU(5, 4, batch_first=True)
        elif kind == "rnn_unbatched":
            m.net = nn.RNN(5, 4, nonlinearity="relu")
        elif kind == "transformer_layer":
            m.net = nn.TransformerEncoderLayer(5, 1, dim_feedforward=8, dropout=0.0)
        elif kind == "sequential":
            m.net = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Dropout(0.0), nn.Linear(6, 2),
                                  nn.LogSoftmax(dim=-1))
        elif kind == "packed_gru":
            m.lin = nn.Linear(5, 3)
            m.net = nn.GRU(3, 4)
        elif kind == "conv1d_text":
            m.emb = nn.Embedding(20, 5)
            m.net = nn.Conv1d(5, 4, kernel_size=2, padding=1)
        elif kind == "batchnorm_eval":
            m.net = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4), nn.Tanh())
            m.net.eval()
        xs = [T.tensor(rng.standard_normal((int(rng.integers(2, 6)), 5)), dtype=T.float32)
              for _ in range(5)]
        return m, xs
    return make


def _nn_program(kind):
    from ember.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence

    def program(m, xs):
        if kind == "lstm_module":
            return sum(m.net(x.unsqueeze(1))[0].sum() for x in xs)
        if kind == "gru_batch_first":
            return sum(m.net(x.unsqueeze(0))[1].pow(2).sum() for x in xs)
        if kind == "rnn_unbatched":
            return sum(m.net(x)[0].sum() for x in xs)
        if kind == "transformer_layer":
            return sum(m.net(x.unsqueeze(1)).pow(2).sum() for x in xs)
        if kind == "sequential":
            return sum(m.net(x).sum() for x in xs)
        if kind == "packed_gru":
            padded = pad_sequence([m.lin(x) for x in xs])
            pk = pack_padded_sequence(padded, [x.shape[0] for x in xs], enforce_sorted=False)
            out, h = m.net(pk)
            return pad_packed_sequence(out)[0].sum() + h.sum()
        if kind == "conv1d_text":
            total = 0
            for x in xs:
                ids = (x[:, 0].abs() * 7).long() % 20
                feat = m.net(m.emb(ids).t().unsqueeze(0))          # (1, 4, L + 1)
                total = total + feat.max(dim=2)[0].sum()
            return total
        if kind == "batchnorm_eval":
            return sum(m.net(x).sum() for x in xs)
    return program


NN_KINDS = ["lstm_module", "gru_batch_first", "rnn_unbatched", "transformer_layer",
            "sequential", "packed_gru", "conv1d_text", "batchnorm_eval"]


@pytest.mark.parametrize("kind", NN_KINDS)
def test_nn_modules_per_example(kind):
    run_pair(_nn_case(kind), _nn_program(kind))


def test_batchnorm_train_running_stats_per_example():
    rng = np.random.default_rng(19)
    xs = [T.tensor(rng.standard_normal((int(rng.integers(2, 5)), 5)), dtype=T.float32)
          for _ in range(5)]

    def run(batched):
        T.manual_seed(0)
        bn = nn.BatchNorm1d(5)
        ctx = autobatch() if batched else _null()
        with ctx:
            loss = sum(bn(x).pow(2).sum() * (i + 1) for i, x in enumerate(xs))
        loss.backward()
        return [loss.item(), bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(),
                bn.num_batches_tracked.item(), bn.weight.grad.numpy().copy()]
    for a, b in zip(run(False), run(True)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_retain_grad_and_hooks_on_per_example_values():
    rng = np.random.default_rng(20)
    xs = [T.tensor(rng.standard_normal((int(rng.integers(2, 5)), 5)), dtype=T.float32)
          for _ in range(5)]
    T.manual_seed(0)
    lin = nn.Linear(5, 3)

    def run(batched):
        lin.zero_grad()
        seen = []
        ctx = autobatch() if batched else _null()
        with ctx:
            hs = []
            for x in xs:
                h = lin(x)
                h.retain_grad()
                h.register_hook(lambda g: seen.append(tuple(g.shape)))
                hs.append(h)
            loss = sum(T.tanh(h).sum() for h in hs)
        loss.backward()
        return [h.grad.numpy().copy() for h in hs], sorted(seen)
    (g0, s0), (g1, s1) = run(False), run(True)
    assert s0 == s1
    for a, b in zip(g0, g1):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_parameter_changed_in_place_between_examples():
    rng = np.random.default_rng(21)
    xs = [T.tensor(rng.standard_normal((2, 5)), dtype=T.float32) for _ in range(4)]

    def run(batched):
        T.manual_seed(0)
        lin = nn.Linear(5, 3)
        ctx = autobatch() if batched else _null()
        with ctx:
            outs = []
            for x in xs:
                outs.append(lin(x).sum())
                with no_grad():
                    lin.weight.mul_(0.5)
                    lin.bias[0] = 1.0
            out = T.stack(outs)
        return out.detach().numpy()
    np.testing.assert_allclose(run(True), run(False), rtol=1e-5)


def test_online_sgd_per_example_inside_one_context():
    rng = np.random.default_rng(22)
    xs = [T.tensor(rng.standard_normal((int(rng.integers(1, 4)), 5)), dtype=T.float32)
          for _ in range(5)]

    def run(batched):
        T.manual_seed(0)
        m = nn.Linear(5, 1)
        opt = optim.SGD(m.parameters(), lr=0.1)
        ctx = autobatch() if batched else _null()
        values = []
        with ctx:
            for x in xs:
                opt.zero_grad()
                loss = m(x).pow(2).mean()
                loss.backward()
                opt.step()
                values.append(loss.item())
        return values, m.weight.detach().numpy().copy()
    (v0, w0), (v1, w1) = run(False), run(True)
    np.testing.assert_allclose(v1, v0, rtol=1e-5)
    np.testing.assert_allclose(w1, w0, rtol=1e-5)


def test_clip_grad_norm_inside_the_context():
    rng = np.random.default_rng(23)
    xs = [T.tensor(rng.standard_normal((int(rng.integers(1, 4)), 5)), dtype=T.float32)
          for _ in range(5)]
    T.manual_seed(0)
    lin = nn.Linear(5, 3)

    def run(batched):
        lin.zero_grad()
        ctx = autobatch() if batched else _null()
        with ctx:
            loss = sum(lin(x).pow(2).sum() for x in xs)
            loss.backward()
            norm = nn.utils.clip_grad_norm_(lin.parameters(), 1.0)
        return float(norm), lin.weight.grad.numpy().copy()
    (n0, g0), (n1, g1) = run(False), run(True)
    np.testing.assert_allclose(n1, n0, rtol=1e-5)
    np.testing.assert_allclose(g1, g0, rtol=1e-4, atol=1e-6)


def test_leaves_created_inside_the_context_get_gradients():
    rng = np.random.default_rng(24)
    xs = [T.tensor(rng.standard_normal((int(rng.integers(1, 4)), 5)), dtype=T.float32)
          for _ in range(5)]
    T.manual_seed(0)
    lin = nn.Linear(5, 3)

    def run(batched):
        ctx = autobatch() if batched else _null()
        with ctx:
            ws = [T.tensor([0.5, -0.5, 1.0], requires_grad=True) for _ in xs]
            zs = [T.zeros(1, 3).requires_grad_() for _ in xs]
            loss = sum(((lin(x) + z) * w).pow(2).sum() for x, w, z in zip(xs, ws, zs))
        loss.backward()
        return [w.grad.numpy().copy() for w in ws] + [z.grad.numpy().copy() for z in zs]
    for a, b in zip(run(False), run(True)):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_rows_of_a_concrete_dataset_tensor_and_shared_non_leaf():
    rng = np.random.default_rng(25)
    X = T.tensor(rng.standard_normal((8, 5)), dtype=T.float32)

    def program(m, xs):
        W2 = m.W * 2                                   # a shared non-leaf operand
        return sum(T.tanh(m.lin(X[i])).sum() + (X[i:i + 2] @ W2).pow(2).sum()
                   for i in range(6))
    run_pair(make_params(), program)


# ---------------------------------------------------------------------------- errors
def _raises_alike(fn):
    """fn() raises eagerly; inside autobatch the same exception type with the same message."""
    errors = []
    for batched in (False, True):
        with pytest.raises(Exception) as info:
            ctx = autobatch() if batched else _null()
            with ctx:
                fn()
        errors.append(info.value)
    e0, e1 = errors
    assert type(e1) is type(e0), (e0, e1)
    text = str(e1) + "".join(getattr(e1, "__notes__", []))
    return str(e0), text


_lin = None


def _L():
    global _lin
    if _lin is None:
        T.manual_seed(0)
        _lin = nn.Linear(5, 3)
    return _lin


ERROR_CASES = {
    "linear_in_features": (lambda: [_L()(x) for x in (T.randn(2, 5), T.randn(3, 4))],
                           RuntimeError, ["linear", "3x4", "5x3"]),
    "cat_sizes": (lambda: [T.cat([_L()(T.randn(2, 5)), T.zeros(2, 4)], 0) for _ in range(2)],
                  RuntimeError, ["cat", "3", "4"]),
    "matmul_shapes": (lambda: [_L()(T.randn(2, 5)) @ T.randn(4, 2) for _ in range(2)],
                      RuntimeError, ["2x3", "4x2"]),
    "grucell_hidden": (lambda: [nn.GRUCell(5, 3)(T.randn(1, 5), T.zeros(1, 4)) for _ in range(2)],
                       RuntimeError, ["GRUCell", "[1, 4]"]),
    "lstmcell_input": (lambda: [nn.LSTMCell(5, 3)(T.randn(1, 6)) for _ in range(2)],
                       RuntimeError, ["LSTMCell", "6", "5"]),
    "view_size": (lambda: [_L()(T.randn(2, 5)).view(4, 2) for _ in range(2)],
                  RuntimeError, ["view", "[4, 2]", "6"]),
    "view_non_contiguous": (lambda: [_L()(T.randn(2, 5)).t().view(6) for _ in range(2)],
                            RuntimeError, ["view", "reshape"]),
    "ce_target_out_of_range": (
        lambda: [F.cross_entropy(_L()(T.randn(2, 5)), T.tensor([0, 3])).item() for _ in range(2)],
        IndexError, ["Target 3", "out of bounds"]),
    "ce_target_out_of_range_at_exit": (
        lambda: [F.cross_entropy(_L()(T.randn(2, 5)), T.tensor([0, i + 2])) for i in range(2)],
        IndexError, ["3", "out of bounds"]),
    "embedding_out_of_range": (
        lambda: [nn.Embedding(10, 5)(T.tensor([1, 12])).sum().item() for _ in range(2)],
        IndexError, ["embedding", "12"]),
    "ce_batch_size": (lambda: [F.cross_entropy(_L()(T.randn(2, 5)), T.tensor([0, 1, 2]))
                               for _ in range(2)], ValueError, ["batch_size", "(2)", "(3)"]),
    "stack_sizes": (lambda: T.stack([_L()(T.randn(2, 5)).sum(0), T.zeros(4)]),
                    RuntimeError, ["stack", "[3]", "[4]"]),
    "index_out_of_range": (lambda: [_L()(T.randn(2, 5))[3] for _ in range(2)],
                           IndexError, ["3", "size 2"]),
    "tensor_index_out_of_range": (
        lambda: [_L()(T.randn(2, 5))[T.tensor([0, 4])].sum().item() for _ in range(2)],
        IndexError, ["4"]),
    "broadcast_add": (lambda: [_L()(T.randn(2, 5)) + T.ones(2, 4) for _ in range(2)],
                      RuntimeError, ["add", "[2, 3]", "[2, 4]"]),
    "embedding_float_ids": (lambda: [nn.Embedding(10, 5)(T.tensor([1.0, 2.0])) for _ in range(2)],
                            RuntimeError, ["embedding", "Long"]),
    "dtype_mismatch": (lambda: [_L()(T.randn(2, 5, dtype=T.float64)) for _ in range(2)],
                       RuntimeError, ["double", "float"]),
    "backward_non_scalar": (lambda: _L()(T.randn(2, 5)).backward(), RuntimeError, ["scalar"]),
    "narrow_range": (lambda: [_L()(T.randn(2, 5)).narrow(1, 2, 3) for _ in range(2)],
                     RuntimeError, ["narrow"]),
    "softmax_dim": (lambda: [F.softmax(_L()(T.randn(2, 5)), dim=2) for _ in range(2)],
                    IndexError, ["Dimension out of range"]),
    "einsum_sizes": (lambda: [T.einsum("ij,jk->ik", _L()(T.randn(2, 5)), T.randn(4, 2))
                              for _ in range(2)], RuntimeError, ["einsum"]),
    "bmm_rank": (lambda: [T.bmm(_L()(T.randn(2, 5)), T.randn(3, 2)) for _ in range(2)],
                 RuntimeError, ["bmm", "3D"]),
    "masked_fill_shape": (lambda: [_L()(T.randn(2, 5)).masked_fill(T.ones(4, dtype=T.bool), 0.0)
                                   for _ in range(2)], RuntimeError, ["masked_fill", "[4]"]),
    "topk_k": (lambda: [_L()(T.randn(2, 5)).topk(5, dim=1) for _ in range(2)],
               RuntimeError, ["topk", "k"]),
    "expand_size": (lambda: [_L()(T.randn(2, 5)).expand(3, 3) for _ in range(2)],
                    RuntimeError, ["expand", "[3, 3]"]),
    "bce_logits_shape": (lambda: [F.binary_cross_entropy_with_logits(_L()(T.randn(2, 5)),
                                                                     T.zeros(2, 4))
                                  for _ in range(2)], ValueError, ["Target size", "input size"]),
    "nll_float_target": (lambda: [F.nll_loss(_L()(T.randn(2, 5)), T.tensor([0.0, 1.0]))
                                  for _ in range(2)], RuntimeError, ["nll_loss"]),
    "backward_twice": (lambda: [(lambda y: (y.backward(), y.backward()))(_L()(T.randn(2, 5))
                                                                           .sum())],
                       RuntimeError, ["second time"]),
    "leaf_inplace": (lambda: _L().weight.add_(1.0), RuntimeError, ["leaf"]),
    "inplace_on_saved_output": (
        lambda: sum((lambda y: (y.mul_(2), y)[1])(_L()(T.randn(2, 5)).sigmoid()).sum()
                    for _ in range(3)).backward(),
        RuntimeError, ["modified by an inplace operation"]),
    "inplace_on_saved_exp": (
        lambda: sum((lambda y: (y.add_(1), y)[1])(_L()(T.randn(2, 5)).exp()).sum()
                    for _ in range(3)).backward(),
        RuntimeError, ["modified by an inplace operation"]),
    "inplace_after_row_loop_of_a_cell": (lambda: _row_loop_cell().backward(), RuntimeError,
                                         ["modified by an inplace operation"]),
}


def _row_loop_cell():
    T.manual_seed(0)
    lin, cell = nn.Linear(5, 5), nn.LSTMCell(5, 5)
    total = 0
    for x in [T.randn(3, 5), T.randn(2, 5)]:
        h = lin(x)
        state = None
        for t in range(h.shape[0]):
            state = cell(h[t].unsqueeze(0), state)
        h.mul_(0.5)                            # rows the cell's linear saved
        total = total + state[0].sum()
    return total


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_bad_input_raises_as_eagerly(name):
    fn, exc, words = ERROR_CASES[name]
    eager, batched = _raises_alike(fn)
    with pytest.raises(exc):
        fn()
    for w in words:
        assert w in batched, (w, batched)


def test_values_made_before_a_user_exception_stay_readable():
    """PyTorch computes eagerly: tensors made before an exception raised by user code in the
    block keep their values."""
    T.manual_seed(0)
    lin = nn.Linear(5, 3)
    xs = [T.randn(2, 5) for _ in range(3)]
    hs = []
    with pytest.raises(KeyError):
        with autobatch():
            for i, x in enumerate(xs):
                if i == 2:
                    raise KeyError("skip")
                hs.append(lin(x))
    np.testing.assert_allclose([h.sum().item() for h in hs],
                               [lin(x).sum().item() for x in xs[:2]], rtol=1e-6)


# ---------------------------------------------------------------------------- unused values
def _unused_plain(lin, xs):
    total = 0
    for x in xs:
        h = T.tanh(lin(x))
        _unused = h.sum(0) * 3               # dead per-example path
        total = total + (lin(x * 0.5).sum(0) * 3).pow(2).sum()
    return total


def test_unused_values_stay_out_of_backward():
    prog = _unused_plain
    rng = np.random.default_rng(26)
    xs = [T.tensor(rng.standard_normal((2, 5)), dtype=T.float32) for _ in range(3)]
    results = []
    for batched in (False, True):
        T.manual_seed(0)
        lin = nn.Linear(5, 5)
        ctx = autobatch() if batched else _null()
        with ctx:
            loss = prog(lin, xs)
        loss.backward()
        results.append((loss.item(), lin.weight.grad.numpy().copy(), lin.bias.grad))
    (l0, w0, b0), (l1, w1, b1) = results
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    np.testing.assert_allclose(w1, w0, rtol=1e-4, atol=1e-5)


def test_contiguous_view_after_einsum_sharing_a_group_with_a_dropped_call():
    T.manual_seed(0)
    W = nn.Parameter(T.randn(5, 5))
    x = T.randn(2, 5)

    def program():
        T.einsum("rd,de->re", x, W)                  # same signature, result dropped
        y = T.einsum("rd,de->re", x + x, W)
        return y.t().contiguous().view(-1).sum() + y.transpose(0, 1).reshape(-1)[0]
    values = []
    for batched in (False, True):
        W.grad = None
        ctx = autobatch() if batched else _null()
        with ctx:
            loss = program()
        loss.backward()
        values.append((loss.item(), W.grad.numpy().copy()))
    np.testing.assert_allclose(values[1][0], values[0][0], rtol=1e-5)
    np.testing.assert_allclose(values[1][1], values[0][1], rtol=1e-5)


@pytest.mark.parametrize("op", ["einsum", "mm_t", "matmul_t", "bmm_t", "linear_t", "permute"])
def test_view_of_contiguous_of_transposed_results(op):
    """Per-example results whose eager layout may be transposed, then .t().contiguous().view
    (the reshape idiom of attention code), with calls of one signature in several examples."""
    def f(m, x):
        if op == "einsum":
            y = T.einsum("rd,de->re", x, m.W)
        elif op == "mm_t":
            y = T.mm(m.W, x.t()).t()
        elif op == "matmul_t":
            y = (x.t().t() @ m.W.t())
        elif op == "bmm_t":
            y = T.bmm(x.unsqueeze(0), m.W.unsqueeze(0))[0]
        elif op == "linear_t":
            y = F.linear(x, m.W).t().t()
        else:
            y = m.lin(x).unsqueeze(2).permute(2, 1, 0)[0].t()
        return y.t().contiguous().view(-1).pow(2).sum() + y.contiguous().view(-1)[0]

    def program(m, xs):
        total = 0
        for x in xs:
            f(m, x * 0.5)                           # dropped
            total = total + f(m, x) + f(m, x + 1)
        return total
    run_pair(make_params(), program)


# ---------------------------------------------------------------------------- views of views
VIEW_CHAINS = {
    "t_slice_reshape": lambda h: h.t()[1:3].reshape(-1),
    "transpose_step_flatten": lambda h: h.transpose(0, 1)[::2].flatten(),
    "unsqueeze_step_reshape": lambda h: h.unsqueeze(1)[::2].reshape(-1),
    "permute_select_contiguous_view": lambda h: h.unsqueeze(0).permute(0, 2, 1)[0]
    .contiguous().view(-1),
    "t_select": lambda h: h.t()[0],
    "t_t_step": lambda h: h.t().t()[::2],
    "t_unsqueeze_select": lambda h: h.t().unsqueeze(0)[0],
    "mha_reshape": lambda h: h.view(4, 2, 3).transpose(0, 1)[:, :3].reshape(2, -1),
    "t_narrow_contiguous_view": lambda h: h.t().narrow(0, 1, 2).contiguous().view(-1),
}


@pytest.mark.parametrize("name", sorted(VIEW_CHAINS))
def test_views_of_views_keep_the_eager_layout(name):
    """stride() / is_contiguous() of a pending view chain answer as eagerly, and reshape /
    contiguous().view of it work as eagerly (one example, and several of one signature)."""
    fn = VIEW_CHAINS[name]
    T.manual_seed(0)
    lin = nn.Linear(6, 6)
    xs = [T.randn(4, 6) for _ in range(3)]
    eager = [fn(lin(x)) for x in xs]
    meta0 = [(y.stride(), y.is_contiguous(), y.storage_offset()) for y in eager]
    for n in (1, 3):
        with autobatch():
            ys = [fn(lin(x)) for x in xs[:n]]
            meta1 = [(y.stride(), y.is_contiguous(), y.storage_offset()) for y in ys]
            loss = sum(y.pow(2).sum() for y in ys)
        assert meta1 == meta0[:n]
        lin.zero_grad()
        loss.backward()
        g1 = lin.weight.grad.numpy().copy()
        lin.zero_grad()
        l0 = sum(fn(lin(x)).pow(2).sum() for x in xs[:n])
        l0.backward()
        np.testing.assert_allclose(loss.item(), l0.item(), rtol=1e-5)
        np.testing.assert_allclose(g1, lin.weight.grad.numpy(), rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------------------- research models
class BiLSTMCRF(nn.Module):
    """Per-sentence BiLSTM-CRF: the forward algorithm (logsumexp over a Python loop), the gold
    path score with integer indexing, and Viterbi decoding with .item() backtracking."""

    def __init__(self, vocab=15, emb=5, hidden=4, tags=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.fwd = nn.LSTMCell(emb, hidden)
        self.bwd = nn.LSTMCell(emb, hidden)
        self.proj = nn.Linear(2 * hidden, tags)
        self.trans = nn.Parameter(T.randn(tags, tags) * 0.1)
        self.start = nn.Parameter(T.randn(tags) * 0.1)
        self.tags = tags

    def feats(self, ids):
        xs = self.emb(ids)
        n = ids.shape[0]
        hf, hb = [], [None] * n
        s = None
        for t in range(n):
            s = self.fwd(xs[t:t + 1], s)
            hf.append(s[0])
        s = None
        for t in reversed(range(n)):
            s = self.bwd(xs[t:t + 1], s)
            hb[t] = s[0]
        return self.proj(T.cat([T.cat(hf), T.cat(hb)], dim=1))          # (n, tags)

    def nll(self, ids, tags):
        f = self.feats(ids)
        alpha = self.start + f[0]
        for t in range(1, f.shape[0]):
            alpha = T.logsumexp(alpha.unsqueeze(1) + self.trans, dim=0) + f[t]
        log_z = T.logsumexp(alpha, dim=0)
        gold = self.start[tags[0]] + f[0, tags[0]]
        for t in range(1, f.shape[0]):
            gold = gold + self.trans[tags[t - 1], tags[t]] + f[t, tags[t]]
        return log_z - gold

    def viterbi(self, ids):
        f = self.feats(ids)
        score = self.start + f[0]
        back = []
        for t in range(1, f.shape[0]):
            best, idx = (score.unsqueeze(1) + self.trans).max(dim=0)
            back.append(idx)
            score = best + f[t]
        tag = int(score.argmax().item())
        path = [tag]
        for idx in reversed(back):
            tag = int(idx[tag].item())
            path.append(tag)
        return path[::-1], score.max()


def make_crf():
    rng = np.random.default_rng(27)
    data = []
    for _ in range(6):
        n = int(rng.integers(1, 7))
        data.append((T.tensor(rng.integers(0, 15, n).tolist()),
                     T.tensor(rng.integers(0, 4, n).tolist())))
    return BiLSTMCRF(), data


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bilstm_crf_forward_algorithm(dtype):
    run_pair(make_crf, lambda m, d: T.stack([m.nll(i, t) for i, t in d]).mean(), dtype)


def test_bilstm_crf_viterbi_decoding():
    T.manual_seed(0)
    m, data = make_crf()
    eager = [m.viterbi(i) for i, _ in data]
    with autobatch():
        batched = [m.viterbi(i) for i, _ in data]
        total = sum(s for _, s in batched)
    assert [p for p, _ in batched] == [p for p, _ in eager]
    np.testing.assert_allclose(total.item(), sum(s.item() for _, s in eager), rtol=1e-5)


class GraphNet(nn.Module):
    """Per-graph message passing over an edge list with index_add / scatter_add, mean pooling."""

    def __init__(self, d=5):
        super().__init__()
        self.msg = nn.Linear(2 * d, d)
        self.upd = nn.GRUCell(d, d)
        self.out = nn.Linear(d, 1)

    def forward(self, feats, src, dst, steps=2):
        h = feats
        for _ in range(steps):
            m = F.relu(self.msg(T.cat([h[src], h[dst]], dim=1)))         # (E, d)
            agg = T.zeros_like(h).index_add(0, dst, m)
            deg = T.zeros(h.shape[0]).scatter_add(0, dst, T.ones(dst.shape[0])).clamp(min=1)
            h = self.upd(agg / deg.unsqueeze(1), h)
        return self.out(h.mean(0))


def test_graph_network_per_graph():
    def make():
        rng = np.random.default_rng(28)
        data = []
        for _ in range(6):
            n = int(rng.integers(2, 6))
            e = int(rng.integers(1, 8))
            data.append((T.tensor(rng.standard_normal((n, 5)), dtype=T.float32),
                         T.tensor(rng.integers(0, n, e).tolist()),
                         T.tensor(rng.integers(0, n, e).tolist()), float(rng.standard_normal())))
        return GraphNet(), data

    def program(m, data):
        return sum(F.mse_loss(m(f, s, d), T.tensor([y])) for f, s, d, y in data)
    run_pair(make, program)


def test_pointer_network_with_copy_distribution():
    """Attention over the input positions (a pointer), mixed with a vocabulary softmax through
    scatter_add (a copy mechanism), log of the mixture at the gold token."""
    def make():
        rng = np.random.default_rng(29)
        m = nn.Module()
        m.emb = nn.Embedding(12, 6)
        m.enc = nn.GRUCell(6, 6)
        m.gen = nn.Linear(6, 12)
        m.gate = nn.Linear(6, 1)
        data = []
        for _ in range(6):
            n = int(rng.integers(1, 6))
            data.append((T.tensor(rng.integers(0, 12, n).tolist()), int(rng.integers(0, 12))))
        return m, data

    def program(m, data):
        losses = []
        for ids, gold in data:
            xs = m.emb(ids)
            h = T.zeros(1, 6)
            hs = []
            for t in range(ids.shape[0]):
                h = m.enc(xs[t].unsqueeze(0), h)
                hs.append(h)
            H = T.cat(hs)                                           # (n, 6)
            attn = F.softmax(H @ h.squeeze(0), dim=0)               # (n,)
            p_gen = T.sigmoid(m.gate(h)).squeeze()
            vocab = F.softmax(m.gen(h), dim=-1).squeeze(0)          # (12,)
            copy = T.zeros(12).scatter_add(0, ids, attn)
            mix = p_gen * vocab + (1 - p_gen) * copy
            losses.append(-T.log(mix[gold] + 1e-9))
        return T.stack(losses).mean()
    run_pair(make, program)


def test_beam_search_with_topk_and_tensor_indexing():
    """Beam search: topk over beam x vocab scores, hidden states reordered by the chosen beams
    (a pending int tensor used as an index), tokens read back with tolist()."""
    T.manual_seed(0)
    m = nn.Module()
    m.emb = nn.Embedding(8, 4)
    m.cell = nn.GRUCell(4, 5)
    m.out = nn.Linear(5, 8)
    inits = [T.randn(1, 5) for _ in range(4)]

    def search(h0, beam=3, steps=4):
        h = h0.expand(beam, 5).contiguous()
        scores = T.tensor([0.0] + [-1e9] * (beam - 1))
        toks = T.zeros(beam, dtype=T.int64)
        history = []
        for _ in range(steps):
            h = m.cell(m.emb(toks), h)
            logp = F.log_softmax(m.out(h), dim=-1)                 # (beam, V)
            cand = (scores.unsqueeze(1) + logp).view(-1)
            scores, flat = cand.topk(beam)
            src = flat // 8
            toks = flat % 8
            h = h[src]
            history.append(toks.tolist())
        return history, scores

    eager = [search(h0) for h0 in inits]
    with autobatch():
        batched = [search(h0) for h0 in inits]
    for (h0, s0), (h1, s1) in zip(eager, batched):
        assert h0 == h1
        np.testing.assert_allclose(s1.detach().numpy(), s0.detach().numpy(), rtol=1e-5)


def test_char_cnn_word_encoder_variable_word_lengths():
    def make():
        rng = np.random.default_rng(30)
        m = nn.Module()
        m.chars = nn.Embedding(20, 4)
        m.conv = nn.Conv1d(4, 6, kernel_size=3, padding=1)
        m.cls = nn.Linear(6, 3)
        data = [(T.tensor(rng.integers(0, 20, int(rng.integers(1, 8))).tolist()),
                 int(rng.integers(0, 3))) for _ in range(8)]
        return m, data

    def program(m, data):
        losses = []
        for chars, y in data:
            e = m.chars(chars).t().unsqueeze(0)                     # (1, 4, L)
            f = F.relu(m.conv(e))                                   # (1, 6, L)
            pooled = F.max_pool1d(f, f.shape[-1]).squeeze(-1)       # (1, 6)
            losses.append(F.cross_entropy(m.cls(pooled), T.tensor([y])))
        return sum(losses) / len(losses)
    run_pair(make, program)


def test_vae_per_example_elbo_statistics_and_gradients():
    """Reparameterised VAE per example: random draws differ, so compare the gradient of the KL
    term (deterministic) exactly, and the reconstruction term's mean over many draws loosely."""
    T.manual_seed(0)
    enc = nn.Linear(4, 6)
    dec = nn.Linear(3, 4)
    xs = [T.randn(1, 4) for _ in range(6)]

    def kl_only():
        total = 0
        for x in xs:
            mu, logvar = enc(x).chunk(2, dim=-1)
            total = total + (-0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum())
        return total
    enc.zero_grad()
    kl_only().backward()
    g0 = enc.weight.grad.numpy().copy()
    enc.zero_grad()
    with autobatch():
        loss = kl_only()
    loss.backward()
    np.testing.assert_allclose(enc.weight.grad.numpy(), g0, rtol=1e-4, atol=1e-6)

    def elbo():
        total = 0
        for x in xs:
            mu, logvar = enc(x).chunk(2, dim=-1)
            z = mu + T.randn_like(mu) * T.exp(0.5 * logvar)
            total = total + F.mse_loss(dec(z), x, reduction="sum")
        return total
    T.manual_seed(1)
    eager = np.mean([elbo().item() for _ in range(150)])
    with autobatch():
        draws = [elbo() for _ in range(150)]
    batched = np.mean([d.item() for d in draws])
    assert abs(batched - eager) < 0.15 * abs(eager), (batched, eager)


# ---------------------------------------------------------------------------- dtypes, no-rule ops
DTYPE_PROGRAMS = {
    "f32_times_f64": lambda m, x, i: m.lin(x) * T.tensor([1.0, 2.0, 3.0, 4.0, 5.0],
                                                         dtype=T.float64),
    "f32_plus_0d_f64": lambda m, x, i: m.lin(x) + T.tensor(0.5, dtype=T.float64),
    "f32_times_0d_int": lambda m, x, i: m.lin(x) * T.tensor(2),
    "int_times_float": lambda m, x, i: T.arange(3) * 0.5,
    "int_plus_0d_float": lambda m, x, i: T.arange(3) + T.tensor(1.5),
    "bool_sum": lambda m, x, i: (m.lin(x) > 0).sum(1),
    "int_true_div": lambda m, x, i: T.arange(4) / 2,
    "int_floor_div": lambda m, x, i: T.arange(4) // 3,
    "masked_fill_0d_pending": lambda m, x, i: m.lin(x).masked_fill(m.lin(x) < 0, m.lin(x).max()),
    "clamp_tensor_min": lambda m, x, i: m.lin(x).clamp(min=T.tensor([0.0, -0.1, 0.1, 0.0, 0.2])),
    "where_scalars": lambda m, x, i: T.where(m.lin(x) > 0, 1.0, 0),
    "bf16": lambda m, x, i: m.lin(x).to(T.bfloat16),
    "long": lambda m, x, i: m.lin(x).long(),
    "int32_plus": lambda m, x, i: m.lin(x).int() + 1,
    "sum_dtype": lambda m, x, i: m.lin(x).sum(dtype=T.float64),
    "softmax_dtype": lambda m, x, i: F.softmax(m.lin(x), dim=-1, dtype=T.float64),
}


@pytest.mark.parametrize("name", sorted(DTYPE_PROGRAMS))
def test_result_dtypes_and_values(name):
    fn = DTYPE_PROGRAMS[name]
    T.manual_seed(0)
    m, xs = make_params()()
    eager = [fn(m, x, i) for i, x in enumerate(xs)]
    with autobatch():
        batched = [fn(m, x, i) for i, x in enumerate(xs)]
        dtypes = [y.dtype for y in batched]
    assert dtypes == [y.dtype for y in eager]
    for a, b in zip(eager, batched):
        np.testing.assert_allclose(b.detach().float().numpy(), a.detach().float().numpy(),
                                   rtol=1e-5, atol=1e-6)


NO_RULE = {
    "bincount": lambda m, x, i: m.lin(x).sum() + T.bincount(
        (m.lin(x).abs() * 3).long().flatten()).sum().float(),
    "histc": lambda m, x, i: m.lin(x).sum() * T.histc(m.lin(x).detach(), bins=4, min=-2,
                                                      max=2).sum(),
    "unique_consecutive": lambda m, x, i: m.lin(x).sum() + T.unique_consecutive(
        (m.lin(x) > 0).long().flatten()).sum().float(),
    "as_strided": lambda m, x, i: m.lin(x).contiguous().as_strided((2, 2), (1, 3)).sum(),
    "cross_no_dim": lambda m, x, i: T.cross(m.lin(x)[:, :3], m.lin(x * 2)[:, :3]).sum(),
    "diag_of_vector": lambda m, x, i: T.diag(m.lin(x)[0]).pow(2).sum(),
    "nll_with_weight": lambda m, x, i: F.nll_loss(
        F.log_softmax(m.lin(x), 1), T.tensor([i % 5] * x.shape[0]),
        weight=T.tensor([1.0, 2.0, 0.5, 1.0, 1.5])),
    "index_put_accumulate": lambda m, x, i: m.lin(x).index_put(
        (T.tensor([0]),), T.ones(1, 5), accumulate=True).pow(2).sum(),
    "masked_scatter": lambda m, x, i: m.lin(x).masked_scatter(
        m.lin(x) > 0, T.ones(x.shape[0] * 5)).pow(2).sum(),
    "ctc_loss": lambda m, x, i: F.ctc_loss(
        F.log_softmax(m.lin(x), -1).unsqueeze(1), T.tensor([[1]]), T.tensor([x.shape[0]]),
        T.tensor([1]), blank=0),
    "einsum_ellipsis_no_arrow": lambda m, x, i: T.einsum("...d->...", m.lin(x)).sum(),
    "take_repeat_interleave_logcumsumexp": lambda m, x, i: m.lin(x).take(
        T.tensor([0, 2])).sum() + m.lin(x).repeat_interleave(2, dim=0).sum() +
        m.lin(x).logcumsumexp(0).sum(),
    "adaptive_max_pool": lambda m, x, i: F.adaptive_max_pool1d(
        m.lin(x).t().unsqueeze(0), 2).sum(),
    "cummax_cummin": lambda m, x, i: T.cummax(m.lin(x), 0)[0].sum() + T.cummin(
        m.lin(x), 1)[0].sum(),
    "block_diag_cartesian": lambda m, x, i: T.block_diag(m.lin(x), m.lin(x)[:1]).sum() +
        T.cartesian_prod(m.lin(x)[0], m.lin(x)[-1]).sum(),
}


@pytest.mark.parametrize("name", sorted(NO_RULE))
def test_ops_without_a_batching_rule_in_programs(name):
    fn = NO_RULE[name]

    def program(m, xs):
        return sum(fn(m, x, i) for i, x in enumerate(xs))
    run_pair(make_params(rows=(2, 4)), program)


def test_loss_of_shape_one_and_inference_under_no_grad():
    T.manual_seed(0)
    m, xs = make_params()()
    run_pair(make_params(), lambda m, xs: sum(m.lin(x).sum(0)[:1] for x in xs))
    with no_grad():
        eager = [m.lin(x).argmax(-1).tolist() for x in xs]
    with no_grad(), autobatch():
        batched = [m.lin(x).argmax(-1).tolist() for x in xs]
    assert eager == batched

    @autobatch()
    def total():
        return T.stack([m.lin(x).sum() for x in xs]).sum()
    np.testing.assert_allclose(total().item(), sum(m.lin(x).sum().item() for x in xs),
                               rtol=1e-5)


# ---------------------------------------------------------------------------- mutable Python lists
@pytest.mark.parametrize("n", [1, 2, 5])
def test_attention_over_a_growing_history_list(n):
    """A decoder attending over the list of its previous states (hist.append(h) after
    T.stack(hist)): each stack must see the list as it was at the call."""
    def make():
        rng = np.random.default_rng(31 + n)
        m = nn.Module()
        m.cell = nn.GRUCell(4, 5)
        m.out = nn.Linear(10, 3)
        data = [(T.tensor(rng.standard_normal((int(rng.integers(2, 6)), 4)), dtype=T.float32),
                 T.tensor(rng.integers(0, 3, 1).tolist())) for _ in range(n)]
        return m, data

    def program(m, data):
        losses = []
        for xs, y in data:
            h = T.zeros(1, 5)
            hist = [h]
            for t in range(xs.shape[0]):
                K = T.stack(hist)                               # (k, 1, 5), k grows
                a = F.softmax((K * h).sum(-1), dim=0)           # (k, 1)
                ctx = (a.unsqueeze(-1) * K).sum(0)              # (1, 5)
                h = m.cell(xs[t:t + 1], h + ctx)
                hist.append(h)
            feats = T.cat([h, T.cat(hist, 0).mean(0, keepdim=True)], dim=1)
            losses.append(F.cross_entropy(m.out(feats), y))
        return T.stack(losses).mean()
    run_pair(make, program)


def test_stack_and_cat_of_a_list_appended_to_later():
    vals = [T.tensor([float(i)] * 3) for i in range(1, 4)]

    def program(op):
        bank, outs = [], []
        for v in vals:
            bank.append(v * 1.0)
            outs.append(op(bank))
        return outs
    for op in (T.stack, lambda b: T.cat(b, 0)):
        eager = program(op)
        with autobatch():
            batched = program(op)
        for a, b in zip(eager, batched):
            assert tuple(b.shape) == tuple(a.shape)
            np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_indexing_with_a_list_appended_to_later():
    base = T.arange(12.0).view(3, 4)

    def program(index):
        outs, idx = [], [0]
        for k in range(2):
            outs.append(index(base * 1.0, idx))
            idx.append(k + 1)
        return outs
    for index in (lambda h, i: h[i], lambda h, i: h[:, i]):
        eager = program(index)
        with autobatch():
            batched = program(index)
        for a, b in zip(eager, batched):
            np.testing.assert_array_equal(b.numpy(), a.numpy())


def test_shift_reduce_parser_stack_features_from_the_list():
    """Parser features from T.stack over the (mutated) Python stack at every transition."""
    def make():
        prng = random.Random(32)
        data = []
        for _ in range(5):
            n = prng.randint(2, 6)
            data.append((T.tensor([prng.randrange(25) for _ in range(n)]), _oracle(prng, n)))
        return ShiftReduceParser(), data

    def program(m, data):
        total = 0
        for ids, oracle in data:
            buf = list(m.emb(ids).split(1, dim=0))[::-1]
            stack = []
            for gold in oracle:
                feats = T.stack(stack).sum(0) if stack else T.zeros(1, m.d)
                logits = m.score(T.cat([feats, buf[-1] if buf else T.zeros(1, m.d),
                                        T.zeros(1, m.d)], dim=1))
                total = total + F.cross_entropy(logits, T.tensor([gold]))
                if gold == 0:
                    stack.append(buf.pop())
                else:
                    r, l = stack.pop(), stack.pop()
                    stack.append(T.tanh(m.comp(T.cat([l, r], 1))))
        return total
    run_pair(make, program)


LIST_ARG_CASES = {
    "repeat": (lambda h, l: h.repeat(l), [1, 1, 2], lambda l: l.__setitem__(2, 3)),
    "sum_dim_list": (lambda h, l: h.sum(dim=l), [0], lambda l: l.append(1)),
    "mean_dim_list": (lambda h, l: h.mean(l), [2], lambda l: l.append(1)),
    "flip": (lambda h, l: h.flip(l), [0], lambda l: l.append(2)),
    "roll": (lambda h, l: h.roll(l, [0, 1]), [1, 1], lambda l: l.__setitem__(0, 0)),
    "advanced_index_lists": (lambda h, l: h[l, :, l], [0, 1], lambda l: l.__setitem__(0, 1)),
    "view": (lambda h, l: h.view(l), [6, 4], lambda l: l.__setitem__(slice(None), [4, 6])),
    "permute": (lambda h, l: h.permute(l), [2, 1, 0], lambda l: l.reverse()),
    "pad": (lambda h, l: F.pad(h, l), [1, 1], lambda l: l.extend([1, 1])),
    "split_sizes": (lambda h, l: h.split(l, dim=2)[0], [1, 3],
                    lambda l: l.__setitem__(slice(None), [2, 2])),
}


@pytest.mark.parametrize("name", sorted(LIST_ARG_CASES))
def test_list_arguments_mutated_after_the_call(name):
    fn, init, mutate = LIST_ARG_CASES[name]
    base = T.arange(24.0).view(2, 3, 4)
    lst = list(init)
    eager = fn(base * 1.0, lst)
    lst = list(init)
    with autobatch():
        y = fn(base * 1.0, lst)
        mutate(lst)
    assert tuple(y.shape) == tuple(eager.shape)
    np.testing.assert_array_equal(y.numpy(), eager.numpy())


# -------------------------------------------------------------- writes the context cannot see
@pytest.mark.parametrize("make", ["from_numpy", "as_tensor"])
def test_reused_numpy_buffer(make):
    """A loader / environment that refills one NumPy buffer: with ``flush()`` before each
    write (docs/autobatch.md), each example's result uses the buffer's contents at the call."""
    T.manual_seed(0)
    lin = nn.Linear(3, 2)
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    fn = getattr(T, make)

    def program():
        buf = np.zeros(3, dtype=np.float32)
        outs = []
        for row in data:
            flush()  # NumPy's write is not seen by the context: the deferred calls run first
            buf[:] = row
            outs.append(lin(fn(buf)).sum())
        return outs
    eager = [o.item() for o in program()]
    with autobatch():
        batched = program()
    np.testing.assert_allclose([o.item() for o in batched], eager, rtol=1e-6)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_forward_recorded_before_an_optimizer_step(opt):
    """A monitoring loss recorded between backward and step is the loss at the old parameters."""
    values = []
    for batched in (False, True):
        T.manual_seed(0)
        model, data = make_classifier("gru", n=4)()
        optimizer = OPTIMIZERS[opt](model.parameters())

        def step(model=model, data=data, optimizer=optimizer):
            optimizer.zero_grad()
            loss = T.stack([F.cross_entropy(model(i), T.tensor([y])) for i, y in data[:2]]).mean()
            loss.backward()
            monitor = T.stack([F.cross_entropy(model(i), T.tensor([y]))
                               for i, y in data[2:]]).mean()
            optimizer.step()
            return monitor.item()
        ctx = autobatch() if batched else _null()
        with ctx:
            values.append([step() for _ in range(2)])
    np.testing.assert_allclose(values[1], values[0], rtol=1e-5)


@pytest.mark.parametrize("how", ["numpy_write", "data_assign", "module_to_and_back"])
def test_writes_outside_the_registry_after_a_deferred_read(how):
    values = []
    for batched in (False, True):
        T.manual_seed(0)
        lin = nn.Linear(3, 2)
        x = T.randn(2, 3)
        ctx = autobatch() if batched else _null()
        with ctx:
            y = lin(x).sum()
            if how == "numpy_write":
                flush()  # a write through NumPy: the deferred calls run first
                x.numpy()[:] = 0.0
            elif how == "data_assign":
                x.data = T.zeros(2, 3)
            else:
                lin.to(T.float64).to(T.float32)       # parameters' data replaced
            values.append(y.item())
    np.testing.assert_allclose(values[1], values[0], rtol=1e-6)


def test_random_ops_inside_the_loop_draw_from_their_distributions():
    T.manual_seed(0)
    with autobatch():
        perms = [T.randperm(n) for n in [3, 5, 5, 7] * 20]
        ints = [T.randint(2, 9, (4,)) for _ in range(100)]
        normals = [T.normal(T.full((3,), 5.0), 2.0) for _ in range(300)]
        picks = [T.multinomial(T.tensor([0.1, 0.2, 0.7]), 2, replacement=False)
                 for _ in range(300)]
        coins = [T.bernoulli(T.full((10,), 0.3)) for _ in range(100)]
        steps = []
        for _ in range(20):
            mask = F.dropout(T.ones(1, 50), 0.5, training=True)   # variational dropout
            steps.append([(T.randn(1, 50).abs() + 0.1) * mask for _ in range(3)])
    assert all(sorted(p.tolist()) == list(range(len(p))) for p in perms)
    assert len({tuple(p.tolist()) for p in perms if len(p) == 7}) > 15
    iv = np.stack([i.numpy() for i in ints])
    assert iv.min() == 2 and iv.max() == 8 and iv.dtype == np.int64
    nv = np.stack([n.numpy() for n in normals])
    assert abs(nv.mean() - 5) < 0.2 and abs(nv.std() - 2) < 0.2
    mv = np.stack([m.numpy() for m in picks])
    assert all(r[0] != r[1] for r in mv) and 0.6 < (mv[:, 0] == 2).mean() < 0.8
    assert abs(np.stack([c.numpy() for c in coins]).mean() - 0.3) < 0.05
    for hs in steps:                          # one mask per sequence, shared by its steps
        for h in hs[1:]:
            np.testing.assert_array_equal(h.numpy() == 0, hs[0].numpy() == 0)
    assert 0.4 < np.mean([(hs[0].numpy() == 0).mean() for hs in steps]) < 0.6


@pytest.mark.parametrize("action", ["freeze", "unfreeze"])
def test_requires_grad_toggled_after_a_deferred_forward(action):
    grads = []
    for batched in (False, True):
        T.manual_seed(0)
        model, data = make_classifier("gru", n=3)()
        model.out.requires_grad_(action == "freeze")
        ctx = autobatch() if batched else _null()
        with ctx:
            loss = T.stack([F.cross_entropy(model(i), T.tensor([y])) for i, y in data]).sum()
            model.out.requires_grad_(action != "freeze")     # after the forward
        loss.backward()
        grads.append(_grads(model))
    g0, g1 = grads
    for name in g0:
        assert (g1[name] is None) == (g0[name] is None), name
        if g0[name] is not None:
            np.testing.assert_allclose(g1[name], g0[name], rtol=1e-4, atol=1e-5, err_msg=name)
