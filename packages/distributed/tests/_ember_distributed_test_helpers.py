"""Shared test helpers: running a worker script under the launcher on 2 processes."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

WORKERS = Path(__file__).parent / "workers"

needs_mpi = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("mpi4py") is None,
    reason="mpi4py is not installed (pip install 'ember-distributed[mpi]')")


def launch(script: str, out: Path, nproc: int = 2, timeout: float = 120) -> list[dict]:
    """Run ``workers/<script>`` on ``nproc`` processes through the launcher; return each rank's
    saved results."""
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(nproc),
           str(WORKERS / script), str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr}"
    results = []
    for r in range(nproc):
        with np.load(out / f"rank{r}.npz") as f:
            results.append({k: f[k] for k in f.files})
    return results


def load_worker(name: str):
    """Import a worker script as a module (its input builders are the tests' oracle inputs)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_worker_{name}", WORKERS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
