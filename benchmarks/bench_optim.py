"""Time ember.optim's fused CPU steps against PyTorch CPU in one process.

Run ``python benchmarks/bench_optim.py``. Workloads: one optimizer step over 10M float32
parameters held in 20 tensors (gradients fixed), for Adam and for SGD with momentum. ember's
fused Numba kernels run against PyTorch's default CPU implementation and against
``fused=True`` Adam; ember's plain NumPy path (``fused=False``) is timed too, to show what the
kernels gain. Prints a Markdown table (ratio ember / PyTorch; below 1: ember is faster).
Trials of ember and PyTorch alternate (best of 15 each).
``main()`` returns rows ``(workload, ember_s, torch_s)``. No assertions on time.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parents[1]
try:
    import ember.optim  # noqa: F401
    import ember.tensor  # noqa: F401
except ImportError:  # run from a checkout without installing
    for pkg in ("tensor", "autograd", "optim"):
        sys.path.insert(0, str(_ROOT / "packages" / pkg / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import table  # noqa: E402

import ember.tensor as et  # noqa: E402
from ember import optim  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

N_TENSORS = 20
N_PARAMS = 10_000_000


def _arrays(seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    size = N_PARAMS // N_TENSORS
    params = [rng.standard_normal(size, dtype=np.float32) for _ in range(N_TENSORS)]
    grads = [rng.standard_normal(size, dtype=np.float32) for _ in range(N_TENSORS)]
    return params, grads


def _ember_step(make):
    params, grads = _arrays()
    ps = [et.from_numpy(p) for p in params]
    for p, g in zip(ps, grads):
        p.grad = et.from_numpy(g)
    opt = make(ps)
    opt.step()  # state allocation and kernel compilation are not timed
    return opt.step


def _torch_step(make):
    if torch is None:
        return None
    params, grads = _arrays()
    ps = [torch.from_numpy(p).requires_grad_() for p in params]
    for p, g in zip(ps, grads):
        p.grad = torch.from_numpy(g)
    opt = make(ps)
    opt.step()
    return opt.step


REPEAT = 15


def _time_pair(ember_step, torch_step) -> tuple[float, float | None]:
    """Best-of-REPEAT seconds per step of each, alternating ember and torch trials so that a
    change in machine load hits both alike."""
    best_e, best_t = float("inf"), float("inf")
    gc.disable()
    try:
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            ember_step()
            best_e = min(best_e, time.perf_counter() - t0)
            if torch_step is not None:
                t0 = time.perf_counter()
                torch_step()
                best_t = min(best_t, time.perf_counter() - t0)
    finally:
        gc.enable()
    return best_e, (best_t if torch_step is not None else None)


def main() -> list[tuple[str, float, float | None]]:
    """Run every workload; print the Markdown table; return (workload, ember_s, torch_s)."""
    lr = 1e-6
    workloads = [
        ("Adam step, 10M params / 20 tensors (vs torch default)",
         lambda ps: optim.Adam(ps, lr=lr),
         None if torch is None else (lambda ps: torch.optim.Adam(ps, lr=lr))),
        ("Adam step, 10M params / 20 tensors (vs torch fused=True)",
         lambda ps: optim.Adam(ps, lr=lr),
         None if torch is None else (lambda ps: torch.optim.Adam(ps, lr=lr, fused=True))),
        ("Adam step, ember NumPy path fused=False (vs torch default)",
         lambda ps: optim.Adam(ps, lr=lr, fused=False),
         None if torch is None else (lambda ps: torch.optim.Adam(ps, lr=lr))),
        ("SGD momentum step, 10M params / 20 tensors (vs torch default)",
         lambda ps: optim.SGD(ps, lr=lr, momentum=0.9),
         None if torch is None else (lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9))),
        ("SGD momentum step, ember NumPy path fused=False (vs torch default)",
         lambda ps: optim.SGD(ps, lr=lr, momentum=0.9, fused=False),
         None if torch is None else (lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9))),
    ]
    rows = []
    for name, make_ember, make_torch in workloads:
        torch_step = _torch_step(make_torch) if make_torch is not None else None
        e, t = _time_pair(_ember_step(make_ember), torch_step)
        rows.append((name, e, t))
    print(table(rows, title="ember.optim vs torch.optim (CPU, float32)"), flush=True)
    return rows


if __name__ == "__main__":
    main()
