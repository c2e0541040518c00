"""Run under the launcher with 2 processes: DistributedDataParallel scenarios; each rank saves
its results to OUTDIR/rank<r>.npz for the test to compare with single-process training."""
import sys

import numpy as np

import ember.distributed as dist
import ember.nn as nn
import ember.tensor as et
from ember.autograd import no_grad
from ember.distributed import DistributedDataParallel as DDP

LR = 0.1
STEPS = 3


def make_model(seed):
    et.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def data(step, micro=0):
    """The global batch of a step: 8 rows; rank r trains on rows 4r..4r+3."""
    rng = np.random.default_rng(1000 + 10 * step + micro)
    return rng.standard_normal((8, 5)), rng.standard_normal((8, 3))


def mse(out, y):
    return ((out - y) ** 2).mean()


def sgd(model):
    with no_grad():
        for p in model.parameters():
            p.sub_(LR * p.grad)


def params(model):
    return np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])


def local(x, r):
    return et.from_numpy(x[4 * r:4 * r + 4].copy())


class Branchy(nn.Module):
    """``b`` is used only on rank 0; ``c`` is never used."""

    def __init__(self, use_b):
        super().__init__()
        self.a = nn.Linear(5, 3).double()
        self.b = nn.Linear(5, 3).double()
        self.c = nn.Linear(5, 3).double()
        self.use_b = use_b

    def forward(self, x):
        out = self.a(x)
        return out + self.b(x) if self.use_b else out


class Shifted(nn.Module):
    def __init__(self, shift):
        super().__init__()
        self.fc = nn.Linear(5, 3).double()
        self.register_buffer("shift", et.full((3,), shift, dtype=et.float64))

    def forward(self, x):
        return self.fc(x) + self.shift


def main(out):
    dist.init_process_group("mpi")
    r = dist.get_rank()
    res = {}

    # 1. training: seeds differ per rank, so construction must broadcast rank 0's weights;
    # tiny buckets force several of them
    for tag, kw in (("plain", {}), ("view", {"gradient_as_bucket_view": True})):
        model = DDP(make_model(seed=7 + r), bucket_cap_mb=0.0002, **kw)
        res[f"{tag}_nbuckets"] = np.array(len(model._buckets))
        res[f"{tag}_init"] = params(model.module)
        for step in range(STEPS):
            x, y = data(step)
            model.module.zero_grad()
            mse(model(local(x, r)), local(y, r)).backward()
            sgd(model.module)
        res[f"{tag}_final"] = params(model.module)

    # 2. no_sync: local accumulation over a micro-batch, then a synced one
    model = DDP(make_model(seed=7 + r))
    for step in range(2):
        model.module.zero_grad()
        x0, y0 = data(step, micro=0)
        x1, y1 = data(step, micro=1)
        with model.no_sync():
            mse(model(local(x0, r)), local(y0, r)).backward()
        res[f"nosync_local_grad{step}"] = np.concatenate(
            [p.grad.numpy().ravel() for p in model.module.parameters()])
        mse(model(local(x1, r)), local(y1, r)).backward()
        sgd(model.module)
    res["nosync_final"] = params(model.module)

    # 3. find_unused_parameters: b used on rank 0 only, c on neither
    et.manual_seed(3)
    m = Branchy(use_b=(r == 0))
    model = DDP(m, find_unused_parameters=True)
    x, y = data(0)
    model(local(x, r)).sum().backward()
    res["unused_a_grad"] = m.a.weight.grad.numpy().copy()
    res["unused_b_grad"] = m.b.weight.grad.numpy().copy()
    res["unused_c_grad_is_none"] = np.array(m.c.weight.grad is None)
    res["unused_x"] = x

    # without find_unused_parameters the next forward names the problem
    et.manual_seed(3)
    model = DDP(Branchy(use_b=True))
    model(local(x, r)).sum().backward()
    try:
        model(local(x, r))
        res["unfinished_error"] = np.array("no error")
    except RuntimeError as exc:
        res["unfinished_error"] = np.array(str(exc))

    # 4. buffers: broadcast at construction and before each forward (unless disabled)
    for flag in (True, False):
        model = DDP(Shifted(10.0 + r), broadcast_buffers=flag)
        res[f"buffers{flag}_init"] = model.module.shift.numpy().copy()
        with no_grad():
            model.module.shift.fill_(99.0 + r)
        model(local(x, r)).sum().backward()
        res[f"buffers{flag}_after_forward"] = model.module.shift.numpy().copy()

    # 5. a second backward (retain_graph) after the iteration's reduction: local, not averaged
    model = DDP(make_model(seed=7 + r))
    x, y = data(0)
    loss = mse(model(local(x, r)), local(y, r))
    loss.backward(retain_graph=True)
    res["retain_first"] = np.concatenate([p.grad.numpy().ravel().copy()
                                          for p in model.module.parameters()])
    loss.backward()
    res["retain_second"] = np.concatenate([p.grad.numpy().ravel().copy()
                                           for p in model.module.parameters()])

    # 6. static_graph: b used on rank 0 only, c never; learnt in the first iteration
    et.manual_seed(3)
    m = Branchy(use_b=(r == 0))
    model = DDP(m, static_graph=True)
    for _ in range(2):
        model.module.zero_grad()
        model(local(x, r)).sum().backward()
    res["static_a_grad"] = m.a.weight.grad.numpy().copy()
    res["static_b_grad"] = m.b.weight.grad.numpy().copy()
    res["static_c_grad_is_none"] = np.array(m.c.weight.grad is None)

    # 7. find_unused_parameters: b used only in the no_sync step; its .grad is still averaged
    et.manual_seed(3)
    m = Branchy(use_b=True)
    model = DDP(m, find_unused_parameters=True)
    with model.no_sync():
        model(local(x, r)).sum().backward()
    m.use_b = False
    model(local(x, r)).sum().backward()
    res["nosync_unused_a_grad"] = m.a.weight.grad.numpy().copy()
    res["nosync_unused_b_grad"] = m.b.weight.grad.numpy().copy()

    dist.destroy_process_group()
    np.savez(f"{out}/rank{r}.npz", **res)


if __name__ == "__main__":
    main(sys.argv[1])
