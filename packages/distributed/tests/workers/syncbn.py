"""Run under the launcher with 2 processes: a network with SyncBatchNorm (converted from
BatchNorm1d and BatchNorm2d) trained for a few steps, each rank on its half of every batch, in
float64, with DistributedDataParallel and without it (the ranks' gradients summed by hand).
Each rank saves its outputs, input gradients, parameter gradients, running statistics and
final parameters to OUTDIR/rank<r>.npz; the test compares them with one process on the whole
batch."""
import sys

import numpy as np

import ember.distributed as dist
import ember.nn as nn
import ember.tensor as et
from ember.autograd import no_grad
from ember.distributed import DistributedDataParallel as DDP

BATCH, STEPS, LR = 8, 3, 0.1


def make_model(seed):
    et.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3, momentum=0.3),
                         nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 5),
                         nn.BatchNorm1d(5, momentum=None)).double()


def data(step):
    rng = np.random.default_rng(100 + step)
    return rng.standard_normal((BATCH, 2, 4, 4)) * 3 + 1, rng.standard_normal((BATCH, 5))


def loss_fn(out, w):
    return (out * w).sum()


def sgd(model):
    with no_grad():
        for p in model.parameters():
            p.sub_(LR * p.grad)


def state(model):
    return np.concatenate([t.detach().numpy().ravel().astype(np.float64)
                           for t in model.state_dict().values()])


def main(out):
    dist.init_process_group("mpi")
    r, world = dist.get_rank(), dist.get_world_size()
    half = BATCH // world
    res = {}
    for tag in ("plain", "ddp"):
        model = nn.SyncBatchNorm.convert_sync_batchnorm(make_model(seed=3))
        runner = DDP(model) if tag == "ddp" else model
        for step in range(STEPS):
            x, w = data(step)
            xr = et.from_numpy(x[r * half:(r + 1) * half].copy()).requires_grad_()
            model.zero_grad()
            o = runner(xr)
            loss_fn(o, et.from_numpy(w[r * half:(r + 1) * half])).backward()
            res[f"{tag}_out{step}"] = o.detach().numpy()
            res[f"{tag}_xgrad{step}"] = xr.grad.numpy()
            res[f"{tag}_pgrad{step}"] = np.concatenate(
                [p.grad.numpy().ravel() for p in model.parameters()])
            if tag == "plain":  # the whole batch's gradient: the sum of the ranks' own
                for p in model.parameters():
                    dist.all_reduce(p.grad)
            sgd(model)
        res[f"{tag}_state"] = state(model)
    dist.destroy_process_group()
    np.savez(f"{out}/rank{r}.npz", **res)


if __name__ == "__main__":
    main(sys.argv[1])
