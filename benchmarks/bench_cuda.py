"""Training steps on ``"cuda"``: ember (CuPy) against PyTorch CUDA, in one process.

Workloads, each one full training step from the same initial weights on the same batch, all
data resident on the GPU:

- MLP 784-512-512-10, batch 64, and MLP 4096-4096-4096-10, batch 256: forward,
  cross-entropy, backward, SGD with momentum 0.9;
- LeNet-style CNN on 1x28x28, batch 64: same step;
- word-level LSTM language model (embedding 200, 2-layer LSTM 200, decoder to a 10,000-word
  vocabulary, dropout 0.2; sequence 35, batch 20; hidden state carried and detached):
  forward, cross-entropy, backward, gradient clipping at 0.25, SGD (lr 20).

A step is timed with a device synchronization on both sides (GPU work is asynchronous), the
best of several after warm-up. PyTorch's TF32 is switched off so both sides do fp32 math.
Without a usable CUDA device (no CuPy, no driver, no GPU) this prints ``no GPU: skipped`` and
returns ``[]``; without PyTorch CUDA the torch column is empty.

Run ``python benchmarks/bench_cuda.py [--repeat N]``. Prints a Markdown table (``_harness.table``);
``main()`` returns rows ``(workload, ember_s, torch_s)``. No assertions on time.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent
for _pkg in ("tensor", "autograd", "nn", "optim"):
    _src = str(_ROOT / "packages" / _pkg / "src")
    if _src not in sys.path:
        sys.path.insert(0, _src)
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))

from _harness import table  # noqa: E402

import ember.nn as nn  # noqa: E402
import ember.nn.functional as F  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember import optim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

DEVICE = "cuda"
WARMUP = 3
REPEAT = 20
VOCAB, EMB, HID, LAYERS, SEQ, BATCH = 10_000, 200, 200, 2, 35, 20
DROPOUT, LR_LM, CLIP = 0.2, 20.0, 0.25


def _torch_cuda() -> bool:
    return torch is not None and torch.cuda.is_available()


def _time(step: Callable[[], object], sync: Callable[[], None], repeat: int) -> float:
    """Best wall time of ``step(); sync()`` over ``repeat`` runs after WARMUP untimed ones."""
    for _ in range(WARMUP):
        step()
    sync()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        step()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


# --------------------------------------------------------------------------- models
def _mlp(lib, sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(lib.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(lib.ReLU())
    return lib.Sequential(*layers)


def _lenet(lib, fn):
    """conv(1->6, 5) - relu - pool - conv(6->16, 5) - relu - pool - 256-120-84-10."""

    class LeNet(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = lib.Conv2d(1, 6, 5)
            self.conv2 = lib.Conv2d(6, 16, 5)
            self.fc1 = lib.Linear(16 * 4 * 4, 120)
            self.fc2 = lib.Linear(120, 84)
            self.fc3 = lib.Linear(84, 10)

        def forward(self, x):
            x = fn.max_pool2d(fn.relu(self.conv1(x)), 2)
            x = fn.max_pool2d(fn.relu(self.conv2(x)), 2)
            x = x.reshape(x.shape[0], -1)
            return self.fc3(fn.relu(self.fc2(fn.relu(self.fc1(x)))))

    return LeNet()


def _lm(lib):
    class LM(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = lib.Dropout(DROPOUT)
            self.encoder = lib.Embedding(VOCAB, EMB)
            self.rnn = lib.LSTM(EMB, HID, LAYERS, dropout=DROPOUT)
            self.decoder = lib.Linear(HID, VOCAB)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
            return self.decoder(self.drop(out).reshape(-1, HID)), hidden

    return LM()


def _copy_to_torch(model, tmodel) -> None:
    state = {k: torch.from_numpy(np.ascontiguousarray(v.detach().cpu().numpy()))
             for k, v in model.state_dict().items()}
    tmodel.load_state_dict(state)


# --------------------------------------------------------------------------- steps
def _classifier_step(lib, fn, opt_mod, model, x, y):
    opt = opt_mod.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        loss = fn.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


def _lm_step(lib, fn, clip, zeros, model, x, y):
    model.train()
    state = {"hidden": (zeros(), zeros())}
    params = list(model.parameters())
    opt_mod = optim if lib is nn else torch.optim
    opt = opt_mod.SGD(params, lr=LR_LM)

    def step():
        h = tuple(s.detach() for s in state["hidden"])
        opt.zero_grad()
        logits, hidden = model(x, h)
        loss = fn.cross_entropy(logits, y)
        loss.backward()
        clip(params, CLIP)
        opt.step()
        state["hidden"] = hidden
        return loss
    return step


def _workloads(rng):
    """(name, make(lib, fn), x, y, kind) with NumPy data."""
    out = []
    for sizes, batch in (((784, 512, 512, 10), 64), ((4096, 4096, 4096, 10), 256)):
        name = f"MLP {'-'.join(map(str, sizes))}, batch {batch} (cuda)"
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        out.append((name, lambda lib, fn, s=sizes: _mlp(lib, s), x,
                    rng.integers(0, 10, batch), "clf"))
    out.append(("LeNet CNN 1x28x28, batch 64 (cuda)", _lenet,
                rng.standard_normal((64, 1, 28, 28)).astype(np.float32),
                rng.integers(0, 10, 64), "clf"))
    out.append((f"LM train step (vocab {VOCAB}, 2x LSTM {HID}, seq {SEQ}, batch {BATCH}) (cuda)",
                lambda lib, fn: _lm(lib), rng.integers(0, VOCAB, (SEQ, BATCH)),
                rng.integers(0, VOCAB, SEQ * BATCH), "lm"))
    return out


def _ember_run(make, x_np, y_np, kind, repeat):
    et.manual_seed(0)
    model = make(nn, F).cuda()
    x = et.tensor(x_np, device=DEVICE)
    y = et.tensor(y_np, device=DEVICE)
    if kind == "clf":
        step = _classifier_step(nn, F, optim, model, x, y)
    else:
        def zeros():
            return et.zeros(LAYERS, BATCH, HID, device=DEVICE)
        step = _lm_step(nn, F, nn.utils.clip_grad_norm_, zeros, model, x, y)
    init = make(nn, F)  # the initial weights, for PyTorch
    init.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    return _time(step, et.cuda.synchronize, repeat), init


def _torch_run(make, init, x_np, y_np, kind, repeat):
    tf = torch.nn.functional
    model = make(torch.nn, tf)
    _copy_to_torch(init, model)
    model = model.cuda()
    x = torch.from_numpy(x_np).cuda()
    y = torch.from_numpy(y_np).cuda()
    if kind == "clf":
        step = _classifier_step(torch.nn, tf, torch.optim, model, x, y)
    else:
        def zeros():
            return torch.zeros(LAYERS, BATCH, HID, device="cuda")
        step = _lm_step(torch.nn, tf, torch.nn.utils.clip_grad_norm_, zeros, model, x, y)
    return _time(step, torch.cuda.synchronize, repeat)


def main(argv: list[str] | None = None) -> list[tuple[str, float, float | None]]:
    """Run the workloads on the GPU; print a Markdown table; return the rows."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=REPEAT, help="timed steps per workload")
    args = parser.parse_args([] if argv is None else argv)
    if not et.cuda.is_available():
        from ember.tensor import _cupy

        print(f"no GPU: skipped ({_cupy.unavailable_reason()})")
        return []
    if _torch_cuda():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        print("(PyTorch CUDA is not available: the PyTorch column is empty)")
    rows = []
    # each ember workload is timed, then its PyTorch twin from the same initial weights
    for name, make, x_np, y_np, kind in _workloads(np.random.default_rng(0)):
        repeat = max(3, args.repeat // 4) if "4096" in name else args.repeat
        ember_s, init = _ember_run(make, x_np, y_np, kind, repeat)
        et.cuda.empty_cache()
        torch_s = _torch_run(make, init, x_np, y_np, kind, repeat) if _torch_cuda() else None
        if _torch_cuda():
            torch.cuda.empty_cache()
        rows.append((name, ember_s, torch_s))
    print(table(rows, title=f"Training steps on CUDA ({torch.cuda.get_device_name(0)})"
                if _torch_cuda() else "Training steps on CUDA"))
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
