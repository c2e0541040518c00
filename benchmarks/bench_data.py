"""ember.data benchmarks: padding waste of bucketing, the text pipeline's speed, DataLoader.

Run ``python benchmarks/bench_data.py``. Prints a Markdown table; ``main()`` returns rows
``(workload, ember, torch, unit)`` where ``torch`` is the PyTorch figure for the same workload
when PyTorch is installed and has one (None otherwise). No assertions on time.

- padding fraction (pad tokens / all tokens of padded batches), 100,000 examples with
  log-normal lengths, batch 64: random batches, torchtext's BucketIterator (ember.data.text),
  and BucketBatchSampler (ember.data). Lower is better.
- Field preprocess -> numericalize -> pad, in tokens per second on one core.
- DataLoader throughput (samples/s) with 0 and 2 workers, ember and torch.utils.data.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import ember.data  # noqa: F401
except ImportError:  # run from a checkout without installing
    _root = Path(__file__).resolve().parents[1] / "packages"
    sys.path[:0] = [str(_root / "tensor" / "src"), str(_root / "data" / "src")]

import random

from ember.data import BucketBatchSampler, DataLoader, Dataset
from ember.data.text import BucketIterator, Example, Field
from ember.data.text import Dataset as TextDataset

try:
    import torch
    import torch.utils.data as tud
except ImportError:
    torch = None
    tud = None

N_EXAMPLES = 100_000
BATCH = 64


def _lengths(n: int = N_EXAMPLES, seed: int = 0, sigma: float = 0.6) -> np.ndarray:
    """Log-normal lengths, median e**3 ~ 20 tokens; sigma 0.6 ~ sentences, 0.8 a wider tail."""
    rng = np.random.default_rng(seed)
    return np.maximum(1, np.round(rng.lognormal(mean=3.0, sigma=sigma, size=n))).astype(np.int64)


def _pad_fraction(batches_lengths: list[np.ndarray]) -> float:
    real = sum(int(b.sum()) for b in batches_lengths)
    total = sum(int(b.max()) * len(b) for b in batches_lengths)
    return 1.0 - real / total


def _len_key(ex: Example) -> int:
    return ex.n


def padding_rows(sigma: float) -> list[tuple]:
    lengths = _lengths(sigma=sigma)
    rng = np.random.default_rng(1)
    perm = rng.permutation(len(lengths))
    random_batches = [lengths[perm[i : i + BATCH]] for i in range(0, len(perm), BATCH)]
    exs = []
    for n in lengths.tolist():
        ex = Example()
        ex.n = n
        exs.append(ex)
    ds = TextDataset(exs, [("n", None)])
    random.seed(0)
    it = BucketIterator(ds, BATCH, sort_key=_len_key)
    it.init_epoch()
    bucket_iter = [np.array([ex.n for ex in b]) for b in it.batches]
    bucket_sampler = [lengths[b] for b in BucketBatchSampler(lengths, BATCH, seed=0)]
    wide_pool = [lengths[b] for b in BucketBatchSampler(lengths, BATCH, seed=0, pool_size=400)]
    tag = f"(sigma {sigma})"
    return [
        (
            f"padding fraction, random batches {tag}",
            _pad_fraction(random_batches),
            None,
            "fraction",
        ),
        (f"padding fraction, BucketIterator {tag}", _pad_fraction(bucket_iter), None, "fraction"),
        (
            f"padding fraction, BucketBatchSampler {tag}",
            _pad_fraction(bucket_sampler),
            None,
            "fraction",
        ),
        (
            f"padding fraction, BucketBatchSampler pool 400 {tag}",
            _pad_fraction(wide_pool),
            None,
            "fraction",
        ),
    ]


def _sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(20_000)]
    zipf = np.minimum(rng.zipf(1.3, size=int(_lengths(n, seed).sum())), len(words)) - 1
    out, pos = [], 0
    for n_tok in _lengths(n, seed).tolist():
        out.append(" ".join(words[j] for j in zipf[pos : pos + n_tok]))
        pos += n_tok
    return out


def field_rows() -> list[tuple]:
    sents = _sentences(20_000)
    field = Field(init_token="<s>", eos_token="</s>", include_lengths=True)
    field.build_vocab([field.preprocess(s) for s in sents[:5000]], max_size=10_000)
    n_tokens = sum(len(s.split()) for s in sents)

    def run() -> None:
        for i in range(0, len(sents), BATCH):
            field.process([field.preprocess(s) for s in sents[i : i + BATCH]])

    times = []
    run()
    for _ in range(3):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return [
        (
            "Field preprocess->pad->numericalize",
            n_tokens / statistics.median(times),
            None,
            "tokens/s",
        )
    ]


class _Rows(Dataset):
    def __init__(self, n: int, dim: int):
        self.data = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> tuple:
        return self.data[i], i


if tud is not None:

    class _TorchRows(tud.Dataset):
        def __init__(self, n: int, dim: int):
            self.data = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)

        def __len__(self) -> int:
            return len(self.data)

        def __getitem__(self, i: int) -> tuple:
            return self.data[i], i


def _loader_rate(make, n: int) -> float:
    loader = make()
    for _ in loader:  # warm-up epoch (starts workers, imports)
        pass
    t0 = time.perf_counter()
    for _ in loader:
        pass
    return n / (time.perf_counter() - t0)


def loader_rows(n: int = 20_000, dim: int = 256) -> list[tuple]:
    rows = []
    for workers in (0, 2):
        kw = {"persistent_workers": True} if workers else {}
        ember_rate = _loader_rate(
            lambda w=workers, kw=kw: DataLoader(
                _Rows(n, dim), batch_size=BATCH, shuffle=True, num_workers=w, **kw
            ),
            n,
        )
        torch_rate = None
        if tud is not None:
            torch_rate = _loader_rate(
                lambda w=workers, kw=kw: tud.DataLoader(
                    _TorchRows(n, dim), batch_size=BATCH, shuffle=True, num_workers=w, **kw
                ),
                n,
            )
        rows.append((f"DataLoader, {workers} workers", ember_rate, torch_rate, "samples/s"))
    return rows


def main() -> list[tuple]:
    rows = padding_rows(0.6) + padding_rows(0.8) + field_rows() + loader_rows()
    print("| workload | ember | torch | ember / torch | unit |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, ours, theirs, unit in rows:
        fmt = "{:.3f}" if unit == "fraction" else "{:,.0f}"
        ratio = f"{ours / theirs:.2f}" if theirs else "-"
        t = fmt.format(theirs) if theirs is not None else "-"
        print(f"| {name} | {fmt.format(ours)} | {t} | {ratio} | {unit} |")
    return rows


if __name__ == "__main__":
    main()
