"""Readers for classic NLP datasets from local files (ember downloads nothing).

| dataset | expected files |
| --- | --- |
| ``SNLI`` | ``<root>/snli/snli_1.0/snli_1.0_{train,dev,test}.jsonl`` |
| ``IMDB`` | ``<root>/imdb/aclImdb/{train,test}/{pos,neg}/*.txt`` |
| ``PennTreebank`` | ``<root>/penn-treebank/ptb.{train,valid,test}.txt`` |
| ``WikiText2`` | ``<root>/wikitext-2/wikitext-2/wiki.{train,valid,test}.tokens`` |
"""

from ._imdb import IMDB
from ._language_modeling import PennTreebank, WikiText2
from ._nli import SNLI, NLIDataset, ParsedTextField, ShiftReduceField

__all__ = [
    "IMDB",
    "NLIDataset",
    "ParsedTextField",
    "PennTreebank",
    "SNLI",
    "ShiftReduceField",
    "WikiText2",
]
