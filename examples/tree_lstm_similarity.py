"""A Child-Sum Tree-LSTM (Tai, Socher & Manning, 2015) scoring the semantic relatedness of two
sentences, as in the SICK experiments, on synthetic sentence pairs with dependency trees.

As research code often does, the script builds its dataset once (vocabulary, parsed trees,
scores) and saves the *whole dataset object* with ``torch.save``; it then loads it back for
training. The object is a custom ``Dataset`` subclass holding ``Tree`` objects, so it lands in
the checkpoint's pickled section: ``load`` with the default ``weights_only=True`` refuses it
(``pickle.UnpicklingError``), and ``load(..., weights_only=False)`` (for a file you wrote
yourself) restores it.

Each sentence is a random dependency tree over words from three topics; a pair's relatedness
(1 to 5) grows with the words the two sentences share. The model follows the reference PyTorch
implementation: a Tree-LSTM encodes each tree bottom-up, a similarity module combines
``h_l * h_r`` and ``|h_l - h_r|`` into a distribution over the five scores, trained with
``KLDivLoss`` against the sparse target distribution.

Written against ember's names; the body runs unchanged on PyTorch when the imports at the top are
switched back (``import torch``, ``from torch.utils.data import Dataset``, ...).

    python examples/tree_lstm_similarity.py --epochs 6
"""

from __future__ import annotations

import argparse
import math
import pickle
import random
import sys
from pathlib import Path

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as torch
from ember.autograd import no_grad
from ember.data import Dataset

TOPICS = [
    ["cat", "dog", "runs", "park", "ball", "grass", "plays", "small"],
    ["man", "guitar", "plays", "song", "stage", "loud", "sings", "crowd"],
    ["woman", "cuts", "onion", "knife", "kitchen", "slices", "tomato", "board"],
]
FUNCTION_WORDS = ["a", "the", "is", "in", "on", "with"]
NUM_CLASSES = 5


class Tree:
    """A dependency-tree node: the position of its word in the sentence and its children."""

    def __init__(self, idx: int) -> None:
        self.idx = idx
        self.children: list[Tree] = []
        self.state = None

    def size(self) -> int:
        return 1 + sum(child.size() for child in self.children)


class Vocab:
    def __init__(self, words) -> None:
        self.itos = sorted(set(words))
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, sentence: list[str]):
        return torch.tensor([self.stoi[w] for w in sentence], dtype=torch.long)


def random_tree(n: int, rng: random.Random) -> Tree:
    """A random dependency tree over positions 0..n-1 (each word's head comes before it)."""
    nodes = [Tree(i) for i in range(n)]
    for i in range(1, n):
        nodes[rng.randrange(i)].children.append(nodes[i])
    return nodes[0]


def random_pair(rng: random.Random):
    topic = rng.randrange(len(TOPICS))
    left = rng.sample(TOPICS[topic], rng.randint(3, 5))
    overlap = rng.randint(0, len(left))
    kept = rng.sample(left, overlap)
    other = TOPICS[topic] if rng.random() < 0.5 else TOPICS[rng.randrange(len(TOPICS))]
    fresh = [w for w in other if w not in kept]
    right = kept + rng.sample(fresh, min(len(fresh), rng.randint(1, 3)))
    rng.shuffle(right)
    shared = len(set(left) & set(right)) / len(set(left) | set(right))
    score = 1.0 + 4.0 * shared
    left = left + rng.sample(FUNCTION_WORDS, 2)
    right = right + rng.sample(FUNCTION_WORDS, 2)
    rng.shuffle(left)
    return left, right, score


class SimilarityDataset(Dataset):
    """Sentence pairs with their trees and relatedness scores, as in the SICK dataset class."""

    def __init__(self, pairs, vocab: Vocab, rng: random.Random) -> None:
        self.vocab = vocab
        self.lsentences = [vocab.encode(left) for left, _, _ in pairs]
        self.rsentences = [vocab.encode(right) for _, right, _ in pairs]
        self.ltrees = [random_tree(len(left), rng) for left, _, _ in pairs]
        self.rtrees = [random_tree(len(right), rng) for _, right, _ in pairs]
        self.labels = torch.tensor([score for _, _, score in pairs])

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return (self.ltrees[index], self.lsentences[index], self.rtrees[index],
                self.rsentences[index], self.labels[index])


class ChildSumTreeLSTM(nn.Module):
    def __init__(self, in_dim: int, mem_dim: int) -> None:
        super().__init__()
        self.mem_dim = mem_dim
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim)
        self.fx = nn.Linear(in_dim, mem_dim)
        self.fh = nn.Linear(mem_dim, mem_dim)

    def node_forward(self, inputs, child_c, child_h):
        child_h_sum = torch.sum(child_h, dim=0, keepdim=True)
        iou = self.ioux(inputs) + self.iouh(child_h_sum)
        i, o, u = torch.split(iou, iou.size(1) // 3, dim=1)
        i, o, u = torch.sigmoid(i), torch.sigmoid(o), torch.tanh(u)
        f = torch.sigmoid(self.fh(child_h) + self.fx(inputs).repeat(len(child_h), 1))
        fc = torch.mul(f, child_c)
        c = torch.mul(i, u) + torch.sum(fc, dim=0, keepdim=True)
        h = torch.mul(o, torch.tanh(c))
        return c, h

    def forward(self, tree: Tree, inputs):
        for child in tree.children:
            self.forward(child, inputs)
        if not tree.children:
            child_c = inputs[0].detach().new(1, self.mem_dim).fill_(0.0).requires_grad_()
            child_h = inputs[0].detach().new(1, self.mem_dim).fill_(0.0).requires_grad_()
        else:
            child_c, child_h = zip(*(child.state for child in tree.children))
            child_c, child_h = torch.cat(child_c, dim=0), torch.cat(child_h, dim=0)
        tree.state = self.node_forward(inputs[tree.idx].unsqueeze(0), child_c, child_h)
        return tree.state


class Similarity(nn.Module):
    def __init__(self, mem_dim: int, hidden_dim: int, num_classes: int) -> None:
        super().__init__()
        self.wh = nn.Linear(2 * mem_dim, hidden_dim)
        self.wp = nn.Linear(hidden_dim, num_classes)

    def forward(self, lvec, rvec):
        mult_dist = torch.mul(lvec, rvec)
        abs_dist = torch.abs(torch.add(lvec, -rvec))
        vec_dist = torch.cat((mult_dist, abs_dist), 1)
        out = torch.sigmoid(self.wh(vec_dist))
        return F.log_softmax(self.wp(out), dim=1)


class SimilarityTreeLSTM(nn.Module):
    def __init__(self, vocab_size: int, in_dim: int, mem_dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab_size, in_dim)
        self.childsumtreelstm = ChildSumTreeLSTM(in_dim, mem_dim)
        self.similarity = Similarity(mem_dim, hidden_dim, NUM_CLASSES)

    def forward(self, ltree, linputs, rtree, rinputs):
        _, lstate = self.childsumtreelstm(ltree, self.emb(linputs))
        _, rstate = self.childsumtreelstm(rtree, self.emb(rinputs))
        return self.similarity(lstate, rstate)


def map_label_to_target(label: float):
    """A score in [1, 5] as a distribution over the two nearest integer classes."""
    target = torch.zeros(1, NUM_CLASSES)
    ceil, floor = int(math.ceil(label)), int(math.floor(label))
    if ceil == floor:
        target[0, floor - 1] = 1.0
    else:
        target[0, floor - 1] = ceil - label
        target[0, ceil - 1] = label - floor
    return target


def pearson(x, y) -> float:
    x, y = x - x.mean(), y - y.mean()
    return (x * y).sum().item() / max(math.sqrt((x * x).sum().item() * (y * y).sum().item()),
                                      1e-12)


def evaluate(model, dataset):
    model.eval()
    classes = torch.arange(1, NUM_CLASSES + 1, dtype=torch.float32)
    predictions = torch.zeros(len(dataset))
    with no_grad():
        for index in range(len(dataset)):
            ltree, linput, rtree, rinput, _ = dataset[index]
            output = model(ltree, linput, rtree, rinput)
            predictions[index] = torch.dot(classes, output.squeeze(0).exp())
    return predictions


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a Child-Sum Tree-LSTM on synthetic sentence relatedness; the script "
        "saves and reloads its whole dataset object.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=6, help="training epochs")
    parser.add_argument("--train-pairs", type=int, default=120, help="training sentence pairs")
    parser.add_argument("--test-pairs", type=int, default=40, help="test sentence pairs")
    parser.add_argument("--batch-size", type=int, default=10,
                        help="pairs whose gradients are summed per optimizer step")
    parser.add_argument("--input-dim", type=int, default=32, help="word vector size")
    parser.add_argument("--mem-dim", type=int, default=32, help="Tree-LSTM memory size")
    parser.add_argument("--hidden-dim", type=int, default=16, help="similarity hidden size")
    parser.add_argument("--lr", type=float, default=5e-2, help="Adagrad learning rate")
    parser.add_argument("--out", default="runs/treelstm",
                        help="output folder for the saved dataset")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.train_pairs < 2 or args.test_pairs < 2:
        parser.error("--train-pairs and --test-pairs must be at least 2")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    pairs = [random_pair(rng) for _ in range(args.train_pairs + args.test_pairs)]
    vocab = Vocab([w for left, right, _ in pairs for w in left + right])
    train_set = SimilarityDataset(pairs[: args.train_pairs], vocab, rng)
    test_set = SimilarityDataset(pairs[args.train_pairs:], vocab, rng)

    # save the whole dataset objects, as preprocessing scripts do, then load them back
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sick_like_dataset.pt"
    torch.save({"train": train_set, "test": test_set, "vocab_size": len(vocab)}, path)
    try:
        torch.load(path)
        print("error: weights_only=True unpickled a custom Dataset", file=sys.stderr)
        return 1
    except pickle.UnpicklingError as exc:
        print(f"load(weights_only=True) refuses the dataset: {str(exc).splitlines()[0]}")
    saved = torch.load(path, weights_only=False)
    train_set, test_set = saved["train"], saved["test"]
    ltree, linput, _, _, label = train_set[0]
    print(f"reloaded {type(train_set).__name__}: {len(train_set)} train / {len(test_set)} test "
          f"pairs, vocabulary {saved['vocab_size']}; first pair: "
          f"{' '.join(train_set.vocab.itos[i] for i in linput.tolist())!r} "
          f"(tree of {ltree.size()} nodes), score {label.item():.2f}")

    model = SimilarityTreeLSTM(saved["vocab_size"], args.input_dim, args.mem_dim,
                               args.hidden_dim)
    criterion = nn.KLDivLoss(reduction="batchmean")
    optimizer = optim.Adagrad(model.parameters(), lr=args.lr, weight_decay=1e-4)
    test_labels = test_set.labels
    first_loss = None
    for epoch in range(1, args.epochs + 1):
        model.train()
        total_loss = 0.0
        optimizer.zero_grad()
        order = torch.randperm(len(train_set)).tolist()
        for k, index in enumerate(order, start=1):
            ltree, linput, rtree, rinput, label = train_set[index]
            output = model(ltree, linput, rtree, rinput)
            loss = criterion(output, map_label_to_target(label.item()))
            total_loss += loss.item()
            (loss / args.batch_size).backward()
            if k % args.batch_size == 0 or k == len(order):
                optimizer.step()
                optimizer.zero_grad()
        train_loss = total_loss / len(train_set)
        first_loss = train_loss if first_loss is None else first_loss
        predictions = evaluate(model, test_set)
        mse = F.mse_loss(predictions, test_labels).item()
        print(f"epoch {epoch:3d}  train loss {train_loss:.4f}  test MSE {mse:.4f}  "
              f"test Pearson r {pearson(predictions, test_labels):.4f}", flush=True)
    print(f"loss went from {first_loss:.4f} to {train_loss:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
