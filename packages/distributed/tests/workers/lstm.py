"""Run under the launcher with 2 processes: DistributedDataParallel of an LSTM (float64), 10
SGD steps with half of each step's batch per rank; then rank 0 alone writes a checkpoint. Each
rank saves its results to OUTDIR/rank<r>.npz; rank 0 also writes OUTDIR/checkpoint.pt."""
import sys

import numpy as np

import ember.distributed as dist
import ember.nn as nn
import ember.tensor as et
from ember.autograd import no_grad
from ember.distributed import DistributedDataParallel as DDP

LR = 0.1
STEPS = 10
SEQ, BATCH, FEAT, HIDDEN, OUT = 5, 8, 3, 6, 2  # rank r trains on batch rows 4r..4r+3


class Net(nn.Module):
    """A 2-layer LSTM (time-major input) and a linear head on the last time step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(FEAT, HIDDEN, num_layers=2)
        self.head = nn.Linear(HIDDEN, OUT)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[-1])


def make_model(seed):
    et.manual_seed(seed)
    return Net().double()


def data(step):
    rng = np.random.default_rng(2000 + step)
    return rng.standard_normal((SEQ, BATCH, FEAT)), rng.standard_normal((BATCH, OUT))


def mse(out, y):
    return ((out - y) ** 2).mean()


def sgd(model):
    with no_grad():
        for p in model.parameters():
            p.sub_(LR * p.grad)


def params(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def main(out):
    dist.init_process_group("mpi")
    r = dist.get_rank()
    half = BATCH // dist.get_world_size()
    rows = slice(half * r, half * (r + 1))
    # seeds differ per rank: construction broadcasts rank 0's weights; a small cap makes
    # several buckets
    model = DDP(make_model(seed=11 + r), bucket_cap_mb=0.001)
    res = {"nbuckets": np.array(len(model._buckets)), "init": params(model.module)}
    for step in range(STEPS):
        x, y = data(step)
        model.module.zero_grad()
        loss = mse(model(et.from_numpy(x[:, rows].copy())), et.from_numpy(y[rows].copy()))
        loss.backward()
        sgd(model.module)
    res["final"] = params(model.module)
    res["state_keys"] = np.array(sorted(model.state_dict()))

    # the checkpoint: written by rank 0 only, the others wait until it is on disk
    if r == 0:
        # PyTorch's idiom: the wrapped module's state_dict, whose keys have no "module."
        et.save({"model": model.module.state_dict(), "step": STEPS}, f"{out}/checkpoint.pt")
    dist.barrier()
    dist.destroy_process_group()
    np.savez(f"{out}/rank{r}.npz", **res)


if __name__ == "__main__":
    main(sys.argv[1])
