"""SNLI from its JSONL release, with the binary parses a SPINN model needs."""

from __future__ import annotations

import os
from typing import Any

from .._dataset import TabularDataset
from .._field import Field
from .._utils import interleave_keys
from ._common import require_files


def _parse_to_tokens(parse: list[str]) -> list[str]:
    return [t for t in parse if t not in ("(", ")")]


def _parse_to_transitions(parse: list[str]) -> list[str]:
    return ["reduce" if t == ")" else "shift" for t in parse if t != "("]


def _reverse_each(batch: list[list[int]], vocab: Any) -> list[list[int]]:
    return [list(reversed(p)) for p in batch]


def _not_unlabeled(ex: Any) -> bool:
    return ex.label != "-"


class ShiftReduceField(Field):
    """Turns a binary parse ``( ( a b ) c )`` into SPINN transitions: a word is ``shift``,
    a closing bracket ``reduce`` (``shift shift reduce shift reduce``)."""

    def __init__(self) -> None:
        super().__init__(preprocessing=_parse_to_transitions)
        self.build_vocab([["reduce"], ["shift"]])


class ParsedTextField(Field):
    """The words of a binary parse (brackets dropped), with lengths; ``reverse`` reverses
    each numericalized sequence."""

    def __init__(self, eos_token: str | None = "<pad>", lower: bool = False, reverse: bool = False):
        super().__init__(
            eos_token=eos_token,
            lower=lower,
            preprocessing=_parse_to_tokens,
            postprocessing=_reverse_each if reverse else None,
            include_lengths=True,
        )


class NLIDataset(TabularDataset):
    """Premise / hypothesis / label triples from JSON lines; unlabeled pairs (``-``) dropped."""

    name = "nli"
    dirname = ""
    files = ("train.jsonl", "val.jsonl", "test.jsonl")

    @staticmethod
    def sort_key(ex: Any) -> int:
        return interleave_keys(len(ex.premise), len(ex.hypothesis))

    @classmethod
    def splits(
        cls,
        text_field: Field,
        label_field: Field,
        parse_field: Field | None = None,
        extra_fields: dict | None = None,
        root: str = ".data",
        train: str | None = None,
        validation: str | None = None,
        test: str | None = None,
    ) -> tuple:
        train = cls.files[0] if train is None else train
        validation = cls.files[1] if validation is None else validation
        test = cls.files[2] if test is None else test
        path = os.path.join(root, cls.name, cls.dirname)
        require_files(cls.__name__, path, [f for f in (train, validation, test) if f is not None])
        if parse_field is None:
            fields: dict = {
                "sentence1": ("premise", text_field),
                "sentence2": ("hypothesis", text_field),
                "gold_label": ("label", label_field),
            }
        else:
            fields = {
                "sentence1_binary_parse": [
                    ("premise", text_field),
                    ("premise_transitions", parse_field),
                ],
                "sentence2_binary_parse": [
                    ("hypothesis", text_field),
                    ("hypothesis_transitions", parse_field),
                ],
                "gold_label": ("label", label_field),
            }
        for key, value in (extra_fields or {}).items():
            fields.setdefault(key, value)
        out = []
        for name in (train, validation, test):
            if name is not None:
                ds = cls(
                    os.path.join(path, name),
                    format="json",
                    fields=fields,
                    filter_pred=_not_unlabeled,
                )
                out.append(ds)
        return tuple(out)


class SNLI(NLIDataset):
    """The Stanford NLI corpus: ``<root>/snli/snli_1.0/snli_1.0_{train,dev,test}.jsonl``.

    With a ``parse_field`` (``ShiftReduceField()``) and ``ParsedTextField`` as the text field,
    examples carry ``premise_transitions`` / ``hypothesis_transitions`` for SPINN.
    """

    name = "snli"
    dirname = "snli_1.0"
    files = ("snli_1.0_train.jsonl", "snli_1.0_dev.jsonl", "snli_1.0_test.jsonl")
