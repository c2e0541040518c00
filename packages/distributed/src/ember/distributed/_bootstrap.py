"""Run under ``mpiexec`` by the launcher: export torchrun's environment variables from Open
MPI's, then run the script (``-m module`` for a module) as ``__main__``."""
from __future__ import annotations

import os
import runpy
import sys

_FROM = {
    "RANK": ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"),
    "WORLD_SIZE": ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"),
    "LOCAL_RANK": ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"),
    "LOCAL_WORLD_SIZE": ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"),
}


def _export() -> None:
    for name, sources in _FROM.items():
        for src in sources:
            if src in os.environ:
                os.environ[name] = os.environ[src]
                break
    if os.environ.get("LOCAL_WORLD_SIZE") == os.environ.get("WORLD_SIZE") and \
            "RANK" in os.environ:
        # one node: torchrun's local rank is the rank (Open MPI numbers oversubscribed local
        # ranks in its own order)
        os.environ["LOCAL_RANK"] = os.environ["RANK"]
    os.environ.setdefault("GROUP_RANK", "0")


def main() -> None:
    _export()
    args = sys.argv[1:]
    if not args:
        raise SystemExit("usage: python -m ember.distributed._bootstrap [-m] script [args...]")
    if args[0] == "-m":
        sys.argv = [args[1]] + args[2:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
