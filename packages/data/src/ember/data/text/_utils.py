"""Tokenizers, the ``batch`` / ``pool`` helpers and ``interleave_keys`` (torchtext's data.utils)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = [
    "RandomShuffler",
    "batch",
    "get_tokenizer",
    "interleave_keys",
    "is_tokenizer_serializable",
    "pool",
]


def _split_tokenizer(x: str) -> list[str]:
    return x.split()


_BASIC_ENGLISH_PATTERNS = [
    (re.compile(r"\'"), " '  "),
    (re.compile(r"\""), ""),
    (re.compile(r"\."), " . "),
    (re.compile(r"<br \/>"), " "),
    (re.compile(r","), " , "),
    (re.compile(r"\("), " ( "),
    (re.compile(r"\)"), " ) "),
    (re.compile(r"\!"), " ! "),
    (re.compile(r"\?"), " ? "),
    (re.compile(r"\;"), " "),
    (re.compile(r"\:"), " "),
    (re.compile(r"\s+"), " "),
]


def _basic_english_normalize(line: str) -> list[str]:
    """torchtext's ``basic_english``: lower-case, split off punctuation, drop quotes.

    >>> _basic_english_normalize("Hello, World!")
    ['hello', ',', 'world', '!']
    """
    line = line.lower()
    for pattern, replacement in _BASIC_ENGLISH_PATTERNS:
        line = pattern.sub(replacement, line)
    return line.split()


class _SpacyTokenizer:
    """Picklable wrapper: pickles the language name and reloads the model on unpickling."""

    def __init__(self, language: str):
        self.language = language
        self._load()

    def _load(self) -> None:
        import spacy

        try:
            self._nlp = spacy.load(self.language)
        except OSError:
            self._nlp = spacy.blank(self.language)

    def __call__(self, text: str) -> list[str]:
        return [tok.text for tok in self._nlp.tokenizer(text)]

    def __getstate__(self) -> dict:
        return {"language": self.language}

    def __setstate__(self, state: dict) -> None:
        self.language = state["language"]
        self._load()


def get_tokenizer(tokenizer: Any, language: str = "en") -> Callable[[str], list[str]]:
    """Return a tokenizer: ``None`` splits on whitespace, ``"basic_english"`` normalizes,
    ``"spacy"`` uses spaCy when installed, and a callable is returned as is.

    >>> get_tokenizer("basic_english")("Don't panic.")
    ['don', "'", 't', 'panic', '.']
    """
    if tokenizer is None:
        return _split_tokenizer
    if callable(tokenizer):
        return tokenizer
    if tokenizer == "basic_english":
        if language != "en":
            raise ValueError("basic_english normalization only supports the language 'en'")
        return _basic_english_normalize
    if tokenizer == "spacy":
        try:
            import spacy  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "get_tokenizer('spacy') needs spaCy: pip install spacy (and a language model)"
            ) from exc
        return _SpacyTokenizer(language)
    raise ValueError(
        f"get_tokenizer: unknown tokenizer {tokenizer!r}; use None, 'basic_english', "
        "'spacy' or a callable"
    )


def is_tokenizer_serializable(tokenizer: Any, language: str = "en") -> bool:
    """True when the tokenizer object can be pickled as is (all built-in ones can)."""
    return True


def interleave_keys(a: int, b: int) -> int:
    """Interleave the bits of two 16-bit keys into one sort key (torchtext's helper).

    Sorting by the result sorts by both lengths at once, so pairs of similar lengths meet.

    >>> interleave_keys(3, 1)
    11
    """

    def interleave(args: Iterable[str]) -> str:
        return "".join(x for t in zip(*args) for x in t)

    return int("".join(interleave(format(x, "016b") for x in (a, b))), base=2)


def _count_batch_size(new: Any, count: int, sofar: int) -> int:
    return count


def batch(
    data: Iterable[Any],
    batch_size: int,
    batch_size_fn: Callable[[Any, int, int], int] | None = None,
) -> Iterator[list[Any]]:
    """Yield lists of ``batch_size`` consecutive items (the last may be shorter).

    ``batch_size_fn(new, count, sofar)`` gives the effective size of a batch as it grows;
    an item that would push it past ``batch_size`` starts the next batch.

    >>> list(batch(range(5), 2))
    [[0, 1], [2, 3], [4]]
    """
    if batch_size_fn is None:
        batch_size_fn = _count_batch_size
    minibatch: list[Any] = []
    size_so_far = 0
    for ex in data:
        minibatch.append(ex)
        size_so_far = batch_size_fn(ex, len(minibatch), size_so_far)
        if size_so_far == batch_size:
            yield minibatch
            minibatch, size_so_far = [], 0
        elif size_so_far > batch_size:
            if len(minibatch) > 1:
                yield minibatch[:-1]
            else:  # a single item larger than batch_size still forms its own batch
                yield minibatch
                minibatch, size_so_far = [], 0
                continue
            minibatch, size_so_far = minibatch[-1:], batch_size_fn(ex, 1, 0)
    if minibatch:
        yield minibatch


class RandomShuffler:
    """Shuffles with its own ``random.Random`` state, seeded from Python's global RNG.

    ``random.seed(s)`` before building an iterator pins its order, as in torchtext; the
    state (``random_state``) is a plain tuple, so it goes into an iterator's ``state_dict``.
    """

    def __init__(self, random_state: tuple | None = None):
        self._rng = random.Random()
        self._rng.setstate(random.getstate() if random_state is None else random_state)

    @property
    def random_state(self) -> tuple:
        return self._rng.getstate()

    @random_state.setter
    def random_state(self, state: tuple) -> None:
        self._rng.setstate(state)

    def __call__(self, data: Iterable[Any]) -> list[Any]:
        data = list(data)
        return self._rng.sample(data, len(data))


def pool(
    data: Iterable[Any],
    batch_size: int,
    key: Callable[[Any], Any],
    batch_size_fn: Callable[[Any, int, int], int] | None = None,
    random_shuffler: Callable[[list], list] | None = None,
    shuffle: bool = False,
    sort_within_batch: bool = False,
) -> Iterator[list[Any]]:
    """Sort within buckets, then batch, then shuffle batches (torchtext's ``pool``).

    Cuts ``data`` into chunks of ``100 * batch_size`` items, sorts each chunk by ``key``,
    batches it, and yields the chunk's batches in shuffled order when ``shuffle``. Each chunk
    is always sorted, as torchtext documents (its 0.4+ code sorted only when
    ``sort_within_batch``, which silently disabled bucketing); ``sort_within_batch`` is kept
    for signature compatibility, the order inside a batch is the iterator's business.

    >>> [b for b in pool([3, 1, 2, 5, 4], 2, key=int)]
    [[1, 2], [3, 4], [5]]
    """
    if random_shuffler is None:
        random_shuffler = RandomShuffler()
    for chunk in batch(data, batch_size * 100, batch_size_fn):
        chunk_batches = list(batch(sorted(chunk, key=key), batch_size, batch_size_fn))
        if shuffle:
            chunk_batches = random_shuffler(chunk_batches)
        yield from chunk_batches
