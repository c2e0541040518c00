"""A sweep over the whole op table: every entry that PyTorch has under the same name, on its
first float32 sample (small tensors, where per-call overhead dominates), timed on ember and
on PyTorch in the same process: forward without grad, then forward+backward of ``sum()``.

    python benchmarks/bench_ops.py [--filter NAME] [--min-ratio R] [--json]

Prints one Markdown table of ratios (ember / PyTorch, lower is better) and a summary line:
how many ops are within 1.5x both ways. Entries whose sample PyTorch rejects are listed as
skipped with the reason, so the sweep never silently narrows.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import zlib
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import timeit  # noqa: E402

import ember.autograd  # noqa: E402,F401
import ember.tensor as et  # noqa: E402
from ember.tensor.testing import op_table as T  # noqa: E402


def _rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def _convert(a, fw, grad):
    if isinstance(a, np.ndarray):
        t = fw.tensor(a.copy())
        if grad and a.dtype.kind == "f":
            t.requires_grad_(True)
        return t
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_convert(x, fw, grad) for x in a)
    return a


def _convert_all(sample, fw, grad):
    return (tuple(_convert(a, fw, grad) for a in sample.args),
            {k: _convert(v, fw, False) for k, v in sample.kwargs.items()})


def _call(fn, args, kwargs):
    return lambda: fn(*args, **kwargs)


def _first_float(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for o in outs:
        if hasattr(o, "requires_grad") and o.requires_grad:
            return o
    return None


def _fwd_bwd(fn, args, kwargs):
    def run():
        o = _first_float(fn(*args, **kwargs))
        o.sum().backward()
    return run


def sweep(torch, name_filter=None):
    rows, skipped = [], []
    for entry in T.OP_TABLE:
        if name_filter and name_filter not in entry.name:
            continue
        if "float32" not in entry.dtypes or not entry.fn.__module__.startswith("ember."):
            continue
        tfn = getattr(torch, entry.name, None)
        if tfn is None:
            continue
        samples = entry.samples("float32", _rng(entry.name))
        if not samples:
            continue
        s = samples[0]
        try:
            ea, ek = _convert_all(s, et, False)
            ta, tk = _convert_all(s, torch, False)
            tfn(*ta, **tk)
            entry.fn(*ea, **ek)
        except Exception as exc:  # noqa: BLE001  (reported, not hidden)
            skipped.append((entry.name, f"{type(exc).__name__}: {str(exc)[:60]}"))
            continue
        fwd = timeit(_call(entry.fn, ea, ek), repeat=5, min_time=0.02) / \
            timeit(_call(tfn, ta, tk), repeat=5, min_time=0.02)
        bwd = None
        if entry.differentiable:
            ea, ek = _convert_all(s, et, True)
            ta, tk = _convert_all(s, torch, True)
            try:
                if _first_float(entry.fn(*ea, **ek)) is not None and \
                        _first_float(tfn(*ta, **tk)) is not None:
                    bwd = timeit(_fwd_bwd(entry.fn, ea, ek), repeat=5, min_time=0.02) / \
                        timeit(_fwd_bwd(tfn, ta, tk), repeat=5, min_time=0.02)
            except Exception as exc:  # noqa: BLE001
                skipped.append((entry.name + " (backward)", f"{type(exc).__name__}: "
                                f"{str(exc)[:60]}"))
        rows.append((entry.name, fwd, bwd))
    return rows, skipped


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--filter", default=None)
    p.add_argument("--min-ratio", type=float, default=0.0, help="print only rows at least this")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    rows, skipped = sweep(torch, a.filter)
    if a.json:
        print(json.dumps({"rows": rows, "skipped": skipped}))
        return
    print("| op | forward (no grad) | forward + backward |\n| --- | ---: | ---: |")
    for name, f, b in sorted(rows, key=lambda r: -max(r[1], r[2] or 0)):
        if max(f, b or 0) >= a.min_ratio:
            print(f"| {name} | {f:.2f} | {'-' if b is None else f'{b:.2f}'} |")
    within = sum(1 for _, f, b in rows if f <= 1.5 and (b is None or b <= 1.5))
    fw = [f for _, f, _ in rows]
    bw = [b for _, _, b in rows if b is not None]
    print(f"\n{within} of {len(rows)} ops within 1.5x both ways; median forward "
          f"{statistics.median(fw):.2f}, median forward+backward {statistics.median(bw):.2f}")
    for name, why in skipped:
        print(f"skipped {name}: {why}")


if __name__ == "__main__":
    main()
