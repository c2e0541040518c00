"""A recursive neural network built by walking each sentence's binary parse tree.

Define-by-run at its clearest: the graph of every example is the shape of its own parse tree,
so the model is plain recursion over the tree, one sentence at a time (batch size 1). Each
leaf is a word vector; each internal node composes its two children with a TreeLSTM cell (or,
with ``--cell rnn``, ``tanh(W [left; right] + b)``); the root feeds a sentiment classifier.

The data are random binary trees over a small vocabulary, written as bracketed parses
(``( ( good movie ) ( not bad ) )``) and parsed back into trees. Each word has a hidden
polarity (positive, negative or neutral) and a sentence is positive when its positive words
outnumber its negative ones: a label the network can only get by combining the whole tree.

    python examples/tree_network.py --steps 600
"""

from __future__ import annotations

import argparse
import random
import sys

import ember.nn as nn
import ember.optim as optim
import ember.tensor as et
from ember.autograd import no_grad

POSITIVE = ["good", "great", "fun", "moving", "clever", "superb", "charming", "fresh"]
NEGATIVE = ["bad", "dull", "boring", "awful", "flat", "weak", "tedious", "stale"]
NEUTRAL = ["the", "a", "movie", "film", "plot", "actor", "story", "scene", "it", "was",
           "and", "of", "this", "very", "quite", "its"]
VOCAB = POSITIVE + NEGATIVE + NEUTRAL
INDEX = {w: i for i, w in enumerate(VOCAB)}


# --------------------------------------------------------------------------- trees
class Tree:
    """A binary parse tree: a leaf holds a word, an internal node two children."""

    def __init__(self, word: str | None = None, left: Tree | None = None,
                 right: Tree | None = None) -> None:
        self.word, self.left, self.right = word, left, right

    def is_leaf(self) -> bool:
        return self.word is not None

    def leaves(self) -> list[str]:
        return [self.word] if self.is_leaf() else self.left.leaves() + self.right.leaves()


def parse(text: str) -> Tree:
    """``( ( a b ) c )`` -> Tree; a bare word is a leaf, ``( x )`` is x itself."""
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    stack: list[list] = [[]]
    for tok in tokens:
        if tok == "(":
            stack.append([])
        elif tok == ")":
            children = stack.pop()
            node = children[0]
            for child in children[1:]:          # left-branching for n-ary brackets
                node = Tree(left=node, right=child)
            stack[-1].append(node)
        else:
            stack[-1].append(Tree(word=tok))
    (root,) = stack[0]
    return root


def random_parse(rng: random.Random, n_leaves: int) -> str:
    """A random binary bracketing over ``n_leaves`` random words."""
    if n_leaves == 1:
        return rng.choice(VOCAB)
    k = rng.randint(1, n_leaves - 1)
    return f"( {random_parse(rng, k)} {random_parse(rng, n_leaves - k)} )"


def sentiment(tree: Tree) -> int:
    words = tree.leaves()
    score = sum(w in POSITIVE for w in words) - sum(w in NEGATIVE for w in words)
    return 1 if score > 0 else 0


def make_data(rng: random.Random, n: int, min_leaves: int, max_leaves: int):
    data = []
    while len(data) < n:
        tree = parse(random_parse(rng, rng.randint(min_leaves, max_leaves)))
        words = tree.leaves()
        score = sum(w in POSITIVE for w in words) - sum(w in NEGATIVE for w in words)
        if score != 0:                          # keep only clear-cut sentences
            data.append((tree, sentiment(tree)))
    return data


# --------------------------------------------------------------------------- model
class TreeLSTMCell(nn.Module):
    """Binary TreeLSTM composition (Tai et al., 2015) of two (h, c) children."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.W = nn.Linear(2 * size, 5 * size)

    def forward(self, left, right):
        (h_l, c_l), (h_r, c_r) = left, right
        i, f_l, f_r, o, u = self.W(et.cat([h_l, h_r], -1)).chunk(5, -1)
        c = i.sigmoid() * u.tanh() + f_l.sigmoid() * c_l + f_r.sigmoid() * c_r
        return o.sigmoid() * c.tanh(), c


class RNNCell(nn.Module):
    """Plain recursive NN composition: tanh(W [left; right] + b)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.W = nn.Linear(2 * size, size)

    def forward(self, left, right):
        h = self.W(et.cat([left[0], right[0]], -1)).tanh()
        return h, h


class TreeNet(nn.Module):
    def __init__(self, vocab_size: int, size: int, n_classes: int, cell: str = "lstm") -> None:
        super().__init__()
        self.size = size
        self.embed = nn.Embedding(vocab_size, size)
        self.cell = TreeLSTMCell(size) if cell == "lstm" else RNNCell(size)
        self.out = nn.Linear(size, n_classes)

    def encode(self, tree: Tree):
        """Walk the tree: the network's graph is built as the recursion unfolds."""
        if tree.is_leaf():
            x = self.embed(et.tensor([INDEX[tree.word]]))
            return x.tanh(), x
        return self.cell(self.encode(tree.left), self.encode(tree.right))

    def forward(self, tree: Tree):
        h, _ = self.encode(tree)
        return self.out(h)                      # [1, n_classes]


def accuracy(model: TreeNet, data) -> float:
    model.eval()
    with no_grad():
        hits = sum(model(tree).argmax(1).item() == y for tree, y in data)
    model.train()
    return hits / len(data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600,
                        help="training sentences, one per step (default 600)")
    parser.add_argument("--hidden", type=int, default=32, help="state size (default 32)")
    parser.add_argument("--leaves", type=int, nargs=2, default=(3, 12), metavar=("MIN", "MAX"),
                        help="words per sentence (default 3 12)")
    parser.add_argument("--cell", choices=("lstm", "rnn"), default="lstm",
                        help="TreeLSTM (default) or plain recursive NN composition")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    et.manual_seed(args.seed)
    rng = random.Random(args.seed)

    train = make_data(rng, 400, *args.leaves)
    test = make_data(rng, 100, *args.leaves)
    example = random_parse(random.Random(args.seed + 1), 6)
    print(f"example parse: {example}  -> leaves {parse(example).leaves()}")

    model = TreeNet(len(VOCAB), args.hidden, 2, args.cell)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    print(f"test accuracy before training: {100 * accuracy(model, test):.1f}%")

    running = []
    for step in range(1, args.steps + 1):
        tree, label = train[(step - 1) % len(train)]
        optimizer.zero_grad()
        loss = criterion(model(tree), et.tensor([label]))
        loss.backward()
        optimizer.step()
        running.append(loss.item())
        if step % 100 == 0 or step == args.steps:
            print(f"step {step:5d}  loss {sum(running) / len(running):.4f}")
            running = []

    acc = accuracy(model, test)
    print(f"test accuracy after {args.steps} sentences: {100 * acc:.1f}%")
    if args.steps >= 600 and acc < 0.7:
        print("error: the tree network did not learn", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
