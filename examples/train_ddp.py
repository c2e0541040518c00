"""Train the digits CNN of ``train_digits_cnn.py`` data-parallel on several processes.

Each process holds a replica of the model wrapped in
``ember.distributed.DistributedDataParallel`` and trains on its own share of the training set
(``ember.data.DistributedSampler``); gradients are averaged across processes during backward,
so every replica takes the same optimizer step. Rank 0 shows a tqdm progress bar, prints the
validation accuracy after every epoch and alone writes the checkpoint
(``{"model": state_dict, "optimizer": state_dict, "epoch": n}``; the model's own
``state_dict``, loadable in a single process into a plain ``DigitsCNN``).

    python -m ember.distributed.run --nproc-per-node 2 examples/train_ddp.py
    python -m ember.distributed.run --nproc-per-node 2 examples/train_ddp.py --epochs 3

Needs ember-distributed with its MPI extra (``pip install 'ember-distributed[mpi]'``) and the
demo's requirements (``requirements-demo.txt``: scikit-learn, tqdm). Run alone
(``python examples/train_ddp.py``) it trains as a world of one process.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import ember.distributed as dist
import ember.nn as nn
import ember.optim as optim
import ember.tensor as et
from ember.autograd import no_grad
from ember.data import DataLoader, DistributedSampler
from ember.distributed import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_digits_cnn import DigitsCNN, evaluate, load_digits_split  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Data-parallel training of the digits CNN.",
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--epochs", type=int, default=6, help="training epochs")
    p.add_argument("--batch-size", type=int, default=16,
                   help="mini-batch size per process (the global batch is this times the "
                   "number of processes)")
    p.add_argument("--lr", type=float, default=2e-3, help="Adam learning rate")
    p.add_argument("--val-fraction", type=float, default=0.2, help="held-out fraction")
    p.add_argument("--out", default="runs/digits_ddp", help="folder for rank 0's checkpoint")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = p.parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.lr <= 0:
        p.error("--epochs, --batch-size and --lr must be positive")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    from tqdm import tqdm

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    et.manual_seed(args.seed + rank)  # different on purpose: DDP broadcasts rank 0's weights
    started = time.perf_counter()
    train_set, val_set = load_digits_split(args.val_fraction, args.seed)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True,
                                 seed=args.seed)
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)
    val_loader = DataLoader(val_set, batch_size=256)
    if rank == 0:
        print(f"digits: {len(train_set)} training images on {world} processes "
              f"({len(sampler)} each), {len(val_set)} validation images", flush=True)

    model = DDP(DigitsCNN())
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    val_acc = 0.0
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every process
        model.train()
        sums = np.zeros(2)  # this process's summed loss and sample count
        bar = tqdm(train_loader, desc=f"epoch {epoch}/{args.epochs}", unit="batch",
                   leave=False, file=sys.stdout, disable=args.no_progress or rank != 0)
        for x, y in bar:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()  # the gradients are averaged across processes here
            optimizer.step()
            sums += (loss.item() * y.shape[0], y.shape[0])
            bar.set_postfix(loss=f"{sums[0] / sums[1]:.4f}")
        bar.close()
        totals = et.from_numpy(sums.copy())
        dist.all_reduce(totals)  # the epoch's training loss over every process
        if rank == 0:
            _, val_acc = evaluate(model.module, val_loader, "cpu", criterion)
            total_loss, count = totals.tolist()
            print(f"epoch {epoch:2d}/{args.epochs}  train loss {total_loss / count:.4f}  "
                  f"val accuracy {100 * val_acc:.2f}%", flush=True)

    # the replicas are identical: check it cheaply, then let rank 0 alone save
    with no_grad():
        flat = et.cat([p.detach().reshape(-1) for p in model.module.parameters()])
        spread = flat.clone()
        dist.all_reduce(spread, dist.ReduceOp.MAX)
        if not np.array_equal(spread.numpy(), flat.numpy()):
            raise RuntimeError(f"rank {rank}: the model replicas have diverged")
    if rank == 0:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        checkpoint = out / "checkpoint.safetensors"
        et.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                 "epoch": args.epochs}, checkpoint)
        print(f"saved checkpoint to {checkpoint}")
        print(f"final validation accuracy {100 * val_acc:.2f}% after {args.epochs} epochs "
              f"on {world} processes in {time.perf_counter() - started:.1f} s")
    dist.barrier()  # the others finish once the checkpoint is on disk
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
