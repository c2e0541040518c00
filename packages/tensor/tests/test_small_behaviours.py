"""Issue 16, item 9: the small behaviours PyTorch programs rely on (``size=`` keyword forms,
``randint(high, size=...)``, ``tensor()`` of any sequence, indexing with a ``range``,
``Tensor.new``, the device predicates, ``compile``). PyTorch parity for each is in
``tests/parity/test_parity_small_behaviours.py``."""
from __future__ import annotations

import collections

import numpy as np
import pytest

import ember.tensor as et


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_size_keyword(name):
    f = getattr(et, name)
    assert f(size=(2, 3)).shape == (2, 3)
    assert f(size=[4]).shape == (4,)
    assert f(size=et.Size([1, 2])).shape == (1, 2)
    assert f(size=(2,), dtype=et.float64).dtype == et.float64
    assert f(size=()).shape == ()
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        f(2, size=(3,))
    with pytest.raises(TypeError, match="must be tuple of ints"):
        f(size=3)


def test_size_keyword_values():
    assert et.zeros(size=(2, 2)).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert et.ones(size=(3,), dtype=et.int64).tolist() == [1, 1, 1]
    et.manual_seed(3)
    a = et.rand(size=(5,))
    et.manual_seed(3)
    assert et.rand(5).tolist() == a.tolist()


def test_randint_high_size_keyword():
    et.manual_seed(0)
    x = et.randint(5, size=(200,))
    assert x.shape == (200,) and x.dtype == et.int64
    assert int(x.min()) == 0 and int(x.max()) == 4
    assert et.randint(high=3, size=(4,)).shape == (4,)
    assert et.randint(2, 4, size=(50,)).min().item() >= 2
    et.manual_seed(1)
    a = et.randint(7, size=(6,))
    et.manual_seed(1)
    assert et.randint(0, 7, (6,)).tolist() == a.tolist()


def test_tensor_of_any_sequence():
    assert et.tensor(collections.deque([1, 2, 3])).tolist() == [1, 2, 3]
    assert et.tensor(collections.deque([1, 2, 3])).dtype == et.int64
    assert et.tensor(range(4)).tolist() == [0, 1, 2, 3]
    d = et.tensor([collections.deque([1.0, 2.0]), (3.0, 4.0)])
    assert d.dtype == et.float32 and d.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert et.tensor(collections.deque([True, False])).dtype == et.bool
    assert et.tensor(collections.deque()).shape == (0,)
    assert et.as_tensor(collections.deque([1.5])).tolist() == [1.5]
    with pytest.raises(TypeError):
        et.tensor(collections.deque(["a"]))


def test_index_with_range():
    x = et.arange(12.0).view(3, 4)
    a = x.numpy()
    assert x[range(2)].tolist() == a[list(range(2))].tolist()
    assert x[:, range(0, 4, 2)].tolist() == a[:, [0, 2]].tolist()
    assert x[range(2), range(1, 3)].tolist() == [1.0, 6.0]
    assert x[range(0)].shape == (0, 4)
    y = x.clone()
    y[range(1, 3)] = 0.0
    assert y.tolist() == [[0.0, 1.0, 2.0, 3.0], [0.0] * 4, [0.0] * 4]
    with pytest.raises(IndexError):
        x[range(2, 5)]


def test_tensor_new():
    x = et.ones(2, dtype=et.float64)
    assert x.new().shape == (0,) and x.new().dtype == et.float64
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == et.float64
    assert x.new(et.Size([4, 1])).shape == (4, 1)
    assert x.new((2, 3)).tolist() == [2.0, 3.0]
    assert x.new([1, 2]).dtype == et.float64
    y = et.tensor([5.0, 6.0], dtype=et.float64)
    z = x.new(y)
    z[0] = 9.0
    assert y.tolist() == [9.0, 6.0]  # shares y's storage, as PyTorch's does
    with pytest.raises(TypeError, match="data must be a sequence"):
        x.new(2.5)
    assert et.ones(1, dtype=et.int32).new(3).dtype == et.int32


def test_device_predicates():
    x = et.ones(2)
    for name in ("is_xpu", "is_mps", "is_meta", "is_ipu", "is_mtia", "is_maia",
                 "is_xla", "is_vulkan", "is_mkldnn", "is_quantized", "is_nested"):
        assert getattr(x, name) is False, name
        with pytest.raises(AttributeError):
            setattr(x, name, True)
    assert x.is_cpu is True and x.is_cuda is False


def test_compile_returns_the_model():
    def f(a):
        return a * 2

    assert et.compile(f) is f
    assert et.compile(f, mode="reduce-overhead", fullgraph=True, dynamic=False) is f
    deco = et.compile(backend="eager")
    assert deco(f) is f
    with pytest.raises(RuntimeError, match="callable"):
        et.compile(3)
    assert np.allclose(et.compile(f)(et.ones(2)).numpy(), 2.0)


@pytest.mark.parametrize("data, expected", [
    ([1, 2.5], et.float32), ([True, False], et.bool), ([1, True], et.int64),
    ([[1, 2], [3, 4]], et.int64), ([1 + 2j, 1], et.complex64), ([], et.float32),
    ((1, 2), et.int64), ([[1, 2], [3.5, 4]], et.float32),
    # NumPy scalars keep their dtype, promoted with the Python numbers beside them (PyTorch 2.13)
    ([np.float64(1)], et.float64), ([np.float32(1)], et.float32), ([np.int32(1)], et.int32),
    ([np.bool_(True)], et.bool), ([np.float32(1), 2.5], et.float32), ([np.int32(1), 2], et.int64),
    ([np.float64(1), 1.5], et.float64)])
def test_tensor_infers_pytorchs_dtype(data, expected):
    t = et.tensor(data)
    assert t.dtype == expected
    np.testing.assert_array_equal(t.numpy(), np.array(data, dtype=expected.np if data else None))


@pytest.mark.parametrize("start, end, steps", [(0.0, 1.0, 256), (-3.5, 7.25, 7), (2.0, -1.0, 2),
                                               (1e-3, 1e3, 101)])
def test_linspace_is_pytorchs_two_sided_formula(start, end, steps):
    # the first half counts up from start, the second half down from end (PyTorch's kernel)
    step = (end - start) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    want = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))
    np.testing.assert_array_equal(et.linspace(start, end, steps, dtype=et.float64).numpy(),
                                  want)
    np.testing.assert_array_equal(et.linspace(start, end, steps).numpy(),
                                  want.astype(np.float32))


def test_isposinf_isneginf_bfloat16_and_integers():
    a = np.array([1.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    x = et.tensor(a).to(et.bfloat16)
    assert x.isposinf().numpy().tolist() == np.isposinf(a).tolist()
    assert x.isneginf().numpy().tolist() == np.isneginf(a).tolist()
    assert not et.isposinf(et.tensor([0, 1])).any()
    assert et.isneginf(et.tensor([True])).dtype == et.bool


@pytest.mark.parametrize("shape", [(4, 6), (7, 3), (3, 3), (4, 4, 4), (5, 1)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_matches_numpy(shape, wrap):
    expected = np.zeros(shape, np.float32)
    np.fill_diagonal(expected, 2.0, wrap=wrap)
    got = et.zeros(*shape).fill_diagonal_(2.0, wrap=wrap)
    np.testing.assert_array_equal(got.numpy(), expected)


def test_unique_consecutive_dim_3d_matches_numpy():
    a = np.array([[[1, 2], [1, 2], [3, 4]], [[1, 2], [1, 2], [3, 5]]])
    vals, inv, counts = et.unique_consecutive(et.tensor(a), return_inverse=True,
                                              return_counts=True, dim=1)
    np.testing.assert_array_equal(vals.numpy(), a[:, [0, 2]])
    assert inv.tolist() == [0, 0, 1] and counts.tolist() == [2, 1]


@pytest.mark.parametrize("values", [[-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0],
                                    [1.0, np.inf, -np.inf], [-3.0, 0.5, 80.0]])
def test_logcumsumexp_at_infinities_is_logaddexp_accumulated(values):
    a = np.array(values, np.float64)
    with np.errstate(invalid="ignore"):  # (NaN's)
        want = np.logaddexp.accumulate(a)
    np.testing.assert_allclose(et.logcumsumexp(et.tensor(a), 0).numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("shape, dim", [((0,), 0), ((2, 0), 1), ((0, 3), 0), ((0, 3), 1)])
def test_logcumsumexp_of_an_empty_dim_is_empty(shape, dim):
    assert et.logcumsumexp(et.zeros(*shape), dim).shape == shape


@pytest.mark.parametrize("fill", [-0.0, np.float32(-0.0), np.float64(-0.0)])
def test_full_keeps_the_sign_of_a_negative_zero(fill):
    assert np.signbit(et.full((3,), fill).numpy()).all()
    assert np.signbit(et.full_like(et.ones(2), fill).numpy()).all()
    assert not np.signbit(et.full((3,), 0.0).numpy()).any()


@pytest.mark.parametrize("src, dst", [(0, -1), ((0, 1), (2, 0)), ((-1, 0), (0, 1)), ((), ()),
                                      ((1, 2, 0), (0, 1, 2))])
def test_movedim_matches_numpy_moveaxis(src, dst):
    a = np.arange(24.0).reshape(2, 3, 4)
    out = et.tensor(a).movedim(src, dst)
    np.testing.assert_array_equal(out.numpy(), np.moveaxis(a, src, dst))


@pytest.mark.parametrize("src, dst, which", [((0, 0), (0, 1), "source"),
                                             ((0, 1), (1, -2), "destination")])
def test_movedim_refuses_a_repeated_dim(src, dst, which):
    with pytest.raises(RuntimeError, match=f"repeated dim in `{which}`"):
        et.zeros(2, 3, 4).movedim(src, dst)


@pytest.mark.parametrize("size", [(3, 1), (1, 3, 4), (2, 1, 1), (4,), (2, 3, 4)])
def test_sum_to_size_matches_numpy(size):
    a = np.arange(24.0).reshape(2, 3, 4)
    lead = a.ndim - len(size)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and a.shape[lead + i] != 1)
    want = a.sum(dims, keepdims=True).reshape(size)
    np.testing.assert_array_equal(et.tensor(a).sum_to_size(*size).numpy(), want)


@pytest.mark.parametrize("indices", [[5, 3], [2, 2, 9], [-3, 6], [0], [8], [], 3, 10])
def test_tensor_split_is_numpys_array_split(indices):
    a = np.arange(24).reshape(3, 8)
    got = et.tensor_split(et.tensor(a), indices, dim=1)
    want = np.array_split(a, indices, axis=1)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w)


def test_tensor_split_into_no_sections_is_an_error():
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0"):
        et.tensor_split(et.arange(8), 0)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0, 0), (2, 3, 0), (2, 0, 3), (0, 2, 2)])
@pytest.mark.parametrize("k", [-1, 0, 1])
@pytest.mark.parametrize("fn", ["tril", "triu"])
def test_tril_triu_of_empty_matrices_are_numpys(shape, k, fn):
    a = np.zeros(shape, np.float32)
    got = getattr(et, fn)(et.tensor(a), k)
    want = getattr(np, fn)(a, k)
    assert tuple(got.shape) == want.shape and got.dtype == et.float32


def test_array_stand_ins_answer_their_module_and_device():
    # an object standing for a host array (autobatch's pending values) names its module by the
    # Array API's __array_namespace__ and its device as NumPy 2 does ("cpu")
    from ember.tensor._checks import check_same_device
    from ember.tensor._registry import array_module

    class StandIn:
        device = "cpu"

        def __array_namespace__(self, api_version=None):
            return np

    assert array_module(StandIn()) is np
    check_same_device("take", np.ones(2), StandIn())
    check_same_device("take", StandIn(), np.ones(2))
    with pytest.raises(TypeError, match="expected a NumPy or CuPy array, got object"):
        array_module(object())


@pytest.mark.parametrize("size", [0, 1, 3, 6])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 2, 3)])
def test_nonzero_static_pads_or_cuts_numpys_indices(size, shape):
    a = np.random.default_rng(sum(shape) + size).integers(0, 2, shape).astype(np.float32)
    want = np.argwhere(a)[:size]
    want = np.concatenate([want, np.full((size - len(want), a.ndim), -7)]) if \
        len(want) < size else want
    got = et.nonzero_static(et.tensor(a), size=size, fill_value=-7)
    assert got.dtype == et.int64 and got.shape == (size, a.ndim)
    np.testing.assert_array_equal(got.numpy(), want)
    n = min(size, int(np.count_nonzero(a)))  # the method, fill_value's default -1
    method = et.tensor(a).nonzero_static(size=size).numpy()
    np.testing.assert_array_equal(method[:n], np.argwhere(a)[:n])
    assert (method[n:] == -1).all()
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        et.nonzero_static(et.tensor(a), size=-1)


def test_layout_and_process_predicates():
    x = et.zeros(2, 3, 4)
    assert x.dim_order() == (0, 1, 2)
    assert x.permute(2, 0, 1).dim_order() == (1, 2, 0)
    assert x.transpose(0, 2).dim_order() == (2, 1, 0)
    assert x.const_data_ptr() == x.data_ptr()
    assert x.output_nr == 0 and not et.is_distributed(x)
    prev = et.get_autocast_dtype("cpu")
    et.set_autocast_dtype("cpu", et.float16)
    try:
        assert et.get_autocast_dtype("cpu") == et.float16
        with et.autocast("cpu"):
            assert (et.ones(2, 2) @ et.ones(2, 2)).dtype == et.float16
    finally:
        et.set_autocast_dtype("cpu", prev)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bounds", [(-0.5, "t"), ("t", 0.25), (0, "t")])
def test_clamp_takes_a_number_beside_a_tensor_bound(dtype, bounds):
    # (PyTorch refuses the mix; ember takes it, as NumPy's maximum / minimum do. float64's
    # dtype compares equal to None: the number was once taken for an array of x's dtype)
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(dtype)
    b = np.random.default_rng(2).standard_normal(4).astype(dtype)
    lo, hi = (b if v == "t" else v for v in bounds)
    got = et.clamp(et.tensor(x), min=et.tensor(lo) if bounds[0] == "t" else lo,
                   max=et.tensor(hi) if bounds[1] == "t" else hi)
    assert got.dtype == et.tensor(x).dtype
    np.testing.assert_array_equal(got.numpy(), np.minimum(np.maximum(x, lo), hi).astype(dtype))
