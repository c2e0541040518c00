import os
import pickle
import random
import shutil

import numpy as np
import pytest
from conftest import SAMPLES

import ember.tensor as et
from ember.data.text import (
    Dataset,
    Example,
    Field,
    LabelField,
    LanguageModelingDataset,
    TabularDataset,
    Vectors,
    Vocab,
)
from ember.data.text.datasets import IMDB, SNLI, PennTreebank, ShiftReduceField, WikiText2
from ember.data.text.datasets._nli import ParsedTextField

TAB = os.path.join(SAMPLES, "tabular")


def _fields():
    return Field(), LabelField(), Field(sequential=False, use_vocab=False, dtype=et.float32)


def test_tabular_tsv_csv_json_agree():
    text, label, score = _fields()
    tsv = TabularDataset(
        os.path.join(TAB, "data.tsv"), "tsv", [("text", text), ("label", label), ("score", score)]
    )
    csv_ds = TabularDataset(
        os.path.join(TAB, "data.csv"),
        "csv",
        {"text": ("text", text), "label": ("label", label), "score": ("score", score)},
    )
    json_ds = TabularDataset(
        os.path.join(TAB, "data.json"),
        "json",
        {"text": ("text", text), "label": ("label", label), "meta.score": ("score", score)},
    )
    assert len(tsv) == len(csv_ds) == len(json_ds) == 3
    assert tsv[0].text == ["hello", "world"] and tsv[1].label == "neg"
    assert csv_ds[1].text == ["a", "b,", "c"]
    assert [ex.text for ex in json_ds] == [ex.text for ex in tsv]
    assert json_ds[2].score == 2
    assert set(tsv.fields) == {"text", "label", "score"}


def test_tabular_skip_header_and_skipped_column():
    text = Field()
    ds = TabularDataset(
        os.path.join(TAB, "data.csv"),
        "csv",
        [("text", text), ("label", None), ("s", None)],
        skip_header=True,
    )
    assert len(ds) == 3 and not hasattr(ds[0], "label")


def test_tabular_wrong_column_count_names_file_and_line():
    text, label, score = _fields()
    path = os.path.join(TAB, "bad_columns.tsv")
    with pytest.raises(ValueError, match=r"bad_columns\.tsv, line 2: expected 3 columns, got 2"):
        TabularDataset(path, "tsv", [("text", text), ("label", label), ("score", score)])


def test_tabular_bad_json_and_bad_bytes_name_file_and_line():
    text, label, score = _fields()
    with pytest.raises(ValueError, match=r"bad\.json, line 2: bad JSON"):
        TabularDataset(os.path.join(TAB, "bad.json"), "json", {"text": ("text", text)})
    with pytest.raises(ValueError, match=r"bad_bytes\.tsv, line 2: undecodable"):
        TabularDataset(
            os.path.join(TAB, "bad_bytes.tsv"),
            "tsv",
            [("text", text), ("label", label), ("s", score)],
        )


def test_tabular_missing_json_key_names_line():
    with pytest.raises(ValueError, match=r"data\.json, line 1: .*nope"):
        TabularDataset(os.path.join(TAB, "data.json"), "json", {"nope": ("x", Field())})


def test_tabular_splits():
    text, label, score = _fields()
    fields = [("text", text), ("label", label), ("score", score)]
    train, test = TabularDataset.splits(
        path=TAB, train="data.tsv", test="data.tsv", format="tsv", fields=fields
    )
    assert len(train) == len(test) == 3


def test_example_fromdict_nested_lists_and_fromtree():
    f = Field()
    ex = Example.fromdict(
        {"a": [{"b": "x y"}, {"b": "z"}]}, {"a.b": ("ab", Field(sequential=False))}
    )
    assert ex.ab == ["x y", "z"]
    label = Field(sequential=False)
    ex = Example.fromtree("(3 (2 good) (4 (3 fun) film))", [("text", f), ("label", label)])
    assert ex.text == ["good", "fun", "film"] and ex.label == "3"
    subs = Example.fromtree("(3 (2 good) (4 film))", [("text", f), ("label", label)], subtrees=True)
    assert [(e.text, e.label) for e in subs] == [
        (["good", "film"], "3"),
        (["good"], "2"),
        (["film"], "4"),
    ]
    with pytest.raises(ValueError):
        Example.fromtree("(3 (2 good)", [("text", f), ("label", label)])


def test_example_fromlist_tuple_names_share_a_value():
    a, b = Field(), Field(lower=True)
    ex = Example.fromlist(["Hi There"], [(("raw", "low"), (a, b))])
    assert ex.raw == ["Hi", "There"] and ex.low == ["hi", "there"]
    ds = Dataset([ex], [(("raw", "low"), (a, b))])
    assert set(ds.fields) == {"raw", "low"}


def _labeled(n_pos=10, n_neg=20):
    text, label = Field(), LabelField()
    fields = [("text", text), ("label", label)]
    exs = [
        Example.fromlist([f"w{i}", "pos" if i < n_pos else "neg"], fields)
        for i in range(n_pos + n_neg)
    ]
    return Dataset(exs, fields)


def test_split_ratios_and_stratification_with_fixed_state():
    ds = _labeled()
    random.seed(3)
    state = random.getstate()
    train, test = ds.split(0.7, random_state=state)
    assert (len(train), len(test)) == (21, 9)
    again, _ = ds.split(0.7, random_state=state)
    assert [e.text for e in again] == [e.text for e in train]
    train, valid, test = ds.split([0.6, 0.2, 0.2], random_state=state)
    assert (len(train), len(valid), len(test)) == (18, 6, 6)
    train, valid, test = ds.split([0.6, 0.2, 0.2], stratified=True, random_state=state)
    assert sum(e.label == "pos" for e in train) == 6 and sum(e.label == "pos" for e in test) == 2
    seen = sorted(e.text[0] for d in (train, valid, test) for e in d)
    assert seen == sorted(e.text[0] for e in ds)
    with pytest.raises(ValueError):
        ds.split(1.5)
    with pytest.raises(ValueError, match="strata_field"):
        ds.split(0.5, stratified=True, strata_field="nope")


def test_filter_pred_and_getattr_column():
    ds = _labeled(2, 1)
    only_pos = Dataset(ds.examples, ds.fields, filter_pred=lambda e: e.label == "pos")
    assert len(only_pos) == 2
    assert list(ds.label) == ["pos", "pos", "neg"]
    with pytest.raises(AttributeError):
        ds.nonexistent  # noqa: B018


def test_language_modeling_dataset_adds_eos():
    text = Field(lower=True)
    ds = LanguageModelingDataset(os.path.join(SAMPLES, "penn-treebank", "ptb.valid.txt"), text)
    assert ds[0].text == ["the", "cat", "ate", "<eos>", "a", "dog", "sat", "<eos>"]


def test_vectors_glove_cache_and_vocab_load(tmp_path):
    src = tmp_path / "glove.tiny.txt"
    shutil.copy(os.path.join(SAMPLES, "vectors", "glove.tiny.txt"), src)
    v = Vectors(str(src))
    assert v.dim == 3 and len(v) == 4
    cache = tmp_path / "glove.tiny.txt.npz"
    assert cache.exists()
    with np.load(cache, allow_pickle=False) as z:  # a safe format: no pickle needed
        assert z["vectors"].shape == (4, 3)
    np.testing.assert_allclose(v["cat"].numpy(), [0.4, 0.5, 0.6], rtol=1e-6)
    assert v["unknown"].tolist() == [0.0, 0.0, 0.0]
    os.utime(cache, (os.path.getmtime(src) + 10,) * 2)
    v2 = Vectors(str(src))  # from the cache
    np.testing.assert_array_equal(v2.vectors.numpy(), v.vectors.numpy())
    voc = Vocab(__import__("collections").Counter("cat dog bird".split()), vectors=v2)
    assert tuple(voc.vectors.shape) == (5, 3)
    np.testing.assert_allclose(voc.vectors.numpy()[voc.stoi["dog"]], [-0.1, -0.2, -0.3], rtol=1e-6)
    assert voc.vectors.numpy()[voc.stoi["bird"]].tolist() == [0, 0, 0]
    v3 = Vectors(str(src), max_vectors=2)
    assert v3.itos == ["the", "cat"]
    voc.set_vectors({"cat": 0}, et.tensor([[9.0, 9.0]]), 2)
    assert voc.vectors.numpy()[voc.stoi["cat"]].tolist() == [9, 9]
    with pytest.raises(ValueError, match="downloads nothing"):
        voc.load_vectors("glove.6B.100d")


def test_vectors_word2vec_header_and_ragged_rows(tmp_path):
    for name in ("w2v.tiny.txt", "ragged.txt"):
        shutil.copy(os.path.join(SAMPLES, "vectors", name), tmp_path / name)
    v = Vectors(str(tmp_path / "w2v.tiny.txt"))
    assert v.itos == ["the", "sat"] and v.dim == 2
    with pytest.raises(ValueError, match=r"ragged\.txt, line 2: .*2 dimensions"):
        Vectors(str(tmp_path / "ragged.txt"))
    (tmp_path / "badutf.txt").write_bytes(b"ok 1 2\n\xff\xfe 3 4\n")
    with pytest.raises(ValueError, match=r"badutf\.txt, line 2: .*UTF-8"):
        Vectors(str(tmp_path / "badutf.txt"))
    with pytest.raises(FileNotFoundError):
        Vectors(str(tmp_path / "missing.txt"))


def test_snli_with_shift_reduce_transitions():
    text = ParsedTextField()
    label = LabelField()
    parse = ShiftReduceField()
    train, dev, test = SNLI.splits(text, label, parse, root=SAMPLES)
    assert (len(train), len(dev), len(test)) == (3, 2, 1)  # the '-' pair is dropped
    ex = train[0]
    assert ex.premise == ["A", "man", "is", "playing", "guitar"]
    s, r = "shift", "reduce"
    assert ex.premise_transitions == [s, s, r, s, s, s, r, r, r]
    assert ex.premise_transitions == [
        "shift",
        "shift",
        "reduce",
        "shift",
        "shift",
        "shift",
        "reduce",
        "reduce",
        "reduce",
    ]
    assert ex.label == "entailment"
    text.build_vocab(train)
    label.build_vocab(train)
    (data, lengths) = text.process([ex.premise for ex in train])
    assert lengths.tolist() == [6, 7, 6]  # eos '<pad>' included
    trans = parse.process([ex.premise_transitions for ex in train])
    assert trans.shape[1] == 3
    pickle.loads(pickle.dumps(train))


def test_snli_missing_folder_says_what_to_put_where(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"snli_1\.0_train\.jsonl"):
        SNLI.splits(Field(), LabelField(), root=str(tmp_path))


def test_imdb_layout():
    text, label = Field(lower=True), LabelField()
    train, test = IMDB.splits(text, label, root=SAMPLES)
    assert len(train) == 4 and len(test) == 2
    assert [ex.label for ex in train] == ["pos", "pos", "neg", "neg"]
    assert train[0].text[:2] == ["a", "wonderful"]
    with pytest.raises(FileNotFoundError, match="aclImdb"):
        IMDB.splits(text, label, root=os.path.join(SAMPLES, "nothing-here"))


def test_penn_treebank_and_wikitext2():
    text = Field()
    train, valid, test = PennTreebank.splits(text, root=SAMPLES)
    assert train[0].text[:7] == ["the", "cat", "sat", "on", "the", "mat", "<eos>"]
    assert len(train[0].text) == 5 + 1 + 5 + 1 + 5 + 1 + 1
    w_train, _, _ = WikiText2.splits(Field(), root=SAMPLES)
    assert "@-@" in w_train[0].text and w_train[0].text[0] == "<eos>"
    with pytest.raises(FileNotFoundError, match="ptb.train.txt"):
        PennTreebank.splits(text, root=os.path.join(SAMPLES, "snli"))
    train_it, _, _ = PennTreebank.iters(batch_size=2, bptt_len=3, root=SAMPLES)
    b = next(iter(train_it))
    assert tuple(b.text.shape) == (3, 2)
