"""Penn Treebank and WikiText-2 (plain text, one sentence or paragraph per line)."""

from __future__ import annotations

import os
from typing import Any

from .._dataset import LanguageModelingDataset
from .._field import Field
from .._iterator import BPTTIterator
from ._common import require_files


class _LMDataset(LanguageModelingDataset):
    name = ""
    dirname = ""
    files: tuple[str, str, str] = ("", "", "")

    @classmethod
    def splits(
        cls,
        text_field: Field,
        root: str = ".data",
        train: str | None = None,
        validation: str | None = None,
        test: str | None = None,
        **kwargs: Any,
    ) -> tuple:
        names = [
            cls.files[0] if train is None else train,
            cls.files[1] if validation is None else validation,
            cls.files[2] if test is None else test,
        ]
        path = (
            os.path.join(root, cls.name, cls.dirname)
            if cls.dirname
            else os.path.join(root, cls.name)
        )
        require_files(cls.__name__, path, names)
        return tuple(cls(os.path.join(path, n), text_field, **kwargs) for n in names)

    @classmethod
    def iters(
        cls,
        batch_size: int = 32,
        bptt_len: int = 35,
        device: Any = None,
        root: str = ".data",
        vectors: Any = None,
        **kwargs: Any,
    ) -> tuple:
        text = Field()
        train, val, test = cls.splits(text, root=root, **kwargs)
        text.build_vocab(train, vectors=vectors)
        return BPTTIterator.splits(
            (train, val, test), batch_size=batch_size, bptt_len=bptt_len, device=device
        )


class PennTreebank(_LMDataset):
    """Mikolov's PTB: ``<root>/penn-treebank/ptb.{train,valid,test}.txt``."""

    name = "penn-treebank"
    dirname = ""
    files = ("ptb.train.txt", "ptb.valid.txt", "ptb.test.txt")


class WikiText2(_LMDataset):
    """WikiText-2: ``<root>/wikitext-2/wikitext-2/wiki.{train,valid,test}.tokens``."""

    name = "wikitext-2"
    dirname = "wikitext-2"
    files = ("wiki.train.tokens", "wiki.valid.tokens", "wiki.test.tokens")
