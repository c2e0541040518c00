import pickle
import random
from collections import Counter

import numpy as np
import pytest

import ember.tensor as et
from ember.data.text import (
    Dataset,
    Example,
    Field,
    LabelField,
    NestedField,
    RawField,
    Vocab,
    get_tokenizer,
)


def test_pad_plain_batch_to_longest():
    f = Field()
    assert f.pad([["a", "b", "c"], ["d"]]) == [["a", "b", "c"], ["d", "<pad>", "<pad>"]]


def test_pad_init_eos_and_lengths():
    f = Field(init_token="<s>", eos_token="</s>", include_lengths=True)
    padded, lengths = f.pad([["a", "b", "c"], ["d"]])
    assert padded == [["<s>", "a", "b", "c", "</s>"], ["<s>", "d", "</s>", "<pad>", "<pad>"]]
    assert lengths == [5, 3]


def test_pad_fix_length_truncates_and_counts_init_eos():
    # torchtext: fix_length includes init/eos; the body is cut to fix_length - 2
    f = Field(init_token="<s>", eos_token="</s>", fix_length=4)
    assert f.pad([["a", "b", "c"], ["d"]]) == [
        ["<s>", "a", "b", "</s>"],
        ["<s>", "d", "</s>", "<pad>"],
    ]
    f = Field(fix_length=3, truncate_first=True)
    assert f.pad([["a", "b", "c", "d"], ["e"]]) == [["b", "c", "d"], ["e", "<pad>", "<pad>"]]


def test_pad_first():
    f = Field(pad_first=True, init_token="<s>", include_lengths=True)
    padded, lengths = f.pad([["a", "b"], ["c"]])
    assert padded == [["<s>", "a", "b"], ["<pad>", "<s>", "c"]]
    assert lengths == [3, 2]


def test_non_sequential_pad_is_identity_and_has_no_pad_token():
    f = Field(sequential=False)
    assert f.pad(["x", "y"]) == ["x", "y"]
    assert f.pad_token is None


def test_preprocess_tokenize_lower_stop_words_and_preprocessing():
    f = Field(lower=True, stop_words={"the"}, preprocessing=list.copy)
    assert f.preprocess("The Cat sat\n") == ["cat", "sat"]
    f2 = Field(tokenize="basic_english")
    assert f2.preprocess("Hello, World!") == ["hello", ",", "world", "!"]
    assert Field(sequential=False, lower=True).preprocess("POS") == "pos"


def test_get_tokenizer_forms():
    assert get_tokenizer(None)("a  b\tc") == ["a", "b", "c"]
    assert get_tokenizer(str.split) is str.split
    assert get_tokenizer("basic_english")("It's <br />fine.") == ["it", "'", "s", "fine", "."]
    with pytest.raises(ValueError, match="unknown tokenizer"):
        get_tokenizer("no-such-tokenizer")


def test_vocab_ordering_frequency_then_alphabetical_specials_first():
    c = Counter({"b": 2, "a": 2, "c": 5, "d": 1, "<pad>": 9})
    v = Vocab(c, specials=["<unk>", "<pad>"])
    assert v.itos == ["<unk>", "<pad>", "c", "a", "b", "d"]
    assert v.stoi["a"] == 3 and v["never-seen"] == 0
    assert "never-seen" not in v.stoi  # lookups do not grow the vocabulary
    v2 = Vocab(c, specials=["<unk>", "<pad>"], specials_first=False)
    assert v2.itos == ["c", "a", "b", "d", "<unk>", "<pad>"]
    assert v2.stoi["zzz"] == 4


def test_vocab_max_size_min_freq_and_no_unk():
    c = Counter({"b": 2, "a": 2, "c": 5, "d": 1})
    assert Vocab(c, max_size=2).itos == ["<unk>", "<pad>", "c", "a"]
    assert Vocab(c, min_freq=2).itos == ["<unk>", "<pad>", "c", "a", "b"]
    v = Vocab(c, specials=["<pad>"])
    with pytest.raises(KeyError):
        v.stoi["zzz"]
    assert v.lookup_indices(["c", "d"]) == [1, 4]


def test_vocab_extend():
    v = Vocab(Counter("a a b".split()))
    v.extend(Vocab(Counter("z b y".split()), specials=[]), sort=True)
    assert v.itos == ["<unk>", "<pad>", "a", "b", "y", "z"]
    assert v.stoi["z"] == 5


def test_build_vocab_from_dataset_and_specials_order():
    text = Field(init_token="<s>", eos_token="</s>")
    label = LabelField()
    fields = [("text", text), ("label", label)]
    exs = [Example.fromlist(d, fields) for d in [("b a a", "pos"), ("c b a", "neg"), ("a", "pos")]]
    ds = Dataset(exs, fields)
    text.build_vocab(ds)
    label.build_vocab(ds)
    assert text.vocab.itos == ["<unk>", "<pad>", "<s>", "</s>", "a", "b", "c"]
    assert text.vocab.freqs["a"] == 4
    assert label.vocab.itos == ["pos", "neg"]


def _toy():
    text = Field(include_lengths=True)
    label = LabelField()
    fields = [("text", text), ("label", label)]
    exs = [Example.fromlist(d, fields) for d in [("a b c", "x"), ("b c", "y"), ("c", "x")]]
    ds = Dataset(exs, fields)
    text.build_vocab(ds)
    label.build_vocab(ds)
    return text, label, ds


def test_numericalize_shapes_batch_first_and_lengths():
    text, label, ds = _toy()
    data, lengths = text.process([ex.text for ex in ds])
    assert tuple(data.shape) == (3, 3)  # (seq_len, batch)
    assert data.dtype == et.int64
    c, b, a, pad = (text.vocab.stoi[t] for t in ("c", "b", "a", "<pad>"))
    assert data.numpy().tolist() == [[a, b, c], [b, c, pad], [c, pad, pad]]
    assert lengths.tolist() == [3, 2, 1]
    text.batch_first = True
    data, _ = text.process([ex.text for ex in ds])
    assert data.numpy().tolist() == [[a, b, c], [b, c, pad], [c, pad, pad]]  # symmetric toy batch
    assert data.numpy()[2].tolist() == [c, pad, pad]  # row = example with batch_first
    lab = label.process([ex.label for ex in ds])
    assert lab.tolist() == [0, 1, 0]


def test_numericalize_requires_tuple_with_include_lengths():
    text, _, _ = _toy()
    with pytest.raises(ValueError, match="include_lengths"):
        text.numericalize([["a"]])


def test_numericalize_without_vocab_float_labels_and_postprocessing():
    f = Field(sequential=False, use_vocab=False, dtype=et.float32)
    t = f.process(["1.5", "2", 3.0])
    assert t.dtype == et.float32 and t.tolist() == [1.5, 2.0, 3.0]


def test_nested_field_pads_words_and_chars():
    chars = Field(tokenize=list, init_token="<w>", eos_token="</w>")
    nested = NestedField(chars, init_token="<s>", eos_token="</s>", include_lengths=True)
    fields = [("words", nested)]
    exs = [Example.fromlist([s], fields) for s in ["ab c", "d"]]
    nested.build_vocab(Dataset(exs, fields))
    assert nested.vocab is chars.vocab
    padded, sent_lens, word_lens = nested.pad([ex.words for ex in exs])
    p = "<pad>"
    assert padded[1] == [
        ["<w>", "<s>", "</w>", p],
        ["<w>", "d", "</w>", p],
        ["<w>", "</s>", "</w>", p],
        [p, p, p, p],
    ]
    assert padded[0][1] == ["<w>", "a", "b", "</w>"]
    assert sent_lens == [4, 3]
    assert word_lens == [[3, 4, 3, 3], [3, 3, 3, 0]]
    data, sl, wl = nested.numericalize((padded, sent_lens, word_lens))
    assert tuple(data.shape) == (2, 4, 4)
    assert sl.tolist() == [4, 3] and wl.tolist() == word_lens
    assert data.numpy()[1, 3].tolist() == [nested.vocab.stoi[p]] * 4


def test_nested_field_rejects_nesting_and_lengths():
    with pytest.raises(ValueError):
        NestedField(NestedField(Field()))
    with pytest.raises(ValueError):
        NestedField(Field(include_lengths=True))


def test_raw_field():
    f = RawField(preprocessing=str.upper, postprocessing=sorted)
    assert f.preprocess("ab") == "AB"
    assert f.process(["b", "a"]) == ["a", "b"]


def test_field_vocab_example_dataset_pickle():
    text, label, ds = _toy()
    random.seed(0)
    for obj in (text, label, text.vocab, ds[0]):
        clone = pickle.loads(pickle.dumps(obj))
        assert clone == obj
    ds2 = pickle.loads(pickle.dumps(ds))
    assert [vars(e) for e in ds2] == [vars(e) for e in ds]
    assert list(ds2.fields) == ["text", "label"]
    assert ds2.fields["text"].vocab.stoi["zzz"] == 0
    t2 = pickle.loads(pickle.dumps(Field(tokenize="basic_english")))
    assert t2.preprocess("Hi!") == ["hi", "!"]
    data, _ = ds2.fields["text"].process([ex.text for ex in ds2])
    assert np.array_equal(data.numpy(), text.process([ex.text for ex in ds])[0].numpy())
