"""A SPINN-style shift-reduce encoder for natural language inference (SNLI).

Sentences come with their binary parses; ``ember.data.text.datasets.SNLI`` with a
``ShiftReduceField`` turns each parse into transitions (a word is ``shift``, a closing bracket
``reduce``) and ``BucketIterator`` batches examples of similar length. The encoder keeps, for
every example of the batch, a buffer of word states and a stack: at each time step it shifts
the next word onto the stack or reduces the top two entries with a TreeLSTM composition, all
the reductions of one time step in one batched call, as in the SPINN of Bowman et al. (2016)
and PyTorch's "Recursive Neural Networks" post. Premise and hypothesis encodings feed an MLP
classifier over {entailment, contradiction, neutral}.

By default it reads the tiny sample files shipped with ember-data's tests (a handful of
pairs: the point is the machinery, not the accuracy); ``--root`` points it at a real SNLI
download (``<root>/snli/snli_1.0/snli_1.0_{train,dev,test}.jsonl``).

    python examples/spinn_snli.py --epochs 30
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import ember.nn as nn
import ember.optim as optim
import ember.tensor as et
from ember.autograd import no_grad
from ember.data.text import BucketIterator, LabelField
from ember.data.text.datasets import SNLI, ParsedTextField, ShiftReduceField

SAMPLES = Path(__file__).resolve().parent.parent / "packages" / "data" / "tests" / "samples"


class Reduce(nn.Module):
    """TreeLSTM composition: (h, c) of the left and right children -> (h, c) of the parent."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.compose = nn.Linear(2 * size, 5 * size)

    def forward(self, lefts, rights):
        # lefts, rights: [k, 2 * size] (h and c side by side), one row per reduction
        h_l, c_l = lefts.chunk(2, 1)
        h_r, c_r = rights.chunk(2, 1)
        a, i, f_l, f_r, o = self.compose(et.cat([h_l, h_r], 1)).chunk(5, 1)
        c = a.tanh() * i.sigmoid() + f_l.sigmoid() * c_l + f_r.sigmoid() * c_r
        h = o.sigmoid() * c.tanh()
        return et.cat([h, c], 1)


class SPINN(nn.Module):
    def __init__(self, size: int, shift: int, reduce: int) -> None:
        super().__init__()
        self.size, self.shift_id, self.reduce_id = size, shift, reduce
        self.reduce = Reduce(size)

    def forward(self, buffers, transitions, n_words):
        # buffers: [seq, batch, 2 * size] word states; transitions: [steps, batch] ids
        batch = buffers.shape[1]
        zero = et.zeros(2 * self.size)
        bufs = [[buffers[i, b] for i in reversed(range(n_words[b]))] for b in range(batch)]
        stacks = [[zero, zero] for _ in range(batch)]
        for step in transitions.tolist():
            lefts, rights, targets = [], [], []
            for b, op in enumerate(step):
                if op == self.shift_id:
                    stacks[b].append(bufs[b].pop())
                elif op == self.reduce_id:
                    rights.append(stacks[b].pop())
                    lefts.append(stacks[b].pop())
                    targets.append(b)
            if targets:   # every reduction of this time step in one batched call
                reduced = self.reduce(et.stack(lefts), et.stack(rights)).unbind(0)
                for b, state in zip(targets, reduced):
                    stacks[b].append(state)
        return et.stack([s[-1] for s in stacks])[:, : self.size]   # h of the root


class SNLIClassifier(nn.Module):
    def __init__(self, vocab_size: int, embed: int, size: int, n_classes: int,
                 shift: int, reduce: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed)
        self.project = nn.Linear(embed, 2 * size)
        self.encoder = SPINN(size, shift, reduce)
        self.mlp = nn.Sequential(nn.Linear(4 * size, size), nn.ReLU(), nn.Linear(size, n_classes))

    def encode(self, text, transitions):
        words, lengths = text
        n_words = [n - 1 for n in lengths.tolist()]   # the lengths count the '<pad>' eos token
        return self.encoder(self.project(self.embed(words)), transitions, n_words)

    def forward(self, batch):
        p = self.encode(batch.premise, batch.premise_transitions)
        h = self.encode(batch.hypothesis, batch.hypothesis_transitions)
        return self.mlp(et.cat([p, h, p - h, p * h], 1))


def run_epoch(model, iterator, criterion, optimizer=None):
    total, correct, count = 0.0, 0, 0
    for batch in iterator:
        logits = model(batch)
        loss = criterion(logits, batch.label)
        if optimizer is not None:
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        n = batch.label.shape[0]
        total += loss.item() * n
        correct += (logits.argmax(1) == batch.label).sum().item()
        count += n
    return total / count, correct / count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30, help="training epochs (default 30)")
    parser.add_argument("--batch-size", type=int, default=2, help="batch size (default 2)")
    parser.add_argument("--hidden", type=int, default=32, help="state size (default 32)")
    parser.add_argument("--embed", type=int, default=32, help="word vector size (default 32)")
    parser.add_argument("--lr", type=float, default=3e-3, help="Adam learning rate (default 3e-3)")
    parser.add_argument("--root", default=str(SAMPLES),
                        help="folder holding snli/snli_1.0/*.jsonl (default: the test samples)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    et.manual_seed(args.seed)

    text, label, parse = ParsedTextField(lower=True), LabelField(), ShiftReduceField()
    train, dev, test = SNLI.splits(text, label, parse, root=args.root)
    text.build_vocab(train, dev, test)
    label.build_vocab(train)
    print(f"SNLI: {len(train)} train / {len(dev)} dev / {len(test)} test pairs, "
          f"{len(text.vocab)} words, labels {label.vocab.itos}")
    ex = train[0]
    print(f"example: {' '.join(ex.premise)!r} -> {' '.join(ex.premise_transitions)}")

    train_iter, dev_iter = BucketIterator.splits(
        (train, dev), batch_size=args.batch_size, device="cpu", repeat=False)
    model = SNLIClassifier(len(text.vocab), args.embed, args.hidden, len(label.vocab),
                           shift=parse.vocab.stoi["shift"], reduce=parse.vocab.stoi["reduce"])
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)

    first = last = None
    for epoch in range(1, args.epochs + 1):
        model.train()
        loss, acc = run_epoch(model, train_iter, criterion, optimizer)
        first = loss if first is None else first
        last = loss
        if epoch % 5 == 0 or epoch == args.epochs or epoch == 1:
            model.eval()
            with no_grad():
                dev_loss, dev_acc = run_epoch(model, dev_iter, criterion)
            print(f"epoch {epoch:3d}  train loss {loss:.4g} acc {100 * acc:5.1f}%   "
                  f"dev loss {dev_loss:.4g} acc {100 * dev_acc:5.1f}%")
    if args.epochs >= 10 and not last < first:
        print("error: the training loss did not decrease", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
