"""Smoke tests of ``examples/``: every script runs as a subprocess for a few steps, exits 0 and
prints what it is meant to print. The demo (``train_digits_cnn.py``) runs one epoch into a
temporary folder; its checkpoint must load with ``ember.tensor.load`` into a fresh model and its
PNG plot must exist.

Subprocesses inherit the environment (``PYTHONPATH`` included, when the packages are not
installed) and run with the interpreter running the tests.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# script -> (arguments for a short run, regexes its stdout must match)
SMOKE = {
    "two_layer_net_manual_backprop.py": (
        ["--steps", "20"], [r"step\s+20\s+loss", r"loss went from [\d.e+]+ to [\d.e+]+"]),
    "fit_line_variable.py": (
        ["--steps", "200"], [r"fitted\s+y = 2\.[45]\d* \* x \+ -0\.[67]", r"true\s+y = 2\.500"]),
    "custom_function.py": (
        ["--steps", "20"], [r"gradcheck\s+MyReLU\.apply: True\s+LegacyReLU\(\)\(x\): True",
                            r"MyReLU\.apply\s+training loss", r"LegacyReLU\(\)\s+training loss"]),
    "hessian_vector_product.py": (
        ["--steps", "2"], [r"symmetric: True", r"direction 2: \|Hv\|",
                           r"all Hessian-vector products agree"]),
    "mnist_style_cnn.py": (
        ["--steps", "6", "--batch-size", "8"],
        [r"\(conv1\): Conv2d\(1, 6, kernel_size=\(5, 5\)", r"step\s+6\s+loss",
         r"held-out accuracy on \d+ (digits|random) images"]),
    "tree_network.py": (
        ["--steps", "30"], [r"example parse: \(", r"step\s+30\s+loss",
                            r"test accuracy after 30 sentences"]),
    "train_ddp.py": (     # one process here; packages/distributed's tests run real 2-rank jobs
        ["--epochs", "1", "--no-progress"], [r"epoch\s+1/1\s+train loss",
                                             r"final validation accuracy [\d.]+% after 1 "
                                             r"epochs on 1 processes"]),
    "export_onnx.py": (   # no checkpoint in the tmp dir: trains one quick epoch, then exports
        ["--epochs", "1"], [r"no checkpoint at .*training the demo's DigitsCNN",
                            r"onnx\.checker\.check_model passed",
                            r"max abs difference from ember: [\d.e+-]+"]),
    "spinn_snli.py": (
        ["--epochs", "10"], [r"SNLI: 3 train / 2 dev / 1 test pairs",
                             r"shift shift reduce shift shift shift reduce reduce reduce",
                             r"epoch\s+10\s+train loss"]),
}
DEMO = "train_digits_cnn.py"


def _env() -> dict[str, str]:
    """The environment, with PYTHONPATH's entries made absolute (scripts run in a tmp dir)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return env


def _run(script: str, args: list[str], cwd: Path, timeout: float = 150):
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (
        f"{script} {' '.join(args)} exited {proc.returncode}\n--- stdout\n{proc.stdout[-4000:]}"
        f"\n--- stderr\n{proc.stderr[-4000:]}")
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    return proc


def _smoke_args(script: Path) -> list[str]:
    """Arguments for a short run of a script this file does not know by name."""
    source = script.read_text(encoding="utf-8")
    if '"--steps"' in source:
        return ["--steps", "3"]
    if '"--epochs"' in source:
        return ["--epochs", "1"]
    return []


def _scripts() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != DEMO)


def test_every_example_is_covered():
    names = _scripts()
    assert set(SMOKE) <= set(names), sorted(set(SMOKE) - set(names))
    assert (EXAMPLES / DEMO).is_file()


@pytest.mark.parametrize("script", _scripts())
def test_example_runs(script, tmp_path):
    if script in SMOKE:
        args, patterns = SMOKE[script]
    else:   # e.g. the RNN examples written alongside: run them short, expect some output
        args, patterns = _smoke_args(EXAMPLES / script), [r"\S"]
    proc = _run(script, args, cwd=tmp_path)
    for pattern in patterns:
        assert re.search(pattern, proc.stdout), (
            f"{script}: no match for {pattern!r} in\n{proc.stdout[-4000:]}")


def test_every_example_has_help(tmp_path):
    for script in [DEMO, *_scripts()]:
        proc = _run(script, ["--help"], cwd=tmp_path, timeout=60)
        assert "usage:" in proc.stdout, script
        assert "--steps" in proc.stdout or "--epochs" in proc.stdout, script


def test_demo_help_lists_its_options(tmp_path):
    out = _run(DEMO, ["--help"], cwd=tmp_path, timeout=60).stdout
    for option in ("--epochs", "--batch-size", "--lr", "--out", "--device", "--seed"):
        assert option in out, option
    assert "runs/digits" in out


def test_demo_one_epoch_writes_a_loadable_checkpoint_and_a_plot(tmp_path):
    import ember.tensor as et

    out = tmp_path / "run"
    proc = _run(DEMO, ["--epochs", "1", "--out", str(out)], cwd=tmp_path)
    match = re.search(r"epoch\s+1/1\s+train loss [\d.]+\s+val loss [\d.]+\s+"
                      r"val accuracy ([\d.]+)%", proc.stdout)
    assert match, proc.stdout[-4000:]
    accuracy = float(match.group(1))
    assert accuracy > 50.0, f"one epoch should already beat chance by far, got {accuracy}%"
    assert re.search(r"final validation accuracy [\d.]+% after 1 epochs", proc.stdout)

    plot = out / "curves.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    state = et.load(str(out / "checkpoint.safetensors"))
    assert set(state) == {"model", "optimizer", "epoch"}
    assert state["epoch"] == 1
    assert set(state["optimizer"]) == {"state", "param_groups"}
    assert len(state["optimizer"]["state"]) == len(state["model"])

    spec = importlib.util.spec_from_file_location("train_digits_cnn", EXAMPLES / DEMO)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    model = demo.DigitsCNN()
    assert set(state["model"]) == set(model.state_dict())
    model.load_state_dict(state["model"])
    for name, tensor in model.state_dict().items():
        assert et.equal(tensor, state["model"][name]), name

    # the optimizer state resumes: Adam's step count is one epoch of batches
    import ember.nn as nn
    import ember.optim as optim

    optimizer = optim.Adam(model.parameters(), lr=1.0)
    optimizer.load_state_dict(state["optimizer"])
    assert optimizer.param_groups[0]["lr"] == pytest.approx(2e-3)
    steps = {float(s["step"]) for s in optimizer.state_dict()["state"].values()}
    assert steps == {float(-(-1438 // 32))}, steps      # 1438 training images, batches of 32
    loss = nn.CrossEntropyLoss()(model(et.randn(4, 1, 8, 8)), et.tensor([0, 1, 2, 3]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def test_demo_rejects_a_bad_option(tmp_path):
    proc = subprocess.run([sys.executable, str(EXAMPLES / DEMO), "--epochs", "0",
                           "--out", str(tmp_path / "run")], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--epochs" in proc.stderr
    assert not (tmp_path / "run").exists()
