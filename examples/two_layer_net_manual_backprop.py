"""A two-layer ReLU network fitted to random data with hand-written backprop.

Only ``ember.tensor`` is used: no autograd. The forward pass, the gradients of the squared
error and the weight updates are spelled out, exactly as in PyTorch's classic "tensors" tutorial.

    python examples/two_layer_net_manual_backprop.py --steps 500
"""

from __future__ import annotations

import argparse
import sys

import ember.tensor as et


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500, help="gradient steps (default 500)")
    parser.add_argument("--lr", type=float, default=1e-6, help="learning rate (default 1e-6)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    args = parser.parse_args(argv)

    et.manual_seed(args.seed)
    device = et.device(args.device)
    dtype = et.float32

    # N is the batch size; D_in the input dimension; H the hidden dimension; D_out the output.
    n, d_in, h, d_out = 64, 1000, 100, 10
    x = et.randn(n, d_in, device=device, dtype=dtype)
    y = et.randn(n, d_out, device=device, dtype=dtype)
    w1 = et.randn(d_in, h, device=device, dtype=dtype)
    w2 = et.randn(h, d_out, device=device, dtype=dtype)

    first = last = None
    for t in range(args.steps):
        # forward: h = relu(x @ w1), y_pred = h @ w2
        hidden = x.mm(w1)
        hidden_relu = hidden.clamp(min=0)
        y_pred = hidden_relu.mm(w2)

        loss = (y_pred - y).pow(2).sum().item()
        if first is None:
            first = loss
        last = loss
        if t % 100 == 99 or t == args.steps - 1:
            print(f"step {t + 1:4d}  loss {loss:.4f}")

        # backward, by hand
        grad_y_pred = 2.0 * (y_pred - y)
        grad_w2 = hidden_relu.t().mm(grad_y_pred)
        grad_h_relu = grad_y_pred.mm(w2.t())
        grad_h = grad_h_relu.clone()
        grad_h[hidden < 0] = 0
        grad_w1 = x.t().mm(grad_h)

        # update, in place
        w1 -= args.lr * grad_w1
        w2 -= args.lr * grad_w2

    if first is None:
        print("no steps run")
        return 0
    print(f"loss went from {first:.4f} to {last:.4f}")
    if not last < first and args.steps > 1:
        print("error: the loss did not decrease", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
