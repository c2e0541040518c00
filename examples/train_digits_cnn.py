"""Train a small CNN on scikit-learn's 8x8 handwritten digits with ember.

The data set (1,797 grey-scale 8x8 images of the digits 0-9) ships inside the scikit-learn
wheel, so nothing is downloaded. The script splits it into training and validation sets with a
fixed seed, trains a two-convolution network with Adam, shows a tqdm progress bar per epoch,
prints the validation accuracy after every epoch, and writes into the output folder:

* ``checkpoint.safetensors``: ``{"model": state_dict, "optimizer": state_dict, "epoch": n}``
  saved with ``ember.tensor.save`` (reload with ``ember.tensor.load``);
* ``curves.png``: training/validation loss and validation accuracy per epoch.

    python examples/train_digits_cnn.py                 # defaults: about 98% in < 1 min
    python examples/train_digits_cnn.py --epochs 3 --out /tmp/digits
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import ember.nn as nn
import ember.nn.functional as F
import ember.optim as optim
import ember.tensor as et
from ember.autograd import no_grad
from ember.data import DataLoader, TensorDataset


class DigitsCNN(nn.Module):
    """conv(1->16) - relu - conv(16->32) - relu - maxpool 2 - dropout - linear(512->64) - relu
    - linear(64->10), on 1x8x8 images."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, kernel_size=3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.pool(F.relu(self.conv2(x)))
        x = self.dropout(x.flatten(1))
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Train a small CNN on scikit-learn's 8x8 digits with ember.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--epochs", type=int, default=6, help="training epochs")
    parser.add_argument("--batch-size", type=int, default=32, help="mini-batch size")
    parser.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate")
    parser.add_argument("--val-fraction", type=float, default=0.2,
                        help="fraction of the images held out for validation")
    parser.add_argument("--out", default="runs/digits",
                        help="output folder for the checkpoint and the plot")
    parser.add_argument("--device", default="cpu",
                        help="'cpu', 'cuda' / 'cuda:N' (needs a GPU and CuPy), or 'auto' "
                        "(cuda when available, else cpu)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (split, init, shuffling)")
    parser.add_argument("--no-progress", action="store_true", help="hide the tqdm progress bars")
    args = parser.parse_args(argv)
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.lr <= 0:
        parser.error("--lr must be positive")
    if not 0 < args.val_fraction < 1:
        parser.error("--val-fraction must be between 0 and 1")
    return args


def load_digits_split(val_fraction: float, seed: int):
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images.astype(np.float32) / 16.0 - 0.5) / 0.5   # scale to [-1, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_val = int(round(len(labels) * val_fraction))
    val_idx, train_idx = order[:n_val], order[n_val:]

    def as_dataset(idx):
        x = et.from_numpy(np.ascontiguousarray(images[idx][:, None, :, :]))
        y = et.from_numpy(np.ascontiguousarray(labels[idx]))
        return TensorDataset(x, y)

    return as_dataset(train_idx), as_dataset(val_idx)


def evaluate(model, loader, device, criterion):
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total_loss += criterion(logits, y).item() * y.shape[0]
            correct += (logits.argmax(1) == y).sum().item()
            count += y.shape[0]
    return total_loss / count, correct / count


def save_plot(history: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = range(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["train_loss"], "o-", label="train")
    ax_loss.plot(epochs, history["val_loss"], "o-", label="validation")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("cross-entropy loss")
    ax_loss.set_title("loss")
    ax_loss.legend()
    ax_acc.plot(epochs, [100 * a for a in history["val_acc"]], "o-", color="tab:green")
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy (%)")
    ax_acc.set_title("validation accuracy")
    fig.suptitle("ember: small CNN on scikit-learn's 8x8 digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def missing_demo_deps() -> list[str]:
    """The demo's extra dependencies (requirements-demo.txt) that are not installed."""
    import importlib.util

    wanted = {"tqdm": "tqdm", "sklearn": "scikit-learn", "matplotlib": "matplotlib"}
    return [dist for mod, dist in wanted.items() if importlib.util.find_spec(mod) is None]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    missing = missing_demo_deps()
    if missing:
        print(f"error: the demo needs {', '.join(missing)}: run "
              "python3 -m pip install -r requirements-demo.txt", file=sys.stderr)
        return 2
    if args.device == "auto":
        args.device = "cuda" if et.cuda.is_available() else "cpu"
    try:
        device = et.device(args.device)
    except (RuntimeError, ValueError, TypeError) as exc:
        print(f"error: --device {args.device}: {exc}", file=sys.stderr)
        return 2
    if device.type == "cuda" and not et.cuda.is_available():
        print(f"error: --device {args.device} asked for, but no CUDA GPU with CuPy is "
              "available (install ember-tensor[cuda12] or use --device cpu)", file=sys.stderr)
        return 2

    from tqdm import tqdm

    et.manual_seed(args.seed)
    started = time.perf_counter()
    train_set, val_set = load_digits_split(args.val_fraction, args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True,
                              generator=et.Generator().manual_seed(args.seed))
    val_loader = DataLoader(val_set, batch_size=256)
    print(f"digits: {len(train_set)} training and {len(val_set)} validation images, "
          f"device {device}")

    model = DigitsCNN().to(device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters")
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    history: dict[str, list[float]] = {"train_loss": [], "val_loss": [], "val_acc": []}
    for epoch in range(1, args.epochs + 1):
        model.train()
        running, seen = 0.0, 0
        bar = tqdm(train_loader, desc=f"epoch {epoch}/{args.epochs}", unit="batch",
                   leave=False, disable=args.no_progress, file=sys.stdout)
        for x, y in bar:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            running += loss.item() * y.shape[0]
            seen += y.shape[0]
            bar.set_postfix(loss=f"{running / seen:.4f}")
        bar.close()
        train_loss = running / seen
        val_loss, val_acc = evaluate(model, val_loader, device, criterion)
        history["train_loss"].append(train_loss)
        history["val_loss"].append(val_loss)
        history["val_acc"].append(val_acc)
        print(f"epoch {epoch:2d}/{args.epochs}  train loss {train_loss:.4f}  "
              f"val loss {val_loss:.4f}  val accuracy {100 * val_acc:.2f}%", flush=True)

    checkpoint = out / "checkpoint.safetensors"
    et.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "epoch": args.epochs}, checkpoint)
    plot = out / "curves.png"
    save_plot(history, plot)
    elapsed = time.perf_counter() - started
    print(f"saved checkpoint to {checkpoint}")
    print(f"saved plot to {plot}")
    print(f"final validation accuracy {100 * history['val_acc'][-1]:.2f}% "
          f"after {args.epochs} epochs in {elapsed:.1f} s")

    # the checkpoint must load back into a fresh model and give the same predictions
    state = et.load(checkpoint, map_location="cpu")
    fresh = DigitsCNN()
    fresh.load_state_dict(state["model"])
    fresh = fresh.to(device)
    _, reloaded_acc = evaluate(fresh, val_loader, device, criterion)
    if abs(reloaded_acc - history["val_acc"][-1]) > 1e-9:
        print(f"error: the reloaded checkpoint scores {100 * reloaded_acc:.2f}%, not "
              f"{100 * history['val_acc'][-1]:.2f}%", file=sys.stderr)
        return 1
    if not os.path.getsize(plot):
        print(f"error: {plot} is empty", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
