"""In-place ops through views of tensors in a graph (PyTorch's CopySlices): the base and the
view both get a correct history, checked by finite differences in float64."""
import numpy as np
import pytest

import ember.autograd as ag
import ember.tensor as et


def _inputs():
    rng = np.random.default_rng(0)
    x = et.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    h = et.tensor(rng.standard_normal(3), requires_grad=True)
    return x, h


def _augmented_index(x, h):
    y = x * 2
    y[:, 0] += x[:, 1] * h  # getitem view, in-place add on it, setitem back
    return y


def _into_constant_buffer(x, h):
    out = et.zeros(3, 4, dtype=et.float64)
    out[1].copy_(x[0] * 3)
    out.narrow(1, 2, 1).mul_(2)
    out[:, 3].add_(h)
    return out * x


def _diagonal_of_transpose(x, h):
    y = x.t() * 1.0
    y.diagonal().mul_(h)
    return y


def _view_used_after(x, h):
    y = x * 2
    v = y[1:]
    v.sub_(h[:2].unsqueeze(1))
    return y.sum(0) * v.sum()


@pytest.mark.parametrize("fn", [_augmented_index, _into_constant_buffer,
                                _diagonal_of_transpose, _view_used_after])
def test_inplace_through_view_gradients(fn):
    x, h = _inputs()
    assert ag.gradcheck(fn, (x, h))
    assert ag.gradgradcheck(fn, (x, h))


def test_values_are_written_through_the_view():
    x, h = _inputs()
    y = _augmented_index(x, h)
    expect = x.detach().numpy() * 2
    expect[:, 0] += x.detach().numpy()[:, 1] * h.detach().numpy()
    np.testing.assert_allclose(y.detach().numpy(), expect)


def test_view_of_leaf_requiring_grad_raises():
    x, _ = _inputs()
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x[0].add_(1)


def test_saved_base_modified_through_view_raises_at_backward():
    x, _ = _inputs()
    y = x.exp()  # exp saves its output
    y[1:].sub_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_view_ops_refuse_a_leaf_that_requires_grad():
    leaf = et.ones(2, 2, requires_grad=True)
    for op in ("t_", "unsqueeze_", "squeeze_"):
        args = (0,) if op == "unsqueeze_" else ()
        with pytest.raises(RuntimeError, match="leaf"):
            getattr(leaf, op)(*args)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.transpose_(0, 1)


class _Holder:
    def __init__(self, x):
        self.x = x


def test_a_tensor_that_requires_grad_inside_a_pickled_object_loads_as_a_leaf(tmp_path):
    t = et.ones(2).requires_grad_()
    et.save(_Holder(t), tmp_path / "h")
    back = et.load(tmp_path / "h", weights_only=False)
    assert back.x.requires_grad and back.x.is_leaf and back.x.tolist() == [1.0, 1.0]
