import random

import pytest

from ember.data.text import (
    BPTTIterator,
    BucketIterator,
    Dataset,
    Example,
    Field,
    Iterator,
    LabelField,
    RandomShuffler,
    batch,
    interleave_keys,
    pool,
)


def _len_key(ex):
    return len(ex.text)


def _dataset(n=1000, seed=0, include_lengths=True):
    rng = random.Random(seed)
    text = Field(include_lengths=include_lengths)
    label = LabelField()
    fields = [("text", text), ("label", label)]
    exs = []
    for i in range(n):
        length = rng.randint(1, 40)
        exs.append(
            Example.fromlist(
                [" ".join(f"t{rng.randint(0, 50)}" for _ in range(length)), f"l{i % 3}"], fields
            )
        )
        exs[-1].idx = i
    ds = Dataset(exs, fields)
    ds.sort_key = _len_key
    text.build_vocab(ds)
    label.build_vocab(ds)
    return ds


def _ids(it):
    return [ex.idx for b in it.batches for ex in b]


def test_batch_and_batch_size_fn():
    assert list(batch(range(7), 3)) == [[0, 1, 2], [3, 4, 5], [6]]

    def tokens(new, count, sofar):
        return sofar + new

    # a batch closes when adding the next item would exceed 5 "tokens"
    assert list(batch([2, 2, 2, 5, 1], 5, tokens)) == [[2, 2], [2], [5], [1]]
    assert list(batch([9, 1], 5, tokens)) == [[9], [1]]  # an oversized item is its own batch


def test_interleave_keys():
    assert interleave_keys(0, 0) == 0
    assert interleave_keys(1, 0) == 2 and interleave_keys(0, 1) == 1
    assert interleave_keys(3, 1) == 0b1011
    assert sorted([(2, 9), (1, 1), (2, 2)], key=lambda p: interleave_keys(*p))[0] == (1, 1)


def test_pool_sorts_within_chunks_of_100_batches_then_shuffles_batches():
    data = list(range(1000, 0, -1))  # descending
    batches = list(
        pool(
            data,
            2,
            key=int,
            random_shuffler=RandomShuffler(random.Random(0).getstate()),
            shuffle=True,
        )
    )
    assert sorted(x for b in batches for x in b) == sorted(data)
    # chunk 1 = the first 200 items (1000..801), sorted, batched, shuffled among themselves
    assert sorted(x for b in batches[:100] for x in b) == list(range(801, 1001))
    assert all(b[0] + 1 == b[1] for b in batches)  # each batch holds neighbours in sort order
    assert [b[0] for b in batches[:100]] != sorted(b[0] for b in batches[:100])  # shuffled
    unshuffled = list(pool(data, 2, key=int))
    assert unshuffled[0] == [801, 802]


def test_random_shuffler_follows_python_random_seed():
    random.seed(5)
    a = RandomShuffler()(range(10))
    random.seed(5)
    b = RandomShuffler()(range(10))
    assert a == b and sorted(a) == list(range(10))


def test_iterator_defaults_train_and_eval():
    ds = _dataset(50)
    it = Iterator(ds, batch_size=8)
    assert it.shuffle and not it.sort and not it.sort_within_batch
    ev = Iterator(ds, batch_size=8, train=False)
    assert ev.sort and not ev.shuffle and ev.sort_within_batch
    assert len(it) == 7


def test_every_example_once_per_epoch_and_shuffled_between_epochs():
    ds = _dataset(203)
    random.seed(0)
    it = BucketIterator(ds, batch_size=10, sort_within_batch=True)
    epochs = []
    for _ in range(2):
        seen = []
        for b in it:
            seen.extend(b.text[1].tolist())
        epochs.append(seen)
        assert len(seen) == 203
    it.init_epoch()
    ids = _ids(it)
    assert sorted(ids) == list(range(203))
    assert epochs[0] != epochs[1]


def test_bucket_iterator_ordering_is_fixed_by_seed_and_buckets_lengths():
    ds = _dataset(2000)
    random.seed(42)
    a = BucketIterator(ds, batch_size=8)
    random.seed(42)
    b = BucketIterator(ds, batch_size=8)
    a.init_epoch()
    b.init_epoch()
    batches_a = [[ex.idx for ex in bb] for bb in a.batches]
    assert batches_a == [[ex.idx for ex in bb] for bb in b.batches]
    # within a 100-batch chunk examples are sorted, so each batch spans a narrow length range
    a.init_epoch()
    spreads = [max(len(e.text) for e in bb) - min(len(e.text) for e in bb) for bb in a.batches]
    assert sum(spreads) / len(spreads) <= 1.0


def test_sort_within_batch_gives_descending_lengths_for_pack_padded_sequence():
    ds = _dataset(300)
    random.seed(1)
    for it in (
        BucketIterator(ds, 16, sort_within_batch=True),
        Iterator(ds, 16, sort_key=_len_key, sort_within_batch=True),
        BucketIterator(ds, 16, train=False),
    ):
        for b in it:
            lengths = b.text[1].tolist()
            assert lengths == sorted(lengths, reverse=True)


def test_eval_iterator_is_sorted_ascending_across_batches():
    ds = _dataset(100)
    it = Iterator(ds, 10, train=False, sort_within_batch=False)
    lengths = [n for b in it for n in b.text[1].tolist()]
    assert lengths == sorted(lengths)


def test_resume_mid_epoch_from_state_dict():
    ds = _dataset(120)
    random.seed(7)
    it = BucketIterator(ds, batch_size=10)
    full = [b.text[0].numpy().tolist() for b in it]  # epoch 1, for reference order of epoch 2 below
    random.seed(7)
    it = BucketIterator(ds, batch_size=10)
    gen = iter(it)
    first = [next(gen).text[0].numpy().tolist() for _ in range(4)]
    state = it.state_dict()
    assert state["iterations_this_epoch"] == 4
    random.seed(999)  # the global state must not matter
    it2 = BucketIterator(ds, batch_size=10)
    it2.load_state_dict(state)
    rest = [b.text[0].numpy().tolist() for b in it2]
    assert first + rest == full


def test_batch_attributes_and_iteration():
    ds = _dataset(20, include_lengths=False)
    b = next(iter(Iterator(ds, 4, sort_key=_len_key)))
    x, y = b
    assert x.shape[1] == 4 and tuple(y.shape) == (4,)
    assert len(b) == 4 and "text" in repr(b)


def test_iterator_splits_train_flag():
    ds = _dataset(30)
    tr, ev = BucketIterator.splits((ds, ds), batch_sizes=(4, 8))
    assert tr.train and not ev.train and ev.batch_size == 8


def test_missing_sort_key_is_reported():
    text = Field()
    ds = Dataset([Example.fromlist(["a b"], [("text", text)])], [("text", text)])
    with pytest.raises(ValueError, match="sort_key"):
        BucketIterator(ds, 2)


def test_bptt_iterator_shapes_targets_and_len():
    text = Field()
    toks = [f"w{i}" for i in range(23)]
    ex = Example()
    ex.text = toks
    ds = Dataset([ex], [("text", text)])
    text.build_vocab(ds)
    it = BPTTIterator(ds, batch_size=2, bptt_len=5)
    assert len(it) == 3  # torchtext: ceil((23 / 2 - 1) / 5)
    batches = list(it)
    assert len(batches) == 3
    b0 = batches[0]
    assert tuple(b0.text.shape) == (5, 2)
    col0 = [text.vocab.itos[i] for i in b0.text.numpy()[:, 0]]
    col1 = [text.vocab.itos[i] for i in b0.text.numpy()[:, 1]]
    assert col0 == toks[0:5] and col1 == toks[12:17]
    tgt0 = [text.vocab.itos[i] for i in b0.target.numpy()[:, 0]]
    assert tgt0 == toks[1:6]
    last = batches[-1]
    # 24 tokens (one pad) make 12 rows: windows of 5, 5 and 1 (the last row is only a target)
    assert last.text.shape[0] == 1 and last.target.shape[0] == 1
    assert [text.vocab.itos[i] for i in last.target.numpy()[:, 1]] == ["<pad>"]
    assert text.eos_token is None  # the field was not mutated
    text.batch_first = True
    assert tuple(next(iter(BPTTIterator(ds, 2, 5))).text.shape) == (2, 5)
