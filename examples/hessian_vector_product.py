"""Hessian-vector products three ways, compared.

For the loss of a small tanh network (a smooth scalar function of its weights) and random
directions ``v``:

1. double backward: ``g = grad(loss, w, create_graph=True)``, then ``grad(g @ v, w)``;
2. ``ember.autograd.functional.hvp(f, w, v)``;
3. the full Hessian from ``ember.autograd.functional.hessian`` times ``v`` (small sizes only),
   and a central finite difference of the gradient, ``(g(w + h v) - g(w - h v)) / 2h``.

    python examples/hessian_vector_product.py --steps 5
"""

from __future__ import annotations

import argparse
import sys

import ember.tensor as et
from ember.autograd import grad
from ember.autograd.functional import hessian, hvp


def make_loss(n_in: int, n_hidden: int):
    x = et.randn(32, n_in, dtype=et.float64)
    y = et.randn(32, 1, dtype=et.float64)
    n_params = n_in * n_hidden + n_hidden

    def loss(w):
        w1 = w[: n_in * n_hidden].view(n_in, n_hidden)
        w2 = w[n_in * n_hidden:].view(n_hidden, 1)
        pred = x.mm(w1).tanh().mm(w2)
        return (pred - y).pow(2).mean()

    return loss, n_params


def hvp_double_backward(f, w, v):
    w = w.detach().requires_grad_(True)
    (g,) = grad(f(w), w, create_graph=True)
    (hv,) = grad((g * v).sum(), w)
    return hv


def gradient(f, w):
    w = w.detach().requires_grad_(True)
    (g,) = grad(f(w), w)
    return g


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5,
                        help="random directions to test (default 5)")
    parser.add_argument("--inputs", type=int, default=4, help="network inputs (default 4)")
    parser.add_argument("--hidden", type=int, default=6, help="hidden units (default 6)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    et.manual_seed(args.seed)

    f, n = make_loss(args.inputs, args.hidden)
    w = et.randn(n, dtype=et.float64) * 0.5
    print(f"loss at w: {f(w).item():.6f}   parameters: {n}")
    H = hessian(f, w)
    print(f"full Hessian: {tuple(H.shape)}, symmetric: {bool(et.allclose(H, H.t(), atol=1e-10))}")

    worst = 0.0
    for step in range(args.steps):
        v = et.randn(n, dtype=et.float64)
        hv_db = hvp_double_backward(f, w, v)
        _, hv_fn = hvp(f, w, v)
        hv_full = H.mv(v)
        h = 1e-5
        hv_fd = (gradient(f, w + h * v) - gradient(f, w - h * v)) / (2 * h)
        d_fn = (hv_db - hv_fn).abs().max().item()
        d_full = (hv_db - hv_full).abs().max().item()
        d_fd = (hv_db - hv_fd).abs().max().item()
        worst = max(worst, d_fn, d_full, d_fd / 1e3)
        print(f"direction {step + 1}: |Hv| = {hv_db.norm().item():.5f}   max diff vs "
              f"functional.hvp {d_fn:.2e}, H @ v {d_full:.2e}, finite difference {d_fd:.2e}")

    if worst > 1e-8:
        print(f"error: Hessian-vector products disagree (worst {worst:.2e})", file=sys.stderr)
        return 1
    print("all Hessian-vector products agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
