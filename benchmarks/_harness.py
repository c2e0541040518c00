"""Shared timing helpers for the benchmarks: best-of-N wall time of a callable, and the
Markdown table every benchmark prints (workload, ember, PyTorch, ratio ember / PyTorch)."""
from __future__ import annotations

import gc
import subprocess
import sys
import time


def timeit(fn, *, number: int | None = None, repeat: int = 7, min_time: float = 0.05,
           timer=time.perf_counter) -> float:
    """Seconds per call: calibrate ``number`` to take ``min_time``, best of ``repeat``.
    ``timer``: wall time by default; ``time.process_time`` counts only the CPU time of this
    process (single-threaded work on a shared machine: time spent descheduled is left out)."""
    fn()
    if number is None:
        number, t = 1, 0.0
        while True:
            t0 = timer()
            for _ in range(number):
                fn()
            t = timer() - t0
            if t >= min_time or number >= 1_000_000:
                break
            number *= 10 if t < min_time / 10 else 2
    best = float("inf")
    gc.disable()
    try:
        for _ in range(repeat):
            t0 = timer()
            for _ in range(number):
                fn()
            best = min(best, (timer() - t0) / number)
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


def fmt_value(v: float | None, unit: str) -> str:
    """Seconds as a time; other units (``fraction``, ``tokens/s``, ...) as numbers."""
    if v is None:
        return "-"
    if unit == "s":
        return fmt_time(v)
    if unit == "fraction":
        return f"{100 * v:.1f} %"
    return f"{v:,.0f} {unit}"


def table(rows, title: str | None = None) -> str:
    """Markdown table of (workload, ember, torch[, unit]) rows; the unit defaults to seconds
    (lower is better). For rates the ratio is still ember / PyTorch (higher is better)."""
    lines = []
    if title:
        lines.append(f"### {title}\n")
    lines.append("| workload | ember | PyTorch | ratio ember / PyTorch |")
    lines.append("| --- | ---: | ---: | ---: |")
    for row in rows:
        name, e, t = row[:3]
        unit = row[3] if len(row) > 3 else "s"
        ratio = f"{e / t:.2f}" if e is not None and t else "-"
        lines.append(f"| {name} | {fmt_value(e, unit)} | {fmt_value(t, unit)} | {ratio} |")
    return "\n".join(lines)


def import_time(module: str, repeat: int = 3) -> float:
    """Best wall time of ``import module`` in a fresh interpreter."""
    code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
    best = float("inf")
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)
        best = min(best, float(out.stdout.strip()))
    return best
