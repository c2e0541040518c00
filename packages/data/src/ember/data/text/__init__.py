"""ember.data.text: torchtext's classic API (Field, Vocab, Example, Dataset, iterators).

>>> from ember.data.text import Field, Example, Dataset, BucketIterator
"""

from . import datasets
from ._dataset import Dataset, LanguageModelingDataset, TabularDataset
from ._example import Example
from ._field import Field, LabelField, NestedField, RawField
from ._iterator import Batch, BPTTIterator, BucketIterator, Iterator
from ._utils import RandomShuffler, batch, get_tokenizer, interleave_keys, pool
from ._vocab import Vectors, Vocab

__all__ = [
    "BPTTIterator",
    "Batch",
    "BucketIterator",
    "Dataset",
    "Example",
    "Field",
    "Iterator",
    "LabelField",
    "LanguageModelingDataset",
    "NestedField",
    "RandomShuffler",
    "RawField",
    "TabularDataset",
    "Vectors",
    "Vocab",
    "batch",
    "datasets",
    "get_tokenizer",
    "interleave_keys",
    "pool",
]
