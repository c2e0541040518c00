"""``ember.nn.utils.parametrize``, ``.parametrizations`` (weight_norm, spectral_norm,
orthogonal) and the legacy hook-based ``weight_norm`` / ``spectral_norm``: values against
NumPy, gradients by finite differences in float64, state_dict round trips, removal, and
PyTorch's exception types."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import ember.nn as nn
import ember.tensor as et
from ember.autograd import gradcheck, no_grad
from ember.nn.utils import parametrizations as PZ
from ember.nn.utils import parametrize as P
from ember.nn.utils import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm


def _np(t):
    return t.detach().numpy()


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Scale(nn.Module):
    def __init__(self, c=3.0):
        super().__init__()
        self.c = c
        self.calls = 0

    def forward(self, X):
        self.calls += 1
        return self.c * X

    def right_inverse(self, A):
        return A / self.c


class NoInverse(nn.Module):
    def forward(self, X):
        return X.abs()


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        U, S, Vh = et.linalg.svd(Z, full_matrices=False)
        s0 = S[0].sqrt().unsqueeze(-1)
        return U[..., :, 0] * s0, Vh[..., 0, :] * s0


def _sym_np(W):
    return np.triu(W) + np.triu(W, 1).T


def _linear64(n_in, n_out, seed=0):
    et.manual_seed(seed)
    return nn.Linear(n_in, n_out).double()


def _check_grads(m, x):
    """gradcheck of ``m(x)`` with respect to ``x`` and every parameter of ``m`` (the
    parametrizations' originals included); the parameters are perturbed in place."""
    params = tuple(m.parameters())
    assert gradcheck(lambda x, *ps: m(x), (x, *params))


# ---------------------------------------------------------------------- parametrize
def test_register_moves_tensor_and_swaps_class():
    m = _linear64(3, 3)
    w = m.weight
    W = _np(w).copy()
    assert P.register_parametrization(m, "weight", Symmetric()) is m
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear
    assert P.type_before_parametrizations(nn.ReLU()) is nn.ReLU
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias") and not P.is_parametrized(nn.Linear(2, 2))
    # the Parameter object stays (an optimizer holding it keeps working), holding triu(W)
    assert m.parametrizations.weight.original is w
    np.testing.assert_allclose(_np(w), np.triu(W))
    np.testing.assert_allclose(_np(m.weight), _sym_np(np.triu(W)))
    assert isinstance(m.parametrizations.weight, P.ParametrizationList)
    assert isinstance(type(m).weight, property)
    assert repr(m) == ("ParametrizedLinear(\n  in_features=3, out_features=3, bias=True\n"
                       "  (parametrizations): ModuleDict(\n"
                       "    (weight): ParametrizationList(\n      (0): Symmetric()\n    )\n"
                       "  )\n)")
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    x = et.randn(2, 3, dtype=et.float64)
    np.testing.assert_allclose(_np(m(x)), _np(x) @ _sym_np(np.triu(W)).T + _np(m.bias))
    # another instance of the class is untouched
    assert type(nn.Linear(3, 3)) is nn.Linear


def test_assignment_goes_through_right_inverse():
    m = _linear64(3, 3)
    P.register_parametrization(m, "weight", Scale())
    A = np.arange(9.0).reshape(3, 3)
    m.weight = et.tensor(A, dtype=et.float64)
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), A / 3)
    np.testing.assert_allclose(_np(m.weight), A)
    with pytest.raises(KeyError, match="already exists"):
        m.weight = nn.Parameter(et.zeros(3, 3, dtype=et.float64))
    with pytest.raises(ValueError, match="has dtype"):
        m.weight = et.zeros(3, 3, dtype=et.float32)


def test_chained_parametrizations():
    m = _linear64(3, 3)
    W = _np(m.weight).copy()
    P.register_parametrization(m, "weight", Symmetric())
    P.register_parametrization(m, "weight", Scale(2.0))
    assert len(m.parametrizations.weight) == 2
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    np.testing.assert_allclose(_np(m.weight), 2 * _sym_np(np.triu(W)))
    # assignment: Scale's inverse first, then Symmetric's
    A = _sym_np(np.arange(9.0).reshape(3, 3))
    m.weight = et.tensor(A, dtype=et.float64)
    np.testing.assert_allclose(_np(m.parametrizations.weight.original), np.triu(A / 2))
    np.testing.assert_allclose(_np(m.weight), A)
    _check_grads(m, et.randn(2, 3, dtype=et.float64))


def test_sequence_right_inverse_gives_original0_original1():
    m = _linear64(4, 3)
    P.register_parametrization(m, "weight", RankOne())
    plist = m.parametrizations.weight
    assert not plist.is_tensor and plist.ntensors == 2
    assert [n for n, _ in m.named_parameters()] == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    x, y = _np(plist.original0), _np(plist.original1)
    np.testing.assert_allclose(_np(m.weight), np.outer(x, y))
    assert np.linalg.matrix_rank(_np(m.weight)) == 1
    target = np.outer([1.0, 2.0, 3.0], [1.0, 0.0, -1.0, 2.0])
    m.weight = et.tensor(target, dtype=et.float64)
    np.testing.assert_allclose(_np(m.weight), target, atol=1e-12)
    _check_grads(m, et.randn(2, 4, dtype=et.float64))
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), target, atol=1e-12)


def test_parametrized_buffer():
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", et.tensor([[1.0, 2.0], [3.0, 4.0]]))

    m = P.register_parametrization(Holder(), "buf", Symmetric())
    assert type(m).__name__ == "ParametrizedHolder"
    assert list(m.state_dict()) == ["parametrizations.buf.original"]
    assert [n for n, _ in m.named_buffers()] == ["parametrizations.buf.original"]
    assert list(m.parameters()) == []
    np.testing.assert_allclose(_np(m.buf), [[1.0, 2.0], [2.0, 4.0]])
    P.remove_parametrizations(m, "buf")
    assert "buf" in m._buffers and not isinstance(m.buf, nn.Parameter)
    np.testing.assert_allclose(_np(m.buf), [[1.0, 2.0], [2.0, 4.0]])


def test_cached_computes_once():
    m = _linear64(3, 3)
    scale = Scale()
    P.register_parametrization(m, "weight", scale)
    scale.calls = 0
    with P.cached():
        a, b = m.weight, m.weight
        with P.cached():  # nested: still the same cache
            c = m.weight
    assert a is b is c and scale.calls == 1
    d = m.weight
    assert d is not a and scale.calls == 2
    np.testing.assert_allclose(_np(d), _np(a))


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    m = _linear64(3, 3)
    W = _np(m.weight).copy()
    P.register_parametrization(m, "weight", Scale())
    P.register_parametrization(m, "bias", Scale(2.0))
    orig = m.parametrizations.weight.original
    P.remove_parametrizations(m, "weight", leave_parametrized=leave)
    assert type(m).__name__ == "ParametrizedLinear"  # bias is still parametrized
    assert m.weight is orig and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(_np(m.weight), W if leave else W / 3)
    assert [n for n, _ in m.named_parameters()] == ["weight", "parametrizations.bias.original"]
    P.remove_parametrizations(m, "bias", leave_parametrized=leave)
    assert type(m) is nn.Linear and "parametrizations" not in m._modules
    assert not hasattr(m, "parametrizations")
    assert list(m.state_dict()) == ["weight", "bias"]


def test_parametrize_errors():
    m = _linear64(3, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a "
                                         "parametrized element with name 'wieght'"):
        P.register_parametrization(m, "wieght", Scale())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(m, "weight")

    class Drop(nn.Module):
        def forward(self, X):
            return X[:-1]

    class ToFloat(nn.Module):
        def forward(self, X):
            return X.float()

    class BadInverse(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return X[:-1]

    class NotATensor(nn.Module):
        def forward(self, X):
            return X

        def right_inverse(self, X):
            return 3

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Drop())
    with pytest.raises(ValueError, match="may not change the dtype"):
        P.register_parametrization(m, "weight", ToFloat())
    with pytest.raises(ValueError, match="must return a Tensor or a Sequence"):
        P.register_parametrization(m, "weight", NotATensor())
    assert not P.is_parametrized(m) and type(m) is nn.Linear  # nothing half-registered
    # unsafe: the shape may change
    u = P.register_parametrization(_linear64(3, 3), "weight", Drop(), unsafe=True)
    assert tuple(u.weight.shape) == (2, 3)
    # chained: the new parametrization's right_inverse is checked against the shape
    P.register_parametrization(m, "weight", Scale())
    with pytest.raises(ValueError, match="right_inverse must have the same shape"):
        P.register_parametrization(m, "weight", BadInverse())
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Drop())
    assert len(m.parametrizations.weight) == 1
    # assignment needs every right_inverse
    P.register_parametrization(m, "weight", NoInverse())
    with pytest.raises(RuntimeError, match="NoInverse does not implement right_inverse"):
        m.weight = et.zeros(3, 3, dtype=et.float64)
    with pytest.raises(ValueError, match="requires one or more modules"):
        P.ParametrizationList([], et.zeros(2))


def test_train_mode_follows_module_and_pickling_refused(tmp_path):
    m = _linear64(3, 3).eval()
    s = Scale()
    P.register_parametrization(m, "weight", s)
    assert not s.training
    m.train()
    assert s.training
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    c = copy.deepcopy(m)
    assert type(c) is type(m) and c.parametrizations.weight.original is not \
        m.parametrizations.weight.original
    np.testing.assert_allclose(_np(c.weight), _np(m.weight))
    m.float()
    assert m.weight.dtype == et.float32 and m.parametrizations.weight.original.dtype == et.float32


def test_transfer_parametrizations_and_params():
    a = _linear64(3, 3)
    P.register_parametrization(a, "weight", Symmetric())
    P.register_parametrization(a, "weight", Scale())
    b = P.transfer_parametrizations_and_params(a, _linear64(3, 3, seed=1))
    assert type(b).__name__ == "ParametrizedLinear"
    assert b.parametrizations.weight.original is a.parametrizations.weight.original
    assert len(b.parametrizations.weight) == 2
    np.testing.assert_allclose(_np(b.weight), _np(a.weight))
    # a module without the tensor gets it created
    c = P.transfer_parametrizations_and_params(a, nn.Identity(), "weight")
    np.testing.assert_allclose(_np(c.weight), _np(a.weight))
    # nothing to transfer: returned unchanged
    d = nn.Linear(2, 2)
    assert P.transfer_parametrizations_and_params(nn.Linear(2, 2), d) is d and type(d) is nn.Linear


# ---------------------------------------------------------------------- weight_norm
@pytest.mark.parametrize("dim", [0, 1, -2, None])
def test_weight_norm_values(dim):
    et.manual_seed(0)
    m = nn.Conv2d(2, 3, 3).double()
    W = _np(m.weight).copy()
    PZ.weight_norm(m, dim=dim)
    g, v = m.parametrizations.weight.original0, m.parametrizations.weight.original1
    if dim is None:
        axes, gshape = None, ()
    else:
        d = dim % 4
        axes = tuple(a for a in range(4) if a != d)
        gshape = tuple(W.shape[a] if a == d else 1 for a in range(4))
    norm = np.sqrt((W ** 2).sum(axis=axes, keepdims=dim is not None))
    assert tuple(g.shape) == gshape
    np.testing.assert_allclose(_np(g), norm)
    np.testing.assert_allclose(_np(v), W)
    np.testing.assert_allclose(_np(m.weight), W, rtol=1e-12)
    with no_grad():
        g.mul_(2.0)
    np.testing.assert_allclose(_np(m.weight), 2 * W, rtol=1e-12)
    _check_grads(m, et.randn(1, 2, 4, 4, dtype=et.float64))


def test_weight_norm_state_dict_and_legacy_checkpoint(tmp_path):
    m = PZ.weight_norm(_linear64(4, 3))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    path = tmp_path / "wn.pt"
    et.save(m.state_dict(), path)
    m2 = PZ.weight_norm(_linear64(4, 3, seed=5))
    m2.load_state_dict(et.load(path))
    np.testing.assert_allclose(_np(m2.weight), _np(m.weight))
    # a checkpoint of the hook-based weight_norm (weight_g, weight_v) loads too
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        old = weight_norm(_linear64(4, 3, seed=7))
    m3 = PZ.weight_norm(_linear64(4, 3, seed=5))
    m3.load_state_dict(old.state_dict())
    np.testing.assert_allclose(_np(m3.weight), _np(old.weight_g) * _np(old.weight_v)
                               / np.linalg.norm(_np(old.weight_v), axis=1, keepdims=True))


# ---------------------------------------------------------------------- spectral_norm
@pytest.mark.parametrize("kind", ["linear", "conv", "convT"])
def test_spectral_norm_largest_singular_value(kind):
    et.manual_seed(0)
    m = {"linear": lambda: nn.Linear(5, 4), "conv": lambda: nn.Conv2d(2, 3, 2),
         "convT": lambda: nn.ConvTranspose2d(2, 3, 2)}[kind]().double()
    W = _np(m.weight).copy()
    PZ.spectral_norm(m, n_power_iterations=3)
    sn = m.parametrizations.weight[0]
    assert sn.dim == (1 if kind == "convT" else 0)
    mat = np.moveaxis(W, sn.dim, 0).reshape(W.shape[sn.dim], -1)
    sigma = np.linalg.svd(mat, compute_uv=False)[0]
    for _ in range(30):  # power iteration steps in training mode
        w = m.weight
    np.testing.assert_allclose(_np(w), W / sigma, rtol=1e-8)
    np.testing.assert_allclose(np.linalg.svd(np.moveaxis(_np(w), sn.dim, 0).reshape(
        mat.shape), compute_uv=False)[0], 1.0, rtol=1e-8)
    u, v = _np(sn._u), _np(sn._v)
    np.testing.assert_allclose([np.linalg.norm(u), np.linalg.norm(v)], [1.0, 1.0])
    np.testing.assert_allclose(u @ mat @ v, sigma, rtol=1e-10)
    # eval mode: the vectors stay
    m.eval()
    u0 = _np(sn._u).copy()
    with no_grad():
        m.parametrizations.weight.original.mul_(1.5)
    w_eval = _np(m.weight)
    np.testing.assert_array_equal(_np(sn._u), u0)
    np.testing.assert_allclose(w_eval, 1.5 * W / (1.5 * sigma), rtol=1e-8)
    x = et.randn(1, 5, dtype=et.float64) if kind == "linear" else \
        et.randn(1, 2, 3, 3, dtype=et.float64)
    _check_grads(m, x)


def test_spectral_norm_state_dict_and_errors(tmp_path):
    m = PZ.spectral_norm(_linear64(5, 4))
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original",
                                    "parametrizations.weight.0._u",
                                    "parametrizations.weight.0._v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    path = tmp_path / "sn.pt"
    et.save(m.state_dict(), path)
    m2 = PZ.spectral_norm(_linear64(5, 4, seed=3)).eval()
    m2.load_state_dict(et.load(path))
    np.testing.assert_allclose(_np(m2.weight), _np(m.eval().weight))
    # a 1-D tensor is normalized to unit norm, without power iteration
    b = PZ.spectral_norm(_linear64(3, 2), name="bias")
    np.testing.assert_allclose(np.linalg.norm(_np(b.bias)), 1.0)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
        PZ.spectral_norm(nn.Linear(2, 2), name="w")
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        PZ.spectral_norm(nn.Linear(2, 2), dim=2)


# ---------------------------------------------------------------------- orthogonal
def _assert_orthonormal(W):
    n, k = W.shape[-2:]
    G = W.mT @ W if n >= k else W @ W.mT
    eye = np.broadcast_to(np.eye(min(n, k)), G.shape)
    np.testing.assert_allclose(_np(G), eye, atol=1e-10)


MAPS = ["matrix_exp", "cayley", "householder"]


@pytest.mark.parametrize("triv", [True, False], ids=["triv", "notriv"])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=["square", "tall", "wide"])
@pytest.mark.parametrize("omap", MAPS)
def test_orthogonal(omap, shape, triv):
    et.manual_seed(0)
    m = nn.Linear(shape[1], shape[0]).double()
    PZ.orthogonal(m, orthogonal_map=omap, use_trivialization=triv)
    assert m.parametrizations.weight[0].orthogonal_map.name == omap
    assert hasattr(m.parametrizations.weight[0], "base") is triv
    _assert_orthonormal(m.weight)
    orig = m.parametrizations.weight.original
    with no_grad():  # move away from the starting point: still orthonormal
        orig.add_(0.3 * et.randn(*shape, dtype=et.float64))
        if omap == "householder":  # keep the diagonal's sign (an int) away from 0
            d = orig.diagonal(dim1=-2, dim2=-1)
            d.copy_(d.sign() * 1.5)
    _assert_orthonormal(m.weight)
    _check_grads(m, et.randn(2, shape[1], dtype=et.float64))
    if triv:  # assignment: the weight becomes the given orthonormal matrix
        Q = np.linalg.qr(np.random.default_rng(0).standard_normal(max(shape) * np.ones(
            2, int)))[0][:shape[0], :shape[1]]
        m.weight = et.tensor(Q)
        np.testing.assert_allclose(_np(m.weight), Q, atol=1e-10)
    elif omap != "householder":
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = et.eye(*shape, dtype=et.float64)


def test_orthogonal_defaults_batches_and_errors():
    assert PZ.orthogonal(nn.Linear(3, 3)).parametrizations.weight[0].orthogonal_map.name == \
        "matrix_exp"
    assert PZ.orthogonal(nn.Linear(3, 4)).parametrizations.weight[0].orthogonal_map.name == \
        "householder"

    class Batched(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(et.randn(2, 4, 3, dtype=et.float64))

    for omap in MAPS:
        _assert_orthonormal(PZ.orthogonal(Batched(), orthogonal_map=omap).weight)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a "
                                         "tensor of 1 dimensions"):
        PZ.orthogonal(nn.Linear(3, 3), "bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp"'):
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'w'"):
        PZ.orthogonal(nn.Linear(3, 3), "w")
    m = PZ.orthogonal(nn.Linear(3, 3))
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        m.weight = et.eye(2)


# ---------------------------------------------------------------------- legacy hooks
def test_legacy_weight_norm():
    m = _linear64(4, 3)
    W = _np(m.weight).copy()
    with pytest.warns(FutureWarning, match="is deprecated"):
        weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    np.testing.assert_allclose(_np(m.weight_g), np.linalg.norm(W, axis=1, keepdims=True))
    np.testing.assert_allclose(_np(m.weight), W)
    with no_grad():
        m.weight_g.mul_(2.0)
    x = et.randn(2, 4, dtype=et.float64)
    y = m(x)  # the pre-hook recomputes the weight
    np.testing.assert_allclose(_np(y), _np(x) @ (2 * W).T + _np(m.bias))
    _check_grads(m, x)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with pytest.warns(FutureWarning):
            weight_norm(m)
    remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and not m._forward_pre_hooks
    np.testing.assert_allclose(_np(m.weight), 2 * W)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        remove_weight_norm(m)
    with pytest.warns(FutureWarning):
        whole = weight_norm(_linear64(4, 3), dim=None)
    assert tuple(whole.weight_g.shape) == ()
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        with pytest.warns(FutureWarning):
            weight_norm(_linear64(4, 3), dim=2)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got -3"):
        PZ.weight_norm(_linear64(4, 3), dim=-3)


def test_legacy_spectral_norm():
    m = _linear64(5, 4)
    W = _np(m.weight).copy()
    spectral_norm(m, n_power_iterations=40)
    assert list(m.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    sigma = np.linalg.svd(W, compute_uv=False)[0]
    x = et.randn(2, 5, dtype=et.float64)
    y = m(x)
    np.testing.assert_allclose(_np(m.weight), W / sigma, rtol=1e-8)
    np.testing.assert_allclose(_np(y), _np(x) @ (W / sigma).T + _np(m.bias), rtol=1e-8)
    m.eval()
    u0 = _np(m.weight_u).copy()
    _check_grads(m, x)
    np.testing.assert_array_equal(_np(m.weight_u), u0)
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        spectral_norm(m)
    # a checkpoint from before weight_v existed: v is solved for
    sd = dict(m.state_dict())
    sd["weight"] = m.weight.detach().clone()
    v_saved = sd.pop("weight_v")
    m2 = spectral_norm(_linear64(5, 4, seed=9)).eval()
    m2.load_state_dict(sd)
    np.testing.assert_allclose(_np(m2.weight_v), _np(v_saved), rtol=1e-6)
    remove_spectral_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"] and not m._forward_pre_hooks
    assert not m._state_dict_hooks and not m._load_state_dict_pre_hooks
    np.testing.assert_allclose(_np(m.weight), W / sigma, rtol=1e-8)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        remove_spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    assert spectral_norm(nn.ConvTranspose1d(2, 3, 2))._forward_pre_hooks
    ct = spectral_norm(nn.ConvTranspose1d(2, 3, 2))
    assert tuple(ct.weight_u.shape) == (3,) and tuple(ct.weight_v.shape) == (4,)
