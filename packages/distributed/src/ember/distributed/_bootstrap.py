"""Run under ``mpiexec`` by the launcher: export torchrun's environment variables from Open
MPI's, then run the script (``-m module`` for a module) as ``__main__``.

A rank whose script raises (or exits non-zero) prints its traceback and aborts the whole MPI
job (``MPI_Abort``), as ``python -m mpi4py`` does: otherwise the other ranks would wait in
their next collective forever and ``mpiexec`` would never return."""
from __future__ import annotations

import os
import runpy
import sys
import traceback

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


def _abort(code: int) -> None:
    """End every rank of the job: ``MPI_Abort`` where MPI is up, else just this process."""
    sys.stdout.flush()
    sys.stderr.flush()
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        # failed before the process group came up: start MPI only to abort through it, as a
        # plain exit can leave the other ranks waiting in MPI_Init for this one
        try:
            from mpi4py import MPI as mpi
        except Exception:  # no mpi4py: nothing else to tell
            mpi = None
    if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
        mpi.COMM_WORLD.Abort(code)
    os._exit(code)


def main() -> None:
    _export()
    args = sys.argv[1:]
    if not args:
        raise SystemExit("usage: python -m ember.distributed._bootstrap [-m] script [args...]")
    try:
        _run(args)
    except SystemExit as exc:
        code = exc.code
        if code is None or code == 0:
            raise
        if not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        rank = os.environ.get("RANK", "?")
        print(f"ember.distributed.run: rank {rank} exited with code {code}; aborting the job",
              file=sys.stderr)
        _abort(code)
    except BaseException:
        rank = os.environ.get("RANK", "?")
        traceback.print_exc()
        print(f"ember.distributed.run: rank {rank} failed (traceback above); aborting the job",
              file=sys.stderr)
        _abort(1)


def _run(args: list[str]) -> None:
    if args[0] == "-m":
        sys.argv = [args[1]] + args[2:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
        runpy.run_path(args[0], run_name="__main__")


if __name__ == "__main__":
    main()
