"""save / load beyond plain data: NumPy arrays natively, the pickled section, weights_only,
the safe-globals allowlist, and refusing malicious pickles."""
from __future__ import annotations

import argparse
import collections
import enum
import io
import os
import pickle
import zlib

import numpy as np
import pytest
from safetensors import safe_open

import ember.tensor as et
from ember.tensor import serialization


def a(x):
    return np.asarray(x._data)


def roundtrip(obj, **load_kw):
    buf = io.BytesIO()
    et.save(obj, buf)
    buf.seek(0)
    return et.load(buf, **load_kw)


def has_pickle(path) -> bool:
    with safe_open(str(path), framework="numpy") as f:
        return any(k.startswith("__pickle__") for k in f.keys())


@pytest.fixture(autouse=True)
def _clean_allowlist():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


class Holder:
    def __init__(self, x, note="n"):
        self.x = x
        self.note = note


class Inner:
    def __init__(self, v):
        self.v = v


class Outer:
    def __init__(self, inner):
        self.inner = inner


Point = collections.namedtuple("Point", "x y")


class Color(enum.IntEnum):
    RED = 1


MARKER = "ember_serialization_pwned"


class Evil:
    """Unpickling this runs a shell command: ``load`` must never get that far by default."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


class EvalEvil:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


# --------------------------------------------------------------------------- native part
NP_DTYPES = ["bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
             "float16", "float32", "float64"]


@pytest.mark.parametrize("dt", NP_DTYPES)
def test_numpy_arrays_and_scalars_are_native(tmp_path, dt):
    rng = np.random.default_rng(1)
    arr = (rng.standard_normal((3, 4)) * 50).astype(dt)
    obj = {"a": arr, "t": arr.T, "s": arr.reshape(-1)[0], "e": np.zeros((0, 2), dt)}
    et.save(obj, tmp_path / "n")
    assert not has_pickle(tmp_path / "n")
    back = et.load(tmp_path / "n")  # weights_only=True: no allowlisting needed
    for k in ("a", "t", "e"):
        assert type(back[k]) is np.ndarray and back[k].dtype == obj[k].dtype
        np.testing.assert_array_equal(back[k], obj[k])
    assert type(back["s"]) is type(obj["s"]) and back["s"] == obj["s"]


def test_size_and_plain_python_stay_native(tmp_path):
    obj = {"shape": et.Size([2, 3]), "n": 3, "c": 1 + 2j, "l": [1, "a", None, (2.5,)]}
    et.save(obj, tmp_path / "p")
    assert not has_pickle(tmp_path / "p")
    back = et.load(tmp_path / "p")
    assert back == obj and type(back["shape"]) is et.Size


# --------------------------------------------------------------------------- pickled section
def test_objects_go_to_a_pickled_section_and_tensors_inside_stay_native(tmp_path):
    x = et.randn(3, 2)
    obj = {"x": x, "holder": Holder(x), "arr_holder": Holder(np.arange(4)), "step": 3}
    path = tmp_path / "o"
    et.save(obj, path)
    assert has_pickle(path)
    with safe_open(str(path), framework="numpy") as f:
        keys = set(f.keys())
    assert "x" in keys and any(k.startswith("__pickled__") for k in keys)  # the array
    back = et.load(path, weights_only=False)
    assert type(back["holder"]) is Holder and back["holder"].note == "n"
    assert back["holder"].x is back["x"]  # one tensor object, referenced from both parts
    np.testing.assert_array_equal(a(back["x"]), a(x))
    np.testing.assert_array_equal(back["arr_holder"].x, np.arange(4))
    assert back["step"] == 3


def test_pickled_whole_object_at_top_level(tmp_path):
    ns = argparse.Namespace(lr=0.1, layers=[2, 3], w=et.ones(2))
    et.save(ns, tmp_path / "ns")
    back = et.load(tmp_path / "ns", weights_only=False)
    assert isinstance(back, argparse.Namespace) and back.lr == 0.1 and back.layers == [2, 3]
    assert a(back.w).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("value", [
    Point(1, 2), collections.defaultdict(int, a=1), Color.RED, {"k": {1, 2}},
    {frozenset([1]): "frozen key"}, b"bytes", bytearray(b"ba"), range(3), slice(1, 2),
], ids=lambda v: type(v).__name__)
def test_non_plain_values_round_trip_with_their_types(value):
    back = roundtrip({"v": value}, weights_only=False)["v"]
    assert type(back) is type(value) and back == value


@pytest.mark.parametrize("value", [{1, 2}, frozenset([3]), b"raw", bytearray(b"x"), 1 + 0j,
                                   collections.OrderedDict(a=1), collections.Counter("aab")],
                         ids=lambda v: type(v).__name__)
def test_harmless_builtins_load_with_weights_only(value):
    assert roundtrip({"v": value, "w": et.ones(1)})["v"] == value


def test_self_referencing_list(tmp_path):
    lst = [et.ones(1)]
    lst.append(lst)
    et.save(lst, tmp_path / "cyc")
    back = et.load(tmp_path / "cyc")
    assert back[1] is back and a(back[0]).tolist() == [1.0]


def test_map_location_reaches_tensors_inside_objects(tmp_path):
    et.save({"h": Holder(et.ones(2))}, tmp_path / "m")
    seen = []

    def where(t, loc):
        seen.append(loc)
        return et.full_like(t, 5.0)

    back = et.load(tmp_path / "m", map_location=where, weights_only=False)
    assert seen == ["cpu"] and a(back["h"].x).tolist() == [5.0, 5.0]


def test_pickle_protocol_and_module_are_used():
    calls = []

    class Tracing:
        class Pickler(pickle.Pickler):
            def __init__(self, f, protocol=None):
                calls.append(protocol)
                super().__init__(f, protocol=protocol)

        Unpickler = pickle.Unpickler

    buf = io.BytesIO()
    et.save(Holder(1), buf, pickle_module=Tracing, pickle_protocol=2)
    buf.seek(0)
    assert calls == [2]
    assert et.load(buf, pickle_module=Tracing, weights_only=False).x == 1


# --------------------------------------------------------------------------- weights_only
def test_weights_only_refuses_a_pickled_section_with_pytorchs_error(tmp_path):
    et.save({"w": et.ones(2), "h": Holder(1)}, tmp_path / "h")
    with pytest.raises(pickle.UnpicklingError) as e:
        et.load(tmp_path / "h")
    msg = str(e.value)
    assert msg.startswith("Weights only load failed")
    assert "weights_only=False" in msg
    assert f"{__name__}.Holder" in msg
    assert "ember.tensor.serialization.add_safe_globals([Holder])" in msg
    assert "safe_globals([Holder])" in msg
    assert et.load(tmp_path / "h", weights_only=False)["h"].x == 1


def test_safe_globals_context_admits_exactly_the_listed_classes(tmp_path):
    path = tmp_path / "oi"
    et.save(Outer(Inner(et.arange(3))), path)
    with serialization.safe_globals([Outer]):
        with pytest.raises(pickle.UnpicklingError, match=r"\.Inner was not an allowed"):
            et.load(path)
    with serialization.safe_globals([Outer, Inner]):
        assert serialization.get_safe_globals() == [Outer, Inner]
        back = et.load(path)
    assert type(back) is Outer and a(back.inner.v).tolist() == [0, 1, 2]
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match=r"\.Outer was not an allowed"):
        et.load(path)


def test_add_get_clear_safe_globals(tmp_path):
    path = tmp_path / "h"
    et.save(Holder("x"), path)
    assert serialization.get_unsafe_globals_in_checkpoint(path) == [f"{__name__}.Holder"]
    serialization.add_safe_globals([Holder])
    assert serialization.get_safe_globals() == [Holder]
    assert serialization.get_unsafe_globals_in_checkpoint(path) == []
    assert et.load(path).x == "x"
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError):
        et.load(path)


def test_safe_globals_accepts_name_tuples_and_rejects_junk(tmp_path):
    path = tmp_path / "h"
    et.save(Holder(1), path)
    with serialization.safe_globals([(Holder, f"{__name__}.Holder")]):
        assert et.load(path).x == 1
    with pytest.raises(TypeError, match="add_safe_globals"):
        serialization.add_safe_globals([3])
    with pytest.raises(TypeError, match="list"):
        serialization.add_safe_globals(Holder)
    with pytest.raises(TypeError, match="tuple"):
        serialization.add_safe_globals([(Holder, 1)])


@pytest.mark.parametrize("allow", [[], [Evil], [Holder, Evil]], ids=["default", "evil",
                                                                    "two"])
def test_malicious_pickle_is_refused_and_never_runs(tmp_path, allow, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / MARKER
    path = tmp_path / "evil.ckpt"
    et.save({"w": et.ones(1), "payload": Evil(marker)}, path)
    assert not marker.exists()
    unsafe = serialization.get_unsafe_globals_in_checkpoint(path)
    assert unsafe == [f"{os.system.__module__}.system"]
    with serialization.safe_globals(allow):
        with pytest.raises(pickle.UnpicklingError, match="system was not an allowed global"):
            et.load(path)
    assert not marker.exists()


def test_builtins_eval_is_refused():
    buf = io.BytesIO()
    et.save([EvalEvil()], buf)
    for allow in ([], [EvalEvil]):
        buf.seek(0)
        with serialization.safe_globals(allow):
            with pytest.raises(pickle.UnpicklingError, match="builtins.eval"):
                et.load(buf)


def _forged_meta(doc: dict) -> dict:
    """Metadata for a forged file: a forger recomputes the metadata's CRC-32 too (it guards
    against corruption, not against forgery; the unpickler's allowlist does that)."""
    import json

    text = json.dumps(doc)
    return {"ember": text, "ember_crc32": str(zlib.crc32(text.encode("utf-8")))}


def test_hand_written_pickle_with_raw_opcodes_is_refused(tmp_path):
    """A pickled section forged byte by byte (GLOBAL / REDUCE on posix.system)."""
    path = tmp_path / "forged"
    et.save({"h": Holder(1)}, path)  # a valid file with a pickled section to replace
    forged = b"\x80\x04c" + f"{os.system.__module__}\nsystem\n".encode() + \
        b"X\x04\x00\x00\x00true\x85R\x85."
    import json

    from safetensors import numpy as st_numpy
    with safe_open(str(path), framework="numpy") as f:
        meta = dict(f.metadata())
    doc = json.loads(meta["ember"])
    doc["pickle"] = {"key": doc["pickle"]["key"], "n": 1, "crc32": zlib.crc32(forged)}
    st_numpy.save_file({doc["pickle"]["key"]: np.frombuffer(forged, np.uint8)}, str(path),
                       metadata=_forged_meta(doc))
    with pytest.raises(pickle.UnpicklingError, match="system was not an allowed global"):
        et.load(path)


def test_reduce_on_admitted_type_with_bad_arguments_is_refused():
    """The default allowlist's tensor rebuilder checks its arguments."""
    forged = (b"\x80\x04cember.tensor._tensor\n_rebuild\n"
              b"X\x01\x00\x00\x00xX\x03\x00\x00\x00cpu\x89\x87R\x85.")
    buf = io.BytesIO()
    et.save([Holder(0)], buf)
    raw = buf.getvalue()
    from safetensors import numpy as st_numpy
    arrays = st_numpy.load(raw)
    import json
    import struct
    (n,) = struct.unpack("<Q", raw[:8])
    doc = json.loads(json.loads(raw[8:8 + n])["__metadata__"]["ember"])
    arrays[doc["pickle"]["key"]] = np.frombuffer(forged, np.uint8)
    doc["pickle"]["crc32"] = zlib.crc32(forged)
    out = io.BytesIO(st_numpy.save(arrays, metadata=_forged_meta(doc)))
    with pytest.raises(pickle.UnpicklingError, match="malformed tensor"):
        et.load(out)


# --------------------------------------------------------------------------- integrity
def test_corrupted_pickled_section_fails_its_checksum(tmp_path):
    path = tmp_path / "c"
    et.save({"h": Holder("some text to flip")}, path)
    raw = bytearray(path.read_bytes())
    i = raw.rindex(b"some text")
    raw[i] ^= 0x20
    path.write_bytes(bytes(raw))
    for wo in (True, False):
        with pytest.raises(RuntimeError, match=r"'.*c'.*pickled section fail.*CRC-32"):
            et.load(path, weights_only=wo)


def test_truncated_file_with_pickled_section(tmp_path):
    path = tmp_path / "t"
    et.save({"h": Holder(et.ones(100))}, path)
    raw = path.read_bytes()
    path.write_bytes(raw[:-10])
    with pytest.raises(RuntimeError, match="truncated"):
        et.load(path, weights_only=False)


# --------------------------------------------------------------------------- atomic writes
def test_save_through_a_symlink_replaces_the_target(tmp_path):
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    target = real_dir / "model.ckpt"
    et.save({"v": 1}, target)
    link = tmp_path / "latest.ckpt"
    link.symlink_to(target)
    et.save({"v": 2, "h": Holder(3)}, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert et.load(target, weights_only=False)["v"] == 2
    assert sorted(p.name for p in real_dir.iterdir()) == ["model.ckpt"]


def test_save_cleans_temporary_files_an_interrupted_save_left(tmp_path):
    dead = tmp_path / ".m.ckpt.999999999.abc123.tmp"  # no such process
    alive = tmp_path / f".m.ckpt.{os.getppid()}.def456.tmp"  # a save still running
    other = tmp_path / ".other.999999999.x.tmp"  # another file's
    similar = tmp_path / ".m.ckpt.5.1234.x.tmp"  # the temp of a file named "m.ckpt.5"
    for p in (dead, alive, other, similar):
        p.write_bytes(b"half")
    et.save({"v": 1}, tmp_path / "m.ckpt")
    assert not dead.exists() and alive.exists() and other.exists() and similar.exists()
    assert et.load(tmp_path / "m.ckpt") == {"v": 1}


def test_serialization_module_is_pytorchs_path():
    from ember.tensor.serialization import load, save

    assert save is et.save and load is et.load
    assert et.serialization is serialization
    for name in ("add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
                 "get_unsafe_globals_in_checkpoint"):
        assert callable(getattr(serialization, name)) and name in serialization.__all__


def test_deepcopy_copies_storage_dtype_and_device():
    import copy

    base = et.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    for x in (base, base.t()):
        y = copy.deepcopy(x)
        assert y is not x and y.dtype == x.dtype and y.device == x.device
        assert y.shape == x.shape
        np.testing.assert_array_equal(y.numpy(), x.numpy())
        y[0, 0] = 100.0
        assert x[0, 0].item() == 0.0
        assert y.grad is None and not y.requires_grad
