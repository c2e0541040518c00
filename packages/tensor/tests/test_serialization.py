"""save / load: safetensors checkpoints with a JSON skeleton, atomic writes, clear errors."""
from __future__ import annotations

import collections
import io
import json
import math
import os
import pathlib
import pickle
import re
import zlib

import numpy as np
import pytest
from safetensors import numpy as st_numpy
from safetensors import safe_open

import ember.tensor as et
from ember.tensor import _cupy
from ember.tensor import _serialization as S

ALL_DTYPES = [et.bool, et.uint8, et.int8, et.int16, et.int32, et.int64, et.float16, et.float32,
              et.float64]


def a(x):
    return np.asarray(x._data)


def _sample(dtype, shape=(2, 3)):
    rng = np.random.default_rng(0)
    if dtype is et.bool:
        arr = rng.random(shape) > 0.5
    elif dtype.is_floating_point:
        arr = rng.standard_normal(shape).astype(dtype.np)
    else:
        info = np.iinfo(dtype.np)
        arr = rng.integers(info.min, info.max, shape, dtype=dtype.np, endpoint=True)
    return et.from_numpy(np.asarray(arr, dtype=dtype.np))


def assert_same_tensor(x, y):
    assert isinstance(y, et.Tensor)
    assert y.dtype is x.dtype and y.shape == x.shape and y.device == x.device
    np.testing.assert_array_equal(a(y), np.asarray(x._data))


# --------------------------------------------------------------------------- round trips
def test_nested_structure_round_trips(tmp_path):
    w = et.randn(3, 4)
    obj = {
        "state": {0: {"exp_avg": et.zeros(3), "step": 7}, 1: {"exp_avg": et.ones(2)}},
        "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "params": [0, 1],
                          "foreach": None, "amsgrad": False, "name": "g0"}],
        "weights": w,
        (1, "a"): "tuple key",
        2.5: "float key",
        None: "none key",
        True: "bool key",
        "floats": [math.inf, -math.inf, 1.0, 0.0, -0.0, 10**30, -(2**70)],
        "empty": {"d": {}, "l": [], "t": ()},
        "dtype": et.float16,
        "device": et.device("cpu"),
        "odict": collections.OrderedDict([("z", 1), ("a", 2)]),
    }
    path = tmp_path / "ckpt.ember"
    et.save(obj, path)
    back = et.load(path)
    assert list(back) == list(obj)  # key order and key types
    assert back["state"][0]["step"] == 7 and isinstance(back["state"][0]["step"], int)
    assert_same_tensor(obj["state"][0]["exp_avg"], back["state"][0]["exp_avg"])
    assert_same_tensor(w, back["weights"])
    assert back["param_groups"][0]["betas"] == (0.9, 0.999)
    assert isinstance(back["param_groups"][0]["betas"], tuple)
    assert back["param_groups"][0]["foreach"] is None
    assert back["param_groups"][0]["amsgrad"] is False
    assert back[(1, "a")] == "tuple key" and back[2.5] == "float key"
    assert back[None] == "none key" and back[True] == "bool key"
    fl = back["floats"]
    assert fl[:2] == [math.inf, -math.inf] and fl[5] == 10**30 and fl[6] == -(2**70)
    assert isinstance(fl[2], float) and math.copysign(1.0, fl[4]) == -1.0
    assert back["empty"] == {"d": {}, "l": [], "t": ()}
    assert back["dtype"] is et.float16 and back["device"] == et.device("cpu")
    assert type(back["odict"]) is collections.OrderedDict and list(back["odict"]) == ["z", "a"]


def test_nan_round_trips():
    buf = io.BytesIO()
    et.save([math.nan], buf)
    buf.seek(0)
    assert math.isnan(et.load(buf)[0])


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (0, 4), (5,)])
def test_every_dtype_round_trips(tmp_path, dtype, shape):
    x = _sample(dtype, shape)
    et.save({"x": x}, tmp_path / "t.ckpt")
    assert_same_tensor(x, et.load(tmp_path / "t.ckpt")["x"])


def test_bare_tensor_and_scalars(tmp_path):
    x = et.arange(5)
    et.save(x, tmp_path / "x")
    assert_same_tensor(x, et.load(tmp_path / "x"))
    et.save(3, tmp_path / "n")
    assert et.load(tmp_path / "n") == 3
    et.save("hello", tmp_path / "s")
    assert et.load(tmp_path / "s") == "hello"


def test_non_contiguous_tensors_are_saved_as_their_elements(tmp_path):
    base = et.from_numpy(np.arange(24, dtype=np.float32).reshape(4, 6))
    views = {"t": base.t(), "narrow": base.narrow(1, 2, 3), "expand": et.ones(1, 3).expand(4, 3)}
    for v in views.values():
        assert not v.is_contiguous()
    et.save(views, tmp_path / "v")
    back = et.load(tmp_path / "v")
    for k, v in views.items():
        np.testing.assert_array_equal(a(back[k]), np.asarray(v._data))
        assert back[k].is_contiguous() and back[k].storage_offset() == 0


def test_views_of_one_storage_load_as_independent_copies(tmp_path):
    base = et.zeros(2, 3)
    obj = {"base": base, "row": base.narrow(0, 1, 1)}
    et.save(obj, tmp_path / "v")
    back = et.load(tmp_path / "v")
    back["base"]._data.fill(5.0)
    np.testing.assert_array_equal(a(back["row"]), np.zeros((1, 3)))


def test_same_tensor_twice_is_stored_once_and_loads_as_one_object(tmp_path):
    x = et.ones(3)
    et.save({"a": x, "b": [x]}, tmp_path / "s")
    back = et.load(tmp_path / "s")
    assert back["a"] is back["b"][0]
    with safe_open(str(tmp_path / "s"), framework="numpy") as f:
        assert list(f.keys()) == ["a"]


def test_file_is_plain_safetensors_with_flattened_keys(tmp_path):
    obj = {"state": {0: {"exp_avg": et.ones(2)}}, "w": [et.zeros(1), {"b": et.zeros(2)}]}
    et.save(obj, tmp_path / "f")
    arrays = st_numpy.load_file(str(tmp_path / "f"))
    assert sorted(arrays) == ["state.0.exp_avg", "w.0", "w.1.b"]
    with safe_open(str(tmp_path / "f"), framework="numpy") as f:
        meta = f.metadata()
    assert sorted(meta) == ["ember", "ember_crc32"]
    assert json.loads(meta["ember"])["format"] == "ember.checkpoint"
    assert int(meta["ember_crc32"]) == zlib.crc32(meta["ember"].encode("utf-8"))


def test_colliding_flat_keys_stay_distinct(tmp_path):
    obj = {"a.b": et.zeros(1), "a": {"b": et.ones(1)}}
    et.save(obj, tmp_path / "c")
    back = et.load(tmp_path / "c")
    assert a(back["a.b"]).tolist() == [0.0] and a(back["a"]["b"]).tolist() == [1.0]


def test_file_objects_and_pathlike(tmp_path):
    buf = io.BytesIO()
    et.save({"x": et.arange(3)}, buf)
    buf.seek(0)
    assert a(et.load(buf)["x"]).tolist() == [0, 1, 2]
    p = pathlib.Path(tmp_path) / "p.ckpt"
    et.save([et.ones(1)], p)
    assert a(et.load(str(p))[0]).tolist() == [1.0]
    with open(p, "rb") as fh:
        assert a(et.load(fh)[0]).tolist() == [1.0]
    with open(tmp_path / "q", "wb") as fh:
        et.save({"k": 1}, fh)
    assert et.load(tmp_path / "q") == {"k": 1}


def test_loaded_tensors_are_writable(tmp_path):
    et.save({"x": et.zeros(3)}, tmp_path / "w")
    x = et.load(tmp_path / "w")["x"]
    x._data[0] = 1.0
    assert a(x).tolist() == [1.0, 0.0, 0.0]


def test_weights_only_is_accepted(tmp_path):
    et.save({"x": 1}, tmp_path / "w")
    assert et.load(tmp_path / "w", weights_only=False) == {"x": 1}
    assert et.load(tmp_path / "w", weights_only=True) == {"x": 1}
    assert et.load(tmp_path / "w", weights_only=None) == {"x": 1}


# --------------------------------------------------------------------------- atomicity
def _leftovers(folder):
    return sorted(p.name for p in pathlib.Path(folder).iterdir() if p.name.endswith(".tmp"))


def test_failed_rename_keeps_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "model.ckpt"
    et.save({"v": 1, "w": et.ones(2)}, path)
    before = path.read_bytes()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(S.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        et.save({"v": 2, "w": et.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert et.load(path)["v"] == 1
    assert _leftovers(tmp_path) == []


def test_crash_mid_write_keeps_old_checkpoint(tmp_path, monkeypatch):
    path = tmp_path / "model.ckpt"
    et.save({"v": 1}, path)
    before = path.read_bytes()
    real = st_numpy.save_file

    def half_write(tensors, filename, metadata=None):
        real(tensors, filename, metadata=metadata)
        with open(filename, "r+b") as fh:
            fh.truncate(os.path.getsize(filename) // 2)
        raise KeyboardInterrupt  # a crash that is not an ordinary exception

    monkeypatch.setattr(st_numpy, "save_file", half_write)
    with pytest.raises(KeyboardInterrupt):
        et.save({"v": 2, "w": et.ones(100)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_failed_pickling_writes_nothing(tmp_path):
    path = tmp_path / "x.ckpt"
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        et.save({"x": et.ones(1), "bad": lambda: 0}, path)
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_save_replaces_and_keeps_permissions(tmp_path):
    path = tmp_path / "m"
    et.save({"v": 1}, path)
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    os.chmod(path, 0o640)
    et.save({"v": 2}, path)
    assert et.load(path) == {"v": 2}
    assert path.stat().st_mode & 0o777 == 0o640


# --------------------------------------------------------------------------- bad files
@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.ckpt"
    et.save({"w": et.arange(100.0), "meta": {"epoch": 3}}, path)
    return path


def _expect_bad(path, match):
    with pytest.raises(RuntimeError) as e:
        et.load(path)
    msg = str(e.value)
    assert str(path) in msg, msg
    assert re.search(match, msg), msg


def test_truncated_file(good):
    raw = good.read_bytes()
    for cut in (len(raw) - 1, len(raw) // 2, 20, 5, 0):
        good.write_bytes(raw[:cut])
        _expect_bad(good, "truncated|too short")


def test_corrupted_tensor_bytes_fail_checksum(good):
    raw = bytearray(good.read_bytes())
    raw[-3] ^= 0xFF
    good.write_bytes(bytes(raw))
    _expect_bad(good, "CRC-32")


def test_corrupted_header(good):
    raw = bytearray(good.read_bytes())
    raw[10] = ord("#")
    good.write_bytes(bytes(raw))
    _expect_bad(good, "corrupted")


def test_garbage_and_huge_length_field(tmp_path):
    p = tmp_path / "garbage"
    p.write_bytes(b"\xff" * 64)
    _expect_bad(p, "not plausible")
    p.write_bytes(np.random.default_rng(0).bytes(10) + b"\x00" * 100)
    _expect_bad(p, "corrupted|truncated|not plausible")


def test_safetensors_file_that_is_not_an_ember_checkpoint(tmp_path):
    p = tmp_path / "plain.safetensors"
    st_numpy.save_file({"w": np.zeros(3, np.float32)}, str(p))
    _expect_bad(p, "not an ember checkpoint")


def test_pickle_checkpoint_is_refused_without_unpickling(tmp_path):
    p = tmp_path / "torch.pt"
    p.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    _expect_bad(p, "never unpickles")
    p.write_bytes(b"\x80\x04\x95" + b"\x00" * 100)
    _expect_bad(p, "never unpickles")


def test_corrupted_file_object_names_the_object():
    with pytest.raises(RuntimeError, match="BytesIO.*truncated|BytesIO.*too short"):
        et.load(io.BytesIO(b"abc"))


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        et.load(tmp_path / "nope")


# --------------------------------------------------------------------------- what is refused
@pytest.mark.parametrize("bad", [lambda: 0, (x for x in ())], ids=["lambda", "generator"])
def test_unpicklable_values_raise_pickles_error(tmp_path, bad):
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        et.save({"x": bad}, tmp_path / "b")


def test_bad_target_and_arguments(tmp_path):
    with pytest.raises(TypeError, match="path or a binary file"):
        et.save({}, 123)
    with pytest.raises(TypeError, match="pickle_protocol"):
        et.save({}, tmp_path / "k", pickle_protocol="2")
    with pytest.raises(TypeError, match="Pickler"):
        et.save({}, tmp_path / "k", pickle_module=object())
    et.save({}, tmp_path / "k")
    with pytest.raises(RuntimeError, match="pickle_module"):
        et.load(tmp_path / "k", pickle_module=pickle)
    with pytest.raises(TypeError, match="unexpected keyword"):
        et.load(tmp_path / "k", bogus=1)


# --------------------------------------------------------------------------- map_location
def test_map_location_forms(tmp_path):
    path = tmp_path / "m"
    et.save({"w": et.ones(2)}, path)
    for loc in ("cpu", et.device("cpu"), {"cpu": "cpu"}):
        assert et.load(path, map_location=loc)["w"].device == et.device("cpu")
    seen = []

    def fn(t, location):
        seen.append(location)
        return et.full_like(t, 7.0)

    out = et.load(path, map_location=fn)
    assert seen == ["cpu"]
    assert a(out["w"]).tolist() == [7.0, 7.0]


def test_map_location_callable_returning_none_keeps_default(tmp_path):
    path = tmp_path / "m"
    et.save({"w": et.ones(2)}, path)
    assert et.load(path, map_location=lambda t, loc: None)["w"].device == et.device("cpu")


@pytest.mark.skipif(_cupy.available, reason="checks the error raised without a GPU")
def test_map_location_cuda_without_gpu_explains(tmp_path):
    path = tmp_path / "m"
    et.save({"w": et.ones(2)}, path)
    with pytest.raises(RuntimeError, match="map_location='cpu'"):
        et.load(path, map_location="cuda")


@pytest.mark.cuda
@pytest.mark.skipif(not _cupy.available, reason="needs a CUDA GPU with CuPy")
def test_cuda_tensors_round_trip(tmp_path):
    path = tmp_path / "c"
    x = et.arange(6.0).to("cuda")
    et.save({"x": x}, path)
    back = et.load(path)
    assert back["x"].device == et.device("cuda:0")
    np.testing.assert_array_equal(back["x"].cpu().numpy(), np.arange(6.0, dtype=np.float32))
    assert et.load(path, map_location="cpu")["x"].device == et.device("cpu")
    assert et.load(path, map_location={"cuda:0": "cpu"})["x"].device == et.device("cpu")
