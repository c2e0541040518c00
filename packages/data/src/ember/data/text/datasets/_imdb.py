"""IMDB movie reviews from the aclImdb folder layout."""

from __future__ import annotations

import os
from typing import Any

from .._dataset import Dataset
from .._example import Example
from .._field import Field
from ._common import require_files


class IMDB(Dataset):
    """Reviews labelled ``pos`` / ``neg``: ``<root>/imdb/aclImdb/<split>/{pos,neg}/*.txt``.

    Files are read in sorted order (``pos`` first), so the dataset is the same on every run.
    """

    name = "imdb"
    dirname = "aclImdb"

    @staticmethod
    def sort_key(ex: Any) -> int:
        return len(ex.text)

    def __init__(self, path: str, text_field: Field, label_field: Field, **kwargs: Any):
        require_files("IMDB", path, ["pos", "neg"])
        fields = [("text", text_field), ("label", label_field)]
        examples = []
        for label in ("pos", "neg"):
            folder = os.path.join(path, label)
            for fname in sorted(os.listdir(folder)):
                if not fname.endswith(".txt"):
                    continue
                full = os.path.join(folder, fname)
                try:
                    with open(full, encoding="utf-8") as f:
                        text = f.read()
                except UnicodeDecodeError as exc:
                    raise ValueError(f"{full}, line 1: undecodable bytes ({exc.reason})") from None
                examples.append(Example.fromlist([text, label], fields))
        super().__init__(examples, fields, **kwargs)

    @classmethod
    def splits(
        cls,
        text_field: Field,
        label_field: Field,
        root: str = ".data",
        train: str | None = "train",
        test: str | None = "test",
        **kwargs: Any,
    ) -> tuple:
        path = os.path.join(root, cls.name, cls.dirname)
        require_files("IMDB", path, [s for s in (train, test) if s is not None])
        return tuple(
            cls(os.path.join(path, s), text_field, label_field, **kwargs)
            for s in (train, test)
            if s is not None
        )
