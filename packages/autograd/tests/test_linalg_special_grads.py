"""Gradients of ember.tensor.linalg and .special beyond the op table: the documented
ill-defined cases raise or give what PyTorch gives, and batched inputs broadcast."""
from __future__ import annotations

import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _t(a):
    return et.tensor(np.asarray(a, dtype=np.float64), requires_grad=True)


def test_svd_full_matrices_refuses_gradients_through_u_of_a_rectangular_matrix():
    A = _t(np.random.default_rng(0).standard_normal((4, 3)))
    U, S, Vh = et.linalg.svd(A, full_matrices=True)
    with pytest.raises(RuntimeError, match="full_matrices"):
        U.sum().backward()
    S2 = et.linalg.svd(A, full_matrices=True).S  # singular values alone are fine
    S2.sum().backward()
    assert A.grad.shape == (4, 3)


def test_qr_mode_r_has_no_gradient():
    A = _t(np.eye(3) + 0.1)
    with pytest.raises(RuntimeError, match="mode='r'"):
        et.linalg.qr(A, mode="r").R.sum().backward()


def test_zeta_and_igamma_first_argument_gradients_are_not_implemented():
    x, q = _t([2.0, 3.0]), _t([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="zeta"):
        et.special.zeta(x, q).sum().backward()
    with pytest.raises(NotImplementedError, match="igamma"):
        et.igamma(x, q).sum().backward()


def test_det_gradient_is_the_cofactor_matrix():
    A = _t([[2.0, 1.0], [1.0, 3.0]])
    et.linalg.det(A).backward()
    np.testing.assert_allclose(A.grad.numpy(), [[3.0, -1.0], [-1.0, 2.0]])


def test_solve_with_broadcast_batch_reduces_gradient_to_each_input():
    rng = np.random.default_rng(1)
    A = _t(rng.standard_normal((3, 3)) + 3 * np.eye(3))
    B = _t(rng.standard_normal((2, 3, 2)))
    assert ag.gradcheck(et.linalg.solve, (A, B))


def test_hessian_of_logdet_matches_its_closed_form():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((3, 3))
    A = _t(a @ a.T + 3 * np.eye(3))
    (g,) = ag.grad(et.logdet(A), [A], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), np.linalg.inv(A.detach().numpy()).T,
                               atol=1e-10)
    assert ag.gradgradcheck(et.logdet, (A,))


def test_polygamma_and_lgamma_chain_to_second_order():
    x = _t([0.7, 1.5, 3.0])
    assert ag.gradgradcheck(et.lgamma, (x,))
    assert ag.gradgradcheck(lambda t: et.polygamma(2, t), (x,))


def test_scatter_reduce_amax_ties_share_the_gradient():
    x = _t([1.0, 0.0])
    src = _t([1.0, 0.5])
    out = et.scatter_reduce(x, 0, et.tensor([0, 1]), src, "amax")
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.5, 0.0])
    np.testing.assert_allclose(src.grad.numpy(), [0.5, 1.0])


def test_cdist_gemm_path_gradient():
    """p = 2 over more than 25 rows takes the GEMM formula: its gradient passes gradcheck on
    distinct points, and coincident points give 0 and a zero gradient, as PyTorch's
    ``_euclidean_dist_backward`` does."""
    rng = np.random.default_rng(1)
    a, b = _t(rng.standard_normal((30, 3))), _t(rng.standard_normal((4, 3)))
    assert ag.gradcheck(lambda u, v: et.cdist(u, v), (a, b))
    x = _t(np.zeros((30, 3)))
    d = et.cdist(x, x)
    d.sum().backward()
    assert d.detach().numpy().max() == 0 and not x.grad.numpy().any()
