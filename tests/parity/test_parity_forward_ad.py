"""``ember.autograd.forward_ad`` against ``torch.autograd.forward_ad`` (PyTorch 2.13, float64):
tangents of composite expressions and nn layers, views and in-place writes on dual tensors,
forward-over-reverse Hessian-vector products, and the errors."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.autograd as ag  # noqa: E402
import ember.autograd.forward_ad as efw  # noqa: E402
import ember.nn.functional as eF  # noqa: E402
import ember.tensor as et  # noqa: E402

# (PyTorch's forward_ad decorates with torch.jit.script, deprecated in 2.13)
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
tfw = torch.autograd.forward_ad
tF = torch.nn.functional
RNG = np.random.default_rng(5)
X = RNG.standard_normal((4, 6))
V = RNG.standard_normal((4, 6))
W = RNG.standard_normal((6, 3))

EXPRS = {
    "mlp": lambda m, F, x: F.gelu(x @ m.tensor(W)).tanh().sum(1),
    "softmax_ce": lambda m, F, x: F.cross_entropy(x, m.tensor([0, 3, 5, 1])),
    "layer_norm": lambda m, F, x: F.layer_norm(x, (6,)) * x.exp(),
    "views": lambda m, F, x: x.t()[1:4].reshape(-1).cumsum(0) + x.unsqueeze(0).expand(2, 4, 6)
    .sum((0, 2)).repeat(6)[:12],
    "reductions": lambda m, F, x: m.stack([x.norm(dim=1), x.logsumexp(1), x.var(1),
                                           x.max(1).values]),
    "linalg": lambda m, F, x: m.linalg.solve(x[:, :4] @ x[:, :4].t() + 4 * m.eye(4),
                                             x[:, 4:]).sum(),
}


def _tangent(lib, fw, F, name):
    with fw.dual_level():
        d = fw.make_dual(lib.tensor(X), lib.tensor(V))
        return fw.unpack_dual(EXPRS[name](lib, F, d)).tangent.numpy()


@pytest.mark.parametrize("name", sorted(EXPRS))
def test_tangents_match_pytorch(name):
    np.testing.assert_allclose(_tangent(et, efw, eF, name), _tangent(torch, tfw, tF, name),
                               rtol=1e-10, atol=1e-12)


def _writes(lib, fw):
    with fw.dual_level():
        base = lib.tensor(X).clone()
        d = fw.make_dual(base, lib.tensor(V))
        d[1:3].mul_(2)  # through a view: the base's tangent changes where the view is
        d.t()[0].add_(d[:, 1] * 3)
        d.sin_()
        p, t = fw.unpack_dual(d)
        return p.numpy(), t.numpy()


def test_in_place_writes_through_views_match_pytorch():
    for e, t in zip(_writes(et, efw), _writes(torch, tfw)):
        np.testing.assert_allclose(e, t, rtol=1e-12, atol=1e-12)


def _hvp(lib, fw):
    grad = torch.autograd.grad if lib is torch else ag.grad
    x = lib.tensor(X[0], requires_grad=True)
    with fw.dual_level():
        d = fw.make_dual(x, lib.tensor(V[0]))
        f = (d.sin() * d.roll(1) ** 2).sum() + d.softmax(0)[2]
        (g,) = grad(f, d, create_graph=True)
        return fw.unpack_dual(g).tangent.detach().numpy()


def test_forward_over_reverse_hvp_matches_pytorch():
    np.testing.assert_allclose(_hvp(et, efw), _hvp(torch, tfw), rtol=1e-10, atol=1e-12)


def test_errors_match_pytorch():
    for lib, fw in ((torch, tfw), (et, efw)):
        x = lib.tensor([1.0, 2.0])
        with pytest.raises(RuntimeError, match="no level exists"):
            fw.make_dual(x, x)
        with fw.dual_level():
            with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
                with fw.dual_level():
                    pass
            with pytest.raises(RuntimeError, match="different size than that of the original"):
                fw.make_dual(x, lib.ones(3))
            with pytest.raises(ValueError, match="Expected primal to be floating point"):
                fw.make_dual(lib.tensor([1, 2]), x)
            assert fw.unpack_dual(x).tangent is None
