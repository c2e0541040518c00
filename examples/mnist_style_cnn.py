"""The MNIST-style CNN of the PyTorch tutorials (LeNet: conv-relu-pool twice, three linear
layers), trained with CrossEntropyLoss and SGD on 1x28x28 images.

The images are scikit-learn's 8x8 digits upsampled to 24x24 and padded to 28x28 (no download);
with ``--data random`` (or without scikit-learn) the network fits random 1x28x28 data instead.

    python examples/mnist_style_cnn.py --steps 300
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as et
from ember.autograd import no_grad


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        # 1 input image channel, 6 output channels, 5x5 square convolution kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        # an affine operation: y = Wx + b
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        # max pooling over a (2, 2) window
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        # if the size is a square you can only specify a single number
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)

    def num_flat_features(self, x):
        size = x.size()[1:]  # all dimensions except the batch dimension
        num_features = 1
        for s in size:
            num_features *= s
        return num_features


def load_data(kind: str, seed: int):
    if kind == "digits":
        try:
            from sklearn.datasets import load_digits
        except ImportError:
            print("scikit-learn is not installed: using random data")
            kind = "random"
    if kind == "random":
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((512, 1, 28, 28)).astype(np.float32)
        y = rng.integers(0, 10, 512)
    else:
        digits = load_digits()
        img = digits.images.astype(np.float32) / 16.0
        img = np.kron(img, np.ones((3, 3), np.float32))          # 8x8 -> 24x24
        img = np.pad(img, ((0, 0), (2, 2), (2, 2)))               # -> 28x28, like MNIST
        x = ((img - 0.1307) / 0.3081)[:, None]
        y = digits.target
        order = np.random.default_rng(seed).permutation(len(y))
        x, y = x[order], y[order]
    n_test = len(y) // 5
    as_t = et.from_numpy
    return (as_t(np.ascontiguousarray(x[n_test:])), as_t(y[n_test:].astype(np.int64)),
            as_t(np.ascontiguousarray(x[:n_test])), as_t(y[:n_test].astype(np.int64)), kind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="SGD steps (default 300)")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size (default 32)")
    parser.add_argument("--lr", type=float, default=0.02, help="learning rate (default 0.02)")
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    parser.add_argument("--data", choices=("digits", "random"), default="digits",
                        help="upsampled 8x8 digits (default) or random 1x28x28 data")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    et.manual_seed(args.seed)

    x_train, y_train, x_test, y_test, kind = load_data(args.data, args.seed)
    net = Net()
    print(net)
    params = list(net.parameters())
    print(f"{len(params)} parameter tensors, conv1's weight: {tuple(params[0].size())}")

    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    n = x_train.shape[0]
    perm = et.randperm(n)
    pos, first, running = 0, None, []
    for step in range(1, args.steps + 1):
        if pos + args.batch_size > n:
            perm, pos = et.randperm(n), 0
        idx = perm[pos:pos + args.batch_size]
        pos += args.batch_size
        inputs, target = x_train[idx], y_train[idx]

        optimizer.zero_grad()   # zero the gradient buffers
        output = net(inputs)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()        # does the update

        running.append(loss.item())
        if first is None:
            first = loss.item()
        if step % 50 == 0 or step == args.steps:
            print(f"step {step:4d}  loss {sum(running) / len(running):.4f}")
            running = []

    with no_grad():
        net.eval()
        pred = net(x_test).argmax(1)
        acc = (pred == y_test).float().mean().item()
    print(f"held-out accuracy on {x_test.shape[0]} {kind} images: {100 * acc:.2f}%")
    if kind == "digits" and args.steps >= 300 and acc < 0.9:
        print("error: the network did not learn the digits", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
