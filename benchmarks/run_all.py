"""Run every benchmark against PyTorch CPU, one process per workload file, and print one
Markdown table (workload, ember, PyTorch, ratio ember / PyTorch). ``nox -s bench`` runs this.

    python benchmarks/run_all.py [--only tensor,autograd,...] [--out results.md]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _harness import import_time, table  # noqa: E402

SUITES = ["tensor", "autograd", "nn", "rnn", "tree", "optim", "kernels", "data", "cuda"]
LAYERS = ["tensor", "autograd", "nn", "optim", "data"]

_CHILD = """
import json, sys
sys.path.insert(0, {here!r})
import bench_{name} as m
rows = m.main()
print("@@ROWS@@" + json.dumps([list(r) for r in rows]))
"""


def _run_suite(name: str) -> list[tuple]:
    code = _CHILD.format(here=str(HERE), name=name)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ))
    for line in proc.stdout.splitlines():
        if line.startswith("@@ROWS@@"):
            return [tuple(r) for r in json.loads(line[len("@@ROWS@@"):])]
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
    return [(f"{name}: failed ({' / '.join(tail)})", None, None)]


def _source_size() -> int:
    """Bytes of ember's package sources (what its wheels hold), when it is not installed."""
    root = HERE.parent / "packages"
    return sum(p.stat().st_size for p in root.glob("*/src/**/*") if p.is_file()
               and "__pycache__" not in p.parts)


def _installed_size(dist_prefix: str) -> int:
    """Bytes of files installed by the distributions whose names start with the prefix."""
    from importlib import metadata

    total = 0
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == dist_prefix or name.startswith(dist_prefix + "-"):
            for f in dist.files or []:
                try:
                    total += os.path.getsize(dist.locate_file(f))
                except OSError:
                    pass
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default=",".join(SUITES), help="comma-separated suites")
    ap.add_argument("--out", help="also write the table to this Markdown file")
    args = ap.parse_args()
    rows: list[tuple] = []
    t0 = time.time()
    for name in args.only.split(","):
        print(f"running bench_{name} ...", file=sys.stderr, flush=True)
        rows.extend(_run_suite(name))
    torch_import = import_time("torch")
    for layer in LAYERS:
        rows.append((f"import ember.{layer}", import_time(f"ember.{layer}"), torch_import))
    size_e, size_t = _installed_size("ember") or _source_size(), _installed_size("torch")
    text = table(rows, "ember vs PyTorch CPU (times: lower is better; rates: higher is better)")
    text += (f"\n\nInstalled size: ember {size_e / 1e6:.2f} MB, PyTorch {size_t / 1e6:.1f} MB "
             f"(ratio {size_e / size_t if size_t else float('nan'):.4f}).\n"
             f"Total benchmark time {time.time() - t0:.0f} s.")
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
