"""Vocab and Vectors (torchtext's classic ``vocab`` module).

Vectors read local GloVe / word2vec text files and cache the parsed matrix next to them as a
NumPy ``.npz`` archive (two ``.npy`` members: ``vectors`` float32 and ``itos`` unicode),
loaded with ``allow_pickle=False``: a cache file never executes code.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import ember.tensor as et

__all__ = ["Vectors", "Vocab"]


class _Stoi(dict):
    """``stoi`` mapping: unknown tokens give ``unk_index`` (without being inserted, unlike
    torchtext's defaultdict, so lookups never grow the vocabulary); picklable."""

    def __init__(self, *args: Any, unk_index: int | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.unk_index = unk_index

    def __missing__(self, key: str) -> int:
        if self.unk_index is None:
            raise KeyError(key)
        return self.unk_index

    def __reduce__(self):
        return (_Stoi, (dict(self),), {"unk_index": self.unk_index})


def _zero_init(t: et.Tensor) -> et.Tensor:
    return et.zeros(tuple(t.shape), dtype=t.dtype)


class Vocab:
    """Token <-> index mapping built from a ``collections.Counter``.

    Tokens are ordered by descending frequency, ties alphabetically; ``specials`` come first
    (or last with ``specials_first=False``) and do not count toward ``max_size``.

    >>> v = Vocab(Counter("a b b c c c".split()))
    >>> v.itos
    ['<unk>', '<pad>', 'c', 'b', 'a']
    >>> v.stoi["zzz"]
    0
    """

    UNK = "<unk>"

    def __init__(
        self,
        counter: Counter,
        max_size: int | None = None,
        min_freq: int = 1,
        specials: Sequence[str] = ("<unk>", "<pad>"),
        vectors: Any = None,
        unk_init: Callable | None = None,
        vectors_cache: str | None = None,
        specials_first: bool = True,
    ):
        self.freqs = counter
        counter = counter.copy()
        min_freq = max(min_freq, 1)
        specials = list(specials)
        self.itos: list[str] = []
        if specials_first:
            self.itos = list(specials)
            max_size = None if max_size is None else max_size + len(specials)
        for tok in specials:
            del counter[tok]
        words_and_frequencies = sorted(counter.items(), key=lambda tup: tup[0])
        words_and_frequencies.sort(key=lambda tup: tup[1], reverse=True)
        for word, freq in words_and_frequencies:
            if freq < min_freq or len(self.itos) == max_size:
                break
            self.itos.append(word)
        if not specials_first:
            self.itos.extend(specials)
        self.unk_index: int | None = None
        if Vocab.UNK in specials:
            self.unk_index = self.itos.index(Vocab.UNK)
        self.stoi = _Stoi({tok: i for i, tok in enumerate(self.itos)}, unk_index=self.unk_index)
        self.vectors: et.Tensor | None = None
        if vectors is not None:
            self.load_vectors(vectors, unk_init=unk_init, cache=vectors_cache)
        elif unk_init is not None or vectors_cache is not None:
            raise ValueError("Vocab: unk_init and vectors_cache need vectors")

    def __getitem__(self, token: str) -> int:
        return self.stoi[token]

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return NotImplemented
        if self.freqs != other.freqs or self.stoi != other.stoi or self.itos != other.itos:
            return False
        if (self.vectors is None) != (other.vectors is None):
            return False
        if self.vectors is not None:
            return bool(np.array_equal(self.vectors.numpy(), other.vectors.numpy()))
        return True

    __hash__ = None  # type: ignore[assignment]

    def lookup_indices(self, tokens: Iterable[str]) -> list[int]:
        return [self.stoi[token] for token in tokens]

    def extend(self, v: Vocab, sort: bool = False) -> None:
        """Append the tokens of ``v`` that this vocabulary lacks."""
        words = sorted(v.itos) if sort else v.itos
        for w in words:
            if w not in self.stoi:
                self.itos.append(w)
                self.stoi[w] = len(self.itos) - 1

    def load_vectors(self, vectors: Any, **kwargs: Any) -> None:
        """Attach pretrained vectors: one ``Vectors`` or a list (concatenated along dim 1).

        Named aliases ("glove.6B.100d") would need a download, which ember never does:
        build ``Vectors(name=path_to_local_file)`` instead.
        """
        if not isinstance(vectors, list):
            vectors = [vectors]
        for v in vectors:
            if isinstance(v, str):
                raise ValueError(
                    f"Vocab.load_vectors: got the name {v!r}; ember downloads nothing. "
                    "Pass ember.data.text.Vectors(name='/path/to/vectors.txt') instead"
                )
            if not isinstance(v, Vectors):
                raise TypeError(f"Vocab.load_vectors: expected Vectors, got {type(v).__name__}")
        tot_dim = sum(v.dim for v in vectors)
        out = np.zeros((len(self), tot_dim), dtype=np.float32)
        start = 0
        for v in vectors:
            out[:, start : start + v.dim] = (
                np.stack([v[tok.strip()].numpy() for tok in self.itos])
                if len(self.itos)
                else np.zeros((0, v.dim), np.float32)
            )
            start += v.dim
        self.vectors = et.from_numpy(out)

    def set_vectors(
        self,
        stoi: dict,
        vectors: Any,
        dim: int,
        unk_init: Callable = _zero_init,
    ) -> None:
        """Set vectors from a ``stoi`` map into rows of ``vectors``; others get ``unk_init``."""
        src = vectors.numpy() if isinstance(vectors, et.Tensor) else np.asarray(vectors)
        out = np.zeros((len(self), dim), dtype=np.float32)
        for i, token in enumerate(self.itos):
            wv_index = stoi.get(token, None)
            if wv_index is not None:
                out[i] = src[wv_index]
            else:
                out[i] = unk_init(et.zeros(dim)).numpy()
        self.vectors = et.from_numpy(out)


class Vectors:
    """Word vectors from a local GloVe or word2vec text file.

    ``name`` is the file path (or a name inside ``cache``). The parsed matrix is cached as
    ``<cache>/<basename>[.<max_vectors>].npz`` and reused while the source is not newer.
    A first line of two integers (word2vec's header) is skipped; any other row whose
    dimension disagrees raises ValueError naming the file and line.
    """

    def __init__(
        self,
        name: str,
        cache: str | None = None,
        url: str | None = None,
        unk_init: Callable | None = None,
        max_vectors: int | None = None,
    ):
        if url is not None:
            raise ValueError("Vectors: ember downloads nothing; place the file locally")
        path = os.path.expanduser(name)
        if cache is None:
            cache = (
                os.path.dirname(os.path.abspath(path)) if os.path.isfile(path) else ".vector_cache"
            )
        if not os.path.isfile(path) and os.path.isfile(os.path.join(cache, name)):
            path = os.path.join(cache, name)
        self.name = name
        self.cache_dir = cache
        self.unk_init = _zero_init if unk_init is None else unk_init
        self.itos: list[str] = []
        self.stoi: dict[str, int] = {}
        self.vectors: et.Tensor = et.zeros((0, 0))
        self.dim = 0
        self.cache(path, cache, max_vectors=max_vectors)

    def __getitem__(self, token: str) -> et.Tensor:
        if token in self.stoi:
            return self.vectors[self.stoi[token]]
        return self.unk_init(et.zeros(self.dim))

    def __len__(self) -> int:
        return len(self.itos)

    def cache(self, path: str, cache: str, max_vectors: int | None = None) -> None:
        base = os.path.basename(path)
        suffix = "" if max_vectors is None else f".{max_vectors}"
        cache_path = os.path.join(cache, base + suffix + ".npz")
        if not os.path.isfile(path) and not os.path.isfile(cache_path):
            raise FileNotFoundError(
                f"Vectors: no vector file at {path!r} (nor a cache at {cache_path!r}); "
                "ember downloads nothing, put a GloVe/word2vec text file there"
            )
        fresh = os.path.isfile(cache_path) and (
            not os.path.isfile(path) or os.path.getmtime(cache_path) >= os.path.getmtime(path)
        )
        if fresh:
            with np.load(cache_path, allow_pickle=False) as z:
                itos = [str(s) for s in z["itos"]]
                matrix = np.array(z["vectors"], dtype=np.float32)
        else:
            itos, matrix = _read_vector_file(path, max_vectors)
            os.makedirs(cache, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=cache, suffix=".npz.tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    np.savez(f, vectors=matrix, itos=np.array(itos, dtype=str))
                os.replace(tmp, cache_path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        self.itos = itos
        self.stoi = {}
        for i, word in enumerate(itos):
            self.stoi.setdefault(word, i)  # a repeated token (GloVe 840B has some): first row wins
        self.vectors = et.from_numpy(matrix)
        self.dim = matrix.shape[1]

    def get_vecs_by_tokens(self, tokens: Any, lower_case_backup: bool = False) -> et.Tensor:
        single = isinstance(tokens, str)
        toks = [tokens] if single else list(tokens)
        rows = []
        for tok in toks:
            if lower_case_backup and tok not in self.stoi:
                tok = tok.lower()
            rows.append(self[tok].numpy())
        out = np.stack(rows).astype(np.float32) if rows else np.zeros((0, self.dim), np.float32)
        return et.from_numpy(out[0] if single else out)


def _read_vector_file(path: str, max_vectors: int | None) -> tuple[list[str], np.ndarray]:
    itos: list[str] = []
    rows: list[list[float]] = []
    dim = None
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            if max_vectors is not None and len(itos) >= max_vectors:
                break
            line = raw.rstrip(b"\r\n").rstrip(b" ")
            if not line.strip():
                continue
            # split on " " only, so non-breaking spaces inside tokens survive
            entries = line.split(b" ")
            if lineno == 1 and len(entries) == 2 and all(e.isdigit() for e in entries):
                continue  # word2vec header "<count> <dim>"
            try:
                word = entries[0].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{path}, line {lineno}: token is not valid UTF-8 ({exc})"
                ) from None
            values = entries[1:]
            if dim is None:
                dim = len(values)
                if dim == 0:
                    raise ValueError(f"{path}, line {lineno}: token {word!r} has no vector")
            elif len(values) != dim:
                raise ValueError(
                    f"{path}, line {lineno}: vector for {word!r} has {len(values)} dimensions, "
                    f"but previous rows have {dim}"
                )
            try:
                vec = [float(x) for x in values]
            except ValueError:
                raise ValueError(f"{path}, line {lineno}: non-numeric vector entry") from None
            itos.append(word)
            rows.append(vec)
    if dim is None:
        raise ValueError(f"{path}: no vectors found")
    return itos, np.asarray(rows, dtype=np.float32).reshape(len(rows), dim)
