"""A recursive tree network (batch size 1, random 30-leaf binary trees, hidden 64): one
training step per tree (forward by walking the tree, backward, SGD), ember vs PyTorch CPU.

    python benchmarks/bench_tree.py
"""
from __future__ import annotations

import random

from _harness import table, timeit

HIDDEN, LEAVES, VOCAB = 64, 30, 1000


def _random_tree(rng: random.Random, n: int):
    """A random binary tree over ``n`` leaf word ids: nested 2-tuples."""
    nodes = [rng.randrange(VOCAB) for _ in range(n)]
    while len(nodes) > 1:
        i = rng.randrange(len(nodes) - 1)
        nodes[i:i + 2] = [(nodes[i], nodes[i + 1])]
    return nodes[0]


def _make(lib, nn, F, optim):
    class TreeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(VOCAB, HIDDEN)
            self.compose = nn.Linear(2 * HIDDEN, HIDDEN)
            self.out = nn.Linear(HIDDEN, 2)

        def encode(self, tree):
            if isinstance(tree, int):
                return self.embed(lib.tensor([tree]))
            left, right = self.encode(tree[0]), self.encode(tree[1])
            return lib.tanh(self.compose(lib.cat([left, right], 1)))

        def forward(self, tree):
            return self.out(self.encode(tree))

    model = TreeNet()
    opt = optim.SGD(model.parameters(), lr=0.01)
    return model, opt


def main() -> list[tuple]:
    import torch
    import torch.nn as tnn
    import torch.nn.functional as tF

    import ember.nn as enn
    import ember.nn.functional as eF
    import ember.optim as eoptim
    import ember.tensor as et

    torch.set_num_threads(2)
    rng = random.Random(0)
    trees = [_random_tree(rng, LEAVES) for _ in range(20)]
    times = [timeit(_stepper(lib, nn, F, optim, trees), repeat=5)
             for lib, nn, F, optim in ((et, enn, eF, eoptim), (torch, tnn, tF, torch.optim))]
    return [("tree network step (30 leaves, hidden 64, batch 1)", times[0], times[1])]


def _stepper(lib, nn, F, optim, trees):
    """One SGD step per call, cycling through ``trees``."""
    model, opt = _make(lib, nn, F, optim)
    target = lib.tensor([1])
    it = iter(range(10**9))

    def step():
        tree = trees[next(it) % len(trees)]
        opt.zero_grad()
        loss = F.cross_entropy(model(tree), target)
        loss.backward()
        opt.step()

    return step


if __name__ == "__main__":
    print(table(main(), "recursive tree network"))
