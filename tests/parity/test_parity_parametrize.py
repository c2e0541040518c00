"""ember.nn.utils.parametrize / .parametrizations and the legacy hook-based weight_norm and
spectral_norm against PyTorch 2.13 CPU: the same program on twin modules gives the same class
name, state_dict keys, parameter and buffer names; with torch's state copied over, the same
outputs, parameter gradients and power-iteration buffers; the same errors."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.nn as nn  # noqa: E402
import ember.tensor as et  # noqa: E402
from ember.nn.utils import parametrizations as e_pz  # noqa: E402
from ember.nn.utils import parametrize as e_p  # noqa: E402

t_p, t_pz = torch.nn.utils.parametrize, torch.nn.utils.parametrizations

TOL = 1e-10


class _Lib:
    """What a program needs from one framework: nn, utils, parametrize, parametrizations,
    a tensor from NumPy, and the custom parametrizations written against its Module."""

    def __init__(self, nn_mod, utils, p, pz, tensor, linalg):
        self.nn, self.utils, self.P, self.PZ = nn_mod, utils, p, pz
        self.tensor = tensor

        class Symmetric(nn_mod.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).mT

            def right_inverse(self, A):
                return A.triu()

        class Scale(nn_mod.Module):
            def __init__(self, c):
                super().__init__()
                self.c = c

            def forward(self, X):
                return self.c * X

            def right_inverse(self, A):
                return A / self.c

        class RankOne(nn_mod.Module):
            def forward(self, x, y):
                return x.unsqueeze(-1) @ y.unsqueeze(-2)

            def right_inverse(self, Z):
                U, S, Vh = linalg.svd(Z, full_matrices=False)
                s0 = S[0].sqrt().unsqueeze(-1)
                return U[..., :, 0] * s0, Vh[..., 0, :] * s0

        class Drop(nn_mod.Module):
            def forward(self, X):
                return X[:-1]

        class Abs(nn_mod.Module):
            def forward(self, X):
                return X.abs()

        self.Symmetric, self.Scale, self.RankOne = Symmetric, Scale, RankOne
        self.Drop, self.Abs = Drop, Abs


E = _Lib(nn, nn.utils, e_p, e_pz, lambda a: et.tensor(a, dtype=et.float64), et.linalg)
T = _Lib(torch.nn, torch.nn.utils, t_p, t_pz, lambda a: torch.tensor(a, dtype=torch.float64),
         torch.linalg)


def _legacy(fn):
    def run(L, *args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return fn(L, *args, **kwargs)
    return run


# each program: (L) -> (module, input shape); the module is float64
def _sym(L):
    return L.P.register_parametrization(L.nn.Linear(4, 4).double(), "weight", L.Symmetric()), (2, 4)


def _chain(L):
    m = L.nn.Linear(4, 4).double()
    L.P.register_parametrization(m, "weight", L.Symmetric())
    L.P.register_parametrization(m, "weight", L.Scale(2.0))
    L.P.register_parametrization(m, "bias", L.Scale(0.5))
    return m, (2, 4)


def _rank_one(L):
    return L.P.register_parametrization(L.nn.Linear(4, 3).double(), "weight", L.RankOne()), (2, 4)


def _assign(L):
    m, shape = _chain(L)
    A = np.arange(16.0).reshape(4, 4)
    m.weight = L.tensor(A + A.T)
    return m, shape


def _remove(leave):
    def prog(L):
        m, shape = _chain(L)
        L.P.remove_parametrizations(m, "weight", leave_parametrized=leave)
        return m, shape
    return prog


def _remove_all(L):
    m, shape = _chain(L)
    L.P.remove_parametrizations(m, "bias")
    L.P.remove_parametrizations(m, "weight", leave_parametrized=False)
    return m, shape


def _weight_norm(make, dim, shape):
    def prog(L):
        return L.PZ.weight_norm(make(L.nn).double(), dim=dim), shape
    return prog


def _spectral_norm(make, shape, **kw):
    def prog(L):
        return L.PZ.spectral_norm(make(L.nn).double(), **kw), shape
    return prog


def _orthogonal(shape, omap, triv):
    def prog(L):
        m = L.nn.Linear(shape[1], shape[0]).double()
        return L.PZ.orthogonal(m, orthogonal_map=omap, use_trivialization=triv), (2, shape[1])
    return prog


@_legacy
def _legacy_wn(L, dim=0):
    return L.utils.weight_norm(L.nn.Conv1d(2, 3, 2).double(), dim=dim), (2, 2, 5)


def _legacy_sn(L):
    return L.utils.spectral_norm(L.nn.ConvTranspose2d(2, 3, 2).double(),
                                 n_power_iterations=2), (1, 2, 3, 3)


@_legacy
def _legacy_removed(L):
    m = L.utils.weight_norm(L.nn.Linear(3, 2).double())
    L.utils.remove_weight_norm(m)
    L.utils.spectral_norm(m)
    L.utils.remove_spectral_norm(m)
    return m, (2, 3)


PROGRAMS = {
    "symmetric": _sym,
    "chain": _chain,
    "rank_one": _rank_one,
    "assign_right_inverse": _assign,
    "remove_leave": _remove(True),
    "remove_original": _remove(False),
    "remove_all": _remove_all,
    "weight_norm_linear": _weight_norm(lambda n: n.Linear(4, 3), 0, (2, 4)),
    "weight_norm_conv_dim1": _weight_norm(lambda n: n.Conv2d(2, 3, 2), 1, (1, 2, 4, 4)),
    "weight_norm_conv_dim-2": _weight_norm(lambda n: n.Conv2d(2, 3, 2), -2, (1, 2, 4, 4)),
    "weight_norm_whole": _weight_norm(lambda n: n.Conv2d(2, 3, 2), None, (1, 2, 4, 4)),
    "spectral_norm_linear": _spectral_norm(lambda n: n.Linear(5, 4), (2, 5)),
    "spectral_norm_conv": _spectral_norm(lambda n: n.Conv2d(2, 3, 2), (1, 2, 4, 4),
                                         n_power_iterations=3),
    "spectral_norm_convT": _spectral_norm(lambda n: n.ConvTranspose2d(2, 3, 2), (1, 2, 3, 3)),
    "spectral_norm_bias": _spectral_norm(lambda n: n.Linear(5, 4), (2, 5), name="bias"),
    "legacy_weight_norm": _legacy_wn,
    "legacy_weight_norm_whole": lambda L: _legacy_wn(L, dim=None),
    "legacy_spectral_norm": _legacy_sn,
    "legacy_removed": _legacy_removed,
}
for _shape, _sid in (((4, 4), "square"), ((5, 3), "tall"), ((3, 5), "wide")):
    for _omap in ("matrix_exp", "cayley", "householder"):
        for _triv in (True, False):
            PROGRAMS[f"orthogonal_{_omap}_{_sid}_{'triv' if _triv else 'notriv'}"] = \
                _orthogonal(_shape, _omap, _triv)


def _np(t):
    return t.detach().numpy()


def _names(m):
    return (type(m).__name__, list(m.state_dict()), [n for n, _ in m.named_parameters()],
            [n for n, _ in m.named_buffers()])


def _close(a, b, what, tol=TOL):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_program_parity(name, dt):
    em, shape = PROGRAMS[name](E)
    tm, _ = PROGRAMS[name](T)
    assert _names(em) == _names(tm)
    assert repr(em) == repr(tm)
    tol = TOL
    if dt == "float32":  # converted after registration: originals and buffers follow
        em.float()
        tm.float()
        tol = 2e-5
    # torch's state (its random init, power-iteration vectors, orthogonal base) into ember
    em.load_state_dict({k: et.tensor(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape)

    def pair(a):
        return et.tensor(a, dtype=getattr(et, dt)), torch.tensor(a, dtype=getattr(torch, dt))

    for step, mode in enumerate(("train", "train", "eval")):
        em.train(mode == "train")
        tm.train(mode == "train")
        xe, xt = pair(x)
        ye, yt = em(xe), tm(xt)
        assert ye.dtype == getattr(et, dt)
        _close(ye, yt, f"output, step {step}", tol)
        ge, gt = pair(rng.standard_normal(tuple(yt.shape)))
        (ye * ge).sum().backward()
        (yt * gt).sum().backward()
        for (n, pe), (_, pt) in zip(em.named_parameters(), tm.named_parameters()):
            _close(pe.grad, pt.grad, f"grad of {n}, step {step}", tol)
        for (n, be), (_, bt) in zip(em.named_buffers(), tm.named_buffers()):
            _close(be, bt, f"buffer {n}, step {step}", tol)
        em.zero_grad()
        tm.zero_grad()
    for n in ("weight", "bias"):
        _close(getattr(em, n), getattr(tm, n), n, tol)


def test_cached_parity():
    for L in (E, T):
        m, _ = _sym(L)
        with L.P.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight


def test_type_before_and_is_parametrized_parity():
    for L in (E, T):
        m, _ = _chain(L)
        assert L.P.type_before_parametrizations(m) is L.nn.Linear
        assert (L.P.is_parametrized(m), L.P.is_parametrized(m, "weight"),
                L.P.is_parametrized(m, "x")) == (True, True, False)


def test_legacy_weight_norm_checkpoint_loads_into_parametrization():
    te, _ = _legacy_wn(T)
    em = e_pz.weight_norm(nn.Conv1d(2, 3, 2).double())
    em.load_state_dict({k: et.tensor(v.detach().numpy().copy())
                        for k, v in te.state_dict().items()})
    te(torch.zeros(1, 2, 5, dtype=torch.float64))
    _close(em.weight, te.weight, "weight")


def test_transfer_parity():
    outs = []
    for L in (E, T):
        a, _ = _chain(L)
        b = L.P.transfer_parametrizations_and_params(a, L.nn.Linear(4, 4).double())
        outs.append(_names(b))
    assert outs[0] == outs[1]


def _err_cases(L):
    def lin():
        return L.nn.Linear(3, 3).double()

    def chain_then(p):
        m = L.P.register_parametrization(lin(), "weight", L.Scale(2.0))
        L.P.register_parametrization(m, "weight", p)

    def assign_without_inverse():
        m = L.P.register_parametrization(lin(), "weight", L.Abs())
        m.weight = L.tensor(np.eye(3))

    def leave_rank_one():
        L.P.remove_parametrizations(_rank_one(L)[0], "weight", leave_parametrized=False)

    def orth_assign_bad_shape():
        L.PZ.orthogonal(lin()).weight = L.tensor(np.eye(2))

    def orth_assign_notriv():
        L.PZ.orthogonal(lin(), use_trivialization=False).weight = L.tensor(np.eye(3))

    @_legacy
    def legacy_twice(L):
        L.utils.weight_norm(L.utils.weight_norm(lin()))

    def legacy_sn_twice():
        L.utils.spectral_norm(L.utils.spectral_norm(lin()))

    return {
        "wrong_name": lambda: L.P.register_parametrization(lin(), "wieght", L.Scale(2.0)),
        "shape_change": lambda: L.P.register_parametrization(lin(), "weight", L.Drop()),
        "chained_shape_change": lambda: chain_then(L.Drop()),
        "remove_unparametrized": lambda: L.P.remove_parametrizations(lin(), "weight"),
        "assign_without_right_inverse": assign_without_inverse,
        "leave_unparametrized_sequence": leave_rank_one,
        "orthogonal_1d": lambda: L.PZ.orthogonal(lin(), "bias"),
        "orthogonal_bad_map": lambda: L.PZ.orthogonal(lin(), orthogonal_map="qr"),
        "orthogonal_assign_shape": orth_assign_bad_shape,
        "orthogonal_assign_notriv": orth_assign_notriv,
        "spectral_dim_range": lambda: L.PZ.spectral_norm(lin(), dim=2),
        "spectral_iterations": lambda: L.PZ.spectral_norm(lin(), n_power_iterations=0),
        "spectral_missing": lambda: L.PZ.spectral_norm(lin(), "w"),
        "legacy_weight_norm_twice": lambda: legacy_twice(L),
        "legacy_spectral_norm_twice": legacy_sn_twice,
        "legacy_remove_weight_norm_missing": lambda: L.utils.remove_weight_norm(lin()),
        "legacy_remove_spectral_norm_missing": lambda: L.utils.remove_spectral_norm(lin()),
        "weight_norm_dim_range": lambda: L.PZ.weight_norm(lin(), dim=2),
        "legacy_weight_norm_dim_range": lambda: _legacy(
            lambda L: L.utils.weight_norm(lin(), dim=-3))(L),
        "legacy_weight_norm_lazy": lambda: _legacy(
            lambda L: L.utils.weight_norm(L.nn.LazyLinear(3)))(L),
        "legacy_spectral_norm_lazy": lambda: L.utils.spectral_norm(L.nn.LazyLinear(3)),
        "legacy_spectral_norm_missing": lambda: L.utils.spectral_norm(lin(), "w"),
        "legacy_spectral_iterations": lambda: L.utils.spectral_norm(lin(),
                                                                    n_power_iterations=0),
    }


@pytest.mark.parametrize("case", sorted(_err_cases(E)))
def test_error_parity(case):
    got = {}
    for key, L in (("ember", E), ("torch", T)):
        with pytest.raises(Exception) as info:
            _err_cases(L)[case]()
        got[key] = info.value
    assert type(got["ember"]) is type(got["torch"])
    # the messages agree but for the framework's name and the shapes' spelling
    msg = {k: str(v).replace("torch.Size", "Size").replace("ember.Size", "Size")
           .replace("torch.", "").replace("ember.", "") for k, v in got.items()}
    assert msg["ember"] == msg["torch"]
