"""Run under the launcher with 2 processes: DistributedDataParallel over a dataset whose size
(13) does not divide by the world size nor by the batch size, sharded by DistributedSampler
(ember.data's when installed, else the same rule written out here) with drop_last False
(padded by wrapping around, as PyTorch does) and True (the tail cut). Each rank saves its
indices and final parameters to OUTDIR/rank<r>.npz."""
import math
import sys

import numpy as np

import ember.distributed as dist
import ember.nn as nn
import ember.tensor as et
from ember.autograd import no_grad
from ember.distributed import DistributedDataParallel as DDP

N_ROWS, BATCH, LR, EPOCHS = 13, 4, 0.1, 2


def dataset():
    rng = np.random.default_rng(77)
    return rng.standard_normal((N_ROWS, 5)), rng.standard_normal((N_ROWS, 3))


def make_model(seed):
    et.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def reference_indices(n, num_replicas, rank, drop_last):
    """torch.utils.data.DistributedSampler(shuffle=False)'s indices for one replica."""
    indices = list(range(n))
    if drop_last and n % num_replicas:
        num_samples = math.ceil((n - num_replicas) / num_replicas)
    else:
        num_samples = math.ceil(n / num_replicas)
    total = num_samples * num_replicas
    if drop_last:
        indices = indices[:total]
    else:
        indices += (indices * math.ceil(total / n))[:total - n]
    return indices[rank:total:num_replicas]


def sampler_indices(n, num_replicas, rank, drop_last):
    try:
        from ember.data import DistributedSampler
    except ImportError:  # the distributed tox env installs no ember-data
        return reference_indices(n, num_replicas, rank, drop_last), False
    sampler = DistributedSampler(range(n), num_replicas=num_replicas, rank=rank,
                                 shuffle=False, drop_last=drop_last)
    return list(sampler), True


def batches(indices):
    return [indices[i:i + BATCH] for i in range(0, len(indices), BATCH)]


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
    r, world = dist.get_rank(), dist.get_world_size()
    x, y = dataset()
    res = {}
    for drop_last in (False, True):
        idx, from_ember_data = sampler_indices(N_ROWS, world, r, drop_last)
        res[f"drop{drop_last}_indices"] = np.array(idx)
        res["from_ember_data"] = np.array(from_ember_data)
        model = DDP(make_model(seed=5 + r), bucket_cap_mb=0.0002)
        nsteps = 0
        for _ in range(EPOCHS):
            for b in batches(idx):  # the last batch is short, on every rank alike
                model.module.zero_grad()
                mse(model(et.from_numpy(x[b])), et.from_numpy(y[b])).backward()
                sgd(model.module)
                nsteps += 1
        res[f"drop{drop_last}_steps"] = np.array(nsteps)
        res[f"drop{drop_last}_final"] = params(model.module)
    dist.destroy_process_group()
    np.savez(f"{out}/rank{r}.npz", **res)


if __name__ == "__main__":
    main(sys.argv[1])
