"""Training steps of ember.nn against PyTorch CPU, in one process.

Run ``python benchmarks/bench_nn.py``. Each workload is one full training step (forward,
cross-entropy, backward, SGD with momentum 0.9) from the same initial weights on the same
batch: MLP 784-512-512-10 (batch 64), MLP 4096-4096-4096-10 (batch 256) and a LeNet-style CNN
on 1x28x28 (batch 64). Prints a Markdown table of the best (and median) step times and the
ratio of the best times ember / torch (below 1: ember is faster). ``main()`` returns rows
``(workload, ember_s, torch_s)`` of best times; torch_s is None where PyTorch is not
installed. No assertions on time.
"""
from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parents[1]
for _pkg in ("tensor", "autograd", "nn", "optim"):
    _src = str(_ROOT / "packages" / _pkg / "src")
    if _src not in sys.path:
        sys.path.insert(0, _src)

import ember.autograd as ag  # noqa: E402
import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
import ember.tensor as et  # noqa: E402

try:
    import ember.optim as eoptim
except ImportError:  # ember-optim not installed: a hand-written momentum update
    eoptim = None

try:
    import torch
except ImportError:
    torch = None

WARMUP = 3
REPEAT = 15


def _time(step: Callable[[], object], repeat: int = REPEAT) -> tuple[float, float]:
    """(best, median) wall time of ``step()`` over ``repeat`` runs after WARMUP untimed ones.

    The best time (timeit's rule) is the figure compared: on a shared machine the other
    processes only ever add time; the median is printed beside it.
    """
    for _ in range(WARMUP):
        step()
    gc.collect()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


# --------------------------------------------------------------------------- models
def _mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _torch_mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


class LeNet(nn.Module):
    """conv(1->6, 5) - relu - pool - conv(6->16, 5) - relu - pool - 256-120-84-10."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.reshape(x.shape[0], -1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def _torch_lenet():
    T = torch.nn

    class TorchLeNet(T.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = T.Conv2d(1, 6, 5)
            self.conv2 = T.Conv2d(6, 16, 5)
            self.fc1 = T.Linear(16 * 4 * 4, 120)
            self.fc2 = T.Linear(120, 84)
            self.fc3 = T.Linear(84, 10)

        def forward(self, x):
            TF = torch.nn.functional
            x = TF.max_pool2d(TF.relu(self.conv1(x)), 2)
            x = TF.max_pool2d(TF.relu(self.conv2(x)), 2)
            x = x.reshape(x.shape[0], -1)
            return self.fc3(TF.relu(self.fc2(TF.relu(self.fc1(x)))))

    return TorchLeNet()


def _copy_to_torch(model, tmodel) -> None:
    with torch.no_grad():
        for (name, p), (tname, tp) in zip(model.named_parameters(), tmodel.named_parameters()):
            assert name == tname, (name, tname)
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))


# --------------------------------------------------------------------------- steps
def _ember_step(model, x, y, lr=0.01, momentum=0.9):
    params = list(model.parameters())
    loss_fn = nn.CrossEntropyLoss()
    if eoptim is not None:
        opt = eoptim.SGD(params, lr=lr, momentum=momentum)

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step
    bufs = [None] * len(params)

    def manual_step():
        for p in params:
            p.grad = None
        loss = loss_fn(model(x), y)
        loss.backward()
        with ag.no_grad():
            for i, p in enumerate(params):
                g = p.grad
                bufs[i] = g.clone() if bufs[i] is None else bufs[i].mul_(momentum).add_(g)
                p.sub_(bufs[i] * lr)
        return loss
    return manual_step


def _torch_step(model, x, y, lr=0.01, momentum=0.9):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _workloads():
    rng = np.random.default_rng(0)
    out = []
    for name, sizes, batch in (("MLP 784-512-512-10, batch 64", (784, 512, 512, 10), 64),
                               ("MLP 4096-4096-4096-10, batch 256", (4096, 4096, 4096, 10),
                                256)):
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        y = rng.integers(0, 10, batch)
        out.append((name, lambda s=sizes: _mlp(s),
                    (lambda s=sizes: _torch_mlp(s)) if torch is not None else None, x, y))
    x = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 64)
    out.append(("LeNet CNN 1x28x28, batch 64", LeNet,
                _torch_lenet if torch is not None else None, x, y))
    return out


def main() -> list[tuple[str, float, float | None]]:
    """Time every workload on ember first, then on PyTorch (PyTorch's OpenMP threads keep
    spinning after its ops and would slow down the NumPy BLAS threads measured after them).
    """
    et.manual_seed(0)
    loads = _workloads()
    ember_s, torch_s, states = [], [], []
    for name, make, _, x, y in loads:
        model = make()
        states.append(model)
        repeat = 5 if "4096" in name else REPEAT
        ember_s.append(_time(_ember_step(model, et.from_numpy(x), et.from_numpy(y)), repeat))
    for (name, _, make_torch, x, y), init in zip(loads, states):
        if make_torch is None:
            torch_s.append(None)
            continue
        tmodel = make_torch()
        _copy_to_torch(init, tmodel)
        repeat = 5 if "4096" in name else REPEAT
        torch_s.append(_time(_torch_step(tmodel, torch.from_numpy(x), torch.from_numpy(y)),
                             repeat))
    rows = [(load[0], e[0], t[0] if t else None)
            for load, e, t in zip(loads, ember_s, torch_s)]
    print("| workload | ember best (median) ms | torch best (median) ms | ember / torch |")
    print("| --- | ---: | ---: | ---: |")
    for (name, _, _), e, t in zip(rows, ember_s, torch_s):
        ratio = f"{e[0] / t[0]:.2f}x" if t else "n/a"
        tms = f"{t[0] * 1e3:.2f} ({t[1] * 1e3:.2f})" if t else "n/a"
        print(f"| {name} | {e[0] * 1e3:.2f} ({e[1] * 1e3:.2f}) | {tms} | {ratio} |")
    return rows


if __name__ == "__main__":
    main()
