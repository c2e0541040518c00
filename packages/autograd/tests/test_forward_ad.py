"""``ember.autograd.forward_ad`` (``torch.autograd.forward_ad``): every twice-differentiable
entry of the op table against central differences in float64 along a random tangent, and the
API's behaviour (levels, views, in-place updates, random ops, forward-over-reverse)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember.autograd as ag
import ember.autograd.forward_ad as fwAD
import ember.tensor as et
from ember.tensor import Tensor
from ember.tensor.testing import op_table as T

ENTRIES = [e for e in T.OP_TABLE if e.differentiable and e.gradgrad
           and any(d.startswith(("float", "complex")) for d in e.dtypes)]


def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _wide(a):
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _floating(a):
    if isinstance(a, list):
        return bool(a) and all(_floating(x) for x in a)
    return isinstance(a, np.ndarray) and a.dtype.kind in "fc"


def _positions(entry, sample):
    if sample.grad is not None:
        return [i for i in sample.grad if _floating(sample.args[i])]
    return [i for i in entry.operands if i < len(sample.args) and _floating(sample.args[i])]


def _outputs(out):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [o for o in outs if isinstance(o, Tensor) and (o.is_floating_point() or
                                                          o.is_complex())]


def _tangent_like(rng, a):
    if isinstance(a, list):
        return [_tangent_like(rng, x) for x in a]
    t = rng.standard_normal(a.shape)
    if a.dtype.kind == "c":
        t = t + 1j * rng.standard_normal(a.shape)
    return t


def _first_sample(entry):
    """The entry's first sample in double precision with a floating operand, and those
    operands' positions."""
    dtype = next((d for d in ("float64", "complex128", "float32", "complex64")
                  if d in entry.dtypes), "float32")
    for sample in entry.samples(dtype, _rng(entry.name, "fwad")):
        pos = _positions(entry, sample)
        if pos:
            return sample, pos
    raise AssertionError(f"{entry.name}: no sample has a floating operand")


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_tangents_match_central_differences(entry):
    sample, pos = _first_sample(entry)
    rng = _rng(entry.name, "tangent")
    base = [([_wide(x) for x in a] if isinstance(a, list) else _wide(a)) if _floating(a)
            else a for a in sample.args]
    tans = {i: _tangent_like(rng, base[i]) for i in pos}
    plain, kwargs = T.to_ember(sample)

    def arg(a, t, h, dual, grad):
        if isinstance(a, list):
            return [arg(x, y, h, dual, grad) for x, y in zip(a, t)]
        if dual:
            return fwAD.make_dual(et.tensor(a), et.tensor(t))
        return et.tensor(a + h * t, requires_grad=grad)

    def call(h, dual=False, grad=False):
        args = [arg(a, tans[i], h, dual, grad) if i in tans else plain[i]
                for i, a in enumerate(base)]
        return _outputs(entry.fn(*args, **kwargs))

    with fwAD.dual_level():
        got = [fwAD.unpack_dual(o).tangent for o in call(0.0, dual=True)]
        got = [None if g is None else g.numpy() for g in got]
    # the outputs reverse mode differentiates: the others (indices, layer_norm's statistics)
    # carry no tangent
    diff = [o.requires_grad for o in call(0.0, grad=True)]
    eps = 1e-6
    plus = [o.numpy() for o in call(eps)]
    minus = [o.numpy() for o in call(-eps)]
    checked = 0
    for k, (g, p, m) in enumerate(zip(got, plus, minus)):
        assert (g is not None) == diff[k], f"{entry.name} output {k}"
        if g is not None:
            np.testing.assert_allclose(g, (p - m) / (2 * eps), rtol=1e-4, atol=1e-5,
                                       err_msg=f"{entry.name} output {k}")
            checked += 1
    assert checked, f"{entry.name}: no output carries a tangent"


def test_make_dual_and_unpack_dual():
    x, v = et.tensor([0.5, 1.5]), et.tensor([1.0, -2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent is v
        assert d.data_ptr() == x.data_ptr() and primal.data_ptr() == x.data_ptr()
        assert fwAD.unpack_dual(primal).tangent is None
        assert fwAD.unpack_dual(x) == (x, None)
        y = d.exp() * 2
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(),
                                   2 * np.exp(x.numpy()) * v.numpy())
        assert fwAD.unpack_dual(d.argmax()).tangent is None  # an integer output
    assert fwAD.unpack_dual(y).tangent is None  # the level closed: tangents dropped
    assert fwAD.UnpackedDualTensor._fields == ("primal", "tangent")


def test_errors():
    x = et.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
        with pytest.raises(RuntimeError, match="Tensor is of size \\[2\\] while the given "
                                               "forward gradient is of size \\[3\\]"):
            fwAD.make_dual(x, et.ones(3))
        with pytest.raises(ValueError, match="Expected tangent to be floating point"):
            fwAD.make_dual(x, et.tensor([1, 2]))
        with pytest.raises(ValueError, match="Expected primal to be floating point"):
            fwAD.make_dual(et.tensor([1, 2]), x)
    level = fwAD.enter_dual_level()
    with pytest.raises(RuntimeError, match="not the last one"):
        fwAD.exit_dual_level(level=level + 1)
    fwAD.exit_dual_level(level=level)


def test_in_place_ops_update_the_tangent_in_place():
    x, v = et.tensor([1.0, 2.0, 3.0]), et.tensor([1.0, 1.0, 1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x.clone(), v)
        d.mul_(3).add_(d * d)  # d <- 3d + (3d)^2: tangent 3v + 2 (3d) 3v
        np.testing.assert_allclose(v.numpy(), 3 + 18 * np.array([1.0, 2.0, 3.0]))
        assert fwAD.unpack_dual(d).tangent is v
        d.uniform_()  # values that do not depend on the tangent
        np.testing.assert_array_equal(v.numpy(), 0)


def test_random_ops_draw_once_and_a_mask_masks_the_tangent():
    with fwAD.dual_level():
        d = fwAD.make_dual(et.ones(1000, dtype=et.float64), et.full((1000,), 2.0,
                                                                       dtype=et.float64))
        et.manual_seed(11)
        y = d * et.bernoulli(et.full((1000,), 0.5, dtype=et.float64)) * 2  # dropout's form
        after = et.rand(3)
        primal, tangent = fwAD.unpack_dual(y)
        np.testing.assert_allclose(tangent.numpy(), 2 * primal.numpy())
    et.manual_seed(11)
    plain = et.ones(1000, dtype=et.float64) * et.bernoulli(
        et.full((1000,), 0.5, dtype=et.float64)) * 2
    np.testing.assert_array_equal(plain.numpy(), primal.numpy())
    np.testing.assert_array_equal(et.rand(3).numpy(), after.numpy())


def test_forward_over_reverse_hessian_vector_product():
    x0 = np.array([0.3, -1.2, 2.0])
    v0 = np.array([1.0, 0.5, -2.0])
    x = et.tensor(x0, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, et.tensor(v0))
        (g,) = ag.grad((d.sin() * d * d).sum() + (d[0] * d[2]), d, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent.numpy()
    h = np.diag(-x0 ** 2 * np.sin(x0) + 4 * x0 * np.cos(x0) + 2 * np.sin(x0))
    h[0, 2] += 1
    h[2, 0] += 1
    np.testing.assert_allclose(hvp, h @ v0, rtol=1e-12)


def test_a_tangent_that_requires_grad_gives_differentiable_tangents():
    x = et.tensor([0.5, 1.0])
    v = et.tensor([1.0, 2.0], requires_grad=True)
    with fwAD.dual_level():
        y = fwAD.make_dual(x, v).exp().sum()
        t = fwAD.unpack_dual(y).tangent
    assert t.requires_grad
    (gv,) = ag.grad(t, v)  # t = sum(exp(x) v)
    np.testing.assert_allclose(gv.numpy(), np.exp([0.5, 1.0]))


def test_list_arguments_and_multiple_outputs():
    a, b = et.tensor([1.0, 2.0]), et.tensor([3.0, 4.0])
    with fwAD.dual_level():
        da = fwAD.make_dual(a, et.tensor([1.0, 0.0]))
        s = et.stack([da, b]).sum(0)
        np.testing.assert_allclose(fwAD.unpack_dual(s).tangent.numpy(), [1.0, 0.0])
        vals, idx = et.sort(da * et.tensor([-1.0, 1.0]))
        np.testing.assert_allclose(fwAD.unpack_dual(vals).tangent.numpy(), [-1.0, 0.0])
        assert fwAD.unpack_dual(idx).tangent is None


def test_forward_over_reverse_through_saved_outputs():
    # exp, tanh and softmax save their outputs: the output rebuilt for backward carries its
    # tangent too
    x0 = np.array([0.3, -1.2, 2.0])
    v0 = np.array([1.0, 0.5, -2.0])

    def f(d):
        return d.exp().sum() + d.tanh().pow(2).sum() + d.softmax(0)[1]

    def grad_at(xv):
        x = et.tensor(xv, requires_grad=True)
        return ag.grad(f(x), x)[0].numpy()

    x = et.tensor(x0, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, et.tensor(v0))
        (g,) = ag.grad(f(d), d, create_graph=True)
        hvp = fwAD.unpack_dual(g).tangent.numpy()
    want = (grad_at(x0 + 1e-6 * v0) - grad_at(x0 - 1e-6 * v0)) / 2e-6
    np.testing.assert_allclose(hvp, want, rtol=1e-6, atol=1e-8)
