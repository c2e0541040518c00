"""Bad input raises PyTorch's exception type with a message naming the op the user called
(issue 21): the catch-and-diagnose of registry ops and composites (``_composite``), the shared
broadcast error, and the dtype, rank and index checks PyTorch makes in its own order."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import ember.tensor as et
from ember.tensor import _composite, _shape
from ember.tensor._checks import broadcast_error, broadcast_shapes


def _raises(exc_type, op: str, fn, *args, **kwargs):
    """Call ``fn``; assert it raises exactly ``exc_type``'s builtin class first and names
    ``op``; return the exception."""
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    assert re.search(rf"(?:^|[^\w.]|torch\.){re.escape(op)}(\(|:| )", msg), msg
    return info.value


M = et.ones(2, 3)
SQ = et.eye(3) * 2


# ------------------------------------------------------------------ argument types (TypeError)
@pytest.mark.parametrize("op, call, arg, position", [
    ("mm", lambda v: et.mm(v, et.ones(3, 4)), "input", 1),
    ("mm", lambda v: et.mm(M, v), "mat2", 2),
    ("bmm", lambda v: et.bmm(v, et.ones(2, 3, 4)), "input", 1),
    ("mv", lambda v: et.mv(M, v), "vec", 2),
    ("dot", lambda v: et.dot(et.ones(3), v), "tensor", 2),
    ("addmm", lambda v: et.addmm(et.ones(2, 4), v, et.ones(3, 4)), "mat1", 2),
    ("t", lambda v: et.t(v), "input", 1),
    ("transpose", lambda v: et.transpose(v, 0, 1), "input", 1),
    ("unsqueeze", lambda v: et.unsqueeze(v, 0), "input", 1),
    ("flatten", lambda v: et.flatten(v), "input", 1),
    ("chunk", lambda v: et.chunk(v, 2), "input", 1),
    ("zeros_like", lambda v: et.zeros_like(v), "input", 1),
    ("softmax", lambda v: et.softmax(v, 0), "input", 1),
    ("take", lambda v: et.take(v, et.tensor([0])), "input", 1),
    ("masked_select", lambda v: et.masked_select(v, et.tensor([True])), "input", 1),
    ("kron", lambda v: et.kron(M, v), "other", 2),
    ("cdist", lambda v: et.cdist(M, v), "x2", 2),
    ("householder_product", lambda v: et.linalg.householder_product(v, et.ones(2)), "A", 1),
    ("vecdot", lambda v: et.linalg.vecdot(v, et.ones(3)), "x", 1),
])
@pytest.mark.parametrize("value", ["x", [[1.0, 2.0, 3.0]]])
def test_a_non_tensor_argument_is_pytorchs_type_error(op, call, arg, position, value):
    e = _raises(TypeError, op, call, value)
    assert str(e) == (f"{op}(): argument '{arg}' (position {position}) must be Tensor, "
                      f"not {type(value).__name__}")


def test_max_and_min_of_a_non_tensor_name_the_op():  # with_out composites diagnose too
    for op in (et.max, et.min):
        e = _raises(TypeError, op.__name__, op, "x")
        assert "argument 'input' (position 1) must be Tensor, not str" in str(e)


@pytest.mark.parametrize("op, call, arg", [
    ("topk", lambda: et.topk(et.ones(2, 5), 2.5), "k"),
    ("kthvalue", lambda: et.kthvalue(et.ones(2, 5), 2.5, 1), "k"),
    ("cat", lambda: et.cat([M, M], 1.5), "dim"),
    ("chunk", lambda: et.chunk(M, 3.5, 1), "chunks"),
    ("transpose", lambda: et.transpose(M, 0.5, 1), "dim0"),
    ("narrow", lambda: et.narrow(M, 1, 0.5, 1), "start"),
    ("index_add", lambda: et.index_add(M, 1.5, et.tensor([0]), et.ones(2, 1)), "dim"),
])
def test_a_float_where_an_int_belongs_is_pytorchs_type_error(op, call, arg):
    e = _raises(TypeError, op, call)
    assert f"argument '{arg}'" in str(e) and str(e).endswith("must be int, not float")


@pytest.mark.parametrize("op, call, arg, kind", [
    ("expand", lambda: et.ones(1, 2).expand(2.5, 2), "size", "float"),
    ("expand", lambda: et.ones(1, 2).expand(True, 2), "size", "bool"),
    ("broadcast_to", lambda: et.broadcast_to(et.ones(2), (2.0, 2)), "size", "float"),
    ("as_strided", lambda: et.as_strided(et.ones(4), (2,), (1.5,)), "stride", "float"),
])
def test_a_size_element_that_is_no_integer_is_pytorchs_type_error(op, call, arg, kind):
    # (truncated to an int before; an integer 0-d tensor or a NumPy integer converts)
    e = _raises(TypeError, op, call)
    assert f"argument '{arg}' must be tuple of ints, but found element of type {kind}" in str(e)
    assert et.ones(1, 2).expand(et.tensor(3), np.int64(2)).shape == (3, 2)


def test_unbind_of_a_0d_tensor_is_pytorchs_index_error():
    e = _raises(IndexError, "unbind", lambda: et.tensor(1.0).unbind())
    assert "Dimension specified as 0 but tensor has no dimensions" in str(e)


def test_a_non_tensor_operand_of_einsum_names_its_element():
    e = _raises(TypeError, "einsum", et.einsum, "ij,jk->ik", [[1.0]], et.ones(1, 1))
    assert "expected Tensor as element 0 in argument 1, but got list" in str(e)


def test_an_unknown_keyword_names_the_op():
    _raises(TypeError, "cummax", et.cummax, M, 0, no_such_keyword=1)


# ------------------------------------------------------------------ broadcasting (RuntimeError)
@pytest.mark.parametrize("op, call", [
    ("where", lambda: et.where(et.ones(2, 4).bool(), M, M)),
    ("masked_fill", lambda: et.masked_fill(M, et.zeros(4).bool(), 0.5)),
    ("clamp", lambda: et.clamp(et.ones(0, 3), et.ones(3), et.ones(2, 1))),
    ("xlogy", lambda: et.xlogy(et.ones(4), M)),
    ("isclose", lambda: et.isclose(et.ones(4), et.ones(3))),
    ("igammac", lambda: et.igammac(et.ones(2, 4), M)),
    ("special_zeta", lambda: et.special.zeta(et.ones(2, 4), M)),
    ("masked_select", lambda: et.masked_select(M, et.zeros(2, 4).bool())),
])
def test_shapes_that_do_not_broadcast_are_pytorchs_runtime_error(op, call):
    e = _raises(RuntimeError, op, call)
    assert "must match the size of tensor b" in str(e)
    assert not isinstance(e, ValueError)


def test_the_broadcast_error_folds_operands_left_to_right():
    assert broadcast_shapes("f", (2, 1), (3,), (1, 1, 3)) == (1, 2, 3)
    e = broadcast_error("where", (2, 3), (2, 3), (2, 4))
    assert str(e) == ("where(): The size of tensor a (3) must match the size of tensor b (4) "
                      "at non-singleton dimension 1 (shapes [2, 3] and [2, 4])")
    with pytest.raises(RuntimeError, match=r"^take_along_dim\(\): The size of tensor a \(4\)"):
        et.take_along_dim(et.ones(4, 3), et.zeros(3, 1, dtype=et.int64), 1)


def test_a_python_scalar_a_dtype_cannot_hold_is_a_runtime_error():
    e = _raises(RuntimeError, "masked_fill", et.masked_fill, et.ones(2, 3, dtype=et.uint8),
                et.ones(3).bool(), -1.0)
    assert "without overflow" in str(e)


def test_masked_fill_takes_a_0d_value_tensor_only():
    e = _raises(RuntimeError, "masked_fill", et.masked_fill, M, M.bool(), et.ones(1, 1))
    assert "0-dimensional value tensor" in str(e)


# ------------------------------------------------------------ dtypes PyTorch has no kernel for
@pytest.mark.parametrize("op, call", [
    ("linalg.solve_triangular", lambda d: et.linalg.solve_triangular(SQ.to(d), et.ones(3, 2),
                                                                     upper=True)),
    ("linalg.eigh", lambda d: et.linalg.eigh(SQ.to(d))),
    ("linalg.lu_factor_ex", lambda d: et.linalg.lu_factor_ex(SQ.to(d))),
    ("geqrf", lambda d: et.geqrf(SQ.to(d))),
])
@pytest.mark.parametrize("dtype", [et.bool, et.int32, et.float16])
def test_linalg_ops_without_a_dtype_check_refuse_in_their_kernel(op, call, dtype):
    e = _raises(NotImplementedError, op, call, dtype)
    assert "not implemented for" in str(e)


@pytest.mark.parametrize("op, call", [
    ("linalg.det", lambda d: et.linalg.det(SQ.to(d))),
    ("linalg.qr", lambda d: et.linalg.qr(SQ.to(d))),
    ("linalg.svd", lambda d: et.linalg.svd(SQ.to(d))),
    ("linalg.cholesky", lambda d: et.linalg.cholesky(SQ.to(d))),
])
def test_linalg_ops_with_a_dtype_check_refuse_ints_and_let_half_reach_the_kernel(op, call):
    e = _raises(RuntimeError, op, call, et.int64)
    assert "Expected a floating point or complex tensor" in str(e)
    _raises(NotImplementedError, op, call, et.float16)


def test_linalg_ops_that_check_half_themselves_raise_runtime_error():
    for op, call in (("linalg.inv", et.linalg.inv), ("linalg.slogdet", et.linalg.slogdet)):
        e = _raises(RuntimeError, op, call, SQ.half())
        assert "Low precision dtypes not supported" in str(e)
    # linalg.solve compares the dtypes before its kernel sees float16
    e = _raises(RuntimeError, "linalg.solve", et.linalg.solve, SQ.half(), et.ones(3, 2))
    assert "same dtype" in str(e) and not isinstance(e, NotImplementedError)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [et.bool, et.uint8, et.int64])
def test_softmax_of_an_integer_tensor_is_not_implemented(op, dtype):
    _raises(NotImplementedError, op, getattr(et, op), et.ones(2, 3, dtype=dtype), 1)


def test_histc_of_an_integer_tensor_is_not_implemented():
    _raises(NotImplementedError, "histc", et.histc, et.ones(5, dtype=et.int32), 4)


@pytest.mark.parametrize("op, call", [
    ("bmm", lambda: et.bmm(et.ones(2, 2, 3).bool(), et.ones(2, 3, 4))),
    ("cross", lambda: et.cross(et.ones(2, 3).bool(), et.ones(2, 3), 1)),
    ("einsum", lambda: et.einsum("ij,jk->ik", et.ones(2, 3).bool(), et.ones(3, 4))),
])
def test_products_without_a_bool_kernel(op, call):
    _raises(NotImplementedError, op, call)


def test_relu_of_a_bool_tensor_is_pytorchs_runtime_error():
    e = _raises(RuntimeError, "relu", et.relu, et.tensor([True]))
    assert "Boolean inputs not supported for relu" in str(e)


def test_batched_products_check_dtypes_and_ranks_in_pytorchs_order():
    e = _raises(RuntimeError, "baddbmm", et.baddbmm, et.ones(2, 2, 4),
                et.ones(2, 2, 3).bool(), et.ones(2, 3, 4))
    assert "Input dtypes must be the same" in str(e)
    e = _raises(IndexError, "baddbmm", et.baddbmm, et.ones(2, 2, 4), et.ones(()),
                et.ones(2, 3, 4))
    assert "Dimension specified as 0 but tensor has no dimensions" in str(e)
    e = _raises(RuntimeError, "addbmm", et.addbmm, et.ones(2, 4), et.ones(3, 2, 3).bool(),
                et.ones(3, 3, 4))
    assert "mat1 and mat2 must have the same dtype" in str(e)
    _raises(IndexError, "addbmm", et.addbmm, et.ones(2, 4), et.ones(3, 2, 3), et.ones(()))


# ------------------------------------------------------------------ ranks and indices
@pytest.mark.parametrize("op, call", [
    ("split", lambda: et.split(et.tensor(1.0), 1)),
    ("split_with_sizes", lambda: et.split_with_sizes(et.tensor(1.0), [1])),
    ("chunk", lambda: et.chunk(et.tensor(1.0), 1)),
    ("tensor_split", lambda: et.tensor_split(et.tensor(1.0), 1)),
])
def test_splitting_a_0d_tensor_is_a_runtime_error(op, call):
    e = _raises(RuntimeError, op, call)
    assert "at least a 1-dimensional tensor" in str(e)


def test_searchsorted_needs_1d_boundaries():
    _raises(RuntimeError, "searchsorted", et.searchsorted, et.tensor(1.0), et.ones(2))


def test_scatter_and_gather_wrap_dim_first():
    idx = et.zeros(3, 3, dtype=et.int64)
    _raises(IndexError, "scatter_add", et.scatter_add, et.tensor(1.0), 1, idx, et.ones(3, 3))
    _raises(IndexError, "gather", et.gather, et.tensor(1.0), 1, idx)
    e = _raises(RuntimeError, "scatter_add", et.scatter_add, et.tensor(1.0), 0, idx,
                et.ones(3, 3))
    assert "same number of dimensions" in str(e)


@pytest.mark.parametrize("index, src, msg", [
    (et.zeros((), dtype=et.int64), et.ones(2, 3), "same number of dimensions as self"),
    (et.zeros(1, 1, 2, 3, dtype=et.int64), et.ones(2, 3), "same number of dimensions as self"),
    (et.zeros(2, 3, dtype=et.int64), et.ones(()), "same number of dimensions as src"),
    (et.tensor([[-1, 0, 0]]), et.ones(1, 3), "index -1 is out of bounds"),
])
def test_scatter_reduce_checks_as_scatter_does(index, src, msg):
    e = _raises(RuntimeError, "scatter_reduce", et.scatter_reduce, et.zeros(3, 3), 0, index,
                src, "sum")
    assert msg in str(e)


def test_scatter_reduce_of_a_0d_tensor():
    out = et.scatter_reduce(et.tensor(1.0), 0, et.tensor(0), et.tensor(2.0), "sum")
    assert out.shape == () and out.item() == 3.0


def test_an_out_of_range_gather_index_is_a_runtime_error_first():
    e = _raises(RuntimeError, "gather", et.gather, M, 1, et.tensor([[5], [0]]))
    assert type(e).__mro__[1] is RuntimeError and isinstance(e, IndexError)


def test_index_copy_needs_the_same_number_of_dims():
    e = _raises(IndexError, "index_copy", et.index_copy, et.ones(4, 3), 0, et.tensor([0, 1]),
                et.ones(1, 1, 2, 3))
    assert "dimensionality must match" in str(e)


def test_ldl_solve_checks_shapes_and_dtypes_before_lapack():
    ld, piv, b = et.eye(3), et.tensor([1, 2, 3], dtype=et.int32), et.ones(3, 2)
    for args, msg in (((ld[None, None], piv, b), "LD.shape[:-1] and pivots.shape"),
                      ((ld, piv[None, None], b), "LD.shape[:-1] and pivots.shape"),
                      ((ld, piv, b[:0]), "Incompatible matrix sizes"),
                      ((ld.half(), piv, b), "same dtype")):
        e = _raises(RuntimeError, "linalg.ldl_solve", et.linalg.ldl_solve, *args)
        assert msg in str(e)
    _raises(NotImplementedError, "linalg.ldl_solve", et.linalg.ldl_solve, ld.half(), piv,
            b.half())


def test_householder_product_needs_tau_one_dim_less_than_input():
    for a, tau in ((et.ones(4, 3), et.ones(1, 1, 3)), (et.ones(1, 1, 4, 3), et.ones(3))):
        e = _raises(RuntimeError, "householder_product", et.linalg.householder_product, a, tau)
        assert "one dimension less than input" in str(e)


# ------------------------------------------------------------------ the public op is named
@pytest.mark.parametrize("op, call, exc", [
    ("addmm", lambda: et.addmm(et.ones(2, 4), et.ones(2, 3).double(), et.ones(3, 4)),
     RuntimeError),
    ("addmv", lambda: et.addmv(et.ones(2), M, et.ones(0)), RuntimeError),
    ("std", lambda: et.std(et.ones(2, 3, 4), dim=-8), IndexError),
    ("float_power", lambda: et.float_power(M, et.ones(2, 4)), RuntimeError),
    ("cond", lambda: et.linalg.cond(et.ones(3, 3).bool()), RuntimeError),
    ("roll", lambda: et.roll(M, 1, 1.5), TypeError),
    ("index_put", lambda: et.index_put(M, (et.tensor([0]),), et.ones(1, dtype=et.int64)),
     RuntimeError),
])
def test_an_inner_ops_error_names_the_op_called(op, call, exc):
    _raises(exc, op, call)


def test_pytorchs_own_wording_is_kept_where_it_leads_with_an_op():
    with pytest.raises(RuntimeError) as e:
        et.randint(5, 3, (2,))
    assert str(e.value).startswith("random_ expects 'from' to be less than 'to'")


# ------------------------------------------------------------------ the mechanism
def test_a_composite_binds_exactly_as_the_function_it_wraps():
    assert et.mm.__wrapped__ is _composite.inspect.unwrap(et.mm)
    # the same parameters, and PyTorch's keyword-only out= compiled into the same wrapper
    sig = inspect.signature(et.mm)
    assert [p for p in sig.parameters.values() if p.name != "out"] == \
        list(inspect.signature(et.mm.__wrapped__).parameters.values())
    assert sig.parameters["out"].kind is inspect.Parameter.KEYWORD_ONLY
    assert et.mm(et.ones(2, 3), et.ones(3, 1)).tolist() == [[3.0], [3.0]]
    assert et.transpose(input=M, dim0=0, dim1=1).shape == (3, 2)
    assert et.swapaxes is et.transpose  # aliases share one wrapper
    # the defining module and the Tensor methods keep the plain function: no wrapper on calls
    # between composites or on method calls
    assert _shape.transpose is et.Tensor.transpose is et.transpose.__wrapped__


def test_arg_specs_read_the_declared_types():
    def f(a: et.Tensor, b: et.Tensor | None, c: int, d: int | None = None, *ts: et.Tensor,
          e: list[et.Tensor] = (), g=1, h: float = 1.0):
        pass

    specs = {name: (kind, optional, kwonly)
             for _i, name, kind, optional, kwonly in _composite.arg_specs(inspect.signature(f))}
    assert specs == {"a": ("tensor", False, False), "b": ("tensor", True, False),
                     "c": ("int", False, False), "d": ("int", True, False),
                     "ts": ("tensors*", False, False), "e": ("tensors", False, True),
                     "g": ("any", False, True), "h": ("", False, True)}


def test_a_failure_inside_a_composite_is_left_alone_when_the_arguments_are_fine():
    with pytest.raises(RuntimeError, match=r"^mm\(\): mat1 and mat2 shapes cannot be multiplied"):
        et.mm(M, M)
    with pytest.raises(RuntimeError, match=r"^t\(\) expects a tensor with <= 2 dimensions"):
        et.t(et.ones(2, 2, 2))


def test_no_numpy_error_leaks_from_a_binary_op():
    for fn in (et.xlogy, et.special.xlog1py, et.igammac):
        with pytest.raises(RuntimeError):
            fn(et.ones(0, 3), et.ones(2, 3))
    assert np.array_equal(et.xlogy(et.ones(3), et.ones(2, 3)).numpy(), np.zeros((2, 3)))


# ------------------------------------------------------------------ view geometry arguments
@pytest.mark.parametrize("dims, exc_type", [
    ((True, False), TypeError), ((1.0, 0), TypeError), ((1, 1), RuntimeError),
    ((1, -1), RuntimeError), ((1,), RuntimeError), ((0, 1, 2), RuntimeError),
    ((0, 5), IndexError)])
def test_permute_rejects_bad_dims_as_pytorch_does(dims, exc_type):
    # PyTorch 2.13: TypeError for a non-int dim (a bool included), RuntimeError for a
    # repeated dim or the wrong count, IndexError for a dim out of range
    _raises(exc_type, "permute", M.permute, dims)


@pytest.mark.parametrize("sizes", [(-2, 3), (2, -2), (3,), (2, 4)])
def test_expand_rejects_bad_sizes(sizes):
    _raises(RuntimeError, "expand", et.ones(1, 3).expand, *sizes)


@pytest.mark.parametrize("bad", [-1, -100, 4, 2**40])
@pytest.mark.parametrize("ignore_index", [-100, 0, 3])
def test_nll_loss_refuses_a_counted_target_out_of_range(bad, ignore_index):
    x = et.tensor(np.log(np.full((3, 4), 0.25, dtype=np.float32)))
    if bad == ignore_index:  # (never: the ignored value is never out of range)
        return
    t = et.tensor([1, bad, 2])
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
        et.nll_loss_forward(x, t, None, 1, ignore_index)


@pytest.mark.parametrize("ignore_index", [-100, -1, 0, 3])
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss_skips_the_ignored_targets(ignore_index, reduction):
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    t = np.array([0, ignore_index, 3, 1, ignore_index])
    loss, total = et.nll_loss_forward(et.tensor(x), et.tensor(t), None, reduction, ignore_index)
    keep = t != ignore_index
    per = np.where(keep, -x[np.arange(5), np.where(keep, t, 0)], np.float32(0))
    want = {0: per, 1: per.sum() / keep.sum(), 2: per.sum()}[reduction]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-6)
    assert total.item() == (0.0 if reduction == 0 else keep.sum())
