"""Developer tasks: ``nox -s bench``, ``nox -s lint``, ``nox -s wheels``.

The test matrix itself lives in tox.ini (that is what CI runs).
"""
from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = ["tensor", "autograd", "nn", "optim", "data"]
nox.options.sessions = ["lint"]


def _install_all(session: nox.Session) -> None:
    session.install(*[str(ROOT / "packages" / p) for p in PACKAGES])


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", "packages", "examples", "benchmarks", "tools", "noxfile.py")


@nox.session
def wheels(session: nox.Session) -> None:
    """Build a wheel and an sdist of every distribution into dist/."""
    session.install("build")
    for name in PACKAGES:
        session.run("python", "-m", "build", "--outdir", str(ROOT / "dist"),
                    str(ROOT / "packages" / name))


@nox.session
def bench(session: nox.Session) -> None:
    """Run every benchmark against PyTorch CPU and print the Markdown ratio table."""
    _install_all(session)
    session.install("torch==2.13.0", "tqdm")
    session.run("python", str(ROOT / "benchmarks" / "run_all.py"), *session.posargs)
