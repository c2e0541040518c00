"""``save`` / ``load``: PyTorch's checkpoint contract, safe by default.

``save(obj, f)`` takes any picklable object. On disk a checkpoint is one safetensors file:

- every tensor and NumPy array is stored under a key that flattens its place in the structure
  (``{"state": {0: {"exp_avg": t}}}`` puts ``t`` under ``"state.0.exp_avg"``);
- plain data (dicts and OrderedDicts with their key order and key types, lists, tuples, ints,
  floats, complex numbers, strings, bools, None, NumPy scalars, dtypes, devices, Sizes) is JSON
  in the safetensors header's ``__metadata__``, under the single key ``"ember"``, with a CRC-32
  of every array's bytes;
- anything else (a whole Module, an optimizer, an ``argparse.Namespace``, a custom class, a
  namedtuple, a ``defaultdict``, a Parameter) goes into one *pickled section* of the same file:
  the pickle bytes are stored as a ``uint8`` array (covered by the same checksum), and the
  tensors and arrays those objects hold are still stored natively, referenced from the pickle.

``load(f, weights_only=True)``, the default, is safe: the native part is parsed as JSON plus
raw arrays, and a pickled section is read only by a restricted unpickler that admits what
rebuilds ember tensors and Parameters, a few harmless containers, and the classes you allowed
with :func:`add_safe_globals` / :func:`safe_globals`; anything else raises
``pickle.UnpicklingError("Weights only load failed...")`` before any of it runs.
``load(f, weights_only=False)`` unpickles everything (only for files you trust).

Other properties:

- Saving writes a temporary file in the destination folder (through a symlink, beside its
  target), flushes and fsyncs it, and ``os.replace``-s it over the destination, so a crash never
  leaves a half-written checkpoint and an interrupted save leaves no temporary file.
- A truncated or corrupted file, or a file that is not an ember checkpoint, raises a
  RuntimeError that names the file and what is wrong.
- Views are saved as independent contiguous copies of the elements they show: two views of one
  storage load as two tensors that no longer share memory (PyTorch would keep the sharing). The
  *same* tensor object referenced twice (natively or from pickled objects) is stored once and
  loads as one object. A list or dict referenced twice in the native part loads as two copies.
- CUDA tensors are copied to the host; ``load`` puts them back on their device unless
  ``map_location`` says otherwise.

>>> import io, ember.tensor as et
>>> buf = io.BytesIO(); save({"w": et.ones(2), "step": 3}, buf); _ = buf.seek(0)
>>> load(buf)
{'w': tensor([1., 1.]), 'step': 3}
"""
from __future__ import annotations

import collections
import contextlib
import importlib
import io
import json
import math
import os
import pickle
import re
import struct
import tempfile
import threading
import zlib

import numpy as np

from . import _dtype as D
from ._device import device
from ._tensor import Size, Tensor

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint"]

_FORMAT = "ember.checkpoint"
_VERSION = 3  # 2: NumPy arrays and scalars, Size, pickled section; 3: metadata CRC, shapes
_META_KEY = "ember"
_META_CRC_KEY = "ember_crc32"  # CRC-32 of the "ember" JSON (keys, scalars, shapes, dtypes)
_HEADER_KEY = "__metadata__"  # safetensors' own metadata entry: no array may take this name
_MAX_HEADER = 100_000_000  # safetensors' own limit on the header size
DEFAULT_PROTOCOL = 4

# NumPy dtypes safetensors stores natively (native byte order only)
_NATIVE_NP = {np.dtype(t) for t in ("bool", "uint8", "int8", "int16", "uint16", "int32",
                                    "uint32", "int64", "uint64", "float16", "float32",
                                    "float64")}


def _native_array(arr: np.ndarray) -> bool:
    return type(arr) is np.ndarray and arr.dtype in _NATIVE_NP and arr.dtype.isnative


# --------------------------------------------------------------------------- encoding
class _Cycle(Exception):
    """A list / dict contains itself: the native JSON skeleton cannot express it."""


def _plain_key(k) -> bool:
    if k is None or type(k) in (bool, str, int, float):
        return True
    return type(k) is tuple and all(_plain_key(x) for x in k)


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.by_id: dict[int, str] = {}
        self.keep: list = []  # keep encoded objects alive so their ids stay unique
        self.pickled: list = []
        self.pickled_ids: dict[int, int] = {}
        self.active: set[int] = set()
        self.n_persistent = 0

    def key_for(self, path: list[str]) -> str:
        base = ".".join(path) if path else "tensor"
        key, n = base, 1
        while key in self.arrays or key == _HEADER_KEY:
            key, n = f"{base}~{n}", n + 1
        return key

    def _store(self, obj, arr: np.ndarray, path: list[str]) -> str:
        key = self.by_id.get(id(obj))
        if key is None:
            key = self.key_for(path)
            # a C-contiguous copy of the elements (np.ascontiguousarray would make 0-d 1-d)
            self.arrays[key] = arr if arr.flags.c_contiguous else arr.copy(order="C")
            self.by_id[id(obj)] = key
            self.keep.append(obj)
        return key

    def _crc(self, key: str) -> int:
        arr = self.arrays[key]
        return zlib.crc32(arr.data) if arr.size else 0

    def tensor(self, t: Tensor, path: list[str]) -> dict:
        data = t._data
        host = data if isinstance(data, np.ndarray) else data.get()
        if host.dtype == D.BF16_NP:  # safetensors' NumPy side has no bfloat16: store the bits
            host = host.view(np.uint16)
        key = self._store(t, host, path)
        node = {"t": "tensor", "key": key, "dtype": t.dtype.name, "device": str(t.device),
                "shape": list(host.shape), "crc32": self._crc(key)}
        if t.requires_grad:
            node["requires_grad"] = True
        return node

    def ndarray(self, arr: np.ndarray, path: list[str]) -> dict:
        key = self._store(arr, arr, path)
        return {"t": "ndarray", "key": key, "dtype": arr.dtype.name, "shape": list(arr.shape),
                "crc32": self._crc(key)}

    def pickle_ref(self, obj) -> dict:
        i = self.pickled_ids.get(id(obj))
        if i is None:
            i = len(self.pickled)
            self.pickled.append(obj)
            self.pickled_ids[id(obj)] = i
            self.keep.append(obj)
        return {"t": "pickled", "i": i}

    def node(self, obj, path: list[str]):
        tp = type(obj)
        if obj is None or tp in (bool, str, int):
            return obj
        if tp is float:
            return obj if math.isfinite(obj) else {"t": "float", "v": repr(obj)}
        if tp is Tensor:
            return self.tensor(obj, path)
        if tp is np.ndarray and _native_array(obj):
            return self.ndarray(obj, path)
        if isinstance(obj, np.generic) and obj.dtype in _NATIVE_NP and obj.dtype.isnative:
            return {"t": "npscalar", "dtype": obj.dtype.name, "v": self.node(obj.item(), path)}
        if tp is complex:
            return {"t": "complex", "v": [self.node(obj.real, path), self.node(obj.imag, path)]}
        if tp is D.dtype:
            return {"t": "dtype", "v": obj.name}
        if tp is device:
            return {"t": "device", "v": str(obj)}
        if tp is Size:
            return {"t": "size", "v": [int(s) for s in obj]}
        if tp in (dict, collections.OrderedDict, list, tuple):
            if id(obj) in self.active:
                raise _Cycle
            self.active.add(id(obj))
            try:
                return self.container(obj, path)
            finally:
                self.active.discard(id(obj))
        return self.pickle_ref(obj)

    def container(self, obj, path: list[str]):
        if isinstance(obj, dict):
            if not all(_plain_key(k) for k in obj):
                return self.pickle_ref(obj)
            kind = "odict" if type(obj) is collections.OrderedDict else "dict"
            keys, vals = [], []
            for k, v in obj.items():
                keys.append(self.node(k, path))
                vals.append(self.node(v, path + [str(k)]))
            return {"t": kind, "k": keys, "v": vals}
        items = [self.node(v, path + [str(i)]) for i, v in enumerate(obj)]
        return {"t": "list" if type(obj) is list else "tuple", "v": items}

    def persistent_id(self, obj):
        """Called by the pickler for every object: tensors and arrays stay native."""
        tp = type(obj)
        if tp is Tensor:
            node = self.tensor(obj, self._ppath(obj))
        elif tp is np.ndarray and _native_array(obj):
            node = self.ndarray(obj, self._ppath(obj))
        else:
            return None
        return ("ember", node)

    def _ppath(self, obj) -> list[str]:
        if id(obj) in self.by_id:
            return []
        self.n_persistent += 1
        return ["__pickled__", str(self.n_persistent - 1)]

    def pickle_section(self, pickle_module, protocol: int) -> bytes:
        enc = self

        class _Pickler(pickle_module.Pickler):
            def persistent_id(self, obj):
                return enc.persistent_id(obj)

        buf = io.BytesIO()
        _Pickler(buf, protocol=protocol).dump(self.pickled)
        return buf.getvalue()


def _where(path: list[str]) -> str:
    return "the top level" if not path else "'" + ".".join(path) + "'"


# --------------------------------------------------------------------------- save
def save(obj, f, pickle_module=None, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False) -> None:
    """Save ``obj`` (any picklable object) to ``f``, a path or a writable binary file object.

    Tensors, NumPy arrays and plain data are stored natively; everything else is pickled (with
    ``pickle_module``, default :mod:`pickle`, at ``pickle_protocol``) into the same file, with the
    tensors and arrays it holds still stored natively. Nothing is written if pickling fails.
    """
    if pickle_module is None:
        pickle_module = pickle
    if not isinstance(pickle_protocol, int) or isinstance(pickle_protocol, bool):
        raise TypeError(f"save(): pickle_protocol must be an int, got "
                        f"{type(pickle_protocol).__name__}")
    if not hasattr(pickle_module, "Pickler"):
        raise TypeError(f"save(): pickle_module must provide a Pickler class (like the pickle "
                        f"module), got {pickle_module!r}")
    if not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):
        raise TypeError(f"save(): f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    enc = _Encoder()
    try:
        root = enc.node(obj, [])
    except _Cycle:  # a self-referencing container: the whole object goes through pickle
        enc = _Encoder()
        root = enc.pickle_ref(obj)
    doc = {"format": _FORMAT, "version": _VERSION, "root": root}
    if enc.pickled:
        data = enc.pickle_section(pickle_module, pickle_protocol)
        key = enc.key_for(["__pickle__"])
        enc.arrays[key] = np.frombuffer(data, dtype=np.uint8)
        doc["pickle"] = {"key": key, "n": len(enc.pickled), "crc32": zlib.crc32(data)}
    meta = json.dumps(doc, separators=(",", ":"), allow_nan=False)
    metadata = {_META_KEY: meta, _META_CRC_KEY: str(zlib.crc32(meta.encode("utf-8")))}
    from safetensors import numpy as st_numpy

    if isinstance(f, (str, os.PathLike)):
        _atomic_save(os.fspath(f), enc.arrays, metadata, st_numpy)
    else:
        f.write(st_numpy.save(enc.arrays, metadata=metadata))
        if hasattr(f, "flush"):
            f.flush()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


_TEMP_TAIL = re.compile(r"(\d+)\.[A-Za-z0-9_]+\.tmp")


def _clean_stale_temps(folder: str, base: str) -> None:
    """Remove temporary files that an interrupted save of ``base`` left (its process is gone)."""
    prefix = "." + base + "."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        m = _TEMP_TAIL.fullmatch(name[len(prefix):])  # "<pid>.<random>.tmp", nothing else
        if m is None:
            continue
        pid = int(m.group(1))
        if pid != os.getpid() and not _pid_alive(pid):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


def _atomic_save(path: str, arrays: dict, metadata: dict, st_numpy) -> None:
    if os.path.islink(path):  # write beside the symlink's target and replace the target
        path = os.path.realpath(path)
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    _clean_stale_temps(folder, base)
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{base}.{os.getpid()}.", suffix=".tmp")
    except OSError as exc:
        raise _write_error(path, exc) from exc
    os.close(fd)
    try:
        try:
            st_numpy.save_file(arrays, tmp, metadata=metadata)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                mode = os.stat(path).st_mode & 0o777
            except FileNotFoundError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)
            os.replace(tmp, path)
        except Exception as exc:
            if isinstance(exc, OSError) or type(exc).__name__ == "SafetensorError":
                raise _write_error(path, exc) from exc
            raise
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable (POSIX); not available everywhere
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


_OS_ERRNO = re.compile(r"os error (\d+)")


def _write_error(path: str, exc: Exception) -> OSError:
    """An OSError naming the checkpoint (disk full, no permission, ...), whatever layer failed;
    the previous checkpoint at ``path`` is untouched."""
    code = getattr(exc, "errno", None)
    if code is None:
        m = _OS_ERRNO.search(str(exc))
        code = int(m.group(1)) if m else None
    reason = os.strerror(code) if code else str(exc)
    err = OSError(code, f"save(): could not write the checkpoint '{path}': {reason} (the "
                        f"previous file, if any, is unchanged)")
    err.filename = path
    return err


# --------------------------------------------------------------------------- safe globals
_safe_lock = threading.RLock()
_user_safe: list = []


def _global_name(entry) -> tuple[str, object]:
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str):
            raise TypeError(f"add_safe_globals(): a tuple entry must be (object, "
                            f"'module.name'), got {entry!r}")
        return entry[1], entry[0]
    module = getattr(entry, "__module__", None)
    name = getattr(entry, "__qualname__", None) or getattr(entry, "__name__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(f"add_safe_globals(): expected classes or functions (or "
                        f"(object, 'module.name') tuples), got {entry!r} of type "
                        f"{type(entry).__name__}")
    return f"{module}.{name}", entry


def add_safe_globals(safe_globals: list) -> None:
    """Allow these classes / functions in the pickled section of ``load(weights_only=True)``.

    Each entry is a class or function, or an ``(object, "module.name")`` tuple naming the
    global as the pickle spells it. Only allow what you trust to be rebuilt from a file.
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"add_safe_globals(): expected a list, got "
                        f"{type(safe_globals).__name__}")
    for entry in safe_globals:
        _global_name(entry)
    with _safe_lock:
        _user_safe.extend(safe_globals)


def get_safe_globals() -> list:
    """The user-allowed globals, in the order they were added."""
    with _safe_lock:
        return list(_user_safe)


def clear_safe_globals() -> None:
    """Forget every global allowed with :func:`add_safe_globals`."""
    with _safe_lock:
        _user_safe.clear()


class safe_globals:
    """Context manager: ``with safe_globals([Cls, fn]): load(f)`` allows them only inside."""

    def __init__(self, safe_globals: list) -> None:
        if not isinstance(safe_globals, (list, tuple)):
            raise TypeError(f"safe_globals(): expected a list, got "
                            f"{type(safe_globals).__name__}")
        for entry in safe_globals:
            _global_name(entry)
        self.safe_globals = list(safe_globals)
        self._saved: list | None = None

    def __enter__(self):
        with _safe_lock:
            self._saved = list(_user_safe)
            _user_safe.extend(self.safe_globals)
        return self

    def __exit__(self, *exc) -> None:
        with _safe_lock:
            _user_safe[:] = self._saved or []


def _ember_global(module: str, name: str):
    def get():
        return getattr(importlib.import_module(module), name)

    return get


# what rebuilds ember tensors, dtypes, devices and Parameters, and harmless builtins
_DEFAULT_SAFE = {
    "collections.OrderedDict": lambda: collections.OrderedDict,
    "collections.defaultdict": lambda: collections.defaultdict,
    "collections.Counter": lambda: collections.Counter,
    "collections.deque": lambda: collections.deque,
    "builtins.set": lambda: set,
    "builtins.frozenset": lambda: frozenset,
    "builtins.bytearray": lambda: bytearray,
    "builtins.complex": lambda: complex,
    "builtins.slice": lambda: slice,
    "builtins.range": lambda: range,
    "ember.tensor._dtype._by_name": lambda: D._by_name,
    "ember.tensor._device.device": lambda: device,
    "ember.tensor._tensor.Size": lambda: Size,
    "ember.nn.parameter.Parameter": _ember_global("ember.nn.parameter", "Parameter"),
    "ember.nn.parameter._rebuild_parameter": _ember_global("ember.nn.parameter",
                                                           "_rebuild_parameter"),
    "ember.nn.parameter.UninitializedParameter": _ember_global("ember.nn.parameter",
                                                               "UninitializedParameter"),
}
_REBUILD = "ember.tensor._tensor._rebuild"


def _user_allowed() -> dict[str, object]:
    with _safe_lock:
        return dict(_global_name(e) for e in _user_safe)


def _weights_only_message(detail: str) -> str:
    return (
        "Weights only load failed. This file can still be loaded, in one of two ways; take "
        "either only if you trust the source of the checkpoint.\n"
        "\t(1) Call `ember.tensor.load` again with `weights_only=False`. This will likely "
        "succeed, but unpickling can run arbitrary code: do it only for a file from a "
        "trusted source.\n"
        "\t(2) Keep `weights_only=True` and allow the globals the file needs, as the error "
        "below explains.\n"
        f"\tWeightsUnpickler error: {detail}")


def _unsupported_global(full: str) -> pickle.UnpicklingError:
    short = full.rsplit(".", 1)[-1]
    return pickle.UnpicklingError(_weights_only_message(
        f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
        f"`ember.tensor.serialization.add_safe_globals([{short}])` or the "
        f"`ember.tensor.serialization.safe_globals([{short}])` context manager to allowlist "
        "this global if you trust this class/function."))


# --------------------------------------------------------------------------- load
class _Corrupt(Exception):
    pass


def _read_header(raw: bytes, total: int) -> tuple[dict, int]:
    """Parse and validate a safetensors header; returns (header, data start)."""
    try:
        return _parse_header(raw, total)
    except _Corrupt:
        if raw[:4] == b"PK\x03\x04" or (raw[:1] == b"\x80" and raw[1:2] in (b"\x02", b"\x03",
                                                                           b"\x04", b"\x05")):
            raise _Corrupt(
                "it looks like a PyTorch (torch.save) zip / pickle checkpoint; ember never "
                "unpickles PyTorch's format. Convert it in PyTorch with safetensors "
                "(safetensors.torch.save_file(model.state_dict(), path)) and read that file "
                "with safetensors") from None
        raise


def _parse_header(raw: bytes, total: int) -> tuple[dict, int]:
    if total < 8:
        raise _Corrupt(f"the file is only {total} bytes long, too short for a safetensors "
                       "header (truncated or not a checkpoint)")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > _MAX_HEADER:
        raise _Corrupt(f"the header length field says {n} bytes, which is not plausible "
                       "(corrupted, or not a safetensors file)")
    if 8 + n > total:
        raise _Corrupt(f"the header needs {n} bytes but the file has only {total - 8} after the "
                       "length field (truncated)")
    try:
        header = json.loads(raw[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise _Corrupt(f"the safetensors header is not valid JSON ({exc}); the file is "
                       "corrupted or not a checkpoint") from None
    if not isinstance(header, dict):
        raise _Corrupt("the safetensors header is not a JSON object (corrupted)")
    data_len = total - 8 - n
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            begin, end = info["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise _Corrupt(f"tensor {name!r} has no valid data_offsets (corrupted)") from None
        if type(begin) is not int or type(end) is not int or not 0 <= begin <= end:
            raise _Corrupt(f"tensor {name!r} has no valid data_offsets (corrupted)")
        if end > data_len:
            raise _Corrupt(f"tensor {name!r} ends at byte {end} of the data section, which "
                           f"has only {data_len} bytes (truncated)")
    return header, 8 + n


def _parse_meta(header: dict) -> dict:
    meta = header.get(_HEADER_KEY)
    if not isinstance(meta, dict) or _META_KEY not in meta:
        raise _Corrupt("it is a safetensors file but not an ember checkpoint (no 'ember' entry "
                       "in its metadata); read it with safetensors.safe_open, or load a "
                       "state dict with safetensors.numpy.load_file")
    text = meta[_META_KEY]
    if not isinstance(text, str):
        raise _Corrupt("the ember metadata is not a string (corrupted)")
    crc = meta.get(_META_CRC_KEY)
    if crc is not None and (not isinstance(crc, str) or not crc.isdigit()
                            or int(crc) != zlib.crc32(text.encode("utf-8"))):
        raise _Corrupt("the ember metadata (keys, scalars, shapes) fails its CRC-32 check "
                       "(corrupted)")
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise _Corrupt(f"the ember metadata is not valid JSON ({exc}) (corrupted)") from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT or "root" not in doc:
        raise _Corrupt("the ember metadata does not describe a checkpoint (corrupted)")
    version = doc.get("version", 0)
    if type(version) is not int:
        raise _Corrupt(f"the checkpoint format version {version!r} is not a number "
                       "(corrupted)")
    if version > _VERSION:
        raise _Corrupt(f"it was written by a newer ember (checkpoint format version "
                       f"{version}; this ember reads up to {_VERSION})")
    if crc is None and version >= 3:  # only files older than the metadata checksum lack it
        raise _Corrupt("the ember metadata has lost its CRC-32 entry (corrupted)")
    return doc


def _placement(map_location, saved: str, t: Tensor) -> Tensor:
    """Apply ``map_location`` to a freshly loaded CPU tensor saved from device ``saved``."""
    target = saved
    if map_location is not None:
        if callable(map_location) and not isinstance(map_location, (str, device)):
            out = map_location(t, saved)
            if out is not None:
                if not isinstance(out, Tensor):
                    raise TypeError(f"load(): map_location callable must return a Tensor or "
                                    f"None, got {type(out).__name__}")
                return out
            target = saved
        elif isinstance(map_location, dict):
            target = str(map_location.get(saved, saved))
        else:
            target = str(device(map_location))
    dev = device(target)
    if dev.type == "cpu":
        return t
    from . import _cupy

    if not _cupy.available:
        raise RuntimeError(
            f"load(): attempting to load a tensor on device '{target}' but CUDA is not "
            "available. If you are running on a CPU-only machine, use "
            "load(f, map_location='cpu') to map the tensors to the CPU.")
    return t.to(dev)


class _Decoder:
    def __init__(self, arrays, map_location) -> None:
        self.arrays = arrays
        self.map_location = map_location
        self.loaded: dict = {}
        self.objs: list | None = None

    def array(self, node) -> np.ndarray:
        key = node["key"]
        arr = self.arrays(key)
        if node.get("dtype") == "bfloat16" and arr.dtype == np.uint16:  # its bits, see save
            arr = arr.view(D.BF16_NP)
        if node.get("dtype") and arr.dtype != self._np_dtype(node):
            raise _Corrupt(f"array {key!r} is stored as {arr.dtype}, the metadata says "
                           f"{node['dtype']} (corrupted)")
        shape = node.get("shape")
        if shape is not None and list(arr.shape) != shape:
            raise _Corrupt(f"array {key!r} is stored with shape {list(arr.shape)}, the "
                           f"metadata says {shape} (corrupted)")
        bits = arr.view(np.uint16) if arr.dtype == D.BF16_NP else arr
        if arr.size and zlib.crc32(_c_contig(bits).data) != node.get("crc32"):
            raise _Corrupt(f"the bytes of tensor {key!r} fail their CRC-32 check (corrupted)")
        return arr

    @staticmethod
    def _np_dtype(node):
        return D.to_dtype(node["dtype"]).np if node["t"] == "tensor" else np.dtype(node["dtype"])

    def stored(self, node):
        """A tensor or array node (from the skeleton or from the pickled section)."""
        key = node["key"]
        if key in self.loaded:
            return self.loaded[key]
        arr = self.array(node)
        if node["t"] == "ndarray":
            out = arr
        else:
            out = _placement(self.map_location, node.get("device", "cpu"), Tensor._make(arr))
            if node.get("requires_grad"):
                out.requires_grad_(True)
        self.loaded[key] = out
        return out

    def persistent_load(self, pid):
        if (not isinstance(pid, tuple) or len(pid) != 2 or pid[0] != "ember"
                or not isinstance(pid[1], dict) or pid[1].get("t") not in ("tensor", "ndarray")):
            raise pickle.UnpicklingError(f"load(): unsupported persistent id {pid!r} in the "
                                         "pickled section")
        try:
            return self.stored(pid[1])
        except (KeyError, ValueError, TypeError) as exc:
            raise _Corrupt(f"malformed tensor reference in the pickled section "
                           f"({type(exc).__name__}: {exc}) (corrupted)") from None

    def rebuild(self, arr, dev="cpu", requires_grad=False):
        """``ember.tensor._tensor._rebuild`` as the unpickler sees it: honours map_location."""
        if not isinstance(arr, np.ndarray) or not isinstance(dev, str):
            raise pickle.UnpicklingError("load(): malformed tensor in the pickled section")
        t = _placement(self.map_location, dev, Tensor._make(arr))
        if requires_grad:
            t.requires_grad_(True)
        return t

    def node(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            raise _Corrupt("unexpected bare list in the ember metadata (corrupted)")
        kind = node.get("t")
        if kind in ("tensor", "ndarray"):
            return self.stored(node)
        if kind in ("dict", "odict"):
            keys = [_key(self.node(k)) for k in node["k"]]
            vals = [self.node(v) for v in node["v"]]
            cls = collections.OrderedDict if kind == "odict" else dict
            return cls(zip(keys, vals))
        if kind in ("list", "tuple"):
            vals = [self.node(v) for v in node["v"]]
            return vals if kind == "list" else tuple(vals)
        if kind == "pickled":
            if self.objs is None:
                raise _Corrupt("the metadata refers to a pickled section the file does not "
                               "hold (corrupted)")
            return self.objs[node["i"]]
        if kind == "float":
            return float(node["v"])
        if kind == "npscalar":
            return np.dtype(node["dtype"]).type(self.node(node["v"]))
        if kind == "complex":
            return complex(*(self.node(v) for v in node["v"]))
        if kind == "dtype":
            return D.to_dtype(node["v"])
        if kind == "device":
            return device(node["v"])
        if kind == "size":
            return Size(int(s) for s in node["v"])
        raise _Corrupt(f"unknown node type {kind!r} in the ember metadata (corrupted, or "
                       "written by a newer ember)")

    def pickled_bytes(self, info) -> bytes:
        try:
            key, crc = info["key"], info["crc32"]
        except (TypeError, KeyError):
            raise _Corrupt("malformed pickled-section entry in the metadata (corrupted)") \
                from None
        raw = self.arrays(key)
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise _Corrupt("the pickled section is not a byte array (corrupted)")
        data = raw.tobytes()
        if zlib.crc32(data) != crc:
            raise _Corrupt("the bytes of the pickled section fail their CRC-32 check "
                           "(corrupted)")
        return data

    def unpickle(self, data: bytes, n: int, weights_only: bool, pickle_module,
                 load_args: dict) -> None:
        dec = self
        if weights_only:
            allowed = _user_allowed()

            class _Unpickler(pickle.Unpickler):
                def find_class(self, module, name):
                    full = f"{module}.{name}"
                    if full in allowed:
                        return allowed[full]
                    if full == _REBUILD:
                        return dec.rebuild
                    if full in _DEFAULT_SAFE:
                        return _DEFAULT_SAFE[full]()
                    raise _unsupported_global(full)

                def persistent_load(self, pid):
                    return dec.persistent_load(pid)
        else:
            class _Unpickler(pickle_module.Unpickler):
                def find_class(self, module, name):
                    if f"{module}.{name}" == _REBUILD:
                        return dec.rebuild
                    return super().find_class(module, name)

                def persistent_load(self, pid):
                    return dec.persistent_load(pid)

        try:
            objs = _Unpickler(io.BytesIO(data), **load_args).load()
        except pickle.UnpicklingError as exc:
            if weights_only and not str(exc).startswith("Weights only load failed"):
                raise pickle.UnpicklingError(_weights_only_message(str(exc))) from None
            raise
        if type(objs) is not list or len(objs) != n:
            raise _Corrupt("the pickled section does not hold what the metadata says "
                           "(corrupted)")
        self.objs = objs


def _c_contig(arr):
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _key(k):
    return tuple(_key(x) for x in k) if isinstance(k, list) else k


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = True,
         mmap: bool | None = None, **pickle_load_args):
    """Load what :func:`save` wrote, from a path or a readable binary file object.

    ``map_location`` places the tensors: None (back on the device they were saved from),
    ``"cpu"`` / ``"cuda:0"`` / a device (everything there), a dict mapping saved device
    strings to new ones (``{"cuda:0": "cpu"}``), or a callable ``fn(tensor, location)``
    returning the placed tensor (or None to keep the default placement).

    ``weights_only=True`` (the default; None means the same) reads a pickled section only
    through a restricted unpickler that admits ember tensors and Parameters, a few plain
    containers and what :func:`add_safe_globals` / :func:`safe_globals` allowed; anything
    else raises :class:`pickle.UnpicklingError`. ``weights_only=False`` unpickles with
    ``pickle_module`` (default :mod:`pickle`): only for files you trust.
    """
    bad = set(pickle_load_args) - {"encoding", "errors", "fix_imports"}
    if bad:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(bad)}")
    if weights_only is None:
        weights_only = True
    if weights_only and pickle_module is not None:
        raise RuntimeError("load(): cannot use weights_only=True with pickle_module set; pass "
                           "weights_only=False to unpickle with a custom pickle_module")
    if pickle_module is None:
        pickle_module = pickle
    opts = (map_location, bool(weights_only), pickle_module, pickle_load_args)
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
        try:
            return _load_path(name, opts)
        except _Corrupt as exc:
            raise _bad(name, exc) from None
    name, raw = _read_object(f)
    try:
        header, _ = _read_header(raw, len(raw))
        doc = _parse_meta(header)
        return _decode_root(doc, _bytes_getter(raw), opts)
    except _Corrupt as exc:
        raise _bad(name, exc) from None


def _read_object(f) -> tuple[str, bytes]:
    if not hasattr(f, "read"):
        raise TypeError(f"load(): f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    name = getattr(f, "name", None) or f"<{type(f).__name__}>"
    raw = f.read()
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"load(): the file object must be opened in binary mode, read() "
                        f"returned {type(raw).__name__}")
    return str(name), bytes(raw)


def _bytes_getter(raw: bytes):
    from safetensors import SafetensorError
    from safetensors import numpy as st_numpy

    try:
        arrays = st_numpy.load(raw)
    except SafetensorError as exc:
        raise _Corrupt(f"safetensors could not read it ({exc})") from None

    def get(key):
        if key not in arrays:
            raise _Corrupt(f"the metadata refers to tensor {key!r}, which the file does "
                           "not hold (corrupted)")
        return arrays[key]

    return get


def _bad(name: str, exc: Exception) -> RuntimeError:
    return RuntimeError(f"load(): '{name}' is not a readable ember checkpoint: {exc}")


def _read_path_header(name: str, fh) -> dict:
    total = os.fstat(fh.fileno()).st_size
    head = fh.read(8)
    if len(head) == 8:
        (n,) = struct.unpack("<Q", head)
        if n <= _MAX_HEADER:
            head += fh.read(n)
    header, _ = _read_header(head, total)
    return _parse_meta(header)


def _load_path(name: str, opts):
    from safetensors import SafetensorError, safe_open

    try:
        fh = open(name, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"load(): no such file: '{name}'") from None
    with fh:
        doc = _read_path_header(name, fh)
    try:
        with safe_open(name, framework="numpy") as sf:
            keys = set(sf.keys())

            def get(key):
                if key not in keys:
                    raise _Corrupt(f"the metadata refers to tensor {key!r}, which the file "
                                   "does not hold (corrupted)")
                return sf.get_tensor(key)

            return _decode_root(doc, get, opts)
    except SafetensorError as exc:
        raise _Corrupt(f"safetensors could not read it ({exc})") from None


def _decode_root(doc: dict, get, opts):
    map_location, weights_only, pickle_module, load_args = opts
    dec = _Decoder(get, map_location)
    info = doc.get("pickle")
    if info is not None:
        data = dec.pickled_bytes(info)
        n = info.get("n") if isinstance(info, dict) else None
        dec.unpickle(data, n, weights_only, pickle_module, load_args)
    try:
        return dec.node(doc["root"])
    except (KeyError, IndexError, AttributeError, ValueError, TypeError, RecursionError) as exc:
        raise _Corrupt(f"malformed metadata ({type(exc).__name__}: {exc}) (corrupted)") \
            from None


# --------------------------------------------------------------------------- inspection
class _Stub:
    """Stands in for every global while listing a checkpoint's globals: runs nothing."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __call__(self, *args, **kwargs):
        return _Stub()

    def __setstate__(self, state) -> None:
        pass

    def append(self, item) -> None:
        pass

    def extend(self, items) -> None:
        pass

    def __setitem__(self, key, value) -> None:
        pass


def get_unsafe_globals_in_checkpoint(f) -> list[str]:
    """The ``module.name`` globals in ``f``'s pickled section that ``load(weights_only=True)``
    would refuse now (neither ember's defaults nor allowed). Nothing is unpickled."""
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
        with open(name, "rb") as fh:
            raw = fh.read()
    else:
        name, raw = _read_object(f)
    try:
        header, _ = _read_header(raw, len(raw))
        doc = _parse_meta(header)
        info = doc.get("pickle")
        if info is None:
            return []
        data = _Decoder(_bytes_getter(raw), None).pickled_bytes(info)
    except _Corrupt as exc:
        raise _bad(name, exc) from None
    allowed = set(_user_allowed()) | set(_DEFAULT_SAFE) | {_REBUILD}
    seen: list[str] = []

    class _Lister(pickle.Unpickler):
        def find_class(self, module, gname):
            full = f"{module}.{gname}"
            if full not in allowed and full not in seen:
                seen.append(full)
            return _Stub

        def persistent_load(self, pid):
            return None

    _Lister(io.BytesIO(data)).load()
    return seen
