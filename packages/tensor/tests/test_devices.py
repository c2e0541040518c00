"""Devices: every op-table entry on each device of ``devices.DEVICES``, and device semantics.

(a) For every entry x dtype of ``op_table.OP_TABLE`` and each layout it declares, the op runs
    on ``device`` with its inputs placed there (creation entries get ``device=``): its outputs
    are on ``device`` (the entry's ``host_outputs`` on the CPU, as PyTorch keeps them), have
    the expected dtype, match the NumPy reference, leave the inputs unchanged, and, off the
    CPU, equal the CPU result (values and dtypes; vectors defined up to a sign or phase, the
    entry's ``gauge``, after ``fix_gauge``).
(b) Device semantics: ``to`` / ``cuda`` / ``cpu``, ``device=`` on creation ops, mixing devices
    in one op, ``ember.tensor.cuda``, ``save`` / ``load`` with ``map_location``, DLPack with
    CuPy. Without a GPU the no-GPU error paths are checked instead (``is_available()`` is False
    and asking for ``"cuda"`` raises a RuntimeError saying how to install CuPy).

The ``cuda`` cases skip here after a probe allocation, with the reason; ``EMBER_REQUIRE_GPU=1``
turns those skips into failures.
"""
from __future__ import annotations

import importlib.util
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor._tensor import Tensor
from ember.tensor.testing import op_table

_HERE = Path(__file__).resolve().parent


def _load(name: str, filename: str):
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _HERE / filename)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


T = op_table
DV = _load("ember_test_devices", "devices.py")
DEVICES, CUDA_ONLY, require_device, host = DV.DEVICES, DV.CUDA_ONLY, DV.require_device, DV.host

CASES = [pytest.param(e, d, id=f"{e.name}-{d}") for e in T.OP_TABLE for d in e.dtypes]


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _dev_type(device: str) -> str:
    return str(device).split(":")[0]


# --------------------------------------------------------------------------- placing samples
def _noncontig_on(a: np.ndarray, device: str) -> Tensor:
    """``op_table.noncontig`` with the buffer moved to ``device`` before the views are taken,
    so the tensor is a strided view *on the device*."""
    if a.ndim == 0:
        return et.tensor(a.copy(), device=device)
    if a.ndim >= 2:
        swapped = a.swapaxes(-1, -2)
        buf = np.zeros(swapped.shape[:-1] + (swapped.shape[-1] * 2,), dtype=a.dtype)
        buf[..., ::2] = swapped
        return et.from_numpy(buf).to(device)[..., ::2].transpose(-1, -2)
    buf = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,), dtype=a.dtype)
    buf[..., ::2] = a
    return et.from_numpy(buf).to(device)[..., ::2]


def _place(a, device: str, contiguous: bool):
    if isinstance(a, (np.ndarray, np.generic)):
        a = np.asarray(a)
        t = et.tensor(a.copy(), device=device) if contiguous else _noncontig_on(a, device)
        assert _dev_type(t.device) == _dev_type(device), f"placing on {device} gave {t.device}"
        return t
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_place(x, device, contiguous) for x in a)
    return a


def _has_array(sample) -> bool:
    def arr(a):
        if isinstance(a, (np.ndarray, np.generic)):
            return True
        return isinstance(a, (list, tuple)) and any(arr(x) for x in a)
    return any(arr(a) for a in sample.args) or any(arr(v) for v in sample.kwargs.values())


def _run(entry, sample, device: str, contiguous: bool):
    """(args, outputs) of ``entry`` on ``sample`` with every array placed on ``device``;
    creation entries (no array input) get ``device=`` instead."""
    args = tuple(_place(a, device, contiguous) for a in sample.args)
    kwargs = {k: _place(v, device, contiguous) for k, v in sample.kwargs.items()}
    if not _has_array(sample):
        kwargs["device"] = device
    return args, entry.fn(*args, **kwargs)


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _close(got: np.ndarray, ref: np.ndarray, dtype: str, entry, ctx: str) -> None:
    ref = np.asarray(ref)
    if ref.dtype.kind in "biu" and got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, ref, err_msg=ctx)
        return
    atol, rtol = T.tolerance(dtype)
    atol, rtol = max(atol, entry.atol or 0.0), max(rtol, entry.rtol or 0.0)
    np.testing.assert_allclose(got.astype(np.complex128), ref.astype(np.complex128), atol=atol,
                               rtol=rtol, equal_nan=True, err_msg=ctx)


# --------------------------------------------------------------------------- (a) op table
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("entry,dtype", CASES)
def test_op_table_forward_on_device(entry, dtype, device):
    require_device(device)
    for layout in entry.layouts:
        contiguous = layout == "contig"
        for sample in entry.samples(dtype, _rng(entry.name, dtype, "devices")):
            ctx = f"{entry.name}[{dtype},{layout},{device}] {sample!r}"
            args, out = _run(entry, sample, device, contiguous)
            outs = _as_list(out)
            refs = _as_list(entry.ref(*sample.args, **sample.kwargs))
            exp = entry.expected_dtype(sample, dtype)
            exps = list(exp) if isinstance(exp, tuple) else [exp] * len(refs)
            assert len(outs) == len(refs), f"{ctx}: {len(outs)} outputs, expected {len(refs)}"
            for k, (o, r, e) in enumerate(zip(outs, refs, exps)):
                assert isinstance(o, Tensor), f"{ctx} output {k}: {type(o).__name__}"
                on = "cpu" if k in entry.host_outputs else device
                assert _dev_type(o.device) == _dev_type(on), \
                    f"{ctx} output {k} is on {o.device}, expected {on}"
                assert o.dtype.name == e, f"{ctx} output {k}: dtype {o.dtype.name} != {e}"
                assert tuple(o.shape) == np.shape(r), f"{ctx} output {k}: shape"
                g = entry.gauge.get(k)
                _close(T.fix_gauge(host(o), g), T.fix_gauge(r, g), e, entry,
                       f"{ctx} output {k} vs NumPy")
            # out-of-place ops leave their (device) inputs alone
            if not entry.view:
                for a, s in zip(args, sample.args):
                    if isinstance(a, Tensor):
                        np.testing.assert_array_equal(host(a), s,
                                                      err_msg=f"{ctx}: input modified")
            if _dev_type(device) == "cpu":
                continue
            # off the CPU: the same op on the CPU gives the same dtypes and values
            _, cpu_out = _run(entry, sample, "cpu", contiguous)
            for k, (o, c) in enumerate(zip(outs, _as_list(cpu_out))):
                assert o.dtype == c.dtype, f"{ctx} output {k}: {o.dtype} on {device}, " \
                                           f"{c.dtype} on cpu"
                assert tuple(o.shape) == tuple(c.shape), f"{ctx} output {k}: shape vs cpu"
                g = entry.gauge.get(k)
                _close(T.fix_gauge(host(o), g), T.fix_gauge(host(c), g), o.dtype.name, entry,
                       f"{ctx} output {k} vs cpu")


# --------------------------------------------------------------------------- (b) semantics
def test_is_available_agrees_with_a_probe_allocation():
    usable = DV.probe("cuda") is None
    assert et.cuda.is_available() is usable
    count = et.cuda.device_count()
    assert isinstance(count, int)
    assert (count > 0) is usable


def test_without_gpu_cuda_requests_raise_the_install_hint():
    if et.cuda.is_available():
        pytest.skip("a CUDA device is available: the no-GPU error path does not apply here")
    assert et.cuda.is_available() is False
    assert et.cuda.device_count() == 0
    x = et.arange(6.0).reshape(2, 3)
    requests = {
        "zeros": lambda: et.zeros(2, device="cuda"),
        "ones cuda:0": lambda: et.ones(2, 3, device="cuda:0"),
        "empty": lambda: et.empty(3, device=et.device("cuda", 0)),
        "full": lambda: et.full((2,), 1.5, device="cuda"),
        "arange": lambda: et.arange(5, device="cuda"),
        "tensor": lambda: et.tensor([1.0, 2.0], device="cuda"),
        "zeros_like": lambda: et.zeros_like(x, device="cuda"),
        "randn": lambda: et.randn(3, device="cuda"),
        "Tensor.cuda": lambda: x.cuda(),
        "Tensor.to(str)": lambda: x.to("cuda"),
        "Tensor.to(device=)": lambda: x.to(device=et.device("cuda:0")),
        "Tensor.to(device, dtype)": lambda: x.to("cuda", et.float64),
        "cuda.current_device": lambda: et.cuda.current_device(),
        "cuda.synchronize": lambda: et.cuda.synchronize(),
        "cuda.memory_allocated": lambda: et.cuda.memory_allocated(),
    }
    for what, call in requests.items():
        with pytest.raises(RuntimeError) as info:
            call()
        msg = str(info.value)
        assert "CUDA is not available" in msg, f"{what}: {msg}"
        assert "ember-tensor[cuda12]" in msg and "[cuda13]" in msg, f"{what}: {msg}"
    # PyTorch's no-GPU no-ops stay no-ops
    et.cuda.manual_seed(0)
    et.cuda.empty_cache()
    # and the CPU tensor is untouched by the failed moves
    assert x.device == et.device("cpu")
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3))


def test_device_objects():
    assert str(et.device("cuda:1")) == "cuda:1"
    assert et.device("cuda", 1) == et.device("cuda:1") == "cuda:1"
    assert et.device("cuda").index is None and et.device("cuda:0").index == 0
    assert et.device("cpu") == "cpu" and et.device("cpu").type == "cpu"
    assert et.device(et.device("cuda:2")) == "cuda:2"
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        et.device("tpu")
    with pytest.raises(RuntimeError, match="Invalid device string"):
        et.device("cuda:x")
    # naming a device is not using it: no CUDA needed for any of the above
    assert et.tensor([1.0]).device == et.device("cpu")


@pytest.mark.parametrize("device", DEVICES)
def test_to_cuda_cpu_moves(device):
    require_device(device)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = et.tensor(a)
    y = x.to(device)
    assert _dev_type(y.device) == _dev_type(device)
    assert y.is_cuda is (_dev_type(device) == "cuda")
    assert y.dtype == et.float32 and tuple(y.shape) == (3, 4)
    np.testing.assert_array_equal(host(y), a)
    # no copy when nothing changes; copies when asked
    assert y.to(device) is y
    assert y.to(y.device) is y
    z = y.to(device, copy=True)
    assert z is not y and _dev_type(z.device) == _dev_type(device)
    np.testing.assert_array_equal(host(z), a)
    # device and dtype at once, and "like another tensor"
    w = x.to(device, et.float64)
    assert _dev_type(w.device) == _dev_type(device) and w.dtype == et.float64
    v = et.tensor([1, 2], dtype=et.int32).to(y)
    assert v.device == y.device and v.dtype == et.float32
    # back to the host
    b = y.cpu()
    assert b.device == et.device("cpu")
    np.testing.assert_array_equal(b.numpy(), a)
    assert x.cpu() is x
    if _dev_type(device) == "cuda":
        assert y is not x
        # an actual copy: writing the device tensor leaves the host tensor alone
        y.add_(1.0)
        np.testing.assert_array_equal(x.numpy(), a)
        np.testing.assert_array_equal(host(y), a + 1)
        c = x.cuda()
        assert c.is_cuda and c.device == et.device("cuda", 0)
        assert c.cuda() is c
        assert x.to("cuda:0").device == et.device("cuda:0")
        with pytest.raises(TypeError, match="cpu"):
            c.numpy()
        # views keep their strides' meaning across the move
        t = x.t().to(device)
        assert tuple(t.shape) == (4, 3)
        np.testing.assert_array_equal(host(t), a.T)


@pytest.mark.parametrize("device", DEVICES)
def test_device_keyword_on_creation_ops(device):
    require_device(device)
    dtype_f = et.float32
    made = {
        "empty": (et.empty(2, 3, device=device), (2, 3), dtype_f, None),
        "zeros": (et.zeros(2, 3, device=device), (2, 3), dtype_f, np.zeros((2, 3))),
        "ones": (et.ones((2,), dtype=et.int64, device=device), (2,), et.int64, np.ones(2)),
        "full": (et.full((2, 2), 2.5, device=device), (2, 2), dtype_f, np.full((2, 2), 2.5)),
        "arange": (et.arange(1, 7, 2, device=device), (3,), et.int64, np.arange(1, 7, 2)),
        "linspace": (et.linspace(0, 1, 5, device=device), (5,), dtype_f, np.linspace(0, 1, 5)),
        "logspace": (et.logspace(0, 2, 3, device=device), (3,), dtype_f, np.logspace(0, 2, 3)),
        "eye": (et.eye(2, 3, device=device), (2, 3), dtype_f, np.eye(2, 3)),
        "tensor": (et.tensor([[1, 2]], device=device), (1, 2), et.int64, np.array([[1, 2]])),
        "as_tensor": (et.as_tensor(np.array([1.5, 2.0]), device=device), (2,), et.float64,
                      np.array([1.5, 2.0])),
        "scalar_tensor": (et.scalar_tensor(3.0, device=device), (), dtype_f, np.array(3.0)),
        "rand": (et.rand(4, device=device), (4,), dtype_f, None),
        "randn": (et.randn(2, 2, dtype=et.float64, device=device), (2, 2), et.float64, None),
        "randint": (et.randint(0, 5, (6,), device=device), (6,), et.int64, None),
        "randperm": (et.randperm(5, device=device), (5,), et.int64, None),
    }
    base = et.ones(2, 2, device=device)
    made["zeros_like"] = (et.zeros_like(base), (2, 2), dtype_f, np.zeros((2, 2)))
    made["full_like"] = (et.full_like(base, 7), (2, 2), dtype_f, np.full((2, 2), 7.0))
    made["rand_like"] = (et.rand_like(base), (2, 2), dtype_f, None)
    made["empty_like cpu"] = (et.empty_like(base, device="cpu"), (2, 2), dtype_f, None)
    for name, (t, shape, dt, ref) in made.items():
        want = "cpu" if name.endswith(" cpu") else _dev_type(device)
        assert _dev_type(t.device) == want, f"{name}: on {t.device}, expected {want}"
        assert tuple(t.shape) == shape, f"{name}: shape {tuple(t.shape)}"
        assert t.dtype == dt, f"{name}: dtype {t.dtype}"
        if ref is not None:
            np.testing.assert_allclose(host(t), ref, rtol=1e-6, err_msg=name)
    r = host(made["rand"][0])
    assert ((r >= 0) & (r < 1)).all()
    k = host(made["randint"][0])
    assert ((k >= 0) & (k < 5)).all()
    assert sorted(host(made["randperm"][0]).tolist()) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("device", CUDA_ONLY)
def test_mixing_devices_raises_naming_both(device):
    require_device(device)
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((3, 3)).astype(np.float32)
    c = et.tensor(a_np)
    g = et.tensor(a_np, device=device)
    idx = et.tensor([0, 2])
    mixed = {
        "add": lambda: c + g,
        "radd": lambda: g + c,
        "mul": lambda: et.mul(g, c),
        "maximum": lambda: et.maximum(c, g),
        "eq": lambda: c == g,
        "add_": lambda: g.add_(c),
        "where": lambda: et.where(g > 0, c, g),
        "matmul": lambda: c @ g,
        "einsum": lambda: et.einsum("ij,jk->ik", g, c),
        "cat": lambda: et.cat([c, g]),
        "stack": lambda: et.stack([g, c]),
        "index_select": lambda: et.index_select(g, 0, idx),
        "gather": lambda: et.gather(g, 1, et.zeros(3, 1, dtype=et.int64)),
        "masked_fill": lambda: g.masked_fill(c > 0, 0.0),
    }
    for name, call in mixed.items():
        with pytest.raises(RuntimeError) as info:
            call()
        msg = str(info.value)
        assert "Expected all tensors to be on the same device" in msg, f"{name}: {msg}"
        assert "cpu" in msg and "cuda:0" in msg, f"{name}: {msg}"
    # the failed in-place op left its target alone
    np.testing.assert_array_equal(host(g), a_np)


@pytest.mark.parametrize("device", CUDA_ONLY)
def test_cuda_module_helpers(device):
    require_device(device)
    assert et.cuda.is_available() is True
    assert et.cuda.device_count() >= 1
    assert et.cuda.current_device() == 0
    before = et.cuda.memory_allocated()
    x = et.ones(1 << 20, device=device)  # 4 MiB
    et.cuda.synchronize()
    assert et.cuda.memory_allocated() >= before + 4 * (1 << 20)
    assert et.cuda.max_memory_allocated() >= et.cuda.memory_allocated()
    with et.cuda.device(0):
        assert et.cuda.current_device() == 0
    et.cuda.manual_seed(123)
    a = host(et.randn(5, device=device))
    et.cuda.manual_seed(123)
    b = host(et.randn(5, device=device))
    np.testing.assert_array_equal(a, b)
    del x
    et.cuda.empty_cache()


# --------------------------------------------------------------------------- save / load
@pytest.mark.parametrize("device", DEVICES)
def test_save_load_map_location(device, tmp_path):
    require_device(device)
    rng = np.random.default_rng(1)
    w_np = rng.standard_normal((3, 4)).astype(np.float32)
    i_np = np.arange(5, dtype=np.int64)
    state = {"w": et.tensor(w_np, device=device), "i": et.tensor(i_np, device=device),
             "wt": et.tensor(w_np, device=device).t(), "step": 3, "host": et.ones(2)}
    path = tmp_path / "ckpt.safetensors"
    et.save(state, path)
    dev = et.device(device if ":" in device or device == "cpu" else f"{device}:0")
    for loc, want in [(None, dev), ("cpu", et.device("cpu")), (device, dev),
                      (et.device(device), dev), ({str(dev): "cpu"}, et.device("cpu"))]:
        out = et.load(path, map_location=loc)
        assert out["step"] == 3
        for key, ref in [("w", w_np), ("i", i_np), ("wt", w_np.T)]:
            t = out[key]
            assert t.device == want, f"map_location={loc!r}: {key} on {t.device}"
            assert t.dtype == state[key].dtype
            np.testing.assert_array_equal(host(t), ref)
        # a CPU tensor stays on the CPU unless the map sends every tensor elsewhere
        expect_host = et.device("cpu") if loc is None or isinstance(loc, dict) else want
        assert out["host"].device == expect_host, f"map_location={loc!r}: host tensor"
    if _dev_type(device) == "cuda":
        # a CPU checkpoint mapped onto the GPU
        p2 = tmp_path / "cpu.safetensors"
        et.save({"w": et.tensor(w_np)}, p2)
        out = et.load(p2, map_location="cuda")
        assert out["w"].is_cuda
        np.testing.assert_array_equal(host(out["w"]), w_np)


def _as_if_saved_on_cuda(src: Path, dst: Path) -> None:
    """Rewrite an ember checkpoint's metadata so its tensors claim device cuda:0 (what a
    GPU machine writes), leaving the tensor bytes as they are."""
    raw = src.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = json.loads(header["__metadata__"]["ember"])

    def walk(node):
        if isinstance(node, dict):
            if node.get("t") == "tensor":
                node["device"] = "cuda:0"
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(meta)
    text = json.dumps(meta)
    header["__metadata__"]["ember"] = text
    header["__metadata__"]["ember_crc32"] = str(zlib.crc32(text.encode("utf-8")))  # as written
    head = json.dumps(header).encode()
    head += b" " * (-len(head) % 8)
    dst.write_bytes(struct.pack("<Q", len(head)) + head + raw[8 + n:])


def test_load_cuda_checkpoint_on_either_machine(tmp_path):
    w_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    src, dst = tmp_path / "cpu.safetensors", tmp_path / "cuda.safetensors"
    et.save({"w": et.tensor(w_np), "n": 1}, src)
    _as_if_saved_on_cuda(src, dst)
    out = et.load(dst, map_location="cpu")
    assert out["w"].device == et.device("cpu") and out["n"] == 1
    np.testing.assert_array_equal(out["w"].numpy(), w_np)
    if et.cuda.is_available():
        back = et.load(dst)
        assert back["w"].device == et.device("cuda:0")
        np.testing.assert_array_equal(host(back["w"]), w_np)
    else:
        with pytest.raises(RuntimeError, match="map_location='cpu'"):
            et.load(dst)


# --------------------------------------------------------------------------- DLPack
@pytest.mark.parametrize("device", CUDA_ONLY)
def test_dlpack_with_cupy_shares_memory(device):
    require_device(device)
    cp = pytest.importorskip("cupy")
    # CuPy -> ember: same device memory
    c = cp.arange(6, dtype=cp.float32).reshape(2, 3)
    t = et.from_dlpack(c)
    assert t.is_cuda and tuple(t.shape) == (2, 3) and t.dtype == et.float32
    assert t._data.data.ptr == c.data.ptr
    c[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    # ember -> CuPy: same device memory, writes visible both ways
    e = et.arange(4, dtype=et.float64, device=device)
    d = cp.from_dlpack(e)
    assert d.data.ptr == e._data.data.ptr
    d[1] = -1.0
    np.testing.assert_array_equal(host(e), [0.0, -1.0, 2.0, 3.0])
    assert e.__dlpack_device__()[0] == 2  # kDLCUDA
    # a strided view travels with its strides, still without a copy
    base = et.arange(12, dtype=et.float32, device=device).reshape(3, 4)
    view = base.t()
    dv = cp.from_dlpack(view)
    assert dv.data.ptr == base._data.data.ptr
    np.testing.assert_array_equal(cp.asnumpy(dv), np.arange(12, dtype=np.float32)
                                  .reshape(3, 4).T)


@pytest.mark.parametrize("device", CUDA_ONLY)
def test_default_device_applies_to_data_that_is_not_a_tensor(device):
    # PyTorch: tensor() / as_tensor() of lists and arrays go to the default device; of a
    # tensor, stay where it is
    require_device(device)
    on_cpu = et.ones(2)
    et.set_default_device(device)
    try:
        assert et.tensor([1.0, 2.0]).is_cuda and et.tensor(np.ones(3)).is_cuda
        assert et.as_tensor(np.ones(3)).is_cuda and et.zeros(2).is_cuda
        assert not et.tensor(on_cpu).is_cuda and not et.as_tensor(on_cpu).is_cuda
    finally:
        et.set_default_device(None)
    assert not et.tensor([1.0]).is_cuda


@pytest.mark.parametrize("device", CUDA_ONLY)
def test_embedding_refuses_indices_on_another_device(device):
    require_device(device)
    w = et.ones(4, 3, device=device)
    with pytest.raises(RuntimeError, match=r"embedding\(\): Expected all tensors to be on the "
                                           r"same device.*cuda:0 and cpu"):
        et.embedding(w, et.tensor([0, 1]))


@pytest.mark.parametrize("device", DEVICES)
def test_tensordot_without_contraction_takes_zero_dim_operands(device):
    # The backward of a full contraction hands tensordot a 0-d gradient with empty dims lists
    require_device(device)
    rng = _rng("tensordot0d")
    a, b = rng.standard_normal((2, 3)), rng.standard_normal(4)
    x, y, s = (et.tensor(v, device=device, dtype=et.float64) for v in (a, b, 1.5))
    for p, q, dims, want in ((s, y, ([], []), 1.5 * b), (x, s, 0, a * 1.5),
                             (s, s, ([], []), np.float64(2.25)),
                             (x, y, ([], []), np.multiply.outer(a, b))):
        got = et.tensordot(p, q, dims=dims)
        assert _dev_type(got.device) == _dev_type(device)
        np.testing.assert_allclose(host(got), want, rtol=1e-15)
