"""Smoke test of ``examples/export_onnx.py`` (issue 20): the digits demo trains one epoch, the
example exports its checkpoint to ONNX, checks it with ``onnx.checker`` and runs it in
onnxruntime within 1e-5 of ember; a tolerance it cannot meet makes it exit 1. Lives here rather
than in ``packages/onnx/tests`` because the digits come from scikit-learn (requirements-demo.txt),
which the onnx env does not have; the integration env installs ember-onnx and onnxruntime.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(script: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=150)


def test_export_onnx_runs_the_demo_checkpoint_in_onnxruntime(tmp_path):
    demo = _run("train_digits_cnn.py", ["--epochs", "1", "--no-progress"], cwd=tmp_path)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    checkpoint = tmp_path / "runs" / "digits" / "checkpoint.safetensors"
    assert checkpoint.is_file()

    # the default --checkpoint is the demo's runs/digits/checkpoint.safetensors
    proc = _run("export_onnx.py", [], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    out = proc.stdout
    assert f"loaded {Path('runs/digits/checkpoint.safetensors')} (epoch 1)" in out, out
    assert "onnx.checker.check_model passed" in out
    acc = re.search(r"onnxruntime on (\d+) validation digits: accuracy ([\d.]+)% "
                    r"\(ember ([\d.]+)%\)", out)
    assert acc, out
    assert int(acc.group(1)) > 8                     # another batch size than the traced 8
    assert acc.group(2) == acc.group(3)
    assert float(acc.group(2)) > 50
    diff = float(re.search(r"max abs difference from ember: ([\d.e+-]+)", out).group(1))
    assert diff <= 1e-5
    onnx_file = tmp_path / "runs" / "digits" / "digits_cnn.onnx"
    assert onnx_file.is_file()

    import onnx
    import onnxruntime as ort
    model = onnx.load(str(onnx_file))
    onnx.checker.check_model(model)
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param == "batch"
    session = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    import numpy as np
    logits = session.run(None, {"image": np.zeros((3, 1, 8, 8), np.float32)})[0]
    assert logits.shape == (3, 10)

    # a disagreement beyond the tolerance is an error
    strict = _run("export_onnx.py", ["--checkpoint", str(checkpoint), "--atol", "0",
                                     "--out", str(tmp_path / "strict.onnx")], cwd=tmp_path)
    if "max abs difference from ember: 0 " not in strict.stdout:
        assert strict.returncode == 1, strict.stdout + strict.stderr
        assert "differ by" in strict.stderr


def test_export_onnx_help(tmp_path):
    proc = _run("export_onnx.py", ["--help"], cwd=tmp_path)
    assert proc.returncode == 0
    for option in ("--checkpoint", "--out", "--epochs", "--atol"):
        assert option in proc.stdout
