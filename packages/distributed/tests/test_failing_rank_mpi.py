"""A rank that raises (or exits non-zero) ends the whole job quickly: the launcher's exit status
is non-zero and the failing rank's error is shown. Bounded by a timeout: a hang fails."""
import subprocess
import sys
import time

import pytest
from _ember_distributed_test_helpers import WORKERS, needs_mpi

pytestmark = needs_mpi
LIMIT = 60  # seconds before the test calls it a hang; a healthy abort takes a few


@pytest.mark.parametrize("when, shown", [
    ("before", "ValueError: rank 1 failed before init_process_group"),
    ("after", "ValueError: rank 1 failed inside the training loop"),
    ("exit", "rank 1 exited with code 3"),
])
def test_failing_rank_fails_the_job(tmp_path, when, shown):
    cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
           str(WORKERS / "fail.py"), str(tmp_path), when]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the launcher hung for {LIMIT}s after rank 1 failed:\n{exc.stderr}")
    elapsed = time.monotonic() - start
    assert proc.returncode != 0
    assert shown in proc.stdout + proc.stderr
    assert elapsed < 30, f"took {elapsed:.1f}s"
