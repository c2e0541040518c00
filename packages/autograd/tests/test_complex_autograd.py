"""Gradients of complex tensors under PyTorch's convention: for a real loss L of z = x + iy,
``z.grad`` is dL/dx + i dL/dy. Every case is checked by finite differences over the real and
imaginary parts (gradcheck and gradgradcheck in complex128), plus the rules at the edges:
a real input behind a complex op gets a real gradient, backward from a complex output needs
an explicit gradient, and an op with no complex derivative says so instead of computing a
wrong one."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et

RNG = np.random.default_rng(3)


def cz(*shape):
    return et.tensor(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape),
                     dtype=et.complex128).requires_grad_()


def rz(*shape):
    return et.tensor(RNG.standard_normal(shape), dtype=et.float64).requires_grad_()


CASES = {
    "mul": (lambda a, b: a * b, lambda: (cz(3), cz(3))),
    "mul_real_complex": (lambda a, b: a * b, lambda: (rz(3), cz(3))),
    "div": (lambda a, b: a / b, lambda: (cz(3), cz(3))),
    "add_scalar": (lambda a, b: a + b * 2j, lambda: (cz(3), cz(3))),
    "sub_real": (lambda a, b: a - b, lambda: (cz(3), rz(3))),
    "pow_scalar": (lambda a: a ** 3, lambda: (cz(3),)),
    "pow_tensor": (lambda a, b: a ** b, lambda: (cz(3), cz(3))),
    "exp": (et.exp, lambda: (cz(3),)), "log": (et.log, lambda: (cz(3),)),
    "sqrt": (et.sqrt, lambda: (cz(3),)), "rsqrt": (et.rsqrt, lambda: (cz(3),)),
    "sin": (et.sin, lambda: (cz(3),)), "cos": (et.cos, lambda: (cz(3),)),
    "tan": (et.tan, lambda: (cz(3),)), "tanh": (et.tanh, lambda: (cz(3),)),
    "sigmoid": (et.sigmoid, lambda: (cz(3),)), "asin": (et.asin, lambda: (cz(3),)),
    "atan": (et.atan, lambda: (cz(3),)), "sinh": (et.sinh, lambda: (cz(3),)),
    "reciprocal": (et.reciprocal, lambda: (cz(3),)), "square": (et.square, lambda: (cz(3),)),
    "log1p": (et.log1p, lambda: (cz(3),)), "expm1": (et.expm1, lambda: (cz(3),)),
    "abs": (et.abs, lambda: (cz(3),)), "angle": (et.angle, lambda: (cz(3),)),
    "sgn": (et.sgn, lambda: (cz(3),)), "real": (et.real, lambda: (cz(3),)),
    "imag": (et.imag, lambda: (cz(3),)), "conj": (et.conj, lambda: (cz(3),)),
    "view_as_real": (et.view_as_real, lambda: (cz(3),)),
    "view_as_complex": (et.view_as_complex, lambda: (rz(3, 2),)),
    "complex": (et.complex, lambda: (rz(3), rz(3))),
    "polar": (et.polar, lambda: (rz(3), rz(3))),
    "sum": (lambda a: a.sum(), lambda: (cz(3, 2),)),
    "mean": (lambda a: a.mean(0), lambda: (cz(3, 2),)),
    "prod": (lambda a: a.prod(), lambda: (cz(3),)),
    "matmul": (lambda a, b: a @ b, lambda: (cz(2, 3), cz(3, 2))),
    "bmm": (et.bmm, lambda: (cz(2, 2, 3), cz(2, 3, 2))),
    "dot": (et.dot, lambda: (cz(3), cz(3))), "vdot": (et.vdot, lambda: (cz(3), cz(3))),
    "cat": (lambda a, b: et.cat([a, b]), lambda: (cz(2), cz(3))),
    "index": (lambda a: a[[0, 2]], lambda: (cz(3),)),
    "views": (lambda a: a.reshape(3, 2).t().flip(0), lambda: (cz(6),)),
    "cumsum": (lambda a: a.cumsum(0), lambda: (cz(4),)),
    "cumprod": (lambda a: a.cumprod(0), lambda: (cz(4),)),
    "real_to_complex": (lambda a: a.to(et.complex128) * (2 + 1j), lambda: (rz(3),)),
    "abs_squared": (lambda a: (a.abs() ** 2).sum(), lambda: (cz(3),)),
    "var": (lambda a: a.var(), lambda: (cz(4),)),
    "norm": (lambda a: a.norm(), lambda: (cz(3),)),
    "vector_norm_1": (lambda a: et.linalg.vector_norm(a, 1), lambda: (cz(3),)),
    "where": (lambda a, b: et.where(et.tensor([True, False, True]), a, b),
              lambda: (cz(3), cz(3))),
    "logsumexp": (lambda a: a.logsumexp(0), lambda: (cz(3),)),
    "einsum": (lambda a, b: et.einsum("ij,jk->ik", a, b), lambda: (cz(2, 3), cz(3, 2))),
    "outer": (et.outer, lambda: (cz(2), cz(3))),
    "lerp": (lambda a, b: et.lerp(a, b, 0.3), lambda: (cz(3), cz(3))),
    "stack": (lambda a, b: et.stack([a, b]), lambda: (cz(3), cz(3))),
    "chunk": (lambda a: a.chunk(2)[1], lambda: (cz(4),)),
    "trace": (lambda a: a.trace(), lambda: (cz(3, 3),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck(name):
    fn, make = CASES[name]
    assert ag.gradcheck(fn, make())


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradgradcheck(name):
    fn, make = CASES[name]
    assert ag.gradgradcheck(fn, make())


def test_convention_matches_partial_derivatives():
    # L = |z|^2 = x^2 + y^2: the gradient is 2x + 2iy
    z = et.tensor([1.0 + 2.0j, -3.0 + 0.5j], requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * z.detach().numpy(), rtol=1e-6)
    # L = Re(c z) = ax - by for c = a + ib: the gradient is a - ib = conj(c)
    w = et.tensor([0.3 - 1.0j], dtype=et.complex128, requires_grad=True)
    et.real(w * (2 + 5j)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [2 - 5j])


def test_real_input_gets_real_gradient():
    x = et.tensor([1.0, 2.0], dtype=et.float64, requires_grad=True)
    et.view_as_real(x * (1 + 2j)).sum().backward()
    assert x.grad.dtype is et.float64
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


def test_leaf_gradient_accumulates_in_complex():
    z = cz(2)
    for _ in range(2):
        et.real(z * 1j).sum().backward()
    assert z.grad.dtype is et.complex128
    np.testing.assert_allclose(z.grad.numpy(), [-2j, -2j])


def test_complex_tensors_may_require_grad_but_ints_not():
    assert et.zeros(2, dtype=et.complex64).requires_grad_().requires_grad
    with pytest.raises(RuntimeError, match="floating point and complex"):
        et.zeros(2, dtype=et.int64).requires_grad_()


def test_implicit_gradient_needs_a_real_output():
    z = cz(2)
    with pytest.raises(RuntimeError, match="real scalar outputs"):
        z.sum().backward()
    z.sum().backward(et.tensor(1.0 + 0j, dtype=et.complex128))
    np.testing.assert_allclose(z.grad.numpy(), [1, 1])


def test_op_without_complex_derivative_raises(monkeypatch):
    from ember.autograd.derivatives import TABLE

    monkeypatch.setattr(TABLE["exp"], "complex", None)
    with pytest.raises(NotImplementedError, match="'exp' is not implemented for complex"):
        et.exp(cz(3))
    et.exp(rz(3))  # real tensors are unaffected
    with ag.no_grad():
        et.exp(cz(3))  # nothing is recorded without grad


def test_holomorphic_entry_is_conjugated_at_record_time():
    # the node of a complex mul runs the conjugated formula: g * conj(b)
    a, b = cz(2), cz(2)
    out = a * b
    g = et.tensor([1 + 1j, 2 - 1j], dtype=et.complex128)
    ga, gb = ag.grad(out, (a, b), g)
    np.testing.assert_allclose(ga.numpy(), (g.numpy() * np.conj(b.detach().numpy())))
    np.testing.assert_allclose(gb.numpy(), (g.numpy() * np.conj(a.detach().numpy())))
