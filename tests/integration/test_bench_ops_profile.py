"""bench_ops's ``--profile`` attribution: the entries with most time of their own and the call
counts of one call, measured with cProfile (the sweep itself needs PyTorch and runs by hand)."""
import importlib.util
import pathlib
import re
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_ops():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("bench_ops",
                                                      ROOT / "benchmarks" / "bench_ops.py")
        mod = sys.modules["bench_ops"] = importlib.util.module_from_spec(spec)  # (dataclasses)
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop("bench_ops", None)
        sys.path.remove(str(ROOT / "benchmarks"))


def _two_python_calls_and_a_sort(a):
    def inner(x):
        return np.sort(x)  # np.sort is a Python wrapper over the array method
    return inner(a)


def test_bound_by_names_the_heaviest_entries_and_counts_calls(bench_ops):
    a = np.random.default_rng(0).standard_normal(200_000)
    line = bench_ops.bound_by(lambda: _two_python_calls_and_a_sort(a), 0.05)
    shares = re.findall(r"(\d+)%", line)
    assert 1 <= len(shares) <= 3 and all(0 <= int(s) <= 100 for s in shares)
    assert line.split(",")[0].startswith("sort of numpy.ndarray")  # the sort's own time leads
    py, c = map(int, re.search(r"(\d+) Python and (\d+) C calls a call", line).groups())
    assert py >= 2 and c >= 1  # inner and np.sort's wrapper; the array method


def test_where_names_c_functions_and_ember_files(bench_ops):
    assert bench_ops._where(("~", 0, "<method 'argsort' of 'numpy.ndarray' objects>")) == \
        "argsort of numpy.ndarray"
    assert bench_ops._where(("~", 0, "<built-in method numpy.arange>")) == "numpy.arange"
    path = str(ROOT / "packages/tensor/src/ember/tensor/_shape.py")
    assert bench_ops._where((path, 10, "cat")) == "tensor/_shape.py:cat"
