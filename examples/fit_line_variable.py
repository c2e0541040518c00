"""Fit a line y = w * x + b by gradient descent, with autograd through ``Variable``.

The PyTorch 0.3-era pattern: parameters are ``Variable(..., requires_grad=True)``, the loss
is built from ordinary tensor ops, ``loss.backward()`` fills ``.grad``, and the update runs
under ``no_grad()`` followed by ``W.grad.zero_()``.

    python examples/fit_line_variable.py --steps 300
"""

from __future__ import annotations

import argparse
import sys

import ember.tensor as et
from ember.autograd import Variable, no_grad

TRUE_W, TRUE_B = 2.5, -0.7


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300, help="gradient steps (default 300)")
    parser.add_argument("--lr", type=float, default=0.1, help="learning rate (default 0.1)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)

    et.manual_seed(args.seed)
    # 100 noisy points on the true line
    x = Variable(et.rand(100, 1) * 4 - 2)
    y = Variable(TRUE_W * x + TRUE_B + 0.1 * et.randn(100, 1))

    W = Variable(et.randn(1, 1), requires_grad=True)
    b = Variable(et.zeros(1), requires_grad=True)

    loss = None
    for step in range(args.steps):
        y_pred = x.mm(W) + b
        loss = (y_pred - y).pow(2).mean()
        loss.backward()
        with no_grad():
            W -= args.lr * W.grad
            b -= args.lr * b.grad
        W.grad.zero_()
        b.grad.zero_()
        if step % 50 == 49 or step == args.steps - 1:
            print(f"step {step + 1:4d}  loss {loss.item():.5f}")

    w_hat, b_hat = W.item(), b.item()
    print(f"fitted   y = {w_hat:.3f} * x + {b_hat:.3f}")
    print(f"true     y = {TRUE_W:.3f} * x + {TRUE_B:.3f}")
    if args.steps >= 200 and (abs(w_hat - TRUE_W) > 0.1 or abs(b_hat - TRUE_B) > 0.1):
        print("error: the fit is off", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
