"""Automatic batching (``ember.autograd.autobatch``): per-example code over differently shaped
graphs, run at minibatch speed.

Workloads, in one process (rounds alternate the variants so they meet the same machine state):

* the binary Tree-LSTM of the W7 anchor (``../shared/bench/anchors.py``: random 30-leaf trees,
  vocabulary 1000, 5 classes), hidden 64 and 256, forward + backward, time per tree:
  ember inside ``autobatch()`` over minibatches of 32 trees (one backward per minibatch of the
  summed losses), ember without it and PyTorch, both one tree at a time (W7's loop);
* a per-example LSTM acceptor (``LSTMCell`` over each sequence, no padding code; lengths 5 to
  50, embedding 64, hidden 128, 32 sequences a minibatch) inside ``autobatch()``, against the
  hand-padded ``PackedSequence`` ``nn.LSTM`` on the same data, time per sequence.

Prints a Markdown table: median times, and the medians of the per-round ratios. Goals
(issue 18): autobatch at least 8x faster than ember without it, at least 3x (hidden 64) and 5x
(hidden 256) faster than PyTorch per tree; the acceptor within 2x of the packed LSTM. No
assertions on time.

On ``--device cuda`` every variant runs on the GPU and each step ends by waiting for its
queued work.

    python benchmarks/bench_autobatch.py [--rounds N] [--threads N] [--quick] [--device cuda]
"""
from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

import ember.nn as enn
import ember.nn.functional as eF
import ember.tensor as et
from ember.autograd import autobatch
from ember.nn.utils.rnn import pack_sequence

VOCAB, CLASSES, LEAVES, BATCH = 1000, 5, 30, 32


def random_trees(n_trees, n_leaves, seed=0):
    rng = random.Random(seed)

    def build(n):
        if n == 1:
            return rng.randrange(VOCAB)
        k = rng.randint(1, n - 1)
        return (build(k), build(n - k))

    return [build(n_leaves) for _ in range(n_trees)]


def leaves(tree):
    return [tree] if not isinstance(tree, tuple) else leaves(tree[0]) + leaves(tree[1])


def tree_model(T, nn, F, H):
    """W7's Tree-LSTM, written once against the names ember and PyTorch share."""

    class TreeLSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, H)
            self.leaf = nn.Linear(H, 3 * H)
            self.comp = nn.Linear(2 * H, 5 * H)
            self.out = nn.Linear(H, CLASSES)

        def node(self, tree, xs, pos):
            if not isinstance(tree, tuple):
                x = xs[pos[0]:pos[0] + 1]
                pos[0] += 1
                i, o, u = self.leaf(x).chunk(3, 1)
                c = T.sigmoid(i) * T.tanh(u)
                return T.sigmoid(o) * T.tanh(c), c
            hl, cl = self.node(tree[0], xs, pos)
            hr, cr = self.node(tree[1], xs, pos)
            i, fl, fr, o, u = self.comp(T.cat([hl, hr], 1)).chunk(5, 1)
            c = T.sigmoid(i) * T.tanh(u) + T.sigmoid(fl) * cl + T.sigmoid(fr) * cr
            return T.sigmoid(o) * T.tanh(c), c

        def forward(self, tree, ids, label):
            h, _ = self.node(tree, self.emb(ids), [0])
            return F.cross_entropy(self.out(h), label)

    T.manual_seed(0)
    return TreeLSTM()


def synchronizer(device):
    """``sync()``: wait for the device's queued work (both frameworks'), so that a step's time
    is its work's; nothing to wait for on the CPU."""
    if device == "cpu":
        return lambda: None
    import torch

    def sync():
        et.cuda.synchronize()
        torch.cuda.synchronize()

    return sync


def tree_steps(H, device="cpu"):
    """(name, step) for the three Tree-LSTM variants at hidden ``H`` on ``device``."""
    import torch
    import torch.nn as tnn
    import torch.nn.functional as tF

    trees = random_trees(BATCH, LEAVES)
    labels = np.random.default_rng(0).integers(0, CLASSES, BATCH)
    sync = synchronizer(device)
    out = []
    for T, nn, F, name in ((et, enn, eF, "ember"), (torch, tnn, tF, "torch")):
        model = tree_model(T, nn, F, H).to(device)
        params = list(model.parameters())
        data = [(tr, T.tensor(leaves(tr), device=device), T.tensor([int(y)], device=device))
                for tr, y in zip(trees, labels)]

        def one_at_a_time(model=model, params=params, data=data):
            for tr, ids, y in data:
                for p in params:
                    p.grad = None
                model(tr, ids, y).backward()
            sync()

        out.append((name, one_at_a_time))
        if name == "ember":
            def batched(model=model, params=params, data=data):
                for p in params:
                    p.grad = None
                with autobatch():
                    loss = et.stack([model(tr, ids, y) for tr, ids, y in data]).sum()
                loss.backward()
                sync()

            out.append(("autobatch", batched))
    return out


def acceptor_steps(device="cpu"):
    E, H, n = 64, 128, BATCH
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 51, n)
    seqs = [et.tensor(rng.integers(0, VOCAB, int(L)), device=device) for L in lengths]
    labels = et.tensor(rng.integers(0, 2, n))
    targets = [et.tensor([int(y)], device=device) for y in labels.tolist()]
    sync = synchronizer(device)
    et.manual_seed(0)
    emb, cell, lstm = enn.Embedding(VOCAB, E), enn.LSTMCell(E, H), enn.LSTM(E, H)
    out = enn.Linear(H, 2)
    for m in (emb, cell, lstm, out):
        m.to(device)
    lstm.weight_ih_l0, lstm.weight_hh_l0 = cell.weight_ih, cell.weight_hh
    lstm.bias_ih_l0, lstm.bias_hh_l0 = cell.bias_ih, cell.bias_hh
    params = list(emb.parameters()) + list(cell.parameters()) + list(out.parameters())

    def per_example():
        for p in params:
            p.grad = None
        with autobatch():
            losses = []
            for s, y in zip(seqs, targets):
                xs = emb(s)
                h = c = et.zeros(1, H, device=device)
                for t in range(xs.shape[0]):
                    h, c = cell(xs[t:t + 1], (h, c))
                losses.append(eF.cross_entropy(out(h), y))
            loss = et.stack(losses).sum()
        loss.backward()
        sync()

    def packed():
        for p in params:
            p.grad = None
        order = sorted(range(n), key=lambda i: -int(lengths[i]))
        packed_x = pack_sequence([emb(seqs[i]) for i in order])
        _, (h, _) = lstm(packed_x)
        logits = out(h[0])
        tgt = et.tensor([int(labels[i]) for i in order], device=device)
        (eF.cross_entropy(logits, tgt, reduction="sum")).backward()
        sync()

    return [("autobatch", per_example), ("packed", packed)]


def measure(steps, rounds):
    """Seconds per call of each step in each round, the variants alternating round by round
    (so the variants of one round meet the same machine state)."""
    for _, fn in steps:
        fn()  # warm-up
    times = {name: [] for name, _ in steps}
    for _ in range(rounds):
        for name, fn in steps:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def median(ts):
    return statistics.median(ts)


def ratio(num, den):
    """The median of the per-round ratios ``num / den`` (steadier on a shared machine than
    the ratio of the medians)."""
    return statistics.median(a / b for a, b in zip(num, den))


def fmt(s):
    return f"{s * 1e3:.2f} ms"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="hidden 64 only, 3 rounds")
    ap.add_argument("--device", default="cpu", help="cpu or cuda: both frameworks run there")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    except ImportError:
        pass
    rounds = 3 if args.quick else args.rounds
    rows = []
    for H in (64,) if args.quick else (64, 256):
        t = measure(tree_steps(H, args.device), rounds)
        rows.append((f"Tree-LSTM W7, hidden {H}, per tree", t["autobatch"], t["ember"],
                     t["torch"]))
    t = measure(acceptor_steps(args.device), rounds)
    print(f"Device {args.device}. Times: medians of {rounds} rounds; ratios: medians of the "
          "per-round ratios.")
    print()
    print("| workload | autobatch | ember, one at a time | PyTorch, one at a time "
          "| ember / autobatch | PyTorch / autobatch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, ab, e, tt in rows:
        print(f"| {name} | {fmt(median(ab) / BATCH)} | {fmt(median(e) / BATCH)} | "
              f"{fmt(median(tt) / BATCH)} | {ratio(e, ab):.1f}x | {ratio(tt, ab):.1f}x |")
    print()
    print("| workload | autobatch, per-example LSTMCell | packed nn.LSTM | autobatch / packed |")
    print("| --- | ---: | ---: | ---: |")
    print(f"| LSTM acceptor, lengths 5-50, per sequence | {fmt(median(t['autobatch']) / BATCH)} | "
          f"{fmt(median(t['packed']) / BATCH)} | {ratio(t['autobatch'], t['packed']):.2f} |")
    return [(name, median(ab) / BATCH, median(e) / BATCH, median(tt) / BATCH)
            for name, ab, e, tt in rows]


if __name__ == "__main__":
    main()
