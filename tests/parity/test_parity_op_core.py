"""Keyword calls, ``out=`` and repeated backward behave as in PyTorch 2.13 (same values, same
gradients, same exception types)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.standard_normal((4, 3))
I = np.array([2, 0, 2])


def _pair(a, grad=True):
    return (torch.tensor(a, requires_grad=grad), et.tensor(a, requires_grad=grad))


CALLS = {
    "index_select": lambda T, x: T.index_select(x, dim=0, index=T.tensor(I)),
    "method_index_select": lambda T, x: x.index_select(dim=1, index=T.tensor([1, 1])),
    "gather": lambda T, x: T.gather(x, dim=1, index=T.tensor([[0, 2], [1, 1], [2, 0],
                                                              [0, 0]])),
    "lerp": lambda T, x: T.lerp(x, x * 3, weight=0.3),
    "clamp_min": lambda T, x: T.clamp(x, min=-0.2),
    "clamp_max_tensor": lambda T, x: T.clamp(x, max=x.detach() * 0 + 0.1),
    "cat": lambda T, x: T.cat(tensors=[x, x * 2], dim=1),
    "stack": lambda T, x: T.stack(tensors=[x, x], dim=-1),
    "sum_dim": lambda T, x: T.sum(x, dim=1, keepdim=True),
    "mean_dims": lambda T, x: T.mean(input=x, dim=(0, 1)),
    "transpose": lambda T, x: T.transpose(x, dim0=0, dim1=1),
    "where": lambda T, x: T.where(condition=x > 0, input=x, other=x * -2),
    "matmul": lambda T, x: T.matmul(input=x, other=x.t()),
    "add_alpha": lambda T, x: T.add(x, x, alpha=3),
    "softmax_like": lambda T, x: T.logsumexp(x, dim=1),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_keyword_calls_match_torch(name):
    tx, ex = _pair(X.copy())
    to, eo = CALLS[name](torch, tx), CALLS[name](et, ex)
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-12)
    to.sum().backward()
    eo.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_clamp_tensor_bound_by_keyword_gets_the_same_gradient():
    ty, ey = _pair(np.array([-1.0, 0.5, 2.0]))
    tl, el = _pair(np.zeros(3))
    torch.clamp(ty, min=tl).sum().backward()
    et.clamp(ey, min=el).sum().backward()
    np.testing.assert_array_equal(el.grad.numpy(), tl.grad.numpy())
    np.testing.assert_array_equal(ey.grad.numpy(), ty.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bounds", [("t", None), (None, "t"), ("t", "u")])
def test_clamp_with_tensor_bounds_matches_torch(dtype, bounds):
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(dtype)
    b = {"t": np.random.default_rng(2).standard_normal(4).astype(dtype) - 0.5,
         "u": np.random.default_rng(3).standard_normal((3, 1)).astype(dtype) + 0.5}
    got = []
    for T in (torch, et):
        lo, hi = (None if v is None else T.tensor(b[v]) for v in bounds)
        got.append(T.clamp(T.tensor(x), min=lo, max=hi))
    assert str(got[1].dtype).split(".")[-1] == str(got[0].dtype).split(".")[-1]
    np.testing.assert_array_equal(got[1].numpy(), got[0].numpy())


OUT_CALLS = {
    "add": lambda T, a, o: T.add(a, a, out=o),
    "mul": lambda T, a, o: T.mul(a, 2.0, out=o),
    "sum": lambda T, a, o: T.sum(a, 1, out=o),
    "matmul": lambda T, a, o: T.matmul(a, a.t(), out=o),
    "cat": lambda T, a, o: T.cat([a, a], out=o),
    "index_select": lambda T, a, o: T.index_select(a, 0, T.tensor(I), out=o),
    "exp": lambda T, a, o: T.exp(a, out=o),
    "zeros": lambda T, a, o: T.zeros(2, 5, out=o),
    "arange": lambda T, a, o: T.arange(6, out=o),
}


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_matches_torch(name):
    to, eo = torch.empty(0, dtype=torch.float64), et.empty(0, dtype=et.float64)
    rt = OUT_CALLS[name](torch, torch.tensor(X), to)
    re = OUT_CALLS[name](et, et.tensor(X), eo)
    assert rt is to and re is eo
    assert tuple(eo.shape) == tuple(to.shape)
    np.testing.assert_allclose(eo.numpy(), to.numpy(), rtol=1e-12)


def test_out_errors_match_torch():
    for T in (torch, et):
        with pytest.raises(RuntimeError):
            T.mul(T.ones(2, requires_grad=True), 2.0, out=T.empty(2))
        with pytest.raises(RuntimeError):
            T.exp(T.ones(2), out=T.empty(0, dtype=T.int64))
        with pytest.raises(TypeError):
            T.add(T.ones(2), T.ones(2), out=[1.0])


def test_repeated_backward_matches_torch():
    results = []
    for T in (torch, et):
        w = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        r = T.mean(w)
        r.backward()
        r.backward()
        g = w.grad.clone()
        w.grad.zero_()
        r.backward()
        results.append((g.numpy().copy(), w.grad.numpy().copy()))
        y = (w * w).sum()
        y.backward()
        with pytest.raises(RuntimeError):
            y.backward()
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
