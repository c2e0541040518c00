"""Shared timing helpers for the benchmarks: best-of-N wall time of a callable, and the
Markdown table every benchmark prints (workload, ember, PyTorch, ratio ember / PyTorch)."""
from __future__ import annotations

import gc
import time


def timeit(fn, *, number: int | None = None, repeat: int = 7, min_time: float = 0.05) -> float:
    """Seconds per call: calibrate ``number`` to take ``min_time``, best of ``repeat``."""
    fn()
    if number is None:
        number, t = 1, 0.0
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            t = time.perf_counter() - t0
            if t >= min_time or number >= 1_000_000:
                break
            number *= 10 if t < min_time / 10 else 2
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best = min(best, (time.perf_counter() - t0) / number)
    finally:
        gc.enable()
    return best


def fmt_time(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.2f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def table(rows, title: str | None = None) -> str:
    """Markdown table of (workload, ember_s, torch_s) rows."""
    lines = []
    if title:
        lines.append(f"### {title}\n")
    lines.append("| workload | ember | PyTorch | ratio ember / PyTorch |")
    lines.append("| --- | ---: | ---: | ---: |")
    for name, e, t in rows:
        ratio = f"{e / t:.2f}" if e is not None and t else "-"
        lines.append(f"| {name} | {fmt_time(e)} | {fmt_time(t)} | {ratio} |")
    return "\n".join(lines)
