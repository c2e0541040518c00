"""``ember.autograd.func`` against ``torch.func`` (PyTorch 2.13 CPU, float64): ``grad``,
``grad_and_value`` (argnums, dict arguments, ``has_aux``, nesting), ``vjp``, ``jvp``,
``jacrev``, ``jacfwd``, ``hessian``, ``vmap`` (in_dims / out_dims trees, chunks, nesting,
per-example gradients) and ``functional_call`` on modules, with the exception types of bad
use."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as enn  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.autograd import func as ef  # noqa: E402

tf = torch.func
# PyTorch's forward-mode transforms import torch.jit.script, deprecated in 2.13, on first use
pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script` is deprecated:DeprecationWarning")
RNG = np.random.default_rng(0)


def _pair(*shape):
    a = RNG.standard_normal(shape)
    return et.from_numpy(a.copy()), torch.from_numpy(a.copy())


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [x for t in tree for x in _leaves(t)]
    if isinstance(tree, dict):
        return [x for k in sorted(tree) for x in _leaves(tree[k])]
    return [tree]


def _close(a, b, tol=1e-10):
    la, lb = _leaves(a), _leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        x, y = x.detach().numpy(), y.detach().numpy()
        assert x.shape == y.shape
        np.testing.assert_allclose(x, y, atol=tol, rtol=tol)


EX, TX = _pair(3, 4)
EY, TY = _pair(4, 2)
E1, T1 = _pair(5)


def _loss(m):
    return lambda x, y: (m.sin(x @ y) ** 2).sum()


def _two(m):
    return lambda x, y: (m.tanh(x @ y), x.sum(1))


def _mlp_loss(m):
    return lambda p, x: ((x @ p["w"] + p["b"]).tanh() ** 2).mean()


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0)])
def test_grad_and_value(argnums):
    _close(ef.grad_and_value(_loss(et), argnums=argnums)(EX, EY),
           tf.grad_and_value(_loss(torch), argnums=argnums)(TX, TY))


def test_grad_trees_aux_and_nesting():
    ep = {"w": EY, "b": et.zeros(2, dtype=et.float64)}
    tp = {"w": TY, "b": torch.zeros(2, dtype=torch.float64)}
    _close(ef.grad(_mlp_loss(et))(ep, EX), tf.grad(_mlp_loss(torch))(tp, TX))
    aux = lambda m: (lambda x: ((x ** 2).sum(), x.mean()))  # noqa: E731
    _close(ef.grad(aux(et), has_aux=True)(EX), tf.grad(aux(torch), has_aux=True)(TX))
    inner = lambda m: (lambda x: (m.sin(x) * x).sum())  # noqa: E731
    _close(ef.grad(lambda x: ef.grad(inner(et))(x).sum())(E1),
           tf.grad(lambda x: tf.grad(inner(torch))(x).sum())(T1))


def test_vjp_and_jvp():
    eo, efn = ef.vjp(_two(et), EX, EY)
    to, tfn = tf.vjp(_two(torch), TX, TY)
    _close(eo, to)
    ec, tc = _pair(3, 2)
    ed, td = _pair(3)
    _close(efn((ec, ed)), tfn((tc, td)))
    ea, ta = _pair(3, 4)
    eb, tb = _pair(4, 2)
    _close(ef.jvp(_two(et), (EX, EY), (ea, eb)), tf.jvp(_two(torch), (TX, TY), (ta, tb)))


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_jacobians(argnums):
    f = lambda m: (lambda x, y: m.tanh(x @ y))  # noqa: E731
    _close(ef.jacrev(f(et), argnums=argnums)(EX, EY),
           tf.jacrev(f(torch), argnums=argnums)(TX, TY))
    _close(ef.jacfwd(f(et), argnums=argnums)(EX, EY),
           tf.jacfwd(f(torch), argnums=argnums)(TX, TY))


def test_hessian():
    s = lambda m: (lambda x: (m.sin(x) * x.prod()).sum())  # noqa: E731
    _close(ef.hessian(s(et))(E1), tf.hessian(s(torch))(T1))


@pytest.mark.parametrize("case", range(6))
def test_vmap(case):
    ev, tv = ef.vmap, torch.vmap
    cases = [
        (lambda v, m: v(m.dot)(EX if m is et else TX, EX if m is et else TX)),
        (lambda v, m: v(lambda a, b: a @ b, in_dims=(0, None))(EX if m is et else TX,
                                                               EY if m is et else TY)),
        (lambda v, m: v(lambda a: (a.sum(), a * 2), out_dims=(0, 1))(EX if m is et else TX)),
        (lambda v, m: v(lambda a: a.sum(), in_dims=1)(EX if m is et else TX)),
        (lambda v, m: v(v(m.mul))(EX if m is et else TX, EX if m is et else TX)),
        (lambda v, m: v(lambda a: a ** 2, chunk_size=2)(EX if m is et else TX)),
    ]
    _close(cases[case](ev, et), cases[case](tv, torch))


def test_per_example_gradients():
    def loss(p, x, y):
        return ((x @ p["w"] + p["b"] - y) ** 2).sum()

    ep = {"w": EY, "b": et.zeros(2, dtype=et.float64)}
    tp = {"w": TY, "b": torch.zeros(2, dtype=torch.float64)}
    ey, ty = _pair(3, 2)
    _close(ef.vmap(ef.grad(loss), in_dims=(None, 0, 0))(ep, EX, ey),
           torch.vmap(tf.grad(loss), in_dims=(None, 0, 0))(tp, TX, ty))


@pytest.mark.parametrize("make", [
    lambda m: m.Linear(4, 3),
    lambda m: m.Sequential(m.Linear(4, 5), m.ReLU(), m.Linear(5, 2)),
    lambda m: m.BatchNorm1d(4),
    lambda m: m.GRUCell(4, 3),
])
def test_functional_call(make):
    torch.manual_seed(0)
    tm, em = make(torch.nn).double(), make(enn).double()
    em.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    new = {k: RNG.standard_normal(tuple(v.shape)) for k, v in tm.named_parameters()}
    ep = {k: et.from_numpy(v.copy()).requires_grad_() for k, v in new.items()}
    tp = {k: torch.from_numpy(v.copy()).requires_grad_() for k, v in new.items()}
    eo = ef.functional_call(em, ep, (EX,))
    to = tf.functional_call(tm, tp, (TX,))
    _close(eo, to)
    eo.sum().backward()
    to.sum().backward()
    _close({k: v.grad for k, v in ep.items()}, {k: v.grad for k, v in tp.items()})
    _close(em(EX), tm(TX))  # the module's own parameters are back


@pytest.mark.parametrize("call", [
    lambda f, m: f.grad(lambda a: a * 2)(m.ones(3, dtype=m.float64)),
    lambda f, m: f.grad(lambda a: a.sum(), argnums=1)(m.ones(3, dtype=m.float64)),
    lambda f, m: f.vmap(m.add)(m.ones(3, 2), m.ones(4, 2)),
    lambda f, m: f.vmap(lambda a: 1.0)(m.ones(3)),
    lambda f, m: f.vmap(lambda a: a, in_dims=2)(m.ones(3)),
    lambda f, m: f.jvp(m.sin, (m.ones(2, 3),), (m.ones(3, 2),)),
    lambda f, m: f.jvp(m.sin, [m.ones(2)], [m.ones(2)]),
])
def test_errors(call):
    with pytest.raises(Exception) as te:
        call(tf, torch)
    with pytest.raises(type(te.value)):
        call(ef, et)


# PyTorch's linearize traces with FX, which warns about its own graph
@pytest.mark.filterwarnings("ignore:Attempted to insert a get_attr Node:UserWarning")
def test_linearize():
    f = lambda m: (lambda x, y: m.tanh(x @ y))  # noqa: E731
    eo, efn = ef.linearize(f(et), EX, EY)
    to, tfn = tf.linearize(f(torch), TX, TY)
    _close(eo, to)
    ea, ta = _pair(3, 4)
    eb, tb = _pair(4, 2)
    _close(efn(ea, eb), tfn(ta, tb))


def test_ensemble_with_stack_module_state():
    torch.manual_seed(1)
    tms = [torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double()
           for _ in range(3)]
    ems = [enn.Sequential(enn.Linear(4, 3), enn.BatchNorm1d(3)).double() for _ in range(3)]
    for em, tm in zip(ems, tms):
        em.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                            for k, v in tm.state_dict().items()})
        em.eval()
        tm.eval()
    ep, eb = ef.stack_module_state(ems)
    tp, tb = tf.stack_module_state(tms)
    _close(ep, tp)
    _close(eb, tb)
    for k in tp:
        assert ep[k].requires_grad == tp[k].requires_grad and ep[k].is_leaf

    def run(f, m0):
        return lambda p, b, x: f.functional_call(m0, (p, b), (x,))

    eo = ef.vmap(run(ef, ems[0]), in_dims=(0, 0, None))(ep, eb, EX)
    to = torch.vmap(run(tf, tms[0]), in_dims=(0, 0, None))(tp, tb, TX)
    _close(eo, to)


def test_replace_all_batch_norm_modules():
    tn = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3)).double()
    en = enn.Sequential(enn.Linear(4, 3), enn.BatchNorm1d(3)).double()
    en.load_state_dict({k: et.from_numpy(v.detach().numpy().copy())
                        for k, v in tn.state_dict().items()})
    tf.replace_all_batch_norm_modules_(tn)
    ef.replace_all_batch_norm_modules_(en)
    assert sorted(en.state_dict()) == sorted(tn.state_dict())
    _close(en.eval()(EX), tn.eval()(TX))
