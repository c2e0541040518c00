"""Fields: how a column of raw data becomes a tensor (torchtext's classic ``data.Field``)."""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from itertools import chain
from typing import Any

import numpy as np

import ember.tensor as et

from ._utils import get_tokenizer
from ._vocab import Vocab

__all__ = ["Field", "LabelField", "NestedField", "RawField"]


def _np_dtype(dtype: Any) -> np.dtype:
    np_dtype = getattr(dtype, "np", None)
    if np_dtype is not None:
        return np.dtype(np_dtype)
    return et.empty(0, dtype=dtype).numpy().dtype


def _as_tensor(arr: np.ndarray, dtype: Any, device: Any) -> et.Tensor:
    arr = np.ascontiguousarray(arr, dtype=_np_dtype(dtype))
    t = et.from_numpy(arr)
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    return t


class RawField:
    """A field that keeps its data as given, with optional pre- and post-processing.

    ``preprocessing(x)`` runs on each value when an Example is built;
    ``postprocessing(batch)`` runs on the list of values of a batch.
    """

    def __init__(
        self,
        preprocessing: Callable | None = None,
        postprocessing: Callable | None = None,
        is_target: bool = False,
    ):
        self.preprocessing = preprocessing
        self.postprocessing = postprocessing
        self.is_target = is_target

    def preprocess(self, x: Any) -> Any:
        if self.preprocessing is not None:
            return self.preprocessing(x)
        return x

    def process(self, batch: list, *args: Any, **kwargs: Any) -> Any:
        if self.postprocessing is not None:
            batch = self.postprocessing(batch)
        return batch


class Field(RawField):
    """Tokenize, lower-case, build a vocabulary, pad and numericalize one kind of data.

    Padding (``pad``) follows torchtext exactly: every sequence is cut to
    ``fix_length - (#init/eos tokens)`` (from the front with ``truncate_first``), wrapped in
    ``init_token`` / ``eos_token``, and filled with ``pad_token`` up to the longest in the
    batch or to ``fix_length`` (on the left with ``pad_first``).

    >>> f = Field(init_token="<s>", eos_token="</s>")
    >>> f.pad([["a", "b", "c"], ["d"]])
    [['<s>', 'a', 'b', 'c', '</s>'], ['<s>', 'd', '</s>', '<pad>', '<pad>']]
    """

    vocab_cls = Vocab

    def __init__(
        self,
        sequential: bool = True,
        use_vocab: bool = True,
        init_token: str | None = None,
        eos_token: str | None = None,
        fix_length: int | None = None,
        dtype: Any = et.int64,
        preprocessing: Callable | None = None,
        postprocessing: Callable | None = None,
        lower: bool = False,
        tokenize: Any = None,
        tokenizer_language: str = "en",
        include_lengths: bool = False,
        batch_first: bool = False,
        pad_token: str | None = "<pad>",
        unk_token: str | None = "<unk>",
        pad_first: bool = False,
        truncate_first: bool = False,
        stop_words: Iterable[str] | None = None,
        is_target: bool = False,
    ):
        super().__init__(preprocessing, postprocessing, is_target)
        self.sequential = sequential
        self.use_vocab = use_vocab
        self.init_token = init_token
        self.eos_token = eos_token
        self.unk_token = unk_token
        self.fix_length = fix_length
        self.dtype = dtype
        self.lower = lower
        self.tokenizer_args = (tokenize, tokenizer_language)
        self.tokenize = get_tokenizer(tokenize, tokenizer_language)
        self.include_lengths = include_lengths
        self.batch_first = batch_first
        self.pad_token = pad_token if self.sequential else None
        self.pad_first = pad_first
        self.truncate_first = truncate_first
        try:
            self.stop_words = set(stop_words) if stop_words is not None else None
        except TypeError:
            raise ValueError("Field: stop_words must be convertible to a set") from None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RawField):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = object.__hash__

    def preprocess(self, x: Any) -> Any:
        """Tokenize (if sequential and a string), lower-case, drop stop words, then apply
        ``preprocessing``."""
        if self.sequential and isinstance(x, str):
            x = self.tokenize(x.rstrip("\n"))
        if self.lower:
            x = x.lower() if isinstance(x, str) else [w.lower() for w in x]
        if self.sequential and self.use_vocab and self.stop_words is not None:
            x = [w for w in x if w not in self.stop_words]
        if self.preprocessing is not None:
            return self.preprocessing(x)
        return x

    def process(self, batch: list, device: Any = None) -> Any:
        """Pad then numericalize a list of preprocessed examples."""
        return self.numericalize(self.pad(batch), device=device)

    def pad(self, minibatch: Iterable[list]) -> Any:
        minibatch = list(minibatch)
        if not self.sequential:
            return minibatch
        if self.fix_length is None:
            max_len = max((len(x) for x in minibatch), default=0)
        else:
            max_len = self.fix_length + (self.init_token, self.eos_token).count(None) - 2
        head = [] if self.init_token is None else [self.init_token]
        tail = [] if self.eos_token is None else [self.eos_token]
        pad_token = self.pad_token
        padded, lengths = [], []
        for x in minibatch:
            body = list(x[-max_len:] if self.truncate_first else x[:max_len]) if max_len > 0 else []
            n_pad = max(0, max_len - len(x))
            if self.pad_first:
                padded.append([pad_token] * n_pad + head + body + tail)
            else:
                padded.append(head + body + tail + [pad_token] * n_pad)
            lengths.append(len(head) + len(body) + len(tail))
        if self.include_lengths:
            return padded, lengths
        return padded

    def build_vocab(self, *args: Any, **kwargs: Any) -> None:
        """Count tokens from Datasets (their columns that use this field) or iterables of
        examples, and build ``self.vocab``; keyword arguments go to ``Vocab``."""
        from ._dataset import Dataset

        counter: Counter = Counter()
        sources: list[Iterable] = []
        for arg in args:
            if isinstance(arg, Dataset):
                sources += [
                    getattr(arg, name) for name, field in arg.fields.items() if field is self
                ]
            else:
                sources.append(arg)
        for data in sources:
            for x in data:
                if not self.sequential:
                    x = [x]
                try:
                    counter.update(x)
                except TypeError:
                    counter.update(chain.from_iterable(x))
        specials = list(
            OrderedDict.fromkeys(
                tok
                for tok in [self.unk_token, self.pad_token, self.init_token, self.eos_token]
                + list(kwargs.pop("specials", []))
                if tok is not None
            )
        )
        self.vocab = self.vocab_cls(counter, specials=specials, **kwargs)

    def numericalize(self, arr: Any, device: Any = None) -> Any:
        """Turn a padded batch into a tensor: (seq_len, batch), or (batch, seq_len) with
        ``batch_first``; with ``include_lengths`` a pair (tensor, lengths)."""
        if self.include_lengths and not isinstance(arr, tuple):
            raise ValueError(
                "Field has include_lengths set to True, but input data is not a tuple of "
                "(data batch, batch lengths)."
            )
        lengths = None
        if isinstance(arr, tuple):
            arr, lengths = arr
            lengths = _as_tensor(np.asarray(lengths, dtype=np.int64), self.dtype, device)
        if self.use_vocab:
            if not hasattr(self, "vocab"):
                raise RuntimeError("Field.numericalize: call build_vocab before numericalize")
            stoi = self.vocab.stoi
            if self.sequential:
                arr = [[stoi[x] for x in ex] for ex in arr]
            else:
                arr = [stoi[x] for x in arr]
            if self.postprocessing is not None:
                arr = self.postprocessing(arr, self.vocab)
        else:
            if not self.sequential:
                np_kind = _np_dtype(self.dtype).kind
                conv = float if np_kind == "f" else int
                arr = [conv(x) if isinstance(x, str) else x for x in arr]
            if self.postprocessing is not None:
                arr = self.postprocessing(arr, None)
        if self.sequential and isinstance(arr, list) and arr and isinstance(arr[0], list):
            width = len(arr[0])
            if any(len(row) != width for row in arr):
                raise ValueError(
                    "Field.numericalize: sequences in a batch must be padded to one length"
                )
            flat = (
                np.fromiter(
                    chain.from_iterable(arr), dtype=_np_dtype(self.dtype), count=len(arr) * width
                )
                if width
                else np.zeros(0, _np_dtype(self.dtype))
            )
            data = flat.reshape(len(arr), width)
        else:
            data = np.asarray(arr, dtype=_np_dtype(self.dtype))
        if self.sequential and not self.batch_first and data.ndim >= 2:
            data = data.T
        var = _as_tensor(data, self.dtype, device)
        if self.include_lengths:
            return var, lengths
        return var


class LabelField(Field):
    """A non-sequential Field for labels: no ``<unk>``, no padding, ``is_target=True``.

    Its vocabulary maps the labels to 0..n-1 by descending frequency.
    """

    def __init__(self, **kwargs: Any):
        kwargs["sequential"] = False
        kwargs["unk_token"] = None
        kwargs["is_target"] = True
        super().__init__(**kwargs)


class NestedField(Field):
    """A field of sequences of sequences (words of characters), padded on both levels.

    ``numericalize`` returns (batch, max_words, max_chars); with ``include_lengths`` also the
    sentence lengths and the per-word lengths (0 for padding words).
    """

    def __init__(
        self,
        nesting_field: Field,
        use_vocab: bool = True,
        init_token: str | None = None,
        eos_token: str | None = None,
        fix_length: int | None = None,
        dtype: Any = et.int64,
        preprocessing: Callable | None = None,
        postprocessing: Callable | None = None,
        tokenize: Any = None,
        tokenizer_language: str = "en",
        include_lengths: bool = False,
        pad_token: str | None = "<pad>",
        pad_first: bool = False,
        truncate_first: bool = False,
    ):
        if isinstance(nesting_field, NestedField):
            raise ValueError("nesting field must not be another NestedField")
        if nesting_field.include_lengths:
            raise ValueError("nesting field cannot have include_lengths=True")
        if nesting_field.sequential:
            pad_token = nesting_field.pad_token
        super().__init__(
            use_vocab=use_vocab,
            init_token=init_token,
            eos_token=eos_token,
            fix_length=fix_length,
            dtype=dtype,
            preprocessing=preprocessing,
            postprocessing=postprocessing,
            lower=nesting_field.lower,
            tokenize=tokenize,
            tokenizer_language=tokenizer_language,
            batch_first=True,
            pad_token=pad_token,
            unk_token=nesting_field.unk_token,
            pad_first=pad_first,
            truncate_first=truncate_first,
            include_lengths=include_lengths,
        )
        self.nesting_field = nesting_field
        self.nesting_field.batch_first = True

    def preprocess(self, xs: Any) -> Any:
        return [self.nesting_field.preprocess(x) for x in super().preprocess(xs)]

    def pad(self, minibatch: Iterable[list]) -> Any:
        minibatch = list(minibatch)
        inner = self.nesting_field
        if not inner.sequential:
            return super().pad(minibatch)
        if inner.fix_length is None:
            max_len = max((len(xs) for ex in minibatch for xs in ex), default=0)
            word_len = max_len + 2 - (inner.init_token, inner.eos_token).count(None)
        else:
            word_len = inner.fix_length
        outer = Field.__new__(Field)
        outer.__dict__.update(self.__dict__)
        outer.include_lengths = True
        outer.pad_token = _PAD_WORD
        outer.init_token = None if self.init_token is None else [self.init_token]
        outer.eos_token = None if self.eos_token is None else [self.eos_token]
        padded_words, sentence_lengths = Field.pad(outer, minibatch)
        inner_copy = Field.__new__(Field)
        inner_copy.__dict__.update(inner.__dict__)
        inner_copy.fix_length = word_len
        inner_copy.include_lengths = True
        pad_row = [self.pad_token] * word_len
        padded, word_lengths = [], []
        for ex in padded_words:
            rows, lens = [], []
            for word in ex:
                if word is _PAD_WORD:
                    rows.append(list(pad_row))
                    lens.append(0)
                else:
                    (row,), (n,) = Field.pad(inner_copy, [word])
                    rows.append(row)
                    lens.append(n)
            padded.append(rows)
            word_lengths.append(lens)
        if self.include_lengths:
            return padded, sentence_lengths, word_lengths
        return padded

    def build_vocab(self, *args: Any, **kwargs: Any) -> None:
        from ._dataset import Dataset

        sources: list[Iterable] = []
        for arg in args:
            if isinstance(arg, Dataset):
                sources += [
                    getattr(arg, name) for name, field in arg.fields.items() if field is self
                ]
            else:
                sources.append(arg)
        flattened: list = []
        for source in sources:
            flattened.extend(source)
        vectors = kwargs.pop("vectors", None)
        unk_init = kwargs.pop("unk_init", None)
        vectors_cache = kwargs.pop("vectors_cache", None)
        self.nesting_field.build_vocab(*flattened, **kwargs)
        super().build_vocab()
        self.vocab.extend(self.nesting_field.vocab)
        self.vocab.freqs = self.nesting_field.vocab.freqs.copy()
        if vectors is not None:
            self.vocab.load_vectors(vectors, unk_init=unk_init, cache=vectors_cache)
        self.nesting_field.vocab = self.vocab

    def numericalize(self, arrs: Any, device: Any = None) -> Any:
        sentence_lengths = word_lengths = None
        if self.include_lengths:
            if not (isinstance(arrs, tuple) and len(arrs) == 3):
                raise ValueError(
                    "NestedField has include_lengths set to True, but input data is not a "
                    "tuple of (data batch, sentence lengths, word lengths)."
                )
            arrs, sentence_lengths, word_lengths = arrs
        inner = Field.__new__(Field)
        inner.__dict__.update(self.nesting_field.__dict__)
        inner.include_lengths = False
        inner.batch_first = True
        numericalized = [inner.numericalize(arr, device=None).numpy() for arr in arrs]
        padded_batch = _as_tensor(np.stack(numericalized), self.dtype, device)
        if self.include_lengths:
            return (
                padded_batch,
                _as_tensor(np.asarray(sentence_lengths, np.int64), self.dtype, device),
                _as_tensor(np.asarray(word_lengths, np.int64), self.dtype, device),
            )
        return padded_batch


class _PadWord(list):
    """Marker for a padding position at the word level of a NestedField."""

    def __reduce__(self):
        return (_pad_word, ())


def _pad_word() -> _PadWord:
    return _PAD_WORD


_PAD_WORD = _PadWord()
