"""Datasets of Examples (torchtext's classic ``data.Dataset`` and friends)."""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .._dataset import Dataset as _BaseDataset
from ._example import Example
from ._utils import RandomShuffler

__all__ = ["Dataset", "LanguageModelingDataset", "TabularDataset"]


class Dataset(_BaseDataset):
    """A list of Examples plus the fields that made them.

    ``dataset.<field name>`` iterates over that attribute of every example (what
    ``Field.build_vocab`` consumes). ``sort_key`` (class or instance attribute) is the default
    key of the iterators.
    """

    sort_key: Callable | None = None

    def __init__(
        self,
        examples: Iterable[Example],
        fields: Any,
        filter_pred: Callable[[Example], bool] | None = None,
    ):
        if filter_pred is not None:
            make_list = isinstance(examples, list)
            examples = filter(filter_pred, examples)
            if make_list:
                examples = list(examples)
        self.examples = examples
        self.fields = dict(fields)
        for n, f in list(self.fields.items()):
            if isinstance(n, tuple):
                self.fields.update(zip(n, f))
                del self.fields[n]

    @classmethod
    def splits(
        cls,
        path: str | None = None,
        root: str = ".data",
        train: str | None = None,
        validation: str | None = None,
        test: str | None = None,
        **kwargs: Any,
    ) -> tuple:
        """Build one dataset per split file under ``path`` (default: ``cls.download(root)``)."""
        if path is None:
            path = cls.download(root)
        out = []
        for name in (train, validation, test):
            if name is not None:
                out.append(cls(os.path.join(path, name), **kwargs))
        return tuple(out)

    @classmethod
    def download(cls, root: str, check: str | None = None) -> str:
        """Return the local folder of this dataset; ember never downloads."""
        name = getattr(cls, "name", cls.__name__.lower())
        dirname = getattr(cls, "dirname", "")
        path = os.path.join(root, name, dirname) if dirname else os.path.join(root, name)
        if not os.path.isdir(path):
            raise FileNotFoundError(
                f"{cls.__name__}: no data folder at {path!r}; ember downloads nothing, "
                f"put the files of {cls.__name__} there"
            )
        return path

    def split(
        self,
        split_ratio: float | list[float] = 0.7,
        stratified: bool = False,
        strata_field: str = "label",
        random_state: tuple | None = None,
    ) -> tuple:
        """Split into (train, test) for a float or 2-list ratio, (train, valid, test) for a
        3-list ``[train, valid, test]``; empty splits are left out. ``stratified`` keeps the
        ``strata_field`` proportions in each split. ``random_state`` is a ``random.getstate()``.
        """
        train_ratio, test_ratio, val_ratio = _check_split_ratio(split_ratio)
        rnd = RandomShuffler(random_state)
        if not stratified:
            train_data, test_data, val_data = _rationed_split(
                self.examples, train_ratio, test_ratio, val_ratio, rnd
            )
        else:
            if strata_field not in self.fields:
                raise ValueError(f"Invalid field name for strata_field {strata_field}")
            train_data, test_data, val_data = [], [], []
            for group in _stratify(self.examples, strata_field):
                g_train, g_test, g_val = _rationed_split(
                    group, train_ratio, test_ratio, val_ratio, rnd
                )
                train_data += g_train
                test_data += g_test
                val_data += g_val
        splits = tuple(Dataset(d, self.fields) for d in (train_data, val_data, test_data) if d)
        if self.sort_key:
            for subset in splits:
                subset.sort_key = self.sort_key
        return splits

    def __getitem__(self, i: int) -> Example:
        return self.examples[i]

    def __len__(self) -> int:
        try:
            return len(self.examples)
        except TypeError:
            return 2**32

    def __iter__(self) -> Iterator[Example]:
        yield from self.examples

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or "fields" not in self.__dict__:
            raise AttributeError(attr)
        if attr in self.fields:
            return (getattr(x, attr) for x in self.examples)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {attr!r}")

    def filter_examples(self, field_names: Iterable[str]) -> None:
        """Drop examples whose value is empty for any of ``field_names``."""
        names = list(field_names)
        self.examples = [ex for ex in self.examples if all(getattr(ex, n) for n in names)]


def _check_split_ratio(split_ratio: Any) -> tuple[float, float, float]:
    valid_ratio = 0.0
    if isinstance(split_ratio, float):
        if not 0.0 < split_ratio < 1.0:
            raise ValueError(f"Split ratio {split_ratio} not between 0 and 1")
        return split_ratio, 1.0 - split_ratio, valid_ratio
    if isinstance(split_ratio, (list, tuple)):
        ratios = [float(r) for r in split_ratio]
        if len(ratios) not in (2, 3):
            raise ValueError(f"Length of split ratio list should be 2 or 3, got {split_ratio}")
        total = sum(ratios)
        if total <= 0 or any(r < 0 for r in ratios):
            raise ValueError(
                f"Split ratios must be non-negative with a positive sum: {split_ratio}"
            )
        ratios = [r / total for r in ratios]
        if len(ratios) == 2:
            return ratios[0], ratios[1], valid_ratio
        train, valid, test = ratios
        return train, test, valid
    raise ValueError(f"Split ratio must be float or a list, got {type(split_ratio)}")


def _stratify(examples: list, strata_field: str) -> list[list]:
    strata: dict[Any, list] = {}
    for ex in examples:
        strata.setdefault(getattr(ex, strata_field), []).append(ex)
    return list(strata.values())


def _rationed_split(
    examples: list, train_ratio: float, test_ratio: float, val_ratio: float, rnd: RandomShuffler
) -> tuple[list, list, list]:
    n = len(examples)
    randperm = rnd(range(n))
    train_len = int(round(train_ratio * n))
    test_len = n - train_len if not val_ratio else int(round(test_ratio * n))
    indices = (
        randperm[:train_len],
        randperm[train_len : train_len + test_len],
        randperm[train_len + test_len :],
    )
    return tuple([examples[i] for i in index] for index in indices)  # type: ignore[return-value]


def _decoded_lines(f: Any, path: str, encoding: str) -> Iterator[str]:
    """Decode a binary file line by line, so an undecodable line is reported by number."""
    for lineno, raw in enumerate(f, start=1):
        try:
            yield raw.decode(encoding)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}, line {lineno}: undecodable bytes ({exc.reason})") from None


class _CsvLines:
    """Iterate csv rows with the physical line number where each row ends."""

    def __init__(self, lines: Iterable[str], path: str, **params: Any):
        self.path = path
        self.reader = csv.reader(lines, **params)

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        while True:
            try:
                row = next(self.reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise ValueError(f"{self.path}, line {self.reader.line_num}: {exc}") from None
            yield self.reader.line_num, row


def _text_lines(f: Any, path: str, encoding: str) -> Iterator[tuple[int, str]]:
    yield from enumerate(_decoded_lines(f, path, encoding), start=1)


class TabularDataset(Dataset):
    """A dataset from a CSV, TSV or JSON-lines file.

    ``fields`` is a list of ``(name, field)`` pairs, one per column (``None`` skips a
    column), or for csv/tsv with a header and for json a dict from column/key to
    ``(name, field)`` or a list of pairs. A row with the wrong number of columns, a bad JSON
    line or undecodable bytes raises ValueError naming the file and line.
    """

    def __init__(
        self,
        path: str,
        format: str,
        fields: Any,
        skip_header: bool = False,
        csv_reader_params: dict | None = None,
        encoding: str = "utf-8",
        **kwargs: Any,
    ):
        fmt = format.lower()
        if fmt not in ("csv", "tsv", "json"):
            raise ValueError(f"TabularDataset: unknown format {format!r}; use csv, tsv or json")
        path = os.path.expanduser(path)
        params = dict(csv_reader_params or {})
        if fmt == "tsv":
            params.setdefault("delimiter", "\t")
        if fmt == "csv" and "field_size_limit" not in params:
            csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
        params.pop("field_size_limit", None)
        examples: list[Example] = []
        with open(path, "rb") as f:
            if fmt == "json":
                if not isinstance(fields, dict):
                    raise TypeError("TabularDataset: json format needs fields as a dict")
                for lineno, line in _text_lines(f, path, encoding):
                    if skip_header and lineno == 1:
                        continue
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ValueError(f"{path}, line {lineno}: bad JSON ({exc.msg})") from None
                    try:
                        examples.append(Example.fromdict(obj, fields))
                    except ValueError as exc:
                        raise ValueError(f"{path}, line {lineno}: {exc}") from None
            else:
                rows = iter(_CsvLines(_decoded_lines(f, path, encoding), path, **params))
                field_to_index = None
                if isinstance(fields, dict):
                    if skip_header:
                        raise ValueError(
                            f"When using a dict to specify fields with a {fmt} file, skip_header "
                            "must be False and the file must have a header."
                        )
                    try:
                        _, header = next(rows)
                    except StopIteration:
                        raise ValueError(f"{path}: empty file, expected a header row") from None
                    missing = [k for k in fields if k not in header]
                    if missing:
                        raise ValueError(f"{path}, line 1: header lacks the columns {missing}")
                    field_to_index = {k: header.index(k) for k in fields}
                    ncols = len(header)
                else:
                    ncols = len(fields)
                    if skip_header:
                        next(rows, None)
                for lineno, row in rows:
                    if not row:
                        continue
                    if len(row) != ncols:
                        raise ValueError(
                            f"{path}, line {lineno}: expected {ncols} columns, got {len(row)}"
                        )
                    examples.append(Example.fromCSV(row, fields, field_to_index))
        if isinstance(fields, dict):
            flat: list = []
            for field in fields.values():
                if field is None:
                    continue
                if isinstance(field, list):
                    flat.extend(field)
                else:
                    flat.append(field)
            fields = flat
        super().__init__(examples, fields, **kwargs)


class LanguageModelingDataset(Dataset):
    """One long Example: the tokens of every line of a text file, ``<eos>`` after each line."""

    def __init__(
        self,
        path: str,
        text_field: Any,
        newline_eos: bool = True,
        encoding: str = "utf-8",
        **kwargs: Any,
    ):
        fields = [("text", text_field)]
        text: list[str] = []
        with open(path, "rb") as f:
            for _, line in _text_lines(f, path, encoding):
                text += text_field.preprocess(line)
                if newline_eos:
                    text.append("<eos>")
        example = Example()  # already preprocessed line by line: no second pass
        example.text = text
        super().__init__([example], fields, **kwargs)
