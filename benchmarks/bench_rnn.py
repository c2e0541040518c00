"""Recurrent-network benchmark: one training step of the word-level language model of
``examples/word_language_model.py`` (PyTorch's classic example) at vocabulary 10,000.

Model: embedding 200, 2-layer LSTM 200, decoder Linear(200, 10000), dropout 0.2; batch 20,
sequence 35 (truncated BPTT, hidden state carried and detached); step = forward,
cross-entropy, backward, gradient clipping at 0.25, SGD (lr 20). The same step on ember and on
PyTorch CPU, in one process, same thread count; the median of several steps after warm-up.
Extra rows time the recurrent part alone (LSTM forward + backward) so a regression there is
visible under the decoder's large matrix product.

Run ``python benchmarks/bench_rnn.py [--threads N] [--repeat N]``: ``--threads`` limits
PyTorch's intra-op pool and, through threadpoolctl when it is installed, NumPy's BLAS to ``N``
threads (a fair comparison on a shared or small machine). Prints a Markdown table; ``main()``
returns rows ``(workload, ember_s, torch_s)``. No assertions on time.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

try:
    import ember.nn  # noqa: F401
except ImportError:  # run from a checkout without installing
    _root = Path(__file__).resolve().parents[1] / "packages"
    sys.path[:0] = [str(_root / p / "src") for p in ("tensor", "autograd", "nn", "optim")]

import ember.autograd as ag
import ember.nn as enn
import ember.tensor as et

try:
    import torch
except ImportError:
    torch = None

VOCAB, EMB, HID, LAYERS, SEQ, BATCH = 10_000, 200, 200, 2, 35, 20
DROPOUT, LR, CLIP = 0.2, 20.0, 0.25


def _ember_lm():
    class LM(enn.Module):
        def __init__(self):
            super().__init__()
            self.drop = enn.Dropout(DROPOUT)
            self.encoder = enn.Embedding(VOCAB, EMB)
            self.rnn = enn.LSTM(EMB, HID, LAYERS, dropout=DROPOUT)
            self.decoder = enn.Linear(HID, VOCAB)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
            return self.decoder(self.drop(out).view(-1, HID)), hidden

    return LM()


def _torch_lm():
    class LM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = torch.nn.Dropout(DROPOUT)
            self.encoder = torch.nn.Embedding(VOCAB, EMB)
            self.rnn = torch.nn.LSTM(EMB, HID, LAYERS, dropout=DROPOUT)
            self.decoder = torch.nn.Linear(HID, VOCAB)

        def forward(self, x, hidden):
            out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
            return self.decoder(self.drop(out).view(-1, HID)), hidden

    return LM()


def _ember_step_fn(data: np.ndarray, target: np.ndarray):
    model = _ember_lm()
    model.train()
    x, y = et.tensor(data), et.tensor(target.reshape(-1))
    state = {"hidden": (et.zeros(LAYERS, BATCH, HID), et.zeros(LAYERS, BATCH, HID))}
    params = list(model.parameters())

    def step():
        h = tuple(s.detach() for s in state["hidden"])
        model.zero_grad()
        logits, hidden = model(x, h)
        loss = enn.functional.cross_entropy(logits, y)
        loss.backward()
        enn.utils.clip_grad_norm_(params, CLIP)
        with ag.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-LR)
        state["hidden"] = hidden

    return step


def _torch_step_fn(data: np.ndarray, target: np.ndarray):
    model = _torch_lm()
    model.train()
    x, y = torch.tensor(data), torch.tensor(target.reshape(-1))
    state = {"hidden": (torch.zeros(LAYERS, BATCH, HID), torch.zeros(LAYERS, BATCH, HID))}
    params = list(model.parameters())

    def step():
        h = tuple(s.detach() for s in state["hidden"])
        model.zero_grad()
        logits, hidden = model(x, h)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        with torch.no_grad():
            for p in params:
                p.add_(p.grad, alpha=-LR)
        state["hidden"] = hidden

    return step


def _lstm_only_fns(x: np.ndarray):
    em = enn.LSTM(EMB, HID, LAYERS)
    xe = et.tensor(x, requires_grad=True)

    def e_step():
        out, _ = em(xe)
        out.sum().backward()

    if torch is None:
        return e_step, None
    tm = torch.nn.LSTM(EMB, HID, LAYERS)
    xt = torch.tensor(x, requires_grad=True)

    def t_step():
        out, _ = tm(xt)
        out.sum().backward()

    return e_step, t_step


def _time_pair(e_fn, t_fn, warmup: int = 2, repeat: int = 7):
    """Median seconds per call of ``e_fn`` and ``t_fn``, timed alternately so that a change in
    the machine's load during the run hits both alike."""
    fns = [f for f in (e_fn, t_fn) if f is not None]
    for _ in range(warmup):
        for f in fns:
            f()
    times: list[list[float]] = [[], []]
    for _ in range(repeat):
        for k, f in enumerate((e_fn, t_fn)):
            if f is None:
                continue
            t0 = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t0)
    return tuple(statistics.median(ts) if ts else None for ts in times)


def _fmt(s: float | None) -> str:
    return "-" if s is None else f"{s * 1e3:.1f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None else f"{a / b:.2f}x"


def _limit_threads(n: int | None):
    """Limit both frameworks to ``n`` threads; returns the threadpoolctl limiter (or None)."""
    if n is None:
        return None
    if torch is not None:
        torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("(threadpoolctl is not installed: NumPy's BLAS keeps its own thread count)")
        return None
    return threadpool_limits(n)


def main(argv: list[str] | None = None) -> list[tuple[str, float, float | None]]:
    """Run the workloads; print a Markdown table; return (workload, ember_s, torch_s) rows."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for PyTorch and NumPy's BLAS (default: leave as is)")
    parser.add_argument("--repeat", type=int, default=7, help="timed steps per workload")
    args = parser.parse_args([] if argv is None else argv)
    limiter = _limit_threads(args.threads)  # noqa: F841  (kept alive for the whole run)
    rng = np.random.default_rng(0)
    data = rng.integers(0, VOCAB, size=(SEQ, BATCH))
    target = rng.integers(0, VOCAB, size=(SEQ, BATCH))
    workloads = [
        (f"LM train step (vocab {VOCAB}, 2x LSTM {HID}, seq {SEQ}, batch {BATCH})",
         _ember_step_fn(data, target), _torch_step_fn(data, target) if torch else None),
    ]
    e_lstm, t_lstm = _lstm_only_fns(rng.standard_normal((SEQ, BATCH, EMB)).astype(np.float32))
    workloads.append((f"2x LSTM {HID} forward+backward (seq {SEQ}, batch {BATCH})",
                      e_lstm, t_lstm))
    if torch is not None:
        torch.manual_seed(0)
    rows = []
    print("| workload | ember ms | torch ms | ember/torch |")
    print("| --- | ---: | ---: | ---: |")
    for name, e_fn, t_fn in workloads:
        e, t = _time_pair(e_fn, t_fn, repeat=args.repeat)
        rows.append((name, e, t))
        print(f"| {name} | {_fmt(e)} | {_fmt(t)} | {_ratio(e, t)} |", flush=True)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
