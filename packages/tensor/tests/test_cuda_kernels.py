"""CUDA kernels of ember-tensor (ember/tensor/kernels/cuda).

(a) every ``.cu`` source compiles with nvcc for sm_75 and sm_90 and defines the kernels the
    wrappers launch (runs wherever nvcc is on the PATH, GPU or not);
(b) every kernel, run on a GPU through CuPy, matches a NumPy reference (``@pytest.mark.cuda``:
    skipped with a reason without a GPU; failing instead when EMBER_REQUIRE_GPU=1);
(c) without CuPy, both modules import and every kernel raises a clear RuntimeError;
(d) the host side of every wrapper (validation, argument types and order against the kernel
    signatures parsed from the ``.cu`` sources) runs against a NumPy-backed stand-in for CuPy.
"""

from __future__ import annotations

import inspect
import math
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import ember.tensor._cupy as _cupy
import ember.tensor.kernels.cuda as K

CUDA_DIR = Path(K.__file__).parent
CU_FILES = sorted(CUDA_DIR.glob("*.cu"))
ARCHS = ("sm_75", "sm_90")
FLOATS = (np.float32, np.float64)
KERNEL_FUNCS = [name for name in K.__all__ if callable(getattr(K, name))]


# ---------------------------------------------------------------------------------------------
# kernel signatures, parsed from the sources

_C_TYPES = {"float": np.float32, "double": np.float64, "long long": np.int64, "int": np.int32}


def _signatures(source: str) -> dict[str, list[tuple[bool, np.dtype]]]:
    """extern "C" kernel name -> [(is_pointer, dtype)] for each parameter."""
    text = source.replace("\\\n", " ")
    macros = dict(re.findall(r"#define (EMBER_\w+_PARAMS)[ \t]+(.*)", text))
    sigs = {}
    for name, params in re.findall(r'extern "C" __global__ void (\w+)\(([^)]*)\)', text):
        for macro, body in macros.items():
            params = params.replace(macro, body)
        parsed = []
        for param in params.split(","):
            words = param.replace("const", " ").replace("*", " * ").split()
            is_ptr = "*" in words
            base = " ".join(w for w in words[:-1] if w != "*")  # drop the parameter's name
            parsed.append((is_ptr, np.dtype(_C_TYPES[base])))
        sigs[name] = parsed
    return sigs


# ---------------------------------------------------------------------------------------------
# (a) nvcc


def test_sources_match_kernel_table():
    assert {p.stem for p in CU_FILES} == set(K.KERNELS)
    for family, names in K.KERNELS.items():
        source = (CUDA_DIR / f"{family}.cu").read_text()
        sigs = _signatures(source)
        expected = {f"{n}_{s}" for n in names for s in ("f32", "f64")}
        assert set(sigs) == expected, family
        # NVRTC (CuPy RawModule) has no standard headers: the sources must not include any.
        assert not re.search(r"^\s*#\s*include", source, re.MULTILINE), family
    threads = re.search(r"#define EMBER_THREADS (\d+)", (CUDA_DIR / "softmax.cu").read_text())
    assert threads is not None and int(threads.group(1)) == K._THREADS


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("cu", CU_FILES, ids=[p.name for p in CU_FILES])
def test_cu_compiles_with_nvcc(cu, arch, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on the PATH: cannot compile the CUDA sources")
    cubin = tmp_path / f"{cu.stem}_{arch}.cubin"
    result = subprocess.run(
        [nvcc, f"-arch={arch}", "--cubin", "-Werror", "all-warnings", "-o", str(cubin), str(cu)],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert result.returncode == 0, f"nvcc {arch} {cu.name} failed:\n{result.stderr}"
    image = cubin.read_bytes()
    for name in _signatures(cu.read_text()):
        assert name.encode() + b"\0" in image, f"{name} missing from the {arch} cubin"


# ---------------------------------------------------------------------------------------------
# (c) without CuPy

_NO_CUPY = """
import inspect, sys
sys.modules["cupy"] = None  # makes `import cupy` raise ImportError
import ember.tensor._cupy as c
import ember.tensor.kernels.cuda as K
assert c.cupy is None and c.available is False and c.device_count() == 0
assert "cupy" in c.unavailable_reason()
for name in sys.argv[1:]:
    fn = getattr(K, name)
    kwargs = {p: None for p in inspect.signature(fn).parameters}
    try:
        fn(**kwargs)
    except RuntimeError as e:
        msg = str(e)
        assert msg.startswith(name + ": CUDA is not available: install ember-tensor[cuda12] "
                              "or [cuda13] and run on a machine with an NVIDIA GPU"), msg
        assert "No module named" in msg or "import" in msg.lower(), msg
    else:
        raise AssertionError(name + " did not raise")
print("ok", len(sys.argv) - 1)
"""


def test_imports_and_clear_error_without_cupy():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", _NO_CUPY, *KERNEL_FUNCS],
        capture_output=True, text=True, timeout=300, env=env, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ok", str(len(KERNEL_FUNCS))]


def test_require_raises_when_unavailable(monkeypatch):
    monkeypatch.setattr(_cupy, "_probe", (False, "ImportError: no cupy here", 0))
    assert _cupy.available is False
    assert _cupy.device_count() == 0
    with pytest.raises(RuntimeError, match=r"^softmax_forward: CUDA is not available: install "
                       r"ember-tensor\[cuda12\] or \[cuda13\].*\(ImportError: no cupy here\)$"):
        K.softmax_forward(np.zeros((2, 2)))


# ---------------------------------------------------------------------------------------------
# (d) host side against a NumPy-backed stand-in for CuPy


class _FakeArray(np.ndarray):
    @property
    def device(self):
        return types.SimpleNamespace(id=0)


class _FakeDevice:
    def __init__(self, dev=0):
        self.id = dev

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _fa(a, dtype=None):
    return np.asarray(a, dtype=dtype).view(_FakeArray)


class _FakeRawModule:
    calls: list = []

    def __init__(self, code):
        self.sigs = _signatures(code)

    def get_function(self, name):
        sig = self.sigs[name]

        def launch(grid, block, args):
            assert len(grid) == 1 and 1 <= grid[0] <= K._MAX_BLOCKS, grid
            assert block == (K._THREADS,), block
            assert len(args) == len(sig), f"{name}: {len(args)} args for {len(sig)} parameters"
            for i, ((is_ptr, dtype), arg) in enumerate(zip(sig, args)):
                if is_ptr:
                    assert isinstance(arg, _FakeArray), f"{name} arg {i}: {type(arg)}"
                    assert arg.dtype == dtype, f"{name} arg {i}: {arg.dtype} for {dtype}"
                    assert arg.flags.c_contiguous, f"{name} arg {i} not contiguous"
                else:
                    assert type(arg) is dtype.type, f"{name} arg {i}: {type(arg)} for {dtype}"
            _FakeRawModule.calls.append(name)

        return launch


def _fake_cupy():
    def wrap(f):
        return lambda *a, **k: _fa(f(*a, **k))

    return types.SimpleNamespace(
        ndarray=_FakeArray,
        ascontiguousarray=wrap(np.ascontiguousarray),
        zeros=wrap(np.zeros),
        empty=wrap(np.zeros),  # the stand-in kernels write nothing: no garbage to cast
        ones=wrap(np.ones),
        bincount=wrap(np.bincount),
        broadcast_to=wrap(np.broadcast_to),
        RawModule=_FakeRawModule,
        cuda=types.SimpleNamespace(Device=_FakeDevice,
                                   runtime=types.SimpleNamespace(getDevice=lambda: 0)),
    )


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(_cupy, "cupy", _fake_cupy())
    monkeypatch.setattr(_cupy, "_probe", (True, None, 1))
    _FakeRawModule.calls = []
    _cupy.clear_memo()
    yield _FakeRawModule.calls
    _cupy.clear_memo()


def _host_calls(dt):
    r = np.random.default_rng(0)

    def a(*shape):
        return _fa(r.standard_normal(shape), dt)

    idx = _fa([0, 2, 2, 1])
    return [
        ("index_add", lambda: K.index_add(a(2, 3, 4), idx, a(2, 4, 4), alpha=0.5)),
        ("index_add", lambda: K.index_add(a(4, 3, 2).transpose(2, 1, 0), idx, a(2, 4, 4))),
        ("embedding_backward",
         lambda: K.embedding_backward(a(4, 5), _fa([0, 1, 1, 3]), 4, 1, True)),
        ("max_pool_forward",
         lambda: K.max_pool_forward(a(2, 1, 5, 6), (1, 2, 2), (1, 2, 1), (0, 1, 0), (1, 1, 2),
                                    (1, 3, 4))),
        ("max_pool_backward",
         lambda: K.max_pool_backward(a(2, 1, 3, 4), _fa(np.zeros((2, 1, 3, 4), np.int64)),
                                     (1, 5, 6))),
        ("im2col", lambda: K.im2col(a(2, 3, 1, 5, 5), (1, 3, 3), (1, 1, 1), (0, 1, 1),
                                    (1, 1, 1), (1, 5, 5))),
        ("col2im", lambda: K.col2im(a(2, 27, 25), 3, (1, 5, 5), (1, 3, 3), (1, 1, 1), (0, 1, 1),
                                    (1, 1, 1), (1, 5, 5))),
        ("softmax_forward", lambda: K.softmax_forward(a(3, 7))),
        ("softmax_forward", lambda: K.log_softmax_forward(a(7, 3).T)),
        ("softmax_backward", lambda: K.softmax_backward(a(3, 7), a(3, 7))),
        ("softmax_backward", lambda: K.log_softmax_backward(a(3, 7), a(3, 7))),
        ("cross_entropy_forward",
         lambda: K.cross_entropy_forward(a(4, 3), _fa([0, 2, -100, 1]), None, -100, 0.1)),
        ("cross_entropy_backward",
         lambda: K.cross_entropy_backward(a(4, 3), _fa([0, 2, -100, 1]), a(3), -100, 0.0,
                                          _fa(1.0, dt))),
        ("lstm_cell_forward", lambda: K.lstm_cell_forward(a(2, 12), a(2, 3))),
        ("lstm_cell_backward",
         lambda: K.lstm_cell_backward(None, a(2, 3), a(2, 12), a(2, 3), a(2, 3))),
        ("gru_cell_forward", lambda: K.gru_cell_forward(a(2, 9), a(2, 9), a(2, 3))),
        ("gru_cell_backward",
         lambda: K.gru_cell_backward(a(2, 3), a(2, 3), a(2, 3), a(2, 3), a(2, 3), a(2, 3))),
        ("adam_step",
         lambda: K.adam_step([a(3, 4).T], [a(4, 3)], [a(4, 3)], [a(4, 3)], [a(4, 3)], lr=1e-3,
                             beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01, steps=[3],
                             amsgrad=True, maximize=False, decoupled_weight_decay=True)),
        ("adam_step",
         lambda: K.adam_step([a(5)], [a(5)], [a(5)], [a(5)], None, lr=1e-3, beta1=0.9,
                             beta2=0.999, eps=1e-8, weight_decay=0.0, steps=[1], amsgrad=False,
                             maximize=True, decoupled_weight_decay=False)),
        ("sgd_step",
         lambda: K.sgd_step([a(5)], [a(5)], [a(5)], lr=0.1, momentum=0.9, dampening=0.0,
                            weight_decay=1e-4, nesterov=True, maximize=False,
                            first_steps=[True])),
        ("sgd_step",
         lambda: K.sgd_step([a(5)], [a(5)], None, lr=0.1, momentum=0.0, dampening=0.0,
                            weight_decay=0.0, nesterov=False, maximize=False,
                            first_steps=None)),
    ]


@pytest.mark.parametrize("dt", FLOATS)
def test_host_side_launches_match_kernel_signatures(fake, dt):
    calls = _host_calls(dt)
    for expected, call in calls:
        before = len(fake)
        call()
        suffix = "f32" if dt == np.float32 else "f64"
        assert fake[before:] == [f"{expected}_{suffix}"], expected
    assert {name for name, _ in calls} == {n for names in K.KERNELS.values() for n in names}


def test_host_side_float16_runs_in_float32(fake):
    h = np.float16
    y = K.softmax_forward(_fa(np.zeros((2, 3)), h))
    assert fake == ["softmax_forward_f32"] and y.dtype == h and y.shape == (2, 3)
    out, ind = K.max_pool_forward(_fa(np.zeros((1, 1, 2, 2)), h), (1, 2, 2), (1, 2, 2),
                                  (0, 0, 0), (1, 1, 1), (1, 1, 1))
    assert out.dtype == h and ind.dtype == np.int64
    param = _fa(np.ones(4), h)
    K.sgd_step([param], [_fa(np.ones(4), h)], None, lr=0.1, momentum=0.0, dampening=0.0,
               weight_decay=0.0, nesterov=False, maximize=False, first_steps=None)
    assert param.dtype == h
    with pytest.raises(RuntimeError, match=r"softmax_backward: expected g to have dtype float16"):
        K.softmax_backward(_fa(np.zeros((2, 3)), h), _fa(np.zeros((2, 3)), np.float32))


def test_host_side_in_place_copy_back(fake):
    # The stand-in launches do nothing, so a non-contiguous out must come back unchanged.
    out = _fa(np.arange(24.0).reshape(4, 3, 2)).transpose(2, 1, 0)
    before = np.array(out)
    K.index_add(out, _fa([0, 1]), _fa(np.ones((2, 2, 4))))
    np.testing.assert_array_equal(out, before)


def test_host_side_validation(fake):
    f = _fa
    x3 = f(np.zeros((2, 3, 4)))
    with pytest.raises(IndexError, match=r"index_add: index 3 is out of bounds for size 3 "
                                         r"\(valid range \[0, 2\]\)"):
        K.index_add(x3, f([0, 3]), f(np.zeros((2, 2, 4))))
    with pytest.raises(IndexError, match=r"index -1 is out of bounds"):
        K.index_add(x3, f([-1, 0]), f(np.zeros((2, 2, 4))))
    with pytest.raises(RuntimeError, match=r"index_add: expected src of shape \(2, 2, 4\), "
                                           r"got \(2, 3, 4\)"):
        K.index_add(x3, f([0, 1]), x3)
    with pytest.raises(RuntimeError, match=r"index_add: expected src to have dtype float64"):
        K.index_add(x3, f([0, 1]), f(np.zeros((2, 2, 4), np.float32)))
    with pytest.raises(RuntimeError, match=r"index_add: CUDA kernel supports float16, float32 "
                                           r"and float64, got out of dtype int64"):
        K.index_add(f(np.zeros((2, 3, 4), np.int64)), f([0, 1]), f(np.zeros((2, 2, 4), np.int64)))
    with pytest.raises(TypeError, match=r"index_add: expected index of an integer dtype"):
        K.index_add(x3, f([0.0, 1.0]), f(np.zeros((2, 2, 4))))
    with pytest.raises(TypeError, match=r"index_add: expected out to be a CuPy array"):
        K.index_add(np.zeros((2, 3, 4)), f([0, 1]), f(np.zeros((2, 2, 4))))
    with pytest.raises(IndexError, match=r"embedding_backward: index 4 is out of bounds for "
                                         r"size 4"):
        K.embedding_backward(f(np.zeros((2, 5))), f([1, 4]), 4, -1, False)
    with pytest.raises(RuntimeError, match=r"embedding_backward: grad of shape \(3, 5\) does not "
                                           r"match indices of shape \(2,\)"):
        K.embedding_backward(f(np.zeros((3, 5))), f([1, 2]), 4, -1, False)
    with pytest.raises(IndexError, match=r"max_pool_backward: index 30 is out of bounds for "
                                         r"size 30"):
        K.max_pool_backward(f(np.zeros((1, 1, 1, 2))), f([[[[0, 30]]]]), (1, 5, 6))
    with pytest.raises(RuntimeError, match=r"max_pool_forward: output position 0 along h has "
                                           r"a window entirely in padding"):
        K.max_pool_forward(f(np.zeros((1, 1, 4, 4))), (1, 2, 2), (1, 1, 1), (0, 2, 0),
                           (1, 1, 1), (1, 5, 3))
    with pytest.raises(IndexError, match=r"embedding_backward: padding_idx 4 is out of bounds"):
        K.embedding_backward(f(np.zeros((2, 5))), f([1, 2]), 4, 4, False)
    with pytest.raises(ValueError, match=r"cross_entropy_forward: label_smoothing must be"):
        K.cross_entropy_forward(f(np.zeros((2, 3))), f([0, 1]), None, -100, 1.5)
    with pytest.raises(RuntimeError, match=r"col2im: expected cols of shape \(2, 27, 25\)"):
        K.col2im(f(np.zeros((2, 27, 24))), 3, (1, 5, 5), (1, 3, 3), (1, 1, 1), (0, 1, 1),
                 (1, 1, 1), (1, 5, 5))
    with pytest.raises(IndexError, match=r"cross_entropy_forward: target 3 is out of bounds for "
                                         r"size 3 \(valid range \[0, 2\], or -100 \(ignored\)\)"):
        K.cross_entropy_forward(f(np.zeros((2, 3))), f([3, -100]), None, -100, 0.0)
    with pytest.raises(RuntimeError, match=r"softmax_backward: expected g of shape \(2, 3\)"):
        K.softmax_backward(f(np.zeros((2, 3))), f(np.zeros((3, 2))))
    with pytest.raises(RuntimeError, match=r"lstm_cell_forward: expected gates of shape "
                                           r"\(N, 4\*H\)"):
        K.lstm_cell_forward(f(np.zeros((2, 6))), f(np.zeros((2, 1))))
    z = [f(np.zeros(3)), f(np.zeros(2))]
    adam = dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.0, maximize=False,
                decoupled_weight_decay=False)
    with pytest.raises(RuntimeError, match=r"adam_step: amsgrad=True needs a max_exp_avg_sq"):
        K.adam_step(z, z, z, z, None, steps=[1, 1], amsgrad=True, **adam)
    with pytest.raises(RuntimeError, match=r"adam_step: amsgrad=True needs a max_exp_avg_sq "
                                           r"buffer for every param, got None "
                                           r"\(max_exp_avg_sqs\[1\]\)"):
        K.adam_step(z, z, z, z, [z[0], None], steps=[1, 1], amsgrad=True, **adam)
    with pytest.raises(ValueError, match=r"adam_step: steps count from 1, got 0 \(steps\[1\]\)"):
        K.adam_step(z, z, z, z, None, steps=[1, 0], amsgrad=False, **adam)
    with pytest.raises(RuntimeError, match=r"adam_step: expected exp_avgs\[1\] of shape \(2,\), "
                                           r"got \(3,\)"):
        K.adam_step(z, z, [z[0], z[0]], z, None, steps=[1, 1], amsgrad=False, **adam)
    with pytest.raises(RuntimeError, match=r"adam_step: expected grads to hold 2 entries"):
        K.adam_step(z, z[:1], z, z, None, steps=[1, 1], amsgrad=False, **adam)
    with pytest.raises(TypeError, match=r"adam_step: expected params to be a list of CuPy "
                                        r"arrays"):
        K.adam_step(z[0], z[0], z[0], z[0], None, steps=[1], amsgrad=False, **adam)
    sgd = dict(lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0, nesterov=False,
               maximize=False)
    with pytest.raises(RuntimeError, match=r"sgd_step: momentum=0.9 needs a momentum buffer"):
        K.sgd_step(z, z, None, first_steps=[True, True], **sgd)
    with pytest.raises(RuntimeError, match=r"sgd_step: momentum=0.9 needs a momentum buffer "
                                           r"for every param, got None \(bufs\[1\]\)"):
        K.sgd_step(z, z, [z[0], None], first_steps=[True, True], **sgd)
    with pytest.raises(RuntimeError, match=r"sgd_step: expected grads\[1\] to have dtype "
                                           r"float64"):
        K.sgd_step(z, [z[0], f(np.zeros(2), np.float32)], z, first_steps=[True, True], **sgd)
    assert fake == []  # nothing was launched for a bad input, the valid first tensors included


def test_host_side_optimizer_steps_launch_once_per_non_empty_tensor(fake):
    f = _fa
    ps = [f(np.zeros(3)), f(np.zeros(0)), f(np.zeros((2, 2), np.float32))]
    K.adam_step(ps, ps, ps, ps, None, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
                weight_decay=0.0, steps=[1, 2, 3], amsgrad=False, maximize=False,
                decoupled_weight_decay=False)
    assert fake == ["adam_step_f64", "adam_step_f32"]
    fake.clear()
    K.sgd_step(ps, ps, ps, lr=0.1, momentum=0.9, dampening=0.0, weight_decay=0.0,
               nesterov=False, maximize=False, first_steps=[True, False, True])
    assert fake == ["sgd_step_f64", "sgd_step_f32"]


# ---------------------------------------------------------------------------------------------
# (b) on a GPU, against NumPy references


@pytest.mark.cuda
@pytest.mark.parametrize("name, extra", [
    ("silu", ()), ("silu_backward", ()), ("gelu", ()), ("gelu_backward", ()),
    ("softplus", (2.0, 3.0)),
    ("softplus_backward", (2.0, 3.0)), ("elu", (0.7, 1.5, 0.5)), ("hardsigmoid", ()),
    ("hardsigmoid_backward", ()), ("hardswish", ()), ("hardswish_backward", ()), ("mish", ()),
    ("mish_backward", ()), ("log_sigmoid", ()), ("log_sigmoid_backward", ())])
def test_activation_kernels_match_the_cpu_kernels(cp, name, extra):
    from ember.tensor.kernels import cpu

    x = np.concatenate([np.linspace(-8, 8, 321), [-3.0, 3.0, np.nan]]).astype(np.float32)
    g = np.cos(np.arange(x.size)).astype(np.float32)
    args = (g, x) if name.endswith("_backward") else (x,)
    got = getattr(K, name)(*(cp.asarray(a) for a in args), *extra)
    assert got.dtype == np.float32
    with np.errstate(all="ignore"):
        want = getattr(cpu, name)(*args, *extra)
    np.testing.assert_allclose(cp.asnumpy(got), want, rtol=1e-5, atol=1e-6)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_])
def test_triangle_zero_matches_the_cpu_kernel(cp, dtype):
    from ember.tensor.kernels import cpu

    x = (np.arange(2 * 5 * 7).reshape(2, 5, 7) % 11).astype(dtype)
    for k, upper in ((0, False), (2, True), (-3, False), (9, True)):
        want, got = x.copy(), cp.asarray(x)
        cpu.triangle_zero(want, k, upper)
        K.triangle_zero(got, k, upper)
        np.testing.assert_array_equal(cp.asnumpy(got), want)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_outer_matches_the_cpu_kernel(cp, dtype):
    from ember.tensor.kernels import cpu

    a = np.linspace(-3, 3, 37).astype(dtype)
    b = np.cos(np.arange(11)).astype(dtype)
    got = K.outer(cp.asarray(a), cp.asarray(b))
    assert got.dtype == dtype and got.shape == (37, 11)
    np.testing.assert_array_equal(cp.asnumpy(got), cpu.outer(a, b))
    with pytest.raises(TypeError, match="outer: no kernel"):
        K.outer(cp.ones(3, np.int64), cp.ones(3, np.int64))


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sign_hypot_copysign_angle_match_the_cpu_kernels(cp, dtype):
    from ember.tensor.kernels import cpu

    x = np.array([np.nan, 0.0, -0.0, np.inf, -np.inf, 3.0, -4.0], dtype)
    y = x[::-1].copy()
    np.testing.assert_array_equal(cp.asnumpy(K.sign(cp.asarray(x))), cpu.sign(x))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(cp.asnumpy(K.frac(cp.asarray(x))), cpu.frac(x))
    np.testing.assert_array_equal(cp.asnumpy(K.make_complex(cp.asarray(x), cp.asarray(y))),
                                  cpu.make_complex(x, y))
    np.testing.assert_allclose(cp.asnumpy(K.round_decimals(cp.asarray(x) * 1.2345, 2)),
                               cpu.round_decimals(x * dtype(1.2345), 2),
                               rtol=4 * np.finfo(dtype).eps)
    got = K.hypot(cp.asarray(x), cp.asarray(y))
    np.testing.assert_allclose(cp.asnumpy(got), cpu.hypot(x, y), rtol=np.finfo(dtype).eps)
    with pytest.raises(TypeError, match="sign: no kernel"):
        K.sign(cp.ones(3, np.int64))
    np.testing.assert_array_equal(cp.asnumpy(K.copysign(cp.asarray(x), cp.asarray(y))),
                                  cpu.copysign(x, y))
    np.testing.assert_array_equal(cp.asnumpy(K.angle(cp.asarray(x))), cpu.angle(x))


@pytest.mark.cuda
@pytest.mark.parametrize("is_result", [False, True])
def test_elu_backward_matches_the_cpu_kernel(cp, is_result):
    from ember.tensor.kernels import cpu

    v = np.linspace(-5, 5, 101)
    g = np.sin(v)
    got = K.elu_backward(cp.asarray(g), 1.3, 0.9, 0.6, is_result, cp.asarray(v))
    np.testing.assert_allclose(cp.asnumpy(got), cpu.elu_backward(g, 1.3, 0.9, 0.6, is_result, v),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_threshold_backward_matches_the_cpu_kernel(cp, dtype):
    from ember.tensor.kernels import cpu

    y = np.asarray([[np.nan, -1.0, 0.0, 0.25, 2.0, -np.inf, np.inf]], dtype=dtype)
    g = np.asarray([[5.0, np.inf, 7.0, -3.0, np.nan, 1.0, 2.0]] * 3, dtype=dtype)
    got = K.threshold_backward(cp.asarray(g), cp.asarray(y), 0.25)
    assert got.dtype == dtype and got.shape == (3, 7)
    np.testing.assert_array_equal(cp.asnumpy(got), cpu.threshold_backward(g, y, 0.25))


@pytest.mark.cuda
@pytest.mark.parametrize("weighted", [True, False])
def test_layer_norm_backward_matches_the_cpu_kernel(cp, weighted):
    from ember.tensor.kernels import cpu

    rng = np.random.default_rng(4)
    x = rng.standard_normal((7, 33)).astype(np.float32)
    go = rng.standard_normal((7, 33)).astype(np.float32)
    w = rng.standard_normal(33).astype(np.float32) if weighted else None
    _, mean, rstd = cpu.layer_norm_forward(x, w, None, 1e-5)
    want = cpu.layer_norm_backward(go, x, mean, rstd, w)
    got = K.layer_norm_backward(cp.asarray(go), cp.asarray(x), cp.asarray(mean),
                                cp.asarray(rstd), None if w is None else cp.asarray(w))
    for g, e in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(cp.asnumpy(g), e, rtol=1e-5, atol=1e-5)


@pytest.mark.cuda
@pytest.mark.parametrize("kind", ["chebyshev_polynomial_t", "chebyshev_polynomial_u",
                                  "chebyshev_polynomial_v", "chebyshev_polynomial_w",
                                  "shifted_chebyshev_polynomial_u", "hermite_polynomial_h",
                                  "hermite_polynomial_he", "laguerre_polynomial_l",
                                  "legendre_polynomial_p"])
def test_orthogonal_poly_matches_the_cpu_kernel(cp, kind):
    from ember.tensor.kernels import cpu

    rng = np.random.default_rng(3)
    x = rng.uniform(-1.5, 1.5, (4, 1, 5))
    n = np.arange(-1, 12).reshape(1, 13, 1)
    got = K.orthogonal_poly(kind, cp.asarray(x), cp.asarray(n))
    assert got.shape == (4, 13, 5) and got.dtype == np.float64
    np.testing.assert_allclose(cp.asnumpy(got), cpu.orthogonal_poly(kind, x, n), rtol=1e-12,
                               atol=1e-12)


def _tol(dt):
    return {"rtol": 1e-5, "atol": 1e-5} if dt == np.float32 else {"rtol": 1e-10, "atol": 1e-12}


def _close(actual, expected, dt, **kw):
    tol = {**_tol(dt), **kw}
    np.testing.assert_allclose(_cupy.cupy.asnumpy(actual), expected, **tol)


def _num_grad(f, x, eps=1e-6):
    """Central differences of the scalar f at x (float64)."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        xp, xm = x.copy(), x.copy()
        xp.flat[i] += eps
        xm.flat[i] -= eps
        g.flat[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


def _rng():
    return np.random.default_rng(1234)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
def test_cuda_index_add(cp, dt):
    r = _rng()
    out = r.standard_normal((3, 5, 4)).astype(dt)
    idx = r.integers(0, 5, size=40)
    src = r.standard_normal((3, 40, 4)).astype(dt)
    base = np.ascontiguousarray(out.transpose(2, 1, 0))  # before out is updated
    expected = out.astype(np.float64)
    np.add.at(expected, (slice(None), idx), 0.5 * src.astype(np.float64))
    d_out = cp.asarray(out)
    assert K.index_add(d_out, cp.asarray(idx), cp.asarray(src), alpha=0.5) is None
    _close(d_out, expected, dt)
    # in place through a non-contiguous view
    base = cp.asarray(base)
    view = base.transpose(2, 1, 0)
    K.index_add(view, cp.asarray(idx.astype(np.int32)), cp.asarray(src), alpha=0.5)
    _close(base.transpose(2, 1, 0), expected, dt)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("padding_idx, scale", [(-1, False), (2, False), (-1, True), (0, True)])
def test_cuda_embedding_backward(cp, dt, padding_idx, scale):
    r = _rng()
    idx = r.integers(0, 6, size=28)
    grad = r.standard_normal((28, 5)).astype(dt)
    counts = np.bincount(idx.ravel(), minlength=6)
    expected = np.zeros((6, 5))
    for k, row in enumerate(idx.ravel()):
        if row != padding_idx:
            expected[row] += grad[k] / (counts[row] if scale else 1)
    got = K.embedding_backward(cp.asarray(grad), cp.asarray(idx), 6, padding_idx, scale)
    assert got.shape == (6, 5) and got.dtype == dt
    _close(got, expected, dt)


def _out_size(n, k, s, p, d):
    return tuple((n[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(3))


def _ref_max_pool(x, k, s, p, d, o):
    B = x.shape[0]
    out = np.empty((B, *o), x.dtype)
    ind = np.empty((B, *o), np.int64)
    D, H, W = x.shape[1:]
    for b, od, oh, ow in np.ndindex(B, *o):
        best, best_i = -np.inf, -1
        for a, c, e in np.ndindex(*k):
            i0, i1, i2 = (od * s[0] - p[0] + a * d[0], oh * s[1] - p[1] + c * d[1],
                          ow * s[2] - p[2] + e * d[2])
            if 0 <= i0 < D and 0 <= i1 < H and 0 <= i2 < W:
                v = x[b, i0, i1, i2]
                if best_i < 0 or v > best or np.isnan(v):
                    best, best_i = v, (i0 * H + i1) * W + i2
        out[b, od, oh, ow], ind[b, od, oh, ow] = best, best_i
    return out, ind


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("k, s, p, d", [
    ((1, 2, 2), (1, 2, 2), (0, 0, 0), (1, 1, 1)),
    ((2, 3, 3), (1, 2, 1), (1, 1, 1), (1, 1, 2)),
    ((1, 1, 3), (1, 1, 2), (0, 0, 1), (1, 1, 1)),
])
def test_cuda_max_pool(cp, dt, k, s, p, d):
    r = _rng()
    x = r.standard_normal((6, 3, 7, 8)).astype(dt)
    x[0, 1, 2, 3] = np.nan
    x[1, 0, 0, 0] = -np.inf
    o = _out_size(x.shape[1:], k, s, p, d)
    exp_out, exp_ind = _ref_max_pool(x, k, s, p, d, o)
    out, ind = K.max_pool_forward(cp.asarray(x), k, s, p, d, o)
    assert ind.dtype == np.int64
    _close(out, exp_out, dt)
    np.testing.assert_array_equal(cp.asnumpy(ind), exp_ind)
    g = r.standard_normal(exp_out.shape).astype(dt)
    exp_grad = np.zeros((6, int(np.prod(x.shape[1:]))))
    for b in range(6):
        np.add.at(exp_grad[b], exp_ind[b].ravel(), g[b].ravel().astype(np.float64))
    got = K.max_pool_backward(cp.asarray(g), ind, x.shape[1:])
    _close(got, exp_grad.reshape(x.shape), dt)


def _ref_im2col_pairs(shape, k, s, p, d, o):
    """(cols flat index, x flat index) for every in-bounds entry of im2col."""
    N, C, D, H, W = shape
    K3, L = k[0] * k[1] * k[2], o[0] * o[1] * o[2]
    pairs = []
    for n, c, a, b, e, od, oh, ow in np.ndindex(N, C, *k, *o):
        i0, i1, i2 = (od * s[0] - p[0] + a * d[0], oh * s[1] - p[1] + b * d[1],
                      ow * s[2] - p[2] + e * d[2])
        if 0 <= i0 < D and 0 <= i1 < H and 0 <= i2 < W:
            row = c * K3 + (a * k[1] + b) * k[2] + e
            col = (od * o[1] + oh) * o[2] + ow
            pairs.append((((n * C * K3) + row) * L + col,
                          (((n * C + c) * D + i0) * H + i1) * W + i2))
    return np.array(pairs).T


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("shape, k, s, p, d", [
    ((2, 3, 1, 6, 7), (1, 3, 3), (1, 1, 1), (0, 1, 1), (1, 1, 1)),
    ((1, 2, 4, 5, 6), (2, 2, 3), (2, 1, 2), (1, 0, 1), (1, 2, 1)),
    ((2, 2, 1, 1, 9), (1, 1, 4), (1, 1, 3), (0, 0, 2), (1, 1, 2)),
])
def test_cuda_im2col_col2im(cp, dt, shape, k, s, p, d):
    r = _rng()
    o = _out_size(shape[2:], k, s, p, d)
    x = r.standard_normal(shape).astype(dt)
    cols_shape = (shape[0], shape[1] * int(np.prod(k)), int(np.prod(o)))
    ci, xi = _ref_im2col_pairs(shape, k, s, p, d, o)
    exp_cols = np.zeros(int(np.prod(cols_shape)))
    exp_cols[ci] = x.ravel()[xi]
    cols = K.im2col(cp.asarray(x), k, s, p, d, o)
    _close(cols, exp_cols.reshape(cols_shape), dt)
    c = r.standard_normal(cols_shape).astype(dt)
    exp_x = np.zeros(x.size)
    np.add.at(exp_x, xi, c.ravel()[ci].astype(np.float64))
    got = K.col2im(cp.asarray(c), shape[1], shape[2:], k, s, p, d, o)
    _close(got, exp_x.reshape(shape), dt)


def _ref_log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("cols", [1, 7, 256, 1000])
def test_cuda_softmax(cp, dt, cols):
    r = _rng()
    x = (r.standard_normal((5, cols)) * 3).astype(dt)
    x[1] += 1000  # stability
    x[2, 0] = -np.inf
    if cols == 1:
        x[2, 0] = 0.5
    x64 = x.astype(np.float64)
    logp = _ref_log_softmax(x64)
    _close(K.softmax_forward(cp.asarray(x)), np.exp(logp), dt)
    _close(K.log_softmax_forward(cp.asarray(x.T.copy().T)), logp, dt, rtol=1e-4)
    g = r.standard_normal(x.shape).astype(dt)
    y = np.exp(logp).astype(dt)
    y64 = y.astype(np.float64)
    exp_sm = y64 * (g - (g * y64).sum(axis=1, keepdims=True))
    _close(K.softmax_backward(cp.asarray(y), cp.asarray(g)), exp_sm, dt)
    ly = logp.astype(dt)
    exp_lsm = g - np.exp(ly.astype(np.float64)) * g.sum(axis=1, keepdims=True)
    _close(K.log_softmax_backward(cp.asarray(ly), cp.asarray(g)), exp_lsm, dt, rtol=1e-4)


def _ref_cross_entropy(x, t, w, ignore_index, eps):
    N, C = x.shape
    m = x.max(axis=1)
    lse = m + np.log(np.exp(x - m[:, None]).sum(axis=1))
    loss = np.zeros(N)
    for i in range(N):
        if t[i] == ignore_index:
            continue
        loss[i] = (1 - eps) * w[t[i]] * (lse[i] - x[i, t[i]])
        loss[i] += eps / C * (w * (lse[i] - x[i])).sum()
    return loss, lse


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("weighted, eps", [(False, 0.0), (True, 0.0), (False, 0.2), (True, 0.1)])
def test_cuda_cross_entropy(cp, dt, weighted, eps):
    r = _rng()
    N, C = 6, 5
    x = r.standard_normal((N, C)).astype(dt)
    t = r.integers(0, C, size=N)
    t[2] = -100
    w = r.uniform(0.5, 2.0, size=C).astype(dt) if weighted else None
    w64 = np.ones(C) if w is None else w.astype(np.float64)
    exp_loss, exp_lse = _ref_cross_entropy(x.astype(np.float64), t, w64, -100, eps)
    d_w = None if w is None else cp.asarray(w)
    loss, lse = K.cross_entropy_forward(cp.asarray(x), cp.asarray(t), d_w, -100, eps)
    _close(loss, exp_loss, dt)
    _close(lse, exp_lse, dt)
    gl = r.standard_normal(N).astype(dt)
    exp_grad = _num_grad(lambda z: (gl * _ref_cross_entropy(z, t, w64, -100, eps)[0]).sum(), x)
    got = K.cross_entropy_backward(cp.asarray(x), cp.asarray(t), d_w, -100, eps,
                                   cp.asarray(gl))
    _close(got, exp_grad, dt, rtol=1e-4, atol=1e-6)


def _sig(v):
    return 1 / (1 + np.exp(-v))


def _ref_lstm(gates, c_prev):
    H = c_prev.shape[1]
    i, f, g, o = (gates[:, j * H:(j + 1) * H] for j in range(4))
    act = np.concatenate([_sig(i), _sig(f), np.tanh(g), _sig(o)], axis=1)
    c = act[:, H:2 * H] * c_prev + act[:, :H] * act[:, 2 * H:3 * H]
    return act[:, 3 * H:] * np.tanh(c), c, act, np.tanh(c)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("has_gh, has_gc", [(True, True), (True, False), (False, True)])
def test_cuda_lstm_cell(cp, dt, has_gh, has_gc):
    r = _rng()
    N, H = 3, 4
    gates = r.standard_normal((N, 4 * H)).astype(dt)
    c_prev = r.standard_normal((N, H)).astype(dt)
    ref = _ref_lstm(gates.astype(np.float64), c_prev.astype(np.float64))
    got = K.lstm_cell_forward(cp.asarray(gates), cp.asarray(c_prev))
    for a, e in zip(got, ref):
        _close(a, e, dt)
    wh = r.standard_normal((N, H)) if has_gh else np.zeros((N, H))
    wc = r.standard_normal((N, H)) if has_gc else np.zeros((N, H))

    def loss(g, c0):
        h, c, _, _ = _ref_lstm(g, c0)
        return (wh * h + wc * c).sum()

    exp_gates = _num_grad(lambda z: loss(z, c_prev.astype(np.float64)), gates)
    exp_cprev = _num_grad(lambda z: loss(gates.astype(np.float64), z), c_prev)
    _, _, act, tanh_c = got
    grad_gates, grad_c_prev = K.lstm_cell_backward(
        cp.asarray(wh.astype(dt)) if has_gh else None,
        cp.asarray(wc.astype(dt)) if has_gc else None, act, cp.asarray(c_prev), tanh_c)
    _close(grad_gates, exp_gates, dt, rtol=1e-4, atol=1e-6)
    _close(grad_c_prev, exp_cprev, dt, rtol=1e-4, atol=1e-6)


def _ref_gru(gi, gh, h_prev):
    H = h_prev.shape[1]
    r = _sig(gi[:, :H] + gh[:, :H])
    z = _sig(gi[:, H:2 * H] + gh[:, H:2 * H])
    n = np.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
    return (1 - z) * n + z * h_prev, r, z, n


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
def test_cuda_gru_cell(cp, dt):
    r = _rng()
    N, H = 3, 4
    gi, gh = (r.standard_normal((N, 3 * H)).astype(dt) for _ in range(2))
    h_prev = r.standard_normal((N, H)).astype(dt)
    f64 = [a.astype(np.float64) for a in (gi, gh, h_prev)]
    ref = _ref_gru(*f64)
    got = K.gru_cell_forward(cp.asarray(gi), cp.asarray(gh), cp.asarray(h_prev))
    for a, e in zip(got, ref):
        _close(a, e, dt)
    w = r.standard_normal((N, H))

    def loss(i, z):
        args = list(f64)
        args[i] = z
        return (w * _ref_gru(*args)[0]).sum()

    exp = [_num_grad(lambda z, i=i: loss(i, z), a) for i, a in enumerate((gi, gh, h_prev))]
    _, rr, zz, nn = got
    grads = K.gru_cell_backward(cp.asarray(w.astype(dt)), rr, zz, nn,
                                cp.asarray(np.ascontiguousarray(gh[:, 2 * H:])),
                                cp.asarray(h_prev))
    for a, e in zip(grads, exp):
        _close(a, e, dt, rtol=1e-4, atol=1e-6)


def _ref_adam(p, g, m, v, vmax, *, lr, beta1, beta2, eps, weight_decay, step, amsgrad, maximize,
              decoupled_weight_decay):
    g = -g if maximize else g
    if weight_decay:
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    m = m + (1 - beta1) * (g - m)
    v = v * beta2 + (1 - beta2) * g * g
    bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
    if amsgrad:
        vmax = np.maximum(vmax, v)
    denom = np.sqrt(vmax if amsgrad else v) / math.sqrt(bc2) + eps
    return p - (lr / bc1) * m / denom, m, v, vmax


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("amsgrad, maximize, decoupled, wd", [
    (False, False, False, 0.0), (False, False, False, 0.1), (True, False, False, 0.1),
    (False, True, True, 0.1), (True, True, True, 0.05),
])
def test_cuda_adam_step(cp, dt, amsgrad, maximize, decoupled, wd):
    r = _rng()
    shapes = [(7, 9), (0,), (5,)]
    hyper = dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=wd, amsgrad=amsgrad,
                 maximize=maximize, decoupled_weight_decay=decoupled)
    states, devs = [], []
    for i, shape in enumerate(shapes):
        p = r.standard_normal(shape)
        states.append([p, np.zeros(shape), np.zeros(shape), np.zeros(shape)])
        if i == 0:  # param non-contiguous
            first = cp.asarray(np.ascontiguousarray(p.astype(dt).T)).T
        else:
            first = cp.asarray(p.astype(dt))
        devs.append([first] + [cp.zeros(shape, dtype=dt) for _ in range(3)])
    for step in range(1, 5):
        gs = [r.standard_normal(shape) for shape in shapes]
        steps = [step + i for i in range(len(shapes))]  # each parameter its own step
        for i, g in enumerate(gs):
            state = states[i]
            states[i] = list(_ref_adam(*state[:1], g, *state[1:], step=steps[i], **hyper))
        columns = [[d[k] for d in devs] for k in range(4)]
        K.adam_step(columns[0], [cp.asarray(g.astype(dt)) for g in gs], columns[1],
                    columns[2], columns[3] if amsgrad else None, steps=steps, **hyper)
    for d, state in zip(devs, states):
        for a, e in zip(d, state):
            if a is d[3] and not amsgrad:
                continue
            _close(a, e, dt, rtol=1e-4 if dt == np.float32 else 1e-9)


@pytest.mark.cuda
@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("momentum, dampening, nesterov, wd, maximize", [
    (0.0, 0.0, False, 0.0, False), (0.0, 0.0, False, 0.01, True), (0.9, 0.0, False, 0.0, False),
    (0.9, 0.1, False, 0.01, False), (0.9, 0.0, True, 0.01, True),
])
def test_cuda_sgd_step(cp, dt, momentum, dampening, nesterov, wd, maximize):
    r = _rng()
    sizes = [11, 0, 4]
    ps = [r.standard_normal(n) for n in sizes]
    bufs = [None] * len(sizes)
    d_ps = [cp.asarray(p.astype(dt)) for p in ps]
    d_bufs = [cp.zeros(n, dtype=dt) for n in sizes] if momentum else None
    for step in range(3):
        gs = [r.standard_normal(n) for n in sizes]
        first = [step == 0 or (step == 1 and i == 2) for i in range(len(sizes))]  # a restart
        for i, g in enumerate(gs):
            gg = -g if maximize else g
            if wd:
                gg = gg + wd * ps[i]
            if momentum:
                bufs[i] = gg.copy() if first[i] else bufs[i] * momentum + (1 - dampening) * gg
                gg = gg + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = ps[i] - 0.1 * gg
        K.sgd_step(d_ps, [cp.asarray(g.astype(dt)) for g in gs], d_bufs, lr=0.1,
                   momentum=momentum, dampening=dampening, weight_decay=wd, nesterov=nesterov,
                   maximize=maximize, first_steps=first if momentum else None)
    for i in range(len(sizes)):
        _close(d_ps[i], ps[i], dt)
        if momentum:
            _close(d_bufs[i], bufs[i], dt)


def test_every_kernel_has_a_cuda_test():
    tested = {n for n in globals() if n.startswith("test_cuda_")}
    families = {
        "index_add": "test_cuda_index_add", "embedding_backward": "test_cuda_embedding_backward",
        "max_pool_forward": "test_cuda_max_pool", "max_pool_backward": "test_cuda_max_pool",
        "im2col": "test_cuda_im2col_col2im", "col2im": "test_cuda_im2col_col2im",
        "softmax_forward": "test_cuda_softmax", "softmax_backward": "test_cuda_softmax",
        "cross_entropy_forward": "test_cuda_cross_entropy",
        "cross_entropy_backward": "test_cuda_cross_entropy",
        "lstm_cell_forward": "test_cuda_lstm_cell", "lstm_cell_backward": "test_cuda_lstm_cell",
        "gru_cell_forward": "test_cuda_gru_cell", "gru_cell_backward": "test_cuda_gru_cell",
        "adam_step": "test_cuda_adam_step", "sgd_step": "test_cuda_sgd_step",
    }
    kernels = {n for names in K.KERNELS.values() for n in names}
    assert set(families) == kernels
    assert set(families.values()) <= tested
    assert all(inspect.isfunction(globals()[t]) for t in families.values())
