"""ember.nn layers and ember.optim optimizers on each device of ``devices.DEVICES``.

For Linear, Conv2d, LSTM, BatchNorm2d (train mode, running statistics included), Embedding
(repeated indices: scatter-add backward) and cross_entropy, in float32 and float64, from the
same initial weights and inputs: the outputs, the input gradient and every parameter gradient
on ``device``

- equal ember's own CPU result (off the CPU), and
- equal PyTorch's, on CUDA when ``torch.cuda.is_available()`` (TF32 switched off), else on
  its CPU.

SGD with momentum and Adam then train a small classifier for a few steps: the losses, the
parameters and the optimizer state (which must live on the parameters' device) follow the
same trajectory as on ember's CPU and in PyTorch. ``Module.cuda()`` / ``cpu()``, a CPU
``state_dict`` loaded into a CUDA module, and DLPack exchange with PyTorch tensors are checked
too. The ``cuda`` cases skip here after a probe allocation, with the reason;
``EMBER_REQUIRE_GPU=1`` turns those skips into failures.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import ember.nn as nn
import ember.nn.functional as F
import ember.tensor as et
from ember import optim

try:
    import torch
except ImportError:  # the ember-vs-ember comparisons still run
    torch = None

_path = Path(__file__).resolve().parents[2] / "packages" / "tensor" / "tests" / "devices.py"
if "ember_test_devices" in sys.modules:
    DV = sys.modules["ember_test_devices"]
else:
    _spec = importlib.util.spec_from_file_location("ember_test_devices", _path)
    DV = importlib.util.module_from_spec(_spec)
    sys.modules["ember_test_devices"] = DV
    _spec.loader.exec_module(DV)
DEVICES, CUDA_ONLY, require_device, host = DV.DEVICES, DV.CUDA_ONLY, DV.require_device, DV.host

DTYPES = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-10)}  # (rtol, atol)


def _is_cuda(device: str) -> bool:
    return et.device(device).type == "cuda"


@pytest.fixture(autouse=True)
def _no_tf32():
    """The PyTorch CUDA reference runs without cuDNN, whose convolutions and RNNs pick TF32
    and reduction orders of their own (the forward and backward of a float32 LSTM drift by
    up to 1% from IEEE float32 on an H200), and with IEEE float32 matrix products."""
    if torch is None:
        yield
        return
    saved = torch.backends.cudnn.enabled, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.enabled = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.enabled, torch.backends.cuda.matmul.allow_tf32 = saved


def _torch_device(device: str) -> str:
    return "cuda" if _is_cuda(device) and torch.cuda.is_available() else "cpu"


def _need_a_reference(device: str) -> None:
    if not _is_cuda(device) and torch is None:
        pytest.skip("PyTorch is not installed: the CPU case has only PyTorch to compare with")


# --------------------------------------------------------------------------- layers
def _floats(rng, shape):
    return rng.standard_normal(shape)


LAYERS = {
    # name: (make(module namespace) or None, input maker(rng), forward(lib, F, module, *inputs))
    "Linear": (lambda m: m.Linear(6, 4), lambda r: [_floats(r, (5, 6))],
               lambda lib, fn, mod, x: mod(x)),
    "Conv2d": (lambda m: m.Conv2d(3, 4, 3, stride=2, padding=1),
               lambda r: [_floats(r, (2, 3, 7, 7))], lambda lib, fn, mod, x: mod(x)),
    "LSTM": (lambda m: m.LSTM(5, 7, num_layers=2), lambda r: [_floats(r, (4, 3, 5))],
             lambda lib, fn, mod, x: (lambda o: (o[0], o[1][0], o[1][1]))(mod(x))),
    "BatchNorm2d": (lambda m: m.BatchNorm2d(3), lambda r: [_floats(r, (4, 3, 5, 5)) * 2 + 1],
                    lambda lib, fn, mod, x: mod(x)),
    "Embedding": (lambda m: m.Embedding(10, 4),
                  lambda r: [np.array([[1, 3, 3, 9, 0], [3, 1, 1, 2, 3], [9, 9, 9, 4, 4]])],
                  lambda lib, fn, mod, x: mod(x)),
    "cross_entropy": (None,
                      lambda r: [_floats(r, (6, 5)), np.array([0, 4, 4, 2, 1, 3])],
                      lambda lib, fn, mod, x, y: fn.cross_entropy(x, y)),
}


def _initial_state(name: str) -> dict[str, np.ndarray]:
    make = LAYERS[name][0]
    if make is None:
        return {}
    et.manual_seed(0)
    return {k: host(v).copy() for k, v in make(nn).state_dict().items()}


def _cast(a: np.ndarray, dtype: str) -> np.ndarray:
    return a.astype(dtype) if a.dtype.kind == "f" else a


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


def _gout(k: int, shape) -> np.ndarray:
    return np.random.default_rng(100 + k).standard_normal(shape)


def _run_ember(name: str, device: str, dtype: str) -> dict[str, np.ndarray]:
    make, inputs, forward = LAYERS[name]
    state = _initial_state(name)
    mod = None
    if make is not None:
        mod = make(nn)
        if dtype == "float64":
            mod = mod.double()
        mod.load_state_dict({k: et.tensor(_cast(v, dtype)) for k, v in state.items()})
        mod = mod.cuda() if device == "cuda" else mod.to(device)
        for k, v in mod.state_dict().items():
            assert v.device.type == et.device(device).type, f"{name}.{k} on {v.device}"
    args = []
    for a in inputs(np.random.default_rng(7)):
        if a.dtype.kind == "f":
            args.append(et.tensor(_cast(a, dtype), device=device, requires_grad=True))
        else:
            args.append(et.tensor(a, device=device))
    outs = _as_tuple(forward(et, F, mod, *args))
    loss = sum((o * et.tensor(_gout(k, tuple(o.shape)), dtype=o.dtype, device=device)).sum()
               for k, o in enumerate(outs))
    loss.backward()
    res = {f"out{k}": host(o) for k, o in enumerate(outs)}
    for k, o in enumerate(outs):
        assert o.device.type == et.device(device).type, f"{name} output {k} on {o.device}"
    for i, a in enumerate(args):
        if a.requires_grad:
            assert a.grad.device == a.device
            res[f"input{i}.grad"] = host(a.grad)
    if mod is not None:
        for k, p in mod.named_parameters():
            assert p.grad is not None and p.grad.device == p.device, f"{name}.{k}.grad"
            res[f"{k}.grad"] = host(p.grad)
        for k, b in mod.named_buffers():
            res[f"buffer {k}"] = host(b)
    return res


def _run_torch(name: str, device: str, dtype: str) -> dict[str, np.ndarray]:
    make, inputs, forward = LAYERS[name]
    tdt = getattr(torch, dtype)
    mod = None
    if make is not None:
        mod = make(torch.nn).to(tdt)
        mod.load_state_dict({k: torch.from_numpy(_cast(v, dtype).copy())
                             for k, v in _initial_state(name).items()})
        mod = mod.to(device)
    args = []
    for a in inputs(np.random.default_rng(7)):
        if a.dtype.kind == "f":
            args.append(torch.tensor(a, dtype=tdt, device=device, requires_grad=True))
        else:
            args.append(torch.tensor(a, device=device))
    outs = _as_tuple(forward(torch, torch.nn.functional, mod, *args))
    loss = sum((o * torch.tensor(_gout(k, tuple(o.shape)), dtype=o.dtype, device=device)).sum()
               for k, o in enumerate(outs))
    loss.backward()
    res = {f"out{k}": o.detach().cpu().numpy() for k, o in enumerate(outs)}
    for i, a in enumerate(args):
        if a.requires_grad:
            res[f"input{i}.grad"] = a.grad.cpu().numpy()
    if mod is not None:
        for k, p in mod.named_parameters():
            res[f"{k}.grad"] = p.grad.cpu().numpy()
        for k, b in mod.named_buffers():
            res[f"buffer {k}"] = b.detach().cpu().numpy()
    return res


def _compare(got: dict, ref: dict, dtype: str, what: str) -> None:
    assert sorted(got) == sorted(ref), f"{what}: {sorted(got)} vs {sorted(ref)}"
    rtol, atol = DTYPES[dtype]
    for k in got:
        assert got[k].shape == ref[k].shape, f"{what}: {k} shape"
        np.testing.assert_allclose(got[k].astype(np.float64), ref[k].astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=f"{what}: {k}")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_layer_on_device(name, device, dtype):
    require_device(device)
    _need_a_reference(device)
    got = _run_ember(name, device, dtype)
    if _is_cuda(device):
        _compare(got, _run_ember(name, "cpu", dtype), dtype, f"{name} {device} vs ember cpu")
    if torch is not None:
        tdev = _torch_device(device)
        _compare(got, _run_torch(name, tdev, dtype), dtype, f"{name} {device} vs torch {tdev}")


# --------------------------------------------------------------------------- optimizers
OPTIMS = {
    "SGD-momentum": ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=1e-3)),
    "SGD-nesterov": ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    "Adam": ("Adam", dict(lr=0.01, betas=(0.9, 0.99))),
    "Adam-amsgrad-wd": ("Adam", dict(lr=0.01, weight_decay=1e-2, amsgrad=True)),
}
STEPS = 5


def _classifier(lib):
    return lib.Sequential(lib.Linear(5, 8), lib.Tanh(), lib.Linear(8, 3))


def _opt_data():
    rng = np.random.default_rng(3)
    return rng.standard_normal((16, 5)), rng.integers(0, 3, 16)


def _train_ember(opt_name: str, device: str, dtype: str):
    cls, kw = OPTIMS[opt_name]
    et.manual_seed(1)
    model = _classifier(nn)
    if dtype == "float64":
        model = model.double()
    model = model.to(device)
    opt = getattr(optim, cls)(model.parameters(), **kw)
    x_np, y_np = _opt_data()
    x = et.tensor(_cast(x_np, dtype), device=device)
    y = et.tensor(y_np, device=device)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    for p in model.parameters():
        assert p.device.type == et.device(device).type
        for key, s in opt.state[p].items():
            if isinstance(s, et.Tensor) and tuple(s.shape) == tuple(p.shape):
                assert s.device == p.device, f"{opt_name} state {key!r} on {s.device}"
    return np.array(losses), {k: host(p) for k, p in model.named_parameters()}


def _train_torch(opt_name: str, device: str, dtype: str):
    cls, kw = OPTIMS[opt_name]
    et.manual_seed(1)
    init = {k: host(v) for k, v in _classifier(nn).state_dict().items()}
    tdt = getattr(torch, dtype)
    model = _classifier(torch.nn).to(tdt)
    model.load_state_dict({k: torch.from_numpy(_cast(v, dtype).copy()) for k, v in init.items()})
    model = model.to(device)
    opt = getattr(torch.optim, cls)(model.parameters(), **kw)
    x_np, y_np = _opt_data()
    x = torch.tensor(x_np, dtype=tdt, device=device)
    y = torch.tensor(y_np, device=device)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses), {k: p.detach().cpu().numpy() for k, p in model.named_parameters()}


def _compare_runs(got, ref, dtype: str, what: str) -> None:
    rtol, atol = DTYPES[dtype]
    np.testing.assert_allclose(got[0], ref[0], rtol=rtol, atol=atol, err_msg=f"{what}: losses")
    assert sorted(got[1]) == sorted(ref[1])
    for k in got[1]:
        np.testing.assert_allclose(got[1][k], ref[1][k], rtol=rtol, atol=atol,
                                   err_msg=f"{what}: {k}")


@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opt_name", sorted(OPTIMS))
def test_optimizer_steps_on_device(opt_name, device, dtype):
    require_device(device)
    _need_a_reference(device)
    got = _train_ember(opt_name, device, dtype)
    assert got[0][-1] < got[0][0], f"{opt_name}: the loss did not decrease: {got[0]}"
    if _is_cuda(device):
        _compare_runs(got, _train_ember(opt_name, "cpu", dtype), dtype,
                      f"{opt_name} {device} vs ember cpu")
    if torch is not None:
        tdev = _torch_device(device)
        _compare_runs(got, _train_torch(opt_name, tdev, dtype), dtype,
                      f"{opt_name} {device} vs torch {tdev}")


# --------------------------------------------------------------------------- modules, DLPack
@pytest.mark.parametrize("device", CUDA_ONLY)
def test_module_cuda_cpu_and_cpu_state_dict(device):
    require_device(device)
    et.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU())
    cpu_state = {k: host(v).copy() for k, v in model.state_dict().items()}
    assert model.cuda() is model
    for k, v in model.state_dict().items():
        assert v.is_cuda, f"{k} on {v.device} after Module.cuda()"
    # a CPU state_dict loads into the CUDA module and stays on the GPU
    model.load_state_dict({k: et.tensor(v) * 2 if v.dtype.kind == "f" else et.tensor(v)
                           for k, v in cpu_state.items()})
    for k, v in model.state_dict().items():
        assert v.is_cuda, f"{k} moved to {v.device} by load_state_dict"
        want = cpu_state[k] * 2 if cpu_state[k].dtype.kind == "f" else cpu_state[k]
        np.testing.assert_allclose(host(v), want, rtol=1e-6, err_msg=k)
    out = model(et.randn(1, 2, 5, 5, device=device))
    assert out.is_cuda and tuple(out.shape) == (1, 3, 3, 3)
    assert model.cpu() is model
    for k, v in model.state_dict().items():
        assert v.device == et.device("cpu"), f"{k} on {v.device} after Module.cpu()"


@pytest.mark.parametrize("device", DEVICES)
def test_dlpack_with_torch_shares_memory(device):
    require_device(device)
    if torch is None:
        pytest.skip("PyTorch is not installed")
    if _is_cuda(device) and not torch.cuda.is_available():
        pytest.skip("this PyTorch build has no CUDA: no CUDA tensors to exchange")
    tdev = _torch_device(device)

    def ptr(t) -> int:
        d = t._data
        return d.__array_interface__["data"][0] if isinstance(d, np.ndarray) else d.data.ptr

    # torch -> ember
    tt = torch.arange(6, dtype=torch.float32, device=tdev).reshape(2, 3)
    e = et.from_dlpack(tt)
    assert e.device.type == et.device(device).type and tuple(e.shape) == (2, 3)
    assert ptr(e) == tt.data_ptr()
    tt[1, 2] = 50.0
    assert e[1, 2].item() == 50.0
    # ember -> torch
    e2 = et.arange(5, dtype=et.float64, device=device)
    t2 = torch.from_dlpack(e2)
    assert t2.device.type == tdev and t2.data_ptr() == ptr(e2)
    t2[0] = -3.0
    np.testing.assert_array_equal(host(e2), [-3.0, 1.0, 2.0, 3.0, 4.0])
