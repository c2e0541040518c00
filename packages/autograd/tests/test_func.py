"""``ember.autograd.func`` (PyTorch's ``torch.func``): the derivative transforms against
central finite differences in float64, forward mode against reverse mode, nesting, trees of
arguments, ``vmap`` against a Python loop over the examples (values and gradients), and the
errors of bad use. PyTorch parity is in ``tests/parity/test_parity_func.py``;
``functional_call`` is tested with ember-nn's modules."""
from __future__ import annotations

import numpy as np
import pytest

import ember.tensor as et
from ember.autograd import func

RNG = np.random.default_rng(0)


def _t(*shape):
    return et.from_numpy(RNG.standard_normal(shape))


def _num_jac(f, x, eps=1e-6):
    """d f(x) / d x by central differences: shape f(x).shape + x.shape."""
    base = x.numpy()
    out_shape = tuple(f(x).shape)
    jac = np.zeros(out_shape + base.shape)
    for idx in np.ndindex(base.shape):
        hi, lo = base.copy(), base.copy()
        hi[idx] += eps
        lo[idx] -= eps
        d = (f(et.from_numpy(hi)).numpy() - f(et.from_numpy(lo)).numpy()) / (2 * eps)
        jac[(...,) + idx] = d
    return jac


def _f(x):
    return (et.sin(x) * x.prod()).sum()


def _g(x):
    return et.tanh(x @ et.from_numpy(np.arange(12.0).reshape(3, 4) / 10))


def test_grad_and_value_match_finite_differences():
    x = _t(3)
    g, v = func.grad_and_value(_f)(x)
    assert np.allclose(g.numpy(), _num_jac(_f, x), atol=1e-7)
    assert np.allclose(v.numpy(), _f(x).numpy())
    assert not g.requires_grad and g.grad_fn is None
    assert np.allclose(func.grad(_f)(x).numpy(), g.numpy())


def test_grad_argnums_trees_and_aux():
    w, x = _t(3, 2), _t(4, 3)

    def loss(params, x):
        return ((x @ params["w"] + params["b"]).tanh() ** 2).mean(), x.sum()

    params = {"w": w, "b": _t(2)}
    grads, aux = func.grad(loss, has_aux=True)(params, x)
    assert set(grads) == {"w", "b"} and np.allclose(aux.numpy(), x.numpy().sum())
    num = _num_jac(lambda w_: loss({"w": w_, "b": params["b"]}, x)[0], w)
    assert np.allclose(grads["w"].numpy(), num, atol=1e-7)
    gw, gx = func.grad(lambda a, b: (a.sum(1) * b.sum(0)).sum(), argnums=(0, 1))(w, x)
    assert gw.shape == w.shape and gx.shape == x.shape
    # an argument the output does not read gets zeros
    gw, gx = func.grad(lambda a, b: (a ** 2).sum(), argnums=(0, 1))(w, x)
    assert np.array_equal(gx.numpy(), np.zeros((4, 3)))


def test_nested_grad_is_the_second_derivative():
    x = _t(4)
    d2 = func.grad(lambda y: func.grad(lambda z: (z ** 3).sum())(y).sum())(x)
    assert np.allclose(d2.numpy(), 6 * x.numpy())


def test_grad_of_an_argument_that_requires_grad_keeps_its_graph():
    x = _t(3).requires_grad_()
    g = func.grad(lambda y: (y ** 3).sum())(x)
    assert g.requires_grad
    g.sum().backward()
    assert np.allclose(x.grad.numpy(), 6 * x.detach().numpy())


def test_vjp_and_jvp_are_the_two_products_with_the_jacobian():
    x = _t(2, 3)
    J = _num_jac(_g, x).reshape(8, 6)
    out, fn = func.vjp(_g, x)
    assert np.allclose(out.numpy(), _g(x).numpy())
    ct = _t(2, 4)
    (vj,) = fn(ct)
    assert np.allclose(vj.numpy().ravel(), ct.numpy().ravel() @ J, atol=1e-7)
    tan = _t(2, 3)
    out2, jv = func.jvp(_g, (x,), (tan,))
    assert np.allclose(out2.numpy(), out.numpy())
    assert np.allclose(jv.numpy().ravel(), J @ tan.numpy().ravel(), atol=1e-7)


def test_jacrev_jacfwd_hessian():
    x = _t(2, 3)
    num = _num_jac(_g, x)
    assert np.allclose(func.jacrev(_g)(x).numpy(), num, atol=1e-7)
    assert np.allclose(func.jacfwd(_g)(x).numpy(), num, atol=1e-7)
    y = _t(3)
    H = func.hessian(_f)(y).numpy()
    num_h = _num_jac(lambda z: func.grad(_f)(z), y, eps=1e-5)
    assert np.allclose(H, num_h, atol=1e-6) and np.allclose(H, H.T, atol=1e-10)
    a, b = _t(3), _t(3)
    ja, jb = func.jacrev(lambda p, q: p * q.exp(), argnums=(0, 1))(a, b)
    assert np.allclose(ja.numpy(), np.diag(np.exp(b.numpy())))
    assert np.allclose(jb.numpy(), np.diag(a.numpy() * np.exp(b.numpy())))


def test_vmap_equals_the_loop_over_examples():
    xs, w = _t(5, 3), _t(3, 2).requires_grad_()

    def per_example(x, w):
        h = et.tanh(x @ w)
        return h.sum() if float(x.sum()) > 0 else (h ** 2).sum()  # control flow on values

    out = func.vmap(per_example, in_dims=(0, None))(xs, w)
    ref = et.stack([per_example(xs[i], w) for i in range(5)])
    assert np.allclose(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    g = w.grad.numpy().copy()
    w.grad = None
    ref.sum().backward()
    assert np.allclose(g, w.grad.numpy())


def test_vmap_dims_trees_chunks_and_nesting():
    x = _t(4, 3)
    t = func.vmap(lambda a: (a.sum(), {"sq": a * a}), in_dims=1, out_dims=(0, {"sq": 1}))(x)
    assert np.allclose(t[0].numpy(), x.numpy().sum(0))
    assert np.allclose(t[1]["sq"].numpy(), x.numpy() ** 2)
    assert np.allclose(func.vmap(lambda a: a * 2, chunk_size=3)(x).numpy(), 2 * x.numpy())
    outer = func.vmap(func.vmap(lambda a, b: a * b))(x, x)
    assert np.allclose(outer.numpy(), x.numpy() ** 2)
    ps = func.vmap(func.grad(lambda w, a: ((a * w) ** 2).sum()), in_dims=(None, 0))(x[0], x)
    assert np.allclose(ps.numpy(), 2 * x.numpy() ** 2 * x[0].numpy())


def test_errors():
    x = _t(3)
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        func.grad(lambda a: a * 2)(x)
    with pytest.raises(RuntimeError, match="only 1 positional inputs"):
        func.grad(_f, argnums=1)(x)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        func.vmap(et.add)(_t(3, 2), _t(4, 2))
    with pytest.raises(ValueError, match="must only return Tensors"):
        func.vmap(lambda a: 1.0)(x)
    with pytest.raises(ValueError, match="in_dim"):
        func.vmap(lambda a: a, in_dims=2)(x)
    with pytest.raises(NotImplementedError, match="randomness='same'"):
        func.vmap(lambda a: a, randomness="same")(x)
    with pytest.raises(RuntimeError, match="same shape"):
        func.jvp(_g, (_t(2, 3),), (_t(3, 2),))


def test_linearize_is_jvp_at_fixed_primals():
    x = _t(2, 3)
    out, jvp_fn = func.linearize(_g, x)
    assert np.allclose(out.numpy(), _g(x).numpy())
    J = _num_jac(_g, x).reshape(8, 6)
    for _ in range(2):  # the graph is reused
        tan = _t(2, 3)
        assert np.allclose(jvp_fn(tan).numpy().ravel(), J @ tan.numpy().ravel(), atol=1e-7)
    with pytest.raises(RuntimeError, match="tangent of shape"):
        jvp_fn(_t(3, 2))


def test_functionalize_and_debug_unwrap_keep_the_function_and_tensor():
    def f(x):
        y = x.clone()
        y.add_(1)
        return y * 2

    x = _t(3)
    assert np.array_equal(func.functionalize(f)(x).numpy(), f(x).numpy())
    assert func.debug_unwrap(x) is x
    with pytest.raises(RuntimeError, match="invalid argument"):
        func.functionalize(f, remove="everything")
