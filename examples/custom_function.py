"""A custom ReLU autograd Function, written both ways, checked with gradcheck, then trained.

* modern: ``@staticmethod forward(ctx, x)`` / ``backward(ctx, grad)``, applied as
  ``MyReLU.apply(x)``
* legacy (PyTorch 0.3 tutorials): instance ``forward(self, x)`` / ``backward(self, grad)``
  with ``self.save_for_backward`` applied as ``LegacyReLU()(x)``

Both are verified against finite differences with ``ember.autograd.gradcheck`` in float64,
then used as the activation of a small two-layer net fitted to random data.

    python examples/custom_function.py --steps 200
"""

from __future__ import annotations

import argparse
import sys

import ember.tensor as et
from ember.autograd import Function, gradcheck, no_grad


class MyReLU(Function):
    """ReLU in the modern style: static methods and a ``ctx``."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[x < 0] = 0
        return grad_input


class LegacyReLU(Function):
    """ReLU in the PyTorch 0.3 style: instance methods, the instance is its own context."""

    def forward(self, x):
        self.save_for_backward(x)
        return x.clamp(min=0)

    def backward(self, grad_output):
        (x,) = self.saved_tensors
        grad_input = grad_output.clone()
        grad_input[x < 0] = 0
        return grad_input


def check_gradients() -> bool:
    # keep inputs away from the kink at 0, where finite differences are meaningless
    x = et.randn(6, 5, dtype=et.float64)
    x = x + x.sign() * 0.1
    x.requires_grad_(True)
    ok_modern = gradcheck(MyReLU.apply, (x,), eps=1e-6, atol=1e-5)
    ok_legacy = gradcheck(lambda t: LegacyReLU()(t), (x,), eps=1e-6, atol=1e-5)
    print(f"gradcheck  MyReLU.apply: {ok_modern}   LegacyReLU()(x): {ok_legacy}")
    return bool(ok_modern and ok_legacy)


def train(steps: int, lr: float, relu) -> tuple[float, float]:
    n, d_in, h, d_out = 64, 100, 50, 10
    x = et.randn(n, d_in)
    y = et.randn(n, d_out)
    w1 = (et.randn(d_in, h) * 0.1).requires_grad_()
    w2 = (et.randn(h, d_out) * 0.1).requires_grad_()
    first = last = float("nan")
    for step in range(steps):
        y_pred = relu(x.mm(w1)).mm(w2)
        loss = (y_pred - y).pow(2).mean()
        loss.backward()
        with no_grad():
            w1 -= lr * w1.grad
            w2 -= lr * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
        if step == 0:
            first = loss.item()
        last = loss.item()
    return first, last


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    parser.add_argument("--lr", type=float, default=0.5, help="learning rate (default 0.5)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    et.manual_seed(args.seed)

    if not check_gradients():
        print("error: gradcheck failed", file=sys.stderr)
        return 1

    status = 0
    for name, relu in (("MyReLU.apply", MyReLU.apply), ("LegacyReLU()", lambda t: LegacyReLU()(t))):
        et.manual_seed(args.seed)
        first, last = train(args.steps, args.lr, relu)
        print(f"{name:14s} training loss {first:.4g} -> {last:.4g} after {args.steps} steps")
        if args.steps > 1 and not last < first:
            print(f"error: {name}: the loss did not decrease", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
