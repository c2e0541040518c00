"""tools/check_private_imports.py catches each kind of cross-distribution private use, on a
temporary tree, and lets the allowed forms through."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "check_private_imports.py"


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_private_imports", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root: Path, rel: str, source: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


# each line marked "# BAD" must be reported, every other line must not
NN_SOURCE = """\
import importlib
import ember.tensor as et
import ember.tensor._tensor  # BAD
import ember.autograd._engine as eng  # BAD
from ember.tensor._registry import array_module  # BAD
from ember.tensor import _creation  # BAD
from ember.tensor import Tensor, extension, __version__
from ember.tensor.kernels import get
from ember.nn._private import thing
from ember.nn.functional import _conv
from . import _sibling
from ._local import helper
importlib.import_module("ember.tensor._dtype")  # BAD
importlib.import_module("ember.nn._own")


def f(x, y):
    a = x._data  # BAD
    b = Tensor._make(a)  # BAD
    y._bump()  # BAD
    c = x._view_of(a)  # BAD
    d = x._vc  # BAD
    e = et._dtype._FROM_NP  # BAD
    g = et.zeros(3)
    h = x._own_attribute
    return a, b, c, d, e, g, h, extension.unwrap(x), _conv, thing, helper, _sibling, get
"""

TENSOR_SOURCE = """\
from ember.tensor._tensor import Tensor
from ._registry import OPS
import ember.autograd._engine_api  # BAD


def f(x):
    x._bump()
    return Tensor._make(x._data), x._vc, x._view_of(x._data), OPS
"""

TEST_SOURCE = """\
from ember.optim.optimizer import _cast
from ember.tensor._dtype import _FROM_NP  # BAD


def test_x(p):
    assert p._data is not None  # BAD
    return _cast, _FROM_NP
"""


def _expected(path: Path) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if "# BAD" in line}


def test_each_kind_is_caught_and_allowed_forms_pass(checker, tmp_path):
    nn = _write(tmp_path, "packages/nn/src/ember/nn/mod.py", NN_SOURCE)
    tensor = _write(tmp_path, "packages/tensor/src/ember/tensor/mod.py", TENSOR_SOURCE)
    test = _write(tmp_path, "packages/optim/tests/test_mod.py", TEST_SOURCE)
    # exempt places and files that are not Python
    _write(tmp_path, "examples/demo.py", "from ember.tensor._tensor import Tensor\n")
    _write(tmp_path, "benchmarks/bench.py", "x = y._data\n")
    _write(tmp_path, "packages/nn/README.md", "from ember.tensor._tensor import Tensor\n")
    for path, own in ((nn, "nn"), (tensor, "tensor"), (test, "optim")):
        found = {line for line, _ in checker.check_file(path, own)}
        assert found == _expected(path), path.name
    assert {str(p.relative_to(tmp_path)) for p, _ in checker.iter_files(tmp_path)} == {
        "packages/nn/src/ember/nn/mod.py", "packages/tensor/src/ember/tensor/mod.py",
        "packages/optim/tests/test_mod.py"}


def test_command_line_lists_file_and_line_and_fails(checker, tmp_path):
    _write(tmp_path, "packages/data/src/ember/data/mod.py",
           "import ember.tensor as et\n\nx = et.ones(1)._data\n")
    run = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True,
                         text=True)
    assert run.returncode == 1
    assert "packages/data/src/ember/data/mod.py:3: reaches into tensor internals: ._data" \
        in run.stdout
    _write(tmp_path, "packages/data/src/ember/data/mod.py",
           "from ember.tensor import extension\n\nx = extension.unwrap(1)\n")
    run = subprocess.run([sys.executable, str(TOOL), str(tmp_path)], capture_output=True,
                         text=True)
    assert (run.returncode, run.stdout) == (0, "")


def test_dunders_are_public_and_private_names_are_not(checker):
    assert not checker.is_private("__version__")
    assert checker.is_private("_tensor") and checker.is_private("__secret")
    assert checker.distribution_of("ember.data.text") == "data"
    assert checker.distribution_of("numpy") is None
