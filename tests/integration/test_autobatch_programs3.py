"""Third round of per-example programs under ``autobatch()`` (the first two rounds are
test_autobatch_programs.py and test_autobatch_programs2.py): whole research models ported from
PyTorch code, each trained or evaluated per example as its paper's reference code does (Tree-LSTMs,
recursive autoencoders, transition parsers, SPINN, seq2seq with attention and beam search, CRFs,
message-passing GNNs, set transformers, memory networks, ACT, hierarchical RNNs, flows, CTC,
DP-SGD), often for several optimizer steps.

Each program runs twice from the same seed and parameters, eagerly and inside ``autobatch()``;
every value it reports (losses, gradients, parameters after training) must agree (float32
within rounding, float64 tightly). Random programs compare statistics. Public API only."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as T
from ember.autograd import autobatch, grad, no_grad

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-9, atol=1e-11)}
DT = {"float32": T.float32, "float64": T.float64}


def _np(v):
    if v is None:
        return None
    if isinstance(v, T.Tensor):
        return v.detach().numpy().copy()
    return np.asarray(v)


def _collect(out):
    flat = {}
    for k, v in out.items():
        if isinstance(v, (list, tuple)) and v and isinstance(v[0], T.Tensor):
            for j, t in enumerate(v):
                flat[f"{k}[{j}]"] = _np(t)
        elif isinstance(v, dict):
            for j, t in v.items():
                flat[f"{k}.{j}"] = _np(t)
        else:
            flat[k] = _np(v)
    return flat


def twice(program, dtype="float32", seed=0):
    """``program(batched)`` builds its model and data from the seed and returns a report (a dict)
    of values; run eagerly and inside autobatch (the program opens the context through ``ctx``)."""
    reports = []
    for batched in (False, True):
        T.manual_seed(seed)
        np.random.seed(seed)
        reports.append(_collect(program(batched)))
    r0, r1 = reports
    assert r0.keys() == r1.keys()
    for k in r0:
        a, b = r0[k], r1[k]
        if a is None:
            assert b is None or not np.any(b), k
            continue
        assert b is not None, k
        assert a.shape == b.shape, (k, a.shape, b.shape)
        assert a.dtype == b.dtype, (k, a.dtype, b.dtype)
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(b, a, err_msg=k, **TOL[dtype])
        else:
            np.testing.assert_array_equal(b, a, err_msg=k)
    return r0, r1


class _Null:
    stats = {"calls": 1}

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def ctx(batched):
    return autobatch() if batched else _Null()


def grads_of(model):
    return {n: p.grad for n, p in model.named_parameters()}


def params_of(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def train(model, data, step_loss, batched, steps=3, opt="adam", lr=0.01, clip=None, sched=False):
    """Several steps: the per-example loss over the minibatch inside the context, backward and
    the optimizer step outside. Reports every step's loss and the final parameters."""
    if opt == "adam":
        o = optim.Adam(model.parameters(), lr=lr)
    elif opt == "adamw":
        o = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    else:
        o = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    s = optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5) if sched else None
    losses = []
    for _ in range(steps):
        o.zero_grad()
        with ctx(batched):
            loss = step_loss(model, data)
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        o.step()
        if s is not None:
            s.step()
        losses.append(loss.detach())
    return {"losses": losses, "params": params_of(model)}


def rand_tree(rng, n_leaves, vocab, arity=2, max_arity=3):
    """A random tree: a leaf is an int word id; a node is a list of children (2..max_arity when
    ``arity`` is None, else exactly ``arity``)."""
    nodes = [int(rng.integers(vocab)) for _ in range(n_leaves)]
    while len(nodes) > 1:
        k = arity or int(rng.integers(2, max_arity + 1))
        k = min(k, len(nodes))
        i = int(rng.integers(0, len(nodes) - k + 1))
        nodes[i:i + k] = [nodes[i:i + k]]
    return nodes[0]


# ============================================================== tree-structured models


class ChildSumTreeLSTM(nn.Module):
    """Tai et al. 2015, child-sum variant, sentiment at every node (the reference
    treelstm.pytorch code: per-node classifier, loss summed over nodes)."""

    def __init__(self, vocab, dim, hid, classes):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.ioux = nn.Linear(dim, 3 * hid)
        self.iouh = nn.Linear(hid, 3 * hid)
        self.fx = nn.Linear(dim, hid)
        self.fh = nn.Linear(hid, hid)
        self.out = nn.Linear(hid, classes)
        self.hid = hid

    def node_forward(self, x, child_c, child_h):
        child_h_sum = T.sum(child_h, dim=0, keepdim=True)
        iou = self.ioux(x) + self.iouh(child_h_sum)
        i, o, u = T.split(iou, iou.size(1) // 3, dim=1)
        i, o, u = T.sigmoid(i), T.sigmoid(o), T.tanh(u)
        f = T.sigmoid(self.fh(child_h) + self.fx(x).repeat(len(child_h), 1))
        fc = T.mul(f, child_c)
        c = T.mul(i, u) + T.sum(fc, dim=0, keepdim=True)
        h = T.mul(o, T.tanh(c))
        return c, h

    def forward(self, tree, label_of, losses):
        if isinstance(tree, int):
            x = self.emb(T.tensor([tree]))
            dt = self.out.weight.dtype
            c, h = self.node_forward(x, T.zeros(1, self.hid, dtype=dt), T.zeros(1, self.hid, dtype=dt))
        else:
            states = [self.forward(ch, label_of, losses) for ch in tree]
            child_c = T.cat([s[0] for s in states], 0)
            child_h = T.cat([s[1] for s in states], 0)
            x = self.emb.weight.new_zeros(1, self.emb.embedding_dim)
            c, h = self.node_forward(x, child_c, child_h)
        logits = self.out(h)
        losses.append(F.cross_entropy(logits, T.tensor([label_of(tree)])))
        return c, h


def _tree_label(tree):
    return (tree if isinstance(tree, int) else sum(map(_tree_label, tree))) % 3


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_child_sum_tree_lstm_sentiment_at_every_node_training(dtype):
    rng = np.random.default_rng(1)
    trees = [rand_tree(rng, int(rng.integers(1, 9)), 20, arity=None, max_arity=4) for _ in range(6)]

    def program(batched):
        model = ChildSumTreeLSTM(20, 8, 10, 3).to(DT[dtype])

        def step(m, data):
            losses = []
            for t in data:
                m(t, _tree_label, losses)
            return sum(losses) / len(losses)
        return train(model, trees, step, batched, steps=3, opt="adam")
    twice(program, dtype)


class NaryTreeLSTM(nn.Module):
    """Binary (N-ary, N=2) Tree-LSTM: a forget gate per child, gates from the children's
    concatenated hidden states (Tai et al. 2015, section 3.2)."""

    def __init__(self, vocab, dim, hid, classes, n=2):
        super().__init__()
        self.n, self.hid = n, hid
        self.emb = nn.Embedding(vocab, dim)
        self.leaf = nn.Linear(dim, 2 * hid)
        self.W = nn.Linear(n * hid, (3 + n) * hid)
        self.out = nn.Linear(hid, classes, bias=False)

    def forward(self, tree, logits):
        if isinstance(tree, int):
            cx = self.leaf(self.emb(T.tensor(tree)))
            c, o = cx.chunk(2)
            h = T.sigmoid(o) * T.tanh(c)
        else:
            kids = [self.forward(t, logits) for t in tree]
            hs = T.cat([k[1] for k in kids])
            cs = T.stack([k[0] for k in kids])
            g = self.W(hs).view(3 + self.n, self.hid)
            i, o, u = g[0].sigmoid(), g[1].sigmoid(), g[2].tanh()
            f = g[3:].sigmoid()
            c = i * u + (f * cs).sum(0)
            h = o * c.tanh()
        logits.append(self.out(h))
        return c, h


def test_nary_tree_lstm_binary_trees_loss_at_every_node_with_sgd_and_clipping():
    rng = np.random.default_rng(2)
    trees = [rand_tree(rng, int(rng.integers(1, 10)), 15, arity=2) for _ in range(7)]

    def program(batched):
        model = NaryTreeLSTM(15, 6, 8, 5)

        def step(m, data):
            per_tree = []
            for t in data:
                logits = []
                m(t, logits)
                lg = T.stack(logits)
                y = T.arange(len(logits)) % 5
                per_tree.append(F.cross_entropy(lg, y, reduction="sum"))
            return T.stack(per_tree).mean()
        return train(model, trees, step, batched, steps=3, opt="sgd", lr=0.05, clip=1.0)
    twice(program)


class RAE(nn.Module):
    """Recursive autoencoder (Socher et al. 2011): greedily merges the adjacent pair with the
    lowest reconstruction error (chosen by ``.item()``), loss summed over merges."""

    def __init__(self, vocab, d):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.enc = nn.Linear(2 * d, d)
        self.dec = nn.Linear(d, 2 * d)

    def merge(self, a, b):
        ab = T.cat([a, b])
        p = F.normalize(T.tanh(self.enc(ab)), dim=0)
        rec = self.dec(p)
        err = 0.5 * ((rec - ab) ** 2).sum()
        return p, err

    def forward(self, words):
        nodes = list(self.emb(words).unbind(0))
        total = T.zeros(())
        while len(nodes) > 1:
            cands = [self.merge(nodes[i], nodes[i + 1]) for i in range(len(nodes) - 1)]
            errs = T.stack([c[1] for c in cands])
            j = int(errs.argmin().item())
            total = total + cands[j][1]
            nodes[j:j + 2] = [cands[j][0]]
        return total, nodes[0]


def test_recursive_autoencoder_greedy_merges_by_item():
    rng = np.random.default_rng(3)
    sents = [T.tensor(rng.integers(0, 30, int(rng.integers(1, 8))).tolist()) for _ in range(6)]

    def program(batched):
        model = RAE(30, 6)
        cls = nn.Linear(6, 2)
        with ctx(batched):
            totals, roots = zip(*[model(s) for s in sents])
            sup = F.cross_entropy(cls(T.stack(roots)), T.tensor([len(s) % 2 for s in sents]))
            loss = sum(totals) + sup
        loss.backward()
        return {"loss": loss, "roots": list(roots), "g": grads_of(model), "gc": grads_of(cls)}
    twice(program)


def test_dag_network_with_shared_subcomputations_and_topological_order():
    """A DAG per example (each node reads 1-3 earlier nodes), computed in topological order with a
    node-type-specific Linear, mean-aggregated inputs, output = sink's value."""
    rng = np.random.default_rng(4)
    dags = []
    for _ in range(6):
        n = int(rng.integers(2, 8))
        preds = [[]] + [sorted(set(rng.integers(0, i, int(rng.integers(1, 4))).tolist()))
                        for i in range(1, n)]
        types = rng.integers(0, 3, n).tolist()
        dags.append((preds, types, T.tensor(rng.standard_normal(5), dtype=T.float32)))

    def program(batched):
        layers = nn.ModuleList([nn.Linear(5, 5) for _ in range(3)])
        head = nn.Linear(5, 1)
        with ctx(batched):
            outs = []
            for preds, types, x in dags:
                vals = [T.tanh(layers[types[0]](x))]
                for i in range(1, len(preds)):
                    agg = T.stack([vals[p] for p in preds[i]]).mean(0)
                    vals.append(F.gelu(layers[types[i]](agg)) + 0.5 * agg)
                outs.append(head(vals[-1]).squeeze())
            y = T.stack(outs)
            loss = F.smooth_l1_loss(y, T.linspace(-1, 1, len(outs)), beta=0.5)
        loss.backward()
        return {"loss": loss, "y": y, "g": grads_of(layers), "gh": grads_of(head)}
    twice(program)
