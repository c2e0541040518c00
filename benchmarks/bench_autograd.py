"""ember.autograd vs PyTorch CPU in one process: recorded per-op overhead, a small chain
forward+backward, and a 1,000-op chain backward.

    python benchmarks/bench_autograd.py
"""
from __future__ import annotations

from _harness import table, timeit


def main() -> list[tuple]:
    import torch

    import ember.autograd  # noqa: F401  (installs the recorder)
    import ember.tensor as et

    torch.set_num_threads(2)
    rows = []
    a, b = et.ones(1, 1, requires_grad=True), et.ones(1, 1)
    ta, tb = torch.ones(1, 1, requires_grad=True), torch.ones(1, 1)
    rows.append(("add 1x1 with grad recording", timeit(lambda: a + b), timeit(lambda: ta + tb)))

    ea, eb, ec, ed = (et.randn(64, requires_grad=True) for _ in range(4))
    tA, tB, tC, tD = (torch.randn(64, requires_grad=True) for _ in range(4))

    def ember_chain():
        ((ea * eb + ec).tanh() * ed).sum().backward()

    def torch_chain():
        ((tA * tB + tC).tanh() * tD).sum().backward()

    rows.append(("((a*b+c).tanh()*d).sum() fwd+bwd, 64 elems", timeit(ember_chain),
                 timeit(torch_chain)))

    def ember_long():
        x = et.ones(8, requires_grad=True)
        y = x
        for _ in range(1000):
            y = y * 1.0001
        y.sum().backward()

    def torch_long():
        x = torch.ones(8, requires_grad=True)
        y = x
        for _ in range(1000):
            y = y * 1.0001
        y.sum().backward()

    rows.append(("1,000-op chain fwd+bwd", timeit(ember_long, repeat=3),
                 timeit(torch_long, repeat=3)))
    return rows


if __name__ == "__main__":
    print(table(main(), "ember.autograd"))
