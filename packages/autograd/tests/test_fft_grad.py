"""Gradients of ember.tensor.fft's transforms: gradcheck and gradgradcheck (float64 and
complex128 inputs, over real coordinates) of every public transform with ``n``/``s``
trimming and padding, ``dim`` and each ``norm``; and the three primitives' derivatives
(the adjoint of a DFT is the DFT the other way with the same scaling)."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et

F = et.fft
RNG = np.random.default_rng(2024)
NORMS = [None, "ortho", "forward"]


def _real(*shape):
    return et.tensor(RNG.standard_normal(shape)).requires_grad_(True)


def _cplx(*shape):
    return et.tensor(RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)) \
        .requires_grad_(True)


def _check(fn, x):
    assert ag.gradcheck(fn, (x,), eps=1e-6, atol=1e-6, rtol=1e-4)
    assert ag.gradgradcheck(fn, (x,), eps=1e-6, atol=1e-5, rtol=1e-3)


# (n, dim) for the 1-d transforms of a (3, 6) input: default, trimmed, padded, odd, dim 0
ONE_D_ARGS = [(None, -1), (4, -1), (9, 1), (5, 0), (None, 0)]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,dim", ONE_D_ARGS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "ihfft", "irfft", "hfft"])
def test_1d_gradients_of_real_input(name, n, dim, norm):
    fn = F.__dict__[name]
    _check(lambda x: fn(x, n, dim, norm), _real(3, 6))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n,dim", ONE_D_ARGS)
@pytest.mark.parametrize("name", ["fft", "ifft", "irfft", "hfft"])
def test_1d_gradients_of_complex_input(name, n, dim, norm):
    fn = F.__dict__[name]
    _check(lambda x: fn(x, n, dim, norm), _cplx(3, 6))


# (s, dim) for the n-d transforms of a (3, 4, 5) input
N_D_ARGS = [(None, None), ((2, 6), None), ((4, 3), (0, 2)), (None, (2, 0)), ((-1, 7), (1, 2)),
            ((3,), (1,))]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", N_D_ARGS)
@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "ihfftn", "irfftn", "hfftn"])
def test_nd_gradients_of_real_input(name, s, dim, norm):
    fn = F.__dict__[name]
    _check(lambda x: fn(x, s, dim, norm), _real(3, 4, 5))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s,dim", N_D_ARGS)
@pytest.mark.parametrize("name", ["fftn", "ifftn", "irfftn", "hfftn"])
def test_nd_gradients_of_complex_input(name, s, dim, norm):
    fn = F.__dict__[name]
    _check(lambda x: fn(x, s, dim, norm), _cplx(3, 4, 5))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("s", [None, (5, 3), (2, -1)])
@pytest.mark.parametrize("name,cplx", [
    ("fft2", False), ("fft2", True), ("ifft2", False), ("ifft2", True), ("rfft2", False),
    ("ihfft2", False), ("irfft2", False), ("irfft2", True), ("hfft2", False),
    ("hfft2", True)])
def test_2d_gradients(name, cplx, s, norm):
    fn = F.__dict__[name]
    _check(lambda x: fn(x, s, norm=norm), _cplx(2, 3, 4) if cplx else _real(2, 3, 4))


def test_gradient_of_the_real_part_of_an_fft_is_the_dft_of_ones():
    # L = sum(real(fft(x))): dL/dx_k = sum_j cos(2 pi j k / n)
    x = _real(5)
    F.fft(x).real.sum().backward()
    n = np.arange(5)
    want = np.cos(2 * np.pi * np.outer(n, n) / 5).sum(0)
    np.testing.assert_allclose(x.grad.numpy(), want, atol=1e-12)


def test_c2r_gradient_counts_the_mirrored_bins_twice():
    # irfft(X, n=4) reads bins 0 and 2 once and bin 1 twice (with its mirror, bin 3)
    x = _cplx(3)
    F.irfft(x, n=4, norm="forward").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 0.0, 0.0], atol=1e-12)
    y = _cplx(3)
    F.irfft(y, n=4, norm="forward")[1].backward()
    # output 1 = X0 + 2 Re(X1 e^{i pi / 2}) + X2 e^{i pi} = X0 - 2 Im X1 - Re X2
    np.testing.assert_allclose(y.grad.numpy(), [1.0, -2.0j, -1.0], atol=1e-12)

