"""Checkpoints under damage (issue 21, items 15-19): bit flips and truncations of header and
data, saves through symlinks, saves killed mid-write, a ``"__metadata__"`` key, a full disk."""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _serialization as S


def _sample():
    return {"w": et.arange(6.0).reshape(2, 3), "step": 7, "lr": 0.125, "name": "adam",
            "layers": [et.ones(2, dtype=et.int64), {"b": et.zeros(3)}], "flag": True}


def _equal(a, b) -> bool:
    if isinstance(a, et.Tensor):
        return isinstance(b, et.Tensor) and a.dtype == b.dtype and \
            a.shape == b.shape and np.array_equal(a.numpy(), b.numpy())
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    return type(a) is type(b) and a == b


def _header_len(raw: bytes) -> int:
    return 8 + struct.unpack("<Q", raw[:8])[0]


# ----------------------------------------------------------------------- (b) corruption sweep
def test_every_single_bit_flip_of_the_header_is_detected_or_harmless(tmp_path):  # item 15
    path = tmp_path / "c.ckpt"
    obj = _sample()
    et.save(obj, path)
    raw = path.read_bytes()
    hl = _header_len(raw)
    rng = np.random.default_rng(0)
    positions = sorted(set(range(8)) | set(rng.choice(np.arange(8, hl), size=min(600, hl - 8),
                                                      replace=False).tolist()))
    silent = []
    for pos in positions:
        bit = int(rng.integers(8))
        bad = bytearray(raw)
        bad[pos] ^= 1 << bit
        path.write_bytes(bytes(bad))
        try:
            back = et.load(path)
        except RuntimeError as exc:
            assert str(path) in str(exc)
            continue
        if not _equal(obj, back):
            silent.append((pos, bit))
    assert not silent, f"header flips that loaded other content: {silent[:10]}"


def test_bit_flips_of_the_data_are_detected(tmp_path):
    path = tmp_path / "d.ckpt"
    et.save(_sample(), path)
    raw = path.read_bytes()
    hl = _header_len(raw)
    for pos in range(hl, len(raw)):
        bad = bytearray(raw)
        bad[pos] ^= 0x10
        path.write_bytes(bytes(bad))
        with pytest.raises(RuntimeError, match="d.ckpt"):
            et.load(path)


def test_every_truncation_raises_runtime_error_naming_the_file(tmp_path):
    path = tmp_path / "t.ckpt"
    et.save(_sample(), path)
    raw = path.read_bytes()
    for n in range(len(raw)):
        path.write_bytes(raw[:n])
        with pytest.raises(RuntimeError, match="t.ckpt"):
            et.load(path)


def test_metadata_edit_fails_its_checksum(tmp_path):  # item 15: a scalar changed in place
    path = tmp_path / "m.ckpt"
    et.save({"step": 7, "w": et.ones(2)}, path)
    raw = path.read_bytes()
    assert raw.count(b'7') >= 1
    i = raw.index(b'\\"step\\"')
    j = raw.index(b"7", i)
    path.write_bytes(raw[:j] + b"8" + raw[j + 1:])
    with pytest.raises(RuntimeError, match="m.ckpt.*CRC"):
        et.load(path)


def test_metadata_without_checksum_from_an_older_version_still_loads(tmp_path):
    import json

    from safetensors import numpy as st_numpy
    doc = {"format": "ember.checkpoint", "version": 2,
           "root": {"t": "dict", "k": ["step"], "v": [3]}}
    st_numpy.save_file({}, str(tmp_path / "old"), metadata={"ember": json.dumps(doc)})
    assert et.load(tmp_path / "old") == {"step": 3}
    doc["version"] = 3
    st_numpy.save_file({}, str(tmp_path / "new"), metadata={"ember": json.dumps(doc)})
    with pytest.raises(RuntimeError, match="CRC"):
        et.load(tmp_path / "new")


def test_deeply_nested_or_mistyped_metadata_is_a_runtime_error(tmp_path):
    import json
    import zlib

    from safetensors import numpy as st_numpy
    for root in ({"t": "dict", "k": "nokeys", "v": 5}, "[" * 5000, {"t": "size", "v": 3}):
        text = json.dumps({"format": "ember.checkpoint", "version": 3, "root": root})
        if root == "[" * 5000:
            text = '{"format":"ember.checkpoint","version":3,"root":' + "[" * 5000 + \
                "]" * 5000 + "}"
        meta = {"ember": text, "ember_crc32": str(zlib.crc32(text.encode()))}
        st_numpy.save_file({}, str(tmp_path / "x"), metadata=meta)
        with pytest.raises(RuntimeError, match="x"):
            et.load(tmp_path / "x")


# ----------------------------------------------------------------------- items 16, 18
def test_save_through_a_symlink_replaces_its_target(tmp_path):  # item 16
    target = tmp_path / "run1.ckpt"
    link = tmp_path / "latest.ckpt"
    et.save({"v": 1}, target)
    link.symlink_to(target.name)
    et.save({"v": 2}, link)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert et.load(target) == {"v": 2} and et.load(link) == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.ckpt", "run1.ckpt"]


def test_top_level_metadata_key_round_trips(tmp_path):  # item 18
    obj = {"__metadata__": et.ones(2), "x": {"__metadata__": et.zeros(1)}, "m": "__metadata__"}
    et.save(obj, tmp_path / "k")
    back = et.load(tmp_path / "k")
    assert _equal(obj, back)
    et.save({"__metadata__": 3}, tmp_path / "k2")
    assert et.load(tmp_path / "k2") == {"__metadata__": 3}


# ----------------------------------------------------------------------- item 19: disk full
def test_disk_full_raises_oserror_naming_the_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    from safetensors import SafetensorError
    from safetensors import numpy as st_numpy

    path = tmp_path / "full.ckpt"
    et.save({"v": et.ones(3)}, path)

    def full_disk(arrays, filename, metadata=None):
        with open(filename, "wb") as fh:  # a partial write, as a real full disk leaves
            fh.write(b"\0" * 100)
        raise SafetensorError("Error while serializing: I/O error: No space left on device "
                              "(os error 28)")

    monkeypatch.setattr(st_numpy, "save_file", full_disk)
    with pytest.raises(OSError, match="full.ckpt.*No space left") as info:
        et.save({"v": et.zeros(1000)}, path)
    assert info.value.errno == 28 and info.value.filename == str(path)
    monkeypatch.undo()
    assert _equal(et.load(path), {"v": et.ones(3)})
    assert [p.name for p in tmp_path.iterdir()] == ["full.ckpt"]  # no temporary file left


def test_disk_full_on_a_real_tiny_filesystem(tmp_path):
    """The same on a 64 KiB tmpfs where one can be mounted (root on Linux); otherwise the
    monkeypatched test above covers the path."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    ok = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)],
        capture_output=True).returncode == 0
    if not ok:
        pytest.skip("cannot mount a tmpfs here (needs root); the monkeypatched test covers it")
    try:
        path = mnt / "c.ckpt"
        et.save({"v": et.ones(4)}, path)
        with pytest.raises(OSError, match="c.ckpt") as info:
            et.save({"v": et.zeros(100_000)}, path)
        assert info.value.errno == 28
        assert _equal(et.load(path), {"v": et.ones(4)})
        assert os.listdir(mnt) == ["c.ckpt"]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# ----------------------------------------------------------------------- (c) SIGKILL mid-save
_SAVER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from safetensors import numpy as st_numpy
    import ember.tensor as et

    real = st_numpy.save_file

    def slow(arrays, filename, metadata=None):
        with open(filename, "wb") as fh:  # half a file on disk, then wait to be killed
            fh.write(b"\\0" * 4096)
            fh.flush()
        print("writing", flush=True)
        time.sleep(60)
        real(arrays, filename, metadata=metadata)

    st_numpy.save_file = slow
    et.save({"v": et.zeros(1000)}, sys.argv[1])
""")


def test_sigkill_during_save_keeps_the_old_checkpoint_and_the_next_save_cleans(tmp_path):
    path = tmp_path / "k.ckpt"
    et.save({"v": et.ones(3)}, path)
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(path)], stdout=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "writing"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "k.ckpt"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".k.ckpt.")  # what the kill left
    assert _equal(et.load(path), {"v": et.ones(3)})  # the old checkpoint, intact
    deadline = time.time() + 5
    while time.time() < deadline and S._pid_alive(proc.pid):
        time.sleep(0.05)
    et.save({"v": et.full((3,), 2.0)}, path)
    assert [p.name for p in tmp_path.iterdir()] == ["k.ckpt"]  # the next save cleaned up
    assert _equal(et.load(path), {"v": et.full((3,), 2.0)})


def test_temporary_files_of_live_processes_and_other_files_are_kept(tmp_path):
    path = tmp_path / "a.ckpt"
    live = tmp_path / f".a.ckpt.{os.getppid()}.abc.tmp"  # the parent process is alive
    other = tmp_path / ".a.ckpt.notes"
    live.write_bytes(b"x")
    other.write_bytes(b"y")
    et.save({"v": 1}, path)
    assert live.exists() and other.exists()
