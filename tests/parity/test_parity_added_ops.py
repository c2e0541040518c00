"""Parity with PyTorch 2.13 CPU of the torch.* / Tensor names added in one batch: elementwise
(``copysign``, ``gcd``, ``ldexp``, ``frexp``, shifts, ...), statistics (``quantile``, ``cov``,
``histogram``, ``trapezoid``, ``gradient``, ...), shape and index ops (``dstack``,
``unique_consecutive``, ``index_reduce``, ``put_``, ...) and the global switches. The same
inputs give the same values, dtypes, shapes and gradients, and bad inputs raise the same
exception types."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import ember.tensor as et  # noqa: E402
from ember.tensor._tensor import Tensor  # noqa: E402

RNG = np.random.default_rng(11)


def _conv(m, a):
    if isinstance(a, np.ndarray):
        return torch.from_numpy(a.copy()) if m is torch else et.tensor(a.copy())
    if isinstance(a, (list, tuple)) and a and all(isinstance(x, np.ndarray) for x in a):
        return type(a)(_conv(m, x) for x in a)
    return a


def _same(e, t, rtol=1e-6):
    if isinstance(t, (tuple, list)):
        assert isinstance(e, (tuple, list)) and len(e) == len(t), (type(e), len(e), len(t))
        if hasattr(t, "_fields"):
            assert tuple(e._fields) == tuple(t._fields)
        for x, y in zip(e, t):
            _same(x, y, rtol)
        return
    if not isinstance(t, torch.Tensor):
        assert e == t, (e, t)
        return
    assert isinstance(e, Tensor), type(e)
    assert str(t.dtype) == f"torch.{e.dtype.name}", (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    got, exp = e.detach().numpy(), t.detach().numpy()
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol,
                                   atol=rtol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, exp)


def both(fn, *args, rtol=1e-6, **kwargs):
    """``fn(module, *args, **kwargs)`` on PyTorch and on ember (NumPy arrays become each
    library's tensors): the same result, or the same exception type."""
    try:
        expected = fn(torch, *_conv(torch, args), **kwargs)
    except Exception as exc:  # noqa: BLE001 - the type is compared below
        with pytest.raises(type(exc)):
            fn(et, *_conv(et, args), **kwargs)
        return
    _same(fn(et, *_conv(et, args), **kwargs), expected, rtol)


F = RNG.standard_normal((3, 4)).astype(np.float32)
F64 = RNG.standard_normal((3, 4))
I = RNG.integers(-9, 10, (3, 4))
I32 = I.astype(np.int32)
U8 = RNG.integers(0, 200, (3, 4)).astype(np.uint8)
B = RNG.random((3, 4)) > 0.5
Z = np.array([-2.0, -0.0, 0.0, 1.5, np.nan, np.inf], np.float32)

POINTWISE = {
    "shift_operators": (lambda m, a, b: (
        a >> 1, a << 2, 3 << a.abs(), a >> b.abs(), 100 >> b.abs(),
        (lambda t: (t.__irshift__(1), t.__ilshift__(2)))(a.clone())), I, I32),
    "shift_operators_uint8": (lambda m, a: (a >> 3, a << 1), U8),
    "shift_float_refused": (lambda m, a: a >> 1, F),
    "arctan2": (lambda m, a, b: m.arctan2(a, b), F, F64),
    "arctan2_method": (lambda m, a, b: a.arctan2(b), I, F),
    "arctan2_": (lambda m, a, b: a.clone().arctan2_(b), F, F),
    "shift_left": (lambda m, a, b: m.bitwise_left_shift(a, b), I, np.abs(I32) % 5),
    "shift_left_scalar": (lambda m, a: m.bitwise_left_shift(a, 3), U8),
    "shift_left_first_scalar": (lambda m, a: m.bitwise_left_shift(2, a), np.abs(I) % 4),
    "shift_right_neg": (lambda m, a: m.bitwise_right_shift(a, 2), I),
    "shift_out_of_range": (lambda m, a: (m.bitwise_left_shift(a, m.tensor([64, -1, 3, 65])),
                                         m.bitwise_right_shift(a, m.tensor([64, -1, 3, 65]))),
                           I[0]),
    "shift_float": (lambda m, a: m.bitwise_left_shift(a, 1), F),
    "shift_bool": (lambda m, a: m.bitwise_right_shift(a, a), B),
    "shift_": (lambda m, a: a.clone().bitwise_left_shift_(1), I32),
    "copysign": (lambda m, a, b: m.copysign(a, b), F, F64),
    "copysign_int": (lambda m, a, b: m.copysign(a, b), I, I32),
    "copysign_bool": (lambda m, a, b: m.copysign(a, b), B, F),
    "copysign_scalar": (lambda m, a: m.copysign(a, -1.5), I),
    "copysign_zero": (lambda m, a: m.copysign(m.ones(6), a), Z),
    "copysign_inplace_int": (lambda m, a, b: a.clone().copysign_(b), I, F),
    "gcd": (lambda m, a, b: m.gcd(a, b), I, I32),
    "lcm": (lambda m, a, b: m.lcm(a, b), I, I),
    "gcd_float": (lambda m, a, b: m.gcd(a, b), F, F),
    "gcd_scalar": (lambda m, a: m.gcd(a, 4), I),
    "gcd_": (lambda m, a, b: a.clone().gcd_(b), I, I32),
    "ldexp": (lambda m, a, b: m.ldexp(a, b), F, I % 5),
    "ldexp_int": (lambda m, a, b: m.ldexp(a, b), I, I32 % 5),
    "ldexp_bool": (lambda m, a, b: m.ldexp(a, b), F, B),
    "ldexp_scalar": (lambda m, a: m.ldexp(a, 2), F),
    "ldexp_": (lambda m, a, b: a.clone().ldexp_(b), F64, I % 3),
    "frexp": (lambda m, a: m.frexp(a), Z),
    "frexp_method": (lambda m, a: a.frexp(), F64),
    "frexp_int": (lambda m, a: m.frexp(a), I),
    "heaviside": (lambda m, a, b: m.heaviside(a, b), np.where(B, 0.0, F).astype(np.float32), F),
    "heaviside_int": (lambda m, a, b: m.heaviside(a, b), I, I),
    "heaviside_mixed": (lambda m, a, b: m.heaviside(a, b), F, F64),
    "heaviside_nan": (lambda m, a: m.heaviside(a, m.tensor(0.5)), Z),
    "logaddexp": (lambda m, a, b: m.logaddexp(a, b), F, I),
    "logaddexp2": (lambda m, a, b: m.logaddexp2(a, b), F64, F),
    "logaddexp_int": (lambda m, a, b: m.logaddexp(a, b), I, I),
    "nextafter": (lambda m, a, b: m.nextafter(a, b), F, F64),
    "nextafter_same": (lambda m, a: m.nextafter(a, m.zeros(6)), Z),
    "sgn": (lambda m, a: (m.sgn(a), a.sgn()), I),
    "sgn_": (lambda m, a: a.clone().sgn_(), F),
    "rsub": (lambda m, a, b: m.rsub(a, b, alpha=2), F, I),
    "rsub_scalar": (lambda m, a: m.rsub(a, 2.5), I),
    "rsub_bool": (lambda m, a: m.rsub(a, a), B),
    "renorm": (lambda m, a: m.renorm(a, 2, 0, 1.0), F * 2),
    "renorm_inf": (lambda m, a: m.renorm(a, float("inf"), 1, 0.5), F64),
    "renorm_": (lambda m, a: a.clone().renorm_(1, -1, 1.5), F),
    "renorm_1d": (lambda m, a: m.renorm(a, 2, 0, 1.0), F[0]),
    "renorm_int": (lambda m, a: m.renorm(a, 2, 0, 1.0), I),
    "renorm_p0": (lambda m, a: m.renorm(a, 0, 0, 1.0), F),
    "in_place_aliases": (lambda m, a: (a.clone().clamp(-0.9, 0.9).arcsin_(),
                                       a.clone().clamp(-0.9, 0.9).arccos_(),
                                       a.clone().arctan_(), a.clone().arcsinh_(),
                                       (a.clone().abs() + 1.5).arccosh_(),
                                       a.clone().clamp(-0.9, 0.9).arctanh_(),
                                       a.clone().fix_(), a.clone().deg2rad_(),
                                       a.clone().rad2deg_()), F64),
    "compare_aliases": (lambda m, a, b: (a.clone().greater_(b), a.clone().greater_equal_(b),
                                         a.clone().less_(b), a.clone().less_equal_(b),
                                         a.clone().not_equal_(b)), F, F64),
    "logical_not_": (lambda m, a: (a.clone().logical_not_(), ), F),
    "bitwise_not_": (lambda m, a: a.clone().bitwise_not_(), I),
    "bitwise_not_float": (lambda m, a: a.clone().bitwise_not_(), F),
    "float_power_": (lambda m, a: a.clone().float_power_(2), F64),
    "float_power_f32": (lambda m, a: a.clone().float_power_(2), F),
    "top_level_in_place": (lambda m, a: (m.deg2rad_(a.clone()), m.fix_(a.clone()),
                                         m.arccos_(a.clone().clamp(-1, 1))), F),
}


@pytest.mark.parametrize("name", sorted(POINTWISE))
def test_pointwise_matches_torch(name):
    fn, *args = POINTWISE[name]
    both(fn, *args)


GRADS = {
    "copysign": lambda m, x: m.copysign(x, -x.detach() + 0.5),
    "logaddexp": lambda m, x: m.logaddexp(x, x * 2 - 1),
    "logaddexp2": lambda m, x: m.logaddexp2(x * 3, x),
    "frexp": lambda m, x: m.frexp(x * 3).mantissa,
    "ldexp": lambda m, x: m.ldexp(x, m.tensor([1, 2, 3, 0])),
    "renorm": lambda m, x: m.renorm(x, 2, 1, 1.0),
    "rsub": lambda m, x: m.rsub(x, x * x, alpha=3),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_pointwise_gradients_match_torch(name):
    _grad_check(GRADS[name])


Q = np.array([0.0, 0.3, 0.5, 1.0], np.float32)
NAN = F.copy()
NAN[0, 1] = NAN[2, 0] = np.nan
NAN[1] = np.nan

STATS = {
    "quantile": (lambda m, a: m.quantile(a, 0.3), F),
    "quantile_dim": (lambda m, a, q: m.quantile(a, q, dim=1, keepdim=True), F, Q),
    "quantile_modes": (lambda m, a, q: tuple(m.quantile(a, q, 0, interpolation=i) for i in (
        "linear", "lower", "higher", "midpoint", "nearest")), F, Q),
    "quantile_nan": (lambda m, a, q: m.quantile(a, q, 1), NAN, Q),
    "nanquantile": (lambda m, a, q: m.nanquantile(a, q, 1), NAN, Q),
    "nanquantile_all": (lambda m, a: m.nanquantile(a, 0.5, keepdim=True), NAN),
    "quantile_int": (lambda m, a: m.quantile(a, 0.5), I),
    "quantile_q_dtype": (lambda m, a, q: m.quantile(a, q), F64, Q),
    "quantile_q_range": (lambda m, a: m.quantile(a, 1.5), F),
    "quantile_bad_mode": (lambda m, a: m.quantile(a, 0.5, interpolation="cubic"), F),
    "quantile_empty": (lambda m, a: m.quantile(a, 0.5), F[:0]),
    "nanmedian": (lambda m, a: m.nanmedian(a), NAN),
    "nanmedian_dim": (lambda m, a: m.nanmedian(a, 1), NAN[[0, 2]]),
    # a slice of NaN only: the value (NaN); PyTorch's index there is its kernel's accident
    "nanmedian_all_nan": (lambda m, a: m.nanmedian(a, 1).values, NAN),
    "nanmedian_keepdim": (lambda m, a: a.nanmedian(0, True), F),
    "nanmedian_int": (lambda m, a: m.nanmedian(a, 0), np.arange(12).reshape(3, 4) % 5),
    "nanmedian_bool": (lambda m, a: m.nanmedian(a), B),
    "cov": (lambda m, a: m.cov(a), F64),
    "cov_weights": (lambda m, a, f, w: m.cov(a, correction=0, fweights=f, aweights=w), F64,
                    np.array([1, 0, 2, 3]), np.array([0.5, 1.0, 2.0, 0.25])),
    "cov_int": (lambda m, a: a.cov(), I),
    "cov_3d": (lambda m, a: m.cov(a), F.reshape(1, 3, 4)),
    "cov_float_fweights": (lambda m, a: m.cov(a, fweights=m.ones(4)), F),
    "corrcoef": (lambda m, a: m.corrcoef(a), F64),
    "corrcoef_1d": (lambda m, a: a.corrcoef(), F64[0]),
    "histogram": (lambda m, a: m.histogram(a, 5), F),
    "histogram_edges": (lambda m, a, e: a.histogram(e, density=True), F, np.array(
        [-3.0, -1.0, 0.0, 0.5, 3.0], np.float32)),
    "histogram_range_weight": (lambda m, a, w: m.histogram(a, 4, range=(-1.0, 1.0), weight=w),
                               F64, np.abs(F64)),
    "histogram_int": (lambda m, a: m.histogram(a, 3), I),
    "histogram_bins0": (lambda m, a: m.histogram(a, 0), F),
    "histogramdd": (lambda m, a: m.histogramdd(a, [2, 3]), F[:, :2]),
    "histogramdd_range": (lambda m, a: m.histogramdd(a, 2, range=[-1.0, 1.0, 0.0, 2.0],
                                                     density=True), F64[:, 1:3]),
    "trapezoid": (lambda m, a: (m.trapezoid(a), m.trapezoid(a, dx=0.5, dim=0)), F),
    "trapezoid_x": (lambda m, a, x: m.trapezoid(a, x), F, np.array([0.0, 1.0, 1.5, 4.0],
                                                                  np.float32)),
    "trapezoid_int": (lambda m, a: m.trapezoid(a), I),
    "trapz": (lambda m, a, x: (m.trapz(a, x), m.trapz(a, dx=2.0)), F64, F64),
    "cumulative_trapezoid": (lambda m, a: (m.cumulative_trapezoid(a),
                                           m.cumulative_trapezoid(a, dx=2, dim=0)), F),
    "cumulative_trapezoid_x": (lambda m, a, x: m.cumulative_trapezoid(a, x), F64, F64),
    "trapezoid_bool": (lambda m, a: m.trapezoid(a), B),
    "gradient": (lambda m, a: m.gradient(a), F),
    "gradient_edge2": (lambda m, a: m.gradient(a, spacing=[2.0, 0.5], edge_order=2), F64),
    "gradient_coords": (lambda m, a, c: m.gradient(a, spacing=(c,), dim=1), F64,
                        np.array([0.0, 0.5, 2.0, 2.5])),
    "gradient_int": (lambda m, a: m.gradient(a, dim=0), I),
    "gradient_short": (lambda m, a: m.gradient(a, edge_order=2), F[:2]),
    "gradient_uint8": (lambda m, a: m.gradient(a), U8),
}


@pytest.mark.parametrize("name", sorted(STATS))
def test_statistics_match_torch(name):
    fn, *args = STATS[name]
    both(fn, *args, rtol=1e-5)


STAT_GRADS = {
    "quantile": lambda m, x: m.quantile(x, m.tensor([0.2, 0.7], dtype=m.float64), dim=1),
    "nanquantile": lambda m, x: m.nanquantile(x, 0.4, interpolation="midpoint"),
    "nanmedian": lambda m, x: m.nanmedian(x, 0).values,
    "cov": lambda m, x: m.cov(x, aweights=m.tensor([1.0, 2.0, 0.5, 1.0], dtype=m.float64)),
    "corrcoef": lambda m, x: m.corrcoef(x),
    "trapezoid": lambda m, x: m.trapezoid(x, x[0].detach().cumsum(0)),
    "cumulative_trapezoid": lambda m, x: m.cumulative_trapezoid(x, dim=0),
    "gradient": lambda m, x: m.gradient(x, spacing=[1.5, 0.5], edge_order=2)[1],
}


@pytest.mark.parametrize("name", sorted(STAT_GRADS))
def test_statistics_gradients_match_torch(name):
    _grad_check(STAT_GRADS[name])


def _grad_check(fn):
    a = RNG.standard_normal((3, 4))
    tx, ex = torch.tensor(a, requires_grad=True), et.tensor(a, requires_grad=True)
    to, eo = fn(torch, tx), fn(et, ex)
    _same(eo, to, 1e-10)
    w = RNG.standard_normal(tuple(to.shape))
    (to * torch.tensor(w)).sum().backward()
    (eo * et.tensor(w)).sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)


X = np.arange(24.0).reshape(2, 3, 4)
SHAPE = {
    "atleast_3d": (lambda m, a, b, c: (m.atleast_3d(a), m.atleast_3d(b), m.atleast_3d(c),
                                       m.atleast_3d(a, b), m.atleast_3d([c])),
                   np.float32(2.0) * np.ones((), np.float32), F[0], F),
    "column_stack": (lambda m, a, b: m.column_stack([a, b, a]), F[0], F.T),
    "column_stack_0d": (lambda m, a: m.column_stack([a, a]), np.ones((), np.float32)),
    "row_stack": (lambda m, a, b: m.row_stack((a, b)), F[0], F),
    "dstack": (lambda m, a, b: m.dstack([a, b]), F, F64),
    "dstack_1d": (lambda m, a: m.dstack([a, a]), F[0]),
    "hsplit": (lambda m, a: (m.hsplit(a, 2), m.hsplit(a, [1, 3]), a.hsplit(4)), F),
    "hsplit_bad": (lambda m, a: m.hsplit(a, 3), F),
    "hsplit_0d": (lambda m, a: m.hsplit(a, 1), np.ones((), np.float32)),
    "vsplit": (lambda m, a: (m.vsplit(a, 3), a.vsplit([1])), F),
    "vsplit_1d": (lambda m, a: m.vsplit(a, 1), F[0]),
    "dsplit": (lambda m, a: (m.dsplit(a, 2), a.dsplit([1, 3])), X),
    "dsplit_2d": (lambda m, a: m.dsplit(a, 1), F),
    "split_with_sizes": (lambda m, a: a.split_with_sizes([1, 2], 0), F),
    "split_with_sizes_bad": (lambda m, a: a.split_with_sizes([1, 1], 0), F),
    "unsafe": (lambda m, a: (m.unsafe_chunk(a, 2, 1), m.unsafe_split(a, 2),
                             m.unsafe_split_with_sizes(a, [3, 1], 1)), F),
    "combinations": (lambda m, a: (m.combinations(a), m.combinations(a, 3),
                                   m.combinations(a, with_replacement=True),
                                   m.combinations(a, 0), m.combinations(a[:2], 3)), F[0]),
    "combinations_2d": (lambda m, a: m.combinations(a), F),
    "combinations_neg": (lambda m, a: m.combinations(a, -1), F[0]),
    "sum_to_size": (lambda m, a: (a.sum_to_size(1, 4), a.sum_to_size(4), a.sum_to_size((3, 1)),
                                  a.sum_to_size(3, 4)), F64),
    "sum_to_size_bad": (lambda m, a: a.sum_to_size(2, 4), F64),
    "as_strided_scatter": (lambda m, a, s: m.as_strided_scatter(a, s, (2, 2), (1, 2), 1),
                           np.zeros(6), np.ones((2, 2))),
    "as_strided_": (lambda m, a: (lambda t: (t.as_strided_((2, 2), (1, 2), 1), t.stride()))(
        a.clone()), F64.reshape(-1)),
    "new_empty_strided": (lambda m, a: (lambda t: (t.shape, t.stride(), str(t.dtype)[-7:]))(
        a.new_empty_strided((2, 3), (1, 2))), F64),
    "resize_": (lambda m, a: (lambda t: (t.resize_(2, 2), t.stride(), t.resize_(3, 4)[:2]))(
        a.clone()), F),
    "resize_as_": (lambda m, a, b: m.resize_as_(a.clone(), b), F, F[0]),
    "unique_consecutive": (lambda m, a: (m.unique_consecutive(a),
                                         m.unique_consecutive(a, return_inverse=True),
                                         m.unique_consecutive(a, True, True),
                                         a.unique_consecutive(return_counts=True)),
                           np.array([1, 1, 2, 2, 3, 1, 1, 2])),
    "unique_consecutive_dim": (lambda m, a: m.unique_consecutive(a, True, True, dim=0),
                               np.array([[1, 1], [1, 1], [2, 3], [1, 1]])),
    "put": (lambda m, a, i, s: (m.put(a, i, s), a.put(i, s, accumulate=True)), F,
            np.array([0, -1, 5, 5]), np.arange(4.0).astype(np.float32)),
    "put_": (lambda m, a, i, s: a.clone().put_(i, s, True), F64, np.array([[0, 0], [11, 2]]),
             np.ones((2, 2))),
    "put_out_of_range": (lambda m, a, i, s: m.put(a, i, s), F, np.array([12]), F[0, :1]),
    "put_size_mismatch": (lambda m, a, i, s: m.put(a, i, s), F, np.array([1, 2]), F[0, :1]),
    "put_int_index": (lambda m, a, i, s: m.put(a, i, s), F, I32[0, :1], F[0, :1]),
    "unravel_index": (lambda m, i: (m.unravel_index(i, (3, 4)), m.unravel_index(i, (2, 2, 3)),
                                    m.unravel_index(i[0], 7)), np.array([4, 11, 0, -1, 13])),
    "unravel_index_float": (lambda m, i: m.unravel_index(i, (3, 4)), F[0]),
    "index_reduce": (lambda m, a, s: tuple(m.index_reduce(a, 0, m.tensor([0, 2, 0]), s, r,
                                                          include_self=inc)
                                           for r in ("prod", "mean", "amax", "amin")
                                           for inc in (True, False)), F64, F64 * 2 - 1),
    "index_reduce_": (lambda m, a, s: a.clone().index_reduce_(1, m.tensor([3, 3]), s, "mean"),
                      F, F[:, :2]),
    "index_reduce_sum": (lambda m, a, s: m.index_reduce(a, 0, m.tensor([0, 1, 2]), s, "sum"),
                         F, F),
    "scatter_reduce_": (lambda m, a, s: a.clone().scatter_reduce_(
        1, m.tensor([[0, 1], [2, 2], [3, 0]]), s, "amax", include_self=False), F, F[:, :2]),
    "fill_diagonal_": (lambda m, a: (a.clone().fill_diagonal_(5), a.t().clone()
                                     .fill_diagonal_(-1, wrap=True)), F),
    "fill_diagonal_tall": (lambda m: m.zeros(7, 3).fill_diagonal_(5, wrap=True),),
    "fill_diagonal_cube": (lambda m: (m.zeros(3, 3, 3).fill_diagonal_(2),
                                      m.zeros(2, 3, 4)), ),
    "fill_diagonal_3d_bad": (lambda m: m.zeros(2, 3, 4).fill_diagonal_(1),),
}


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape_and_index_ops_match_torch(name):
    fn, *args = SHAPE[name]
    with warnings.catch_warnings():  # PyTorch's index_reduce warns (once) that it is beta
        warnings.simplefilter("ignore")
        both(fn, *args)


SHAPE_GRADS = {
    "index_reduce": lambda m, x: m.index_reduce(x, 1, m.tensor([0, 0, 3]), x[:, :3] * 2, "amax"),
    "put": lambda m, x: m.put(x, m.tensor([1, 5, 1]), x[0, :3] * 3, accumulate=True),
    "combinations": lambda m, x: m.combinations(x[0], 2),
    "sum_to_size": lambda m, x: x.sum_to_size(1, 4),
    "dstack": lambda m, x: m.dstack([x, x * 2]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_GRADS))
def test_shape_and_index_gradients_match_torch(name):
    _grad_check(SHAPE_GRADS[name])


MISC = {
    "int_tensor_arguments": (lambda m, a: (a.select(1, m.tensor(1)), a.view(m.tensor(4), 3),
                                           a.reshape(m.tensor(2), -1), a.view(np.int64(6), 2),
                                           a.narrow(1, m.tensor(1), 2)), F),
    "float_tensor_size_refused": (lambda m, a: a.view(m.tensor(4.0), 3), F),
    "conj_real_of_real_is_self": (lambda m, a: (m.conj(a) is a, a.conj() is a, m.real(a) is a,
                                                a.real is a), F),
    "fill": (lambda m, a: (m.fill(a, 2), m.fill(a, m.tensor(3))), F),
    "is_nonzero": (lambda m, a: (m.is_nonzero(a[:1]), a[1:2].is_nonzero()), np.array([0.0, 2])),
    "is_nonzero_empty": (lambda m, a: m.is_nonzero(a[:0]), F[0]),
    "is_nonzero_many": (lambda m, a: m.is_nonzero(a), F),
    "is_same_size": (lambda m, a: (m.is_same_size(a, a.t()), a.is_same_size(a + 1)), F),
    "is_signed": (lambda m, a, b: (m.is_signed(a), m.is_signed(b)), F, U8),
    "get_device": (lambda m, a: (m.get_device(a), a.get_device()), F),
    "conj_neg": (lambda m, a: (m.resolve_conj(a) is a, m.resolve_neg(a) is a, m.is_conj(a),
                               a.is_neg(), a.is_conj(), a.resolve_conj() is a), F),
    "detach": (lambda m, a: (m.detach(a) is a, m.detach_(a) is a), F),
    "empty_permuted": (lambda m: (lambda t: (t.shape, t.stride()))(
        m.empty_permuted((2, 3, 4), (0, 2, 1))),),
    "empty_permuted_dup": (lambda m: m.empty_permuted((2, 3, 4), (0, 2, 2)),),
    "frombuffer": (lambda m: (m.frombuffer(bytearray(b"\x01\x02\x03\x04"), dtype=m.int16),
                              m.frombuffer(bytearray(8), dtype=m.float32, count=1, offset=4)),),
    "binomial_dtype": (lambda m, n, p: m.binomial(n, p).dtype == n.dtype,
                       np.array([10.0, 5.0]), np.array([0.5, 0.2])),
    "binomial_int": (lambda m, n, p: m.binomial(n, p), np.array([10, 5]), np.array([0.5, 0.2])),
    "switches": (lambda m: (m.get_float32_matmul_precision(), m.is_warn_always_enabled(),
                            str(m.get_default_device())),),
    "grad_scaler": (lambda m: m.GradScaler is m.amp.GradScaler,),
    "memory_formats": (lambda m: (m.ones(2, 3).contiguous(memory_format=m.contiguous_format)
                                  .stride(), m.ones(2).clone(memory_format=m.preserve_format)
                                  .stride(), isinstance(m.channels_last, m.memory_format)),),
}


@pytest.mark.parametrize("name", sorted(MISC))
def test_misc_names_match_torch(name):
    fn, *args = MISC[name]
    both(fn, *args)


def test_binomial_draws_have_binomial_moments():
    n, p = et.full((20000,), 12.0), et.full((20000,), 0.25)
    x = et.binomial(n, p).numpy()
    assert x.min() >= 0 and x.max() <= 12 and np.all(x == np.round(x))
    assert abs(x.mean() - 3.0) < 0.06 and abs(x.var() - 2.25) < 0.1
    et.manual_seed(3)
    a = et.binomial(n[:5], p[:5])
    et.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), et.binomial(n[:5], p[:5]).numpy())


def test_default_device_and_tensor_type_round_trip():
    for m in (torch, et):
        m.set_default_device("cpu")
        assert str(m.get_default_device()) == "cpu" and str(m.zeros(1).device) == "cpu"
        m.set_default_device(None)
        with warnings.catch_warnings():  # deprecated: PyTorch warns once per process
            warnings.simplefilter("ignore")
            m.set_default_tensor_type(m.DoubleTensor)
            assert m.get_default_dtype() == m.float64 and m.ones(1).dtype == m.float64
            m.set_default_tensor_type("torch.FloatTensor" if m is torch else
                                      "ember.FloatTensor")
        assert m.get_default_dtype() == m.float32


def test_global_switches_round_trip():
    for m in (torch, et):
        m.set_float32_matmul_precision("high")
        assert m.get_float32_matmul_precision() == "high"
        with pytest.warns(UserWarning):
            m.set_float32_matmul_precision("bogus")
        assert m.get_float32_matmul_precision() == "high"
        m.set_float32_matmul_precision("highest")
        m.set_warn_always(True)
        assert m.is_warn_always_enabled()
        m.set_warn_always(False)
        assert isinstance(m.set_flush_denormal(False), bool)
    assert et.typename(et.ones(1)) == "ember.FloatTensor"
    assert et.typename(3) == torch.typename(3) == "int"
