"""``save`` / ``load``: checkpoints as safetensors files, with no pickle anywhere.

On disk a checkpoint is one safetensors file:

- every tensor is stored under a key that flattens its place in the structure
  (``{"state": {0: {"exp_avg": t}}}`` puts ``t`` under ``"state.0.exp_avg"``);
- the rest of the structure (dicts with their key order and key types, lists, tuples,
  numbers, strings, bools, None, dtypes, devices) is JSON in the safetensors header's
  ``__metadata__``, under the single key ``"ember"``, with a CRC-32 of every tensor's bytes.

What this means for users:

- Loading never executes code: the file is parsed as JSON plus raw arrays.
- Saving writes a temporary file in the destination folder, flushes and fsyncs it, and
  ``os.replace``-s it over the destination, so a crash never leaves a half-written checkpoint.
- A truncated or corrupted file, or a file that is not an ember checkpoint, raises a
  RuntimeError that names the file and what is wrong.
- Views are saved as independent contiguous copies of the elements they show: two views of one
  storage load as two tensors that no longer share memory (PyTorch would keep the sharing). The
  *same* tensor object referenced twice is stored once and loads as one object.
- CUDA tensors are copied to the host; ``load`` puts them back on their device unless
  ``map_location`` says otherwise.
- Only plain data is accepted: saving a Module, an optimizer or any other object raises
  TypeError (save ``model.state_dict()`` instead).

>>> import io, ember.tensor as et
>>> buf = io.BytesIO(); save({"w": et.ones(2), "step": 3}, buf); _ = buf.seek(0)
>>> load(buf)
{'w': tensor([1., 1.]), 'step': 3}
"""
from __future__ import annotations

import collections
import json
import math
import os
import struct
import tempfile
import zlib

import numpy as np

from . import _dtype as D
from ._device import device
from ._tensor import Tensor

__all__ = ["save", "load"]

_FORMAT = "ember.checkpoint"
_VERSION = 1
_META_KEY = "ember"
_MAX_HEADER = 100_000_000  # safetensors' own limit on the header size
_PLAIN = ("tensors, numbers, strings, bools and None, in dicts, lists and tuples")


# --------------------------------------------------------------------------- encoding
class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.by_id: dict[int, str] = {}
        self.keep: list = []  # keep encoded tensors alive so their ids stay unique

    def key_for(self, path: list[str]) -> str:
        base = ".".join(path) if path else "tensor"
        key, n = base, 1
        while key in self.arrays:
            key, n = f"{base}~{n}", n + 1
        return key

    def tensor(self, t: Tensor, path: list[str]) -> dict:
        key = self.by_id.get(id(t))
        if key is None:
            key = self.key_for(path)
            data = t._data
            host = data if isinstance(data, np.ndarray) else data.get()
            # a C-contiguous copy of the elements (np.ascontiguousarray would make 0-d 1-d)
            arr = host if host.flags.c_contiguous else host.copy(order="C")
            self.arrays[key] = arr
            self.by_id[id(t)] = key
            self.keep.append(t)
        node = {"t": "tensor", "key": key, "dtype": t.dtype.name, "device": str(t.device),
                "crc32": zlib.crc32(self.arrays[key].data) if self.arrays[key].size else 0}
        if t.requires_grad:
            node["requires_grad"] = True
        return node

    def node(self, obj, path: list[str]):
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            v = float(obj)
            return v if math.isfinite(v) else {"t": "float", "v": repr(v)}
        if isinstance(obj, complex):
            return {"t": "complex", "v": [self.node(obj.real, path), self.node(obj.imag, path)]}
        if isinstance(obj, D.dtype):
            return {"t": "dtype", "v": obj.name}
        if isinstance(obj, device):
            return {"t": "device", "v": str(obj)}
        if isinstance(obj, dict):
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            keys, vals = [], []
            for k, v in obj.items():
                if not (k is None or isinstance(k, (bool, str, int, float, tuple))):
                    raise TypeError(
                        f"save(): dict key {k!r} at {_where(path)} has type "
                        f"{type(k).__name__}; keys must be str, int, float, bool, None or tuples")
                keys.append(self.node(k, path))
                vals.append(self.node(v, path + [str(k)]))
            return {"t": kind, "k": keys, "v": vals}
        if isinstance(obj, (list, tuple)):
            items = [self.node(v, path + [str(i)]) for i, v in enumerate(obj)]
            return {"t": "list" if isinstance(obj, list) else "tuple", "v": items}
        raise TypeError(_not_plain(obj, path))


def _where(path: list[str]) -> str:
    return "the top level" if not path else "'" + ".".join(path) + "'"


def _not_plain(obj, path: list[str]) -> str:
    return (f"save(): cannot save an object of type {type(obj).__name__} at {_where(path)}: "
            f"ember saves only plain data ({_PLAIN}) and never pickles modules or arbitrary "
            "objects. To checkpoint a model, save `model.state_dict()` instead (and "
            "`optimizer.state_dict()` for an optimizer), then restore it with "
            "`load_state_dict`.")


# --------------------------------------------------------------------------- save
def save(obj, f, pickle_module=None, pickle_protocol=None) -> None:
    """Save ``obj`` (nested dicts / lists / tuples of tensors and plain values) to ``f``,
    a path or a writable binary file object.

    ``pickle_module`` / ``pickle_protocol`` are accepted for PyTorch compatibility and must be
    None: ember never pickles.
    """
    if pickle_module is not None or pickle_protocol is not None:
        raise TypeError("save(): ember never pickles; pickle_module and pickle_protocol are "
                        "not supported")
    enc = _Encoder()
    root = enc.node(obj, [])
    meta = json.dumps({"format": _FORMAT, "version": _VERSION, "root": root},
                      separators=(",", ":"), allow_nan=False)
    metadata = {_META_KEY: meta}
    from safetensors import numpy as st_numpy

    if isinstance(f, (str, os.PathLike)):
        _atomic_save(os.fspath(f), enc.arrays, metadata, st_numpy)
    elif hasattr(f, "write"):
        f.write(st_numpy.save(enc.arrays, metadata=metadata))
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise TypeError(f"save(): f must be a path or a binary file object, got "
                        f"{type(f).__name__}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic_save(path: str, arrays: dict, metadata: dict, st_numpy) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    os.close(fd)
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
                "it looks like a pickle / zip checkpoint (PyTorch's torch.save format); ember "
                "never unpickles. Convert it in PyTorch with safetensors "
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
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
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
        if end > data_len:
            raise _Corrupt(f"tensor {name!r} ends at byte {end} of the data section, which "
                           f"has only {data_len} bytes (truncated)")
    return header, 8 + n


def _parse_meta(header: dict) -> dict:
    meta = header.get("__metadata__")
    if not isinstance(meta, dict) or _META_KEY not in meta:
        raise _Corrupt("it is a safetensors file but not an ember checkpoint (no 'ember' entry "
                       "in its metadata); read it with safetensors.safe_open, or load a "
                       "state dict with safetensors.numpy.load_file")
    try:
        doc = json.loads(meta[_META_KEY])
    except json.JSONDecodeError as exc:
        raise _Corrupt(f"the ember metadata is not valid JSON ({exc}) (corrupted)") from None
    if not isinstance(doc, dict) or doc.get("format") != _FORMAT or "root" not in doc:
        raise _Corrupt("the ember metadata does not describe a checkpoint (corrupted)")
    if doc.get("version", 0) > _VERSION:
        raise _Corrupt(f"it was written by a newer ember (checkpoint format version "
                       f"{doc.get('version')}; this ember reads up to {_VERSION})")
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


def _decode(node, arrays, map_location, loaded: dict, check_crc: bool):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        raise _Corrupt("unexpected bare list in the ember metadata (corrupted)")
    kind = node.get("t")
    if kind == "tensor":
        key = node["key"]
        if key in loaded:
            return loaded[key]
        arr = arrays(key)
        if node.get("dtype") and arr.dtype != D.to_dtype(node["dtype"]).np:
            raise _Corrupt(f"tensor {key!r} is stored as {arr.dtype}, the metadata says "
                           f"{node['dtype']} (corrupted)")
        if check_crc and arr.size and zlib.crc32(_c_contig(arr).data) != \
                node.get("crc32"):
            raise _Corrupt(f"the bytes of tensor {key!r} fail their CRC-32 check (corrupted)")
        t = Tensor._make(arr)
        t = _placement(map_location, node.get("device", "cpu"), t)
        if node.get("requires_grad"):
            t.requires_grad_(True)
        loaded[key] = t
        return t
    if kind in ("dict", "odict"):
        keys = [_key(_decode(k, arrays, map_location, loaded, check_crc)) for k in node["k"]]
        vals = [_decode(v, arrays, map_location, loaded, check_crc) for v in node["v"]]
        cls = collections.OrderedDict if kind == "odict" else dict
        return cls(zip(keys, vals))
    if kind in ("list", "tuple"):
        vals = [_decode(v, arrays, map_location, loaded, check_crc) for v in node["v"]]
        return vals if kind == "list" else tuple(vals)
    if kind == "float":
        return float(node["v"])
    if kind == "complex":
        return complex(*(_decode(v, arrays, map_location, loaded, check_crc)
                         for v in node["v"]))
    if kind == "dtype":
        return D.to_dtype(node["v"])
    if kind == "device":
        return device(node["v"])
    raise _Corrupt(f"unknown node type {kind!r} in the ember metadata (corrupted, or written "
                   "by a newer ember)")


def _c_contig(arr):
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _key(k):
    return tuple(k) if isinstance(k, list) else k


def load(f, map_location=None, weights_only: bool = True, mmap: bool | None = None,
         **kwargs):
    """Load what :func:`save` wrote, from a path or a readable binary file object.

    ``map_location`` places the tensors: None (back on the device they were saved from),
    ``"cpu"`` / ``"cuda:0"`` / a device (everything there), a dict mapping saved device
    strings to new ones (``{"cuda:0": "cpu"}``), or a callable ``fn(tensor, location)``
    returning the placed tensor (or None to keep the default placement). ``weights_only`` is
    accepted for PyTorch compatibility: ember never unpickles, so loading is always as safe as
    ``weights_only=True``.
    """
    if kwargs:
        raise TypeError(f"load() got unexpected keyword arguments {sorted(kwargs)}")
    if isinstance(f, (str, os.PathLike)):
        name = os.fspath(f)
        try:
            return _load_path(name, map_location)
        except _Corrupt as exc:
            raise _bad(name, exc) from None
    if not hasattr(f, "read"):
        raise TypeError(f"load(): f must be a path or a binary file object, got "
                        f"{type(f).__name__}")
    name = getattr(f, "name", None) or f"<{type(f).__name__}>"
    raw = f.read()
    if not isinstance(raw, (bytes, bytearray, memoryview)):
        raise TypeError(f"load(): the file object must be opened in binary mode, read() "
                        f"returned {type(raw).__name__}")
    raw = bytes(raw)
    try:
        header, _ = _read_header(raw, len(raw))
        doc = _parse_meta(header)
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
            return arrays.pop(key)

        return _decode_root(doc, get, map_location)
    except _Corrupt as exc:
        raise _bad(name, exc) from None


def _bad(name: str, exc: Exception) -> RuntimeError:
    return RuntimeError(f"load(): '{name}' is not a readable ember checkpoint: {exc}")


def _load_path(name: str, map_location):
    from safetensors import SafetensorError, safe_open

    try:
        fh = open(name, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"load(): no such file: '{name}'") from None
    with fh:
        total = os.fstat(fh.fileno()).st_size
        head = fh.read(8)
        if len(head) == 8:
            (n,) = struct.unpack("<Q", head)
            if n <= _MAX_HEADER:
                head += fh.read(n)
    header, _ = _read_header(head, total)
    doc = _parse_meta(header)
    try:
        with safe_open(name, framework="numpy") as sf:
            keys = set(sf.keys())

            def get(key):
                if key not in keys:
                    raise _Corrupt(f"the metadata refers to tensor {key!r}, which the file "
                                   "does not hold (corrupted)")
                return sf.get_tensor(key)

            return _decode_root(doc, get, map_location)
    except SafetensorError as exc:
        raise _Corrupt(f"safetensors could not read it ({exc})") from None


def _decode_root(doc: dict, get, map_location):
    try:
        return _decode(doc["root"], get, map_location, {}, True)
    except (KeyError, IndexError, AttributeError, ValueError) as exc:
        raise _Corrupt(f"malformed metadata ({type(exc).__name__}: {exc}) (corrupted)") \
            from None
